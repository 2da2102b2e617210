"""Workload: parse C translation units with pycparser and process the trees.

    python workload.py [--mode parse|print|roundtrip|analyze|dump|all] [--dialect legacy|c23]
                       [--repeat R] FILE [FILE ...]

Reads each (preprocessed) C file and, ``--repeat`` times, parses it with ``pycparser.c_parser.CParser``;
then ``print`` regenerates C with ``c_generator.CGenerator``; ``roundtrip`` regenerates, parses the
result again and checks both print the same; ``analyze`` walks the tree with visitors (functions, their
cyclomatic complexity and loop nesting, the call graph, node counts per type); ``dump`` writes the tree
with ``Node.show`` (attributes and coordinates) to memory; ``all`` does every step. Prints one line with
counts and a digest of what was produced.
"""

from __future__ import annotations

import argparse
import hashlib
import io
from collections import Counter

from pycparser import c_ast, c_generator, c_parser


class Analyzer(c_ast.NodeVisitor):
    """Per-function cyclomatic complexity, deepest loop nesting and callees; node counts per type."""

    DECISIONS = (c_ast.If, c_ast.For, c_ast.While, c_ast.DoWhile, c_ast.Case, c_ast.TernaryOp)
    LOOPS = (c_ast.For, c_ast.While, c_ast.DoWhile)

    def __init__(self) -> None:
        self.functions: dict[str, tuple[int, int]] = {}
        self.calls: dict[str, set[str]] = {}
        self.types: Counter[str] = Counter()
        self._current: str | None = None
        self._complexity = 0
        self._loops = 0
        self._deepest = 0

    def visit_FuncDef(self, node: c_ast.FuncDef) -> None:
        self._current, self._complexity, self._loops, self._deepest = node.decl.name, 1, 0, 0
        self.calls[node.decl.name] = set()
        self.generic_visit(node)
        self.functions[node.decl.name] = (self._complexity, self._deepest)
        self._current = None

    def visit_FuncCall(self, node: c_ast.FuncCall) -> None:
        if self._current is not None and isinstance(node.name, c_ast.ID):
            self.calls[self._current].add(node.name.name)
        self.generic_visit(node)

    def visit_BinaryOp(self, node: c_ast.BinaryOp) -> None:
        if node.op in ("&&", "||"):
            self._complexity += 1
        self.generic_visit(node)

    def generic_visit(self, node: c_ast.Node) -> None:
        self.types[type(node).__name__] += 1
        if isinstance(node, self.DECISIONS):
            self._complexity += 1
        loop = isinstance(node, self.LOOPS)
        if loop:
            self._loops += 1
            self._deepest = max(self._deepest, self._loops)
        for _, child in node.children():
            self.visit(child)
        if loop:
            self._loops -= 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", help="preprocessed C files")
    parser.add_argument("--mode", choices=("parse", "print", "roundtrip", "analyze", "dump", "all"), default="parse")
    parser.add_argument("--dialect", choices=("legacy", "c23"), default="legacy")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    cparser = c_parser.CParser(dialect=args.dialect)
    printer = c_generator.CGenerator()
    digest = hashlib.sha256()
    chars = top = functions = nodes = 0
    for name in args.files:
        with open(name, encoding="utf-8") as handle:
            text = handle.read()
        for _ in range(args.repeat):
            chars += len(text)
            ast = cparser.parse(text, filename=name)
            top += len(ast.ext)
            if args.mode in ("print", "roundtrip", "all"):
                regenerated = printer.visit(ast)
                digest.update(regenerated.encode())
                if args.mode != "print":
                    again = printer.visit(cparser.parse(regenerated, filename="<regenerated>"))
                    if again != regenerated:
                        raise SystemExit(f"{name}: pycparser round trip changed the code")
            if args.mode in ("analyze", "all"):
                analyzer = Analyzer()
                analyzer.visit(ast)
                functions += len(analyzer.functions)
                nodes += sum(analyzer.types.values())
                digest.update(repr(sorted(analyzer.functions.items())).encode())
                digest.update(repr(sorted((k, sorted(v)) for k, v in analyzer.calls.items())).encode())
                digest.update(repr(sorted(analyzer.types.items())).encode())
            if args.mode in ("dump", "all"):
                buffer = io.StringIO()
                ast.show(buf=buffer, attrnames=True, nodenames=True, showcoord=True)
                digest.update(buffer.getvalue().encode())
    print(f"pycparser: {len(args.files)} files x {args.repeat}, mode {args.mode}, {chars} chars, {top} top-level "
          f"nodes, {functions} functions analysed, {nodes} nodes, sha256 {digest.hexdigest()[:16]}")


if __name__ == "__main__":
    main()
