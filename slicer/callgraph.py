"""Static call graph of a Python program, from astroid inference plus the class hierarchy (PyCG-compatible output).

``build_call_graph(program, entry)`` resolves every call site of the program to a set of callees without
importing or running anything, and returns a :class:`CallGraph`: first-class :class:`CallSite` records
(positions of the ``ast.Call`` node, so that later stages can map sites to statements), the program's
function nodes, the unresolved sites with a reason, and PyCG's JSON (:meth:`CallGraph.to_pycg`).

Names (PyCG's scheme)
---------------------
* a module body is named by its module name (``pkg.mod``); functions, methods and classes by their dotted
  path (``pkg.mod.f``, ``pkg.mod.C.m``, nested ``pkg.mod.outer.inner``); classes are not call-graph nodes;
* lambdas are ``<enclosing name>.<lambdaN>``, N counting the lambdas of that enclosing name from 1 in source
  order (``pkg.mod.f.<lambda1>``); a lambda in a class body counts under the class (``pkg.mod.C.<lambda1>``);
* a property's setter and deleter are ``pkg.mod.C.x.<setter>`` / ``pkg.mod.C.x.<deleter>`` (the getter is
  ``pkg.mod.C.x``); other redefinitions of one name share that name (PyCG merges them too);
* calls in comprehensions and generator expressions belong to the enclosing function; calls in a class
  body, in decorators, default values and annotations belong to the scope that runs them (the enclosing
  function or module); calls in a lambda's body belong to the lambda;
* builtins are ``<builtin>.len``, ``<builtin>.str.join``; other code outside the program keeps the dotted
  name of its definition as astroid finds it (``collections.Counter.most_common``, ``posixpath.join`` for
  ``os.path.join``); calling an outside class is an edge to the class (``collections.Counter``).

What resolves a call
--------------------
astroid infers the callee expression. The values map to callees: functions and lambdas; bound and unbound
methods (via an instance, via the class, inherited through the MRO, ``super()``); classes (constructor: the
``__new__`` and ``__init__`` found first in the MRO when a class of the program defines them -- a class
whose MRO has neither in the program is resolved with no program callee, as in PyCG); instances
(``__call__`` through the MRO); ``functools.partial`` objects (the wrapped function). Decorated functions:
the decorator is called at definition time from the defining scope (a ``kind="decorator"`` site at the
decorator expression) and calls of the decorated name go to what the decorator returns when that can be
inferred (usually its inner ``wrapper``), else to the original def; decorators from outside the program
(``functools.wraps``, ``lru_cache``, ``property``...) are taken as returning the function itself.

On top of astroid (which does not follow values into parameters) three PyCG-like rules apply:

* parameter flow: a parameter takes the values of the matching arguments at every call site resolved to
  its function (iterated to a fixed point), plus its default; a decorator's parameter takes the decorated
  function, so ``wrapper``'s ``func(*args)`` reaches the original def. Instance attributes assigned from
  parameters (``self.cb = cb``) and container literals indexed by unknown keys follow the same way;
* dynamic dispatch on ``self``: in a method of class K, ``self`` stands for an instance of K or of any
  class of the program derived from K, so ``self.step()`` also reaches the overrides of ``step`` in
  subclasses (``cls`` likewise in class methods);
* declared types: when a parameter's values are not all known (no resolved caller, or an unresolvable
  argument) and it is annotated with a class of the program, it stands for an instance of that class or
  of any subclass (class-hierarchy analysis): a call through a base-typed parameter reaches every
  override, the base's own definition included. This is the documented choice for calls through
  base-typed variables; variables assigned from inferable values get exactly those values. A class from
  outside the program stands for itself (``m: re.Match`` makes ``m.end()`` a call of ``re.Match.end``),
  and a function's return annotation stands in when its ``return`` values are not all known.

Outside the program, precision is not pursued: a call whose inferable callees are all outside the program
counts as resolved even if astroid also saw an unknown value (the unknown part is outside too), and an
attribute that astroid's model of an outside class or module lacks is named ``<class>.<attribute>``.
A method call never runs on ``None``, so ``None`` among a receiver's values is ignored.

Functions passed as values to callees outside the program (``map(f, xs)``, ``sorted(key=obj.m)``,
``Thread(target=run)``) are edges from the caller to the function, as in PyCG. Attribute reads of a
property of a program class are ``kind="property-get"`` sites (edge to the getter), assignments
``"property-set"`` (the setter), ``del`` ``"property-del"``; where the object's class cannot be inferred,
such a site is unresolved, with no callee of its own (hybrid slicing gives it the accessors profiling saw).

Unresolved calls are kept: a site whose callee expression has values astroid cannot infer is in
:attr:`CallGraph.unresolved` with the reason, its record has ``resolved=False`` and carries whatever
callees were found (a partly resolved site). The protocol calls the language makes itself are sites too
(``kind="protocol-iter"``: a ``for`` or comprehension iterable, whose ``__iter__`` and, on the same class,
``__next__`` run; ``kind="protocol-contains"``: ``a in b``, which runs ``b.__contains__``;
``kind="protocol-builtin"``: ``len(x)``, ``iter(x)``, ``next(x)``, ``str(x)``, ``repr(x)``; ``kind="protocol-subscript"``:
``x[i]``, ``x[i] = v``, ``del x[i]``, which run ``__getitem__``, ``__setitem__``, ``__delitem__``), when the program
defines such a method: to the method of the inferred receiver's class, or, for ``for`` and ``in`` where the
receiver cannot be inferred, to every program method of that name, the site left unresolved (hybrid slicing
replaces them by what profiling saw where it saw the statement run). A builtin call or a subscript on an
uninferable receiver gets no program callee and is unresolved, so that hybrid slicing gives it the methods
profiling saw it run (sqlparse's ``str(stmt)``, ``tlist[0]``). Not modelled: implicit dunder calls of operators, ``with``, formatting and
comparisons on program classes, metaclass ``__call__``, class decorators' return values, ``eval``/``exec``/``getattr``
with computed names and imports by computed name.

With ``entry`` (a file of the program) the graph covers the modules the entry imports, transitively
(a module body runs when imported), as PyCG does given one entry point: every function of those modules is
a key of :meth:`CallGraph.to_pycg`, called or not. :meth:`CallGraph.reachable` gives strict call
reachability when that is wanted.

Performance: astroid results are cached per node for the whole build, derived values per fixed-point round;
only sites whose values depend on parameter flow are resolved again in later rounds.
"""

from __future__ import annotations

import ast
import os
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mantispy.slicer.program import ProblemReport, Program, SourceFile

BUILTIN_PREFIX = "<builtin>."
MAX_VALUES = 64  # values kept per expression; more are cut (and the site marked partly resolved)
MAX_ROUNDS = 8  # parameter-flow fixed-point rounds
TEXT_LIMIT = 200  # characters of source text kept per site
_PROPERTY_DECORATORS = frozenset({"property", "cached_property", "abstractproperty"})
_ACCESSORS = {"setter": "property-set", "deleter": "property-del", "getter": "property-get"}
_SKIPPED_DECORATORS = frozenset({"builtins.property", "builtins.staticmethod", "builtins.classmethod",
                                 "abc.abstractmethod", "functools.cached_property"})
# callees outside the program known not to call the functions passed to them (no "passed function" edges)
_NOT_CALLING = frozenset({
    "functools.wraps", "functools.update_wrapper", "<builtin>.isinstance", "<builtin>.issubclass", "<builtin>.id",
    "<builtin>.hasattr", "<builtin>.getattr", "<builtin>.setattr", "<builtin>.delattr", "<builtin>.callable",
    "<builtin>.print", "<builtin>.repr", "<builtin>.str", "<builtin>.type", "<builtin>.vars", "<builtin>.dir",
    "<builtin>.hash", "<builtin>.super", "<builtin>.staticmethod", "<builtin>.classmethod", "<builtin>.property",
    "<builtin>.list", "<builtin>.tuple", "<builtin>.set", "<builtin>.frozenset", "<builtin>.dict",
    "<builtin>.list.append", "<builtin>.list.insert", "<builtin>.list.extend", "<builtin>.list.remove",
    "<builtin>.list.index", "<builtin>.list.count", "<builtin>.set.add", "<builtin>.set.discard", "<builtin>.set.remove",
    "<builtin>.dict.setdefault", "<builtin>.dict.get", "<builtin>.dict.pop", "<builtin>.dict.update",
})
_PARTIAL_CLASSES = frozenset({"functools.partial", "_functools.functools.partial", "_functools.partial"})


class CallGraphError(Exception):
    """The requested analysis cannot start (e.g. the entry file is not a parsed file of the program)."""


# ====================================================================== public records
@dataclass(frozen=True)
class CallSite:
    """One place that calls: an ``ast.Call`` node (``kind="call"``), a decorator application
    (``"decorator"``, positions of the decorator expression) or a property access (``"property-get"``,
    ``"property-set"``, ``"property-del"``, positions of the attribute node). Positions are the node's
    ``lineno``, ``col_offset`` (UTF-8 bytes, as in :mod:`ast`), ``end_lineno`` and ``end_col_offset``."""

    caller: str
    file: str
    line: int
    col: int
    end_line: int
    end_col: int
    text: str
    callees: frozenset[str]
    resolved: bool
    kind: str = "call"


