"""Control-flow graphs for every code unit of a module (Python 3.11 syntax), built from ``ast``.

Modelling choices, all conservative (they may add paths that cannot happen, never drop one):

* ``try/finally``: the ``finally`` body is built once. It is entered from every way out of the
  ``try`` (normal end, each handler, ``else``, an exception, a ``return``/``break``/``continue`` that
  crosses it) and its end leads to every continuation that entered it. A ``return``/``break``/
  ``continue`` inside the ``finally`` body leaves it as written.
* Exceptions: every vertex that may raise (:func:`may_raise`: anything but ``pass``, jumps, scope
  declarations and plain copies of names and constants) has an ``exception`` edge to the first
  handler of the innermost enclosing ``try`` (handlers chain through ``false`` edges when they do not
  match), else to the innermost ``finally``, else to the unit's ``raise-exit``. ``with`` blocks route
  exceptions through their ``with-exit`` vertex, which may swallow them.
* A comprehension is its own unit, as in CPython: its outermost iterable is evaluated by the unit that
  contains it (``for-iter`` is absent from the comprehension's CFG), the rest inside.
* Unreachable statements (after ``return`` etc.) still get vertices, with no predecessors.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

import networkx as nx

from .ir import CFG, CodeUnit, Vertex, span_of

COMPREHENSIONS = {ast.ListComp: "<listcomp>", ast.SetComp: "<setcomp>", ast.DictComp: "<dictcomp>", ast.GeneratorExp: "<genexpr>"}
SAFE_STATEMENTS = (ast.Pass, ast.Break, ast.Continue, ast.Global, ast.Nonlocal)

Dangling = list[tuple[int, str]]  # (vertex id, kind of the edge that will leave it)


def may_raise(node: ast.AST | None) -> bool:
    """Whether executing ``node`` may raise (conservative: True unless obviously not)."""
    if node is None or isinstance(node, SAFE_STATEMENTS):
        return False
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
        return False  # a docstring
    if isinstance(node, ast.Assign) and all(isinstance(t, ast.Name) for t in node.targets):
        return not isinstance(node.value, (ast.Constant, ast.Name))
    if isinstance(node, ast.Return):
        return node.value is not None and not isinstance(node.value, (ast.Constant, ast.Name))
    return True


def collect_units(tree: ast.Module, file: str) -> CodeUnit:
    """The unit tree of a module: the module body and, nested, every class/function/lambda/comprehension."""
    root = CodeUnit("<module>", "module", tree, file)
    uses: dict[str, int] = {}

    def qualname(parent: CodeUnit, name: str) -> str:
        base = name if parent.kind == "module" else f"{parent.qualname}.{name}"
        uses[base] = uses.get(base, 0) + 1
        return base if uses[base] == 1 else f"{base}@{uses[base]}"

    def visit(node: ast.AST, parent: CodeUnit) -> None:
        for child in ast.iter_child_nodes(node):
            unit = None
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                unit = CodeUnit(qualname(parent, child.name), "function", child, file, parent)
            elif isinstance(child, ast.ClassDef):
                unit = CodeUnit(qualname(parent, child.name), "class", child, file, parent)
            elif isinstance(child, ast.Lambda):
                unit = CodeUnit(qualname(parent, "<lambda>"), "lambda", child, file, parent)
            elif type(child) in COMPREHENSIONS:
                unit = CodeUnit(qualname(parent, COMPREHENSIONS[type(child)]), "comprehension", child, file, parent)
            if unit is None:
                visit(child, parent)
                continue
            parent.children.append(unit)
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                # decorators, defaults, annotations and bases run in the enclosing unit
                for outer in [*child.decorator_list, *getattr(child, "bases", []), *getattr(child, "keywords", [])]:
                    visit_expr(outer, parent)
                if not isinstance(child, ast.ClassDef):
                    visit_expr(child.args, parent)
                    if child.returns is not None:
                        visit_expr(child.returns, parent)
                for stmt in child.body:
                    visit_stmt(stmt, unit)
            elif isinstance(child, ast.Lambda):
                visit_expr(child.args, parent)
                visit_expr(child.body, unit)
            else:
                first, *rest = child.generators
                visit_expr(first.iter, parent)  # evaluated by the enclosing unit
                for part in [first.target, *first.ifs, *rest, *_elements(child)]:
                    visit_expr(part, unit)

    def visit_stmt(node: ast.AST, parent: CodeUnit) -> None:
        visit(ast.Module(body=[node], type_ignores=[]), parent)

    def visit_expr(node: ast.AST, parent: CodeUnit) -> None:
        wrapper = ast.Expr(value=node) if isinstance(node, ast.expr) else node
        visit(ast.Module(body=[wrapper], type_ignores=[]), parent)

    visit(tree, root)
    return root


def _elements(node: ast.AST) -> list[ast.AST]:
    return [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]


def iter_units(root: CodeUnit):
    """Every unit of the tree, parents before children."""
    yield root
    for child in root.children:
        yield from iter_units(child)


@dataclass
class _Loop:
    head: int
    breaks: Dangling = field(default_factory=list)


@dataclass
class _Try:
    first_handler: int


@dataclass
class _Finally:
    entries: Dangling = field(default_factory=list)
    pending: set[str] = field(default_factory=set)  # "return", "break", "continue", "raise"


class _Builder:
    def __init__(self, unit: CodeUnit) -> None:
        self.unit = unit
        self.graph = nx.DiGraph()
        self.vertices: dict[int, Vertex] = {}
        self.frames: list[_Loop | _Try | _Finally] = []
        self.entry = self.vertex("entry", None, f"entry {unit.qualname}")
        self.exit = self.vertex("exit", None, "exit")
        self.raise_exit = self.vertex("raise-exit", None, "raise-exit")

    # -------------------------------------------------------------- plumbing
    def vertex(self, kind: str, node: ast.AST | None, label: str) -> int:
        vid = len(self.vertices)
        self.vertices[vid] = Vertex(vid, kind, node, span_of(node) if node is not None else None, label)
        self.graph.add_node(vid)
        return vid

    def edge(self, a: int, b: int, kind: str) -> None:
        if not self.graph.has_edge(a, b):
            self.graph.add_edge(a, b, kind=kind)
        elif self.graph.edges[a, b]["kind"] in ("exception", "pseudo") and kind not in ("exception", "pseudo"):
            self.graph.edges[a, b]["kind"] = kind  # an executable edge to the same vertex says more

    def connect(self, preds: Dangling, target: int) -> None:
        for vid, kind in preds:
            self.edge(vid, target, kind)

    def node_vertex(self, kind: str, node: ast.AST, label: str, preds: Dangling, raises: bool | None = None) -> int:
        vid = self.vertex(kind, node, label)
        self.connect(preds, vid)
        if may_raise(node) if raises is None else raises:
            self.throw(vid)
        return vid

    # -------------------------------------------------------------- jumps
    def throw(self, vid: int, frames: list | None = None) -> None:
        """Exception edge from vid to whatever catches it first."""
        for frame in reversed(self.frames if frames is None else frames):
            if isinstance(frame, _Try):
                self.edge(vid, frame.first_handler, "exception")
                return
            if isinstance(frame, _Finally):
                frame.entries.append((vid, "exception"))
                frame.pending.add("raise")
                return
        self.edge(vid, self.raise_exit, "exception")

    def jump(self, kind: str, preds: Dangling, frames: list | None = None) -> None:
        """Route return/break/continue from preds, through any finally bodies they cross."""
        frames = self.frames if frames is None else frames
        for depth in range(len(frames) - 1, -1, -1):
            frame = frames[depth]
            if isinstance(frame, _Finally):
                frame.entries.extend(preds)
                frame.pending.add(kind)
                return
            if isinstance(frame, _Loop) and kind in ("break", "continue"):
                if kind == "break":
                    frame.breaks.extend(preds)
                else:
                    self.connect(preds, frame.head)
                return
        if kind == "return":
            self.connect(preds, self.exit)
        elif kind == "raise":
            for vid, _ in preds:
                self.throw(vid, frames)
        # a break/continue outside any loop is a SyntaxError that ast already rejected

    # -------------------------------------------------------------- statements
    def block(self, stmts: list[ast.stmt], preds: Dangling) -> Dangling:
        for stmt in stmts:
            preds = self.statement(stmt, preds)
        return preds

    def statement(self, s: ast.stmt, preds: Dangling) -> Dangling:
        if isinstance(s, ast.If):
            test = self.node_vertex("test", s.test, f"if {_text(s.test)}", preds)
            return self.block(s.body, [(test, "true")]) + self.block(s.orelse, [(test, "false")])
        if isinstance(s, ast.While):
            test = self.node_vertex("test", s.test, f"while {_text(s.test)}", preds)
            loop = _Loop(test)
            self.frames.append(loop)
            body_end = self.block(s.body, [(test, "true")])
            self.frames.pop()
            self.connect(body_end, test)
            return self.block(s.orelse, [(test, "false")]) + loop.breaks
        if isinstance(s, (ast.For, ast.AsyncFor)):
            start = self.node_vertex("for-iter", s.iter, f"iter({_text(s.iter)})", preds)
            step = self.node_vertex("for-next", s.target, f"{_text(s.target)} = next(...)", [(start, "normal")], raises=True)
            loop = _Loop(step)
            self.frames.append(loop)
            body_end = self.block(s.body, [(step, "true")])
            self.frames.pop()
            self.connect(body_end, step)
            return self.block(s.orelse, [(step, "false")]) + loop.breaks
        if isinstance(s, (ast.With, ast.AsyncWith)):
            return self.with_statement(s, preds)
        if isinstance(s, (ast.Try, ast.TryStar)):
            return self.try_statement(s, preds)
        if isinstance(s, ast.Match):
            return self.match_statement(s, preds)
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            word = "class" if isinstance(s, ast.ClassDef) else "def"
            return [(self.node_vertex("def", s, f"{word} {s.name}", preds), "normal")]
        vid = self.node_vertex("stmt", s, _text(s), preds)
        # A jump also gets a "pseudo" edge to where execution would go without it (Ball & Horwitz's
        # augmented CFG): dataflow ignores it, control dependence uses it, so the statements a jump
        # skips depend on the jump and a slice that keeps them keeps the jump.
        if isinstance(s, ast.Return):
            self.jump("return", [(vid, "normal")])
            return [(vid, "pseudo")]
        if isinstance(s, ast.Raise):
            return [(vid, "pseudo")]  # node_vertex gave it its exception edge
        if isinstance(s, ast.Break):
            self.jump("break", [(vid, "normal")])
            return [(vid, "pseudo")]
        if isinstance(s, ast.Continue):
            self.jump("continue", [(vid, "normal")])
            return [(vid, "pseudo")]
        return [(vid, "normal")]

    def with_statement(self, s: ast.With | ast.AsyncWith, preds: Dangling) -> Dangling:
        enters = []
        for item in s.items:
            label = f"with {_text(item.context_expr)}" + (f" as {_text(item.optional_vars)}" if item.optional_vars else "")
            enter = self.node_vertex("with-enter", item, label, preds)
            enters.append(enter)
            preds = [(enter, "normal")]
        leave = self.vertex("with-exit", s, f"exit of with {_text(s.items[0].context_expr)}")
        fin = _Finally()  # the block is left through __exit__, whatever way it is left
        self.frames.append(fin)
        body_end = self.block(s.body, preds)
        self.frames.pop()
        self.connect(body_end + fin.entries, leave)
        self.throw(leave)  # __exit__ re-raises (or raises itself)
        for kind in sorted(fin.pending - {"raise"}):
            self.jump(kind, [(leave, "normal")])
        return [(leave, "normal")]  # normal end, or an exception __exit__ swallowed

    def try_statement(self, s: ast.Try | ast.TryStar, preds: Dangling) -> Dangling:
        fin = _Finally() if s.finalbody else None
        if fin:
            self.frames.append(fin)
        handler_ids = []
        for handler in s.handlers:
            label = "except" + ("*" if isinstance(s, ast.TryStar) else "") + (f" {_text(handler.type)}" if handler.type else "")
            label += f" as {handler.name}" if handler.name else ""
            handler_ids.append(self.vertex("handler", handler, label))
        if handler_ids:
            self.frames.append(_Try(handler_ids[0]))
        body_end = self.block(s.body, preds)
        if handler_ids:
            self.frames.pop()
        ends = self.block(s.orelse, body_end)
        for n, (handler, hid) in enumerate(zip(s.handlers, handler_ids)):
            ends += self.block(handler.body, [(hid, "true")])
            if n + 1 < len(handler_ids):
                self.edge(hid, handler_ids[n + 1], "false")
            else:
                self.throw(hid)  # no handler matched: the exception goes on outward
        if not fin:
            return ends
        self.frames.pop()
        fin_end = self.block(s.finalbody, ends + fin.entries)
        for kind in sorted(fin.pending):
            self.jump(kind, [(vid, "normal") for vid, _ in fin_end])
        return fin_end if ends else []

    def match_statement(self, s: ast.Match, preds: Dangling) -> Dangling:
        subject = self.node_vertex("match-subject", s.subject, f"match {_text(s.subject)}", preds)
        ends: Dangling = []
        previous: Dangling = [(subject, "normal")]
        for case in s.cases:
            label = f"case {_text(case.pattern)}" + (f" if {_text(case.guard)}" if case.guard else "")
            cid = self.node_vertex("case", case, label, previous)
            ends += self.block(case.body, [(cid, "true")])
            previous = [(cid, "false")]
        return ends + previous

    # -------------------------------------------------------------- units
    def build(self) -> CFG:
        node, kind = self.unit.node, self.unit.kind
        if kind in ("module", "class", "function"):
            ends = self.block(node.body, [(self.entry, "normal")])
        elif kind == "lambda":
            body = self.node_vertex("expr", node.body, _text(node.body), [(self.entry, "normal")])
            ends = [(body, "normal")]
        else:
            ends = self.comprehension(node)
        self.connect(ends, self.exit)
        return CFG(self.unit, self.graph, self.vertices, self.vertices[self.entry], self.vertices[self.exit],
                   self.vertices[self.raise_exit])

    def comprehension(self, node: ast.AST) -> Dangling:
        preds: Dangling = [(self.entry, "normal")]
        outer_step = None
        steps = []
        for n, gen in enumerate(node.generators):
            if n:
                start = self.node_vertex("for-iter", gen.iter, f"iter({_text(gen.iter)})", preds)
                preds = [(start, "normal")]
            step = self.node_vertex("for-next", gen.target, f"{_text(gen.target)} = next(...)", preds, raises=True)
            outer_step = outer_step if outer_step is not None else step
            steps.append(step)
            preds = [(step, "true")]
            for cond in gen.ifs:
                test = self.node_vertex("test", cond, f"if {_text(cond)}", preds)
                self.edge(test, step, "false")
                preds = [(test, "true")]
            if n:
                self.edge(step, steps[n - 1], "false")  # inner loop exhausted: next outer item
        element = _elements(node)
        elt = self.node_vertex("expr", node, ", ".join(_text(e) for e in element), preds)
        self.edge(elt, steps[-1], "normal")
        return [(outer_step, "false")]


def build_cfg(unit: CodeUnit) -> CFG:
    """The CFG of one unit."""
    return _Builder(unit).build()


def _text(node: ast.AST | None) -> str:
    if node is None:
        return ""
    try:
        text = ast.unparse(node)
    except Exception:  # pragma: no cover - ast.unparse handles every node the parser makes
        text = type(node).__name__
    first = text.splitlines()[0] if text else ""
    return first if len(first) <= 70 else first[:67] + "..."
