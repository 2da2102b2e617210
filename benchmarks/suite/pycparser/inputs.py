"""Input generator for the pycparser workload: C translation units plus processing options.

``generate(count, seed, out_dir)`` yields campaign input records ``{"id", "argv", "files"}``, one
preprocessed C file per input (written under ``out_dir``, relative to this file's folder unless
absolute). Files differ in more than length: their *style* weights what they are made of (long
expressions, deeply nested control flow, declarations with big initialisers and typedef'd types,
structs/unions/enums, switch tables), and expression depth and nesting depth vary. The options pick
what the workload does with the tree (parse only, print C back, parse-print-parse round trip, analyse
with visitors, dump the tree) and how many times. Deterministic for a seed; pycparser is not needed.
"""

from __future__ import annotations

import random
from pathlib import Path

from suite_files import input_folder, relative_path, write_if_changed

HERE = Path(__file__).resolve().parent

TYPES = ["int", "long", "unsigned int", "double", "char", "float", "short", "unsigned long", "size_t", "node_t *",
         "real_t", "count_t"]
BINOPS = ["+", "-", "*", "/", "%", "<<", ">>", "&", "|", "^", "<", ">", "<=", ">=", "==", "!=", "&&", "||"]
STYLES = {
    "arith": {"assign": 6, "if": 1, "for": 1, "call": 2},
    "control": {"if": 4, "for": 3, "while": 2, "switch": 1, "assign": 2, "goto": 1},
    "decls": {"decl": 6, "assign": 2, "call": 1},
    "switch": {"switch": 5, "assign": 2, "if": 1},
    "pointers": {"ptr": 5, "assign": 2, "for": 1, "call": 1},
    "mixed": {"assign": 2, "if": 2, "for": 2, "while": 1, "switch": 1, "decl": 1, "ptr": 1, "call": 1, "goto": 1},
}
MODES = ("parse", "print", "roundtrip", "analyze", "analyze", "dump", "all")