@dataclass(frozen=True)
class UnresolvedCall:
    """A call site whose callees are not (all) known, with the reason; ``site`` is its full record."""

    file: str
    line: int
    col: int
    text: str
    caller: str
    reason: str
    site: CallSite

    def __str__(self) -> str:
        """``file:line:col: caller: text -- reason``."""
        return f"{self.file}:{self.line}:{self.col}: in {self.caller}: {self.text} -- {self.reason}"


@dataclass(frozen=True)
class FunctionNode:
    """A call-graph node of the program: a module body, function, method or lambda (its first definition;
    ``other_lines`` are the lines of redefinitions merged under the same name)."""

    name: str
    kind: str  # "module" | "function" | "method" | "lambda"
    module: str
    file: str
    line: int
    col: int
    end_line: int
    end_col: int
    other_lines: tuple[int, ...] = ()


@dataclass
class CallGraph:
    """The result of :func:`build_call_graph`: program nodes, call sites, unresolved sites and problems."""

    functions: dict[str, FunctionNode]
    sites: list[CallSite]
    unresolved: list[UnresolvedCall]
    imports: dict[str, frozenset[str]]  # module -> program modules it imports (anywhere in its text)
    problems: list[ProblemReport]
    entry: str | None = None  # the entry module's name, if any
    # methods of program classes that override a method of a base class outside the program
    # (HTMLParser.reset, handle_starttag...): that base's code calls them, unseen by any site
    external_overrides: frozenset[str] = frozenset()
    _edges: dict[str, frozenset[str]] | None = field(default=None, repr=False)
    _by_position: dict[tuple[Any, ...], CallSite] | None = field(default=None, repr=False)

    def edges(self) -> dict[str, frozenset[str]]:
        """caller -> callees, over all call sites (callers without callees are left out)."""
        if self._edges is None:
            collected: dict[str, set[str]] = defaultdict(set)
            for site in self.sites:
                collected[site.caller].update(site.callees)
            self._edges = {k: frozenset(v) for k, v in collected.items() if v}
        return self._edges

    def callees(self, name: str) -> frozenset[str]:
        """What ``name`` calls."""
        return self.edges().get(name, frozenset())

    def callers(self, name: str) -> frozenset[str]:
        """Who calls ``name``."""
        return frozenset(caller for caller, called in self.edges().items() if name in called)

    def sites_of(self, caller: str) -> list[CallSite]:
        """The call sites inside ``caller``, in source order."""
        return [s for s in self.sites if s.caller == caller]

    def site_at(self, file: str, line: int, col: int, kind: str = "call", end_line: int | None = None,
                end_col: int | None = None) -> CallSite | None:
        """The site of ``kind`` at a node position (file relative to the program root); indexed on first use.

        The start alone is ambiguous for chained calls: in ``a.f().g()`` and ``f()()`` the outer and the
        inner ``ast.Call`` start at the same place. Give ``end_line``/``end_col`` (or use :meth:`site_for`)
        to pick exactly; without them the outermost call starting there is returned."""
        if self._by_position is None:
            self._by_position = {}
            for site in sorted(self.sites, key=lambda s: (s.end_line, s.end_col), reverse=True):
                self._by_position.setdefault((site.file, site.line, site.col, site.kind), site)
                self._by_position.setdefault((site.file, site.line, site.col, site.kind, site.end_line, site.end_col), site)
        if end_line is None or end_col is None:
            return self._by_position.get((file, line, col, kind))
        return self._by_position.get((file, line, col, kind, end_line, end_col))

    def site_for(self, file: str, node: ast.AST, kind: str = "call") -> CallSite | None:
        """The site of an ``ast`` node (an ``ast.Call`` for ``kind="call"``) of ``file``, by its full span."""
        return self.site_at(file, node.lineno, node.col_offset, kind, node.end_lineno, node.end_col_offset)

    def reachable(self, start: str) -> set[str]:
        """Every node reachable from ``start`` through call edges, ``start`` included."""
        edges, seen, todo = self.edges(), {start}, [start]
        while todo:
            for callee in edges.get(todo.pop(), ()):
                if callee not in seen:
                    seen.add(callee)
                    todo.append(callee)
        return seen

    def to_pycg(self) -> dict[str, list[str]]:
        """PyCG's format: every node of the program and every callee is a key; values are sorted lists."""
        graph: dict[str, set[str]] = {name: set() for name in self.functions}
        for caller, called in self.edges().items():
            graph.setdefault(caller, set()).update(called)
            for callee in called:
                graph.setdefault(callee, set())
        return {name: sorted(graph[name]) for name in sorted(graph)}

    def to_dot(self) -> str:
        """Graphviz text: program nodes as boxes, outside callees as grey ellipses."""
        lines = ["digraph callgraph {", "  rankdir=LR;", '  node [shape=box, fontname="Helvetica"];']
        graph = self.to_pycg()
        for name in graph:
            style = "" if name in self.functions else ' shape=ellipse, color=gray50, fontcolor=gray30'
            lines.append(f"  {_dot_id(name)} [label={_dot_id(name)}{',' if style else ''}{style}];")
        for caller, called in graph.items():
            lines.extend(f"  {_dot_id(caller)} -> {_dot_id(callee)};" for callee in called)
        lines.append("}")
        return "\n".join(lines) + "\n"


def _dot_id(name: str) -> str:
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


# ====================================================================== entry point
def build_call_graph(program: Program, entry: str | os.PathLike[str] | None = None,
                     also: Iterable[str] = ()) -> CallGraph:
    """Resolve the call sites of ``program`` (all modules, or those ``entry`` imports transitively).

    ``entry`` is a file of the program (relative to its root, or absolute) or a module name; ``also``:
    modules to analyse beside the entry's (with what they import), such as those profiling saw run
    although no import statement names them (Markdown's extensions, imported by a name built from the
    command line). Raises :class:`CallGraphError` if ``entry`` names nothing the program parsed."""
    entry_module = _entry_module(program, entry) if entry is not None else None
    with program.astroid_session():
        builder = _Builder(program)
        modules = _import_closure(program, entry_module) if entry_module else set(program.by_module)
        for extra in sorted(set(also) & set(program.by_module) - modules):
            if extra not in modules:
                modules |= _import_closure(program, extra)
        builder.run(modules)
        return builder.result(entry_module)


def _entry_module(program: Program, entry: str | os.PathLike[str]) -> str:
    found = program.file_for(entry)
    if found is not None:
        return found.modname
    if isinstance(entry, str) and entry in program.by_module:
        return entry
    broken = {p.path for p in program.problems}
    path = Path(entry)
    resolved = path.resolve() if path.is_absolute() else (program.root / path).resolve()
    rel = resolved.relative_to(program.root).as_posix() if resolved.is_relative_to(program.root) else path.as_posix()
    if rel in broken:
        raise CallGraphError(f"{entry}: the entry file could not be parsed (see the problems above)")
    raise CallGraphError(f"{entry}: not a Python file of the program under {program.root}")


# ====================================================================== imports (from ast, cheap)
def module_imports(program: Program, source: SourceFile) -> set[str]:
    """Program modules that ``source`` imports anywhere in its text (parent packages included, since
    importing ``a.b`` runs ``a/__init__.py``; ``from m import x`` also counts ``m.x`` when it is a module)."""
    package = source.modname if source.is_package else source.modname.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(source.tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                found.update(_with_parents(alias.name))
        elif isinstance(node, ast.ImportFrom):
            base = _absolute_from(package, node.module, node.level)
            if base is None:
                continue
            found.update(_with_parents(base))
            found.update(f"{base}.{alias.name}" if base else alias.name for alias in node.names)
    return {m for m in found if m in program.by_module and m != source.modname}


def _with_parents(dotted: str) -> list[str]:
    parts = dotted.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts) + 1)]


def _absolute_from(package: str, module: str | None, level: int) -> str | None:
    if level == 0:
        return module
    parts = package.split(".") if package else []
    if level - 1 > len(parts):
        return None
    base = parts[: len(parts) - (level - 1)]
    if module:
        base.append(module)
    return ".".join(base)


def _import_closure(program: Program, start: str) -> set[str]:
    seen, todo = {start, *(_with_parents(start)[:-1])}, [start]
    seen &= set(program.by_module)
    while todo:
        for imported in module_imports(program, program.by_module[todo.pop()]):
            if imported not in seen:
                seen.add(imported)
                todo.append(imported)
    return seen


# ====================================================================== internals
@dataclass
class _Inferred:
    """Values of an expression (astroid objects or :class:`_Raw`), whether some are unknown (with why),
    and whether they depend on parameter flow (then they may grow in a later round)."""

    values: tuple[Any, ...] = ()
    incomplete: bool = False
    reason: str = ""
    dynamic: bool = False


