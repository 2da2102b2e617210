"""The system dependence graph (Horwitz, Reps and Binkley 1990) of a whole program.

Procedures are all code units (module bodies, class bodies, functions, lambdas, comprehensions).
Besides each procedure's PDG vertices the SDG has, as in WALA's SDG:

* formal-in vertices ``("fin", P, X)``: ``X`` is ``ARGS`` (the parameters' values; the entry vertex
  itself only says that P runs, so a summary edge needs a real data path from the arguments) or a
  location P reads before any write of its own (a global, a closure cell, an
  attribute field, transitively through P's callees: its REF set);
* formal-out vertices ``("fout", P, X)``: ``RET`` (the value handed back), a location P writes
  (transitively: its MOD set), or ``ARGMUT`` (P mutates an object passed as an argument);
* for every call of the program's own code (resolved by the call graph, plus the implicit ones: a
  comprehension or class body run by the statement that contains it, a module body run by ``import``),
  a call vertex (the statement) and actual-in / actual-out vertices ``("ain"|"aout", call, X)`` for
  each formal of the possible callees;
* edges: ``control`` and ``data`` inside procedures; ``call`` (call vertex -> callee entry),
  ``param-in`` (actual-in -> formal-in), ``param-out`` (formal-out -> actual-out) between them; and
  ``summary`` edges (actual-in -> actual-out when the callee carries the first to the second along a
  same-level realizable path), computed once by the Reps-Horwitz-Sagiv-Rosay worklist algorithm and
  reused by every slice.

Calls of one statement see each other's effects (``walk(direct(argv))``: an actual-out of ``direct`` to
the actual-in of ``walk`` for the fields one writes and the other reads), and a statement resuming a
generator that changes what it yielded earlier weakly defines every variable its procedure binds
(PyYAML's two-step constructors). Parameter passing is modelled coarsely but soundly: the ``ARGS`` actual-in depends on everything the
call's statement reads, and an ``ARGMUT`` actual-out weakly defines every argument's (and the
receiver's) root location. Locations are the dataflow module's, with variables qualified by file.
"""

from __future__ import annotations

import ast
import builtins
import heapq
import re
from array import array
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import networkx as nx

from .callgraph import NO_FALLBACK_PROTOCOLS, CallGraph
from .cfg import build_cfg, collect_units, iter_units
from .dataflow import (
    ANY,
    ATTR_ANY,
    ATTR_PREFIX,
    ELEMENT_GETTERS,
    RET,
    UNMODELLED_CALLS,
    Access,
    Scopes,
    accesses,
    dotted_name,
    reaching_definitions,
)
from .ir import CFG, CodeUnit
from .labelled_graph import LabelledDigraph
from .memo import MemoCache, memo_caches
from .observations import short_name
from .pdg import control_dependences
from .program import Program, SourceFile

ARGS = ("args",)
ARGMUT = ("argmut",)

ProcKey = tuple[str, str]  # (file, qualname)
Node = tuple


@dataclass(frozen=True)
class Precision:
    """What the SDG may assume beyond the language's semantics (each assumption is checked afterwards by
    the build's fidelity test on training inputs, which rejects a feature whose evaluator disagrees)."""

    transparent_memo_caches: bool = True
    """A module-level dict used only as a memo cache (:mod:`memo`) carries no dependence from the calls
    that filled it to later lookups: a slice keeps the cached function, not the work that warmed it."""


@dataclass(eq=False)
class Procedure:
    """One code unit of the program, with its CFG and intraprocedural facts."""

    key: ProcKey
    source: SourceFile
    unit: CodeUnit
    cfg: CFG
    access: dict[int, Access] = field(default_factory=dict)
    calls: list[CallRecord] = field(default_factory=list)
    mod: set = field(default_factory=set)
    ref: set = field(default_factory=set)
    mutates_args: bool = False
    returned_roots: list | None = None  # see _returned_roots (computed on first use)
    stored_params: dict | None = None  # see _stored_params (computed on first use)
    # a generator that changes an object it has yielded after resuming (``data = {}; yield data;
    # data.update(...)``): whoever resumes it changes what its consumers hold (see _procedure_dependences)
    mutates_yielded: bool = False
    # the parameters it writes through (a weak write: ``param.append(x)``, ``param[k] = v``)
    mutated_params: set[str] = field(default_factory=set)
    # local variables that may hold (part of) a parameter's object -> those parameters' names
    param_aliases: dict[tuple, set[str]] = field(default_factory=dict)
    # vertices that mutate a parameter's object through such an alias (``for t in tlist: t.x = ...``)
    alias_writes: set[int] = field(default_factory=set)
    wide: bool = False  # its attribute fields are collapsed into HEAP (see _collapse_wide_interfaces)
    # for a wide procedure: the field names its HEAP stands for, as written (MOD) and as read (REF)
    heap_mod: frozenset = frozenset()
    heap_ref: frozenset = frozenset()


@dataclass(eq=False)
class CallRecord:
    """A call of program code from one vertex: explicit (an ast.Call) or implicit."""

    caller: ProcKey
    vertex: int
    index: int
    callees: list[ProcKey]
    text: str
    implicit: str | None = None  # "comprehension", "class-body", "import"
    node: ast.Call | None = None  # the call expression of an explicit call
    # how the callees of an unresolved site were found: "static" (resolved), "name-fallback" (every
    # program function of that name), "observed" (the callees profiling saw it reach, see hybrid.py)
    resolved: str = "static"

    @property
    def id(self) -> tuple:
        return (self.caller, self.vertex, self.index)


def qualify(file: str, loc: tuple) -> tuple:
    """Dataflow locations -> SDG locations (variables carry their file)."""
    if loc and loc[0] == "var":
        return ("var", file, loc[1], loc[2])
    return loc


class SDG:
    """Build with :func:`build_sdg`; slice with :mod:`slicing`."""

    def __init__(self, program: Program, callgraph: CallGraph, observed=None) -> None:
        self.program = program
        self.callgraph = callgraph
        # Hybrid slicing: observed calls (observations.Observations) resolve the sites inference could not;
        # observed_sites: (file, line, col) -> {"site", "text", "callees", "instead_of"} for those sites.
        self.observed = observed
        self.observed_sites: dict[tuple[str, int, int], dict] = {}
        self.procs: dict[ProcKey, Procedure] = {}
        self.graph = LabelledDigraph()
        self.calls_to: dict[ProcKey, list[CallRecord]] = defaultdict(list)
        self.scopes: dict[str, Scopes] = {}
        self.units_by_position: dict[tuple[str, int, int], ProcKey] = {}
        self.units_by_line: dict[tuple[str, int], ProcKey] = {}
        self.constant_defs: _ConstantDefs = _ConstantDefs({}, None, {})  # see _import_time_constants
        self.precision = Precision()
        self.memo: dict[tuple, MemoCache] = {}  # location of a transparent memo cache -> the cache
        # Summary edges, kept out of the graph (a large package has millions; an edge there costs over a
        # hundred bytes): pairs of numbers into summary_nodes. Read them with labelled_edges().
        self.summary_nodes: list[Node] = []
        self.summary_sources = array("q")
        self.summary_targets = array("q")

    # ------------------------------------------------------------------ nodes
    @staticmethod
    def vertex(proc: ProcKey, vid: int) -> Node:
        return ("v", proc, vid)

    def entry(self, proc: ProcKey) -> Node:
        return self.vertex(proc, self.procs[proc].cfg.entry.id)

    @staticmethod
    def formal(kind: str, proc: ProcKey, loc: tuple) -> Node:
        return (kind, proc, loc)

    def cached(self, name: str, factory):
        """A derived structure kept on this SDG (built by ``factory(self)`` on first use)."""
        found = self.__dict__.get(name)
        if found is None:
            found = self.__dict__[name] = factory(self)
        return found

    @staticmethod
    def actual(kind: str, call: CallRecord, loc: tuple) -> Node:
        return (kind, call.id, loc)

    def add_edge(self, a: Node, b: Node, kind: str, label=None) -> None:
        self.graph.add_edge(a, b, (kind, label))

    def labelled_edges(self) -> Iterator[tuple[Node, Node, str, Any]]:
        """(source, target, kind, label) of every edge: the graph's, then the summary edges."""
        yield from self.graph.labelled()
        nodes = self.summary_nodes
        for a, b in zip(self.summary_sources, self.summary_targets):
            yield nodes[a], nodes[b], "summary", None

    @property
    def summary_count(self) -> int:
        """How many summary edges the SDG has."""
        return len(self.summary_sources)

    def span_of(self, node: Node) -> tuple[str, tuple] | None:
        """(file, ast span) of the source a node stands for (actuals: their call's statement)."""
        if node[0] == "v":
            proc = self.procs[node[1]]
            v = proc.cfg.vertices[node[2]]
            return (proc.source.path, v.span) if v.span else None
        if node[0] in ("ain", "aout"):
            caller, vid, _ = node[1]
            return self.span_of(("v", caller, vid))
        return None


def build_sdg(program: Program, callgraph: CallGraph, observed=None, precision: Precision | None = None) -> SDG:
    """Build the whole-program SDG with its summary edges. With ``observed`` (a
    :class:`observations.Observations`), call sites inference left unresolved get the callees profiling saw
    them reach instead of the name-based fallback (hybrid slicing); resolved sites are never changed.
    ``precision`` chooses the assumptions the graph may make (:class:`Precision`)."""
    sdg = SDG(program, callgraph, observed)
    sdg.precision = precision or Precision()
    if sdg.precision.transparent_memo_caches:
        sdg.memo = {cache.location: cache for cache in memo_caches((f.path, f.tree) for f in program.files)}
    _procedures(sdg)
    _resolve_calls(sdg)
    _local_effects(sdg)
    _propagate_effects(sdg)
    _collapse_wide_interfaces(sdg)
    _dependences(sdg)
    _summary_edges(sdg)
    return sdg


# ---------------------------------------------------------------------- procedures and calls
def _procedures(sdg: SDG) -> None:
    for source in sdg.program.files:
        root = collect_units(source.tree, source.path)
        sdg.scopes[source.path] = Scopes(source.source, source.path, root)
        for unit in iter_units(root):
            key = (source.path, unit.qualname)
            sdg.procs[key] = Procedure(key, source, unit, build_cfg(unit))
            node = unit.node
            if unit.kind != "module":
                sdg.units_by_position[(source.path, node.lineno, node.col_offset)] = key
                sdg.units_by_line.setdefault((source.path, node.lineno), key)
                for decorator in getattr(node, "decorator_list", []):  # astroid may report this line
                    sdg.units_by_line.setdefault((source.path, decorator.lineno), key)


def callee_keys(sdg: SDG, names) -> list[ProcKey]:
    """The SDG procedures of call-graph function names (those the SDG has)."""
    keys = []
    for name in names:
        fn = sdg.callgraph.functions.get(name)
        if fn is None:
            continue
        if fn.kind == "module":
            keys.append((fn.file, "<module>"))
            continue
        key = sdg.units_by_position.get((fn.file, fn.line, fn.col)) or sdg.units_by_line.get((fn.file, fn.line))
        if key is not None:
            keys.append(key)
    return keys


def _resolve_calls(sdg: SDG) -> None:
    """Attach call records to vertices: call-graph sites, implicit comprehension/class/import calls."""
    sites = defaultdict(list)
    for site in sdg.callgraph.sites:
        if site.kind in ("call", "decorator", "property-get", "property-set", "property-del", "protocol-iter",
                         "protocol-contains", "protocol-builtin", "protocol-subscript"):
            sites[site.file].append(site)
    module_of = {f.modname: f.path for f in sdg.program.files}
    startup, maybe_startup = _startup_modules(sdg, module_of)
    observed = sdg.observed.calls_by_file(sdg) if sdg.observed is not None else {}
    for key, proc in sdg.procs.items():
        file = key[0]
        own = [s for s in sites[file] if _inside(proc, s.line, s.col)]
        own_observed = [o for o in observed.get(file, ()) if _inside(proc, o[0][1], o[0][2])]
        for vertex in proc.cfg.vertices.values():
            if vertex.span is None or vertex.kind in ("entry", "exit", "raise-exit"):
                continue
            records: list[CallRecord] = []
            for site in own:
                if _vertex_contains(proc, vertex, site.line, site.col):
                    callees = callee_keys(sdg, site.callees)
                    how = "static"
                    if not site.resolved and site.kind in ("protocol-iter", "protocol-contains"):
                        # the call graph's callees are every __iter__ (__contains__) by name: a fallback
                        fallback, callees = callees, []
                        seen = (sdg.observed.protocol_callees_for(sdg, key, site, _statement_span(proc, site))
                                if sdg.observed is not None else None)
                    elif not site.resolved:  # what inference missed may be any program code of that name
                        seen = sdg.observed.callees_for(sdg, key, site) if sdg.observed is not None else None
                        # a builtin's argument or a property's object of unknown type: no by-name fallback
                        # (no program function named len or next runs; a read of .name may be no property)
                        fallback = ([] if site.kind in NO_FALLBACK_PROTOCOLS or site.kind.startswith("property") else
                                    [c for c in _by_name(sdg, proc, site) if c not in callees])
                    if not site.resolved:
                        if seen is None or set(seen) == set(fallback):
                            callees += fallback
                            how = "name-fallback"
                        else:  # the callees profiling saw this site reach (its unit ran)
                            sdg.observed_sites[(file, site.line, site.col)] = {
                                "site": f"{file}:{site.line}:{site.col}", "text": site.text,
                                "callees": [f"{f}:{q}" for f, q in seen],
                                "instead_of": [f"{f}:{q}" for f, q in fallback], "_vertex": sdg.vertex(key, vertex.id)}
                            callees += [c for c in seen if c not in callees]
                            how = "observed"
                    if len(callees) < len(site.callees):  # some callee is outside: maybe a decorator's wrapper
                        for wrapped in _decorated_targets(sdg, proc, site):
                            if wrapped not in callees:
                                callees.append(wrapped)
                    if callees:
                        records.append(CallRecord(key, vertex.id, len(records), callees, site.text, resolved=how,
                                                  node=_call_node(proc, site) if site.kind == "call" else None))
                    elif site.kind == "call" and IMPORT_BY_NAME & site.callees:
                        for modname in _modules_imported_by_name(sdg, proc, site, module_of):
                            if modname in startup:
                                continue  # loaded at startup: importing it again does not run its body
                            records.append(CallRecord(key, vertex.id, len(records), [(module_of[modname], "<module>")],
                                                      f"import_module({modname!r})", "import-by-name"))
            for child in proc.unit.children:
                if child.kind == "comprehension" and _vertex_contains(proc, vertex, child.node.lineno, child.node.col_offset):
                    records.append(CallRecord(key, vertex.id, len(records), [(file, child.qualname)],
                                              child.qualname, "comprehension"))
                if child.kind == "class" and vertex.kind == "def" and vertex.node is child.node:
                    records.append(CallRecord(key, vertex.id, len(records), [(file, child.qualname)],
                                              f"class {child.node.name}", "class-body"))
            if vertex.kind == "stmt" and isinstance(vertex.node, (ast.Import, ast.ImportFrom)):
                for modname in _imported_modules(proc.source, vertex.node, module_of):
                    if proc.unit.kind == "module" and vertex.node.lineno > _first_top_level_imports(
                            sdg, proc, module_of).get(modname, vertex.node.lineno):
                        continue  # the module body imported it unconditionally on an earlier line
                    at_startup = proc.unit.kind in ("module", "class") and proc.source.modname in maybe_startup
                    if modname in startup and not at_startup:
                        continue  # already imported when this import runs: it does not run the body again
                    if _started_before(modname, proc.source.modname, sdg.callgraph.entry):
                        continue  # its own package (or itself): its body has started before this code runs
                    records.append(CallRecord(key, vertex.id, len(records), [(module_of[modname], "<module>")],
                                              f"import {modname}", "import"))
            if own_observed:
                _add_observed_implicit(sdg, proc, vertex, records, own_observed)
            proc.calls.extend(records)
            for record in records:
                for callee in record.callees:
                    sdg.calls_to[callee].append(record)


