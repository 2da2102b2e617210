"""Planning one file: which of its libcst statements, arms and items the evaluator keeps (the rules are in
the package docstring), to the file's import fixpoint."""

from __future__ import annotations

import weakref
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import libcst as cst
from libcst.helpers import get_full_name_for_node

from mantispy.core.types import Span
from mantispy.instrument import codegen

from .cells import cell_map
from .errors import EmitError
from .source import ParsedFile

# Memos that refer to a parsed tree's nodes by id(): held per tree, and dropped with it, so an id is never
# read back after its node is gone.
_NAMES: weakref.WeakKeyDictionary[ParsedFile, dict[int, frozenset[str]]] = weakref.WeakKeyDictionary()
_PLANS: weakref.WeakKeyDictionary[ParsedFile, dict[tuple, FilePlan]] = weakref.WeakKeyDictionary()


class NameCollector(cst.CSTVisitor):
    """Every ``Name`` in a subtree (over-approximates the names it reads; imports are not visited)."""

    def __init__(self) -> None:
        self.names: set[str] = set()

    def visit_Name(self, node: cst.Name) -> None:
        self.names.add(node.value)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self.names.add("." + node.attr.value)  # ".NAME": read as an attribute (maybe of a module)

    def visit_Import(self, node: cst.Import) -> bool:
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        return False


def names_in(parsed: ParsedFile, nodes: Iterable[cst.CSTNode | None]) -> set[str]:
    """Every name in the subtrees of ``parsed``'s nodes (memoised per node: parsed trees are shared between
    emissions)."""
    names: set[str] = set()
    for node in nodes:
        if node is None:
            continue
        memo = _NAMES.setdefault(parsed, {})
        cached = memo.get(id(node))
        if cached is None:
            visitor = NameCollector()
            node.visit(visitor)
            cached = memo[id(node)] = frozenset(visitor.names)
        names |= cached
    return names


def bound_names(stmt: cst.Import | cst.ImportFrom) -> set[str] | None:
    """Names an import binds; None for a star import."""
    if isinstance(stmt.names, cst.ImportStar):
        return None
    bound = set()
    for alias in stmt.names:
        if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
            bound.add(alias.asname.name.value)
        else:
            full = get_full_name_for_node(alias.name) or ""
            bound.add(full.split(".")[0] if isinstance(stmt, cst.Import) else full)
    return bound


def is_future(stmt: cst.BaseSmallStatement) -> bool:
    return isinstance(stmt, cst.ImportFrom) and not stmt.relative and isinstance(stmt.module, cst.Name) \
        and stmt.module.value == "__future__"


def statements_of(suite: cst.BaseSuite) -> list[cst.BaseStatement]:
    """The statements of a block (a one-line suite as one statement line)."""
    if isinstance(suite, cst.SimpleStatementSuite):
        return [cst.SimpleStatementLine(body=list(suite.body))]
    return list(suite.body)


@dataclass
class FilePlan:
    """The decisions for one file: which original libcst nodes stay."""

    keep: set[int] = field(default_factory=set)  # ids of kept statements, small statements, arms, items
    hoist: set[int] = field(default_factory=set)  # ids of ``with`` statements replaced by their body
    used: set[str] = field(default_factory=set)  # names read by kept code
    imports: list[tuple[int, str | None, tuple[str, ...] | None]] = field(default_factory=list)
    kept_statements: int = 0
    # statements kept for their names only (a module constant, a class that kept code reads, a binding of a
    # closure cell that kept code reads: see .cells), which the slice itself does not hold: what they need
    # must be sliced for too (see SliceSession.emit_combined)
    added: list[Span] = field(default_factory=list)