@dataclass(frozen=True)
class _Raw:
    """A function object before its decorators ran (what a decorator's parameter receives)."""

    node: Any


@dataclass(frozen=True)
class _External:
    """An attribute of an object from outside the program that astroid's model of it lacks (``re.Match.start``
    for instance): a callee outside the program, named by the class and the attribute."""

    name: str


@dataclass
class _Binding:
    """How one resolved call passes arguments to a program function."""

    call: Any | None  # astroid Call node, None if arguments unknown
    offset: int  # implicit leading arguments (self/cls)
    first: Any | None = None  # value of the first parameter when set (a decorator's function)


@dataclass(eq=False)
class _Site:
    kind: str
    node: Any
    caller: str
    source: SourceFile
    callees: set[str] = field(default_factory=set)
    incomplete: bool = False
    reason: str = ""
    dynamic: bool = True


@dataclass
class _Outcome:
    names: set[str] = field(default_factory=set)
    incomplete: bool = False
    reasons: list[str] = field(default_factory=list)
    dynamic: bool = False

    def merge(self, other: _Inferred) -> None:
        self.incomplete |= other.incomplete
        self.dynamic |= other.dynamic
        if other.reason:
            self.reasons.append(other.reason)


class _Builder:
    """Indexes modules, resolves sites in fixed-point rounds, then assembles the :class:`CallGraph`."""

    def __init__(self, program: Program) -> None:
        from astroid import bases, nodes, objects, util

        self.nodes, self.bases, self.util, self.objects = nodes, bases, util, objects
        self.program = program
        self.indexed: set[str] = set()
        self.pending_modules: list[str] = []
        self.names: dict[Any, str] = {}  # scope node -> call-graph name
        self.names_by_pos: dict[tuple[str, int, str], str] = {}  # (abs file, line, def name) -> name
        self.functions: dict[str, FunctionNode] = {}
        self.sites: list[_Site] = []
        self.classes: list[Any] = []
        self.property_names = _property_names(program)
        self.protocol_methods = _protocol_methods(program)  # the protocol dunders some program class defines
        self.incoming: dict[Any, dict[tuple[int, int, int], _Binding]] = defaultdict(dict)
        self.incoming_changed = False
        self._infer_cache: dict[Any, _Inferred] = {}
        self._round_cache: dict[Any, _Inferred] = {}
        self._busy: set[Any] = set()
        self._decorated_cache: dict[Any, list[Any]] = {}
        self._subclasses: dict[Any, list[Any]] | None = None
        self._program_files = {str(f.abs_path): f for f in program.files}

    # ------------------------------------------------------------------ driver
    def run(self, modules: Iterable[str]) -> None:
        """Index ``modules`` and resolve until neither the sites nor the parameter flow change."""
        for name in sorted(modules):
            self._want_module(name)
        todo = self._index_pending()
        for _ in range(MAX_ROUNDS):
            self.incoming_changed = False
            self._round_cache.clear()
            for site in todo:
                self._resolve(site)
            added = self._index_pending()
            if not self.incoming_changed and not added:
                break
            fresh = {id(s) for s in added}
            todo = [s for s in self.sites if s.dynamic and id(s) not in fresh] + added

    def _want_module(self, modname: str) -> None:
        if modname not in self.indexed and modname in self.program.by_module:
            self.indexed.add(modname)
            self.pending_modules.append(modname)

    def _index_pending(self) -> list[_Site]:
        new: list[_Site] = []
        while self.pending_modules:
            new.extend(self._index_module(self.pending_modules.pop(0)))
        self._subclasses = None if new else self._subclasses
        return new

    # ------------------------------------------------------------------ indexing
    def _index_module(self, modname: str) -> list[_Site]:
        """Name every scope of one module and collect its call, decorator and property sites."""
        nodes = self.nodes
        source = self.program.by_module[modname]
        module = self.program.astroid_module(modname)
        self._add_function(module, modname, "module", source)
        new: list[_Site] = []
        counters: dict[str, int] = defaultdict(int)
        # (node, owner: name of the scope its calls belong to, prefix: name that nested defs extend)
        stack: list[tuple[Any, str, str]] = [(c, modname, modname) for c in reversed(list(module.get_children()))]
        while stack:
            node, owner, prefix = stack.pop()
            if isinstance(node, nodes.Call):
                new.append(_Site("call", node, owner, source))
            elif isinstance(node, (nodes.Attribute, nodes.AssignAttr, nodes.DelAttr)) and node.attrname in self.property_names:
                new.extend(self._property_sites(node, owner, source))
            if isinstance(node, (nodes.For, nodes.Comprehension)) and "__iter__" in self.protocol_methods:
                new.append(_Site("protocol-iter", node.iter, owner, source))
            elif isinstance(node, nodes.Compare) and "__contains__" in self.protocol_methods and \
                    any(op in ("in", "not in") for op, _ in node.ops):
                new.append(_Site("protocol-contains", node, owner, source))
            elif isinstance(node, nodes.Call) and isinstance(node.func, nodes.Name) and len(node.args) == 1 and \
                    BUILTIN_PROTOCOLS.get(node.func.name) in self.protocol_methods:
                new.append(_Site("protocol-builtin", node, owner, source))
            elif isinstance(node, nodes.Subscript) and set(_subscript_dunders(node)) & self.protocol_methods:
                new.append(_Site("protocol-subscript", node, owner, source))
            if isinstance(node, nodes.Lambda) and not isinstance(node, nodes.FunctionDef):
                counters[prefix] += 1
                name = f"{prefix}.<lambda{counters[prefix]}>"
                self._add_function(node, name, "lambda", source)
                stack.extend((c, owner, prefix) for c in reversed(_outer_children(node)))
                stack.extend((c, name, name) for c in reversed(_inner_children(node)))
                continue
            if isinstance(node, nodes.FunctionDef):
                name = self._function_name(node, prefix)
                kind = "method" if isinstance(node.parent, nodes.ClassDef) else "function"
                self._add_function(node, name, kind, source)
                if node.decorators is not None:
                    new.extend(_Site("decorator", d, owner, source) for d in node.decorators.nodes)
                stack.extend((c, owner, prefix) for c in reversed(_outer_children(node)))
                stack.extend((c, name, name) for c in reversed(_inner_children(node)))
                continue
            if isinstance(node, nodes.ClassDef):
                name = f"{prefix}.{node.name}"
                self.names[node] = name
                self.classes.append(node)
                if node.decorators is not None:
                    new.extend(_Site("decorator", d, owner, source) for d in node.decorators.nodes)
                stack.extend((c, owner, prefix) for c in reversed(_outer_children(node)))
                stack.extend((c, owner, name) for c in reversed(node.body))
                continue
            stack.extend((c, owner, prefix) for c in reversed(list(node.get_children())))
        self.sites.extend(new)
        return new

    def _function_name(self, node: Any, prefix: str) -> str:
        for decorator in node.decorators.nodes if node.decorators else ():
            if isinstance(decorator, self.nodes.Attribute) and decorator.attrname in ("setter", "deleter"):
                return f"{prefix}.{node.name}.<{decorator.attrname}>"
        return f"{prefix}.{node.name}"

    def _add_function(self, node: Any, name: str, kind: str, source: SourceFile) -> None:
        self.names[node] = name
        if kind != "lambda" and kind != "module":
            self.names_by_pos.setdefault((str(source.abs_path), node.lineno, node.name), name)
        known = self.functions.get(name)
        if known is not None:
            if known.file == source.path and known.line != (node.lineno or 0):
                self.functions[name] = _replace_lines(known, node.lineno or 0)
            return
        self.functions[name] = FunctionNode(
            name, kind, source.modname, source.path, node.lineno or 0, node.col_offset or 0,
            node.end_lineno or 0, node.end_col_offset or 0)

    def _property_sites(self, node: Any, owner: str, source: SourceFile) -> list[_Site]:
        if isinstance(node, self.nodes.DelAttr):
            return [_Site("property-del", node, owner, source)]
        if isinstance(node, self.nodes.AssignAttr):
            kinds = ["property-get", "property-set"] if isinstance(node.parent, self.nodes.AugAssign) else ["property-set"]
            return [_Site(k, node, owner, source) for k in kinds]
        return [_Site("property-get", node, owner, source)]

    # ------------------------------------------------------------------ resolving sites
    def _resolve(self, site: _Site) -> None:
        try:
            if site.kind == "call":
                outcome = self._resolve_call(site.node)
            elif site.kind == "decorator":
                outcome = self._resolve_decorator(site.node)
            elif site.kind.startswith("protocol"):
                outcome = self._resolve_protocol(site.node, site.kind)
            else:
                outcome = self._resolve_property(site.node, site.kind)
        except RecursionError:
            outcome = _Outcome(incomplete=True, reasons=["analysis recursion too deep"])
        except Exception as exc:  # noqa: BLE001 - an astroid bug must not stop the analysis of the rest
            outcome = _Outcome(incomplete=True, reasons=[f"analysis failed ({type(exc).__name__}: {exc})"[:200]])
        site.callees = outcome.names
        site.incomplete = outcome.incomplete
        site.reason = "; ".join(dict.fromkeys(r for r in outcome.reasons if r))
        site.dynamic = outcome.dynamic

    def _resolve_call(self, call: Any) -> _Outcome:
        outcome = _Outcome()
        inferred = self.values(call.func)
        outcome.merge(inferred)
        external_only = bool(inferred.values)
        for value in inferred.values:
            names, reason, is_program = self._call_targets(value, call, offset=None)
            outcome.names |= names
            external_only &= not is_program
            if reason:
                outcome.incomplete = True
                outcome.reasons.append(reason)
        if not inferred.values and not outcome.reasons:
            outcome.reasons.append(self._why_unknown(call.func))
        if inferred.incomplete and not inferred.reason:
            outcome.reasons.append(self._why_unknown(call.func))
        if external_only:
            # the unknown part of a callee outside the program is outside too: a leaf either way
            outcome.incomplete = False
            outcome.reasons.clear()
            if not outcome.names <= _NOT_CALLING:
                self._passed_functions(call, outcome)
        return outcome

    def _passed_functions(self, call: Any, outcome: _Outcome) -> None:
        """Program functions passed to a callee outside the program are edges from the caller (PyCG)."""
        nodes = self.nodes
        arguments = list(call.args) + [k.value for k in call.keywords or ()]
        for arg in arguments:
            if not isinstance(arg, (nodes.Name, nodes.Attribute, nodes.Lambda, nodes.FunctionDef)):
                continue
            inferred = self.values(arg)
            outcome.dynamic |= inferred.dynamic
            for value in inferred.values:
                if isinstance(value, (self.bases.BoundMethod, self.bases.UnboundMethod, nodes.Lambda, nodes.FunctionDef, _Raw)):
                    names, _, is_program = self._call_targets(value, None, offset=None)
                    if is_program:
                        outcome.names |= names

    def _resolve_decorator(self, decorator: Any) -> _Outcome:
        """The decorator (or the result of ``@dec(...)``) is called with the decorated def."""
        outcome = _Outcome()
        if _is_accessor_decorator(decorator):
            return outcome  # @x.setter / @x.getter / @x.deleter build the property: no program call
        if isinstance(decorator, self.nodes.Call):
            factory = self.values(decorator.func)
            if factory.values and not factory.incomplete and not any(self._is_program(v) for v in factory.values):
                return outcome  # @outside(...): its call is a site of its own; what it returns is outside too
        inferred = self.values(decorator)
        outcome.merge(inferred)
        defined = decorator.parent.parent  # Decorators -> FunctionDef / ClassDef
        for value in inferred.values:
            if self._is_program(value):
                names, reason, _ = self._call_targets(value, None, offset=None, first=_Raw(defined))
                outcome.names |= names
                if reason:
                    outcome.incomplete = True
                    outcome.reasons.append(reason)
            elif not isinstance(decorator, self.nodes.Call) and not self._is_descriptor_decorator(value, decorator):
                outcome.names.add(self._external_name(value))
        if inferred.incomplete and not inferred.values:
            outcome.reasons.append(f"decorator {decorator.as_string()} is not inferable")
        return outcome

    def _is_descriptor_decorator(self, value: Any, decorator: Any) -> bool:
        if isinstance(decorator, self.nodes.Attribute) and decorator.attrname in _ACCESSORS:
            return True
        target = getattr(value, "_proxied", value)
        return _qname(target) in _SKIPPED_DECORATORS

    def _resolve_property(self, attribute: Any, kind: str) -> _Outcome:
        outcome = _Outcome()
        base = self.values(attribute.expr)
        outcome.dynamic = base.dynamic
        wanted = {"property-get": None, "property-set": "setter", "property-del": "deleter"}[kind]
        for value in base.values:
            cls = self._instance_class(value)
            if cls is None:
                continue
            accessor = self._property_accessor(cls, attribute.attrname, wanted)
            if accessor is not None:
                outcome.names.add(self._name_of(accessor))
                self._bind(accessor, _Binding(attribute if kind == "property-set" else None, 1))
        if base.incomplete or not base.values:  # no name fallback, but the accessors profiling saw run apply
            outcome.incomplete = True
            outcome.reasons.append(f"the object of .{attribute.attrname} ({kind}) is not inferable")
        return outcome

    def _resolve_protocol(self, node: Any, kind: str) -> _Outcome:
        """The program methods a protocol site runs: ``__iter__`` (and ``__next__``) of what a ``for``
        iterates, ``__contains__`` of what ``in`` looks into, ``__len__`` of ``len(x)``...; for ``for`` and
        ``in``, every program method of the name where the receiver's values are not all known (a
        container class iterated through parameters: sqlparse's token lists), and the site is unresolved
        (hybrid slicing replaces these by what profiling saw, where it saw the statement run). Not for the builtins, which
        programs call on their own lists and strings everywhere: by name, ``len(x)`` would tie every slice
        that measures a list to the one program class with a ``__len__`` (minisearch's index)."""
        outcome = _Outcome()
        if kind == "protocol-iter":
            dunders, receivers = ("__iter__", "__next__"), [node]
        elif kind == "protocol-builtin":
            dunders, receivers = (BUILTIN_PROTOCOLS[node.func.name],), [node.args[0]]
        elif kind == "protocol-subscript":
            dunders, receivers = _subscript_dunders(node), [node.value]
        else:
            dunders, receivers = ("__contains__",), [right for op, right in node.ops if op in ("in", "not in")]
        for receiver in receivers:
            inferred = self.values(receiver)
            outcome.dynamic |= inferred.dynamic
            for value in inferred.values:
                cls = self._instance_class(value)
                for dunder in dunders if cls is not None else ():
                    method = self._protocol_method(cls, dunder)
                    if method is not None:
                        outcome.names.add(self._name_of(method))
            if kind in ("protocol-iter", "protocol-contains") and (inferred.incomplete or not inferred.values):
                # by name, and unresolved: where profiling saw the statement run, what it saw replaces these
                outcome.names |= {name for name, function in self.functions.items()
                                  if function.kind == "method" and name.rsplit(".", 1)[-1] in dunders}
                outcome.incomplete = True
                outcome.reasons.append(f"the class of what {'for iterates' if kind == 'protocol-iter' else 'in looks into'}"
                                       " is not inferable: every program method of the name")
            elif kind == "protocol-builtin" and (inferred.incomplete or not inferred.values):
                # no name fallback (see above), but unresolved: the callees profiling saw it reach apply
                outcome.incomplete = True
                outcome.reasons.append(f"the argument of {node.func.name}() is not inferable")
            elif kind == "protocol-subscript" and (inferred.incomplete or not inferred.values):
                # no name fallback either: programs index their own lists and dicts everywhere
                outcome.incomplete = True
                outcome.reasons.append("the class of the object indexed is not inferable")
        return outcome

    def _protocol_method(self, cls: Any, dunder: str) -> Any | None:
        """The method ``dunder`` of instances of ``cls`` if the program defines it (first in the MRO)."""
        for klass in _mro(cls):
            defs = klass.locals.get(dunder)
            if not defs:
                continue
            method = defs[-1]
            return method if self._is_program(klass) and isinstance(method, self.nodes.FunctionDef) else None
        return None

    def _property_accessor(self, cls: Any, attrname: str, accessor: str | None) -> Any | None:
        for klass in _mro(cls):
            defs = klass.locals.get(attrname)
            if not defs:
                continue
            if not self._is_program(klass):
                return None
            for node in defs:
                if isinstance(node, self.nodes.FunctionDef) and _accessor_kind(node) == accessor:
                    return node
            return None
        return None

    # ------------------------------------------------------------------ callees of one value
    def _call_targets(self, value: Any, call: Any | None, offset: int | None, first: Any = None) -> tuple[set[str], str, bool]:
        """(callee names, reason if the value is not callable, whether a program callee) of calling
        ``value`` at ``call`` (astroid Call node, None when arguments are unknown)."""
        bases, nodes = self.bases, self.nodes
        if isinstance(value, _Raw):
            return self._function_targets(value.node, call, offset or 0, first, decorated=False)
        if isinstance(value, _External):
            return {value.name}, "", False
        if isinstance(value, bases.BoundMethod):
            return self._function_targets(value._proxied, call, 1 if offset is None else offset, first)
        if isinstance(value, bases.UnboundMethod):
            return self._function_targets(value._proxied, call, 0 if offset is None else offset, first)
        if isinstance(value, (nodes.Lambda, nodes.FunctionDef)):
            return self._function_targets(value, call, offset or 0, first)
        if isinstance(value, nodes.ClassDef):
            return self._constructor_targets(value, call, first)
        if isinstance(value, bases.Instance) and not isinstance(value, nodes.NodeNG):
            cls = value._proxied
            if _qname(cls) in _PARTIAL_CLASSES:
                return set(), "", False  # the wrapped function comes from the partial(...) call itself
            for klass in _mro(cls):
                for node in klass.locals.get("__call__", ()):
                    if isinstance(node, nodes.FunctionDef):
                        return self._function_targets(node, call, 1, first)
            return set(), f"instance of {_qname(cls) or '?'} is not callable", False
        return set(), f"{_describe(value)} is not callable", False

    def _function_targets(self, func: Any, call: Any | None, offset: int, first: Any, decorated: bool = True) -> tuple[set[str], str, bool]:
        if not self._is_program(func):
            return {self._external_name(func)}, "", False
        names: set[str] = set()
        for value in self._decorated(func) if decorated else [_Raw(func)]:
            if isinstance(value, _Raw):
                names.add(self._name_of(value.node))
                self._bind(value.node, _Binding(call, offset, first))
            else:
                more, _, _ = self._call_targets(value, call, offset if isinstance(value, (self.nodes.Lambda, self.nodes.FunctionDef)) else None, first)
                names |= more
        return names, "", True

    def _constructor_targets(self, cls: Any, call: Any | None, first: Any) -> tuple[set[str], str, bool]:
        if not self._is_program(cls):
            return {self._external_name(cls)}, "", False
        names: set[str] = set()
        for method in ("__new__", "__init__"):
            for klass in _mro(cls):
                defs = [d for d in klass.locals.get(method, ()) if isinstance(d, self.nodes.FunctionDef)]
                if not defs:
                    continue
                if self._is_program(klass):
                    for node in defs:
                        names.add(self._name_of(node))
                        self._bind(node, _Binding(call, 1, first))
                break
        return names, "", True

    def _decorated(self, func: Any) -> list[Any]:
        """What the name of a decorated program def holds: the values the decorators return (innermost
        first); ``_Raw(func)`` where a decorator returns the function itself or cannot be followed."""
        cached = self._decorated_cache.get(func)
        if cached is not None:
            return cached
        current: list[Any] = [_Raw(func)]
        self._decorated_cache[func] = current
        decorators = func.decorators.nodes if isinstance(func, self.nodes.FunctionDef) and func.decorators else []
        for decorator in reversed(decorators):
            if _is_accessor_decorator(decorator):
                continue
            applied: list[Any] = []
            for value in self._astroid_values(decorator).values:
                if self._is_program(value):
                    applied.extend(self._decorator_results(value) or current)
            if applied:
                current = _dedupe(applied)
        self._decorated_cache[func] = current
        return current

    def _decorator_results(self, decorator: Any) -> list[Any]:
        """Values a program decorator returns when called ([] when unknown: the function itself)."""
        nodes, bases = self.nodes, self.bases
        if isinstance(decorator, nodes.ClassDef):
            return [bases.Instance(decorator)]
        if isinstance(decorator, bases.Instance) and not isinstance(decorator, nodes.NodeNG):
            calls = [n for k in _mro(decorator._proxied) for n in k.locals.get("__call__", ())][:1]
            decorator = calls[0] if calls else None
        function = getattr(decorator, "_proxied", decorator)
        if not isinstance(function, (nodes.Lambda, nodes.FunctionDef)):
            return []
        results: list[Any] = []
        try:
            for value in function.infer_call_result(caller=None):
                if isinstance(value, (nodes.Lambda, nodes.FunctionDef, nodes.ClassDef)) or (
                        isinstance(value, bases.Instance) and not isinstance(value, nodes.NodeNG)):
                    results.append(value)
        except Exception:  # noqa: BLE001 - astroid raises many kinds; unknown means "the function itself"
            return []
        return results

    # ------------------------------------------------------------------ parameter flow
    def _bind(self, func: Any, binding: _Binding) -> None:
        first = binding.first.node if isinstance(binding.first, _Raw) else binding.first
        key = (id(binding.call), binding.offset, id(first))
        table = self.incoming[func]
        if key not in table:
            table[key] = binding
            self.incoming_changed = True

    def _param_values(self, func: Any, name: str) -> _Inferred:
        """Values of parameter ``name`` of a program function: the matching argument at each resolved
        call site, its default, and the annotated class's instances when these are not all known."""
        key = ("param", func, name)
        cached = self._round_cache.get(key)
        if cached is not None:
            return cached
        if key in self._busy:
            return _Inferred(incomplete=True, dynamic=True)
        self._busy.add(key)
        try:
            result = self._compute_param_values(func, name)
        finally:
            self._busy.discard(key)
        self._round_cache[key] = result
        return result

    def _compute_param_values(self, func: Any, name: str) -> _Inferred:
        args = func.args
        positional = [a.name for a in (args.posonlyargs or []) + (args.args or [])]
        collected: list[Any] = []
        incomplete = not self.incoming.get(func)
        for binding in list(self.incoming.get(func, {}).values()):
            if binding.first is not None and len(positional) > binding.offset and name == positional[binding.offset]:
                collected.append(binding.first)
                continue
            expr = _argument_for(binding, positional, name, args)
            if expr is None:
                incomplete |= binding.call is None or _has_star(binding.call)
                continue
            inferred = self.values(expr)
            collected.extend(inferred.values)
            incomplete |= inferred.incomplete
        default = _default_for(args, name)
        if default is not None:
            inferred = self.values(default)
            collected.extend(inferred.values)
        if incomplete:
            declared = self._declared_instances(args, name)
            if declared:
                collected.extend(declared)
                incomplete = False
        reason = "" if collected else f"parameter {name!r} of {self._name_of(func)} receives no resolvable value"
        return _Inferred(tuple(_dedupe(collected)), incomplete, reason if incomplete else "", True)

    def _declared_instances(self, args: Any, name: str) -> list[Any]:
        annotation = _annotation_for(args, name)
        return self._annotation_instances(annotation) if annotation is not None else []

    def _annotation_instances(self, annotation: Any) -> list[Any]:
        """Instances an annotation declares: a program class stands for itself and its subclasses, a class
        from outside for itself; ``X | Y``, ``Optional[X]``, ``Union[X, Y]`` and ``list[X]`` (-> list) understood."""
        instances: list[Any] = []
        for cls in self._annotation_classes(annotation):
            if self._is_program(cls):
                instances.extend(self.bases.Instance(c) for c in self._cone(cls))
            else:
                instances.append(self.bases.Instance(cls))
        return _dedupe(instances)

    def _annotation_classes(self, annotation: Any) -> list[Any]:
        nodes = self.nodes
        if isinstance(annotation, nodes.BinOp) and annotation.op == "|":
            return self._annotation_classes(annotation.left) + self._annotation_classes(annotation.right)
        if isinstance(annotation, nodes.Subscript):
            if annotation.value.as_string().rpartition(".")[2] in ("Optional", "Union"):
                inner = annotation.slice
                parts = inner.elts if isinstance(inner, nodes.Tuple) else [inner]
                return [c for part in parts for c in self._annotation_classes(part)]
            annotation = annotation.value
        if isinstance(annotation, nodes.Const):
            return []
        return [v for v in self._astroid_values(annotation).values
                if isinstance(v, nodes.ClassDef) and _qname(v) not in ("builtins.NoneType", "typing.Any")]

    # ------------------------------------------------------------------ values of expressions
    def values(self, expr: Any) -> _Inferred:
        """Values of an expression: astroid's, completed by the rules of the module docstring."""
        cached = self._round_cache.get(expr)
        if cached is not None:
            return cached
        if expr in self._busy:
            return _Inferred(incomplete=True, dynamic=True)
        self._busy.add(expr)
        try:
            result = self._compute_values(expr)
        finally:
            self._busy.discard(expr)
        self._round_cache[expr] = result
        return result

    def _compute_values(self, expr: Any) -> _Inferred:
        nodes = self.nodes
        if isinstance(expr, nodes.Name):
            receiver = self._receiver_class(expr)
            if receiver is not None:
                cls, is_cls = receiver
                cone = self._cone(cls)
                return _Inferred(tuple(cone if is_cls else (self.bases.Instance(c) for c in cone)))
        if isinstance(expr, nodes.Attribute) and isinstance(expr.expr, nodes.Name):
            receiver = self._receiver_class(expr.expr)
            if receiver is not None:
                return self._self_attribute(receiver[0], expr.attrname, on_class=receiver[1])
        inferred = self._astroid_values(expr)
        if _is_super_attribute(expr) and inferred.values:
            # astroid yields the attribute of every class of the MRO that has it; Python takes the first
            return _Inferred(inferred.values[:1], inferred.incomplete, inferred.reason)
        if not inferred.incomplete and inferred.values:
            return inferred
        fallback = self._fallback(expr)
        if fallback is None:
            return inferred
        if not fallback.values:
            return _Inferred(inferred.values, True, fallback.reason or inferred.reason, fallback.dynamic)
        combined = _dedupe(list(inferred.values) + list(fallback.values))
        return _Inferred(tuple(combined), fallback.incomplete, fallback.reason, fallback.dynamic)

    def _astroid_values(self, node: Any) -> _Inferred:
        """astroid's inference of ``node``, cached for the whole build."""
        cached = self._infer_cache.get(node)
        if cached is not None:
            return cached
        values, incomplete, reason = self._gather(node.infer, _inference_error, truncation_is_incomplete=True)
        result = _Inferred(tuple(_dedupe(values)), incomplete, reason)
        self._infer_cache[node] = result
        return result

    def _fallback(self, expr: Any) -> _Inferred | None:
        nodes = self.nodes
        if isinstance(expr, nodes.Name):
            return self._name_fallback(expr)
        if isinstance(expr, nodes.Attribute):
            return self._attribute_fallback(expr)
        if isinstance(expr, nodes.Subscript):
            return self._subscript_fallback(expr)
        if isinstance(expr, nodes.Call):
            return self._call_result_fallback(expr)
        return None

    def _name_fallback(self, name: Any) -> _Inferred | None:
        try:
            _, assignments = name.lookup(name.name)
        except Exception:  # noqa: BLE001
            return None
        parts = [self._assignment_values(a, name.name) for a in assignments]
        if not parts:
            return None
        return _merge(parts)

    def _assignment_values(self, assign: Any, name: str) -> _Inferred:
        nodes = self.nodes
        parent = assign.parent
        if isinstance(assign, nodes.AssignName) and isinstance(parent, nodes.Arguments):
            func = parent.parent
            if isinstance(func, (nodes.Lambda, nodes.FunctionDef)) and self._is_program(func):
                return self._param_values(func, assign.name)
        if isinstance(assign, nodes.AssignName) and isinstance(parent, (nodes.Assign, nodes.AnnAssign)) and parent.value is not None:
            if assign in (parent.targets if isinstance(parent, nodes.Assign) else [parent.target]):
                return self.values(parent.value)
        if isinstance(assign, (nodes.FunctionDef, nodes.ClassDef)):
            return _Inferred((assign,))
        if isinstance(assign, nodes.AssignName) and isinstance(parent, (nodes.For, nodes.Comprehension)) and parent.target is assign:
            return self._element_values(parent.iter, assign, name)
        return self._astroid_named_values(assign, name)

    def _element_values(self, iterable: Any, assign: Any, name: str) -> _Inferred:
        """Values a loop variable takes from iterating a list, tuple, set or dict literal."""
        nodes = self.nodes
        base = self.values(iterable)
        elements: list[Any] = []
        for value in base.values:
            if isinstance(value, (nodes.List, nodes.Tuple, nodes.Set)):
                elements.extend(e for e in value.elts if not isinstance(e, nodes.Starred))
            elif isinstance(value, nodes.Dict):
                elements.extend(k for k, _ in value.items)
        if not elements:
            found = self._astroid_named_values(assign, name)
            return _Inferred(found.values, found.incomplete, found.reason, base.dynamic)
        merged = _merge([self.values(e) for e in elements])
        merged.dynamic |= base.dynamic
        merged.incomplete |= base.incomplete
        return merged

    def _astroid_named_values(self, assign: Any, name: str) -> _Inferred:
        """astroid's values of the binding ``assign`` (an import, loop target...) of ``name``."""
        from astroid.context import InferenceContext

        key = ("named", assign, name)
        cached = self._infer_cache.get(key)
        if cached is not None:
            return cached
        context = InferenceContext()
        context.lookupname = name
        values, incomplete, _ = self._gather(lambda: assign.infer(context), lambda exc: "")
        result = _Inferred(tuple(_dedupe(values)), incomplete)
        self._infer_cache[key] = result
        return result

    def _attribute_fallback(self, attribute: Any) -> _Inferred:
        base = self.values(attribute.expr)
        receivers = [v for v in base.values if not _is_none(v)] or list(base.values)  # x.f() never runs on None
        base = _Inferred(tuple(receivers), base.incomplete, base.reason, base.dynamic)
        parts = [self._attribute_of(value, attribute.attrname) for value in base.values]
        merged = _merge(parts) if parts else _Inferred(incomplete=True)
        if not merged.values and base.values and not base.incomplete and not any(self._is_program(v) for v in base.values):
            outside = {self._outside_owner(v) for v in base.values}
            if "" not in outside:  # every receiver is outside the program: so is the attribute
                return _Inferred(tuple(_External(f"{o}.{attribute.attrname}") for o in sorted(outside)), False, "", base.dynamic)
        merged.dynamic |= base.dynamic
        merged.incomplete |= base.incomplete
        if not merged.values and not merged.reason:
            merged.reason = self._why_unknown(attribute)
        return merged

    def _attribute_of(self, value: Any, attrname: str) -> _Inferred:
        """Values of ``value.attrname`` (instance attributes assigned from parameters followed too)."""
        if isinstance(value, _Raw):
            value = value.node
        if isinstance(value, _External):
            return _Inferred((_External(f"{value.name}.{attrname}"),))
        cls = self._instance_class(value)
        key = ("attr", cls if cls is not None else value, attrname, cls is not None)
        cached = self._round_cache.get(key)
        if cached is not None:
            return cached
        if key in self._busy:
            return _Inferred(incomplete=True, dynamic=True)
        self._busy.add(key)
        try:
            result = self._compute_attribute(value, cls, attrname)
        finally:
            self._busy.discard(key)
        self._round_cache[key] = result
        return result

    def _gather(self, produce, on_error, truncation_is_incomplete: bool = False) -> tuple[list[Any], bool, str]:
        """Values an astroid inference iterator yields (at most MAX_VALUES), whether some were not
        inferable, and why; ``on_error(exc)`` words an inference failure."""
        values: list[Any] = []
        incomplete = False
        try:
            for value in produce():
                if isinstance(value, self.util.UninferableBase):
                    incomplete = True
                else:
                    values.append(value)
                if len(values) >= MAX_VALUES:
                    if truncation_is_incomplete:
                        return values, True, f"more than {MAX_VALUES} possible values"
                    break
        except RecursionError:
            return values, True, "inference recursion too deep"
        except Exception as exc:  # noqa: BLE001 - astroid's InferenceError and its own bugs alike
            return values, True, on_error(exc)
        return values, incomplete, ""

    def _compute_attribute(self, value: Any, cls: Any | None, attrname: str) -> _Inferred:
        values, incomplete, reason = self._gather(
            lambda: value.igetattr(attrname),
            lambda exc: f"no attribute {attrname!r} on {_describe(value)}" if "InferenceError" in type(exc).__name__ else _inference_error(exc),
        )
        result = _Inferred(tuple(_dedupe(values)), incomplete, reason)
        if (incomplete or not values) and cls is not None and self._is_program(cls):
            assigned = [self.values(expr) for expr in self._instance_assignments(cls, attrname)]
            if assigned:
                more = _merge(assigned)
                result = _Inferred(tuple(_dedupe(values + list(more.values))), more.incomplete,
                                   more.reason, more.dynamic)
        return result

    def _instance_assignments(self, cls: Any, attrname: str) -> list[Any]:
        exprs: list[Any] = []
        for klass in _mro(cls):
            if not self._is_program(klass):
                continue
            for assign in klass.instance_attrs.get(attrname, ()):
                parent = assign.parent
                if isinstance(parent, self.nodes.Assign) and assign in parent.targets:
                    exprs.append(parent.value)
                elif isinstance(parent, self.nodes.AnnAssign) and parent.value is not None:
                    exprs.append(parent.value)
        return exprs

    def _outside_owner(self, value: Any) -> str:
        """Dotted name of an outside module, class or instance's class ("" for anything else)."""
        if isinstance(value, _External):
            return value.name
        if isinstance(value, (self.nodes.Module, self.nodes.ClassDef)):
            return self._external_name(value)
        cls = self._instance_class(value)
        return self._external_name(cls) if cls is not None else ""

    def _self_attribute(self, cls: Any, attrname: str, on_class: bool = False) -> _Inferred:
        """``self.attr`` (``cls.attr`` when ``on_class``) in a method of ``cls``: the attribute on ``cls`` and on
        every subclass of the program that defines or assigns it itself (dynamic dispatch)."""
        classes = [cls] + [c for c in self._cone(cls)[1:] if attrname in c.locals or attrname in c.instance_attrs]
        parts = [self._attribute_of(c if on_class else self.bases.Instance(c), attrname) for c in classes]
        merged = _merge(parts)
        if not merged.values and merged.incomplete and not merged.reason:
            merged.reason = f"attribute {attrname!r} of {self._name_of(cls)} instances is not inferable"
        return merged

    def _subscript_fallback(self, subscript: Any) -> _Inferred | None:
        nodes = self.nodes
        base = self.values(subscript.value)
        elements: list[Any] = []
        for value in base.values:
            if isinstance(value, nodes.Dict):
                elements.extend(v for _, v in value.items)
            elif isinstance(value, (nodes.List, nodes.Tuple, nodes.Set)):
                elements.extend(value.elts)
        if not elements:
            return _Inferred(incomplete=True, reason=f"element of {subscript.value.as_string()} is not inferable", dynamic=base.dynamic)
        merged = _merge([self.values(e) for e in elements if not isinstance(e, nodes.Starred)])
        merged.dynamic |= base.dynamic
        return merged

    def _call_result_fallback(self, call: Any) -> _Inferred | None:
        """Result of a call astroid could not infer: ``functools.partial(f, ...)`` is f; a program
        function's result is what its ``return`` statements give; a program class gives an instance."""
        nodes = self.nodes
        callee = self.values(call.func)
        parts: list[_Inferred] = []
        for value in callee.values:
            target = getattr(value, "_proxied", value) if isinstance(value, (self.bases.BoundMethod, self.bases.UnboundMethod)) else value
            if isinstance(target, _Raw):
                target = target.node
            if isinstance(target, nodes.ClassDef) and _qname(target) in _PARTIAL_CLASSES and call.args:
                parts.append(self.values(call.args[0]))
            elif isinstance(target, nodes.ClassDef) and self._is_program(target):
                parts.append(_Inferred((self.bases.Instance(target),)))
            elif isinstance(target, nodes.FunctionDef) and self._is_program(target):
                returns = _merge([self.values(r.value) for r in _returns(target) if r.value is not None])
                if (returns.incomplete or not returns.values) and target.returns is not None:
                    declared = self._annotation_instances(target.returns)
                    if declared:
                        returns = _Inferred(tuple(_dedupe([*returns.values, *declared])), False, "", returns.dynamic)
                parts.append(returns)
            elif isinstance(target, nodes.Lambda) and self._is_program(target):
                parts.append(self.values(target.body))
        if not parts:
            return _Inferred(incomplete=True, reason=self._why_unknown(call), dynamic=callee.dynamic)
        merged = _merge(parts)
        merged.dynamic |= callee.dynamic
        return merged

    # ------------------------------------------------------------------ class hierarchy
    def _receiver_class(self, name: Any) -> tuple[Any, bool] | None:
        """(class K, is_cls) when ``name`` is the first parameter of a method (or class method) of a
        program class K -- ``self`` / ``cls`` -- possibly seen from a nested function."""
        try:
            _, assignments = name.lookup(name.name)
        except Exception:  # noqa: BLE001
            return None
        if len(assignments) != 1 or not isinstance(assignments[0].parent, self.nodes.Arguments):
            return None
        arguments = assignments[0].parent
        func = arguments.parent
        if not isinstance(func, self.nodes.FunctionDef) or not isinstance(func.parent, self.nodes.ClassDef):
            return None
        positional = (arguments.posonlyargs or []) + (arguments.args or [])
        if not positional or positional[0] is not assignments[0] or func.type == "staticmethod":
            return None
        if not self._is_program(func.parent):
            return None
        return func.parent, func.type == "classmethod"

    def _cone(self, cls: Any) -> list[Any]:
        """``cls`` and every program class derived from it, ``cls`` first."""
        if self._subclasses is None:
            self._subclasses = defaultdict(list)
            for klass in self.classes:
                try:
                    parents = list(klass.ancestors(recurs=False))
                except Exception:  # noqa: BLE001
                    parents = []
                for parent in parents:
                    self._subclasses[parent].append(klass)
        seen, order, todo = {cls}, [cls], [cls]
        while todo:
            for child in self._subclasses.get(todo.pop(), ()):
                if child not in seen:
                    seen.add(child)
                    order.append(child)
                    todo.append(child)
        return order

    def _instance_class(self, value: Any) -> Any | None:
        """The class of an instance value (not of a literal or a generator), else None."""
        if isinstance(value, self.bases.Instance) and not isinstance(value, (self.nodes.NodeNG, self.bases.Generator)):
            proxied = getattr(value, "_proxied", None)
            if isinstance(proxied, self.nodes.ClassDef):
                return proxied
        return None

    # ------------------------------------------------------------------ naming
    def _is_program(self, value: Any) -> bool:
        node = value.node if isinstance(value, _Raw) else getattr(value, "_proxied", value) if isinstance(value, self.bases.Proxy) else value
        try:
            root = node.root()
        except Exception:  # noqa: BLE001
            return False
        source = self._program_files.get(getattr(root, "file", None) or "")
        if source is None:
            return False
        self._want_module(source.modname)
        return True

    def _name_of(self, node: Any) -> str:
        name = self.names.get(node)
        if name is not None:
            return name
        root = node.root()
        source = self._program_files.get(getattr(root, "file", None) or "")
        if source is not None:
            found = self.names_by_pos.get((str(source.abs_path), node.lineno, getattr(node, "name", "")))
            if found is not None:
                return found
            qname = node.qname()
            return source.modname + qname[len(root.name):] if qname.startswith(root.name) else qname
        return self._external_name(node)

    def _external_name(self, value: Any) -> str:
        target = getattr(value, "_proxied", value) if isinstance(value, (self.bases.Proxy,)) else value
        name = _qname(target) or type(target).__name__
        return BUILTIN_PREFIX + name[len("builtins."):] if name.startswith("builtins.") else name

    def _why_unknown(self, expr: Any) -> str:
        nodes = self.nodes
        if isinstance(expr, nodes.Call):
            func = expr.func
            if isinstance(func, nodes.Name) and func.name in ("getattr", "eval", "exec", "__import__"):
                return f"{func.name}() with arguments that cannot be evaluated statically"
            return f"result of {expr.as_string()[:60]} is not inferable"
        if isinstance(expr, nodes.Name):
            return f"{expr.name!r} is not inferable"
        if isinstance(expr, nodes.Attribute):
            return f"attribute {expr.attrname!r} of {expr.expr.as_string()[:60]} is not inferable"
        if isinstance(expr, nodes.Subscript):
            return f"element of {expr.value.as_string()[:60]} is not inferable"
        return f"callee {expr.as_string()[:60]} is not inferable"

    # ------------------------------------------------------------------ result
    def result(self, entry: str | None) -> CallGraph:
        """Assemble the public :class:`CallGraph`."""
        sites: list[CallSite] = []
        unresolved: list[UnresolvedCall] = []
        for site in sorted(self.sites, key=_site_order):
            record = self._record(site)
            if record is None:
                continue
            sites.append(record)
            if not record.resolved:
                unresolved.append(UnresolvedCall(record.file, record.line, record.col, record.text, record.caller,
                                                 _reason(site), record))
        modules = {n.module for n in self.functions.values()}
        imports = {m: frozenset(module_imports(self.program, self.program.by_module[m])) for m in sorted(modules)}
        return CallGraph(dict(sorted(self.functions.items())), sites, unresolved, imports, list(self.program.problems), entry,
                         external_overrides=self._external_overrides())

    def _external_overrides(self) -> frozenset[str]:
        """Names of program methods that a class outside the program also defines, above theirs in the MRO
        (``object``'s own methods aside: they are dunders, which the slicer treats as implicit anyway), and
        every method of a class with a base astroid cannot infer anywhere in its MRO (Markdown's
        ``HTMLExtractor(htmlparser.HTMLParser)``, a copy of the standard library's module made with
        importlib): that base may call any of them."""
        found: set[str] = set()
        for cls in self.classes:
            mro = _mro(cls)
            unknown = any(self._unknown_base(klass) for klass in mro if self._is_program(klass))
            outside: set[str] = set()
            for base in mro[1:]:
                if not self._is_program(base) and _qname(base) != "builtins.object":
                    outside |= set(base.locals)
            for name, defs in cls.locals.items():
                if unknown or name in outside:
                    found |= {self.names[d] for d in defs if isinstance(d, self.nodes.FunctionDef) and d in self.names}
        return frozenset(found)

    def _unknown_base(self, cls: Any) -> bool:
        """Whether some base expression of ``cls`` has no inferable class."""
        for base in cls.bases:
            try:
                values = [v for v in base.infer() if not isinstance(v, self.util.UninferableBase)]
            except Exception:  # noqa: BLE001 - inference errors: unknown
                return True
            if not any(isinstance(v, self.nodes.ClassDef) for v in values):
                return True
        return False

    def _record(self, site: _Site) -> CallSite | None:
        if site.kind.startswith(("property", "protocol")) and not site.callees:
            if not (site.incomplete and (site.kind.startswith("property") or site.kind in NO_FALLBACK_PROTOCOLS)):
                return None  # an unresolved one is kept: what profiling saw it run applies (hybrid slicing)
        if site.kind == "decorator" and not site.callees and not site.incomplete:
            return None
        node = site.node
        resolved = not site.incomplete and (bool(site.callees) or not site.reason)
        return CallSite(site.caller, site.source.path, node.lineno or 0, node.col_offset or 0, node.end_lineno or 0,
                        node.end_col_offset or 0, _source_text(site.source, node), frozenset(site.callees), resolved, site.kind)


