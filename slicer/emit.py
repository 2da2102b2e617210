"""The slice emitter: turn a :class:`SliceResult` into an executable *feature evaluator*.

``emit_slice(program, result, out_dir)`` writes into ``out_dir``:

* the program's files cut down to the slice (same relative paths; the packages' ``__init__.py`` files and
  the modules that kept imports name, as empty stubs when nothing of them is in the slice);
* ``_mantis_eval.py``: the criterion's counter (``COUNTER``, an ``itertools.count(1)``; value criteria
  keep the runtime's per-thread value stores), standard library only;
* ``_mantis_guard.py``: a copy of :mod:`mantispy.slicer.guard`, the write guard;
* ``evaluate.py``: ``evaluate(argv=None, **kwargs) -> float`` runs the sliced program's entry and returns
  the feature's value; ``python evaluate.py ARGS...`` prints it. Nothing in ``out_dir`` imports mantispy.

Slicing one file (a libcst rewrite; comments and formatting of kept code stay as they are)
--------------------------------------------------------------------------------------------
Kept spans are in :mod:`ast` coordinates (UTF-8 byte columns); libcst positions are character columns,
converted per line. A statement is *kept* when:

* simple statement: some kept span lies inside it (the statement itself, or a lambda body /
  comprehension part the slicer kept inside it);
* ``if``/``elif``/``while``: by its test; ``for``: by its iterable or target; ``with``: each item by its
  span (a kept ``with`` statement span keeps every item), a ``with`` none of whose items is kept but whose
  body is has its body hoisted in its place; ``match``: by its subject, each case by pattern..guard;
  ``except`` clause: by its span; ``def``/``class``: by its span or its qualname in ``keep_units``;
* a compound statement is also kept when anything inside it is (a nested kept statement cannot run
  without it); ``try`` is kept exactly when something inside it is. An ``elif``/``else``/``finally`` arm
  with nothing kept is dropped; a ``try`` whose handlers all go becomes ``try/finally`` or just its body
  (then its ``else`` body); a ``match`` without kept cases gets ``case _: pass``; empty bodies get
  ``pass``;
* always: the module docstring, ``from __future__`` and star imports, ``global``/``nonlocal`` declarations
  of kept scopes; ``import``/``from ... import`` statements whose bound names occur in kept code of the
  file, or that another kept ``from M import name`` needs (a name imported from a program module keeps
  the imports and the top-level ``def``/``class`` binding it there); the entry function of a
  ``module:function`` entry. Repeated to a fixpoint over the whole program.

The criterion
-------------
The feature is looked up by id in the instrumentor's own analysis of the original file
(:func:`mantispy.instrument.transformer.instrument_source`), which gives its construct's span and
``detail`` and, for values, every assignment site of the variable with the instrumentor's scope rules.
The construct is then kept even if the slice forgot it, and exactly one probe is inserted, with the
instrumentor's code builders (:mod:`mantispy.instrument.codegen`) and semantics:

* loop: ``for`` body start / ``(test) and TICK`` / comprehension clause ``if TICK``;
* branch: ``(test) and TICK`` (if, elif), ``(test) or not TICK`` (else, implicit else, on the last test),
  if-expression arms ``(TICK and (arm))``, case guard, loop-else / try-else block start;
* call: function body start (after the docstring), lambda ``TICK and (body)``;
* exception: handler block start;
* value ``NAME#V``: the runtime's records at every site (re-read name after the assignment, tapped
  attribute value, parameters at body start, loop targets, walrus), into per-thread stores of the first
  ``k`` recordable values (same conversion and give-up rules as :mod:`mantispy.runtime.counters`); the
  evaluator returns version V (averaged over threads), 0 when fewer were recorded.

A TICK is ``_mantis_n(_mantis_k[0])`` (``next`` on ``_mantis_eval.COUNTER``), so there is no Python-level
call on the hot path; the count is ``int(repr(COUNTER)[6:-1]) - 1``.

Limits: the evaluator runs in one process (counts of forked children are not merged; the guard refuses to
start processes); non-Python files of the program are not copied.
"""

from __future__ import annotations

import ast
import json
import re
import shutil
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import libcst as cst
from libcst.helpers import get_full_name_for_node
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider

from mantispy.instrument import codegen
from mantispy.instrument.manifest import FAMILY_OF_KIND, Feature, ValueSite
from mantispy.instrument.transformer import (Options, DeclarationScanner, insert_header, tapped,
                                              instrument_source)
from mantispy.runtime import values as _values_module
from mantispy.slicer import guard as _guard_module
from mantispy.slicer.program import Program, SourceFile
from mantispy.core.types import Span
from mantispy.slicer.slice_result import SliceResult

EVAL_MODULE = "_mantis_eval"
GUARD_MODULE = "_mantis_guard"
VALUES_MODULE = "_mantis_values"
ENTRY_FILE = "evaluate.py"
_FUNCTION_ENTRY = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")


class EmitError(Exception):
    """The slice cannot be emitted (unknown criterion, unparsable kept file, bad entry)."""


@dataclass
class FileStats:
    """Statements of one original file: how many the evaluator keeps, of how many."""

    kept: int
    total: int
    sliced: bool  # False: written as an empty stub (an import needs the module, nothing of it is kept)


@dataclass
class EmitReport:
    """What :func:`emit_slice` wrote and how to run it."""

    out_dir: Path
    files: list[str]  # every file written, relative to out_dir (POSIX), evaluator modules included
    statements: dict[str, FileStats]  # original file (relative to the program root) -> counts
    entry: str
    criterion: str
    command: list[str]  # run as ``[*command, *ARGS]``
    warnings: list[str] = field(default_factory=list)
    # file -> spans of top-level statements kept for the names they bind but not in the slice (see _Plan)
    added: dict[str, list[Span]] = field(default_factory=dict)

    @property
    def statements_kept(self) -> int:
        """Statements kept over all files."""
        return sum(s.kept for s in self.statements.values())

    @property
    def statements_total(self) -> int:
        """Statements over all files that were written."""
        return sum(s.total for s in self.statements.values())


# ====================================================================== the criterion
@dataclass
class Criterion:
    """One feature's construct and probes, as the instrumentor sees the original file.

    ``slot`` indexes the evaluator's counters and value stores: one per counter feature, one per
    variable (every version of a variable wanted reads the same slot's records)."""

    feature: Feature
    sites: list[ValueSite]  # values: every assignment site of the variable
    variable: str | None  # values: the recorded name (``n`` or ``self.total``)
    version: int | None  # values: V
    slot: int = 0

    @property
    def kind(self) -> str:
        """loop / branch / call / exception / value."""
        return self.feature.kind


def resolve_criterion(source: SourceFile, result: SliceResult, k: int) -> Criterion:
    """Find ``result.criterion`` in the instrumentor's analysis of its file (raises :class:`EmitError`)."""
    return _resolve(source, result.all_criteria()[0], k)


def _version_of(feature_id: str, kind: str) -> int | None:
    if kind != "value" or "#" not in feature_id:
        return None
    return int(feature_id.rsplit("#", 1)[1])


def _resolve(source: SourceFile, wanted: dict, k: int) -> Criterion:
    """One criterion ({"id", "kind", "file", "span", "detail"}) of a slice, found in its file."""
    kind, fid = wanted["kind"], wanted["id"]
    if kind not in FAMILY_OF_KIND:
        raise EmitError(f"unknown criterion kind {kind!r}")
    version = _version_of(fid, kind)
    if version is not None and not 1 <= version <= k:
        raise EmitError(f"{fid}: version {version} is outside 1..k={k}")
    analysed = _analysed(source.source, wanted["file"], FAMILY_OF_KIND[kind], k)
    feature = next((f for f in analysed.features if f.id == fid), None)
    if feature is None:
        raise EmitError(f"{fid}: no such feature in {wanted['file']} (was the source changed?)")
    if tuple(feature.span) != tuple(wanted["span"]):
        raise EmitError(f"{fid}: the slice says span {tuple(wanted['span'])}, the source has "
                        f"{tuple(feature.span)} (was the source changed?)")
    if kind != "value":
        return Criterion(feature, [], None, None)
    sites = [s for s in analysed.value_sites if s.variable == feature.variable]
    variable = (feature.variable or "").rsplit(":value:", 1)[1]
    return Criterion(feature, sites, variable, version)


