"""Workload: parse generated C code with pycparser and print it back.

    python pycparser_parse.py --size N --seed S

Generates N C translation units deterministically from the seed (typedefs, structs, enums, global
arrays, functions with nested loops, switch, if/else chains, pointer arithmetic and casts), parses each
with ``pycparser.c_parser.CParser``, regenerates C with ``c_generator.CGenerator``, parses that again
and checks the two ASTs print the same. Prints one line with counts and a digest of the regenerated code.
"""

from __future__ import annotations

import argparse
import hashlib
import random

from pycparser import c_generator, c_parser

TYPES = ["int", "long", "unsigned int", "double", "char", "float", "short"]
BINOPS = ["+", "-", "*", "/", "%", "<<", ">>", "&", "|", "^", "<", ">", "==", "!=", "&&", "||"]


class Gen:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.n = 0

    def name(self, prefix: str = "v") -> str:
        self.n += 1
        return f"{prefix}{self.n}"

    def expr(self, names: list[str], depth: int = 0) -> str:
        rng = self.rng
        r = rng.random()
        if depth > 2 or r < 0.35:
            return rng.choice(names) if rng.random() < 0.7 else str(rng.randint(0, 1000))
        if r < 0.65:
            return f"({self.expr(names, depth + 1)} {rng.choice(BINOPS)} {self.expr(names, depth + 1)})"
        if r < 0.75:
            return f"(({rng.choice(TYPES)}) {self.expr(names, depth + 1)})"
        if r < 0.85:
            return f"({self.expr(names, depth + 1)} ? {self.expr(names, depth + 1)} : {self.expr(names, depth + 1)})"
        if r < 0.92:
            return f"{rng.choice(['-', '!', '~'])}({self.expr(names, depth + 1)})"
        return f"helper({self.expr(names, depth + 1)}, {self.expr(names, depth + 1)})"

    def stmts(self, names: list[str], depth: int, indent: str) -> list[str]:
        rng = self.rng
        out: list[str] = []
        for _ in range(rng.randint(2, 5)):
            r = rng.random()
            if depth > 1 or r < 0.4:
                out.append(f"{indent}{rng.choice(names)} {rng.choice(['=', '+=', '-=', '^='])} {self.expr(names)};")
            elif r < 0.55:
                i = self.name("i")
                out.append(f"{indent}for (int {i} = 0; {i} < {rng.randint(1, 100)}; {i}++) {{")
                out += self.stmts(names + [i], depth + 1, indent + "    ")
                out.append(f"{indent}}}")
            elif r < 0.7:
                out.append(f"{indent}if ({self.expr(names)}) {{")
                out += self.stmts(names, depth + 1, indent + "    ")
                out.append(f"{indent}}} else if ({self.expr(names)}) {{")
                out += self.stmts(names, depth + 1, indent + "    ")
                out.append(f"{indent}}} else {{")
                out += self.stmts(names, depth + 1, indent + "    ")
                out.append(f"{indent}}}")
            elif r < 0.8:
                out.append(f"{indent}while ({self.expr(names)}) {{")
                out += self.stmts(names, depth + 1, indent + "    ")
                out.append(f"{indent}    break;")
                out.append(f"{indent}}}")
            elif r < 0.9:
                out.append(f"{indent}switch ({rng.choice(names)}) {{")
                for c in range(rng.randint(1, 4)):
                    out.append(f"{indent}case {c}:")
                    out += self.stmts(names, depth + 1, indent + "    ")
                    out.append(f"{indent}    break;")
                out.append(f"{indent}default:")
                out.append(f"{indent}    {rng.choice(names)} = 0;")
                out.append(f"{indent}}}")
            else:
                p = self.name("p")
                out.append(f"{indent}{{ int *{p} = &{rng.choice(names)}; *{p} = {p}[0] + {self.expr(names)}; }}")
        return out

    def unit(self, functions: int) -> str:
        rng = self.rng
        out = ["typedef unsigned long size_t;", "typedef struct node { int key; struct node *next; double w[4]; } node_t;"]
        enum = self.name("E")
        out.append(f"enum {enum} {{ {', '.join(f'{enum}_{k} = {k * 3}' for k in range(rng.randint(2, 6)))} }};")
        out.append(f"static int table[{rng.randint(4, 64)}] = {{ {', '.join(str(rng.randint(0, 99)) for _ in range(4))} }};")
        out.append("int helper(int a, int b) { return a > b ? a - b : b - a; }")
        for _ in range(functions):
            fname = self.name("fn")
            params = [self.name("a") for _ in range(rng.randint(1, 4))]
            locals_ = [self.name("x") for _ in range(rng.randint(1, 4))]
            out.append(f"{rng.choice(TYPES)} {fname}({', '.join('int ' + p for p in params)}) {{")
            for x in locals_:
                out.append(f"    int {x} = {self.expr(params)};")
            out.append("    node_t n; n.key = table[0]; n.next = (node_t *) 0;")
            out += self.stmts(params + locals_, 0, "    ")
            out.append(f"    return {self.expr(params + locals_)};")
            out.append("}")
        return "\n".join(out) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=40, help="translation units to parse")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    gen = Gen(rng)
    cparser = c_parser.CParser()
    printer = c_generator.CGenerator()
    digest = hashlib.sha256()
    nodes = chars = 0
    for _ in range(args.size):
        text = gen.unit(rng.randint(3, 10))
        chars += len(text)
        ast = cparser.parse(text, filename="<generated>")
        nodes += len(ast.ext)
        regenerated = printer.visit(ast)
        again = printer.visit(cparser.parse(regenerated, filename="<regenerated>"))
        if again != regenerated:
            raise SystemExit("pycparser round trip changed the code")
        digest.update(regenerated.encode())
    print(f"pycparser: {args.size} units, {chars} chars in, {nodes} top-level nodes, sha256 {digest.hexdigest()[:16]}")


if __name__ == "__main__":
    main()
