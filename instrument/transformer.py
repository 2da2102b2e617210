"""Rewrite one module's source so it counts its own loops, branch arms, calls, handlers and values.

The rewrite is a libcst transformation of the original source; everything not touched keeps its exact
text (comments, formatting, docstrings). Probes are expressions (see :mod:`codegen`), placed on lines
that already exist wherever Python's grammar allows, so tracebacks keep their line numbers.

Python semantics kept on purpose:

* a condition is evaluated exactly once, and its truth value is unchanged (``(t) and TICK`` is true
  exactly when ``t`` is);
* a value is recorded by re-reading a plain name after the assignment (no side effects), or, for
  attribute targets, by tapping the assigned value on its way in (the attribute is never read back),
  except ``obj.x += v``, which reads ``obj.x`` again, only while the variable still wants values;
* nothing is recorded or bound in class bodies (their namespace may be an Enum's or a metaclass's);
* the module docstring and ``from __future__`` imports stay first.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import libcst as cst
from libcst.metadata import CodeRange, ParentNodeProvider, PositionProvider

from . import codegen
from .derivation import ArmDerivation, Formula
from .manifest import FAMILY_OF_KIND, Feature, ValueSite

MODULE_SCOPE = "<module>"


@dataclass
class Options:
    """What to instrument."""

    families: frozenset[str] = frozenset(FAMILY_OF_KIND.values())
    k: int = 5
    disabled: frozenset[str] = frozenset()  # feature ids / value-site ids left uninstrumented
    derive_arms: bool = True  # else arms whose count follows from other counts get no probe (derivation.py)


@dataclass
class _Scope:
    kind: str  # "module", "class", "function", "lambda"
    qualname: str
    ordinals: dict[str, int] = field(default_factory=dict)
    globals: set[str] = field(default_factory=set)
    nonlocals: set[str] = field(default_factory=set)
    receiver: str | None = None  # first parameter of a method: ``self`` / ``cls``
    class_qualname: str | None = None  # the class a method belongs to

    def next_ordinal(self, kind: str) -> int:
        self.ordinals[kind] = self.ordinals.get(kind, 0) + 1
        return self.ordinals[kind]


@dataclass
class ModuleResult:
    """The rewritten code and what it counts."""

    code: str
    features: list[Feature]
    value_sites: list[ValueSite]
    counter_ids: list[str]
    variable_ids: list[str]
    shifted_lines: int
    derived: dict[str, Formula] = field(default_factory=dict)  # counted by no probe: {id: {counted id: coefficient}}


class DeclarationScanner(cst.CSTVisitor):
    """Collects ``global`` / ``nonlocal`` names of one function body, not of nested scopes."""

    def __init__(self) -> None:
        self.globals: set[str] = set()
        self.nonlocals: set[str] = set()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_Global(self, node: cst.Global) -> None:
        self.globals.update(item.name.value for item in node.names)

    def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
        self.nonlocals.update(item.name.value for item in node.names)


def _target_names(target: cst.BaseExpression) -> Iterable[cst.Name]:
    """Plain names bound by an assignment / for target (tuples, lists and starred unpacked)."""
    if isinstance(target, cst.Name):
        yield target
    elif isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            yield from _target_names(element.value)
    elif isinstance(target, cst.StarredElement):
        yield from _target_names(target.value)


def _dotted(expr: cst.BaseExpression) -> str | None:
    """``a.b.c`` for an attribute chain over a name, else None."""
    if isinstance(expr, cst.Name):
        return expr.value
    if isinstance(expr, cst.Attribute):
        base = _dotted(expr.value)
        return None if base is None else f"{base}.{expr.attr.value}"
    return None


class _HasScopeSensitiveCode(cst.CSTVisitor):
    """Finds yield/await/walrus/lambda/comprehension: expressions unsafe to write twice."""

    def __init__(self) -> None:
        self.found = False

    def _hit(self, node: cst.CSTNode) -> bool:
        self.found = True
        return False

    visit_Yield = visit_Await = visit_NamedExpr = visit_Lambda = _hit
    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _hit


_EMPTY_MODULE = cst.Module(body=[])


def tapped(j: int, value: cst.BaseExpression) -> cst.BaseExpression:
    """The assigned value, recorded on its way in: written twice behind the guard when that is safe
    and keeps the line count (no yield/await/walrus/lambda/comprehension, one line), else one call."""
    scanner = _HasScopeSensitiveCode()
    value.visit(scanner)
    if scanner.found or "\n" in _EMPTY_MODULE.code_for_node(value):
        return codegen.record_call(j, value)
    return codegen.record_tap(j, value)


def _is_staticmethod(node: cst.FunctionDef) -> bool:
    return any(_dotted(d.decorator) in ("staticmethod", "builtins.staticmethod") for d in node.decorators)


class Instrumenter(cst.CSTTransformer):
    """The transformation. Use :func:`instrument_source` rather than this class directly."""

    METADATA_DEPENDENCIES = (PositionProvider, ParentNodeProvider)

    def __init__(self, rel_path: str, module_name: str, source: str, options: Options) -> None:
        super().__init__()
        self.rel_path = rel_path
        self.module_name = module_name
        self.lines = source.splitlines()
        self.options = options
        self.scopes: list[_Scope] = [_Scope("module", MODULE_SCOPE)]
        self.qualname_uses: dict[str, int] = {}
        self.regions: list[str | None] = [None]
        self.features: list[Feature] = []
        self.value_sites: list[ValueSite] = []
        self.counter_ids: list[str] = []
        self.variable_ids: list[str] = []
        self.variable_index: dict[str, int] = {}
        # Allocations made on the way down, consumed on the way up (keyed by original node identity).
        self.counter_of: dict[int, int] = {}
        self.else_counter_of: dict[int, int] = {}
        self.false_counter_of: dict[int, int] = {}
        self.body_effects: dict[int, list[cst.BaseExpression]] = {}
        self.elif_nodes: set[int] = set()
        self.else_role: dict[int, str] = {}
        self.derived: dict[str, Formula] = {}
        self.derivation: ArmDerivation | None = None
        self.groups: list[tuple[int, ...]] = []  # variable indexes recorded together behind one guard

    def visit_Module(self, node: cst.Module) -> None:
        self.derivation = ArmDerivation(self.metadata[ParentNodeProvider])  # type: ignore[arg-type]

    # ----------------------------------------------------------------- allocation helpers
    @property
    def scope(self) -> _Scope:
        return self.scopes[-1]

    def _enabled(self, kind: str) -> bool:
        return FAMILY_OF_KIND[kind] in self.options.families

    def _span(self, node: cst.CSTNode) -> tuple[int, int, int, int]:
        pos: CodeRange = self.get_metadata(PositionProvider, node)
        return (pos.start.line, pos.start.column, pos.end.line, pos.end.column)

    def _snippet(self, line: int, suffix: str = "", column: int = 0) -> str:
        text = self.lines[line - 1][column:].strip() if 0 < line <= len(self.lines) else ""
        if len(text) > 100:
            text = text[:97] + "..."
        return text + suffix

    def _counter(self, kind: str, node: cst.CSTNode, detail: str, qualname: str | None = None) -> int | None:
        """Allocate a counter feature for ``node``; None when its family is off or it was disabled."""
        feature_id = self._feature(kind, node, detail, qualname)
        if feature_id is None:
            return None
        self.counter_ids.append(feature_id)
        return len(self.counter_ids) - 1

    def _feature(self, kind: str, node: cst.CSTNode, detail: str, qualname: str | None = None) -> str | None:
        """Add a counter feature for ``node`` to the manifest (no probe yet); its id, or None when its
        family is off or it was disabled."""
        if not self._enabled(kind):
            return None
        scope_name = qualname or self.scope.qualname
        if kind == "call":
            feature_id = f"{self.rel_path}:{scope_name}:call"
        else:
            short = "except" if kind == "exception" else kind
            feature_id = f"{self.rel_path}:{scope_name}:{short}:{self.scope.next_ordinal(short)}"
        if feature_id in self.options.disabled:
            return None
        span = self._span(node)
        self.features.append(
            Feature(
                id=feature_id,
                kind=kind,
                file=self.rel_path,
                module=self.module_name,
                qualname=scope_name,
                span=span,
                snippet=self._snippet(
                    span[0],
                    " (implicit else)" if detail == "implicit-else" else "",
                    span[1] if isinstance(node, cst.CompFor) else 0,
                ),
                detail=detail,
            )
        )
        return feature_id

    def _else_arm(self, last_if: cst.If, written: cst.Else | None) -> tuple[int | None, str | None]:
        """The else arm (``written``, or the implicit one when None) of the chain ending at ``last_if``:
        (its counter, or None when its count follows from others (:mod:`derivation`) and it gets no probe;
        the feature id it is counted under)."""
        assert self.derivation is not None
        node, detail = (last_if, "implicit-else") if written is None else (written, "else")
        formula = self.derivation.else_count(last_if) if self.options.derive_arms else None
        if formula is None:
            index = self._counter("branch", node, detail)
            self.derivation.note_else(last_if, written, self._formula(index))
            return index, None if index is None else self.counter_ids[index]
        feature_id = self._feature("branch", node, detail)
        if feature_id is not None:
            self.derived[feature_id] = formula
        self.derivation.note_else(last_if, written, formula if feature_id is not None else None)
        return None, feature_id

    def _formula(self, index: int | None) -> Formula | None:
        return None if index is None else {self.counter_ids[index]: 1}

    def _variable_scope(self, name: str) -> str | None:
        """The scope a plain name belongs to, or None where nothing is recorded (class bodies)."""
        scope = self.scope
        if scope.kind == "class":
            return None
        if scope.kind == "module" or name in scope.globals:
            return MODULE_SCOPE
        if name in scope.nonlocals:
            for outer in reversed(self.scopes[:-1]):
                if outer.kind == "function":
                    return outer.qualname
            return MODULE_SCOPE
        return scope.qualname

    def _attribute_scope(self, dotted: str) -> tuple[str, str] | None:
        """(scope, name) for an attribute target: ``self.x`` in a method belongs to the class."""
        scope = self.scope
        if scope.kind == "class":
            return None
        head, _, rest = dotted.partition(".")
        if scope.receiver is not None and head == scope.receiver and scope.class_qualname:
            return scope.class_qualname, f"{head}.{rest}"
        return scope.qualname, dotted

    def _value_site(self, scope_name: str, name: str, node: cst.CSTNode, detail: str) -> int | None:
        """Register an assignment site of variable ``scope_name:name``; returns the variable index."""
        if not self._enabled("value") or name.startswith("_mantis_"):
            return None
        site_id = f"{self.rel_path}:{self.scope.qualname}:assign:{self.scope.next_ordinal('assign')}"
        if site_id in self.options.disabled:
            return None
        base = f"{self.rel_path}:{scope_name}:value:{name}"
        span = self._span(node)
        if base not in self.variable_index:
            self.variable_index[base] = len(self.variable_ids)
            self.variable_ids.append(base)
            for version in range(1, self.options.k + 1):
                self.features.append(
                    Feature(
                        id=f"{base}#{version}",
                        kind="value",
                        file=self.rel_path,
                        module=self.module_name,
                        qualname=scope_name,
                        span=span,
                        snippet=self._snippet(span[0]),
                        detail=detail,
                        variable=base,
                        version=version,
                    )
                )
        self.value_sites.append(
            ValueSite(
                id=site_id,
                variable=base,
                file=self.rel_path,
                qualname=self.scope.qualname,
                span=span,
                detail=detail,
                region=self.regions[-1],
            )
        )
        return self.variable_index[base]

    def _name_records(self, names: Iterable[cst.Name], node: cst.CSTNode, detail: str) -> list[cst.BaseExpression]:
        """Records of plain names assigned together: one guarded record, or a group's (one guard for all)."""
        wanted: list[tuple[int, str]] = []
        for name in names:
            scope_name = self._variable_scope(name.value)
            if scope_name is None:
                continue
            j = self._value_site(scope_name, name.value, node, detail)
            if j is not None:
                wanted.append((j, name.value))
        if len(wanted) < 2:
            return [codegen.record(j, cst.Name(name)) for j, name in wanted]
        self.groups.append(tuple(j for j, _ in wanted))
        return [codegen.record_group(len(self.groups) - 1, [cst.Name(name) for _, name in wanted])]

    def _note_block(self, owner: cst.CSTNode, index: int | None) -> None:
        assert self.derivation is not None
        self.derivation.note_block(owner, self._formula(index))

    def _push_region(self, index: int | None) -> None:
        self.regions.append(self.counter_ids[index] if index is not None else self.regions[-1])

    # ----------------------------------------------------------------- scopes: functions, lambdas, classes
    def _qualname(self, name: str) -> str:
        parent = self.scope
        base = name if parent.kind == "module" else f"{parent.qualname}.{name}"
        uses = self.qualname_uses[base] = self.qualname_uses.get(base, 0) + 1
        return base if uses == 1 else f"{base}@{uses}"

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.scopes.append(_Scope("class", self._qualname(node.name.value)))
        self.regions.append(self.regions[-1])

    def leave_ClassDef(self, original_node: cst.ClassDef, updated_node: cst.ClassDef) -> cst.ClassDef:
        self.scopes.pop()
        self.regions.pop()
        return updated_node

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        parent = self.scope
        scope = _Scope("function", self._qualname(node.name.value))
        scanner = DeclarationScanner()
        node.body.visit(scanner)
        scope.globals, scope.nonlocals = scanner.globals, scanner.nonlocals
        params = node.params
        positional = [*params.posonly_params, *params.params]
        if parent.kind == "class" and positional and not _is_staticmethod(node):
            scope.receiver = positional[0].name.value
            scope.class_qualname = parent.qualname
        detail = "async function" if node.asynchronous else ("method" if scope.receiver else "function")
        index = self._counter("call", node, detail, qualname=scope.qualname)
        self.scopes.append(scope)
        effects: list[cst.BaseExpression] = [codegen.tick(index)] if index is not None else []
        recorded = [
            p.name
            for p in [*positional, *params.kwonly_params]
            if p.name.value != scope.receiver
        ]
        if isinstance(params.star_arg, cst.Param):
            recorded.append(params.star_arg.name)
        if params.star_kwarg is not None:
            recorded.append(params.star_kwarg.name)
        self.regions.append(self.counter_ids[index] if index is not None else None)
        self._note_block(node, index)
        effects += self._name_records(recorded, node, "param")
        self.body_effects[id(node)] = effects

    def leave_FunctionDef(self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef) -> cst.FunctionDef:
        self.scopes.pop()
        self.regions.pop()
        effects = self.body_effects.pop(id(original_node))
        body, _ = codegen.insert_at_block_start(updated_node.body, effects, after_docstring=True)
        return updated_node.with_changes(body=body)

    def visit_Lambda(self, node: cst.Lambda) -> None:
        scope = _Scope("lambda", self._qualname("<lambda>"))
        index = self._counter("call", node, "lambda", qualname=scope.qualname)
        self.counter_of[id(node)] = index  # type: ignore[assignment]
        self.scopes.append(scope)
        self._push_region(index)

    def leave_Lambda(self, original_node: cst.Lambda, updated_node: cst.Lambda) -> cst.Lambda:
        self.scopes.pop()
        self.regions.pop()
        index = self.counter_of.pop(id(original_node))
        if index is None:
            return updated_node
        return updated_node.with_changes(body=codegen.and_(codegen.tick(index), codegen.paren(updated_node.body)))

    # ----------------------------------------------------------------- loops
    def visit_For(self, node: cst.For) -> None:
        index = self._counter("loop", node, "async for" if node.asynchronous else "for")
        self._push_region(index)
        self._note_block(node, index)
        effects: list[cst.BaseExpression] = [codegen.tick(index)] if index is not None else []
        effects += self._name_records(_target_names(node.target), node.target, "for-target")
        self.body_effects[id(node)] = effects
        if node.orelse is not None:
            self.else_role[id(node.orelse)] = "loop-else"

    def leave_For_body(self, node: cst.For) -> None:
        self.regions.pop()

    def leave_For(self, original_node: cst.For, updated_node: cst.For) -> cst.For:
        effects = self.body_effects.pop(id(original_node))
        body, _ = codegen.insert_at_block_start(updated_node.body, effects)
        return updated_node.with_changes(body=body)

    def visit_While(self, node: cst.While) -> None:
        index = self._counter("loop", node, "while")
        self.counter_of[id(node)] = index  # type: ignore[assignment]
        self._push_region(index)
        self._note_block(node, index)
        if node.orelse is not None:
            self.else_role[id(node.orelse)] = "loop-else"

    def leave_While_body(self, node: cst.While) -> None:
        self.regions.pop()

    def leave_While(self, original_node: cst.While, updated_node: cst.While) -> cst.While:
        index = self.counter_of.pop(id(original_node))
        if index is None:
            return updated_node
        return updated_node.with_changes(test=codegen.then_tick(updated_node.test, index))

    def visit_CompFor(self, node: cst.CompFor) -> None:
        index = self._counter("loop", node, "async comprehension" if node.asynchronous else "comprehension")
        self.counter_of[id(node)] = index  # type: ignore[assignment]

    def leave_CompFor(self, original_node: cst.CompFor, updated_node: cst.CompFor) -> cst.CompFor:
        index = self.counter_of.pop(id(original_node))
        if index is None:
            return updated_node
        return updated_node.with_changes(ifs=[cst.CompIf(test=codegen.tick(index)), *updated_node.ifs])

    # ----------------------------------------------------------------- branches
    def visit_If(self, node: cst.If) -> None:
        detail = "elif" if id(node) in self.elif_nodes else "if"
        index = self._counter("branch", node, detail)
        self.counter_of[id(node)] = index  # type: ignore[assignment]
        assert self.derivation is not None
        self.derivation.note_arm(node, self._formula(index))
        if isinstance(node.orelse, cst.If):
            self.elif_nodes.add(id(node.orelse))
        elif isinstance(node.orelse, cst.Else):
            self.else_role[id(node.orelse)] = "else"

    def visit_If_body(self, node: cst.If) -> None:
        self._push_region(self.counter_of[id(node)])

    def leave_If_body(self, node: cst.If) -> None:
        self.regions.pop()
        if node.orelse is None:
            # The implicit empty else arm, numbered after the arm it follows.
            self.else_counter_of[id(node)] = self._else_arm(node, None)[0]  # type: ignore[assignment]

    def visit_Else(self, node: cst.Else) -> None:
        role = self.else_role.get(id(node), "else")
        if role == "else":
            owner = self.get_metadata(ParentNodeProvider, node)
            assert isinstance(owner, cst.If)
            index, region = self._else_arm(owner, node)
        else:
            index = self._counter("branch", node, role)
            region = None if index is None else self.counter_ids[index]
            self._note_block(node, index)
        self.counter_of[id(node)] = index  # type: ignore[assignment]
        self.regions.append(region or self.regions[-1])

    def leave_Else(self, original_node: cst.Else, updated_node: cst.Else) -> cst.Else:
        self.regions.pop()
        index = self.counter_of.pop(id(original_node))
        if self.else_role.get(id(original_node), "else") == "else":
            # If-else arms are counted on the last test (see leave_If); keep the index for it.
            self.else_counter_of[id(original_node)] = index  # type: ignore[assignment]
            return updated_node
        if index is None:
            return updated_node
        body, _ = codegen.insert_at_block_start(updated_node.body, [codegen.tick(index)])
        return updated_node.with_changes(body=body)

    def leave_If(self, original_node: cst.If, updated_node: cst.If) -> cst.If:
        index = self.counter_of.pop(id(original_node))
        test = updated_node.test
        if index is not None:
            test = codegen.then_tick(test, index)
        if isinstance(original_node.orelse, cst.Else):
            else_index = self.else_counter_of.pop(id(original_node.orelse), None)
        elif original_node.orelse is None:
            else_index = self.else_counter_of.pop(id(original_node), None)
        else:
            else_index = None
        if else_index is not None:
            test = codegen.else_tick(test, else_index)
        return updated_node.with_changes(test=test)

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self.counter_of[id(node)] = self._counter("branch", node, "ifexp-true")  # type: ignore[assignment]
        self.false_counter_of[id(node)] = self._counter("branch", node, "ifexp-false")  # type: ignore[assignment]

    def leave_IfExp(self, original_node: cst.IfExp, updated_node: cst.IfExp) -> cst.IfExp:
        true_index = self.counter_of.pop(id(original_node))
        false_index = self.false_counter_of.pop(id(original_node))
        changes: dict[str, cst.BaseExpression] = {}
        if true_index is not None:
            changes["body"] = codegen.paren(codegen.and_(codegen.tick(true_index), codegen.paren(updated_node.body)))
        if false_index is not None:
            changes["orelse"] = codegen.paren(
                codegen.and_(codegen.tick(false_index), codegen.paren(updated_node.orelse))
            )
        return updated_node.with_changes(**changes)

    def visit_MatchCase(self, node: cst.MatchCase) -> None:
        index = self._counter("branch", node, "case")
        self.counter_of[id(node)] = index  # type: ignore[assignment]
        self._push_region(index)
        self._note_block(node, index)

    def leave_MatchCase(self, original_node: cst.MatchCase, updated_node: cst.MatchCase) -> cst.MatchCase:
        self.regions.pop()
        index = self.counter_of.pop(id(original_node))
        if index is None:
            return updated_node
        guard = codegen.tick(index) if updated_node.guard is None else codegen.then_tick(updated_node.guard, index)
        return updated_node.with_changes(
            guard=guard,
            whitespace_before_if=cst.SimpleWhitespace(" "),
            whitespace_after_if=cst.SimpleWhitespace(" "),
        )

    # ----------------------------------------------------------------- exceptions
    def visit_Try(self, node: cst.Try) -> None:
        if node.orelse is not None:
            self.else_role[id(node.orelse)] = "try-else"

    def visit_TryStar(self, node: cst.TryStar) -> None:
        if node.orelse is not None:
            self.else_role[id(node.orelse)] = "try-else"

    def _visit_handler(self, node: cst.ExceptHandler | cst.ExceptStarHandler, detail: str) -> None:
        index = self._counter("exception", node, detail)
        self.counter_of[id(node)] = index  # type: ignore[assignment]
        self._push_region(index)
        self._note_block(node, index)

    def _leave_handler(self, original_node: cst.CSTNode, updated_node: cst.ExceptHandler | cst.ExceptStarHandler):
        self.regions.pop()
        index = self.counter_of.pop(id(original_node))
        if index is None:
            return updated_node
        body, _ = codegen.insert_at_block_start(updated_node.body, [codegen.tick(index)])
        return updated_node.with_changes(body=body)

    def visit_ExceptHandler(self, node: cst.ExceptHandler) -> None:
        self._visit_handler(node, "except")

    def leave_ExceptHandler(self, original_node: cst.ExceptHandler, updated_node: cst.ExceptHandler):
        return self._leave_handler(original_node, updated_node)

    def visit_ExceptStarHandler(self, node: cst.ExceptStarHandler) -> None:
        self._visit_handler(node, "except*")

    def leave_ExceptStarHandler(self, original_node: cst.ExceptStarHandler, updated_node: cst.ExceptStarHandler):
        return self._leave_handler(original_node, updated_node)

    # ----------------------------------------------------------------- values
    def leave_SimpleStatementLine(
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ) -> cst.SimpleStatementLine:
        return updated_node.with_changes(body=self._with_value_records(original_node.body, updated_node.body))

    def leave_SimpleStatementSuite(
        self, original_node: cst.SimpleStatementSuite, updated_node: cst.SimpleStatementSuite
    ) -> cst.SimpleStatementSuite:
        return updated_node.with_changes(body=self._with_value_records(original_node.body, updated_node.body))

    def _with_value_records(self, originals, updated) -> list[cst.BaseSmallStatement]:
        if not self._enabled("value") or self.scope.kind == "class":
            return list(updated)
        body: list[cst.BaseSmallStatement] = []
        for original, stmt in zip(originals, updated):
            stmt, after = self._record_assignment(original, stmt)
            body.append(stmt)
            body.extend(cst.Expr(value=e) for e in after)
        return body

    def _record_assignment(self, original, stmt) -> tuple[cst.BaseSmallStatement, list[cst.BaseExpression]]:
        """Returns the (possibly tapped) statement and the record expressions to run after it."""
        if isinstance(stmt, cst.Assign):
            after: list[cst.BaseExpression] = []
            for target in stmt.targets:
                after += self._name_records(_target_names(target.target), original, "name")
            attribute_targets = [t.target for t in stmt.targets if isinstance(t.target, cst.Attribute)]
            if len(stmt.targets) == 1 and attribute_targets:
                j = self._attribute_site(attribute_targets[0], original)
                if j is not None:
                    stmt = stmt.with_changes(value=tapped(j, stmt.value))
            return stmt, after
        if isinstance(stmt, cst.AnnAssign) and stmt.value is not None:
            if isinstance(stmt.target, cst.Name):
                return stmt, self._name_records([stmt.target], original, "name")
            if isinstance(stmt.target, cst.Attribute):
                j = self._attribute_site(stmt.target, original)
                if j is not None:
                    return stmt.with_changes(value=tapped(j, stmt.value)), []
            return stmt, []
        if isinstance(stmt, cst.AugAssign):
            if isinstance(stmt.target, cst.Name):
                return stmt, self._name_records([stmt.target], original, "name")
            if isinstance(stmt.target, cst.Attribute):
                j = self._attribute_site(stmt.target, original)
                if j is not None:
                    return stmt, [codegen.record(j, stmt.target.deep_clone())]
        return stmt, []

    def _attribute_site(self, target: cst.Attribute, node: cst.CSTNode) -> int | None:
        dotted = _dotted(target)
        if dotted is None:
            return None
        placed = self._attribute_scope(dotted)
        if placed is None:
            return None
        return self._value_site(placed[0], placed[1], node, "attribute")

    def leave_NamedExpr(self, original_node: cst.NamedExpr, updated_node: cst.NamedExpr) -> cst.BaseExpression:
        if not isinstance(updated_node.target, cst.Name):
            return updated_node
        effects = self._name_records([updated_node.target], original_node, "walrus")
        if not effects:
            return updated_node
        # ((n := v), RECORD)[0]: the value of the walrus, recorded after the binding.
        bare = updated_node.with_changes(lpar=[], rpar=[])
        tup = cst.Tuple(
            elements=[cst.Element(value=codegen.paren(bare)), *[cst.Element(value=e) for e in effects]],
            lpar=[cst.LeftParen()],
            rpar=[cst.RightParen()],
        )
        return cst.Subscript(
            value=tup,
            slice=[cst.SubscriptElement(slice=cst.Index(value=cst.Integer("0")))],
            lpar=list(updated_node.lpar),
            rpar=list(updated_node.rpar),
        )