def _add_observed_implicit(sdg: SDG, proc: Procedure, vertex, records: list[CallRecord],
                           observed: list[tuple[tuple[str, int, int, int, int], list[ProcKey]]]) -> None:
    """Hybrid slicing: the program callees profiling saw a vertex's code reach that none of its call
    records has, as records of their own (``implicit="observed"``). These are the calls the language or
    the standard library makes for the program where no call site is modelled: an f-string or ``%``
    formatting running ``__str__``, ``print(x)`` and ``map(str, xs)`` too, ``list(x)`` running
    ``__iter__``, ``==`` running ``__eq__``, and a generator's body run where it is resumed (``next(g)``,
    ``for _ in g``, ``list(g)``), wherever it was created. Not ``__getattr__`` (see ATTRIBUTE_HOOKS)."""
    have = {callee for record in records for callee in record.callees}
    loops = _loops_by_span(proc.source) if vertex.kind == "for-next" else {}
    if loops:  # what the loop's iterable calls (``for ch in pieces(word)``) is called by the loop already
        heads = {id(loop.iter) for loop in loops.values() if loop.target is vertex.node}
        have |= {c for record in proc.calls if id(proc.cfg.vertices[record.vertex].node) in heads
                 for c in record.callees}
    for site, callees in observed:
        # a loop stepping a generator reports the whole ``for`` statement (3.11, 3.12): its next step
        stepping = loops[site[1:]].target is vertex.node if site[1:] in loops else False
        if not stepping and not _vertex_contains(proc, vertex, site[1], site[2]):
            continue
        extra = [c for c in callees if c not in have and c in sdg.procs and short_name(c[1]) not in ATTRIBUTE_HOOKS]
        if not extra:
            continue
        have.update(extra)
        text = proc.source.segment(*site[1:], limit=120)
        records.append(CallRecord(proc.key, vertex.id, len(records), extra, text, implicit="observed",
                                  resolved="observed"))
        sdg.observed_sites[(site[0], site[1], site[2], "implicit", site[3], site[4])] = {
            "site": f"{site[0]}:{site[1]}:{site[2]}", "text": text, "callees": [f"{f}:{q}" for f, q in extra],
            "instead_of": [], "implicit": True, "_vertex": sdg.vertex(proc.key, vertex.id)}


# Methods run by attribute reads (``T.Number.Integer`` creating sqlparse's token types on first use): left
# out of the observed implicit calls. They are dunders, kept whole with their class, so an evaluator runs
# them wherever it reads the attribute; as calls they would make every attribute read a write of "some
# field" (their ``setattr`` by computed name), which tied every sqlparse slice to the whole program
# (``workload.py:main:loop:2``: 24 -> 1,860 statements).
ATTRIBUTE_HOOKS = frozenset({"__getattr__", "__getattribute__"})


def _loops_by_span(source: SourceFile) -> dict[tuple[int, int, int, int], ast.For | ast.AsyncFor]:
    """The ``for`` statements of a file by span (a for-next vertex's node is the loop's target, a
    for-iter vertex's its iterable)."""
    index = source.__dict__.get("_loops_by_span")
    if index is None:
        index = source.__dict__["_loops_by_span"] = {
            (n.lineno, n.col_offset, n.end_lineno, n.end_col_offset): n for n in ast.walk(source.tree)
            if isinstance(n, (ast.For, ast.AsyncFor))}
    return index


def _first_top_level_imports(sdg: SDG, proc: Procedure, module_of: dict[str, str]) -> dict[str, int]:
    """Module body ``proc``: program module -> the first line where a statement of the body's own top level
    (not under ``if``/``try``, which may not run) imports it. Any later import of it in that body finds it
    started (pyparsing's ``__init__`` imports ``.core`` three times)."""
    cache = sdg.__dict__.setdefault("_first_imports", {})
    found = cache.get(proc.key)
    if found is None:
        found = cache[proc.key] = {}
        for stmt in proc.unit.node.body if isinstance(proc.unit.node, ast.Module) else ():
            if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                for modname in _imported_modules(proc.source, stmt, module_of):
                    found.setdefault(modname, stmt.lineno)
    return found


def _started_before(imported: str, importer: str, entry: str | None) -> bool:
    """Whether module ``imported``'s body has surely started before any code of module ``importer`` runs,
    so that importing it there never runs that body: ``importer`` itself, or a package that contains it
    (Python imports a package before its submodules, and a package mid-import is returned as it stands).
    Not for the entry module, which a script path runs without importing its packages. In pyparsing every
    submodule's ``from . import`` and ``from .core import`` reached the package's ``__init__`` body: 34 of
    its 35 callers, each with summary edges for its 1,300 inputs times 1,100 outputs."""
    if importer == entry:
        return False
    return importer == imported or importer.startswith(imported + ".")


def _startup_modules(sdg: SDG, module_of: dict[str, str]) -> tuple[set[str], set[str]]:
    """(surely, maybe): the program modules imported before any function of the program runs — the
    entry module and, transitively, what module bodies import unconditionally (top-level ``import``
    statements, also in a top-level ``try``) — and those whose bodies may run then (any import in a
    module or class body, conditional ones too).

    A module body runs once, at its first import. An import of a surely-loaded module that runs later
    (inside a function, or in the body of a module only functions import) does not run its body, so
    slicing must not ascend from that body to such import sites: in Whoosh, every import-time statement
    of fields.py climbed through ``from whoosh.fields import ...`` in writing.py, imported by
    ``FileIndex.writer``, into the loop that opens the index writers."""
    entry = sdg.callgraph.entry
    if entry is None or entry not in module_of:
        return set(), set(module_of)
    surely = _import_closure(sdg, entry, module_of, conditional=False)
    return surely, _import_closure(sdg, entry, module_of, conditional=True)


DYNAMIC_LOADERS = frozenset({"__import__", "import_module", "reload", "run_module", "run_path", "exec", "eval",
                             "exec_module", "load_module", "spec_from_file_location", "SourceFileLoader",
                             "entry_points", "load_entry_point", "iter_modules", "walk_packages"})
"""Names whose call may load a module no ``import`` statement names: where a loadable module calls one,
every module of the program may be loaded."""


def loadable_files(sdg: SDG) -> set[str] | None:
    """The files of the modules the program may ever load: the entry's module and, transitively, every
    module an ``import`` anywhere in a loaded module names (in a function body too, conditional or not,
    with the packages above it); None (every module) when there is no entry module or a loaded module
    may load modules by name (``importlib.import_module``, ``__import__``, ``exec``, ``runpy``, entry
    points...). A module outside this set never runs, so its statements define nothing the program reads
    (a second script in the program's folder, a package's unused command-line module). With observed
    calls (hybrid slicing), a program that loads modules by name may load what their import statements
    name and the modules profiling saw run or a string constant spells out (with what those import):
    a module loaded by name on an input no observed run had may be missing, which fidelity checks catch."""
    cached = sdg.__dict__.get("_loadable_files", False)
    if cached is not False:
        return cached
    module_of = {f.modname: f.path for f in sdg.program.files}
    entry = sdg.callgraph.entry
    found = None
    if entry is not None and entry in module_of:
        parts = entry.split(".")  # the packages above the entry load first
        roots = [".".join(parts[: n + 1]) for n in range(len(parts))]
        found = _module_closure(sdg, roots, module_of, _every_import)
        if found is None and sdg.observed is not None:
            by_path = {path: name for name, path in module_of.items()}
            roots += [by_path[f] for f in sorted(sdg.observed.files_run()) if f in by_path]
            roots += _modules_named_in_constants(sdg, module_of)
            found = _module_closure(sdg, roots, module_of, _static_imports)
    files = None if found is None else {module_of[m] for m in found if m in module_of}
    sdg.__dict__["_loadable_files"] = files
    return files


def _every_import(source: SourceFile) -> list[ast.Import | ast.ImportFrom] | None:
    """Every ``import`` of a module, wherever it is; None when the module may load modules by name."""
    found: list[ast.Import | ast.ImportFrom] = []
    for node in ast.walk(source.tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        elif isinstance(node, ast.Call) and _called_name(node.func) in DYNAMIC_LOADERS:
            return None
    return found


def _static_imports(source: SourceFile) -> list[ast.Import | ast.ImportFrom]:
    """Every ``import`` statement of a module, wherever it is (what it loads by name aside)."""
    return [node for node in ast.walk(source.tree) if isinstance(node, (ast.Import, ast.ImportFrom))]


def _called_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _import_closure(sdg: SDG, entry: str, module_of: dict[str, str], conditional: bool) -> set[str]:
    found = _module_closure(sdg, [entry], module_of, lambda source: _import_time_imports(source.tree, conditional))
    return found if found is not None else set(module_of)  # (import-time imports are never None)


def _module_closure(sdg: SDG, roots: list[str], module_of: dict[str, str],
                    imports_of: Callable[[SourceFile], list[ast.Import | ast.ImportFrom] | None]) -> set[str] | None:
    """The modules ``roots`` lead to through the imports ``imports_of`` gives for each program module; None
    as soon as one gives None (it may load any module)."""
    found: set[str] = set()
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in found:
            continue
        found.add(name)
        source = sdg.program.by_module.get(name)
        if source is None:
            continue
        imports = imports_of(source)
        if imports is None:
            return None
        for stmt in imports:
            todo += [m for m in _imported_modules(source, stmt, module_of) if m not in found]
    return found


def _import_time_imports(tree: ast.Module, conditional: bool) -> list[ast.Import | ast.ImportFrom]:
    """Import statements a module body runs: top-level ones (and those of a top-level ``try``), or with
    ``conditional`` every one outside function bodies."""
    if not conditional:
        statements = []
        for stmt in tree.body:
            statements += [stmt, *(stmt.body if isinstance(stmt, (ast.Try, ast.TryStar)) else [])]
        return [s for s in statements if isinstance(s, (ast.Import, ast.ImportFrom))]
    found, todo = [], list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            todo.extend(ast.iter_child_nodes(node))
    return found


def _by_name(sdg: SDG, proc: Procedure, site) -> list[ProcKey]:
    """Fallback for a call site inference could not resolve (class-hierarchy analysis by name): an
    unresolved ``x.m(...)`` may call any method ``m`` of the program, ``f(...)`` any function ``f``,
    and ``C(...)`` the ``__init__`` of any class ``C``. A callee with no name (``table[kind](x)``,
    ``get(kind)(x)``) may be any function whose value escapes (see :func:`_escaping_units`) and
    accepts the call's arguments, unless there are more than ``MAX_ESCAPING_CALLEES`` of them."""
    if not hasattr(sdg, "_names"):
        names: dict[str, list[ProcKey]] = defaultdict(list)
        for key, other in sdg.procs.items():
            if other.unit.kind in ("function", "class"):
                names[other.unit.qualname.rsplit(".", 1)[-1].split("@")[0]].append(key)
        sdg._names = names
    call = _call_node(proc, site)
    func = call.func if call is not None else None
    if isinstance(func, ast.Name):
        name = func.id
    elif isinstance(func, ast.Attribute):
        name = func.attr
    elif call is not None:
        escaping = sdg.cached("_escaping_units", _escaping_units)
        found = [key for key in escaping if _accepts(sdg.procs[key].unit.node, call)]
        # ``getattr(obj, name)(*args)`` accepts anything: a thousand callees would blow up the SDG's
        # interfaces (Whoosh: 1,211 each at 5 sites), and such a site stays unresolved instead
        return found if len(found) <= MAX_ESCAPING_CALLEES else []
    else:
        name = site.text.split("(", 1)[0].strip().rsplit(".", 1)[-1]
    found = []
    for key in sdg._names.get(name, []):
        if sdg.procs[key].unit.kind == "class":
            init = (key[0], f"{key[1]}.__init__")
            if init in sdg.procs:
                found.append(init)
        else:
            found.append(key)
    return found


MAX_ESCAPING_CALLEES = 32  # an unnamed callee with more candidate functions than this stays unresolved


def _escaping_units(sdg: SDG) -> list[ProcKey]:
    """Functions (and classes' ``__init__``) whose values the program passes around: every lambda, and
    each function or class whose name is read other than to call it (``register("bang", render_bang)``,
    ``handler = self.on_text``). Function-pointer analysis by address-taken names."""
    taken: set[str] = set()
    for source in sdg.program.files:
        called = {id(n.func) for n in ast.walk(source.tree) if isinstance(n, ast.Call)}
        for node in ast.walk(source.tree):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and id(node) not in called:
                taken.add(node.id)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load) and id(node) not in called:
                taken.add(node.attr)
    found = []
    for key, proc in sdg.procs.items():
        kind = proc.unit.kind
        name = key[1].rsplit(".", 1)[-1].split("@")[0]
        if kind == "lambda" or (kind == "function" and name in taken):
            found.append(key)
        elif kind == "class" and name in taken and (key[0], f"{key[1]}.__init__") in sdg.procs:
            found.append((key[0], f"{key[1]}.__init__"))
    return found