# ====================================================================== helpers
def _site_order(site: _Site) -> tuple[str, int, int, str]:
    return (site.source.path, site.node.lineno or 0, site.node.col_offset or 0, site.kind)


def _reason(site: _Site) -> str:
    reason = site.reason or "callee is not inferable"
    return f"partly resolved: {reason}" if site.callees else reason


def _merge(parts: list[_Inferred]) -> _Inferred:
    values: list[Any] = []
    for part in parts:
        values.extend(part.values)
    reasons = [p.reason for p in parts if p.reason and p.incomplete]
    return _Inferred(tuple(_dedupe(values)), any(p.incomplete for p in parts), reasons[0] if reasons else "",
                     any(p.dynamic for p in parts))


def _dedupe(values: Iterable[Any]) -> list[Any]:
    seen: dict[Any, Any] = {}
    for value in values:
        key = _value_key(value)
        if key not in seen:
            seen[key] = value
        if len(seen) >= MAX_VALUES:
            break
    return list(seen.values())


def _value_key(value: Any) -> Any:
    from astroid import bases, nodes

    if isinstance(value, _Raw):
        return ("raw", id(value.node))
    if isinstance(value, _External):
        return ("external", value.name)
    if isinstance(value, nodes.NodeNG):
        return ("node", id(value))
    if isinstance(value, bases.BoundMethod):
        bound = getattr(value.bound, "_proxied", value.bound)
        return ("bound", id(value._proxied), id(bound))
    if isinstance(value, bases.UnboundMethod):
        return ("unbound", id(value._proxied))
    if type(value) is bases.Instance:
        return ("instance", id(value._proxied))
    return ("other", id(value))


