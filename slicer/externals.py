"""What code outside the analysed source does, as data: builtins, stdlib, installed packages.

Kinds of knowledge, each a plain table so it is easy to read and extend (``extend(path)`` merges
a JSON file with the same keys):

* ``pure``: functions whose result depends only on their arguments and which mutate nothing
  (``len``, ``isinstance``, ``math.*`` ...). ``pure_methods``: methods that mutate neither receiver nor
  arguments (``str.split``, ``dict.get`` ...), looked up by method name whatever the receiver.
* ``consumers`` / ``consuming_methods``: otherwise pure, but they iterate their arguments, and
  iterating an *iterator* advances it: ``list(it)``, ``next(it)``, ``islice(it, n)``, ``"".join(it)``
  change ``it``. They weakly write their arguments (an iterator may be among them).
* ``mutators``: methods that mutate their receiver (``list.append``, ``dict.update`` ...).
* ``effects``: functions with effects outside the program (printing, files, network, processes).
  The slicer drops statements whose only effect is one of these, unless the criterion depends on them.
* ``fresh_functions`` / ``fresh_methods``: outside calls whose result is an object of its own (a string,
  a number, a match). Any other outside call may hand back (a part of) an object it was given:
  ``etree.SubElement(parent, "td")`` puts a new element inside ``parent`` and returns it, ``sorted(items)``
  and ``next(it)`` hand back items, ``node.find("p")`` a child; so a mutation through what it returned
  may change its arguments and receiver (see dataflow's alias analysis, :func:`may_return_part`).

Anything else is *unknown*, and the conservative default applies: an unknown call may read and
mutate every argument and its receiver, and its result depends on all of them.
"""

from __future__ import annotations

import json
from pathlib import Path