def _accepts(node: ast.AST, call: ast.Call) -> bool:
    """Whether a function (or bound method: one parameter fewer) could accept the call's arguments."""
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return True
    args = node.args
    positional = len(args.posonlyargs) + len(args.args)
    required = positional - len(args.defaults)
    given = len(call.args)
    names = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]}
    if any(k.arg not in names for k in call.keywords) and args.kwarg is None:
        return False
    for bound in (0, 1):
        total = given + bound + len(call.keywords)
        if given + bound <= positional or args.vararg is not None:
            if total >= required:
                return True
    return False


def _decorated_targets(sdg: SDG, proc: Procedure, site) -> list[ProcKey]:
    """Decorated program functions a call's name denotes: a decorator's wrapper (``lru_cache``,
    ``functools.wraps`` wrappers...) resolves to code outside the program, but it calls the function it
    wraps, so that function is a possible callee too."""
    call = _call_node(proc, site)
    if call is None:
        return []
    file = proc.key[0]
    target = None
    if isinstance(call.func, ast.Name):
        target = _module_binding(sdg, file, call.func.id)
    elif isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name):
        module = _module_binding(sdg, file, call.func.value.id, modules=True)
        if module is not None:
            target = _module_binding(sdg, module, call.func.attr)
    if target is None:
        return []
    unit = sdg.procs[target].unit
    if not getattr(unit.node, "decorator_list", None):
        return []
    if unit.kind == "class":  # calling a class (a @dataclass...) runs its constructor methods, never its body
        methods = [(target[0], f"{target[1]}.{name}") for name in ("__new__", "__init__", "__post_init__")]
        return [m for m in methods if m in sdg.procs]
    return [target]


def _statement_span(proc: Procedure, site) -> tuple[int, int, int, int]:
    """(line, col, end line, end col) of the innermost statement holding a site (the site's own span if
    none does), through a per-file list of statement spans."""
    spans = proc.source.__dict__.get("_statement_spans")
    if spans is None:
        spans = proc.source.__dict__["_statement_spans"] = sorted(
            (n.lineno, n.col_offset, n.end_lineno, n.end_col_offset) for n in ast.walk(proc.source.tree)
            if isinstance(n, ast.stmt))
    where = (site.line, site.col, site.end_line, site.end_col)
    holding = [s for s in spans if s[:2] <= where[:2] and where[2:] <= s[2:]]
    return min(holding, key=lambda s: (s[2] - s[0], s[3] - s[1]), default=where)


def _call_node(proc: Procedure, site) -> ast.Call | None:
    """The ``ast.Call`` of a call site (by its exact position), through a per-file index."""
    index = proc.source.__dict__.get("_calls_by_position")
    if index is None:
        index = proc.source.__dict__["_calls_by_position"] = {
            (n.lineno, n.col_offset, n.end_lineno, n.end_col_offset): n for n in ast.walk(proc.source.tree)
            if isinstance(n, ast.Call)}
    return index.get((site.line, site.col, site.end_line, site.end_col))


def _module_binding(sdg: SDG, file: str, name: str, modules: bool = False):
    """What a module-level name of ``file`` is bound to: a top-level def/class of the program (its
    procedure key), or with ``modules`` a program module imported under that name (its file)."""
    source = sdg.program.by_path.get(file)
    if source is None:
        return None
    for stmt in source.tree.body:
        if not modules and isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and stmt.name == name:
            return (file, name) if (file, name) in sdg.procs else None
        if isinstance(stmt, ast.Import) and modules:
            for alias in stmt.names:
                if (alias.asname or alias.name) == name and alias.name in sdg.program.by_module:
                    return sdg.program.by_module[alias.name].path
        if isinstance(stmt, ast.ImportFrom):
            base = _imported_modules(source, ast.ImportFrom(module=stmt.module, names=[], level=stmt.level),
                                     {f.modname: f.path for f in sdg.program.files})
            for alias in stmt.names:
                if (alias.asname or alias.name) != name or not base:
                    continue
                module_name = base[-1]
                full = f"{module_name}.{alias.name}"
                if modules:
                    return sdg.program.by_module[full].path if full in sdg.program.by_module else None
                module_file = sdg.program.by_module[module_name].path
                return _module_binding(sdg, module_file, alias.name) if module_file != file else None
    return None


def _inside(proc: Procedure, line: int, col: int) -> bool:
    """A position in the procedure's own code (not in a nested unit)."""
    span = proc.unit.span if proc.unit.kind != "module" else None
    if span is not None and not _contains(span, line, col):
        return False
    return not any(_contains(child.span, line, col) for child in proc.unit.children if child.span)


def _contains(span, line: int, col: int) -> bool:
    return (span[0], span[1]) <= (line, col) and (line, col) <= (span[2], span[3])


def _vertex_contains(proc: Procedure, vertex, line: int, col: int) -> bool:
    node = vertex.node
    if vertex.kind == "def":  # decorators and defaults run at the def statement
        parts = [*node.decorator_list]
        parts += [*node.bases, *(k.value for k in node.keywords)] if isinstance(node, ast.ClassDef) else [
            *node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)]
        return any(_contains((p.lineno, p.col_offset, p.end_lineno, p.end_col_offset), line, col) for p in parts)
    return vertex.span is not None and _contains(vertex.span, line, col)


IMPORT_BY_NAME = frozenset({"importlib.import_module", "importlib._bootstrap._gcd_import"})


def _modules_imported_by_name(sdg: SDG, proc: Procedure, site, module_of: dict[str, str]) -> list[str]:
    """The program modules an ``importlib.import_module(name)`` call may import: the one its constant
    argument names, or, for a computed name, every program module whose dotted name the program spells
    out in a string constant, alone or followed by an attribute (``"mistune.plugins.formatting.mark"``:
    plugin tables that name ``module.function``), and every module below a package whose prefix it
    writes out to build a name (``f"markdown.extensions.{name}"``, ``"app.plugins." + name``,
    ``"app.plugins.%s"``). A module named only in other pieces is not found."""
    call = _call_node(proc, site)
    if call is None or not call.args:
        return []
    first = call.args[0]
    if isinstance(first, ast.Constant) and isinstance(first.value, str):
        return [first.value] if first.value in module_of else []
    return list(sdg.cached("_named_modules", lambda sdg: _modules_named_in_constants(sdg, module_of)))


def _modules_named_in_constants(sdg: SDG, module_of: dict[str, str]) -> list[str]:
    """Program modules whose dotted name a string constant of the program spells out, alone or followed
    by one attribute (``"pkg.plugins.loud.shout"``), and the modules below a package whose dotted prefix
    a constant starts a name with (``"pkg.plugins."``, ``"pkg.plugins.%s"``, the head of an f-string)."""
    found: set[str] = set()
    prefixes: set[str] = set()
    for source in sdg.program.files:
        for node in ast.walk(source.tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and "." in node.value:
                named = [c for c in (node.value, node.value.rpartition(".")[0]) if c in module_of]
                found.update(named)
                head = _PACKAGE_PREFIX.match(node.value)
                rest = node.value[head.end():] if head else ""
                if head and head.group(0)[:-1] in module_of and not (rest[:1].isidentifier()):
                    prefixes.add(head.group(0))  # the start of a name built at run time
    found.update(m for m in module_of for prefix in prefixes if m.startswith(prefix))
    return sorted(found)


_PACKAGE_PREFIX = re.compile(r"(?:[A-Za-z_]\w*\.)+")


def _imported_modules(source: SourceFile, node: ast.AST, module_of: dict[str, str]) -> list[str]:
    names: list[str] = []
    if isinstance(node, ast.Import):
        for alias in node.names:
            parts = alias.name.split(".")
            names += [".".join(parts[: n + 1]) for n in range(len(parts))]
    else:
        package = source.modname if source.is_package else source.modname.rpartition(".")[0]
        if node.level:
            base_parts = package.split(".") if package else []
            base_parts = base_parts[: len(base_parts) - (node.level - 1)] if node.level > 1 else base_parts
            base = ".".join(base_parts + ([node.module] if node.module else []))
        else:
            base = node.module or ""
        parts = base.split(".") if base else []
        names += [".".join(parts[: n + 1]) for n in range(len(parts))]
        names += [f"{base}.{alias.name}" if base else alias.name for alias in node.names]
    return [n for n in dict.fromkeys(names) if n in module_of]


# ---------------------------------------------------------------------- effects (MOD / REF)
def _local_effects(sdg: SDG) -> None:
    through_params: dict[ProcKey, set] = {}
    for key, proc in sdg.procs.items():
        explicit = {id(c) for c in _explicit_call_nodes(sdg, proc)}
        proc.access = accesses(proc.cfg, sdg.scopes[key[0]], internal=lambda call, ids=explicit: id(call) in ids,
                               returned_parts=lambda call, k=key: _returned_parts(sdg, k[0], call),
                               stored_parts=lambda call, k=key: _stored_parts(sdg, k[0], call))
        params = {qualify(key[0], loc) for loc in proc.access[proc.cfg.entry.id].defs}
        proc.param_aliases = _parameter_aliases(proc)
        proc.mutates_yielded = _mutates_yielded(proc)
        through_params[key] = set()
        for vid, access in proc.access.items():
            for loc in access.defs:
                q = qualify(key[0], loc)
                if access.defs[loc] or vid == proc.cfg.entry.id:
                    continue
                if q in params:
                    proc.mutates_args = True  # a weak write through a parameter: the caller's object
                    proc.mutated_params.add(q[-1])
                    through_params[key].add((vid, q))
                elif loc in proc.param_aliases and loc[0] == "var":  # (a loop advancing its own iterator: no)
                    proc.mutates_args = True
                    proc.mutated_params |= proc.param_aliases[loc]
                    proc.alias_writes.add(vid)
    _star_imports_as_bindings(sdg)
    _mutation_through_calls(sdg)
    _import_time_constants(sdg)
    constant = sdg.constant_defs
    for key, proc in sdg.procs.items():
        for vid, access in proc.access.items():
            for loc in access.defs:
                q = qualify(key[0], loc)
                if (vid, q) not in through_params[key] and q not in constant and _nonlocal(q, proc):
                    proc.mod.add(q)
            for loc in access.uses:
                q = qualify(key[0], loc)
                if q not in constant and _nonlocal(q, proc):
                    proc.ref.add(q)
        if proc.unit.kind == "class":  # class-body names become attributes of the class
            for access in proc.access.values():
                for loc in access.defs:
                    if loc[0] == "var" and loc[1] == proc.unit.qualname and ("attr", loc[2]) not in constant:
                        proc.mod.add(("attr", loc[2]))


def _returned_parts(sdg: SDG, file: str, call: ast.Call) -> list:
    """What a call's result may be part of, for the caller's alias analysis (dataflow._container_aliases):
    fields (``("attr", F)``) and the caller's argument and receiver expressions whose objects the program
    callees hand back a part of (``def last_token(self): return self.tokens[-1]`` -> the field ``tokens``;
    ``def first(xs): return xs[0]`` -> the argument)."""
    found: list = []
    for proc in _program_functions_called(sdg, file, call):
        given = _arguments_by_parameter(proc, call)
        for part in _returned_roots(proc):
            if part[0] == "attr":
                found.append(part)
            elif part[1] in given:
                found.append(given[part[1]])
    return found


def _program_functions_called(sdg: SDG, file: str, call: ast.Call) -> list[Procedure]:
    """The program functions (not lambdas, class bodies...) the call graph says a call may run."""
    site = sdg.callgraph.site_for(file, call)
    if site is None:
        return []
    found = [sdg.procs.get(key) for key in callee_keys(sdg, site.callees)]
    return [proc for proc in found if proc is not None and proc.unit.kind == "function"]


def _arguments_by_parameter(proc: Procedure, call: ast.Call) -> dict[str, ast.expr]:
    """Parameter name -> the argument expression a call passes to it (the receiver of ``obj.m(...)`` for
    ``self``; ``self`` of an ``__init__`` run by ``Class(...)`` gets none)."""
    arguments = proc.unit.node.args
    params = [a.arg for a in [*arguments.posonlyargs, *arguments.args]]
    method = isinstance(call.func, ast.Attribute) and params[:1] in (["self"], ["cls"])
    constructor = params[:1] == ["self"] and proc.unit.node.name == "__init__"
    given = dict(zip(params[1:] if method or constructor else params, call.args))
    given.update({k.arg: k.value for k in call.keywords if k.arg})
    if method:
        given[params[0]] = call.func.value
    return given


def _mutates_yielded(proc: Procedure) -> bool:
    """Whether a generator function changes, in a statement that yields nothing, what it hands to its
    consumer (a weak definition of ``RET`` through a yielded variable, see dataflow._container_aliases)."""
    if proc.unit.kind != "function":
        return False
    for vid, access in proc.access.items():
        vertex = proc.cfg.vertices[vid]
        if vertex.kind == "stmt" and access.defs.get(RET) is False and not isinstance(vertex.node, ast.Return) \
                and not any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in ast.walk(vertex.node)):
            return True
    return False


