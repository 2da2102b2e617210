"""The monitor plan: which bytecode marks each count of the source instrumentor's features.

The feature ids come from the source instrumentor itself (:func:`mantispy.instrument.transformer.
instrument_source`, run in memory on the original files; nothing is written), so a model fitted on one
backend's features reads the other's. For each counter the plan names the construct whose first
instruction executes once per count, in ``ast`` positions (line, UTF-8 byte column), and the code
object that owns it (:mod:`mantispy.runtime.monitor` does the counting; its docstring gives the plan's
fields):

========================  ===================================================================
feature                   counted at
========================  ===================================================================
call                      the start of the function's (or lambda's) code object
loop: for, comprehension  the loop target's store (once per iteration)
loop: while               the first statement of the body
branch: if / elif arm     the first statement of the arm
branch: else             the source instrumentor's formula where it has one (as an implicit
                          else's), else the first statement after ``else``
branch: loop-else,        the first statement after ``else``
try-else
branch: implicit-else     the source instrumentor's formula where it has one (the entries of the
                          block the chain starts or follows, minus the arms and earlier exits:
                          :mod:`mantispy.instrument.derivation`), else the last ``if``
                          statement's entries minus its arm; both derived counts
branch: if-expression     the first instruction of the chosen operand
branch: case              the first statement of the case
except, except*           the first statement of the handler
========================  ===================================================================

A construct the compiler drops (an arm of ``if False:``, code after ``return``) has no instruction and
counts 0, as its probe would never have run either. Values (the first k versions of variables) have no
bytecode counterpart here; they remain a source-backend feature.
"""

from __future__ import annotations

import ast
import functools
import io
import json
import tokenize
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mantispy.core.types import Span
from mantispy.instrument.manifest import Feature
from mantispy.instrument.transformer import Options, instrument_source
from mantispy.instrument.tree import is_excluded, walk_sources
from mantispy.runtime.monitor import PLAN_FORMAT, PLAN_VERSION

COUNTER_FAMILIES = frozenset({"loops", "branches", "calls", "exceptions"})

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.GeneratorExp)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp)  # own code objects before 3.12, inlined after
_CODE_NAMES = {ast.Lambda: "<lambda>", ast.GeneratorExp: "<genexpr>", ast.ListComp: "<listcomp>",
               ast.SetComp: "<setcomp>", ast.DictComp: "<dictcomp>", ast.Module: "<module>"}


class PlanError(Exception):
    """A source tree the plan cannot be made for; one line naming the file and the fix."""


@dataclass
class FilePlan:
    """One file's counters and how the bytecode marks them."""

    counters: list[str] = field(default_factory=list)
    hidden: int = 0
    calls: list[list[Any]] = field(default_factory=list)  # [index, first line, code name, column or None]
    entries: list[list[Any]] = field(default_factory=list)  # [[indexes], line, col, end_line, end_col, owners]
    derived: list[list[Any]] = field(default_factory=list)  # [index, [[counter index, coefficient], ...]]
    unplaced: list[str] = field(default_factory=list)  # features whose construct was not found (count 0)


def build_plan(src: Path, exclude: list[str] | None = None, packages: dict[str, Path] | None = None) -> dict[str, Any]:
    """The plan of every ``.py`` file under ``src`` (a folder, or one file) as a JSON-ready dict, and of
    each installed package in ``packages`` ({import name: its folder or module file}), whose files are
    named from their ``site-packages`` folder (``sqlparse/sql.py``), as in a copy of the package placed
    at the top of the program's folder."""
    src = Path(src).resolve()
    root = src if src.is_dir() else src.parent
    files = list(walk_sources(src)) if src.is_dir() else [src]
    by_root: dict[Path, dict[str, Any]] = {}
    for location in (packages or {}).values():
        location = Path(location).resolve()
        members = list(walk_sources(location)) if location.is_dir() else [location]
        by_root.setdefault(location.parent, {}).update(_plan_files(location.parent, members, exclude or []))
    return {"format": PLAN_FORMAT, "version": PLAN_VERSION, "root": str(root),
            "files": _plan_files(root, files, exclude or []),
            "packages": [{"root": str(folder), "files": planned} for folder, planned in by_root.items()]}


def plan_key(src: Path, exclude: list[str] | None = None, packages: dict[str, Path] | None = None) -> str:
    """What :func:`build_plan` reads, hashed: every ``.py`` file under ``src`` and under each package's
    location, the exclusions, the locations, and the code that makes the plan (the instrumentor, whose
    feature ids the plan places, and this module). Equal keys give equal plans."""
    import hashlib

    from mantispy import instrument

    digest = hashlib.sha256(f"{PLAN_FORMAT}\0{PLAN_VERSION}\0{sorted(exclude or [])}\n".encode())
    code = sorted(Path(instrument.__file__).resolve().parent.glob("*.py")) + [Path(__file__).resolve()]
    trees = [("", Path(src).resolve())] + [(name, Path(where).resolve()) for name, where in sorted((packages or {}).items())]
    for name, location in [("code", path) for path in code] + trees:
        members = list(walk_sources(location)) if location.is_dir() else [location]
        digest.update(f"{name}\0{location}\n".encode())
        for path in sorted(members):
            if path.suffix == ".py":
                digest.update(f"{path}\0{hashlib.sha256(path.read_bytes()).hexdigest()}\n".encode())
    return digest.hexdigest()