TABLES: dict[str, set[str]] = {
    "consumers": {
        "all", "any", "dict", "enumerate", "filter", "frozenset", "list", "map", "max", "min", "next", "reversed",
        "set", "sorted", "sum", "tuple", "zip", "itertools.*", "functools.reduce", "heapq.nlargest",
        "heapq.nsmallest", "collections.Counter", "collections.deque", "collections.OrderedDict",
        "collections.defaultdict", "deque", "islice", "chain", "Counter", "OrderedDict", "defaultdict",
        "bytes", "bytearray", "str.join", "statistics.*",
    },
    "consuming_methods": {"join", "extend", "update", "union", "intersection", "difference", "issubset",
                          "issuperset", "isdisjoint", "symmetric_difference", "writelines", "fromkeys"},
    "pure": {
        "abs", "all", "any", "ascii", "bin", "bool", "bytes", "callable", "chr", "complex", "divmod", "enumerate",
        "float", "format", "frozenset", "hash", "hex", "id", "int", "isinstance", "issubclass", "iter", "len",
        "max", "min", "oct", "ord", "pow", "range", "repr", "reversed", "round", "slice", "sorted", "str", "sum",
        "tuple", "type", "zip", "list", "dict", "set", "object", "getattr", "hasattr", "vars", "dir",
        "math.*", "cmath.*", "operator.*", "string.*", "re.compile", "re.match", "re.search", "re.fullmatch",
        "re.findall", "re.finditer", "re.sub", "re.split", "re.escape", "os.path.*", "posixpath.*",
        "itertools.*", "functools.reduce", "bisect.bisect", "bisect.bisect_left", "bisect.bisect_right",
        "heapq.nlargest", "heapq.nsmallest", "collections.Counter", "collections.defaultdict",
        "collections.OrderedDict", "collections.deque", "collections.namedtuple", "copy.copy", "copy.deepcopy",
        "json.dumps", "json.loads", "struct.pack", "struct.unpack", "zlib.crc32", "binascii.crc32",
        "hashlib.*", "unicodedata.*", "textwrap.*", "fnmatch.*", "dataclasses.field", "dataclasses.dataclass",
        "functools.wraps", "functools.partial", "functools.lru_cache", "functools.cache",
        "abc.abstractmethod", "property", "staticmethod", "classmethod", "super", "next",
    },
    "pure_methods": {
        "lower", "upper", "casefold", "capitalize", "title", "strip", "lstrip", "rstrip", "split", "rsplit",
        "splitlines", "join", "startswith", "endswith", "replace", "find", "rfind", "index", "rindex", "count",
        "format", "encode", "decode", "isdigit", "isalpha", "isalnum", "isspace", "islower", "isupper",
        "partition", "rpartition", "zfill", "ljust", "rjust", "center", "expandtabs", "translate",
        "get", "keys", "values", "items", "copy", "most_common", "group", "groups", "groupdict", "start", "end",
        "span", "match", "search", "fullmatch", "findall", "finditer", "sub", "subn", "hexdigest", "digest",
        "bit_length", "is_integer", "conjugate", "issubset", "issuperset", "isdisjoint", "union",
        "intersection", "difference", "symmetric_difference", "__len__", "__contains__", "__getitem__",
    },
    "mutators": {
        "append", "extend", "insert", "pop", "remove", "clear", "update", "add", "discard", "setdefault",
        "sort", "reverse", "popitem", "appendleft", "popleft", "extendleft", "rotate", "difference_update",
        "intersection_update", "symmetric_difference_update", "__setitem__", "__delitem__", "send", "throw",
        "heappush", "heappop", "heapify", "heapreplace", "heappushpop",
    },
    "effects": {
        "print", "input", "open", "breakpoint", "exec", "eval", "exit", "quit",
        "os.remove", "os.unlink", "os.rename", "os.replace", "os.mkdir", "os.makedirs", "os.rmdir",
        "os.system", "os.write", "os.chdir", "os.kill", "os.*", "shutil.*", "subprocess.*", "socket.*",
        "urllib.*", "http.*", "requests.*", "sys.exit", "logging.*", "time.sleep", "pathlib.Path.write_text",
        "write", "writelines", "flush", "write_text", "write_bytes", "unlink", "mkdir", "rmdir", "touch",
        "send", "sendall", "connect", "bind", "listen", "close",
    },
    # functions (dotted names) whose result holds no object they were given: numbers, strings, flags,
    # compiled patterns and their matches, decoded documents
    "fresh_functions": {
        "abs", "all", "any", "ascii", "bin", "bool", "bytes", "callable", "chr", "complex", "divmod", "float",
        "format", "hash", "hasattr", "hex", "id", "int", "isinstance", "issubclass", "len", "oct", "ord", "pow",
        "range", "repr", "round", "str", "sum", "type", "dir", "print", "math.*", "cmath.*", "string.*", "re.*",
        "os.path.*", "posixpath.*", "bisect.bisect", "bisect.bisect_left", "bisect.bisect_right", "json.dumps",
        "json.loads", "struct.pack", "struct.unpack", "zlib.crc32", "binascii.crc32", "hashlib.*",
        "unicodedata.*", "textwrap.*", "fnmatch.*", "copy.deepcopy",
    },
    # methods, by name whatever the receiver, that answer with a new string, number or flag (not
    # ``find``/``findall``: an ElementTree element's hand back its children)
    "fresh_methods": {
        "lower", "upper", "casefold", "capitalize", "title", "strip", "lstrip", "rstrip", "split", "rsplit",
        "splitlines", "join", "startswith", "endswith", "replace", "rfind", "index", "rindex", "count",
        "format", "encode", "decode", "isdigit", "isalpha", "isalnum", "isspace", "islower", "isupper",
        "partition", "rpartition", "zfill", "ljust", "rjust", "center", "expandtabs", "translate", "keys",
        "group", "groups", "groupdict", "start", "end", "span", "match", "search", "fullmatch", "sub", "subn",
        "hexdigest", "digest", "bit_length", "is_integer", "conjugate", "issubset", "issuperset", "isdisjoint",
        "__len__", "__contains__",
    },
}