def _stored_parts(sdg: SDG, file: str, call: ast.Call) -> list[tuple[ast.expr, tuple]]:
    """(argument expression, ``("attr", F)``) for each argument of a call that a program callee stores whole
    into a field ``F`` (``self.value = value`` in the ``__init__`` that ``SequenceNode(tag, value)``
    runs), for the caller's alias analysis (dataflow._container_aliases)."""
    found: list[tuple[ast.expr, tuple]] = []
    for proc in _program_functions_called(sdg, file, call):
        fields = _stored_params(proc)
        given = _arguments_by_parameter(proc, call) if fields else {}
        for param, names in fields.items():
            if param in given:
                found.extend((given[param], ("attr", name)) for name in sorted(names))
    return found


def _stored_params(proc: Procedure) -> dict[str, set[str]]:
    """Parameter -> the fields a function stores it into whole (``self.value = value``)."""
    cached = proc.stored_params
    if cached is not None:
        return cached
    params = {a.arg for a in ast.walk(proc.unit.node.args) if isinstance(a, ast.arg)}
    stored: dict[str, set[str]] = {}
    for vertex in proc.cfg.vertices.values():
        node = vertex.node
        if vertex.kind == "stmt" and isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) \
                and node.value.id in params:
            for target in node.targets:
                if isinstance(target, ast.Attribute):
                    stored.setdefault(node.value.id, set()).add(target.attr)
    proc.stored_params = stored
    return stored


def _returned_roots(proc: Procedure) -> list[tuple]:
    """Where a function's returned values may come from as parts: ``("attr", F)`` for ``return
    self.F[-1]`` and ``("param", NAME)`` for ``return xs[0]`` (a parameter's object or a part of it)."""
    cached = proc.returned_roots
    if cached is not None:
        return cached
    params = {a.arg for a in ast.walk(proc.unit.node.args) if isinstance(a, ast.arg)}
    roots: list[tuple] = []
    for vertex in proc.cfg.vertices.values():
        node = vertex.node
        if vertex.kind != "stmt" or not isinstance(node, ast.Return) or node.value is None:
            continue
        values = node.value.elts if isinstance(node.value, ast.Tuple) else [node.value]
        for value in values:
            while _shares(value) and not isinstance(value, ast.Name):
                if isinstance(value, ast.Attribute):
                    roots.append(("attr", value.attr))
                    break
                if isinstance(value, (ast.Subscript, ast.Starred)):
                    value = value.value
                elif isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in PART_TAKERS:
                    value = value.func.value
                else:
                    break
            if isinstance(value, ast.Name) and value.id in params:
                roots.append(("param", value.id))
    proc.returned_roots = roots
    return roots


def _parameter_aliases(proc: Procedure) -> dict[tuple, set[str]]:
    """Local variables that may hold part of a parameter's object: bound by a loop over it or over what
    its methods return (``for t in tlist.get_sublists()``), or to one of its fields or items
    (``first = args[0]``, ``x = node.left``, ``node = stack.pop()``), and containers such a variable was
    stored into (``queue.append((child, n))``, ``seen[k] = child``), to a fixpoint. Values computed from it
    (``n = len(items)``, ``tree = self.parse(text)``) are not followed: what any other call returns is
    taken to be its own object."""
    entry = proc.cfg.entry.id
    params = {loc: {loc[-1]} for loc in proc.access[entry].defs if loc[0] == "var"}
    aliases: dict[tuple, set[str]] = {}
    sharing = [vid for vid, v in proc.cfg.vertices.items() if vid != entry and _may_share_object(v)]
    storing = {vid for vid, v in proc.cfg.vertices.items() if vid != entry and _stores_part(v)}
    carried = {vid: _carried_names(proc.cfg.vertices[vid]) for vid in [*sharing, *storing]}
    holders: dict[tuple, set[str]] = {}  # new containers a parameter's parts were stored into
    changed = True
    while changed:
        changed = False
        for vid in [*sharing, *storing]:
            access = proc.access[vid]
            names = carried[vid]
            sources: set[str] = set()
            for loc in access.uses:
                if names is None or loc[0] == "var" and loc[-1] in names:
                    sources |= params.get(loc, set()) | aliases.get(loc, set()) | holders.get(loc, set())
            if not sources:
                continue
            # what is taken out of a holder is part of the parameter; the holder itself is not (appending
            # to it changes no parameter)
            found = holders if vid in storing else aliases
            for loc, strong in access.defs.items():
                if (strong or vid in storing) and loc[0] in ("var", "state") and loc not in params \
                        and not sources <= found.get(loc, set()):
                    found.setdefault(loc, set()).update(sources)
                    changed = True
    return aliases


def _may_share_object(vertex) -> bool:
    """Whether what a vertex binds may be part of an object it reads (see _parameter_aliases)."""
    node = vertex.node
    if vertex.kind in ("for-iter", "for-next", "with-enter", "case"):
        return True
    if vertex.kind != "stmt" or not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None:
        return False
    return _shares(node.value)


def _shares(expr: ast.AST) -> bool:
    if isinstance(expr, (ast.Name, ast.Attribute, ast.Subscript, ast.Starred)):
        return True
    if isinstance(expr, ast.IfExp):
        return _shares(expr.body) or _shares(expr.orelse)
    if isinstance(expr, ast.BoolOp):
        return any(_shares(v) for v in expr.values)
    if isinstance(expr, (ast.Tuple, ast.List)):
        return any(_shares(e) for e in expr.elts)
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name):
        return expr.func.id in ("next", "iter", "getattr", "min", "max")
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute):
        return expr.func.attr in PART_TAKERS and _shares(expr.func.value)
    return False


PART_TAKERS = ELEMENT_GETTERS | {"copy", "values", "items"}
"""Container methods whose result is (or holds) items of the container: ``node = stack.pop(0)``."""
PART_STORERS = frozenset({"append", "appendleft", "extend", "extendleft", "insert", "add", "update", "setdefault"})
"""Container methods that store their arguments in the container: ``queue.append((child, lst))``."""


def _carried_names(vertex) -> set[str] | None:
    """The variables whose objects a sharing or storing statement hands on: the receiver of
    ``stack.pop(k)`` / ``cache.get(k)`` and what ``queue.append((child, n))`` / ``seen[k] = child`` store,
    not the keys and positions they are given; None where every variable it reads may be handed on."""
    node = vertex.node
    if vertex.kind != "stmt":
        return None
    if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Call):
        func = node.value.func
        if isinstance(func, ast.Attribute) and func.attr in PART_TAKERS:
            return {n.id for n in ast.walk(func.value) if isinstance(n, ast.Name)}
    stored = _stored_values(vertex)
    if stored:
        return {n.id for value in stored for n in ast.walk(value) if isinstance(n, ast.Name)}
    return None


def _stores_part(vertex) -> bool:
    """Whether a statement stores what it reads into a container (``queue.append((child, lst))``,
    ``seen[key] = node``): the container then holds part of any parameter's object it was given."""
    return bool(_stored_values(vertex))


def _stored_values(vertex) -> list[ast.AST]:
    """The expressions a statement stores into a container that may be (part of) an object it reads:
    ``child`` in ``queue.append((child, n))`` or ``seen[k] = child`` (not ``counts[k] = n + 1``, a new
    value)."""
    node = vertex.node
    if vertex.kind != "stmt":
        return []
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        call = node.value
        if isinstance(call.func, ast.Attribute) and call.func.attr in PART_STORERS:
            return [a for a in [*call.args, *(k.value for k in call.keywords)] if _shares(a)]
        return []
    if isinstance(node, ast.Assign) and any(isinstance(t, ast.Subscript) for t in node.targets):
        return [node.value] if _shares(node.value) else []
    return []


def _mutation_through_calls(sdg: SDG) -> None:
    """A procedure that hands one of its parameters (or a local alias of one) to a callee that mutates
    it mutates that parameter too (``def f(x): g(x)`` with ``g`` appending to its argument): to a
    fixpoint over the call graph."""
    owners = {}
    for key, proc in sdg.procs.items():
        owned = {qualify(key[0], loc): {loc[-1]} for loc in proc.access[proc.cfg.entry.id].defs if loc[0] == "var"}
        owned.update({qualify(key[0], loc): names for loc, names in proc.param_aliases.items()})
        owners[key] = owned
    changed = True
    while changed:
        changed = False
        for key, proc in sdg.procs.items():
            own = owners[key]
            for call in proc.calls:
                for root in _mutated_roots(sdg, proc, call):
                    names = own.get(root, set())
                    if names and root[-1] not in names:  # an alias, not the parameter itself
                        proc.alias_writes.add(call.vertex)
                    if not names <= proc.mutated_params:
                        proc.mutated_params |= names
                        proc.mutates_args = changed = True


# Unmodelled constructs in functions that cannot rebind a module global or a class attribute: an
# instance's ``__dict__`` (its writes are attribute writes, which plain reads see through ANY as
# before; method lookups ignore them as they ignore computed ``setattr``) and ``__import__()`` (it
# runs module bodies, whose definitions are the constants' own).
_HARMLESS_HAVOC = {"__dict__", "__import__()"}


def _import_time_constants(sdg: SDG) -> None:
    """Module globals and attribute fields that only module and class bodies write ("import-time
    constants": functions, classes and settings of a package; most of a big program's globals).

    Threading them through every call as formal-in/out pairs is what makes the SDG of a large
    package explode (an ``import`` of a package's root module writes thousands of them), so they
    are kept out of MOD/REF and a use of one gets a ``global`` edge straight from each statement
    that may write it, flow-insensitively (the slicer follows these edges in both passes). A write
    anywhere else (a function's ``global`` assignment, a store through a parameter, an attribute
    store, a mutating call on it) makes the location ordinary; an unmodelled construct in a function
    (``exec``, ``globals()``...) turns the shortcut off for the whole program.

    Sets ``sdg.constant_defs``: SDG location -> defining vertices (module/class-body statements that
    write it, plus the module-level unmodelled constructs that may); and ``sdg.constant_kinds``
    (``("var", file)`` for a module's globals, ``"attr"`` for fields) decides which unseen locations
    are constants too."""
    body = ("module", "class")
    written_elsewhere: set = set()
    mutated: set = set()
    defs: dict[tuple, list[Node]] = defaultdict(list)
    wildcard_by_file: dict[str, list[Node]] = defaultdict(list)  # module/class-level ANY writers
    loadable = loadable_files(sdg)
    for key, proc in sdg.procs.items():
        if loadable is not None and key[0] not in loadable:
            continue  # a module the program never imports: none of its code runs, nothing of it writes
        at_import = proc.unit.kind in body
        for vid, access in proc.access.items():
            if not at_import:
                reasons = {what for _, _, what in access.unsupported}
                if ANY in access.defs and reasons - _HARMLESS_HAVOC:
                    sdg.constant_defs = _ConstantDefs({}, None, {})
                    return
                node = proc.cfg.vertices[vid].node
                for loc, strong in access.defs.items():
                    if loc != ANY and not _memo_store(sdg, proc, qualify(key[0], loc)):
                        rebinds = strong or loc[0] == "attr" and _stores_field(node, loc[1])
                        (written_elsewhere if rebinds else mutated).add(qualify(key[0], loc))
                continue
            for loc in access.defs:
                if loc == ANY:
                    exported = _star_import_exports(sdg, proc, vid)
                    if exported is None:
                        wildcard_by_file[key[0]].append(sdg.vertex(key, vid))
                        continue
                    for name in exported:  # ``from m import *`` binds m's public names here, nothing else
                        defs[("var", key[0], "<module>", name)].append(sdg.vertex(key, vid))
                        defs[("attr", name)].append(sdg.vertex(key, vid))
                elif proc.unit.kind == "class" and loc[0] == "var" and loc[1] == proc.unit.qualname:
                    defs[("attr", loc[2])].append(sdg.vertex(key, vid))
                else:
                    defs[qualify(key[0], loc)].append(sdg.vertex(key, vid))
        if not at_import:
            for call in proc.calls:
                mutated |= {loc for loc in _mutated_roots(sdg, proc, call) if not _memo_store(sdg, proc, loc)}
    # A weak write in a function (a call that may mutate its arguments or receiver, a store into an
    # element or attribute) writes the object a location holds, not the binding: it counts unless the
    # location is bound at import only to module, class or function objects (``sys.exc_info()``,
    # ``qcore.NullQuery()``), whose changes are attribute writes, which make those attributes ordinary.
    written_elsewhere |= {loc for loc in mutated if not _binds_code_object(sdg, defs.get(loc, ()))}
    everywhere = [v for vs in wildcard_by_file.values() for v in vs]
    constant = {loc: vertices for loc, vertices in defs.items() if _constant_kind(loc) and loc not in written_elsewhere}
    sdg.constant_defs = _ConstantDefs(constant, written_elsewhere, {"attr": everywhere, **wildcard_by_file})