def module_name_for(rel_path: str) -> str:
    """``pkg/sub/mod.py`` -> ``pkg.sub.mod``; ``pkg/__init__.py`` -> ``pkg``."""
    parts = rel_path[:-3].split("/") if rel_path.endswith(".py") else rel_path.split("/")
    if parts and parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts) or "__init__"


def _header(rel_path: str, counter_ids: list[str], variable_ids: list[str], k: int,
            derived: dict[str, Formula], groups: list[tuple[int, ...]]) -> list[cst.BaseSmallStatement]:
    ids = lambda values: "(" + "".join(repr(v) + ", " for v in values) + ")"  # noqa: E731
    # Derived counts as (id, ((counter index, coefficient), ...)): evaluated when the counts are written.
    slot = {cid: n for n, cid in enumerate(counter_ids)}
    formulas = ids((fid, tuple((slot[cid], c) for cid, c in formula.items())) for fid, formula in derived.items())
    names = [codegen.COUNTERS, codegen.NEXT, codegen.GUARDS, codegen.RECORD]
    extra = ""
    if derived or groups:
        extra += ", " + formulas
    if groups:
        names.append(codegen.GROUP_GUARDS)
        extra += ", " + ids(groups)
    code = (
        f"import mantispy.runtime.counters as _mantis_rt; "
        f"{', '.join(names)} = _mantis_rt.register("
        f"{rel_path!r}, {ids(counter_ids)}, {ids(variable_ids)}, {k}{extra})\n"
    )
    line = cst.parse_statement(code)
    assert isinstance(line, cst.SimpleStatementLine)
    return list(line.body)


