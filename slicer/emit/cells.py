"""Closure cells: the statements that bind a variable a nested function (or lambda) reads from a function
around it.

The SDG links a read to the writes that reach it within a call; a closure that outlives its maker's call
(pyparsing's ``_trim_arity`` returns ``wrapper``, which reads and rebinds ``found_arity`` and ``limit``)
reads bindings the SDG never connects to it, so a slice may keep the read and cut every binding, and the
evaluator fails with ``NameError``. The planner therefore keeps, for every kept statement that reads such
a *cell*, each simple statement that binds it (in the owning function, and in the nested functions that
declare it ``nonlocal``), and reports them as added code, which the slicer then slices for as well (see
``FilePlan.added``).

Scopes follow Python's rules: a name is local to a function when the function binds it and does not
declare it ``global``/``nonlocal``; a free name resolves to the nearest enclosing function binding it,
skipping class bodies; comprehensions are part of the function around them (a read in one is that
function's). Bindings that are not simple statements (``for`` targets, ``with ... as``, ``except ... as``,
``match`` captures) are not kept by this rule; parameters always stay with their ``def``.
"""

from __future__ import annotations

import ast
import weakref
from dataclasses import dataclass, field

import libcst as cst

from .source import ParsedFile

_SIMPLE_BINDERS = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr, ast.Import, ast.ImportFrom, ast.Delete,
                   ast.Return)
"""Simple statements that may bind a name (``Expr``/``Return`` through an assignment expression)."""

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


@dataclass
class _Scope:
    """One function, lambda, class or module scope of the ast."""

    node: ast.AST
    parent: _Scope | None
    bound: dict[str, list[ast.stmt]] = field(default_factory=dict)  # name -> binding statements
    declared_global: set[str] = field(default_factory=set)
    declared_nonlocal: set[str] = field(default_factory=set)
    reads: list[tuple[str, ast.stmt]] = field(default_factory=list)  # (name, innermost statement)

    @property
    def is_function(self) -> bool:
        return isinstance(self.node, _FUNCTIONS)

    def owns(self, name: str) -> bool:
        """``name`` is a local variable of this scope."""
        return name in self.bound and name not in self.declared_global and name not in self.declared_nonlocal


class _ScopeBuilder(ast.NodeVisitor):
    """Collects every scope's bindings, declarations and reads, each with its innermost statement."""

    def __init__(self, module: ast.Module) -> None:
        self.root = _Scope(module, None)
        self.scopes: list[_Scope] = [self.root]
        self.scope = self.root
        self.statement: ast.stmt | None = None
        self.comprehension_names: list[set[str]] = []  # targets of the comprehensions around, innermost last

    def bind(self, name: str, scope: _Scope | None = None) -> None:
        target = scope or self.scope
        statements = target.bound.setdefault(name, [])
        if self.statement is not None:
            statements.append(self.statement)

    def enter(self, node: ast.AST) -> _Scope:
        scope = _Scope(node, self.scope)
        self.scopes.append(scope)
        return scope

    def visit(self, node: ast.AST) -> None:
        if isinstance(node, ast.stmt):
            outer, self.statement = self.statement, node
            super().visit(node)
            self.statement = outer
        else:
            super().visit(node)

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> None:
        for default in [*node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)]:
            self.visit(default)
        if not isinstance(node, ast.Lambda):
            for decorator in node.decorator_list:
                self.visit(decorator)
            self.bind(node.name)
        outer, outer_statement, outer_names = self.scope, self.statement, self.comprehension_names
        self.scope, self.comprehension_names = self.enter(node), []
        arguments = node.args
        for arg in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs,
                    *(a for a in (arguments.vararg, arguments.kwarg) if a is not None)]:
            self.scope.bound.setdefault(arg.arg, [])
        if isinstance(node, ast.Lambda):
            self.visit(node.body)
        else:
            for stmt in node.body:
                self.visit(stmt)
        self.scope, self.statement, self.comprehension_names = outer, outer_statement, outer_names

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _function  # type: ignore[assignment]

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for expr in [*node.decorator_list, *node.bases, *(k.value for k in node.keywords)]:
            self.visit(expr)
        self.bind(node.name)
        outer, outer_statement, outer_names = self.scope, self.statement, self.comprehension_names
        self.scope, self.comprehension_names = self.enter(node), []
        for stmt in node.body:
            self.visit(stmt)
        self.scope, self.statement, self.comprehension_names = outer, outer_statement, outer_names

    def _comprehension(self, node: ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp) -> None:
        names = {n.id for g in node.generators for n in ast.walk(g.target) if isinstance(n, ast.Name)}
        self.comprehension_names.append(names)
        for generator in node.generators:
            self.visit(generator.iter)
            for condition in generator.ifs:
                self.visit(condition)
        for part in ((node.key, node.value) if isinstance(node, ast.DictComp) else (node.elt,)):
            self.visit(part)
        self.comprehension_names.pop()

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _comprehension  # type: ignore[assignment]

    def visit_Global(self, node: ast.Global) -> None:
        self.scope.declared_global.update(node.names)

    def visit_Nonlocal(self, node: ast.Nonlocal) -> None:
        self.scope.declared_nonlocal.update(node.names)

    def visit_Name(self, node: ast.Name) -> None:
        if any(node.id in names for names in self.comprehension_names):
            return
        if isinstance(node.ctx, ast.Load):
            if self.statement is not None:
                self.scope.reads.append((node.id, self.statement))
        else:
            self.bind(node.id)

    def visit_NamedExpr(self, node: ast.NamedExpr) -> None:
        self.visit(node.value)
        if isinstance(node.target, ast.Name):
            self.bind(node.target.id)

    def visit_alias(self, node: ast.alias) -> None:
        if node.name != "*":
            self.bind(node.asname or node.name.split(".")[0])

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        if node.name:
            self.bind(node.name)
        self.generic_visit(node)