def _memo_cache_of(sdg: SDG, proc: Procedure, loc: tuple) -> MemoCache | None:
    """The memo cache at ``loc`` when ``proc`` is one of the functions that look it up and fill it."""
    cache = sdg.memo.get(loc)
    node = proc.unit.node
    if cache is None or proc.unit.kind == "module" or not hasattr(node, "lineno"):
        return None
    return cache if (node.lineno, node.col_offset) in cache.functions else None


def _memo_store(sdg: SDG, proc: Procedure, loc: tuple) -> bool:
    """A write of ``loc`` by ``proc`` that only fills a transparent memo cache (see :mod:`memo`)."""
    return _memo_cache_of(sdg, proc, loc) is not None


def _memo_edges(sdg: SDG, proc: Procedure, node) -> None:
    """In a memo function, each lookup depends on the function's stores: a slice that keeps the lookup
    keeps the cache filled (the evaluator memoises as the program does) though no lookup depends on
    the stores of other calls."""
    for cache in {id(c): c for c in sdg.memo.values() if _memo_cache_of(sdg, proc, c.location)}.values():
        def holding(positions) -> list[int]:
            found = []
            for line, col in positions:
                inside = [v for v in proc.cfg.vertices.values()
                          if v.node is not None and v.kind not in ("entry", "exit") and _vertex_contains(proc, v, line, col)]
                if inside:  # the innermost vertex that holds the position
                    found.append(min(inside, key=lambda v: (v.span[2] - v.span[0], v.span[3] - v.span[1])).id)
            return found

        for store in holding(cache.stores):
            for lookup in holding(cache.lookups):
                if lookup != store:
                    sdg.add_edge(node(store), node(lookup), "data", ("memo", cache.name))


def _star_imports_as_bindings(sdg: SDG) -> None:
    """A module-level ``from m import *`` of a program module whose exports are known binds those names
    (weakly: one m binds only on some path may not be bound) and reads nothing of the importing module;
    it is not "anything", which made it depend on every statement before it (PyYAML's
    ``yaml/__init__.py`` star-imports eight of its modules in a row, so ``yaml.SafeLoader`` tied every slice
    that names it to ``Token.__repr__``'s ``getattr(self, key)``, which reads every import-time field). m's
    names reach their readers as import-time constants (``global`` edges), as before."""
    rewrites = []
    for key, proc in sdg.procs.items():
        if proc.unit.kind != "module":
            continue
        for vid, access in proc.access.items():
            if ANY in access.defs and (exported := _star_import_exports(sdg, proc, vid)) is not None:
                rewrites.append((access, exported, proc.cfg.vertices[vid].node))
    for access, exported, node in rewrites:
        del access.defs[ANY]
        access.uses.discard(ANY)
        for name in exported:
            access.define(("var", "<module>", name), strong=False)
            access.define(("attr", name), strong=False)
        access.unsupported = [u for u in access.unsupported if (u[0], u[1]) != (node.lineno, node.col_offset)]


def _star_import_exports(sdg: SDG, proc: Procedure, vid: int) -> set[str] | None:
    """The names a module-level ``from m import *`` binds, when m is a program module whose public
    names are known (a literal ``__all__``, else its module-level names without a leading underscore,
    through its own star imports); None for any other statement or an unknown set."""
    node = proc.cfg.vertices[vid].node
    if proc.unit.kind != "module" or not (isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names)):
        return None
    source = _star_source(sdg, proc.source, node)
    return _module_exports(sdg, source, set()) if source is not None else None


def _star_source(sdg: SDG, importer: SourceFile, node: ast.ImportFrom) -> str | None:
    module_of = sdg.__dict__.get("_module_of") or sdg.__dict__.setdefault(
        "_module_of", {f.modname: f.path for f in sdg.program.files})
    found = _imported_modules(importer, ast.ImportFrom(module=node.module, names=[], level=node.level), module_of)
    return module_of[found[-1]] if found else None


def _module_exports(sdg: SDG, file: str, seen: set[str]) -> set[str] | None:
    cache = sdg.__dict__.setdefault("_module_exports", {})
    if file in cache:
        return cache[file]
    if file in seen:
        return None
    seen.add(file)
    source = sdg.program.by_path.get(file)
    module = sdg.procs.get((file, "<module>"))
    if source is None or module is None:
        return None
    declared = _literal_all(source.tree)
    names: set[str] | None = set()
    for key, proc in sdg.procs.items():
        if key[0] != file:
            continue
        for vid, access in proc.access.items():
            for loc in access.defs:
                if loc[0] == "var" and loc[1] == "<module>":
                    names.add(loc[2])
                elif loc == ANY:
                    node = proc.cfg.vertices[vid].node
                    star = (proc is module and isinstance(node, ast.ImportFrom)
                            and any(a.name == "*" for a in node.names) and _star_source(sdg, source, node))
                    more = _module_exports(sdg, star, seen) if star else None
                    if more is None:
                        cache[file] = None
                        return None
                    names |= more
    found = declared if declared is not None else {n for n in names if not n.startswith("_")}
    cache[file] = found
    return found


def _literal_all(tree: ast.Module) -> set[str] | None:
    """The names of a module's ``__all__`` if it is only ever a literal list/tuple of strings (also
    extended by ``+=``), else None."""
    names: set[str] | None = None
    for stmt in tree.body:
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] if isinstance(stmt, (ast.AugAssign, ast.AnnAssign)) else []
        if not any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            continue
        value = stmt.value
        if not (isinstance(value, (ast.List, ast.Tuple)) and all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in value.elts)):
            return None
        listed = {e.value for e in value.elts}
        names = (names or set()) | listed if isinstance(stmt, ast.AugAssign) else listed
    return names


def _stores_field(node: ast.AST | None, name: str) -> bool:
    """Whether ``node`` sets or deletes field ``name`` of some object (``self.tokens = []``,
    ``setattr(obj, "tokens", v)``, ``obj.__dict__["tokens"] = v``): a write of the binding, which a field
    write's weak definition alone does not tell from a change of the object the field holds
    (``self.tokens.append(t)``). sqlparse's package binds its ``tokens`` module at import and its
    ``StatementSplitter`` sets ``self.tokens`` at run time: taken for a change of the module object, the
    field passed for an import-time constant and the slices dropped the store."""
    if node is None:
        return False
    for inner in ast.walk(node):
        if isinstance(inner, ast.Attribute) and inner.attr == name and isinstance(inner.ctx, (ast.Store, ast.Del)):
            return True
        if isinstance(inner, ast.Subscript) and isinstance(inner.ctx, (ast.Store, ast.Del)) and _names_field(inner.slice, name):
            return True  # ``obj.__dict__["tokens"] = v`` (any container stored under that key: conservative)
        if isinstance(inner, ast.Call) and any(_names_field(a, name) for a in inner.args[1:2]):
            callee = inner.func.attr if isinstance(inner.func, ast.Attribute) else getattr(inner.func, "id", None)
            if callee in ("setattr", "delattr"):
                return True
        if (isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute) and inner.args
                and inner.func.attr in ("setdefault", "update", "pop", "__setitem__", "__delitem__")
                and _names_field(inner.args[0], name)):
            return True  # ``obj.__dict__.setdefault("tokens", [])``
    return False


def _names_field(node: ast.AST, name: str) -> bool:
    """``node`` is the string constant ``name``."""
    return isinstance(node, ast.Constant) and node.value == name


def _binds_code_object(sdg: SDG, writers: list[Node]) -> bool:
    """All these writers are ``import``, ``def`` or ``class`` statements."""
    kinds = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    return bool(writers) and all(isinstance(sdg.procs[w[1]].cfg.vertices[w[2]].node, kinds) for w in writers)


def _constant_kind(loc: tuple) -> str | None:
    """``"attr"`` / the file for locations that may be import-time constants, else None."""
    if loc[0] == "attr" and loc != ATTR_ANY:
        return "attr"
    if loc[0] == "var" and loc[2] == "<module>":
        return loc[1]
    return None


class _ConstantDefs(dict):
    """The import-time constants (see :func:`_import_time_constants`): a location no statement
    writes at all is one too (a name only ``from m import *`` binds), defined by the wildcards."""

    def __init__(self, known: dict, written_elsewhere: set | None, wildcards: dict) -> None:
        """``written_elsewhere`` None: the shortcut is off (no location is a constant)."""
        super().__init__(known)
        self.written_elsewhere = written_elsewhere
        self.wildcards = wildcards

    def __contains__(self, loc) -> bool:
        if self.written_elsewhere is None:
            return False
        if dict.__contains__(self, loc):
            return True
        return _constant_kind(loc) is not None and loc not in self.written_elsewhere

    def writers(self, loc: tuple) -> list[Node]:
        """Vertices that may write constant ``loc``."""
        kind = _constant_kind(loc)
        return [*self.get(loc, ()), *self.wildcards.get(kind, ())]


def _explicit_call_nodes(sdg: SDG, proc: Procedure) -> list[ast.Call]:
    """ast.Call nodes of the procedure that the call graph resolved to program code."""
    wanted = {(r.vertex, r.text) for r in proc.calls if r.implicit is None}
    found = []
    if not wanted:
        return found
    for vertex in proc.cfg.vertices.values():
        if vertex.node is None:
            continue
        for node in ast.walk(vertex.node if not isinstance(vertex.node, ast.withitem) else vertex.node.context_expr):
            if isinstance(node, ast.Call) and any(v == vertex.id for v, _ in wanted):
                site = sdg.callgraph.site_for(proc.key[0], node)
                if site is not None and callee_keys(sdg, site.callees):
                    found.append(node)
    return found


def _nonlocal(loc: tuple, proc: Procedure) -> bool:
    """Visible outside the procedure. A module body's globals are (importers and functions read them)."""
    if loc[0] == "var":
        own = loc[1] == proc.key[0] and loc[2] == proc.unit.qualname
        return not own or proc.unit.kind == "module"
    return loc[0] in ("attr", "any", "fs")


def _propagate_effects(sdg: SDG) -> None:
    """MOD/REF through the call graph until nothing changes (callee effects that are the caller's own
    locals stop at the caller).

    A worklist of procedures whose MOD/REF grew, each carrying only what it gained since it was last
    passed on (re-filtering every callee's whole MOD/REF for every call until a round changed nothing
    took Whoosh 33 s: 460 million location tests)."""
    callers: dict[ProcKey, list[tuple[Procedure, CallRecord]]] = defaultdict(list)
    for proc in sdg.procs.values():
        for call in proc.calls:
            for callee in call.callees:
                callers[callee].append((proc, call))
            if any(sdg.procs[callee].mutates_args for callee in call.callees):
                # the callee mutates what it is passed: ``self.insert_rule(self.rules, ...)`` writes the
                # field ``rules`` (fields only: a module global passed on is mutated in place, which the
                # caller's own weak definition at the call already says)
                proc.mod |= {loc for loc in _mutated_roots(sdg, proc, call) if loc[0] == "attr"}
    gained: dict[ProcKey, tuple[set, set]] = {key: (set(proc.mod), set(proc.ref)) for key, proc in sdg.procs.items()}
    work = list(gained)
    while work:
        key = work.pop()
        mod, ref = gained.pop(key)
        for proc, call in callers.get(key, ()):
            new_mod = {loc for loc in mod if loc not in proc.mod and _nonlocal(loc, proc)}
            new_ref = {loc for loc in ref if loc not in proc.ref and _nonlocal(loc, proc)}
            if new_mod or new_ref:
                proc.mod |= new_mod
                proc.ref |= new_ref
                if proc.key in gained:
                    gained[proc.key][0].update(new_mod)
                    gained[proc.key][1].update(new_ref)
                else:
                    gained[proc.key] = (new_mod, new_ref)
                    work.append(proc.key)


HEAP = ("attr", "<heap>")
WIDE = 48  # attribute fields in a procedure's MOD+REF above which its interface may be collapsed
INTERFACE_BUDGET = 150_000  # sum over procedures of fields x (1 + calls to it) kept exact (see below)


def _collapse_wide_interfaces(sdg: SDG) -> None:
    """k-limiting for large programs, only as far as needed: while the interfaces' size (the sum over
    procedures of their attribute fields times one plus the calls to them: the actual-in/out vertices
    and the def-use edges grow with it) exceeds ``INTERFACE_BUDGET``, the costliest procedure with more
    than ``WIDE`` fields gets one formal-in and one formal-out, ``HEAP``, for all of them; inside it, and
    at its callers, ``HEAP`` stands for the fields it replaced (a read of one of them depends on the
    reaching ``HEAP`` writes, a ``HEAP`` read on every field write: see :func:`_heap_sources`).

    Collapsing costs precision: a driver whose interface is collapsed sees every field its callees
    write as one location, so a slice through it keeps all of them. Packages of up to ~10 kLOC stay
    under the budget (Python-Markdown: 13 k, no procedure collapsed); Whoosh (25 kLOC, where
    unresolved calls such as ``m.replace()`` reach every method of that name and their MOD/REF name
    600 fields) sums to 7.5 M, about 1,100 procedures are collapsed, and its SDG fits in 8 GB."""
    sizes = {}
    for key, proc in sdg.procs.items():
        fields = sum(1 for loc in proc.mod | proc.ref if loc[0] == "attr")
        sizes[key] = (fields * (1 + len(sdg.calls_to.get(key, ()))), fields)
    total = sum(cost for cost, _ in sizes.values())
    for key in sorted(sizes, key=lambda k: sizes[k], reverse=True):
        cost, fields = sizes[key]
        if total <= INTERFACE_BUDGET:
            break
        if fields <= WIDE:
            continue
        proc = sdg.procs[key]
        proc.wide = True
        proc.heap_mod = frozenset(loc[1] for loc in proc.mod if loc[0] == "attr")
        proc.heap_ref = frozenset(loc[1] for loc in proc.ref if loc[0] == "attr")
        proc.mod = {loc for loc in proc.mod if loc[0] != "attr"} | {HEAP}
        proc.ref = {loc for loc in proc.ref if loc[0] != "attr"} | {HEAP}
        total -= cost - (1 + len(sdg.calls_to.get(key, ())))


