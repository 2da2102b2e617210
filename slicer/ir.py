"""The program representation the slicer works on: code units and their control-flow graphs.

A *code unit* is what CPython compiles to one code object: a module body, a class body, a function,
a lambda, a comprehension. Each gets a :class:`CFG` whose vertices are statements or the parts of
compound statements that do work on their own (an ``if`` test, a ``for`` loop's iterator and its
``next``, a ``with`` enter/exit, an ``except`` clause, a ``match`` case). Vertex kinds play the role of
WALA's statement kinds; a vertex always maps back to a source span.

Edge kinds: ``normal``; ``true`` / ``false`` out of a test (``true`` into a loop body, ``false`` when a
loop is exhausted, a handler does not match, a case fails); ``exception`` from a vertex that may raise
to the handler that would see the exception (or the unit's ``raise-exit``); ``pseudo`` from a jump
(``return``, ``break``, ``continue``, ``raise``) to the statement that would follow it if it were not
there: never executed, used only by control dependence (see :mod:`cfg`).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

import networkx as nx

from mantispy.core.types import Span

VERTEX_KINDS = (
    "entry",  # the unit starts (parameters are bound here)
    "exit",  # normal end (return)
    "raise-exit",  # an exception leaves the unit
    "stmt",  # a simple statement
    "def",  # def / class statement: evaluates decorators, defaults, bases; binds the name
    "test",  # if / while / elif test
    "for-iter",  # iter(iterable), once per loop entry
    "for-next",  # next() and target binding, once per iteration (false: exhausted)
    "with-enter",  # context expression, __enter__, target binding (one per with item)
    "with-exit",  # __exit__ when the block is left (may swallow an exception)
    "handler",  # except / except* clause: type match and name binding (false: no match)
    "match-subject",  # the subject of a match statement
    "case",  # one case: pattern match, bindings and guard (false: no match)
    "expr",  # the body of a lambda, or a comprehension's element
)
EDGE_KINDS = ("normal", "true", "false", "exception", "pseudo")


@dataclass(eq=False)
class Vertex:
    """One CFG vertex."""

    id: int
    kind: str
    node: ast.AST | None  # the statement / expression / clause it stands for
    span: Span | None
    label: str

    def __repr__(self) -> str:
        return f"<{self.id} {self.kind} {self.label}>"


@dataclass(eq=False)
class CodeUnit:
    """A module body, class body, function, lambda or comprehension."""

    qualname: str  # "<module>" or dotted, e.g. "Index.search", "main.<listcomp>"
    kind: str  # "module", "class", "function", "lambda", "comprehension"
    node: ast.AST
    file: str
    parent: CodeUnit | None = None
    children: list[CodeUnit] = field(default_factory=list)

    @property
    def span(self) -> Span:
        return span_of(self.node)


@dataclass(eq=False)
class CFG:
    """The control-flow graph of one code unit."""

    unit: CodeUnit
    graph: nx.DiGraph
    vertices: dict[int, Vertex]
    entry: Vertex
    exit: Vertex
    raise_exit: Vertex

    def successors(self, vertex: Vertex, kind: str | None = None) -> list[Vertex]:
        """Successors, optionally only along edges of one kind."""
        return [
            self.vertices[s]
            for s in self.graph.successors(vertex.id)
            if kind is None or self.graph.edges[vertex.id, s]["kind"] == kind
        ]

    def statements(self) -> list[Vertex]:
        """Vertices that stand for source (everything but entry and the exits), in id order."""
        return [v for v in self.vertices.values() if v.kind not in ("entry", "exit", "raise-exit")]

    def to_dot(self) -> str:
        """Graphviz text for people to look at."""
        lines = [f'digraph "{self.unit.qualname}" {{', "  node [shape=box, fontname=monospace];"]
        for v in self.vertices.values():
            where = f"{v.span[0]}: " if v.span else ""
            lines.append(f'  n{v.id} [label="{_dot_escape(where + v.label)}"];')
        styles = {"true": 'color=darkgreen, label="T"', "false": 'color=red, label="F"',
                  "exception": "style=dashed, color=gray", "normal": "", "pseudo": "style=dotted, color=gray80"}
        for a, b, data in self.graph.edges(data=True):
            lines.append(f"  n{a} -> n{b} [{styles[data['kind']]}];")
        lines.append("}")
        return "\n".join(lines)


def span_of(node: ast.AST) -> Span | None:
    """The source span of an ast node, if it has one (a with item or a match case: from its parts)."""
    if isinstance(node, ast.withitem):
        first, last = node.context_expr, node.optional_vars or node.context_expr
        return (first.lineno, first.col_offset, last.end_lineno or last.lineno, last.end_col_offset or 0)
    if isinstance(node, ast.match_case):
        first, last = node.pattern, node.guard or node.pattern
        return (first.lineno, first.col_offset, last.end_lineno or last.lineno, last.end_col_offset or 0)
    if not hasattr(node, "lineno"):
        return None
    return (node.lineno, node.col_offset, node.end_lineno or node.lineno, node.end_col_offset or node.col_offset)


def _dot_escape(text: str) -> str:
    text = text if len(text) <= 60 else text[:57] + "..."
    return text.replace("\\", "\\\\").replace('"', '\\"')