ITERATED_ARGUMENTS = {
    "enumerate": (0,), "iter": (0,), "next": (0,), "sum": (0,), "sorted": (0,), "reversed": (0,), "list": (0,),
    "tuple": (0,), "set": (0,), "frozenset": (0,), "dict": (0,), "any": (0,), "all": (0,), "bytes": (0,),
    "bytearray": (0,), "deque": (0,), "collections.deque": (0,), "Counter": (0,), "collections.Counter": (0,),
    "OrderedDict": (0,), "collections.OrderedDict": (0,), "islice": (0,), "itertools.islice": (0,),
    "heapq.nlargest": (1,), "heapq.nsmallest": (1,), "nlargest": (1,), "nsmallest": (1,),
    "functools.reduce": (1,), "reduce": (1,), "defaultdict": (1,), "collections.defaultdict": (1,),
    "filter": (1,), "itertools.accumulate": (0,), "itertools.cycle": (0,), "itertools.dropwhile": (1,),
    "itertools.takewhile": (1,), "itertools.filterfalse": (1,), "itertools.starmap": (1,),
    "itertools.groupby": (0,), "itertools.pairwise": (0,), "itertools.tee": (0,), "itertools.compress": (0, 1),
}
"""Consumers whose iterated arguments are known positions; the others (``n`` of ``nsmallest(n, it)``,
the ``start`` of ``enumerate``, the function of ``map`` or ``filter``) are only read. A consumer that is
not listed here (``zip``, ``map``, ``max``, ``itertools.chain``...) may iterate every positional argument.
Keyword arguments (``key=``, ``default=``, ``start=``, ``maxlen=``) are never iterated, except one
named ``iterable``."""

MUTATING_FUNCTIONS = {"heapq.heappush": 0, "heapq.heappop": 0, "heapq.heapify": 0, "heapq.heapreplace": 0,
                      "heapq.heappushpop": 0, "random.shuffle": 0, "bisect.insort": 0, "bisect.insort_left": 0,
                      "bisect.insort_right": 0}
"""Functions that mutate one positional argument (its index)."""





FILE_SYSTEM: dict[str, set[str]] = {
    # functions (dotted names; a bare last part matches ``from os import mkdir`` too) that change it
    "writes": {"os.mkdir", "os.makedirs", "os.remove", "os.unlink", "os.rename", "os.renames", "os.replace",
               "os.rmdir", "os.removedirs", "os.link", "os.symlink", "os.truncate", "os.chmod", "os.utime",
               "os.mkfifo", "os.write", "shutil.rmtree", "shutil.move", "shutil.copy", "shutil.copy2",
               "shutil.copyfile", "shutil.copytree", "tempfile.mkdtemp", "tempfile.mkstemp",
               "tempfile.NamedTemporaryFile", "tempfile.TemporaryDirectory", "tempfile.TemporaryFile"},
    # functions that read it (a directory's listing, a file's existence, size or contents)
    "reads": {"os.listdir", "os.scandir", "os.walk", "os.stat", "os.lstat", "os.access", "os.read",
              "os.path.exists", "os.path.lexists", "os.path.isfile", "os.path.isdir", "os.path.islink",
              "os.path.getsize", "os.path.getmtime", "os.path.realpath", "glob.glob", "glob.iglob", "mmap.mmap",
              "pathlib.Path.cwd"},
    # methods, by name whatever the receiver (a file object, a pathlib.Path)
    # (a file object's ``write`` changes the object, as any unknown method does; the file changes when it
    # is flushed or closed, explicitly or by leaving its ``with``: so a ``StringIO`` written in a loop does
    # not become a file-system write. Not ``replace``: ``str.replace``.)
    "writing_methods": {"flush", "close", "write_text", "write_bytes", "touch", "mkdir", "unlink", "rmdir",
                        "rename", "symlink_to", "hardlink_to"},
    "reading_methods": {"read", "readline", "readlines", "readinto", "read_text", "read_bytes", "iterdir",
                        "exists", "is_file", "is_dir", "glob", "rglob", "stat", "listdir"},
    # functions that open a file: the mode says whether they write
    "openers": {"open", "io.open", "builtins.open", "codecs.open", "gzip.open", "bz2.open", "lzma.open", "os.open",
                "os.fdopen", "tarfile.open", "zipfile.ZipFile", "shelve.open", "dbm.open", "sqlite3.connect"},
}
"""What touches the file system, so that a dependence through a file (the program writes an index and
reads it back) is a dependence of the slice: see dataflow's ``FILE_SYSTEM`` location. Writers read it
too (a write depends on the folder it writes into existing)."""