class Gen:
    def __init__(self, rng: random.Random, style: str, expr_depth: int, nest_depth: int) -> None:
        self.rng, self.style, self.expr_depth, self.nest_depth = rng, style, expr_depth, nest_depth
        self.pool_rng = rng
        weights = STYLES[style]
        self.kinds = list(weights)
        self.cum = [sum(weights[k] for k in self.kinds[:i + 1]) for i in range(len(self.kinds))]
        self.n = 0
        self.budget = 0  # statements left in the function being generated
        self.pool: list[str] = []

    def name(self, prefix: str = "v") -> str:
        self.n += 1
        return f"{prefix}{self.n}"

    def expr(self, names: list[str], depth: int = 0) -> str:
        rng = self.rng
        r = rng.random()
        if depth >= self.expr_depth or r < 0.3:
            return rng.choice(names) if rng.random() < 0.7 else str(rng.randint(0, 1000))
        if r < 0.62:
            return f"({self.expr(names, depth + 1)} {rng.choice(BINOPS)} {self.expr(names, depth + 1)})"
        if r < 0.72:
            return f"(({rng.choice(TYPES[:8])}) {self.expr(names, depth + 1)})"
        if r < 0.8:
            return f"({self.expr(names, depth + 1)} ? {self.expr(names, depth + 1)} : {self.expr(names, depth + 1)})"
        if r < 0.87:
            return f"{rng.choice(['-', '!', '~'])}({self.expr(names, depth + 1)})"
        if r < 0.93:
            return f"table[({self.expr(names, depth + 1)}) & 15]"
        return f"helper({self.expr(names, depth + 1)}, {self.expr(names, depth + 1)})"

    def stmts(self, names: list[str], depth: int, indent: str) -> list[str]:
        rng = self.rng
        out: list[str] = []
        for _ in range(rng.randint(2, 5)):
            kind = rng.choices(self.kinds, cum_weights=self.cum)[0]
            self.budget -= 1
            if (depth >= self.nest_depth or self.budget <= 0) and kind in ("if", "for", "while", "switch"):
                kind = "assign"
            if kind == "assign":
                out.append(f"{indent}{rng.choice(names)} {rng.choice(['=', '+=', '-=', '^=', '|=', '<<='])} {self.expr(names)};")
            elif kind == "call":
                out.append(f"{indent}{rng.choice(names)} = helper({self.expr(names)}, {self.expr(names)}) + acc(&n, {self.expr(names)});")
            elif kind == "decl":
                v = self.name("d")
                init = ", ".join(str(rng.randint(0, 99)) for _ in range(rng.randint(2, 16)))
                out.append(f"{indent}{rng.choice(['static const int', 'int', 'unsigned char'])} {v}[{rng.randint(16, 64)}] = {{ {init} }};")
                out.append(f"{indent}{rng.choice(names)} += {v}[{self.expr(names)} & 15];")
            elif kind == "ptr":
                p = self.name("p")
                out.append(f"{indent}{{ int *{p} = &{rng.choice(names)}; node_t *q = (node_t *) 0; "
                           f"*{p} = {p}[0] + {self.expr(names)}; if (q && q->next) {{ q = q->next->next; }} }}")
            elif kind == "goto":
                label = self.name("L")
                out.append(f"{indent}if ({self.expr(names)}) goto {label};")
                out.append(f"{indent}{rng.choice(names)}++;")
                out.append(f"{label}:")
                out.append(f"{indent}{rng.choice(names)}--;")
            elif kind == "for":
                i = self.name("i")
                out.append(f"{indent}for (int {i} = 0; {i} < {rng.randint(1, 100)}; {i}++) {{")
                out += self.stmts(names + [i], depth + 1, indent + "    ")
                out.append(f"{indent}}}")
            elif kind == "if":
                out.append(f"{indent}if ({self.expr(names)}) {{")
                out += self.stmts(names, depth + 1, indent + "    ")
                for _ in range(rng.randint(0, 2)):
                    out.append(f"{indent}}} else if ({self.expr(names)}) {{")
                    out += self.stmts(names, depth + 1, indent + "    ")
                out.append(f"{indent}}} else {{")
                out += self.stmts(names, depth + 1, indent + "    ")
                out.append(f"{indent}}}")
            elif kind == "while":
                if rng.random() < 0.5:
                    out.append(f"{indent}while ({self.expr(names)}) {{")
                    out += self.stmts(names, depth + 1, indent + "    ")
                    out += [f"{indent}    break;", f"{indent}}}"]
                else:
                    out.append(f"{indent}do {{")
                    out += self.stmts(names, depth + 1, indent + "    ")
                    out.append(f"{indent}}} while ({self.expr(names)});")
            else:  # switch
                out.append(f"{indent}switch ({rng.choice(names)}) {{")
                for c in range(rng.randint(2, 10)):
                    out.append(f"{indent}case {c}:")
                    out += self.stmts(names, depth + 1, indent + "    ")
                    out.append(f"{indent}    break;")
                out += [f"{indent}default:", f"{indent}    {rng.choice(names)} = 0;", f"{indent}}}"]
        return out

    def prelude(self) -> list[str]:
        rng = self.rng
        out = ['# 1 "generated.c"', "typedef unsigned long size_t;", "typedef double real_t;", "typedef long count_t;",
               "typedef struct node { int key; struct node *next; double w[4]; union { int i; float f; } u; } node_t;",
               "static int table[16] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };",
               "int helper(int a, int b) { return a > b ? a - b : b - a; }",
               "static inline long acc(node_t *n, long x) { return n ? n->key + x : x; }"]
        for _ in range(rng.randint(1, 3) if self.style != "decls" else rng.randint(6, 20)):
            enum = self.name("E")
            out.append(f"enum {enum} {{ {', '.join(f'{enum}_{k} = {k * 3}' for k in range(rng.randint(2, 12)))} }};")
            s = self.name("S")
            fields = " ".join(f"{rng.choice(TYPES[:8])} f{k};" for k in range(rng.randint(1, 10)))
            out.append(f"struct {s} {{ {fields} }};")
            out.append(f"typedef struct {s} {s}_t;")
            init = ", ".join(str(rng.randint(0, 999)) for _ in range(rng.randint(4, 64)))
            out.append(f"const int {self.name('g')}[] = {{ {init} }};")
        return out

    def function(self) -> list[str]:
        rng = self.rng
        self.budget = rng.randint(10, 80)
        fname = "@FN@"
        params = [self.name("a") for _ in range(rng.randint(1, 5))]
        locals_ = [self.name("x") for _ in range(rng.randint(1, 5))]
        out = [f"{rng.choice(TYPES[:8])} {fname}({', '.join('int ' + p for p in params)}) {{"]
        for x in locals_:
            out.append(f"    {rng.choice(['int', 'count_t', 'real_t', 'long'])} {x} = {self.expr(params)};")
        out.append("    node_t n; n.key = table[0]; n.next = (node_t *) 0; n.u.i = 0;")
        out += self.stmts(params + locals_, 0, "    ")
        out.append(f"    return {self.expr(params + locals_)};")
        out.append("}")
        return out

    def unit(self, rng: random.Random, size: int) -> str:
        """A translation unit of about ``size`` characters: the prelude, then functions drawn from a pool
        of this generator's functions (each under a new name), so that many units are assembled fast."""
        self.rng = rng
        out = self.prelude()
        length = sum(len(line) + 1 for line in out)
        while length < size:
            k = rng.randrange(POOL)
            while len(self.pool) <= k:
                self.rng = self.pool_rng
                self.pool.append("\n".join(self.function()))
                self.rng = rng
            text = self.pool[k].replace("@FN@", f"fn{len(out)}")
            length += len(text) + 1
            out.append(text)
        return "\n".join(out) + "\n"