def _is_none(value: Any) -> bool:
    from astroid import nodes

    return isinstance(value, nodes.Const) and value.value is None


def _is_accessor_decorator(decorator: Any) -> bool:
    from astroid import nodes

    return isinstance(decorator, nodes.Attribute) and decorator.attrname in _ACCESSORS


def _is_super_attribute(expr: Any) -> bool:
    """``super().name`` / ``super(C, self).name``."""
    from astroid import nodes

    return (isinstance(expr, nodes.Attribute) and isinstance(expr.expr, nodes.Call)
            and isinstance(expr.expr.func, nodes.Name) and expr.expr.func.name == "super")


def _qname(node: Any) -> str:
    try:
        return node.qname()
    except Exception:  # noqa: BLE001
        return ""


def _describe(value: Any) -> str:
    name = _qname(getattr(value, "_proxied", value))
    return f"{type(value).__name__} {name}".strip()


def _inference_error(exc: Exception) -> str:
    kind = type(exc).__name__
    if kind == "NameInferenceError":
        return f"name {getattr(exc, 'name', '?')!r} is not defined"
    if kind == "AttributeInferenceError":
        return f"no attribute {getattr(exc, 'attribute', '?')!r}"
    if kind == "InferenceError":
        return "not inferable"
    return f"astroid failed ({kind})"