def resolve_criteria(program: Program, result: SliceResult, k: int) -> list[Criterion]:
    """Every criterion of a (possibly combined) slice, with its slot assigned."""
    criteria: list[Criterion] = []
    slots: dict[str, int] = {}
    for wanted in result.all_criteria():
        source = program.by_path.get(wanted["file"])
        if source is None:
            raise EmitError(f"{wanted['file']}: not a file of the program (root {program.root})")
        criterion = _resolve(source, wanted, k)
        key = f"variable:{criterion.feature.variable}" if criterion.kind == "value" else f"feature:{criterion.feature.id}"
        criterion.slot = slots.setdefault(key, len(slots))
        criteria.append(criterion)
    return criteria


class _Text:
    """Character -> UTF-8 byte columns for one source (lines split the way ast numbers them)."""

    def __init__(self, source: str) -> None:
        self.lines = re.split(r"\r\n|\r|\n", source)

    def byte_col(self, line: int, col: int) -> int:
        """The byte offset of character column ``col`` of 1-based ``line``."""
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        return len(text[:col].encode("utf-8"))


def _char_span(r: CodeRange) -> Span:
    return (r.start.line, r.start.column, r.end.line, r.end.column)


class _Parsed:
    """One file parsed by libcst, with positions in both coordinate systems."""

    def __init__(self, source: SourceFile) -> None:
        self.source = source
        try:
            self.wrapper = MetadataWrapper(cst.parse_module(source.source), unsafe_skip_copy=True)
        except cst.ParserSyntaxError as exc:
            raise EmitError(f"{source.path}: libcst cannot parse it: {exc}") from None
        self.module = self.wrapper.module
        self.positions = self.wrapper.resolve(PositionProvider)
        self.text = _Text(source.source)
        # Memos that refer to this tree's nodes by id(): they live and die with the tree, so an id is
        # never read back after its node is gone.
        self.names: dict[int, frozenset[str]] = {}  # node -> the names its subtree reads
        self.plans: dict[tuple, _Plan] = {}  # plan_file's arguments -> plan
        self.rewrites: dict[tuple, str] = {}  # (kept nodes, hoisted nodes) -> sliced text without probes

    def char_span(self, node: cst.CSTNode) -> Span:
        """libcst span (character columns)."""
        return _char_span(self.positions[node])

    def byte_span(self, node: cst.CSTNode, last: cst.CSTNode | None = None) -> Span:
        """ast-style span (byte columns) from the start of ``node`` to the end of ``last`` (or ``node``)."""
        start = self.positions[node].start
        end = self.positions[last if last is not None else node].end
        return (start.line, self.text.byte_col(start.line, start.column),
                end.line, self.text.byte_col(end.line, end.column))


# ====================================================================== planning: what each file keeps
_PARSED_CACHE: dict[tuple[str, str], _Parsed] = {}
_ANALYSED_CACHE: dict[tuple[str, str, str, int], Any] = {}


def _parsed(source: SourceFile) -> _Parsed:
    """The parsed file, shared by every emission of the same source text (libcst trees are immutable, and
    plans refer to nodes by identity, so one tree serves many slices; parsing is most of an emission's time)."""
    key = (source.path, source.source)
    found = _PARSED_CACHE.get(key)
    if found is None:
        if len(_PARSED_CACHE) > 512:
            _PARSED_CACHE.clear()
        found = _PARSED_CACHE[key] = _Parsed(source)
    return found


def _analysed(source: str, path: str, family: str, k: int):
    """``instrument_source`` of one file for one feature family, cached like :func:`_parsed`."""
    key = (path, source, family, k)
    found = _ANALYSED_CACHE.get(key)
    if found is None:
        if len(_ANALYSED_CACHE) > 512:
            _ANALYSED_CACHE.clear()
        found = _ANALYSED_CACHE[key] = instrument_source(source, path, Options(families=frozenset({family}), k=k))
    return found


class _Names(cst.CSTVisitor):
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


def _names_in(parsed: _Parsed, nodes: Iterable[cst.CSTNode | None]) -> set[str]:
    """Every name in the subtrees of ``parsed``'s nodes (memoised per node: parsed trees are shared between
    emissions)."""
    names: set[str] = set()
    for node in nodes:
        if node is None:
            continue
        cached = parsed.names.get(id(node))
        if cached is None:
            visitor = _Names()
            node.visit(visitor)
            cached = parsed.names[id(node)] = frozenset(visitor.names)
        names |= cached
    return names


def _bound_names(stmt: cst.Import | cst.ImportFrom) -> set[str] | None:
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


def _is_future(stmt: cst.BaseSmallStatement) -> bool:
    return isinstance(stmt, cst.ImportFrom) and not stmt.relative and isinstance(stmt.module, cst.Name) \
        and stmt.module.value == "__future__"


def _statements(suite: cst.BaseSuite) -> list[cst.BaseStatement]:
    """The statements of a block (a one-line suite as one statement line)."""
    if isinstance(suite, cst.SimpleStatementSuite):
        return [cst.SimpleStatementLine(body=list(suite.body))]
    return list(suite.body)


@dataclass
class _Plan:
    """The decisions for one file: which original libcst nodes stay."""

    keep: set[int] = field(default_factory=set)  # ids of kept statements, small statements, arms, items
    hoist: set[int] = field(default_factory=set)  # ids of ``with`` statements replaced by their body
    used: set[str] = field(default_factory=set)  # names read by kept code
    imports: list[tuple[int, str | None, tuple[str, ...] | None]] = field(default_factory=list)
    kept_statements: int = 0
    # top-level statements kept for their names only (a module constant, a class that kept code reads),
    # which the slice itself does not hold: what they need must be sliced for too (see SliceSession.emit)
    added: list[Span] = field(default_factory=list)


class _Planner:
    """Decides, for one file, what is kept (see the module docstring for the rules)."""

    def __init__(self, parsed: _Parsed, kept: Sequence[Span], keep_units: set[str], required: set[str],
                 forced: set[int], used: set[str]) -> None:
        self.p = parsed
        self.by_line: dict[int, list[Span]] = {}
        for span in kept:
            self.by_line.setdefault(span[0], []).append(tuple(span))  # type: ignore[arg-type]
        self.keep_units = keep_units
        self.required = required
        self.forced = forced
        self.previous_used = used
        self.plan = _Plan()
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
    def run(self, module: cst.Module) -> _Plan:
        body = list(module.body)
        if body and codegen.is_docstring_line(body[0]):
            self.docstring = id(body[0].body[0])  # type: ignore[attr-defined]
        self.block(body, "")
        return self.plan

    def keep(self, node: cst.CSTNode, *name_sources: cst.CSTNode | None, count: bool = True) -> None:
        self.plan.keep.add(id(node))
        self.plan.used |= _names_in(self.p, name_sources)
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
        bound = _bound_names(stmt)
        if _is_future(stmt):
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


def plan_file(parsed: _Parsed, kept: Sequence[Span], keep_units: set[str], required: set[str],
              forced: set[int]) -> _Plan:
    """Plan one file to its import fixpoint (kept code -> names it reads -> imports binding them).
    Memoised on the parsed file: slices of one program often keep the same parts of a library file."""
    key = (tuple(sorted(tuple(k) for k in kept)), frozenset(keep_units), frozenset(required), frozenset(forced))
    found = parsed.plans.get(key)
    if found is None:
        if len(parsed.plans) > 2_000:
            parsed.plans.clear()
        found = parsed.plans[key] = _plan_file(parsed, kept, keep_units, required, forced)
    return found


def _plan_file(parsed: _Parsed, kept: Sequence[Span], keep_units: set[str], required: set[str],
               forced: set[int]) -> _Plan:
    used: set[str] = set()
    while True:
        plan = _Planner(parsed, kept, keep_units, required, forced, used).run(parsed.module)
        if plan.used <= used:
            return plan
        used = used | plan.used


