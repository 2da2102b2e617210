"""What changed between two versions of a program's source (AutoPerf profiles the functions a change
touched and their callers): the functions whose code differs, those added and removed, those renamed
(the same code under another name), and the functions that call any of them.

A function's code is compared as its syntax tree with positions, its docstring and its own name left out,
so comments, formatting and docstrings are no change; a nested function's change is also its enclosing
function's. Names are ``FILE:QUALNAME`` with ``FILE`` relative to the version's root folder and
``QUALNAME`` as Python writes ``__qualname__`` (``Class.method``, ``outer.<locals>.inner``), the names a
per-function counter profile uses.
"""

from __future__ import annotations

import ast
import hashlib
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

_SKIPPED_DIRS = {"__pycache__", ".git", ".hg", ".venv", "venv", "node_modules", ".mypy_cache", ".pytest_cache"}


class ChangeError(Exception):
    """The two versions cannot be compared (the message names the folder and the fix)."""


@dataclass(frozen=True)
class FunctionCode:
    """One function of one version: where it is and a fingerprint of its code."""

    name: str  # FILE:QUALNAME
    file: str
    line: int
    fingerprint: str  # of the code without positions, docstring or the function's own name
    called_names: frozenset[str]  # the bare names and attribute names its body uses


@dataclass
class ChangeSet:
    """How the candidate differs from the baseline, function by function."""

    changed: list[str] = field(default_factory=list)  # same name in both, different code
    added: list[str] = field(default_factory=list)  # only in the candidate (renames excluded)
    removed: list[str] = field(default_factory=list)  # only in the baseline (renames excluded)
    renamed: dict[str, str] = field(default_factory=dict)  # baseline name -> candidate name, same code
    callers: list[str] = field(default_factory=list)  # unchanged functions calling a changed/added/removed one
    files_changed: list[str] = field(default_factory=list)  # files whose code differs (module level included)
    module_code_changed: list[str] = field(default_factory=list)  # files whose code outside functions differs
    common_files: int = 0
    calls_from: dict[str, list[str]] = field(default_factory=dict)  # changed/added/renamed -> the names it uses

    @property
    def touched(self) -> list[str]:
        """Candidate-side names of what a diagnosis profiles: changed and renamed functions and callers.

        Not the added ones: they have no baseline to learn from, and measuring them would charge the cost
        of reading their counters to their callers' inclusive counts in the candidate only (measured: a
        helper extracted from a hot function made that function look 53 % slower). Their cost shows in
        their callers, which changed to call them."""
        return sorted({*self.changed, *self.renamed.values(), *self.callers})

    def baseline_name(self, candidate_name: str) -> str:
        """The baseline's name of a candidate function (differs only for a rename)."""
        for old, new in self.renamed.items():
            if new == candidate_name:
                return old
        return candidate_name

    @property
    def empty(self) -> bool:
        """Whether the versions' code is the same (comments and docstrings aside)."""
        return not (self.changed or self.added or self.removed or self.renamed or self.module_code_changed)


def python_files(root: Path) -> Iterator[tuple[str, Path]]:
    """(``FILE`` relative to ``root`` with ``/``, path) of every ``.py`` file under ``root``, sorted."""
    found = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in _SKIPPED_DIRS and not d.endswith(".egg-info"))
        for name in files:
            if name.endswith(".py"):
                path = Path(folder) / name
                found.append((path.relative_to(root).as_posix(), path))
    yield from sorted(found)


class _Normaliser(ast.NodeTransformer):
    """Strips what is no change: docstrings (of the function and of the classes and functions inside)."""

    def _strip_docstring(self, node):
        body = node.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            node.body = body[1:] or [ast.Pass()]
        return node

    def visit_FunctionDef(self, node):
        self.generic_visit(node)
        return self._strip_docstring(node)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node):
        self.generic_visit(node)
        return self._strip_docstring(node)

    def visit_Module(self, node):
        self.generic_visit(node)
        return self._strip_docstring(node)


def _fingerprint(node: ast.AST, *, anonymous: bool) -> str:
    copy = _Normaliser().visit(ast.parse(ast.unparse(node)).body[0])
    if anonymous and isinstance(copy, (ast.FunctionDef, ast.AsyncFunctionDef)):
        copy.name = "_"
    return hashlib.sha256(ast.dump(copy, include_attributes=False).encode()).hexdigest()


def _called_names(node: ast.AST) -> frozenset[str]:
    names: set[str] = set()
    for child in ast.walk(node):
        if isinstance(child, ast.Name):
            names.add(child.id)
        elif isinstance(child, ast.Attribute):
            names.add(child.attr)
    return frozenset(names)