class _Planner:
    """Decides, for one file, what is kept (see the module docstring for the rules)."""

    def __init__(self, parsed: ParsedFile, kept: Sequence[Span], keep_units: set[str], required: set[str],
                 forced: set[int], used: set[str]) -> None:
        self.p = parsed
        self.by_line: dict[int, list[Span]] = {}
        for span in kept:
            self.by_line.setdefault(span[0], []).append(tuple(span))  # type: ignore[arg-type]
        self.keep_units = keep_units
        self.required = required
        self.forced = forced
        self.previous_used = used
        self.plan = FilePlan()
        self.uses: dict[str, int] = {}
        self.docstring: int | None = None

    # -------------------------------------------------------------- span tests
    def contains_kept(self, span: Span) -> bool:
        """Some kept span lies inside ``span``."""
        start, end = span[:2], span[2:]
        for line in range(span[0], span[2] + 1):
            for k in self.by_line.get(line, ()):
                if start <= k[:2] and k[2:] <= end:
                    return True
        return False

    def starts_kept(self, span: Span) -> bool:
        """Some kept span starts where ``span`` starts (compound statements: one per position)."""
        return any(k[:2] == span[:2] for k in self.by_line.get(span[0], ()))

    # -------------------------------------------------------------- walking
    def run(self, module: cst.Module) -> FilePlan:
        body = list(module.body)
        if body and codegen.is_docstring_line(body[0]):
            self.docstring = id(body[0].body[0])  # type: ignore[attr-defined]
        self.block(body, "")
        return self.plan

    def keep(self, node: cst.CSTNode, *name_sources: cst.CSTNode | None, count: bool = True) -> None:
        self.plan.keep.add(id(node))
        self.plan.used |= names_in(self.p, name_sources)
        if count:
            self.plan.kept_statements += 1

    def block(self, stmts: Sequence[cst.BaseStatement], scope: str) -> bool:
        """Plan a statement sequence; True when something essential in it is kept."""
        found = False
        for stmt in stmts:
            found |= self.statement(stmt, scope)
        return found

    def suite(self, suite: cst.BaseSuite, scope: str) -> bool:
        if isinstance(suite, cst.SimpleStatementSuite):
            return self.smalls(suite.body, scope)
        return self.block(suite.body, scope)

    def statement(self, stmt: cst.BaseStatement, scope: str) -> bool:
        method = getattr(self, "stmt_" + type(stmt).__name__, None)
        if method is None:  # pragma: no cover - every libcst statement type is handled
            raise EmitError(f"{self.p.source.path}: unsupported statement {type(stmt).__name__}")
        return method(stmt, scope)

    # -------------------------------------------------------------- simple statements
    def stmt_SimpleStatementLine(self, stmt: cst.SimpleStatementLine, scope: str) -> bool:
        essential = self.smalls(stmt.body, scope)
        if any(id(s) in self.plan.keep for s in stmt.body):
            self.plan.keep.add(id(stmt))
        return essential

    def smalls(self, body: Sequence[cst.BaseSmallStatement], scope: str) -> bool:
        essential = False
        for small in body:
            kept, needed = self.small(small, scope)
            if kept:
                self.keep(small, small if needed else None)
            essential |= needed
        return essential

    def small(self, small: cst.BaseSmallStatement, scope: str) -> tuple[bool, bool]:
        """(kept, essential): essential code makes its enclosing compound statements stay."""
        if id(small) in self.forced or self.contains_kept(self.p.byte_span(small)):
            return True, True
        if id(small) == self.docstring:
            return True, False
        if isinstance(small, (cst.Global, cst.Nonlocal)):
            return True, False
        if isinstance(small, (cst.Import, cst.ImportFrom)):
            return self.import_needed(small, scope)
        if not scope and isinstance(small, (cst.Assign, cst.AnnAssign)) and self._binds_used(small):
            self.plan.added.append(self.p.byte_span(small))
            return True, True  # a module-level name that kept code (e.g. a kept class's header) reads
        return False, False

    def _binds_used(self, small: cst.Assign | cst.AnnAssign) -> bool:
        targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else [small.target]
        return any(isinstance(t, cst.Name) and (t.value in self.previous_used or t.value in self.required)
                   for t in targets)

    def import_needed(self, stmt: cst.Import | cst.ImportFrom, scope: str) -> tuple[bool, bool]:
        bound = bound_names(stmt)
        if is_future(stmt):
            return True, False
        if bound is None:
            return True, not scope  # a star import (module level only)
        wanted = self.previous_used | (self.required if not scope else set())
        if bound & wanted:
            return True, True
        return False, False

    # -------------------------------------------------------------- compound statements
    def stmt_If(self, stmt: cst.If, scope: str) -> bool:
        test = self.contains_kept(self.p.byte_span(stmt.test)) or id(stmt) in self.forced
        body = self.suite(stmt.body, scope)
        orelse = False
        if isinstance(stmt.orelse, cst.If):
            orelse = self.stmt_If(stmt.orelse, scope)
        elif isinstance(stmt.orelse, cst.Else):
            orelse = self.suite(stmt.orelse.body, scope) or id(stmt.orelse) in self.forced
            if orelse:
                self.keep(stmt.orelse, count=False)
        if test or body or orelse:
            self.keep(stmt, stmt.test)
            return True
        return False

    def _loop_else(self, orelse: cst.Else | None, scope: str) -> bool:
        if orelse is None:
            return False
        kept = self.suite(orelse.body, scope) or id(orelse) in self.forced
        if kept:
            self.keep(orelse, count=False)
        return kept

    def stmt_While(self, stmt: cst.While, scope: str) -> bool:
        test = self.contains_kept(self.p.byte_span(stmt.test)) or id(stmt) in self.forced
        inner = self.suite(stmt.body, scope) | self._loop_else(stmt.orelse, scope)
        if test or inner:
            self.keep(stmt, stmt.test)
            return True
        return False

    def stmt_For(self, stmt: cst.For, scope: str) -> bool:
        head = (self.contains_kept(self.p.byte_span(stmt.iter)) or self.contains_kept(self.p.byte_span(stmt.target))
                or id(stmt) in self.forced)
        inner = self.suite(stmt.body, scope) | self._loop_else(stmt.orelse, scope)
        if head or inner:
            self.keep(stmt, stmt.target, stmt.iter)
            return True
        return False

    def stmt_With(self, stmt: cst.With, scope: str) -> bool:
        whole = self.starts_kept(self.p.byte_span(stmt))  # the slicer's with-exit vertex
        items = []
        for item in stmt.items:
            last = item.asname.name if item.asname is not None else item.item
            if whole or self.contains_kept(self.p.byte_span(item.item, last)):
                items.append(item)
        body = self.suite(stmt.body, scope)
        if items:
            self.keep(stmt, *items)
            for item in items:
                self.plan.keep.add(id(item))
            return True
        if body:
            self.plan.hoist.add(id(stmt))
        return body

    def stmt_Try(self, stmt: cst.Try | cst.TryStar, scope: str) -> bool:
        found = self.suite(stmt.body, scope)
        for handler in stmt.handlers:
            kept = (self.starts_kept(self.p.byte_span(handler)) | self.suite(handler.body, scope)
                    or id(handler) in self.forced)
            if kept:
                self.keep(handler, handler.type, count=False)
                found = True
        if stmt.orelse is not None and (self.suite(stmt.orelse.body, scope) or id(stmt.orelse) in self.forced):
            self.keep(stmt.orelse, count=False)
            found = True
        if stmt.finalbody is not None and self.suite(stmt.finalbody.body, scope):
            self.keep(stmt.finalbody, count=False)
            found = True
        if found:
            self.keep(stmt)
        return found

    stmt_TryStar = stmt_Try

    def stmt_Match(self, stmt: cst.Match, scope: str) -> bool:
        found = self.contains_kept(self.p.byte_span(stmt.subject))
        for case in stmt.cases:
            span = self.p.byte_span(case.pattern, case.guard)
            if self.contains_kept(span) | self.suite(case.body, scope) or id(case) in self.forced:
                self.keep(case, case.pattern, case.guard, count=False)
                found = True
        if found:
            self.keep(stmt, stmt.subject)
        return found

    def _qualname(self, scope: str, name: str) -> str:
        base = f"{scope}.{name}" if scope else name
        uses = self.uses[base] = self.uses.get(base, 0) + 1
        return base if uses == 1 else f"{base}@{uses}"

    def stmt_FunctionDef(self, stmt: cst.FunctionDef, scope: str) -> bool:
        qualname = self._qualname(scope, stmt.name.value)
        body = self.suite(stmt.body, qualname)
        if (body or self.starts_kept(self.p.byte_span(stmt)) or qualname in self.keep_units
                or id(stmt) in self.forced or (not scope and stmt.name.value in self.required | self.previous_used)):
            self.keep(stmt, *stmt.decorators, stmt.params, stmt.returns)
            return True
        return False

    def stmt_ClassDef(self, stmt: cst.ClassDef, scope: str) -> bool:
        qualname = self._qualname(scope, stmt.name.value)
        body = self.suite(stmt.body, qualname)
        sliced = body or self.starts_kept(self.p.byte_span(stmt)) or qualname in self.keep_units or id(stmt) in self.forced
        if sliced or (not scope and stmt.name.value in self.required | self.previous_used):
            if not sliced:  # its objects behave as its (implicit) methods say: __getattr__, __iter__...
                self.plan.added.append(self.p.byte_span(stmt))
            self.keep(stmt, *stmt.decorators, *stmt.bases, *stmt.keywords)
            return True
        return False


