"""The rewrite: a planned file cut down to its kept code, with the criterion's probes inserted (the
instrumentor's code builders and semantics)."""

from __future__ import annotations

import re
from collections.abc import Sequence

import libcst as cst

from mantispy.core.types import Span
from mantispy.instrument import codegen
from mantispy.instrument.manifest import ValueSite
from mantispy.instrument.transformer import DeclarationScanner, tapped
from mantispy.slicer import kit

from .criteria import Criterion
from .errors import EmitError
from .planning import FilePlan, statements_of
from .source import ParsedFile, char_span


def _tick(slot: int) -> cst.Call:
    return codegen.tick(slot)


def _record(slot: int, value: cst.BaseExpression) -> cst.BaseExpression:
    return codegen.record(slot, value)


def _variable_expr(variable: str) -> cst.BaseExpression:
    """``n`` or ``self.total`` as an expression (re-read after the assignment)."""
    return cst.parse_expression(variable)


_PRUNABLE = (cst.SimpleStatementLine, cst.If, cst.For, cst.While, cst.Try, cst.TryStar, cst.Match, cst.FunctionDef,
             cst.ClassDef, cst.With)


class Rewriter(cst.CSTTransformer):
    """Applies a :class:`FilePlan` to the original tree and inserts the probes of the file's criteria.

    ``targets`` maps a construct node to the counter criteria it carries (several features may share a
    node: an ``if`` arm and its implicit ``else``); value criteria record at their variable's sites, one
    record per slot however many versions of the variable are wanted.
    """

    def __init__(self, parsed: ParsedFile, plan: FilePlan, criteria: Sequence[Criterion],
                 targets: dict[int, list[Criterion]], calls_only: frozenset[tuple[int, ...]] = frozenset()) -> None:
        super().__init__()
        self.p = parsed
        self.plan = plan
        self.targets = targets
        self.calls_only = calls_only  # starts (line, byte column) of statements kept for their call alone
        self.sites: dict[Span, list[tuple[Criterion, ValueSite]]] = {}
        seen_slots: set[int] = set()
        for criterion in criteria:
            if criterion.kind != "value" or criterion.slot in seen_slots:
                continue
            seen_slots.add(criterion.slot)
            for site in criterion.sites:
                self.sites.setdefault(tuple(site.span), []).append((criterion, site))  # type: ignore[arg-type]
        self.probes: dict[int, int] = {}  # slot -> probes inserted
        self.elifs: set[int] = set()  # ``elif`` nodes (an ``If`` that is another's orelse)
        self.chains: dict[int, list[Criterion]] = {}  # elif -> derived else criteria of the chain it ends

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
            if self.calls_only and isinstance(stmt, (cst.Assign, cst.AugAssign)) and \
                    self.p.byte_span(original)[:2] in self.calls_only:
                stmt = cst.Expr(value=stmt.value)  # what it stores is cut from the slice: only the call runs
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
    def visit_If(self, node: cst.If) -> bool:
        if isinstance(node.orelse, cst.If):
            self.elifs.add(id(node.orelse))
        return True

    def leave_If(self, original_node: cst.If, updated_node: cst.If):
        """An arm's criterion ticks after its true test; an else arm's after the last test of its chain
        was false (``(test) or not TICK``), or, where the profile derives it (entries less arms taken), at
        the chain's first test (``TICK and (test)``) and after every arm's true test (the taken slot)."""
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
        derived = self.chains.pop(id(original_node.orelse), []) if isinstance(original_node.orelse, cst.If) else []
        for criterion in elses:
            if criterion.derived_else:
                derived.append(criterion)
            else:
                test = codegen.else_tick(codegen.paren(test), criterion.slot)
        for criterion in derived:
            test = codegen.then_tick(test, criterion.taken_slot)  # type: ignore[arg-type]
        if derived and id(original_node) in self.elifs:
            self.chains[id(original_node)] = derived  # the chain goes on up to its first test
        elif derived:
            test = codegen.before_test([_tick(c.slot) for c in derived], test)
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
        return self._ticked_at_start(updated_node, [c for c in self.targets_of(original_node)
                                                    if c.feature.detail in ("loop-else", "try-else")])

    def _ticked_at_start(self, updated_node, criteria: Sequence[Criterion]):
        """``updated_node`` with one tick per criterion at the start of its block."""
        ticks = []
        for criterion in criteria:
            self.probe(criterion)
            ticks.append(_tick(criterion.slot))
        if ticks:
            body, _ = codegen.insert_at_block_start(updated_node.body, ticks)
            return updated_node.with_changes(body=body)
        return updated_node

    def leave_With(self, original_node: cst.With, updated_node: cst.With):
        if id(original_node) in self.plan.hoist:
            return cst.FlattenSentinel(statements_of(updated_node.body))
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
        statements = statements_of(updated_node.body) + (statements_of(orelse.body) if orelse is not None else [])
        if finalbody is not None:
            return cst.Try(body=cst.IndentedBlock(body=statements), finalbody=finalbody,
                           leading_lines=updated_node.leading_lines)
        return cst.FlattenSentinel(statements)

    leave_TryStar = leave_Try

    def _handler(self, original_node, updated_node):
        return self._ticked_at_start(updated_node, self.targets_of(original_node))

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