def _plan_files(root: Path, files: list[Path], exclude: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for path in files:
        rel = path.relative_to(root).as_posix()
        if path.suffix != ".py" or is_excluded(rel, exclude):
            continue
        source = _read(path)
        if source is None:
            continue
        try:
            result = instrument_source(source, rel, Options(families=COUNTER_FAMILIES, k=0))
            tree = ast.parse(source)
        except Exception:  # noqa: BLE001 - a file the instrumentor cannot read is left out, as instrument does
            continue
        out[rel] = plan_file(source, tree, [f for f in result.features if f.kind != "value"], result.derived).__dict__
    return out


def locate_packages(names: list[str], python: str | None = None, option: str = "--include") -> dict[str, Path]:
    """Where the interpreter ``python`` (default: this one) imports each package from (its folder, or its
    module file); :class:`PlanError` names the first it cannot find (as ``option NAME: ...``), without
    importing any."""
    import os
    import sys

    if not names:
        return {}
    bad = next((name for name in names if not isinstance(name, str) or "." in name or not name.isidentifier()), None)
    if bad is not None:
        raise PlanError(f"{option} {bad!r}: give a top-level package name, like sqlparse")
    found = _located(python or sys.executable, tuple(names), os.environ.get("PYTHONPATH", ""))
    for name in names:
        if not found.get(name) or str(found[name]) in ("built-in", "frozen"):
            raise PlanError(f"{option} {name}: no such package for {python or sys.executable}; install it there or "
                            "drop it")
    return {name: Path(str(found[name])) for name in names}


@functools.lru_cache(maxsize=32)
def _located(python: str, names: tuple[str, ...], pythonpath: str) -> dict[str, str | None]:
    """The locator's answer, once per interpreter, names and search path (a build asks several times)."""
    import os
    import subprocess

    from mantispy.runtime import locate_packages as locator

    # PYTHONSAFEPATH: the locator's own folder (mantispy's run-time modules) must not shadow a package.
    done = subprocess.run([python, locator.__file__, *names], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONSAFEPATH": "1"})
    try:
        found = json.loads(done.stdout) if done.returncode == 0 else {}
    except ValueError:
        found = {}
    return found if isinstance(found, dict) else {}


def write_plan(plan: dict[str, Any], path: Path) -> None:
    """Write the plan as JSON."""
    Path(path).write_text(json.dumps(plan), encoding="utf-8")


def _read(path: Path) -> str | None:
    data = path.read_bytes()
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        return data.decode(encoding)
    except (SyntaxError, LookupError, UnicodeDecodeError):
        return None


class _Index:
    """The module's ast, with parents, statements and expressions in source order."""

    def __init__(self, source: str, tree: ast.Module) -> None:
        self.lines = source.splitlines()
        self.parent: dict[ast.AST, ast.AST] = {}
        self.statements: list[ast.stmt] = []
        self.expressions: list[ast.expr] = []
        self.nodes: list[ast.AST] = []
        for node in ast.walk(tree):
            for child in ast.iter_child_nodes(node):
                self.parent[child] = node
            if isinstance(node, ast.stmt):
                self.statements.append(node)
            elif isinstance(node, ast.expr):
                self.expressions.append(node)
            self.nodes.append(node)
        self.statements.sort(key=lambda n: (n.lineno, n.col_offset))
        self.expressions.sort(key=lambda n: (n.lineno, n.col_offset, -n.end_lineno, -n.end_col_offset))  # type: ignore[operator]
        self.tree = tree

    def byte_column(self, line: int, column: int) -> int:
        """The UTF-8 byte column of a character column (libcst counts characters, ast bytes)."""
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        return len(text[:column].encode("utf-8"))

    def first_statement_after(self, where: tuple[int, int]) -> ast.stmt | None:
        return next((s for s in self.statements if (s.lineno, s.col_offset) > where), None)

    def first_expression_after(self, where: tuple[int, int]) -> ast.expr | None:
        return next((e for e in self.expressions if (e.lineno, e.col_offset) > where), None)

    def node_at(self, kinds: tuple[type, ...], where: tuple[int, int]) -> ast.AST | None:
        return next((n for n in self.nodes if isinstance(n, kinds)
                     and (n.lineno, n.col_offset) == where), None)  # type: ignore[attr-defined]

    def owners(self, node: ast.AST) -> list[list[Any]]:
        """The code objects that may hold ``node``'s instructions: [first line, co_name] from the innermost
        comprehension out to the first function, lambda, class, generator expression or the module."""
        chain: list[list[Any]] = []
        current = self.parent.get(node)
        while current is not None:
            if isinstance(current, _COMPREHENSIONS):
                chain.append([current.lineno, _CODE_NAMES[type(current)]])
            elif isinstance(current, _SCOPES):
                chain.append([first_line(current), code_name(current)])
                return chain
            elif isinstance(current, ast.Module):
                chain.append([1, "<module>"])
                return chain
            current = self.parent.get(current)
        return chain


def first_line(node: ast.AST) -> int:
    """``co_firstlineno`` of the code object ``node`` compiles to (decorators included)."""
    decorators = getattr(node, "decorator_list", [])
    return min([node.lineno, *(d.lineno for d in decorators)])  # type: ignore[attr-defined]


def code_name(node: ast.AST) -> str:
    """``co_name`` of the code object ``node`` compiles to."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return node.name
    return _CODE_NAMES[type(node)]


def statement_span(node: ast.AST) -> Span:
    """A node's span, a decorated definition's from its first decorator."""
    line, col = node.lineno, node.col_offset  # type: ignore[attr-defined]
    decorators = getattr(node, "decorator_list", [])
    if decorators:
        first = min(decorators, key=lambda d: (d.lineno, d.col_offset))
        line, col = first.lineno, max(0, first.col_offset - 1)  # the "@" before the expression
    return (line, col, node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]


def plan_file(source: str, tree: ast.Module, features: list[Feature],
              formulas: dict[str, dict[str, int]] | None = None) -> FilePlan:
    """The plan of one file's counter features (in the instrumentor's order); ``formulas``: the source
    instrumentor's derived counts ({id: {counted id: coefficient}}), used as they are."""
    index = _Index(source, tree)
    plan = FilePlan(counters=[f.id for f in features])
    position = {f.id: i for i, f in enumerate(features)}
    formulas = formulas or {}
    arm_of: dict[tuple[int, int], int] = {}
    for i, feature in enumerate(features):
        if feature.kind == "branch" and feature.detail in ("if", "elif"):
            arm_of[(feature.span[0], feature.span[1])] = i

    def entry(indexes: list[int], node: ast.AST | None, feature: Feature) -> None:
        if node is None:
            plan.unplaced.append(feature.id)
            return
        plan.entries.append([indexes, *statement_span(node), index.owners(node)])

    for i, feature in enumerate(features):
        line, column = feature.span[0], index.byte_column(feature.span[0], feature.span[1])
        where = (line, column)
        detail = feature.detail
        if feature.kind == "call":
            node = index.node_at((ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda), where)
            if node is None:
                plan.unplaced.append(feature.id)
                continue
            plan.calls.append([i, first_line(node), code_name(node),
                               node.col_offset if isinstance(node, ast.Lambda) else None])
        elif feature.kind == "loop" and detail in ("for", "async for"):
            loop = index.node_at((ast.For, ast.AsyncFor), where)
            entry([i], getattr(loop, "target", None), feature)
        elif feature.kind == "loop" and detail.endswith("comprehension"):
            entry([i], index.first_expression_after(where), feature)
        elif detail in ("ifexp-true", "ifexp-false"):
            node = index.node_at((ast.IfExp,), where)
            operand = None if not isinstance(node, ast.IfExp) else (node.body if detail == "ifexp-true" else node.orelse)
            entry([i], operand, feature)
        elif feature.id in formulas and all(cid in position for cid in formulas[feature.id]):
            plan.derived.append([i, [[position[cid], c] for cid, c in formulas[feature.id].items()]])
        elif detail == "implicit-else":
            arm = arm_of.get((feature.span[0], feature.span[1]))
            test = index.first_expression_after(where)
            if arm is None or test is None:
                plan.unplaced.append(feature.id)
                continue
            hidden = len(features) + plan.hidden
            plan.hidden += 1
            # entered once per evaluation of its test: the whole statement, since a test the compiler folds
            # (``if 0 and x:``) leaves only a NOP, placed on the test from 3.12 on and on the statement before
            entry([hidden], index.parent.get(test, test), feature)
            plan.derived.append([i, [[hidden, 1], [arm, -1]]])
        else:  # while, if / elif / else arms, loop-else, try-else, case, except, except*
            entry([i], index.first_statement_after(where), feature)
    return plan


def plan_summary(plan: dict[str, Any]) -> dict[str, int]:
    """How many counters the plan places and how many it could not."""
    files = [*plan["files"].values(), *(f for package in plan.get("packages", []) for f in package["files"].values())]
    return {"files": len(files), "counters": sum(len(f["counters"]) for f in files),
            "unplaced": sum(len(f["unplaced"]) for f in files)}