def _module_level_fingerprint(tree: ast.Module) -> str:
    """The module's code without its functions (they are compared one by one; classes keep their other
    code)."""
    class _Hollow(ast.NodeTransformer):
        def visit_FunctionDef(self, node):
            return None

        visit_AsyncFunctionDef = visit_FunctionDef

    hollow = _Normaliser().visit(_Hollow().visit(ast.parse(ast.unparse(tree))))
    return hashlib.sha256(ast.dump(hollow, include_attributes=False).encode()).hexdigest()


def functions_of(file: str, tree: ast.Module) -> dict[str, tuple[FunctionCode, str]]:
    """Every function of a module: ``FILE:QUALNAME`` -> (its code, its name-blind fingerprint)."""
    found: dict[str, tuple[FunctionCode, str]] = {}

    def walk(body: list[ast.stmt], scope: list[str]) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                qualname = ".".join([*scope, node.name])
                name = f"{file}:{qualname}"
                found[name] = (FunctionCode(name, file, node.lineno, _fingerprint(node, anonymous=False),
                                            _called_names(node)), _fingerprint(node, anonymous=True))
                walk(node.body, [*scope, node.name, "<locals>"])
            elif isinstance(node, ast.ClassDef):
                walk(node.body, [*scope, node.name])
            else:  # statements holding definitions (if, try, with, for...)
                inner = [c for c in ast.iter_child_nodes(node) if isinstance(c, ast.stmt)]
                for handler in ast.iter_child_nodes(node):
                    if isinstance(handler, ast.ExceptHandler):
                        inner += handler.body
                walk(inner, scope)

    walk(tree.body, [])
    return found


def _parse(path: Path) -> ast.Module | None:
    try:
        return ast.parse(path.read_bytes(), filename=str(path))
    except (SyntaxError, ValueError, OSError):
        return None


def diff_trees(baseline: Path, candidate: Path) -> ChangeSet:
    """The function-level difference between two source folders (or two single files)."""
    sides = []
    for root in (baseline, candidate):
        if not root.exists():
            raise ChangeError(f"{root}: no such folder; give the version's source folder")
        files = list(python_files(root)) if root.is_dir() else [(root.name, root)]
        if not files:
            raise ChangeError(f"{root}: holds no Python file; give the version's source folder")
        sides.append(dict(files))
    old_files, new_files = sides
    common = sorted(set(old_files) & set(new_files))
    if not common:
        raise ChangeError(f"{baseline} and {candidate} have no Python file in common (same path under each); "
                          "give two versions of the same program")
    old_functions: dict[str, tuple[FunctionCode, str]] = {}
    new_functions: dict[str, tuple[FunctionCode, str]] = {}
    changes = ChangeSet(common_files=len(common))
    for file in sorted(set(old_files) | set(new_files)):
        trees = [(_parse(files[file]) if file in files else None)
                 for files in (old_files, new_files)]
        if trees[0] is not None:
            old_functions.update(functions_of(file, trees[0]))
        if trees[1] is not None:
            new_functions.update(functions_of(file, trees[1]))
        old_bytes = old_files[file].read_bytes() if file in old_files else None
        new_bytes = new_files[file].read_bytes() if file in new_files else None
        if old_bytes != new_bytes:
            same_tree = (trees[0] is not None and trees[1] is not None
                         and ast.dump(_Normaliser().visit(trees[0])) == ast.dump(_Normaliser().visit(trees[1])))
            if not same_tree:
                changes.files_changed.append(file)
                if trees[0] is None or trees[1] is None \
                        or _module_level_fingerprint(trees[0]) != _module_level_fingerprint(trees[1]):
                    changes.module_code_changed.append(file)
    for name in sorted(set(old_functions) & set(new_functions)):
        if old_functions[name][0].fingerprint != new_functions[name][0].fingerprint:
            changes.changed.append(name)
    only_old = sorted(set(old_functions) - set(new_functions))
    only_new = sorted(set(new_functions) - set(old_functions))
    by_code: dict[str, list[str]] = {}
    for name in only_new:
        by_code.setdefault(new_functions[name][1], []).append(name)
    for name in only_old:
        matches = by_code.get(old_functions[name][1])
        if matches:
            changes.renamed[name] = matches.pop(0)
        else:
            changes.removed.append(name)
    if old_functions and new_functions and not set(old_functions) & set(new_functions) and not changes.renamed:
        raise ChangeError(f"{baseline} and {candidate} have no function in common (by name or by code): every "
                          "function of one is missing from the other; give two versions of the same program")
    renamed_to = set(changes.renamed.values())
    changes.added = [name for name in only_new if name not in renamed_to]
    for name in [*changes.changed, *changes.added, *renamed_to]:
        changes.calls_from[name] = sorted(new_functions[name][0].called_names)
    moved = {*changes.changed, *changes.added, *changes.removed, *changes.renamed, *renamed_to}
    moved_names = {name.rsplit(":", 1)[1].rsplit(".", 1)[-1] for name in moved}
    for name, (code, _) in sorted(new_functions.items()):
        if name not in moved and code.called_names & moved_names:
            changes.callers.append(name)
    return changes