# Rough cost per character of each style and mode relative to parsing plain code (measured).
STYLE_COST = {"arith": 1.0, "control": 0.8, "decls": 1.1, "switch": 0.8, "pointers": 1.4, "mixed": 0.9}
MODE_COST = {"parse": 1.0, "print": 1.1, "roundtrip": 2.3, "analyze": 1.05, "dump": 1.05, "all": 2.5}


def generate(count: int = 300, seed: int = 1, out_dir: str = "inputs/pycparser"):
    """Yield ``count`` input records; C files land in ``out_dir`` (relative to this file's folder)."""
    rng = random.Random(seed)
    folder = input_folder(out_dir, HERE)
    pools: dict[tuple[str, int, int], Gen] = {}
    for n in range(count):
        style = rng.choice(list(STYLES))
        expr_depth = rng.choice((1, 2, 3, 4))
        nest_depth = rng.choice((1, 2, 3, 4))
        mode = rng.choice(MODES)
        repeat = rng.choice((1, 1, 1, 2, 3))
        size = int(WORK * 16 ** rng.random() / MODE_COST[mode] / STYLE_COST[style] / repeat)
        key = (style, expr_depth, nest_depth)
        if key not in pools:  # one function pool per shape, from its own seed: order-independent
            pools[key] = Gen(random.Random(f"{seed}:{style}:{expr_depth}:{nest_depth}"), style, expr_depth, nest_depth)
        path = folder / f"c{n:04d}-{style}-e{expr_depth}n{nest_depth}.c"
        write_if_changed(path, pools[key].unit(random.Random(rng.getrandbits(32)), max(size, 500)))
        argv = ["--mode", mode, "--repeat", str(repeat), "--dialect", rng.choice(("legacy", "legacy", "c23"))]
        argv.append(relative_path(path, HERE))
        yield {"id": f"pycparser-{n:04d}", "argv": argv, "files": [relative_path(path, HERE)]}


POOL = 12  # functions per (style, expression depth, nesting depth) pool
WORK = 40000  # characters parsed (times the mode's and the style's cost) at the bottom of the range