def _heap_sources(reaching_here: dict, loc: tuple, covers: dict[int, frozenset] | None = None) -> set:
    """Extra definitions a use of ``loc`` sees in a procedure with ``HEAP`` locations: a field read sees
    the ``HEAP`` writes that may stand for it (``covers``: vertex -> the fields its ``HEAP`` write
    stands for, ``"*"`` among them when it may write a field it cannot name; a vertex not in it may
    stand for any), a ``HEAP`` read sees every field write."""
    if loc == HEAP:
        return {(d, other) for other, defs in reaching_here.items() if other[0] == "attr" and other != HEAP for d in defs}
    if loc[0] == "attr":
        covers = covers or {}
        return {(d, HEAP) for d in reaching_here.get(HEAP, ()) if d not in covers or loc[1] in covers[d]}
    return set()


def _heap_covers(sdg: SDG, proc: Procedure) -> dict[int, frozenset]:
    """vertex -> the fields the ``HEAP`` it writes stands for: the entry of a wide procedure (its
    formal-in) and each call of wide callees (their formal-outs). Without them a field read after any call
    of a wide driver depended on everything the driver does."""
    covers: dict[int, set] = {}
    if proc.wide:
        covers[proc.cfg.entry.id] = set(proc.heap_ref)
    for call in proc.calls:
        for callee in call.callees:
            other = sdg.procs[callee]
            if HEAP in other.mod:
                if not other.wide:  # HEAP passed on from a wide callee of its own: could be any field
                    covers[call.vertex] = None
                elif covers.get(call.vertex, set()) is not None:
                    covers.setdefault(call.vertex, set()).update(other.heap_mod)
    return {vid: frozenset(fields) for vid, fields in covers.items() if fields is not None}


def _call_mod(sdg: SDG, call: CallRecord) -> set:
    return set().union(*(sdg.procs[c].mod for c in call.callees))


def _call_ref(sdg: SDG, call: CallRecord) -> set:
    return set().union(*(sdg.procs[c].ref for c in call.callees))


def _mutated_roots(sdg: SDG, proc: Procedure, call: CallRecord) -> set:
    """Root locations of the arguments (and receiver) a program call may mutate: those bound to a
    parameter some callee writes through (a bound method's receiver is its first parameter, see
    _bindings). Every argument and receiver of the vertex's calls when
    the binding cannot be read off the call (an implicit call, ``*args``/``**kwargs`` given, a mutated
    ``*args``/``**kwargs`` parameter)."""
    mutating = [sdg.procs[c] for c in call.callees if sdg.procs[c].mutates_args]
    if not mutating:
        return set()
    node = call.node
    if node is None or any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
        return _argument_roots(proc, call.vertex, sdg)
    mutated: list[ast.AST] = []
    for callee in mutating:
        signature = getattr(callee.unit.node, "args", None)
        if not isinstance(signature, ast.arguments):
            return _argument_roots(proc, call.vertex, sdg)
        if (signature.vararg and signature.vararg.arg in callee.mutated_params) or \
                (signature.kwarg and signature.kwarg.arg in callee.mutated_params):
            return _argument_roots(proc, call.vertex, sdg)
        positional = [a.arg for a in [*signature.posonlyargs, *signature.args]]
        for bound in _bindings(sdg, proc, callee, node):
            if bound and positional and positional[0] in callee.mutated_params and isinstance(node.func, ast.Attribute):
                mutated.append(node.func.value)
            for i, arg in enumerate(node.args):
                if i + bound < len(positional) and positional[i + bound] in callee.mutated_params:
                    mutated.append(arg)
        mutated += [k.value for k in node.keywords if k.arg in callee.mutated_params]
    return {root for part in mutated if (root := _argument_root(proc, part, sdg)) is not None}


def _bindings(sdg: SDG, caller: Procedure, callee: Procedure, node: ast.Call) -> tuple[int, ...]:
    """How many leading parameters of ``callee`` the call binds implicitly: 1 for a method called on an
    instance (``obj.m(x)``, ``super().m(x)``, a bound method held in a variable, a class's constructor),
    0 for a plain function, a static method or a method called through its class (``Base.m(self, x)``)."""
    unit = callee.unit
    decorators = {dotted_name(d) for d in getattr(unit.node, "decorator_list", ())}
    if unit.parent is None or unit.parent.kind != "class" or "staticmethod" in decorators:
        return (0,)
    receiver = node.func.value if isinstance(node.func, ast.Attribute) else None
    if isinstance(receiver, ast.Name) and "classmethod" not in decorators:
        named = _module_binding(sdg, caller.key[0], receiver.id)
        if receiver.id == unit.parent.node.name or (named is not None and sdg.procs[named].unit.kind == "class"):
            return (0,)
    return (1,)


def _argument_roots(proc: Procedure, vertex_id: int, sdg: SDG) -> set:
    """Root locations of the arguments and receivers of the calls a vertex makes."""
    node = proc.cfg.vertices[vertex_id].node
    if node is None:
        return set()
    parts: list[ast.AST] = []
    for call in ast.walk(node if not isinstance(node, ast.withitem) else node.context_expr):
        if isinstance(call, ast.Call):
            parts += [*call.args, *(k.value for k in call.keywords)]
            if isinstance(call.func, ast.Attribute):
                parts.append(call.func.value)
    return {root for part in parts if (root := _argument_root(proc, part, sdg)) is not None}


def _argument_root(proc: Procedure, part: ast.AST, sdg: SDG) -> tuple | None:
    """The location an argument expression's object is reached through: a variable, or an attribute
    field (``x[i]`` and ``*x`` reach it through ``x``); None for any other expression or a builtin."""
    while isinstance(part, (ast.Subscript, ast.Starred)):
        part = part.value
    if isinstance(part, ast.Name):
        loc = sdg.scopes[proc.key[0]].resolve(proc.unit, part.id)
        bound = _bound_globals(sdg).get(proc.key[0])
        if loc[0] == "var" and loc[1] == "<module>" and bound is not None and loc[2] not in bound \
                and hasattr(builtins, loc[2]):
            return None  # a builtin (``defaultdict(int)``): nothing the program can mutate
        return qualify(proc.key[0], loc)
    if isinstance(part, ast.Attribute):
        return ("attr", part.attr)
    return None


def _bound_globals(sdg: SDG) -> dict[str, set[str] | None]:
    """file -> the module globals some statement of the file binds (None: a construct may bind any)."""

    def collect(sdg: SDG) -> dict[str, set[str] | None]:
        found: dict[str, set[str] | None] = {}
        for (file, _), proc in sdg.procs.items():
            names = found.setdefault(file, set())
            if names is None:
                continue
            for access in proc.access.values():
                if ANY in access.defs:
                    found[file] = None
                    break
                names.update(loc[2] for loc in access.defs if loc[0] == "var" and loc[1] == "<module>")
        return found

    return sdg.cached("_bound_globals", collect)


# ---------------------------------------------------------------------- dependences
def _dependences(sdg: SDG) -> None:
    for key, proc in sdg.procs.items():
        _procedure_dependences(sdg, proc)
    _creation_edges(sdg)
    for key, proc in sdg.procs.items():
        for call in proc.calls:
            call_node = sdg.vertex(key, call.vertex)
            for callee in call.callees:
                other = sdg.procs[callee]
                sdg.add_edge(call_node, sdg.entry(callee), "call")
                sdg.add_edge(sdg.actual("ain", call, ARGS), sdg.formal("fin", callee, ARGS), "param-in", ARGS)
                for loc in other.ref:
                    sdg.add_edge(sdg.actual("ain", call, loc), sdg.formal("fin", callee, loc), "param-in", loc)
                for loc in [RET, *other.mod, *([ARGMUT] if other.mutates_args else [])]:
                    sdg.add_edge(sdg.formal("fout", callee, loc), sdg.actual("aout", call, loc), "param-out", loc)


def _creation_edges(sdg: SDG) -> None:
    """A unit runs only if the statement that created it ran: its ``def``/``class`` statement (with the
    decorators and default values evaluated there) or the statement holding the lambda."""
    for key, proc in sdg.procs.items():
        unit = proc.unit
        if unit.parent is None or unit.kind == "comprehension":
            continue
        parent = sdg.procs[(key[0], unit.parent.qualname)]
        creators = [v for v in parent.cfg.vertices.values() if v.node is unit.node]
        if not creators and unit.span:
            line, col = unit.node.lineno, unit.node.col_offset
            holding = [v for v in parent.cfg.vertices.values() if v.span and v.kind not in ("entry", "exit", "raise-exit")
                       and _contains(v.span, line, col)]
            creators = sorted(holding, key=lambda v: (v.span[2] - v.span[0], v.span[3] - v.span[1]))[:1]
        for vertex in creators:
            sdg.add_edge(sdg.vertex(parent.key, vertex.id), sdg.entry(key), "control", "def")


def _procedure_dependences(sdg: SDG, proc: Procedure) -> None:
    file = proc.key[0]
    cfg = proc.cfg
    entry = cfg.entry.id
    # Effects of the calls a vertex makes become weak definitions / uses at that vertex.
    effects_def: dict[int, dict[tuple, list[CallRecord]]] = defaultdict(lambda: defaultdict(list))
    effects_use: dict[int, dict[tuple, list[CallRecord]]] = defaultdict(lambda: defaultdict(list))
    access = {vid: Access(dict(a.defs), set(a.uses), lookups=a.lookups, field_reads=set(a.field_reads))
              for vid, a in proc.access.items()}
    unqualify = {}
    # Resuming a generator that changes what it yielded earlier (PyYAML's two-step constructors, driven to
    # the end by ``for dummy in generator: pass`` far from where the object was taken) changes objects that
    # this procedure's variables may hold by then: the statement weakly defines (changes the object of)
    # every variable the procedure binds, not its parameters (``self``: the store ``self.x = {}`` after the
    # loop reads no object the generator changed).
    resuming = {call.vertex for call in proc.calls if any(sdg.procs[c].mutates_yielded for c in call.callees)}
    if resuming:
        params = set(proc.access[entry].defs)
        bound = {loc for a in proc.access.values() for loc in a.defs if loc[0] == "var" and loc not in params}
        for vid in resuming:
            for loc in bound:
                access[vid].define(loc, strong=False)
    for call in proc.calls:
        for loc in _call_mod(sdg, call) | _mutated_roots(sdg, proc, call):
            local = local_form(loc, file)
            unqualify[local] = loc
            access[call.vertex].define(local, strong=False)
            effects_def[call.vertex][local].append(call)
        for loc in _call_ref(sdg, call):
            local = local_form(loc, file)
            access[call.vertex].uses.add(local)
            if local[0] == "attr":
                access[call.vertex].field_reads.add(local[1])
            effects_use[call.vertex][local].append(call)
    # Formal-ins: the entry defines (weakly) every non-local location the procedure reads; formal-in
    # vertices hang off the entry (they exist only when the procedure runs).
    for loc in proc.ref:
        access[entry].define(local_form(loc, file), strong=False)
        sdg.add_edge(sdg.vertex(proc.key, entry), sdg.formal("fin", proc.key, loc), "control", "normal")
    sdg.add_edge(sdg.vertex(proc.key, entry), sdg.formal("fin", proc.key, ARGS), "control", "normal")
    reaching = reaching_definitions(cfg, access)
    result_only = _result_only_calls(sdg, proc)
    node = lambda vid: sdg.vertex(proc.key, vid)  # noqa: E731
    for vid in cfg.vertices:
        sdg.graph.add_node(node(vid))
    for a, b, kind in control_dependences(cfg):
        sdg.add_edge(node(a), node(b), "control", kind)
    for handler, statement, label in _catching(cfg):
        sdg.add_edge(node(handler), node(statement), "control", label)
    own_scope = proc.unit.qualname if proc.unit.kind != "module" else None
    wide = proc.wide or any(sdg.procs[c].wide for call in proc.calls for c in call.callees)
    covers = _heap_covers(sdg, proc) if wide else {}
    _constant_uses(sdg, proc, node)
    if sdg.memo:
        _memo_edges(sdg, proc, node)
    passed = _passed_bindings(sdg, proc, result_only)
    for vid, acc in access.items():
        direct_uses = proc.access[vid].uses
        only_bound = passed.get(vid, ())
        wanted = reaching[vid].keys() if ANY in acc.uses else acc.uses
        for loc in wanted:
            sources = set(reaching[vid].get(loc, ()))
            if loc != ANY:
                any_defs = reaching[vid].get(ANY, ())
                if own_scope is not None and loc[0] == "var" and loc[1] == own_scope:
                    # A callee that may touch anything still cannot rebind the caller's local variables:
                    # only this procedure's own unmodelled constructs (exec, locals()...) can.
                    any_defs = [d for d in any_defs if ANY in proc.access[d].defs or d == entry]
                sources |= set(any_defs)
            pairs = {(d, loc) for d in sources} | (_heap_sources(reaching[vid], loc, covers) if wide else set())
            for d, def_loc in pairs:
                for src in _def_sources(sdg, proc, d, def_loc, effects_def, entry, result_only):
                    mutation = access[d].defs.get(loc) is False  # a weak write: the object changed, not the name
                    if (loc in direct_uses or ANY in acc.uses) and not (mutation and loc in only_bound):
                        sdg.add_edge(src, node(vid), "data", loc)
                    for call in effects_use[vid].get(loc, []):
                        sdg.add_edge(src, sdg.actual("ain", call, _sdg_form(loc, file)), "data", loc)
    # Actual-ins/outs: control-dependent on their call; the ARGS actual-in reads what the statement reads.
    for call in proc.calls:
        v = node(call.vertex)
        ain_args = sdg.actual("ain", call, ARGS)
        sdg.add_edge(v, ain_args, "control", "call")
        for loc in proc.access[call.vertex].uses:
            pairs = {(d, loc) for d in reaching[call.vertex].get(loc, ())}
            if wide:
                pairs |= _heap_sources(reaching[call.vertex], loc, covers)
            for d, def_loc in pairs:
                for src in _def_sources(sdg, proc, d, def_loc, effects_def, entry, result_only):
                    sdg.add_edge(src, ain_args, "data", loc)
        for loc in _call_ref(sdg, call):
            sdg.add_edge(v, sdg.actual("ain", call, loc), "control", "call")
        for loc in [RET, *_call_mod(sdg, call), ARGMUT]:
            sdg.add_edge(v, sdg.actual("aout", call, loc), "control", "call")
        if call.vertex in result_only:
            continue  # what the statement defines depends on the returned value (see _def_sources), the call itself does not
        sdg.add_edge(sdg.actual("aout", call, RET), v, "data", RET)
    _same_statement_effects(sdg, proc, node)
    # Formal-outs: what reaches the exit.
    exit_reach = reaching[cfg.exit.id]
    for loc in [RET, *proc.mod]:
        local = local_form(loc, file)
        if proc.unit.kind == "class" and loc[0] == "attr" and local not in exit_reach:
            local = ("var", proc.unit.qualname, loc[1])  # the class attribute is the class-body name
        fout = sdg.formal("fout", proc.key, loc)
        sdg.graph.add_node(fout)
        sdg.add_edge(node(entry), fout, "control", "normal")
        pairs = {(d, local) for d in exit_reach.get(local, ())}
        if loc == HEAP:
            pairs |= _heap_sources(exit_reach, HEAP)
        for d, def_loc in pairs:
            for src in _def_sources(sdg, proc, d, def_loc, effects_def, entry, result_only):
                sdg.add_edge(src, fout, "data", loc)
    if proc.mutates_args:
        fout = sdg.formal("fout", proc.key, ARGMUT)
        sdg.add_edge(node(entry), fout, "control", "normal")
        for loc in proc.access[entry].defs:
            for d in exit_reach.get(loc, ()):
                if d != entry:
                    sdg.add_edge(node(d), fout, "data", ARGMUT)
        for d in proc.alias_writes:
            sdg.add_edge(node(d), fout, "data", ARGMUT)