def _mro(cls: Any) -> list[Any]:
    try:
        return list(cls.mro())
    except Exception:  # noqa: BLE001 - inconsistent or uninferable bases: fall back to the ancestors
        try:
            return [cls, *cls.ancestors()]
        except Exception:  # noqa: BLE001
            return [cls]


def _accessor_kind(func: Any) -> str | None | bool:
    """None for a property getter, "setter"/"deleter" for accessors, False for anything else."""
    from astroid import nodes

    for decorator in func.decorators.nodes if func.decorators else ():
        if isinstance(decorator, nodes.Attribute) and decorator.attrname in _ACCESSORS:
            return None if decorator.attrname == "getter" else decorator.attrname
        name = decorator.attrname if isinstance(decorator, nodes.Attribute) else getattr(decorator, "name", "")
        if name in _PROPERTY_DECORATORS:
            return None
    return False


BUILTIN_PROTOCOLS = {"len": "__len__", "iter": "__iter__", "next": "__next__", "str": "__str__", "repr": "__repr__"}
PROTOCOL_DUNDERS = ("__iter__", "__next__", "__contains__", "__len__", "__str__", "__repr__", "__getitem__",
                    "__setitem__", "__delitem__")
NO_FALLBACK_PROTOCOLS = ("protocol-builtin", "protocol-subscript")  # unresolved: no program method by name