def file_system_effect(name: str | None, method: str | None, mode: str | None) -> tuple[bool, bool]:
    """(reads, writes): what a call does to the file system. ``name`` is the callee's dotted name when
    it has one (``os.path.exists``, ``handle.write``), ``method`` the attribute called (``write``) when
    the callee is one, ``mode`` an opener's mode ("?" when not a constant string, None when absent)."""
    table = FILE_SYSTEM
    if name is not None and (name in table["openers"] or name.rsplit(".", 1)[-1] == "open"):
        writes = name == "os.open" or mode == "?" or (mode is not None and any(c in mode for c in "wax+"))
        return True, writes
    if name is not None and (name in table["writes"] or name in table["reads"]):
        return True, name in table["writes"]
    if method is None and name is not None and "." not in name:  # from os import listdir
        writes = any(f.endswith("." + name) for f in table["writes"])
        return writes or any(f.endswith("." + name) for f in table["reads"]), writes
    if method is not None:
        return method in table["reading_methods"] or method in table["writing_methods"], method in table["writing_methods"]
    return False, False


def _matches(name: str, table: set[str]) -> bool:
    if name in table:
        return True
    parts = name.split(".")
    return any(".".join(parts[:n]) + ".*" in table for n in range(1, len(parts)))


def is_pure(name: str) -> bool:
    """A pure function by dotted name (``len``, ``math.sqrt``)."""
    return _matches(name, TABLES["pure"])


def consumes(name: str) -> bool:
    """A function that iterates its arguments (so advances iterators passed to it)."""
    return _matches(name, TABLES["consumers"])


def consumes_arguments(method: str) -> bool:
    """A method that iterates its arguments."""
    return method in TABLES["consuming_methods"]


def is_pure_method(method: str) -> bool:
    """A method that mutates neither receiver nor arguments."""
    return method in TABLES["pure_methods"]


def is_mutator(method: str) -> bool:
    """A method that mutates its receiver."""
    return method in TABLES["mutators"]


def has_outside_effect(name: str) -> bool:
    """A function (dotted name) or method name whose effect reaches outside the program."""
    return _matches(name, TABLES["effects"]) or name.rsplit(".", 1)[-1] in TABLES["effects"] and "." in name


def iterated_arguments(name: str, given: int) -> tuple[int, ...]:
    """Positions of the positional arguments (of ``given``) that consumer ``name`` iterates."""
    known = ITERATED_ARGUMENTS.get(name)
    if known is None:
        start = 1 if name in ("map", "itertools.starmap") else 0
        return tuple(range(start, given))
    return tuple(i for i in known if i < given)


def mutated_argument(name: str) -> int | None:
    """Index of the positional argument a known function mutates, if any."""
    return MUTATING_FUNCTIONS.get(name)


def may_return_part(name: str | None, method: str | None) -> bool:
    """Whether an outside call (``name``: its dotted name where it has one; ``method``: the attribute
    called, for ``obj.m(...)``) may hand back an object it was given or a part of one."""
    if name is not None and _matches(name, TABLES["fresh_functions"]):
        return False
    return method is None or method not in TABLES["fresh_methods"]


def extend(path: Path) -> None:
    """Merge a JSON file ``{"pure": [...], "pure_methods": [...], "mutators": [...], "effects": [...]}``."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    for key, names in data.items():
        if key not in TABLES:
            raise ValueError(f"{path}: unknown table {key!r}; known: {', '.join(TABLES)}")
        TABLES[key].update(names)
