"""Which callee each call site of a program actually reached (hybrid slicing, issue 6).

When enabled, this records the set of (call site, callee) pairs of the running program, restricted to
the program's own files (those under its root folder), once per pair:

* call site: ``(file, line, col, end_line, end_col)`` of the calling instruction, ``file`` relative to
  the program root (POSIX separators), positions as :mod:`ast` reports the call expression (1-based
  lines, UTF-8 byte columns): the caller frame's ``f_lasti`` looked up in ``co_positions()``. For a
  plain call this is exactly the ``ast.Call`` span the static call graph keys its ``CallSite`` on;
  implicit calls (``C()`` running ``C.__init__``, a callback run by ``sorted``) report the call that
  led to them; a property getter reports the attribute expression.
* callee: ``(file, qualname, first line)`` of the code object that started (``co_qualname``,
  ``co_firstlineno``: the first decorator's line for a decorated def).

Generators and coroutines start running long after the call that created them (at the first
``next()``), so their creation pairs come from ``sys.monitoring`` CALL events (3.12+: the callable of
every call in the program's code is looked at); code of that kind that started although no call of the
program's code was seen creating it (always on 3.11, where the profiler hook cannot see the creation)
is listed under ``uncreated``. Each instruction that starts or resumes one (its consumer's ``for``,
``next()``, ``list()``, ``await``) is a call site of it too: the body runs there (PY_RESUME events on
3.12+, every "call" event of the generator's frame on 3.11). Every program code object that ran at all is listed under ``started``.

Python 3.12+ uses ``sys.monitoring`` (PY_START and CALL events under a free tool id; locations in
code outside the program are disabled on their first event); 3.11 uses ``sys.setprofile`` and
``threading.setprofile`` ("call" events: the callee's frame, and ``f_back`` for the caller).

Use: ``python -m mantispy.runtime.observed_calls SCRIPT|-m MODULE ARGS...`` with ``MANTIS_CALLS_OUT``
(the JSON file to write at exit) and ``MANTIS_CALLS_ROOT`` (the program's root folder; default: the
script's folder, or the current folder for ``-m``) in the environment, or :func:`start` in-process.
``MANTIS_CALLS_PACKAGES`` (a JSON object {name: folder or module file}) records installed packages too,
their files named as if each package were copied to the top of the program root (``sqlparse/sql.py``),
as a bytecode-backend campaign with ``[instrument] include`` names their features.
The file is merged with what it already holds (several runs, several processes); a file observed
with different contents (its sha256) in an earlier run replaces the earlier observations.

Standard library only. Not recorded: processes that end through ``os._exit`` (multiprocessing
children) or a signal, threads started before recording began (3.11), code run by ``exec`` of a
string, and programs that install their own ``sys.setprofile`` hook (3.11).
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
import types

ENV_OUT = "MANTIS_CALLS_OUT"
"""Environment variable: the JSON file written at exit."""

ENV_ROOT = "MANTIS_CALLS_ROOT"
"""Environment variable: the program's root folder (only files under it are recorded)."""

ENV_PACKAGES = "MANTIS_CALLS_PACKAGES"
"""Environment variable: JSON {package name: its folder, or its module file}: installed packages whose
files are recorded too, named ``NAME/...`` (``NAME.py`` for a single module) as if copied to the root."""

FORMAT = "mantispy-observed-calls"
VERSION = 1

_GENERATOR_LIKE = 0x20 | 0x80 | 0x100 | 0x200  # CO_GENERATOR, CO_COROUTINE, CO_ITERABLE_COROUTINE, CO_ASYNC_GENERATOR
_NEWLOCALS = 0x2  # set for functions, lambdas, comprehensions; not for module and class bodies
_INLINED = frozenset({"<listcomp>", "<setcomp>", "<dictcomp>"})
_TOOL_NAME = "mantispy-observed-calls"
_HERE = os.path.dirname(os.path.realpath(__file__))