def _owner(reader: _Scope, name: str) -> _Scope | None:
    """The function scope whose local ``name`` a read in ``reader`` (a function or lambda) refers to, when
    that is an enclosing function; None for a local, global or builtin name."""
    if name in reader.declared_global or reader.owns(name):
        return None
    scope = reader.parent
    while scope is not None:
        if isinstance(scope.node, ast.ClassDef):
            scope = scope.parent
            continue
        if not scope.is_function or name in scope.declared_global:
            return None
        if scope.owns(name):
            return scope
        scope = scope.parent
    return None


@dataclass
class CellMap:
    """For one file: the libcst statements that read a closure cell, each with the simple statements (and
    ``def``/``class`` statements) binding that cell."""

    bindings_of_reader: dict[int, tuple[cst.CSTNode, ...]] = field(default_factory=dict)

    def bindings_read_by(self, kept: set[int]) -> dict[int, cst.CSTNode]:
        """The binding statements (by id) of every cell that a kept statement reads."""
        found: dict[int, cst.CSTNode] = {}
        for reader, bindings in self.bindings_of_reader.items():
            if reader in kept:
                for node in bindings:
                    found[id(node)] = node
        return found


_CELL_MAPS: weakref.WeakKeyDictionary[ParsedFile, CellMap] = weakref.WeakKeyDictionary()


def cell_map(parsed: ParsedFile) -> CellMap:
    """The file's closure cells (memoised per parsed file)."""
    found = _CELL_MAPS.get(parsed)
    if found is None:
        found = _CELL_MAPS[parsed] = _build_cell_map(parsed)
    return found


def _build_cell_map(parsed: ParsedFile) -> CellMap:
    tree = parsed.source.tree
    builder = _ScopeBuilder(tree)
    builder.visit(tree)
    nested = [s for s in builder.scopes if s.is_function and s.parent is not None and s.parent is not builder.root]
    if not nested:
        return CellMap()
    statements = _statement_index(parsed)
    reader_bindings: dict[int, dict[int, cst.CSTNode]] = {}
    for reader in nested:
        for name, statement in reader.reads:
            owner = _owner(reader, name)
            if owner is None:
                continue
            bindings = _binding_statements(builder.scopes, owner, name)
            read_at = _cst_statement(statements, statement)
            if read_at is None or not bindings:
                continue
            known = reader_bindings.setdefault(id(read_at), {})
            for stmt in bindings:
                node = _cst_statement(statements, stmt)
                if node is not None:
                    known[id(node)] = node
    return CellMap({reader: tuple(nodes.values()) for reader, nodes in reader_bindings.items() if nodes})


def _binding_statements(scopes: list[_Scope], owner: _Scope, name: str) -> list[ast.stmt]:
    """The statements binding ``owner``'s ``name``: in the owner, and in nested functions declaring it
    ``nonlocal`` (that resolve to the owner); simple statements and ``def``/``class`` only."""
    found = list(owner.bound.get(name, []))
    for scope in scopes:
        if scope is not owner and name in scope.declared_nonlocal and _owner(scope, name) is owner:
            found.extend(scope.bound.get(name, []))
    return [s for s in found if isinstance(s, (*_SIMPLE_BINDERS, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]


_Position = tuple[int, int]


def _statement_index(parsed: ParsedFile) -> dict[tuple[str, _Position], cst.CSTNode]:
    """libcst statements by ast position: simple statements and compound headers by their first byte,
    ``def``/``class`` statements by name and the line of their name."""
    index: dict[tuple[str, _Position], cst.CSTNode] = {}

    class Collector(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
                line = parsed.byte_span(node.name)[0]
                index[(node.name.value, (line, 0))] = node
            elif isinstance(node, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
                start = parsed.byte_span(node)
                index[("", (start[0], start[1]))] = node
            return True

    parsed.module.visit(Collector())
    return index


def _cst_statement(index: dict[tuple[str, _Position], cst.CSTNode], stmt: ast.stmt) -> cst.CSTNode | None:
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return index.get((stmt.name, (stmt.lineno, 0)))
    return index.get(("", (stmt.lineno, stmt.col_offset)))