def _catching(cfg) -> list[tuple[int, int, str]]:
    """(handler, vertex, label) dependences that keep a kept statement's exceptions where the program
    has them: a statement that may raise into a handler of its own unit depends on that handler and on
    the handlers after it in the same ``try`` ("catch": without them the evaluator would die where the
    program goes on), and a handler on the jumps in its body that decide whether the exception goes on
    (``raise``, ``return``, ``break``, ``continue``: "rethrow")."""
    vertices = cfg.vertices
    found: list[tuple[int, int, str]] = []
    chains: dict[int, list[int]] = {}
    for a, h, data in cfg.graph.edges(data=True):
        if data.get("kind") != "exception" or vertices[h].kind != "handler":
            continue
        chain = chains.get(h)
        if chain is None:
            chain, current = [], h
            while current is not None and vertices[current].kind == "handler" and current not in chain:
                chain.append(current)
                current = next((b for _, b, d in cfg.graph.out_edges(current, data=True)
                                if d.get("kind") == "false" and vertices[b].kind == "handler"), None)
            chains[h] = chain
        found.extend((handler, a, "catch") for handler in chain)
    jumps = {id(v.node): v.id for v in vertices.values()
             if v.kind == "stmt" and isinstance(v.node, (ast.Raise, ast.Return, ast.Break, ast.Continue))}
    for v in vertices.values():
        if v.kind != "handler" or not isinstance(v.node, ast.ExceptHandler):
            continue
        for stmt in _own_statements(v.node.body):
            if id(stmt) in jumps:
                found.append((jumps[id(stmt)], v.id, "rethrow"))
    return found