# ====================================================================== the rewrite
def _tick(slot: int) -> cst.Call:
    return codegen.tick(slot)


def _record(slot: int, value: cst.BaseExpression) -> cst.BaseExpression:
    return codegen.record(slot, value)


def _variable_expr(variable: str) -> cst.BaseExpression:
    """``n`` or ``self.total`` as an expression (re-read after the assignment)."""
    return cst.parse_expression(variable)


_PRUNABLE = (cst.SimpleStatementLine, cst.If, cst.For, cst.While, cst.Try, cst.TryStar, cst.Match, cst.FunctionDef,
             cst.ClassDef, cst.With)


class _Rewriter(cst.CSTTransformer):
    """Applies a :class:`_Plan` to the original tree and inserts the probes of the file's criteria.

    ``targets`` maps a construct node to the counter criteria it carries (several features may share a
    node: an ``if`` arm and its implicit ``else``); value criteria record at their variable's sites, one
    record per slot however many versions of the variable are wanted.
    """

    def __init__(self, parsed: _Parsed, plan: _Plan, criteria: Sequence[Criterion],
                 targets: dict[int, list[Criterion]]) -> None:
        super().__init__()
        self.p = parsed
        self.plan = plan
        self.targets = targets
        self.sites: dict[Span, list[tuple[Criterion, ValueSite]]] = {}
        seen_slots: set[int] = set()
        for criterion in criteria:
            if criterion.kind != "value" or criterion.slot in seen_slots:
                continue
            seen_slots.add(criterion.slot)
            for site in criterion.sites:
                self.sites.setdefault(tuple(site.span), []).append((criterion, site))  # type: ignore[arg-type]
        self.probes: dict[int, int] = {}  # slot -> probes inserted

    def kept(self, node: cst.CSTNode | None) -> bool:
        return node is not None and id(node) in self.plan.keep

    def on_visit(self, node: cst.CSTNode) -> bool:
        # A statement that goes is not walked into: its leave_* removes it whatever its children became.
        if isinstance(node, _PRUNABLE) and id(node) not in self.plan.keep and id(node) not in self.plan.hoist:
            return False
        return super().on_visit(node)

    def targets_of(self, node: cst.CSTNode | None) -> list[Criterion]:
        """The counter criteria whose construct is this node."""
        return self.targets.get(id(node), []) if node is not None else []

    def site_records(self, node: cst.CSTNode) -> list[tuple[Criterion, ValueSite]]:
        """The value sites at this node: one (criterion, site) per slot and site."""
        if not self.sites:
            return []
        return self.sites.get(self.p.char_span(node), [])

    def probe(self, criterion: Criterion) -> None:
        self.probes[criterion.slot] = self.probes.get(criterion.slot, 0) + 1

    def value_records(self, node: cst.CSTNode) -> list[cst.BaseExpression]:
        """Records of every value site at ``node`` (a for target, a def's parameters)."""
        effects: list[cst.BaseExpression] = []
        for criterion, _ in self.site_records(node):
            self.probe(criterion)
            effects.append(_record(criterion.slot, _variable_expr(criterion.variable)))  # type: ignore[arg-type]
        return effects

    # -------------------------------------------------------------- blocks and simple statements
    def leave_IndentedBlock(self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock) -> cst.IndentedBlock:
        if not updated_node.body:
            return updated_node.with_changes(body=[cst.SimpleStatementLine(body=[cst.Pass()])])
        return updated_node

    def leave_SimpleStatementLine(self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine):
        if not self.kept(original_node):
            return cst.RemoveFromParent()
        return updated_node.with_changes(body=self.smalls(original_node.body, updated_node.body))

    def leave_SimpleStatementSuite(self, original_node: cst.SimpleStatementSuite,
                                   updated_node: cst.SimpleStatementSuite) -> cst.SimpleStatementSuite:
        body = self.smalls(original_node.body, updated_node.body)
        return updated_node.with_changes(body=body or [cst.Pass()])

    def smalls(self, originals: Sequence[cst.BaseSmallStatement],
               updated: Sequence[cst.BaseSmallStatement]) -> list[cst.BaseSmallStatement]:
        body: list[cst.BaseSmallStatement] = []
        for original, stmt in zip(originals, updated):
            if not self.kept(original):
                continue
            after: list[cst.BaseExpression] = []
            for criterion, site in self.site_records(original):
                stmt, extra = self.record_assignment(stmt, criterion, site.detail)
                after += extra
            body.append(stmt)
            body.extend(cst.Expr(value=e) for e in after)
        if body:
            body[-1] = body[-1].with_changes(semicolon=cst.MaybeSentinel.DEFAULT)
        return body

    def record_assignment(self, stmt: cst.BaseSmallStatement, criterion: Criterion,
                          detail: str) -> tuple[cst.BaseSmallStatement, list]:
        """The instrumentor's record for one value site on a simple statement (name / attribute)."""
        assert criterion.variable is not None
        self.probe(criterion)
        if detail == "attribute":
            if isinstance(stmt, (cst.Assign, cst.AnnAssign)) and stmt.value is not None:
                return stmt.with_changes(value=tapped(criterion.slot, stmt.value)), []
            if isinstance(stmt, cst.AugAssign):
                return stmt, [_record(criterion.slot, stmt.target.deep_clone())]
        return stmt, [_record(criterion.slot, _variable_expr(criterion.variable))]

    # -------------------------------------------------------------- compound statements
    def leave_If(self, original_node: cst.If, updated_node: cst.If):
        if not self.kept(original_node):
            return cst.RemoveFromParent()
        node = updated_node
        if isinstance(original_node.orelse, cst.Else) and not self.kept(original_node.orelse):
            node = node.with_changes(orelse=None)
        test = node.test
        elses: list[Criterion] = []
        for criterion in self.targets_of(original_node):
            self.probe(criterion)
            if criterion.feature.detail == "implicit-else":
                elses.append(criterion)
            else:
                test = codegen.then_tick(test, criterion.slot)
        if isinstance(original_node.orelse, cst.Else):
            for criterion in self.targets_of(original_node.orelse):
                self.probe(criterion)
                elses.append(criterion)
        for criterion in elses:
            test = codegen.else_tick(codegen.paren(test), criterion.slot)
        return node.with_changes(test=test) if test is not node.test else node

    def _drop_else(self, original_node, node):
        if original_node.orelse is not None and not self.kept(original_node.orelse):
            return node.with_changes(orelse=None)
        return node

    def leave_For(self, original_node: cst.For, updated_node: cst.For):
        if not self.kept(original_node):
            return cst.RemoveFromParent()
        node = self._drop_else(original_node, updated_node)
        effects: list[cst.BaseExpression] = []
        for criterion in self.targets_of(original_node):
            self.probe(criterion)
            effects.append(_tick(criterion.slot))
        effects += self.value_records(original_node.target)
        if effects:
            body, _ = codegen.insert_at_block_start(node.body, effects)
            node = node.with_changes(body=body)
        return node

    def leave_While(self, original_node: cst.While, updated_node: cst.While):
        if not self.kept(original_node):
            return cst.RemoveFromParent()
        node = self._drop_else(original_node, updated_node)
        for criterion in self.targets_of(original_node):
            self.probe(criterion)
            node = node.with_changes(test=codegen.then_tick(node.test, criterion.slot))
        return node

    def leave_Else(self, original_node: cst.Else, updated_node: cst.Else) -> cst.Else:
        ticks = []
        for criterion in self.targets_of(original_node):
            if criterion.feature.detail in ("loop-else", "try-else"):
                self.probe(criterion)
                ticks.append(_tick(criterion.slot))
        if ticks:
            body, _ = codegen.insert_at_block_start(updated_node.body, ticks)
            return updated_node.with_changes(body=body)
        return updated_node

    def leave_With(self, original_node: cst.With, updated_node: cst.With):
        if id(original_node) in self.plan.hoist:
            return cst.FlattenSentinel(_statements(updated_node.body))
        if not self.kept(original_node):
            return cst.RemoveFromParent()
        items = [u for o, u in zip(original_node.items, updated_node.items) if self.kept(o)]
        items[-1] = items[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        return updated_node.with_changes(items=items)

    def leave_Try(self, original_node: cst.Try | cst.TryStar, updated_node: cst.Try | cst.TryStar):
        if not self.kept(original_node):
            return cst.RemoveFromParent()
        handlers = [u for o, u in zip(original_node.handlers, updated_node.handlers) if self.kept(o)]
        orelse = updated_node.orelse if self.kept(original_node.orelse) else None
        finalbody = updated_node.finalbody if self.kept(original_node.finalbody) else None
        if handlers:
            return updated_node.with_changes(handlers=handlers, orelse=orelse, finalbody=finalbody)
        # No handler left: the exceptions they caught now propagate; ``else`` runs right after the body.
        statements = _statements(updated_node.body) + (_statements(orelse.body) if orelse is not None else [])
        if finalbody is not None:
            return cst.Try(body=cst.IndentedBlock(body=statements), finalbody=finalbody,
                           leading_lines=updated_node.leading_lines)
        return cst.FlattenSentinel(statements)

    leave_TryStar = leave_Try

    def _handler(self, original_node, updated_node):
        ticks = []
        for criterion in self.targets_of(original_node):
            self.probe(criterion)
            ticks.append(_tick(criterion.slot))
        if ticks:
            body, _ = codegen.insert_at_block_start(updated_node.body, ticks)
            return updated_node.with_changes(body=body)
        return updated_node

    leave_ExceptHandler = leave_ExceptStarHandler = _handler

    def leave_Match(self, original_node: cst.Match, updated_node: cst.Match):
        if not self.kept(original_node):
            return cst.RemoveFromParent()
        cases = [u for o, u in zip(original_node.cases, updated_node.cases) if self.kept(o)]
        if not cases:
            cases = [cst.MatchCase(pattern=cst.MatchAs(),
                                   body=cst.IndentedBlock(body=[cst.SimpleStatementLine(body=[cst.Pass()])]))]
        return updated_node.with_changes(cases=cases)

    def leave_MatchCase(self, original_node: cst.MatchCase, updated_node: cst.MatchCase) -> cst.MatchCase:
        criteria = self.targets_of(original_node)
        if not criteria:
            return updated_node
        guard = updated_node.guard
        for criterion in criteria:
            self.probe(criterion)
            guard = _tick(criterion.slot) if guard is None else codegen.then_tick(guard, criterion.slot)
        return updated_node.with_changes(guard=guard, whitespace_before_if=cst.SimpleWhitespace(" "),
                                         whitespace_after_if=cst.SimpleWhitespace(" "))

    def leave_FunctionDef(self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef):
        if not self.kept(original_node):
            return cst.RemoveFromParent()
        updated_node = _redeclare(original_node, updated_node)
        effects: list[cst.BaseExpression] = []
        for criterion in self.targets_of(original_node):
            self.probe(criterion)
            effects.append(_tick(criterion.slot))
        effects += self.value_records(original_node)
        if not effects:
            return updated_node
        body, _ = codegen.insert_at_block_start(updated_node.body, effects, after_docstring=True)
        return updated_node.with_changes(body=body)

    def leave_ClassDef(self, original_node: cst.ClassDef, updated_node: cst.ClassDef):
        if not self.kept(original_node):
            return cst.RemoveFromParent()
        return updated_node

    # -------------------------------------------------------------- expressions
    def leave_Lambda(self, original_node: cst.Lambda, updated_node: cst.Lambda) -> cst.Lambda:
        body = updated_node.body
        for criterion in self.targets_of(original_node):
            self.probe(criterion)
            body = codegen.and_(_tick(criterion.slot), codegen.paren(body))
        return updated_node if body is updated_node.body else updated_node.with_changes(body=body)

    def leave_CompFor(self, original_node: cst.CompFor, updated_node: cst.CompFor) -> cst.CompFor:
        criteria = self.targets_of(original_node)
        if not criteria:
            return updated_node
        for criterion in criteria:
            self.probe(criterion)
        ticks = [cst.CompIf(test=_tick(c.slot)) for c in criteria]
        return updated_node.with_changes(ifs=[*ticks, *updated_node.ifs])

    def leave_IfExp(self, original_node: cst.IfExp, updated_node: cst.IfExp) -> cst.IfExp:
        node = updated_node
        for criterion in self.targets_of(original_node):
            self.probe(criterion)
            arm = "body" if criterion.feature.detail == "ifexp-true" else "orelse"
            wrapped = codegen.paren(codegen.and_(_tick(criterion.slot), codegen.paren(getattr(node, arm))))
            node = node.with_changes(**{arm: wrapped})
        return node

    def leave_NamedExpr(self, original_node: cst.NamedExpr, updated_node: cst.NamedExpr) -> cst.BaseExpression:
        records = self.site_records(original_node)
        if not records or not isinstance(updated_node.target, cst.Name):
            return updated_node
        for criterion, _ in records:
            self.probe(criterion)
        bare = updated_node.with_changes(lpar=[], rpar=[])
        elements = [cst.Element(value=_record(c.slot, cst.Name(updated_node.target.value))) for c, _ in records]
        tup = cst.Tuple(elements=[cst.Element(value=codegen.paren(bare)), *elements],
                        lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        return cst.Subscript(value=tup, slice=[cst.SubscriptElement(slice=cst.Index(value=cst.Integer("0")))],
                             lpar=list(updated_node.lpar), rpar=list(updated_node.rpar))


def _declarations(body: cst.BaseSuite) -> tuple[set[str], set[str]]:
    scanner = DeclarationScanner()
    body.visit(scanner)
    return scanner.globals, scanner.nonlocals


def _redeclare(original: cst.FunctionDef, updated: cst.FunctionDef) -> cst.FunctionDef:
    """Put back, at the top of the body, ``global``/``nonlocal`` declarations that sat in dropped blocks
    (a declaration anywhere in a function applies to all of it)."""
    before_globals, before_nonlocals = _declarations(original.body)
    if not before_globals and not before_nonlocals:
        return updated
    after_globals, after_nonlocals = _declarations(updated.body)
    lines: list[cst.BaseStatement] = []
    for kind, missing in ((cst.Global, before_globals - after_globals), (cst.Nonlocal, before_nonlocals - after_nonlocals)):
        if missing:
            lines.append(cst.SimpleStatementLine(body=[kind(names=[cst.NameItem(cst.Name(n)) for n in sorted(missing)])]))
    if not lines or not isinstance(updated.body, cst.IndentedBlock):
        return updated
    body = list(updated.body.body)
    at = 1 if body and codegen.is_docstring_line(body[0]) else 0
    return updated.with_changes(body=updated.body.with_changes(body=[*body[:at], *lines, *body[at:]]))


_TARGET_TYPES: dict[str, tuple[type, ...]] = {
    "for": (cst.For,), "async for": (cst.For,), "while": (cst.While,), "comprehension": (cst.CompFor,),
    "async comprehension": (cst.CompFor,), "if": (cst.If,), "elif": (cst.If,), "implicit-else": (cst.If,),
    "else": (cst.Else,), "loop-else": (cst.Else,), "try-else": (cst.Else,), "ifexp-true": (cst.IfExp,),
    "ifexp-false": (cst.IfExp,), "case": (cst.MatchCase,), "function": (cst.FunctionDef,),
    "method": (cst.FunctionDef,), "async function": (cst.FunctionDef,), "lambda": (cst.Lambda,),
    "except": (cst.ExceptHandler,), "except*": (cst.ExceptStarHandler,),
}


def _find_target(parsed: _Parsed, criterion: Criterion) -> cst.CSTNode | None:
    """The libcst node of a counter criterion's construct (None for values)."""
    if criterion.kind == "value":
        return None
    types = _TARGET_TYPES.get(criterion.feature.detail)
    if types is None:
        raise EmitError(f"{criterion.feature.id}: unknown construct {criterion.feature.detail!r}")
    span = tuple(criterion.feature.span)
    for node, where in parsed.positions.items():
        if isinstance(node, types) and _char_span(where) == span:
            return node
    raise EmitError(f"{criterion.feature.id}: construct not found at {span}")


def _forced(parsed: _Parsed, criterion: Criterion, target: cst.CSTNode | None) -> tuple[set[int], list[Span]]:
    """What the probe needs kept: node ids (statements, arms) and extra kept spans (expressions)."""
    ids: set[int] = set()
    spans: list[Span] = []
    parents: dict[int, cst.CSTNode] = {}
    if target is not None:
        if isinstance(target, (cst.CompFor, cst.IfExp, cst.Lambda)):
            spans.append(parsed.byte_span(target))
        else:
            ids.add(id(target))
            if isinstance(target, cst.Else):
                _collect_parents(parsed.module, parents)
                parent = parents.get(id(target))
                if isinstance(parent, cst.If):
                    ids.add(id(parent))
                elif isinstance(parent, (cst.For, cst.While)):
                    ids.add(id(parent))
    site_spans = {tuple(s.span) for s in criterion.sites}
    if site_spans:
        for node, where in parsed.positions.items():
            if _char_span(where) not in site_spans:
                continue
            if isinstance(node, (cst.BaseSmallStatement, cst.FunctionDef)):
                ids.add(id(node))
            elif isinstance(node, cst.BaseExpression):  # a for target, a walrus
                spans.append(parsed.byte_span(node))
    return ids, spans


def _collect_parents(node: cst.CSTNode, parents: dict[int, cst.CSTNode]) -> None:
    for child in node.children:
        parents[id(child)] = node
        _collect_parents(child, parents)


def _header() -> list[cst.BaseSmallStatement]:
    line = cst.parse_statement(
        f"import {EVAL_MODULE} as _mantis_e; {codegen.COUNTERS}, {codegen.NEXT}, {codegen.GUARDS}, "
        f"{codegen.RECORD} = _mantis_e.register()\n")
    assert isinstance(line, cst.SimpleStatementLine)
    return list(line.body)


# ====================================================================== the whole program
@dataclass
class _FileWork:
    parsed: _Parsed
    plan: _Plan | None = None


def _resolve_from(importer: SourceFile, level: int, module: str | None) -> str | None:
    """The absolute module name of ``from <level dots><module> import ...`` in ``importer``."""
    if level == 0:
        return module
    parts = importer.modname.split(".") if importer.modname else []
    if not importer.is_package:
        parts = parts[:-1]
    if level - 1 > len(parts):
        return None
    parts = parts[: len(parts) - (level - 1)]
    if module:
        parts.append(module)
    return ".".join(parts) or None


def _kept_imports(source: SourceFile, module: cst.Module, plan: _Plan) -> list[tuple[str, tuple[str, ...]]]:
    """(absolute module, names imported from it) of every kept import statement of a file (``("*",)``
    for a star import, ``()`` for ``import module``)."""
    found: list[tuple[str, tuple[str, ...]]] = []

    class Visitor(cst.CSTVisitor):
        def visit_Import(self, node: cst.Import) -> None:
            if id(node) in plan.keep:
                for alias in node.names:
                    found.append((get_full_name_for_node(alias.name) or "", ()))

        def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
            if id(node) not in plan.keep or _is_future(node):
                return
            name = get_full_name_for_node(node.module) if node.module is not None else None
            absolute = _resolve_from(source, len(node.relative), name)
            if absolute is None:
                return
            names = ("*",) if isinstance(node.names, cst.ImportStar) else tuple(
                get_full_name_for_node(a.name) or "" for a in node.names)
            found.append((absolute, names))

    module.visit(Visitor())
    return found


def _module_chain(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[: i + 1]) for i in range(len(parts))]


class _Emission:
    """The program-wide fixpoint: plans per file, imports between them, files to write."""

    def __init__(self, program: Program, result: SliceResult, criteria: list[Criterion]) -> None:
        self.program = program
        self.result = result
        self.criteria = criteria
        self.criterion_files = {c.feature.file for c in criteria}
        self.work: dict[str, _FileWork] = {}
        self.required: dict[str, set[str]] = {}
        self.needed_modules: set[str] = set()
        self.targets: dict[str, dict[int, list[Criterion]]] = {}  # file -> id(node) -> counter criteria
        self.forced_ids: dict[str, set[int]] = {}
        self.forced_spans: dict[str, list[Span]] = {}
        self.probes: dict[int, int] = {}  # slot -> probes inserted over all files
        self.warnings: list[str] = []

    def file(self, path: str) -> _FileWork:
        work = self.work.get(path)
        if work is None:
            source = self.program.by_path.get(path)
            if source is None:
                raise EmitError(f"{path}: not a file of the program (root {self.program.root})")
            work = self.work[path] = _FileWork(_parsed(source))
            if path in self.criterion_files:
                targets = self.targets.setdefault(path, {})
                ids = self.forced_ids.setdefault(path, set())
                spans = self.forced_spans.setdefault(path, [])
                for criterion in self.criteria:
                    if criterion.feature.file != path:
                        continue
                    target = _find_target(work.parsed, criterion)
                    if target is not None:
                        targets.setdefault(id(target), []).append(criterion)
                    more_ids, more_spans = _forced(work.parsed, criterion, target)
                    ids |= more_ids
                    spans += more_spans
        return work

    def run(self) -> None:
        active = {f for f, spans in self.result.kept.items() if spans}
        active |= {f for f, units in self.result.keep_units.items() if units}
        for path in sorted(p for p in active if p not in self.program.by_path):
            self.warnings.append(f"{path}: the slice keeps code of it, but it is not a file of the program; ignored")
            active.discard(path)
        active |= self.criterion_files
        entry_module, entry_function = _entry_function(self.result.entry)
        if entry_module is not None:
            source = self.program.by_module.get(entry_module)
            if source is None:
                raise EmitError(f"entry {self.result.entry}: no module {entry_module} in the program")
            self.required.setdefault(source.path, set()).add(entry_function)  # type: ignore[arg-type]
        while True:
            for path in sorted(active):
                self.plan(path)
            required, modules = self.imports()
            grown = set(required) - active
            if required == self.required and not grown and modules == self.needed_modules:
                return
            self.required = required
            self.needed_modules = modules
            active |= grown

    def plan(self, path: str) -> None:
        work = self.file(path)
        kept = list(self.result.kept.get(path, [])) + self.forced_spans.get(path, [])
        work.plan = plan_file(work.parsed, kept, set(self.result.keep_units.get(path, [])),
                              self.required.get(path, set()), self.forced_ids.get(path, set()))

    def imports(self) -> tuple[dict[str, set[str]], set[str]]:
        required: dict[str, set[str]] = {p: set(n) for p, n in self.required.items()}
        modules: set[str] = set()
        for path, work in self.work.items():
            if work.plan is None:
                continue
            attributes = {n[1:] for n in work.plan.used if n.startswith(".")}
            for module, names in _kept_imports(work.parsed.source, work.parsed.module, work.plan):
                modules.update(_module_chain(module))
                target = self.program.by_module.get(module)
                if names == ("*",):  # re-exported: what others need of this file may be bound there
                    if target is not None:
                        required.setdefault(target.path, set()).update(self.required.get(path, set()))
                    continue
                if not names and target is not None:  # import pkg.mod: pkg.mod.NAME reads its globals
                    required.setdefault(target.path, set()).update(attributes)
                for name in names:
                    modules.add(f"{module}.{name}")
                    if target is not None:
                        required.setdefault(target.path, set()).add(name)
                    submodule = self.program.by_module.get(f"{module}.{name}")
                    if submodule is not None:  # from pkg import mod: mod.NAME reads its globals
                        required.setdefault(submodule.path, set()).update(attributes)
        return required, {m for m in modules if m in self.program.by_module}

    def rewrite(self, path: str) -> str:
        """The sliced source of one planned file."""
        work = self.work[path]
        assert work.plan is not None
        has_criteria = path in self.criterion_files
        criteria = [c for c in self.criteria if c.feature.file == path]
        key = (frozenset(work.plan.keep), frozenset(work.plan.hoist))
        if not has_criteria and key in work.parsed.rewrites:  # the same cut of a file without probes
            return work.parsed.rewrites[key]
        rewriter = _Rewriter(work.parsed, work.plan, criteria, self.targets.get(path, {}))
        module = work.parsed.module.visit(rewriter)
        for slot, count in rewriter.probes.items():
            self.probes[slot] = self.probes.get(slot, 0) + count
        if has_criteria:
            if not any(rewriter.probes.get(c.slot) for c in criteria):
                raise EmitError(f"{criteria[0].feature.id}: no probe could be inserted (construct not kept?)")
            module, _ = insert_header(module, _header())
        code = module.code
        compile(code, path, "exec")
        if not has_criteria:
            if len(work.parsed.rewrites) > 500:
                work.parsed.rewrites.clear()
            work.parsed.rewrites[key] = code
        return code


def _entry_function(entry: str) -> tuple[str | None, str | None]:
    """(module, function) of a ``module:function`` entry, else (None, None)."""
    if _FUNCTION_ENTRY.match(entry.strip()):
        module, _, function = entry.strip().partition(":")
        return module, function
    return None, None


def _entry_file(program: Program, entry: str) -> SourceFile | None:
    """The program file an entry starts in (a script, a ``-m`` module or package)."""
    entry = entry.strip()
    module, _ = _entry_function(entry)
    if entry.startswith("-m "):
        module = entry[3:].strip()
        source = program.by_module.get(module)
        main = program.by_module.get(module + ".__main__")
        return main if source is not None and source.is_package and main is not None else source
    if module is not None:
        return program.by_module.get(module)
    return program.file_for(entry)


# ====================================================================== generated modules
_EVAL_TEMPLATE = '''"""Counters of a mantispy feature evaluator (generated; standard library only).

Features: {features_doc}

Sliced modules run ``import _mantis_eval as _mantis_e; _mantis_k, _mantis_n, _mantis_vg, _mantis_rec =
_mantis_e.register()`` and tick ``_mantis_n(_mantis_k[j])`` (builtin ``next`` on ``COUNTERS[j]``, an
``itertools.count(1)``: no Python-level call) or record ``_mantis_vg[j] and _mantis_rec(j, value)``, exactly
as instrumented code does with the mantispy run-time, whose value rules this module repeats: per thread,
the first K recordable values (numbers; builtin sized objects as ``len()``); a thread gives a variable up
after 4K unrecordable values; version V is averaged over the threads that recorded it. Slot j is one
counter feature or one variable (all wanted versions of a variable share its slot).
"""

import itertools
import sys
import threading

FEATURES = {features!r}  # (feature id, slot, version or None for a counter)
FEATURE = FEATURES[0][0]
SLOTS = {slots!r}
K = {k!r}

COUNTERS = tuple(itertools.count(1) for _ in range(SLOTS))
GUARDS = [K > 0] * SLOTS
_stores = []
_local = threading.local()
_lock = threading.Lock()
from _mantis_values import number as _number  # the runtime's own rule, copied beside this file
_limbo = getattr(threading, "_limbo", None)
_active = getattr(threading, "_active", None)
_start = None


def register():
    """``(_mantis_k, _mantis_n, _mantis_vg, _mantis_rec)`` for a sliced module."""
    return COUNTERS, next, GUARDS, _rec


def reset():
    """Start from zero (before each evaluation; the sliced modules are imported afresh)."""
    global COUNTERS, _local
    COUNTERS = tuple(itertools.count(1) for _ in range(SLOTS))
    GUARDS[:] = [K > 0] * SLOTS
    del _stores[:]
    _local = threading.local()


def count(slot=0):
    """Ticks of one slot's counter so far."""
    return int(repr(COUNTERS[slot])[6:-1]) - 1


def _single_thread():
    if type(_limbo) is dict and type(_active) is dict:
        return len(_limbo) + len(_active) == 1
    return threading.active_count() == 1


def _store():
    local = _local
    try:
        return local.store
    except AttributeError:
        store = local.store = [[] for _ in range(SLOTS)]
        local.misses = [0] * SLOTS
        with _lock:
            _stores.append(store)
        return store


def _rec(j, value):
    lst = _store()[j]
    if len(lst) < K:
        number = _number(value)
        if number is None:
            misses = _local.misses
            misses[j] += 1
            if misses[j] < 4 * K:
                return value
            if _single_thread():
                GUARDS[j] = False
            return value
        lst.append(number)
        if len(lst) < K:
            return value
    if _single_thread():
        GUARDS[j] = False
    return value


def _mean(numbers):
    nums = [x for x in numbers if x - x == 0]
    if not nums:
        return 0
    n = len(nums)
    if all(type(x) is int for x in nums):
        total = sum(nums)
        return total // n if total % n == 0 else total / n
    import math
    return math.fsum(nums) / n


def _value_of(slot, version):
    if version is None:
        return count(slot)
    i = version - 1
    return _mean([store[slot][i] for store in list(_stores) if len(store[slot]) > i])


def value():
    """The first feature's value: its count, or its version of the variable (0 if never recorded)."""
    _, slot, version = FEATURES[0]
    return _value_of(slot, version)


def values():
    """Every feature's value, by feature id."""
    return {{fid: _value_of(slot, version) for fid, slot, version in FEATURES}}


def install():
    """Starting a thread turns the value guards on again (each thread records its own first K values)."""
    global _start
    if _start is not None:
        return
    original = _start = threading.Thread.start

    def start(self):
        GUARDS[:] = [K > 0] * SLOTS
        try:
            return original(self)
        finally:
            GUARDS[:] = [K > 0] * SLOTS

    threading.Thread.start = start


def uninstall():
    """Undo :func:`install`."""
    global _start
    if _start is not None:
        threading.Thread.start = _start
        _start = None
'''

_EVALUATE_TEMPLATE = '''"""Feature evaluator generated by mantispy: feature values, from a slice of the program.

Features: {features_doc}
Entry:    {entry}

    python evaluate.py ARGS...          prints the feature's value for the input ARGS (several features:
                                        a JSON object {{feature id: value}})
    python evaluate.py '{{"kw": 1}}'      (a module:function entry: keyword arguments as one JSON object)
    evaluate(["ARG", ...]) / evaluate(kw=1)   from Python, with this folder on sys.path: the first feature
    evaluate_all(["ARG", ...])          every feature, as {{feature id: value}}

Only the statements the feature depends on run. The sliced program's stdout and stderr go to os.devnull,
and a write guard (_mantis_guard) makes any attempt to write files (outside the evaluation's own scratch
folder, its temporary folder, removed when it ends), start processes or open network connections fail
with PermissionError. Standard library only; mantispy is not imported.
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
FEATURES = {feature_ids!r}
FEATURE = FEATURES[0]
ENTRY = {entry!r}
ROOT = os.path.join(HERE, *{root_parts!r})  # the copy of the program's root folder
MODULES = {modules!r}  # the program's modules written here: imported afresh by every evaluation
PRELOAD = {preload!r}  # what serve() imports once: the modules the program imports (not the entry's)


def evaluate(argv=None, **kwargs):
    """Run the sliced program on ``argv`` (``kwargs`` for a module:function entry); return the first
    feature's value."""
    return evaluate_all(argv, **kwargs)[FEATURE]


def evaluate_all(argv=None, **kwargs):
    """Run the sliced program once on ``argv`` (``kwargs`` for a module:function entry); return every
    feature's value as {{feature id: float}}."""
    saved_path = list(sys.path)
    if HERE not in sys.path:
        sys.path.insert(0, HERE)
    import _mantis_eval
    import _mantis_guard

    saved_modules = {{name: sys.modules.pop(name) for name in MODULES if name in sys.modules}}
    saved = (sys.argv, sys.stdout, sys.stderr, sys.dont_write_bytecode)
    _mantis_eval.reset()
    sink = open(os.devnull, "w")
    errors = _Tail()
    status = 0
    sys.dont_write_bytecode = True
    patches = _mantis_guard.install()
    _mantis_eval.install()
    try:
        sys.stdout, sys.stderr = sink, errors
        _run(list(argv or ()), kwargs)
    except SystemExit as exc:
        status = exc.code
    finally:
        _mantis_eval.uninstall()
        _mantis_guard.uninstall(patches)
        sys.argv, sys.stdout, sys.stderr, sys.dont_write_bytecode = saved
        sys.path[:] = saved_path
        for name in MODULES:
            sys.modules.pop(name, None)
        sys.modules.update(saved_modules)
        sink.close()
    return _outcome(status, errors)


class InputRejected(Exception):
    """The sliced program exited with a non-zero status: the input is not one the program accepts."""


def _outcome(status, errors):
    """The values of one evaluation, or why there are none (a refused write, a rejected input)."""
    import _mantis_eval
    import _mantis_guard

    if _mantis_guard.VIOLATIONS:
        raise PermissionError(_mantis_guard.VIOLATIONS[0])
    if status not in (None, 0):
        said = errors.last_line()
        raise InputRejected(f"the program rejects this input (exit status {{status}})" + (f": {{said}}" if said else ""))
    return {{fid: float(v) for fid, v in _mantis_eval.values().items()}}


def serve(requests=None, replies=None):
    """A warm evaluator: import the sliced program's modules once (their top levels do not depend on the
    input), then answer each request line ``{{"argv": [...], "kwargs": {{...}}, "cwd": "..."}}`` by running
    the entry in a forked child of this pre-initialised process, with one reply line: ``{{"values": {{...}}}}``
    or ``{{"error": "..."}}``. Counts the module top levels made are inherited by every child, exactly as
    each run of the program makes them once. ``python evaluate.py --mantis-serve`` runs it on stdin/stdout.
    """
    import json
    import signal

    requests = requests or sys.stdin
    replies = replies or sys.stdout
    fork = os.fork  # the guard refuses os.fork to the sliced program, not to this server
    if HERE not in sys.path:
        sys.path.insert(0, HERE)
    import _mantis_eval
    import _mantis_guard

    entry = ENTRY.strip()
    if not entry.startswith("-m ") and not (":" in entry and not entry.endswith(".py")):
        sys.path.insert(0, os.path.dirname(os.path.join(ROOT, *entry.split("/"))))
    global _SINK
    sink = _SINK = open(os.devnull, "w")
    saved = (sys.stdout, sys.stderr)
    sys.dont_write_bytecode = True
    _mantis_guard.install(scratch=False)  # each forked evaluation makes its own scratch folder
    _mantis_eval.install()
    preload_error = None
    try:
        sys.stdout = sys.stderr = sink
        for name in PRELOAD:
            try:
                __import__(name)
            except ImportError:  # an optional import of the entry: it runs (and fails) per input
                pass
    except BaseException as exc:  # the import fails the same way for every input: say so per request
        preload_error = f"{{type(exc).__name__}}: {{exc}}"
    finally:
        sys.stdout, sys.stderr = saved
    if not entry.startswith("-m ") and not (":" in entry and not entry.endswith(".py")):
        script = os.path.join(ROOT, *entry.split("/"))
        with open(script, "rb") as handle:
            _CODE[script] = compile(handle.read(), script, "exec", dont_inherit=True)
    _warm_standard_library()
    import gc

    gc.freeze()  # the children's collections leave the inherited objects (and their pages) alone
    replies.write(json.dumps({{"ready": True}}) + "\\n")
    replies.flush()
    while True:
        line = requests.readline()
        if not line:
            return
        try:
            request = json.loads(line)
        except ValueError:
            replies.write(json.dumps({{"error": "not a JSON request"}}) + "\\n")
            replies.flush()
            continue
        if preload_error is not None:
            replies.write(json.dumps({{"error": preload_error}}) + "\\n")
            replies.flush()
            continue
        read, write = os.pipe()
        pid = fork()
        if pid == 0:  # the child: evaluate, reply through the pipe, leave without cleanup
            os.close(read)
            try:
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                if request.get("cwd"):
                    os.chdir(request["cwd"])
                _mantis_guard.fresh_scratch()
                reply = {{"values": _evaluate_here(request.get("argv") or [], request.get("kwargs") or {{}})}}
            except BaseException as exc:
                reply = {{"error": f"{{type(exc).__name__}}: {{exc}}"}}
            data = (json.dumps(reply) + "\\n").encode()
            while data:
                data = data[os.write(write, data):]
            os._exit(0)
        os.close(write)
        chunks = []
        while True:
            chunk = os.read(read, 65536)
            if not chunk:
                break
            chunks.append(chunk)
        os.close(read)
        os.waitpid(pid, 0)
        _mantis_guard.discard_scratch(pid)
        text = b"".join(chunks).decode() or json.dumps({{"error": "the evaluation died without a reply"}}) + "\\n"
        replies.write(text if text.endswith("\\n") else text + "\\n")
        replies.flush()


_SINK = None  # serve()'s /dev/null, opened before the guard refuses writing opens


def _warm_standard_library():
    """Fill the standard library's lazy state once, here, rather than in every forked evaluation:
    argparse translates each of its messages through gettext, whose first lookups (locale aliases,
    message catalogues) cost a fresh child about 4 ms, most of a warm evaluation of a workload that
    only parses its arguments. Builds objects and throws them away: nothing the program sees."""
    saved = (sys.stdout, sys.stderr)
    try:
        sys.stdout = sys.stderr = _SINK
        import gettext

        gettext.gettext("usage: ")
        if "argparse" in sys.modules:
            parser = sys.modules["argparse"].ArgumentParser(prog="mantis-warm-up")
            parser.add_argument("names", nargs="*")
            parser.add_argument("--flag", action="store_true")
            parser.parse_args([])
            parser.format_help()
    except Exception:  # warming is an optimisation only
        pass
    finally:
        sys.stdout, sys.stderr = saved


def _evaluate_here(argv, kwargs):
    """One evaluation in a process whose modules are already imported (a forked child of serve)."""
    import _mantis_eval
    import _mantis_guard

    errors = _Tail()
    status = 0
    try:
        sys.stdout, sys.stderr = _SINK, errors
        _run(list(argv), kwargs)
    except SystemExit as exc:
        status = exc.code
    finally:
        sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
    return _outcome(status, errors)


class _Tail:
    """A stderr that keeps only its last 4000 characters (for the reason of a rejected input)."""

    encoding = "utf-8"
    errors = "strict"

    def __init__(self):
        self.text = ""

    def isatty(self):
        return False

    def write(self, text):
        self.text = (self.text + text)[-4000:]
        return len(text)

    def flush(self):
        pass

    def last_line(self):
        lines = [line for line in self.text.strip().splitlines() if line.strip()]
        return lines[-1][:300] if lines else ""


def _run(argv, kwargs):
    entry = ENTRY.strip()
    if entry.startswith("-m "):
        import runpy

        module = entry[3:].strip()
        sys.argv = [module, *argv]
        sys.path.insert(0, HERE)
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    elif ":" in entry and not entry.endswith(".py"):
        import importlib

        module, _, function = entry.partition(":")
        sys.argv = [entry, *argv]
        result = getattr(importlib.import_module(module), function)(**kwargs)
        if hasattr(type(result), "__await__"):  # inspect.isawaitable, without importing inspect
            import asyncio

            async def wait():
                return await result

            asyncio.run(wait())
    else:
        path = os.path.join(ROOT, *entry.split("/"))
        sys.argv = [path, *argv]
        sys.path.insert(0, os.path.dirname(path))
        _run_script(path)


_CODE = {{}}  # compiled entry scripts (serve() compiles before forking)


def _run_script(path):
    """``runpy.run_path(path, run_name="__main__")`` without importing runpy (milliseconds per evaluation)."""
    import types

    code = _CODE.get(path)
    if code is None:
        with open(path, "rb") as handle:
            code = _CODE[path] = compile(handle.read(), path, "exec", dont_inherit=True)
    main = types.ModuleType("__main__")
    main.__file__ = path
    main.__builtins__ = __builtins__
    saved = sys.modules.get("__main__")
    sys.modules["__main__"] = main
    try:
        exec(code, main.__dict__)
    finally:
        if saved is not None:
            sys.modules["__main__"] = saved


def main():
    """Command line: print the value for the input in sys.argv[1:]."""
    args = sys.argv[1:]
    if args == ["--mantis-serve"]:
        serve()
        return
    kwargs = {{}}
    if ":" in ENTRY and not ENTRY.strip().startswith("-m ") and len(args) == 1 and args[0].lstrip().startswith("{{"):
        import json

        kwargs, args = json.loads(args[0]), []
    values = evaluate_all(args, **kwargs)
    if len(values) == 1:
        value = values[FEATURE]
        print(int(value) if value.is_integer() else repr(value))
    else:
        import json

        print(json.dumps(values))


if __name__ == "__main__":
    main()
'''


def _stub(path: str) -> str:
    return f"# mantispy: nothing of {path} is in the slice; this module exists so that imports of it work\n"


# ====================================================================== the entry point
def emit_slice(program: Program, result: SliceResult, out_dir: Path, k: int = 5) -> EmitReport:
    """Write the feature evaluator of ``result`` into ``out_dir``; see the module docstring.

    ``k`` must be the ``--k`` the program was instrumented with (value criteria follow the runtime's
    per-variable limits). Raises :class:`EmitError` when the criterion or entry cannot be found or a file
    that keeps code cannot be parsed.
    """
    out_dir = Path(out_dir)
    criteria = resolve_criteria(program, result, k)
    entry_source = _entry_file(program, result.entry)
    if entry_source is None:
        raise EmitError(f"entry {result.entry!r}: no such script or module in the program")

    emission = _Emission(program, result, criteria)
    emission.run()

    base_parts = Path(program.root).relative_to(program.search_root).parts
    base = out_dir.joinpath(*base_parts)
    to_write = _files_to_write(program, emission, entry_source)
    reserved = {f"{EVAL_MODULE}.py", f"{GUARD_MODULE}.py", f"{VALUES_MODULE}.py", ENTRY_FILE}
    clashes = sorted(p for p in to_write if "/".join([*base_parts, p]) in reserved)
    if clashes:
        raise EmitError(f"{', '.join(clashes)}: the program has a file named like the evaluator's own modules")
    _prepare_out_dir(out_dir)
    written: list[str] = []
    stats: dict[str, FileStats] = {}
    for path in sorted(to_write):
        source = program.by_path[path]
        total = sum(isinstance(n, ast.stmt) for n in ast.walk(source.tree))
        work = emission.work.get(path)
        if work is not None and work.plan is not None:
            code = emission.rewrite(path)
            stats[path] = FileStats(work.plan.kept_statements, total, True)
        else:
            code = _stub(path)
            stats[path] = FileStats(0, total, False)
        target = base / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(code, encoding="utf-8")
        written.append(target.relative_to(out_dir).as_posix())

    missing = [c.feature.id for c in criteria if not emission.probes.get(c.slot)]
    if missing:
        raise EmitError(f"{missing[0]}: no probe could be inserted (construct not kept?)")
    modules = sorted({program.by_path[p].modname for p in to_write if program.by_path[p].modname})
    feature_ids = [c["id"] for c in result.all_criteria()]
    features = [(fid, c.slot, c.version) for fid, c in zip(feature_ids, criteria)]
    doc = ", ".join(feature_ids[:5]) + (f" and {len(feature_ids) - 5} more" if len(feature_ids) > 5 else "")
    (out_dir / f"{EVAL_MODULE}.py").write_text(
        _EVAL_TEMPLATE.format(features=features, features_doc=doc, slots=max(c.slot for c in criteria) + 1, k=k),
        encoding="utf-8")
    (out_dir / f"{VALUES_MODULE}.py").write_text(Path(_values_module.__file__).read_text(encoding="utf-8"),
                                                 encoding="utf-8")
    (out_dir / f"{GUARD_MODULE}.py").write_text(Path(_guard_module.__file__).read_text(encoding="utf-8"),
                                               encoding="utf-8")
    (out_dir / ENTRY_FILE).write_text(
        _EVALUATE_TEMPLATE.format(features_doc=doc, feature_ids=feature_ids, entry=result.entry,
                                  root_parts=list(base_parts), modules=tuple(modules),
                                  preload=_preload(program, emission, entry_source, result.entry, to_write)),
        encoding="utf-8")
    written += [f"{EVAL_MODULE}.py", f"{GUARD_MODULE}.py", f"{VALUES_MODULE}.py", ENTRY_FILE]
    for name in (f"{EVAL_MODULE}.py", f"{GUARD_MODULE}.py", f"{VALUES_MODULE}.py", ENTRY_FILE):
        compile((out_dir / name).read_text(encoding="utf-8"), name, "exec")
    warnings = emission.warnings + [f"{p}: the slice imports it but keeps nothing of it (written as an empty module)"
                                    for p, s in stats.items() if not s.sliced and not program.by_path[p].is_package]
    return EmitReport(out_dir=out_dir, files=written, statements=stats, entry=result.entry,
                      criterion=result.criterion, command=[sys.executable, str(out_dir / ENTRY_FILE)],
                      warnings=warnings,
                      added={p: list(w.plan.added) for p, w in sorted(emission.work.items()) if w.plan and w.plan.added})


def _preload(program: Program, emission: _Emission, entry_source: SourceFile, entry: str,
             to_write: set[str]) -> tuple[str, ...]:
    """Modules a warm evaluator imports before any input: the program modules the kept code imports,
    except the entry's own module (it runs per input, as ``__main__`` or by name)."""
    entry_module = entry_source.modname if not entry.strip().endswith(".py") else None
    names = []
    for stmt in entry_source.tree.body:  # what the entry imports from outside the program (argparse...)
        if isinstance(stmt, ast.Import):
            found = [alias.name for alias in stmt.names]
        elif isinstance(stmt, ast.ImportFrom) and not stmt.level and stmt.module:
            found = [stmt.module]
        else:
            continue
        names += [n for n in found if n.split(".")[0] not in program.by_module and n != "__future__"]
    for path in sorted(to_write):
        source = program.by_path[path]
        name = source.modname
        if not name or source.path == entry_source.path or name == entry_module:
            continue
        names.append(name)
    return tuple(names)


def _prepare_out_dir(out_dir: Path) -> None:
    """Create ``out_dir``, or empty it if it holds an earlier evaluator; refuse any other non-empty folder."""
    if out_dir.exists() and not out_dir.is_dir():
        raise EmitError(f"{out_dir}: exists and is not a folder")
    if out_dir.is_dir() and any(out_dir.iterdir()):
        if not (out_dir / f"{EVAL_MODULE}.py").is_file():
            raise EmitError(f"{out_dir}: not empty and not an earlier evaluator; choose an empty folder")
        for child in out_dir.iterdir():
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child)
            else:
                child.unlink()
    out_dir.mkdir(parents=True, exist_ok=True)


def _files_to_write(program: Program, emission: _Emission, entry: SourceFile) -> set[str]:
    """Planned files, modules kept imports name, the entry, and every package ``__init__`` above them."""
    paths = {p for p, w in emission.work.items() if w.plan is not None}
    paths |= {program.by_module[m].path for m in emission.needed_modules}
    paths.add(entry.path)
    for path in list(paths):
        parts = path.split("/")[:-1]
        for depth in range(len(parts) + 1):
            init = "/".join([*parts[:depth], "__init__.py"])
            if init in program.by_path:
                paths.add(init)
    return paths


def report_json(report: EmitReport) -> str:
    """The report as JSON (for the CLI)."""
    return json.dumps({
        "out_dir": str(report.out_dir), "files": report.files, "entry": report.entry,
        "criterion": report.criterion, "command": report.command, "warnings": report.warnings,
        "statements": {p: {"kept": s.kept, "total": s.total, "sliced": s.sliced} for p, s in report.statements.items()},
    }, indent=1)
