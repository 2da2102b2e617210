"""Measuring chosen functions without a profile hook: probes added to their code as modules are imported.

``sys.setprofile`` calls its hook for every call of every function, chosen or not, which makes a run
several times slower, and even ``sys.monitoring`` costs a Python callback per call. Instead, the source
of the program's modules (its own files and installed packages; not the standard library) is parsed as
it is imported, and every ``def`` whose ``FILE:QUALNAME`` matches a pattern is *probed*: its body starts
by asking its gate (a C-level iterator, :mod:`.call_sampling`) whether this call is measured, which also
counts it; a measured call runs the body in a ``try`` whose ``finally`` ends the measurement, any other
runs a copy of the body as it was. A call that is not measured costs about 10 ns; no frame is added, so
tracebacks and frame-reading code see the function as it was (its ``global`` and ``nonlocal`` statements
move to its top, which changes nothing they mean). A generator function gets a measuring decorator
instead (``@__mantis_function_counters__.measured(NAME, INDEX)``), which leaves its suspensions out of
its call.
Only modules whose file a pattern may name are parsed (the others load from their bytecode cache). The
script itself is transformed the same way before it runs. Line numbers are unchanged.

Not probed: ``async def`` functions and lambdas; functions of modules loaded from bytecode only, from zip
files or by loaders other than the source loader; code run by ``exec`` of a string.
"""

from __future__ import annotations

import ast
import builtins
import copy
import fnmatch
import importlib.machinery
import os
import sys
import types
from collections.abc import Callable

from . import call_sampling

HOOK_NAME = "__mantis_function_counters__"
"""The builtin name the added decorators reach the profiler through."""
START_NAME = "__mantis_fc_start__"
"""The builtin ``start(index) -> token`` a probe calls when its call is measured."""
STOP_NAME = "__mantis_fc_stop__"
"""The builtin ``stop(token)`` a measured call's ``finally`` calls."""
_TOKEN = "_mantis_measured_call_"


class Choice:
    """What the rewriting asks the profiler: whether ``FILE:QUALNAME`` is chosen, and its index."""

    __slots__ = ("matches", "index")

    def __init__(self, matches: Callable[[str], bool], index: Callable[[str], int]) -> None:
        self.matches, self.index = matches, index


def _load(name: str) -> ast.Name:
    return ast.Name(id=name, ctx=ast.Load())


def _probed_body(index: int, body: list[ast.stmt]) -> ast.If:
    """``body`` behind its probe: ``if NEXT(GATE_i):`` the measured body (``TOKEN = START(i)``, then
    ``body`` in a ``try`` whose ``finally`` calls ``STOP(TOKEN)``), ``else:`` a copy of ``body`` as it was
    (a call that is not measured pays one global load and one C-level ``next``)."""
    gate = ast.Call(func=_load(call_sampling.NEXT_KEY), args=[_load(call_sampling.GATE_KEY.format(index))],
                    keywords=[])
    start = ast.Assign(targets=[ast.Name(id=_TOKEN, ctx=ast.Store())],
                       value=ast.Call(func=_load(START_NAME), args=[ast.Constant(value=index)], keywords=[]))
    stop = ast.Expr(value=ast.Call(func=_load(STOP_NAME), args=[_load(_TOKEN)], keywords=[]))
    measured = [start, ast.Try(body=body, handlers=[], orelse=[], finalbody=[stop])]
    return ast.If(test=gate, body=measured, orelse=copy.deepcopy(body))


class _HoistDeclarations(ast.NodeTransformer):
    """Takes a function's own ``global`` and ``nonlocal`` statements out of its body (a ``pass`` in their
    place), so that the body can be copied: a declaration must come before the names' uses, and applies
    to the whole function wherever it stands."""

    def __init__(self) -> None:
        self.globals: list[str] = []
        self.nonlocals: list[str] = []

    def visit_Global(self, node: ast.Global) -> ast.AST:
        self.globals += [n for n in node.names if n not in self.globals]
        return ast.copy_location(ast.Pass(), node)

    def visit_Nonlocal(self, node: ast.Nonlocal) -> ast.AST:
        self.nonlocals += [n for n in node.names if n not in self.nonlocals]
        return ast.copy_location(ast.Pass(), node)

    def _own_scope_ends(self, node: ast.AST) -> ast.AST:
        return node

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = visit_ClassDef = _own_scope_ends

    def declarations(self) -> list[ast.stmt]:
        """The hoisted declarations, one statement of each kind."""
        return [*([ast.Global(names=self.globals)] if self.globals else []),
                *([ast.Nonlocal(names=self.nonlocals)] if self.nonlocals else [])]


def _is_generator(node: ast.FunctionDef) -> bool:
    """Whether ``node``'s own body yields (not a nested function's, lambda's or class's)."""
    pending: list[ast.AST] = [*node.body]
    while pending:
        current = pending.pop()
        if isinstance(current, (ast.Yield, ast.YieldFrom)):
            return True
        if not isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            pending.extend(ast.iter_child_nodes(current))
    return False