_NO_BINDING = re.compile(r"no binding for nonlocal '(\w+)' found")


def compiled_without_unbound_nonlocals(code: str, path: str) -> str:
    """``code``, compiled, with every name dropped from the ``nonlocal`` declarations whose binding in an
    enclosing function the slice cut (declarations are kept whole, :mod:`planning`); a declaration left with
    no name becomes ``pass``. A nested function's read of such a name would have kept its binding (the
    dataflow's cell definitions), so what the slice keeps of the name is the nested function's own.
    Raises :class:`EmitError` when the file does not compile for any other reason."""
    while True:  # each mend drops one name, so this ends
        try:
            compile(code, path, "exec")
            return code
        except SyntaxError as exc:
            found = _NO_BINDING.search(str(exc.msg))
            if found is None or exc.lineno is None:
                raise EmitError(f"{path}: the sliced file does not compile: {exc.msg} (line {exc.lineno})") from None
            code = _drop_nonlocal(code, exc.lineno, found.group(1))


class _NonlocalDropper(cst.CSTTransformer):
    METADATA_DEPENDENCIES = (cst.metadata.PositionProvider,)

    def __init__(self, line: int, name: str) -> None:
        self.line = line
        self.name = name

    def leave_Nonlocal(self, original_node: cst.Nonlocal, updated_node: cst.Nonlocal) -> cst.BaseSmallStatement:
        if self.get_metadata(cst.metadata.PositionProvider, original_node).start.line != self.line:
            return updated_node
        names = [item for item in updated_node.names if item.name.value != self.name]
        if not names:
            return cst.Pass()
        names[-1] = names[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        return updated_node.with_changes(names=names)


def _drop_nonlocal(code: str, line: int, name: str) -> str:
    wrapper = cst.metadata.MetadataWrapper(cst.parse_module(code))
    mended = wrapper.visit(_NonlocalDropper(line, name)).code
    if mended == code:
        raise EmitError(f"no nonlocal declaration of {name!r} at line {line} to mend")
    return mended


_TARGET_TYPES: dict[str, tuple[type, ...]] = {
    "for": (cst.For,), "async for": (cst.For,), "while": (cst.While,), "comprehension": (cst.CompFor,),
    "async comprehension": (cst.CompFor,), "if": (cst.If,), "elif": (cst.If,), "implicit-else": (cst.If,),
    "else": (cst.Else,), "loop-else": (cst.Else,), "try-else": (cst.Else,), "ifexp-true": (cst.IfExp,),
    "ifexp-false": (cst.IfExp,), "case": (cst.MatchCase,), "function": (cst.FunctionDef,),
    "method": (cst.FunctionDef,), "async function": (cst.FunctionDef,), "lambda": (cst.Lambda,),
    "except": (cst.ExceptHandler,), "except*": (cst.ExceptStarHandler,),
}


def find_target(parsed: ParsedFile, criterion: Criterion) -> cst.CSTNode | None:
    """The libcst node of a counter criterion's construct (None for values)."""
    if criterion.kind == "value":
        return None
    types = _TARGET_TYPES.get(criterion.feature.detail)
    if types is None:
        raise EmitError(f"{criterion.feature.id}: unknown construct {criterion.feature.detail!r}")
    span = tuple(criterion.feature.span)
    for node, where in parsed.positions.items():
        if isinstance(node, types) and char_span(where) == span:
            return node
    raise EmitError(f"{criterion.feature.id}: construct not found at {span}")


def forced_nodes(parsed: ParsedFile, criterion: Criterion, target: cst.CSTNode | None) -> tuple[set[int], list[Span]]:
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
            if char_span(where) not in site_spans:
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


def probe_header() -> list[cst.BaseSmallStatement]:
    line = cst.parse_statement(
        f"import {kit.EVAL_MODULE} as _mantis_e; {codegen.COUNTERS}, {codegen.NEXT}, {codegen.GUARDS}, "
        f"{codegen.RECORD} = _mantis_e.register()\n")
    assert isinstance(line, cst.SimpleStatementLine)
    return list(line.body)