def _is_future_import(stmt: cst.BaseStatement) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine) and all(
        isinstance(s, cst.ImportFrom) and isinstance(s.module, cst.Name) and s.module.value == "__future__"
        for s in stmt.body
    )


def insert_header(module: cst.Module, header: list[cst.BaseSmallStatement]) -> tuple[cst.Module, bool]:
    """Put the runtime import after the docstring and future imports, on an existing line if possible."""
    body = list(module.body)
    anchor = None  # index of the line we append to
    if body and codegen.is_docstring_line(body[0]):
        anchor = 0
    position = 0 if anchor is None else 1
    while position < len(body) and _is_future_import(body[position]):
        anchor = position
        position += 1
    if anchor is not None:
        line = body[anchor]
        assert isinstance(line, cst.SimpleStatementLine)
        body[anchor] = line.with_changes(body=[*line.body, *header])
        return module.with_changes(body=body), False
    if not body:
        return module.with_changes(body=[cst.SimpleStatementLine(body=header)]), False
    first = body[0]
    if isinstance(first, cst.SimpleStatementLine):
        body[0] = first.with_changes(body=[*header, *first.body])
        return module.with_changes(body=body), False
    # A blank line of the file's header comments, or above the first statement, can take the header.
    new_line = cst.SimpleStatementLine(body=header)
    top = list(module.header)
    blank = next((n for n in range(len(top)) if top[n].comment is None), None)
    if blank is not None:
        body[0:1] = [new_line, first.with_changes(leading_lines=[*top[blank + 1 :], *first.leading_lines])]
        return module.with_changes(header=top[:blank], body=body), False
    leading = list(first.leading_lines)
    blank = next((n for n in range(len(leading)) if leading[n].comment is None), None)
    if blank is not None:
        body[0:1] = [
            new_line.with_changes(leading_lines=leading[:blank]),
            first.with_changes(leading_lines=leading[blank + 1 :]),
        ]
        return module.with_changes(body=body), False
    # Keep comments (shebang, coding, licence) above the new line.
    body[0:1] = [new_line.with_changes(leading_lines=leading), first.with_changes(leading_lines=[])]
    return module.with_changes(body=body), True


def instrument_source(source: str, rel_path: str, options: Options | None = None) -> ModuleResult:
    """Instrument one module's source text. Raises ``libcst.ParserSyntaxError`` on bad syntax."""
    options = options or Options()
    module = cst.parse_module(source)
    wrapper = cst.MetadataWrapper(module, unsafe_skip_copy=True)
    instrumenter = Instrumenter(rel_path, module_name_for(rel_path), source, options)
    new_module = wrapper.visit(instrumenter)
    if instrumenter.counter_ids or instrumenter.variable_ids or instrumenter.derived:
        header = _header(rel_path, instrumenter.counter_ids, instrumenter.variable_ids, options.k,
                         instrumenter.derived, instrumenter.groups)
        new_module, _ = insert_header(new_module, header)
    code = new_module.code
    # Lines are only ever added, never removed, so the difference is exactly the lines that moved.
    shifted = code.count("\n") - source.count("\n")
    return ModuleResult(
        code=code,
        features=instrumenter.features,
        value_sites=instrumenter.value_sites,
        counter_ids=instrumenter.counter_ids,
        variable_ids=instrumenter.variable_ids,
        shifted_lines=shifted,
        derived=instrumenter.derived,
    )
