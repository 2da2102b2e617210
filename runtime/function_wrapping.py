"""Measuring chosen functions without a profile hook (Python 3.11): their definitions get a decorator.

``sys.setprofile`` calls its hook for every call of every function, chosen or not, which makes a run
several times slower. Instead, the source of the program's modules (its own files and installed
packages; not the standard library) is parsed as it is imported, and every ``def`` whose
``FILE:QUALNAME`` matches a pattern gets one more decorator, applied first
(``@__mantis_function_counters__.measured("FILE:QUALNAME")``), so only the chosen functions pay; only
modules whose file a pattern may name are parsed (the others load from their bytecode cache). The
script itself is transformed the same way before it runs. Line numbers are unchanged; a traceback shows
one more frame (the wrapper's).

Not decorated: ``async def`` functions and lambdas; functions of modules loaded from bytecode only, from
zip files or by loaders other than the source loader; code run by ``exec`` of a string.
"""

from __future__ import annotations

import ast
import builtins
import fnmatch
import importlib.abc
import importlib.machinery
import os
import sys
import types
from collections.abc import Callable

HOOK_NAME = "__mantis_function_counters__"
"""The builtin name the added decorators reach the profiler through."""


class _Decorate(ast.NodeTransformer):
    """Adds the measuring decorator to every ``def`` whose ``FILE:QUALNAME`` matches."""

    def __init__(self, file: str, matches: Callable[[str], bool]) -> None:
        self.file, self.matches = file, matches
        self.scope: list[str] = []
        self.decorated = 0

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
        if self.matches(name):
            hook = ast.Attribute(value=ast.Name(id=HOOK_NAME, ctx=ast.Load()), attr="measured", ctx=ast.Load())
            decorator = ast.Call(func=hook, args=[ast.Constant(value=name)], keywords=[])
            node.decorator_list.append(ast.copy_location(decorator, node))
            ast.fix_missing_locations(node)
            self.decorated += 1
        return node

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> ast.AST:
        self.scope += [node.name, "<locals>"]
        self.generic_visit(node)
        del self.scope[-2:]
        return node


def decorated_code(source: bytes | str, path: str, file: str, matches: Callable[[str], bool]) -> types.CodeType:
    """``source`` compiled with the chosen functions decorated (``file`` is how patterns name the file)."""
    tree = ast.parse(source, filename=path)
    _Decorate(file, matches).visit(tree)
    return compile(tree, path, "exec", dont_inherit=True)


class _Loader(importlib.machinery.SourceFileLoader):
    """A source loader whose code has the chosen functions decorated (the bytecode cache is not used)."""

    naming: Callable[[str], str]
    matches: Callable[[str], bool]

    def get_code(self, fullname: str) -> types.CodeType:
        path = self.get_filename(fullname)
        return decorated_code(self.get_data(path), path, type(self).naming(path), type(self).matches)


class _Finder(importlib.abc.MetaPathFinder):
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


def install(naming: Callable[[str], str], matches: Callable[[str], bool], measured,
            file_may_match: Callable[[str], bool] = lambda _file: True) -> _Finder:
    """Decorate chosen functions of modules imported from now on: ``naming(path)`` gives the FILE part of
    a name, ``matches(name)`` chooses, ``measured(name)`` is the decorator factory, and a module whose FILE
    ``file_may_match`` rejects is loaded as usual. Returns the finder (remove it from ``sys.meta_path``
    with :func:`uninstall`)."""
    loader = type("MantisMeasuringLoader", (_Loader,), {"naming": staticmethod(naming), "matches": staticmethod(matches)})
    stdlib = {os.path.dirname(os.path.realpath(os.__file__)) + os.sep}  # the real one, not a venv's lib folder
    here = os.path.dirname(os.path.realpath(__file__)) + os.sep
    finder = _Finder(loader, tuple(sorted(stdlib | {here})), file_may_match)
    setattr(builtins, HOOK_NAME, types.SimpleNamespace(measured=measured))
    sys.meta_path.insert(0, finder)
    return finder


def uninstall(finder: _Finder) -> None:
    """Stop decorating newly imported modules (decorated functions stay decorated)."""
    if finder in sys.meta_path:
        sys.meta_path.remove(finder)


def file_may_match(patterns: list[str]) -> Callable[[str], bool]:
    """``FILE -> bool``: whether some ``FILE_GLOB:QUALNAME_GLOB`` pattern's file part matches (a pattern
    without ``:`` may match any file)."""
    globs = [p.rsplit(":", 1)[0] if ":" in p else None for p in patterns]
    return lambda file: any(glob is None or fnmatch.fnmatchcase(file, glob) for glob in globs)