def _own_statements(body: list[ast.stmt]):
    """The statements of a block and of the blocks nested in it, not those of nested functions or classes."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for block in ("body", "orelse", "finalbody", "handlers", "cases"):
            for child in getattr(stmt, block, ()) or ():
                if isinstance(child, (ast.ExceptHandler, ast.match_case)):
                    yield from _own_statements(child.body)
                elif isinstance(child, ast.stmt):
                    yield from _own_statements([child])


def _constant_uses(sdg: SDG, proc: Procedure, node) -> None:
    """``global`` edges: writer of an import-time constant -> a vertex of another procedure that reads
    it (a ``from m import NAME`` reads m's NAME)."""
    constant = sdg.constant_defs
    if constant.written_elsewhere is None:
        return
    file = proc.key[0]
    module_of = sdg.__dict__.get("_module_of") or sdg.__dict__.setdefault(
        "_module_of", {f.modname: f.path for f in sdg.program.files})
    bindings = sdg.cached("_import_bindings", lambda sdg: _import_bindings(sdg, module_of))
    for vid, access in proc.access.items():
        read = [_sdg_form(loc, file) for loc in access.uses]
        stmt = proc.cfg.vertices[vid].node
        if isinstance(stmt, ast.ImportFrom) and proc.cfg.vertices[vid].kind == "stmt":
            source_module = _imported_modules(proc.source, ast.ImportFrom(module=stmt.module, names=[], level=stmt.level),
                                              module_of)[-1:]
            for modname in source_module:
                if any(a.name == "*" for a in stmt.names):  # reads every name it re-binds
                    read += [("var", module_of[modname], "<module>", n)
                             for n in sorted(_module_exports(sdg, module_of[modname], set()) or ())]
        for prefix in [loc[1] for loc in read if loc[0] == ATTR_PREFIX]:  # getattr(obj, "parse_" + name)
            read += [loc for loc in constant if loc[0] == "attr" and loc[1].startswith(prefix)]
        for loc in read:
            writers = constant.writers(loc) if loc in constant else []
            if writers and loc[0] == "attr" and loc[1] in access.lookups and loc[1] not in access.field_reads:
                writers = _looked_up_writers(sdg, proc, vid, access.lookups[loc[1]], writers)
            through = [(writer, loc) for writer in writers]
            through += [(writer, origin) for origin in _imported_origins(sdg, bindings, loc, set())
                        for writer in constant.writers(origin)]
            for writer, label in through:
                if writer[1] != proc.key:
                    sdg.add_edge(writer, node(vid), "global", label)


def _looked_up_writers(sdg: SDG, proc: Procedure, vid: int, calls: list[ast.Call], writers: list[Node]) -> list[Node]:
    """The writers of an import-time method name that ``calls`` (``x.m(...)``, the vertex's only reads of
    field ``m``) may find when they look ``m`` up: a class body's ``def m`` whose function the call graph
    says none of them runs is left out (``super().__init__()`` found every class's ``def __init__``:
    sqlparse's slices kept some fifty class bodies for it). Every other writer stays (an assignment
    ``m = ...``, a decorated def whose wrapper is what the call runs, a construct that may write any
    field), and so do all of them when a call's callees were guessed by name."""
    callees: set[int] = set()
    explained = True
    records = {_span(r.node): r for r in proc.calls if r.vertex == vid and r.node is not None}
    for call in calls:
        record = records.get(_span(call))
        if record is None:
            site = sdg.callgraph.site_for(proc.key[0], call)
            if site is None or not site.resolved or callee_keys(sdg, site.callees):
                return writers
            continue  # resolved, and no callee in the program: no program def is what it finds
        if record.resolved == "name-fallback":
            return writers
        for key in record.callees:
            callee = sdg.procs.get(key)
            if callee is None or not isinstance(callee.unit.node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                explained = False
            else:
                callees.add(id(callee.unit.node))
    defined = {id(sdg.procs[w[1]].cfg.vertices[w[2]].node) for w in writers if _method_def(sdg, w)}
    explained = explained and callees <= defined
    return [w for w in writers if not _method_def(sdg, w)
            or id(sdg.procs[w[1]].cfg.vertices[w[2]].node) in callees
            or (not explained and sdg.procs[w[1]].cfg.vertices[w[2]].node.decorator_list)]


def _span(node: ast.AST) -> tuple:
    return (node.lineno, node.col_offset, node.end_lineno, node.end_col_offset)


def _method_def(sdg: SDG, writer: Node) -> bool:
    """``writer`` is a ``def`` statement of a class body."""
    proc = sdg.procs.get(writer[1]) if writer[0] == "v" else None
    if proc is None or proc.unit.kind != "class":
        return False
    vertex = proc.cfg.vertices.get(writer[2])
    return vertex is not None and vertex.kind == "def" and isinstance(vertex.node, (ast.FunctionDef, ast.AsyncFunctionDef))


def _import_bindings(sdg: SDG, module_of: dict[str, str]) -> dict[tuple, list[tuple]]:
    """SDG location a ``from m import NAME [as ALIAS]`` binds (the variable, and for a module body the
    module attribute too) -> the locations it takes the value from (m's global NAME). A read of the
    binding depends on the writers of the original name directly (:func:`_imported_origins`), not through
    the import statement: the statement is also the call that runs m's body, and a slice that keeps it
    only for that (to explain why a module's body runs) must not keep every class the statement names,
    with the bodies of their ``__init__`` (sqlparse: 52 -> 133 statements for a keyword table)."""
    found: dict[tuple, list[tuple]] = defaultdict(list)
    for key, proc in sdg.procs.items():
        file = key[0]
        for vid, vertex in proc.cfg.vertices.items():
            stmt = vertex.node
            if vertex.kind != "stmt" or not isinstance(stmt, ast.ImportFrom):
                continue
            source = _imported_modules(proc.source, ast.ImportFrom(module=stmt.module, names=[], level=stmt.level),
                                       module_of)[-1:]
            for modname in source:
                for alias in stmt.names:
                    if alias.name == "*":
                        continue
                    bound = alias.asname or alias.name
                    origin = ("var", module_of[modname], "<module>", alias.name)
                    for loc in proc.access[vid].defs:
                        if loc != ANY and loc[-1] == bound and loc[0] in ("var", "attr"):
                            found[_sdg_form(loc, file)].append(origin)
    return found


def _imported_origins(sdg: SDG, bindings: dict[tuple, list[tuple]], loc: tuple, seen: set) -> list[tuple]:
    """The import-time constants a ``from ... import`` binding ``loc`` takes its value from, through
    chains of re-exports (``from pkg.a import X`` in ``pkg/__init__.py``, ``from pkg import X`` elsewhere)."""
    found: list[tuple] = []
    for origin in bindings.get(loc, ()):
        if origin in seen:
            continue
        seen.add(origin)
        if origin in sdg.constant_defs:
            found.append(origin)
        found += _imported_origins(sdg, bindings, origin, seen)
    return found


def _sdg_form(local: tuple, file: str) -> tuple:
    """Inverse of :func:`local_form`."""
    if local[0] == "var":
        return ("var", file, local[1], local[2])
    if local[0] == "var@":
        return ("var", local[1], local[2], local[3])
    return local


def local_form(loc: tuple, file: str) -> tuple:
    """SDG location -> the dataflow location used inside a procedure of ``file``."""
    if loc[0] == "var":
        return ("var", loc[2], loc[3]) if loc[1] == file else ("var@", loc[1], loc[2], loc[3])
    return loc


def _result_only_calls(sdg: SDG, proc: Procedure) -> dict[int, CallRecord]:
    """Statements that make exactly one program call and only assign or discard what it returns
    (``x = f(a)``, ``f(a)``, ``x += f(a)``): for them the call happening does not depend on the returned
    value, only what the statement defines does; so for ``x = [f(y) for y in ys]`` and the
    comprehension it runs. Slicing for a callee's parameters (or for how often it
    runs) then keeps the call without the callee's result (and whatever computes it); any other statement
    (a test, a loop header, a nested program call) keeps depending on the result as a whole."""
    per_vertex: dict[int, list[CallRecord]] = defaultdict(list)
    for call in proc.calls:
        per_vertex[call.vertex].append(call)
    found: dict[int, CallRecord] = {}
    for vid, calls in per_vertex.items():
        if len(calls) != 1:
            continue
        value = _stored_value(proc.cfg.vertices[vid].node)
        if calls[0].implicit == "comprehension":
            if value is not None and value is sdg.procs[calls[0].callees[0]].unit.node:
                found[vid] = calls[0]
            continue
        if calls[0].implicit:
            continue
        # The call must be the whole value, and the only call in it: in ``f().g()`` or ``h(f())`` what f
        # returns is consumed by other code (which may call back into the program) before any assignment.
        if isinstance(value, ast.Call) and sum(isinstance(n, ast.Call) for n in ast.walk(value)) == 1:
            found[vid] = calls[0]
    return found


def _passed_bindings(sdg: SDG, proc: Procedure, result_only: dict[int, CallRecord]) -> dict[int, set]:
    """For each statement that only stores a program call's result: the variables it reads only to pass
    their objects on (an argument, a receiver, the root of an attribute chain that is one), never looking
    inside them itself. The statement runs whatever those objects contain, so it depends on their
    binding (strong definitions) and the callee on their contents (mutations reach the callee's
    arguments through the ARGS actual-in): counting ``searcher.search(q)`` needs ``searcher`` bound, not
    every mutation of the searcher."""
    scopes = sdg.scopes[proc.key[0]]
    found: dict[int, set] = {}
    for vid, call in result_only.items():
        value = _stored_value(proc.cfg.vertices[vid].node)
        if not isinstance(value, ast.Call) or call.implicit:
            continue
        found[vid] = {scopes.resolve(proc.unit, name) for name in _passed_names(value)}
    return found


def _same_statement_effects(sdg: SDG, proc: Procedure, node) -> None:
    """What one call of a statement writes, a later call of the same statement and the statement itself
    may read: ``walk(direct(argv))``, where ``direct`` sets a field that ``walk`` reads, and
    ``direct(argv).items``. Reaching definitions are per statement, so they cannot show this. A call
    nested in another's arguments runs before it; any other order is possible (a loop runs the
    statement again, through reaching definitions). The statement's own reads inside a call's
    arguments happen before the call (``main(sys.argv[1])`` reads ``.argv`` before ``main`` writes
    anything), so only a read named elsewhere in the statement depends on what the call writes
    (:func:`_names_read_after`)."""
    file = proc.key[0]
    by_vertex: dict[int, list[CallRecord]] = defaultdict(list)
    for call in proc.calls:
        by_vertex[call.vertex].append(call)
    for vid, calls in by_vertex.items():
        uses = proc.access[vid].uses
        for first in calls:
            mod = _call_mod(sdg, first)
            if not mod:
                continue
            after = _names_read_after(proc.cfg.vertices[vid], first)
            for loc in mod:
                local = local_form(loc, file)
                if local not in uses:
                    continue
                name = _location_name(local)
                if after is not None and name is not None and name not in after:
                    continue  # read only inside the call's own expression, before the call ran
                sdg.add_edge(sdg.actual("aout", first, loc), node(vid), "data", loc)
            for later in calls:
                if later is first or _nested_in(later, first):
                    continue
                for loc in mod & _call_ref(sdg, later):
                    sdg.add_edge(sdg.actual("aout", first, loc), sdg.actual("ain", later, loc), "data", loc)


# Simple statements whose parts outside a call are all evaluated where they stand (no body of their own).
_EXPRESSION_STATEMENTS = (ast.Expr, ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Return)
_NESTED_UNITS = (ast.Lambda, ast.GeneratorExp, ast.ListComp, ast.SetComp, ast.DictComp)
# Names whose call reads variables or fields not named in the text (``super()`` reads ``__class__``).
_READS_UNNAMED = frozenset(UNMODELLED_CALLS) | {"getattr", "hasattr", "dir", "attrgetter", "super"}


def _names_read_after(vertex, call: CallRecord) -> set[str] | None:
    """The names (variables, fields, constant keys) the statement of ``vertex`` may read after ``call``
    returns: those named outside the call's expression, and those inside a lambda or comprehension among
    its arguments (a generator argument is consumed while the call runs). None when that cannot be told
    (an implicit call, a compound statement, a namespace read by ``globals()`` and the like): every read
    may come after."""
    stmt = vertex.node
    if vertex.kind != "stmt" or not isinstance(stmt, _EXPRESSION_STATEMENTS) or call.implicit \
            or not isinstance(call.node, ast.Call):
        return None
    inside = {id(n) for n in ast.walk(call.node)}
    later = [n for n in ast.walk(stmt) if id(n) not in inside]
    for unit in ast.walk(call.node):
        if isinstance(unit, _NESTED_UNITS) and unit is not call.node:
            later += ast.walk(unit)
    names: set[str] = set()
    for n in later:
        if isinstance(n, ast.Name):
            if n.id in _READS_UNNAMED:
                return None
            names.add(n.id)
        elif isinstance(n, ast.Attribute):
            if n.attr in _READS_UNNAMED:
                return None
            names.add(n.attr)
        elif isinstance(n, ast.Constant) and isinstance(n.value, str):
            names.add(n.value)
        elif isinstance(n, ast.keyword) and n.arg is not None:
            names.add(n.arg)
    return names


def _location_name(loc: tuple) -> str | None:
    """The name a variable or field location goes by; None for any other location (it is never told
    apart by name)."""
    if loc[0] in ("var", "var@"):
        return loc[-1]
    if loc[0] == "attr" and loc != ATTR_ANY:
        return loc[1]
    return None


def _nested_in(inner: CallRecord, outer: CallRecord) -> bool:
    """Whether call ``inner`` is part of ``outer``'s call expression (so it ends before ``outer`` starts)."""
    a, b = inner.node, outer.node
    if a is None or b is None or a is b:
        return False
    return (b.lineno, b.col_offset) <= (a.lineno, a.col_offset) and \
        (a.end_lineno, a.end_col_offset) <= (b.end_lineno, b.end_col_offset)


def _passed_names(value: ast.Call) -> set[str]:
    """The names a call only passes on: each occurrence is an argument, the receiver, or the root of an
    attribute chain that is one (``a`` in ``f(a, a.b)``, not in ``f(a[i])``, ``f(*a)`` or ``f(a + b)``,
    which read what ``a`` holds)."""
    parts = [*value.args, *(k.value for k in value.keywords if k.arg is not None)]
    if isinstance(value.func, ast.Attribute):
        parts.append(value.func.value)
    roots = []
    for part in parts:
        while isinstance(part, ast.Attribute):
            part = part.value
        if isinstance(part, ast.Name):
            roots.append(part)
    passed = {id(n) for n in roots}
    elsewhere = {n.id for n in ast.walk(value) if isinstance(n, ast.Name) and id(n) not in passed}
    return {n.id for n in roots} - elsewhere


def _stored_value(stmt: ast.AST) -> ast.AST | None:
    """The expression a vertex only stores or discards: the value of ``x = e``, ``x += e``, ``e``, and the
    element of a list or set comprehension (appended as it is); None for any other vertex (a test, a loop
    header, a ``return`` (its value may go to callers the call graph cannot see), a generator's element
    handed to its consumer, a dict entry)."""
    if isinstance(stmt, (ast.Expr, ast.Assign, ast.AnnAssign, ast.AugAssign)):
        return stmt.value
    if isinstance(stmt, (ast.ListComp, ast.SetComp)):
        return stmt.elt
    return None


def _def_sources(sdg: SDG, proc: Procedure, d: int, loc: tuple, effects_def, entry: int,
                 result_only: dict[int, CallRecord] | None = None) -> list[Node]:
    """Who stands for definition ``d`` of ``loc``: the vertex, the formal-in, and/or the call's actual-outs."""
    sources: list[Node] = []
    if result_only and d in result_only and (loc in proc.access[d].defs or loc == ANY):
        sources.append(sdg.actual("aout", result_only[d], RET))
    file = proc.key[0]
    own = proc.access[d].defs
    if d == entry and loc not in own:
        sources.append(sdg.formal("fin", proc.key, _sdg_form(loc, file)))
    elif d == entry and loc in own:
        sources.append(sdg.formal("fin", proc.key, ARGS))  # a parameter's value comes from the arguments
    elif loc in own or loc == ANY:
        sources.append(sdg.vertex(proc.key, d))
    for call in effects_def.get(d, {}).get(loc, []):
        mutated = loc not in _local_mod(sdg, call, file)
        sources.append(sdg.actual("aout", call, ARGMUT if mutated else _sdg_form(loc, file)))
    return sources or [sdg.vertex(proc.key, d)]


def _local_mod(sdg: SDG, call: CallRecord, file: str) -> frozenset:
    """A call's MOD set in the caller's local forms (memoised: MOD sets of big programs are large, and
    every def-use pair through the call asks)."""
    cache = sdg.__dict__.setdefault("_local_mod_cache", {})
    key = (call.id, file)
    found = cache.get(key)
    if found is None:
        found = cache[key] = frozenset(local_form(m, file) for m in _call_mod(sdg, call))
    return found


# ---------------------------------------------------------------------- summary edges
INTRA = ("control", "data", "summary")


def _summary_edges(sdg: SDG) -> None:
    """Reps-Horwitz-Sagiv-Rosay: a summary edge ain -> aout whenever the callee's matching formal-in
    reaches its formal-out along a same-level realizable path.

    The path edges (node, formal-out it reaches) are kept per node as a bitset over its procedure's
    formal-outs (intraprocedural edges never leave a procedure), and a node waits in the worklist once
    with all the bits it gained since it was last passed on: on a 25 kLOC package a set of node pairs
    needed over 7 GiB. The worklist is ordered so that callees finish before their callers (the call
    graph's strongly connected components, bottom up) and, within a procedure, a node comes after the
    nodes it flows into (a depth-first finishing order): taken in stack order, Whoosh's nodes were passed
    on 3.3 times as often (178 million predecessor visits, 78 s; now 45 million). The worklist runs on
    integer node numbers and predecessor lists compiled once from the graph (the graph's adjacency and
    edge checks took most of the time); the summary edges found are kept beside the graph
    (:meth:`SDG.labelled_edges`), not in it."""
    graph = sdg.graph
    nodes: list[Node] = list(graph.nodes)
    number: dict[Node, int] = {node: i for i, node in enumerate(nodes)}
    preds: list[list[int]] = [[] for _ in nodes]
    for x, incoming in graph.pred.items():
        # def edges leave the procedure; control, data and summary edges stay inside it
        preds[number[x]] = [number[p] for p, keys in incoming.items()
                            if any(kind in INTRA and label != "def" for kind, label in keys)]
    proc_rank = _callee_first_ranks(sdg)
    finished = _finishing_order(preds)
    stride = len(nodes) + 1
    priority = [proc_rank.get(_procedure_of(node), 0) * stride + finished[i] for i, node in enumerate(nodes)]
    reaches = [0] * len(nodes)
    pending = [0] * len(nodes)  # bits gained and not yet passed on (nonzero: the node is in the heap)
    fouts: dict[ProcKey, list[tuple]] = defaultdict(list)  # procedure -> the locations of its formal-outs, by bit
    heap: list[tuple[int, int]] = []
    for i, node in enumerate(nodes):
        if node[0] == "fout":
            fouts[node[1]].append(node[2])
            reaches[i] = pending[i] = 1 << (len(fouts[node[1]]) - 1)
            heap.append((priority[i], i))
    heapq.heapify(heap)
    formal_ins = {i: (node[1], node[2]) for i, node in enumerate(nodes) if node[0] == "fin" and node[1] in fouts}

    def node_id(node: Node) -> int:
        found = number.get(node)
        if found is None:
            found = number[node] = len(nodes)
            nodes.append(node)
            preds.append([])
            reaches.append(0)
            pending.append(0)
            priority.append(proc_rank.get(_procedure_of(node), 0) * stride)
        return found

    def gain(i: int, bits: int) -> None:
        if not pending[i]:
            heapq.heappush(heap, (priority[i], i))
        pending[i] |= bits

    # procedure -> (call id, its actual-out numbers by the callee's formal-out bit, filled on first use)
    callers: dict[ProcKey, list[tuple[tuple, list]]] = {}
    summaries: set[int] = set()  # ain << 32 | aout
    while heap:
        x = heapq.heappop(heap)[1]
        bits = pending[x]
        pending[x] = 0
        formal = formal_ins.get(x)
        if formal is None:
            for p in preds[x]:
                new = bits & ~reaches[p]
                if new:
                    reaches[p] |= new
                    gain(p, new)
            continue
        proc, loc_in = formal
        outs = fouts[proc]
        calls = callers.get(proc)
        if calls is None:
            calls = callers[proc] = [(call.id, [None] * len(outs)) for call in sdg.calls_to.get(proc, [])]
        for call_id, aouts in calls:
            ain = node_id(("ain", call_id, loc_in))
            rest = bits
            while rest:
                low = rest & -rest
                rest ^= low
                bit = low.bit_length() - 1
                aout = aouts[bit]
                if aout is None:
                    aout = aouts[bit] = node_id(("aout", call_id, outs[bit]))
                pair = ain << 32 | aout
                if pair not in summaries:
                    summaries.add(pair)
                    preds[aout].append(ain)
                    new = reaches[aout] & ~reaches[ain]
                    if new:
                        reaches[ain] |= new
                        gain(ain, new)
    graph.add_nodes_from(nodes[len(graph):])  # actuals no dependence had made (a callee's formal no caller passes)
    sdg.summary_nodes = nodes
    mask = (1 << 32) - 1
    for pair in sorted(summaries):
        sdg.summary_sources.append(pair >> 32)
        sdg.summary_targets.append(pair & mask)


def _procedure_of(node: Node) -> ProcKey:
    """The procedure an SDG node belongs to (an actual's: its call's caller)."""
    return node[1][0] if node[0] in ("ain", "aout") else node[1]


def _callee_first_ranks(sdg: SDG) -> dict[ProcKey, int]:
    """A rank per procedure, lower for callees: the call graph's strongly connected components in
    reverse topological order (a component's members share a rank)."""
    calls = nx.DiGraph()
    calls.add_nodes_from(sdg.procs)
    calls.add_edges_from((call.caller, callee) for records in sdg.calls_to.values() for call in records
                         for callee in call.callees)
    components = nx.condensation(calls)
    ranks: dict[ProcKey, int] = {}
    for rank, component in enumerate(reversed(list(nx.topological_sort(components)))):
        for member in components.nodes[component]["members"]:
            ranks[member] = rank
    return ranks


def _finishing_order(preds: list[list[int]]) -> list[int]:
    """Depth-first finishing numbers along the edges ``p -> x`` for ``p`` in ``preds[x]``: on a path
    without cycles a node finishes after every node it flows into."""
    succs: list[list[int]] = [[] for _ in preds]
    for x, incoming in enumerate(preds):
        for p in incoming:
            succs[p].append(x)
    finished = [0] * len(preds)
    seen = bytearray(len(preds))
    count = 0
    for root in range(len(preds)):
        if seen[root]:
            continue
        seen[root] = 1
        stack = [(root, iter(succs[root]))]
        while stack:
            node, children = stack[-1]
            for child in children:
                if not seen[child]:
                    seen[child] = 1
                    stack.append((child, iter(succs[child])))
                    break
            else:
                stack.pop()
                finished[node] = count
                count += 1
    return finished