def _subscript_dunders(node: Any) -> tuple[str, ...]:
    """The methods ``x[i]`` calls on ``x``: ``__getitem__`` when read, ``__setitem__`` when assigned (both
    for ``x[i] += 1``), ``__delitem__`` in ``del x[i]``."""
    from astroid import nodes
    from astroid.const import Context

    if node.ctx == Context.Del:
        return ("__delitem__",)
    if node.ctx == Context.Store:
        return ("__getitem__", "__setitem__") if isinstance(node.parent, nodes.AugAssign) else ("__setitem__",)
    return ("__getitem__",)


def _protocol_methods(program: Program) -> set[str]:
    """The protocol methods the language calls itself (:data:`PROTOCOL_DUNDERS`) that some class of the
    program defines (from the ``ast``, syntactically)."""
    found: set[str] = set()
    for source in program.files:
        for node in ast.walk(source.tree):
            if isinstance(node, ast.ClassDef):
                found |= {item.name for item in node.body
                          if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name in PROTOCOL_DUNDERS}
    return found


def _property_names(program: Program) -> set[str]:
    """Names of properties defined anywhere in the program (from the ``ast``, syntactically)."""
    names: set[str] = set()
    for source in program.files:
        for node in ast.walk(source.tree):
            if not isinstance(node, ast.ClassDef):
                continue
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(_is_property_decorator(d) for d in item.decorator_list):
                    names.add(item.name)
    return names