class _Probe(ast.NodeTransformer):
    """Probes every ``def`` whose ``FILE:QUALNAME`` is chosen: a plain function's body goes behind its gate
    (:func:`_probed_body`: a measured copy in a ``try``/``finally``, the body as it was otherwise); a
    generator function gets the measuring decorator instead (its suspensions are left out of its call)."""

    def __init__(self, file: str, choice: Choice) -> None:
        self.file, self.choice = file, choice
        self.scope: list[str] = []
        self.probed = 0

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.AST:
        self.scope.append(node.name)
        self.generic_visit(node)
        self.scope.pop()
        return node

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        name = f"{self.file}:{'.'.join([*self.scope, node.name])}"
        self.scope += [node.name, "<locals>"]
        self.generic_visit(node)
        del self.scope[-2:]
        if not self.choice.matches(name):
            return node
        index = self.choice.index(name)
        if _is_generator(node):
            hook = ast.Attribute(value=_load(HOOK_NAME), attr="measured", ctx=ast.Load())
            decorator = ast.Call(func=hook, args=[ast.Constant(value=name), ast.Constant(value=index)], keywords=[])
            node.decorator_list.append(ast.copy_location(decorator, node))
        else:
            keep = 1 if ast.get_docstring(node, clean=False) is not None else 0
            hoist = _HoistDeclarations()
            body = [hoist.visit(statement) for statement in node.body[keep:]] or [ast.Pass()]
            probed = _probed_body(index, body)
            declarations = hoist.declarations()
            for statement in [*declarations, probed]:
                ast.copy_location(statement, body[0])
            node.body = [*node.body[:keep], *declarations, probed]
        ast.fix_missing_locations(node)
        self.probed += 1
        return node

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> ast.AST:
        self.scope += [node.name, "<locals>"]
        self.generic_visit(node)
        del self.scope[-2:]
        return node


def probed_code(source: bytes | str, path: str, file: str, choice: Choice) -> types.CodeType:
    """``source`` compiled with the chosen functions probed (``file`` is how patterns name the file)."""
    tree = ast.parse(source, filename=path)
    _Probe(file, choice).visit(tree)
    return compile(tree, path, "exec", dont_inherit=True)


class _Loader(importlib.machinery.SourceFileLoader):
    """A source loader whose code has the chosen functions probed (the bytecode cache is not used)."""

    naming: Callable[[str], str]
    choice: Choice

    def get_code(self, fullname: str) -> types.CodeType:
        path = self.get_filename(fullname)
        return probed_code(self.get_data(path), path, type(self).naming(path), type(self).choice)


class _Finder:
    """Finds modules as the path finder does and loads the chosen ones' sources through :class:`_Loader`."""

    def __init__(self, loader: type[_Loader], skip: tuple[str, ...], file_may_match: Callable[[str], bool]) -> None:
        self.loader, self.skip, self.file_may_match = loader, skip, file_may_match

    def find_spec(self, fullname, path, target=None):
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is None or type(spec.loader) is not importlib.machinery.SourceFileLoader or not spec.origin:
            return spec
        path = os.path.realpath(spec.origin)
        if path.startswith(self.skip) or not self.file_may_match(self.loader.naming(path)):
            return spec  # (loaded as usual, from its bytecode cache)
        spec.loader = self.loader(fullname, spec.origin)
        return spec


class ProbeHooks:
    """What probed code reaches through builtins: the decorator factory for generator functions, the start
    and stop of a measured call, and the sampler whose per-function counters and due numbers it reads."""

    __slots__ = ("measured", "start", "stop", "sampler")

    def __init__(self, measured: Callable[[str, int], Callable], start: Callable[[int], object],
                 stop: Callable[[object], None], sampler: call_sampling.CallSampler) -> None:
        self.measured, self.start, self.stop, self.sampler = measured, start, stop, sampler

    def publish(self) -> None:
        """Make the hooks reachable from probed code."""
        for name, value in ((HOOK_NAME, types.SimpleNamespace(measured=self.measured)), (START_NAME, self.start),
                            (STOP_NAME, self.stop), (call_sampling.NEXT_KEY, next)):
            setattr(builtins, name, value)
        self.sampler.publish(builtins.__dict__)


def install(naming: Callable[[str], str], choice: Choice, hooks: ProbeHooks,
            file_may_match: Callable[[str], bool] = lambda _file: True) -> _Finder:
    """Probe chosen functions of modules imported from now on: ``naming(path)`` gives the FILE part of a
    name, ``choice`` chooses and numbers functions, ``hooks`` are what the probes call, and a module whose
    FILE ``file_may_match`` rejects is loaded as usual. Returns the finder (remove it from
    ``sys.meta_path`` with :func:`uninstall`)."""
    loader = type("MantisMeasuringLoader", (_Loader,), {"naming": staticmethod(naming), "choice": choice})
    stdlib = {os.path.dirname(os.path.realpath(os.__file__)) + os.sep}  # the real one, not a venv's lib folder
    here = os.path.dirname(os.path.realpath(__file__)) + os.sep
    finder = _Finder(loader, tuple(sorted(stdlib | {here})), file_may_match)
    hooks.publish()
    sys.meta_path.insert(0, finder)
    return finder


def uninstall(finder: _Finder) -> None:
    """Stop probing newly imported modules (probed functions stay probed)."""
    if finder in sys.meta_path:
        sys.meta_path.remove(finder)


def file_may_match(patterns: list[str]) -> Callable[[str], bool]:
    """``FILE -> bool``: whether some ``FILE_GLOB:QUALNAME_GLOB`` pattern's file part matches (a pattern
    without ``:`` may match any file)."""
    globs = [p.rsplit(":", 1)[0] if ":" in p else None for p in patterns]
    return lambda file: any(glob is None or fnmatch.fnmatchcase(file, glob) for glob in globs)