class Recorder:
    """The observations of one process. Hot paths keep ids of code objects (hashing a code object
    is not cheap); every code object seen is kept alive in ``_where`` so that its id stays unique."""

    def __init__(self, root: str, packages: dict[str, str] | None = None) -> None:
        self.root = os.path.realpath(root)
        # (real location, is a folder, the name its files get under the root), for included packages
        self.packages = [(os.path.realpath(where), os.path.isdir(where), name)
                         for name, where in sorted((packages or {}).items())]
        self._real: dict[str, str] = {}  # rel file -> the file it was read from (for its sha256)
        self.cwd = os.getcwd()
        self.api = "sys.monitoring" if sys.version_info >= (3, 12) else "setprofile"
        self._where: dict[int, tuple] = {}  # id(code) -> (code, rel file or None)
        self._files: dict[str, str | None] = {}  # co_filename -> rel file or None
        self.pairs: set[tuple[int, int, int]] = set()  # (id(caller code), caller offset, id(callee code))
        self.reached: set[tuple[int, int]] = set()  # (id(code), offset) of every call instruction of the program that ran
        self.started: set[int] = set()  # ids of program code objects that ran
        self.created: set[int] = set()  # ids of generator-like program code seen created by a program call
        self.tool: int | None = None
        self.active = False

    # ------------------------------------------------------------------ which code is the program's
    def _rel(self, filename: str) -> str | None:
        rel = None
        if filename and not filename.startswith("<"):
            try:
                path = os.path.realpath(os.path.join(self.cwd, filename))
            except (OSError, ValueError):
                path = ""
            if path.startswith(self.root + os.sep) and path.endswith(".py") and not path.startswith(_HERE + os.sep):
                rel = path[len(self.root) + 1:].replace(os.sep, "/")
                if rel.startswith(".mantis/"):  # a standalone run-time copy inside an instrumented build
                    rel = None
            elif path.endswith(".py"):
                rel = self._package_rel(path)
            if rel is not None:
                self._real[rel] = path
        self._files[filename] = rel
        return rel

    def _package_rel(self, path: str) -> str | None:
        """The name of an included package's file under the root (``NAME/sub/mod.py``), or None."""
        for where, folder, name in self.packages:
            if folder and path.startswith(where + os.sep):
                return name + "/" + path[len(where) + 1:].replace(os.sep, "/")
            if not folder and path == where:
                return name + ".py"
        return None

    def _learn(self, code) -> tuple:
        self._where[id(code)] = (code, None)  # placeholder first: _rel runs Python code
        filename = code.co_filename
        rel = self._files[filename] if filename in self._files else self._rel(filename)
        entry = (code, rel)
        self._where[id(code)] = entry
        return entry

    # ------------------------------------------------------------------ 3.11: sys.setprofile
    def _profile(self, frame, event, arg):
        if event != "call":
            if event == "c_call":  # a builtin called from ``frame``: its call site ran
                code = frame.f_code
                entry = self._where.get(id(code)) or self._learn(code)
                if entry[1] is not None:
                    self.reached.add((id(code), frame.f_lasti))
            return
        code = frame.f_code
        entry = self._where.get(id(code)) or self._learn(code)
        if entry[1] is None:
            return
        self.started.add(id(code))
        if not code.co_flags & _NEWLOCALS:
            return  # a module or class body is not called
        # for a generator (started or resumed: this event comes each time), the caller is its consumer
        self._pair_with_caller(frame.f_back, code)

    # ------------------------------------------------------------------ 3.12+: sys.monitoring
    def _py_start(self, code, offset):
        entry = self._where.get(id(code)) or self._learn(code)
        if entry[1] is None:
            return _DISABLE  # code outside the program never becomes a callee we record
        self.started.add(id(code))
        if not code.co_flags & _NEWLOCALS:
            return None  # a module or class body
        self._pair_with_caller(sys._getframe(1).f_back, code)  # frame 1 is the callee's own frame
        return None

    def _py_resume(self, code, offset):
        """A generator or coroutine resumed: its consumer's instruction runs its body (``for x in gen``,
        ``next(gen)``, ``list(gen)``), a pair as much as the one that created it."""
        entry = self._where.get(id(code)) or self._learn(code)
        if entry[1] is None:
            return _DISABLE
        self._pair_with_caller(sys._getframe(1).f_back, code)
        return None

    def _pair_with_caller(self, caller, code) -> None:
        """Record (the instruction ``caller`` is at, ``code``) if ``caller`` runs program code: the call
        that started a function, or the consumer that started or resumed a generator."""
        if caller is None:
            return
        ccode = caller.f_code
        centry = self._where.get(id(ccode)) or self._learn(ccode)
        if centry[1] is not None:
            self.pairs.add((id(ccode), caller.f_lasti, id(code)))
            self.reached.add((id(ccode), caller.f_lasti))

    def _call(self, code, offset, callable_, arg0):
        entry = self._where.get(id(code)) or self._learn(code)
        if entry[1] is None:
            return _DISABLE  # a call site outside the program: never recorded
        self.reached.add((id(code), offset))
        kind = type(callable_)
        if kind is _FunctionType:
            func = callable_
        elif kind is _MethodType:
            func = callable_.__func__
            if type(func) is not _FunctionType:
                return None
        else:
            return None
        target = func.__code__
        if target.co_flags & _GENERATOR_LIKE:
            tentry = self._where.get(id(target)) or self._learn(target)
            if tentry[1] is not None:
                self.pairs.add((id(code), offset, id(target)))
                self.created.add(id(target))
        return None

    # ------------------------------------------------------------------ control
    def start(self) -> None:
        """Begin recording (every thread of the process)."""
        if self.active:
            return
        if self.api == "sys.monitoring":
            monitoring = sys.monitoring  # type: ignore[attr-defined]  # 3.12+, as self.api says
            for tool in (monitoring.PROFILER_ID, 3, 4, 5):
                if monitoring.get_tool(tool) is None:
                    monitoring.use_tool_id(tool, _TOOL_NAME)
                    self.tool = tool
                    break
            else:
                _warn("every sys.monitoring tool id is taken; calls are not recorded")
                return
            events = monitoring.events
            monitoring.register_callback(self.tool, events.PY_START, self._py_start)
            monitoring.register_callback(self.tool, events.CALL, self._call)
            monitoring.register_callback(self.tool, events.PY_RESUME, self._py_resume)
            monitoring.set_events(self.tool, events.PY_START | events.PY_RESUME | events.CALL)
        else:
            threading.setprofile(self._profile)
            sys.setprofile(self._profile)
        self.active = True

    def stop(self) -> None:
        """Stop recording (observations are kept)."""
        if not self.active:
            return
        if self.api == "sys.monitoring":
            monitoring = sys.monitoring  # type: ignore[attr-defined]  # 3.12+, as self.api says
            monitoring.set_events(self.tool, 0)
            monitoring.register_callback(self.tool, monitoring.events.PY_START, None)
            monitoring.register_callback(self.tool, monitoring.events.CALL, None)
            monitoring.register_callback(self.tool, monitoring.events.PY_RESUME, None)
            monitoring.free_tool_id(self.tool)
        else:
            sys.setprofile(None)
            threading.setprofile(None)
        self.active = False

    # ------------------------------------------------------------------ results
    def snapshot(self) -> dict:
        """The observations so far, in this module's JSON format (see :func:`empty`)."""
        positions: dict[int, list] = {}

        def position(code_id: int, offset: int) -> tuple | None:
            if code_id not in positions:
                positions[code_id] = list(self._where[code_id][0].co_positions())
            table = positions[code_id]
            if not 0 <= offset // 2 < len(table):
                return None
            line, end_line, col, end_col = table[offset // 2]
            if line is None or col is None or end_line is None or end_col is None:
                return None
            return (self._where[code_id][1], line, col, end_line, end_col)

        calls = set()
        for ccode_id, offset, code_id in list(self.pairs):
            ccode, crel = self._where[ccode_id]
            code, rel = self._where[code_id]
            if code.co_name in _INLINED:  # 3.11 runs these as calls; 3.12+ inlines them
                continue
            site = position(ccode_id, offset)
            if site is not None:
                calls.add((*site, rel, code.co_qualname, code.co_firstlineno))
        reached = {site for site in (position(c, o) for c, o in list(self.reached)) if site is not None}
        started = set()
        uncreated = set()
        for code_id in list(self.started):
            code, rel = self._where[code_id]
            started.add((rel, code.co_qualname, code.co_firstlineno))
            if code.co_flags & _GENERATOR_LIKE and code_id not in self.created:
                uncreated.add((rel, code.co_qualname, code.co_firstlineno))
        files = {}
        for rel in sorted({c[0] for c in calls} | {c[5] for c in calls} | {s[0] for s in started}):
            files[rel] = _sha256_of(self._real.get(rel) or os.path.join(self.root, rel))
        data = empty(self.root)
        data["files"] = files
        data["runs"] = [{"argv": list(sys.argv[1:]), "python": sys.version.split()[0], "api": self.api,
                         "pid": os.getpid()}]
        data["calls"] = sorted(list(c) for c in calls)
        data["started"] = sorted(list(s) for s in started)
        data["reached"] = sorted(list(s) for s in reached)
        data["uncreated"] = sorted(list(s) for s in uncreated)
        return data

    def write(self, path: str) -> None:
        """Merge the observations into ``path`` (created if missing), under a lock."""
        merge_into(path, self.snapshot())


def empty(root: str = "") -> dict:
    """An observations document with nothing in it.

    ``calls``: ``[site_file, line, col, end_line, end_col, callee_file, callee_qualname, callee_line]``;
    ``reached``: ``[file, line, col, end_line, end_col]`` of every call site of the program that ran a
    call, whatever it called (3.11 misses calls of classes and of generator functions); ``started``: ``[file, qualname, line]`` of every program code object that ran; ``uncreated``: the
    generator-like ones among them whose creating call was not seen; ``files``: ``{file: sha256}`` of
    the files as they ran; ``runs``: one entry per recorded process."""
    return {"format": FORMAT, "version": VERSION, "root": root, "files": {}, "runs": [], "calls": [],
            "reached": [], "started": [], "uncreated": []}


def merge(old: dict, new: dict) -> dict:
    """The union of two observation documents. A file whose contents changed (another sha256) makes
    the old observations stale: ``new`` alone is returned (the caller may warn)."""
    if old.get("format") != FORMAT or int(old.get("version", 0)) != VERSION:
        raise ValueError(f"not a {FORMAT} version {VERSION} document")
    for rel, digest in new.get("files", {}).items():
        if old.get("files", {}).get(rel, digest) != digest:
            raise _StaleError(rel)
    out = empty(old.get("root") or new.get("root", ""))
    out["files"] = {**old.get("files", {}), **new.get("files", {})}
    out["runs"] = [*old.get("runs", []), *new.get("runs", [])]
    for key in ("calls", "reached", "started", "uncreated"):
        out[key] = sorted({tuple(x) for x in old.get(key, [])} | {tuple(x) for x in new.get(key, [])})
        out[key] = [list(x) for x in out[key]]
    return out


class _StaleError(ValueError):
    """The same file was observed with different contents."""


def merge_into(path: str, data: dict) -> dict:
    """Merge ``data`` into the JSON file at ``path`` (atomically, under an exclusive lock on its folder, so
    that no lock file is left beside it); returns what was written."""
    import json

    path = os.path.abspath(path)
    directory = os.path.dirname(path)
    os.makedirs(directory, exist_ok=True)
    lock = os.open(directory, os.O_RDONLY)
    try:
        try:
            import fcntl

            fcntl.flock(lock, fcntl.LOCK_EX)
        except ImportError:  # pragma: no cover - not POSIX
            pass
        merged = data
        if os.path.exists(path):
            try:
                with open(path, encoding="utf-8") as f:
                    merged = merge(json.load(f), data)
            except _StaleError as exc:
                _warn(f"{path}: {exc} changed since it was observed; earlier observations dropped")
            except (OSError, ValueError) as exc:
                _warn(f"{path}: unreadable ({exc}); replaced")
        tmp = os.path.join(directory, f".{os.path.basename(path)}.{os.getpid()}.tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(dumps(merged))
        os.replace(tmp, path)
        return merged
    finally:
        os.close(lock)


def dumps(data: dict) -> str:
    """JSON text of an observations document: one key per line, one record per line."""
    import json

    lines = []
    for key in sorted(data):
        value = data[key]
        if isinstance(value, list) and value:
            items = ",\n  ".join(json.dumps(v, sort_keys=True) for v in value)
            lines.append(f"{json.dumps(key)}: [\n  {items}\n]")
        else:
            lines.append(f"{json.dumps(key)}: {json.dumps(value, sort_keys=True)}")
    return "{\n" + ",\n".join(lines) + "\n}\n"


def _sha256_of(path: str) -> str:
    import hashlib

    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return ""


def _warn(message: str) -> None:
    try:
        sys.stderr.write(f"mantispy: observed calls: {message}\n")
    except Exception:  # noqa: BLE001 - never fail the program
        pass


_DISABLE = getattr(getattr(sys, "monitoring", None), "DISABLE", None)
_FunctionType = types.FunctionType
_MethodType = types.MethodType

_recorder: Recorder | None = None


def start(root: str, out: str | None = None, packages: dict[str, str] | None = None) -> Recorder:
    """Start recording calls among the files under ``root`` (and those of ``packages``: see
    :data:`ENV_PACKAGES`); with ``out``, merge the observations into that JSON file when the process
    exits. Returns the process's recorder (one per process)."""
    global _recorder
    if _recorder is None:
        _recorder = Recorder(root, packages)
    _recorder.start()
    if out:
        target = os.path.abspath(out)

        def _at_exit() -> None:
            try:
                if _recorder is not None:
                    _recorder.stop()
                    _recorder.write(target)
            except Exception as exc:  # noqa: BLE001 - an exit hook must not fail the program
                _warn(f"cannot write {target}: {exc}")

        atexit.register(_at_exit)
    return _recorder


def _packages_from_env() -> dict[str, str]:
    """:data:`ENV_PACKAGES` read (an unreadable value records no package, with a warning)."""
    import json

    text = os.environ.get(ENV_PACKAGES)
    if not text:
        return {}
    try:
        packages = json.loads(text)
    except ValueError:
        packages = None
    if not isinstance(packages, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in packages.items()):
        _warn(f"{ENV_PACKAGES} is not a JSON object of package names and locations; no package is recorded")
        return {}
    return packages


def main(argv: list[str]) -> None:
    """``python -m mantispy.runtime.observed_calls SCRIPT|-m MODULE ARGS...``: run the program like the
    interpreter would, with recording on (see the module docstring)."""
    import runpy

    if not argv or (argv[0] == "-m" and len(argv) < 2):
        sys.exit("usage: python -m mantispy.runtime.observed_calls SCRIPT|-m MODULE ARGS...")
    out = os.environ.get(ENV_OUT)
    packages = _packages_from_env()
    if argv[0] == "-m":
        root = os.environ.get(ENV_ROOT) or os.getcwd()
        sys.argv = [argv[1], *argv[2:]]
        start(root, out, packages)
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
    else:
        script = os.path.abspath(argv[0])
        root = os.environ.get(ENV_ROOT) or os.path.dirname(script)
        sys.argv = [argv[0], *argv[1:]]
        sys.path[0] = os.path.dirname(script)
        start(root, out, packages)
        runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