def _is_property_decorator(node: ast.expr) -> bool:
    if isinstance(node, ast.Name):
        return node.id in _PROPERTY_DECORATORS
    if isinstance(node, ast.Attribute):
        return node.attr in _PROPERTY_DECORATORS or node.attr in _ACCESSORS
    return False


def _outer_children(node: Any) -> list[Any]:
    """Parts of a def / lambda / class evaluated in the enclosing scope (decorators, defaults, annotations, bases)."""
    from astroid import nodes

    parts: list[Any] = []
    if isinstance(node, (nodes.FunctionDef, nodes.ClassDef)) and node.decorators is not None:
        parts.append(node.decorators)
    if isinstance(node, (nodes.Lambda, nodes.FunctionDef)):
        parts.append(node.args)
        if isinstance(node, nodes.FunctionDef) and node.returns is not None:
            parts.append(node.returns)
    if isinstance(node, nodes.ClassDef):
        parts.extend(node.bases)
        parts.extend(node.keywords or ())
    return parts


def _inner_children(node: Any) -> list[Any]:
    """Parts of a def / lambda run when it is called."""
    from astroid import nodes

    if isinstance(node, nodes.FunctionDef):
        return list(node.body)
    return [node.body]


def _returns(func: Any) -> Iterator[Any]:
    """``return`` statements of ``func`` itself (not of nested defs)."""
    from astroid import nodes

    stack = list(func.body)
    while stack:
        node = stack.pop()
        if isinstance(node, nodes.Return):
            yield node
        elif not isinstance(node, (nodes.FunctionDef, nodes.ClassDef, nodes.Lambda)):
            stack.extend(node.get_children())


def _argument_for(binding: _Binding, positional: list[str], name: str, args: Any) -> Any | None:
    call = binding.call
    from astroid import nodes

    if isinstance(call, nodes.AssignAttr):  # property setter: the assigned value is the first argument
        parent = call.parent
        index = positional.index(name) - binding.offset if name in positional else -1
        if index == 0 and isinstance(parent, nodes.Assign) and call in parent.targets:
            return parent.value
        return None
    if call is None or not isinstance(call, nodes.Call):
        return None
    for keyword in call.keywords or ():
        if keyword.arg == name:
            return keyword.value
    if name in positional:
        index = positional.index(name) - binding.offset
        if 0 <= index < len(call.args) and not any(isinstance(a, nodes.Starred) for a in call.args[: index + 1]):
            return call.args[index]
    return None


def _has_star(call: Any) -> bool:
    from astroid import nodes

    return isinstance(call, nodes.Call) and (any(isinstance(a, nodes.Starred) for a in call.args)
                                             or any(k.arg is None for k in call.keywords or ()))


def _default_for(args: Any, name: str) -> Any | None:
    positional = (args.posonlyargs or []) + (args.args or [])
    defaults = args.defaults or []
    offset = len(positional) - len(defaults)
    for index, arg in enumerate(positional):
        if arg.name == name:
            return defaults[index - offset] if index >= offset else None
    for index, arg in enumerate(args.kwonlyargs or []):
        if arg.name == name:
            return (args.kw_defaults or [None] * (index + 1))[index]
    return None


def _annotation_for(args: Any, name: str) -> Any | None:
    for params, hints in (((args.posonlyargs or []), args.posonlyargs_annotations or []),
                          ((args.args or []), args.annotations or []),
                          ((args.kwonlyargs or []), args.kwonlyargs_annotations or [])):
        for index, arg in enumerate(params):
            if arg.name == name and index < len(hints):
                return hints[index]
    return None


def _replace_lines(known: FunctionNode, line: int) -> FunctionNode:
    from dataclasses import replace

    return replace(known, other_lines=tuple(sorted({*known.other_lines, line})))


def _source_text(source: SourceFile, node: Any) -> str:
    """The node's source text (positions in UTF-8 bytes, as in ast), cut to TEXT_LIMIT characters."""
    line = node.lineno or 1
    return source.segment(line, node.col_offset or 0, node.end_lineno or line, node.end_col_offset, TEXT_LIMIT)