def plan_file(parsed: ParsedFile, kept: Sequence[Span], keep_units: set[str], required: set[str],
              forced: set[int]) -> FilePlan:
    """Plan one file to its import fixpoint (kept code -> names it reads -> imports binding them).
    Memoised on the parsed file: slices of one program often keep the same parts of a library file."""
    key = (tuple(sorted(tuple(k) for k in kept)), frozenset(keep_units), frozenset(required), frozenset(forced))
    plans = _PLANS.setdefault(parsed, {})
    found = plans.get(key)
    if found is None:
        if len(plans) > 2_000:
            plans.clear()
        found = plans[key] = _plan_file(parsed, kept, keep_units, required, forced)
    return found


def _plan_file(parsed: ParsedFile, kept: Sequence[Span], keep_units: set[str], required: set[str],
               forced: set[int]) -> FilePlan:
    used: set[str] = set()
    cells = cell_map(parsed)
    cell_bindings: dict[int, cst.CSTNode] = {}
    while True:
        plan = _Planner(parsed, kept, keep_units, required, forced | set(cell_bindings), used).run(parsed.module)
        more = {k: v for k, v in cells.bindings_read_by(plan.keep).items() if k not in cell_bindings}
        if plan.used <= used and not more:
            break
        used = used | plan.used
        cell_bindings.update(more)
    plan.added.extend(parsed.byte_span(node) for node in cell_bindings.values()
                      if isinstance(node, cst.BaseSmallStatement))
    return plan
