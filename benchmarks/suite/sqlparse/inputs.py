"""Input generator for the sqlparse workload: SQL scripts plus formatting/analysis options.

``generate(count, seed, out_dir)`` yields campaign input records ``{"id", "argv", "files"}``, one SQL
script per input (written under ``out_dir``, relative to this file's folder unless absolute). Scripts
differ in more than length: their *mix* weights statement kinds (flat or joined SELECTs, deeply nested
sub-queries, CTEs, UNION chains, window functions, multi-row INSERTs, UPDATE/DELETE, DDL), a
*complexity* knob sets expression depth and how many joins, columns and predicates a statement has,
and comment and string-literal density vary. sqlparse's grouping pass costs more than linearly in a
statement's length, so a few long statements cost more than many short ones of the same total size.
The options vary what the workload does with the script (format, parse and analyse, split, or all),
the formatter's settings and repeats. Deterministic for a seed; sqlparse is not needed here.
"""

from __future__ import annotations

import random
from pathlib import Path

from suite_files import input_folder, relative_path, write_if_changed

HERE = Path(__file__).resolve().parent

TABLES = ["users", "orders", "items", "payments", "events", "sessions", "products", "stock", "invoices", "regions"]
COLUMNS = ["id", "user_id", "order_id", "amount", "price", "created_at", "status", "name", "qty", "kind",
           "region_id", "updated_at", "note", "score"]
FUNCS = ["sum", "count", "avg", "max", "min", "coalesce", "lower", "upper", "round", "abs", "length", "nullif"]
MIXES = {
    "flat": {"select": 6, "insert": 1, "update": 1, "delete": 1},
    "joins": {"join": 6, "select": 2},
    "nested": {"nested": 6, "join": 1},
    "analytic": {"window": 4, "cte": 3, "union": 2},
    "dml": {"insert": 5, "update": 3, "delete": 2},
    "ddl": {"ddl": 5, "insert": 2, "select": 1},
    "mixed": {"select": 1, "join": 1, "nested": 1, "cte": 1, "union": 1, "window": 1, "insert": 1, "update": 1,
              "delete": 1, "ddl": 1},
}
MODES = ("format", "format", "parse", "split", "all", "all")
# Seconds per MB of script for each mode, without and with sqlparse's grouping pass (measured on a
# 2-core VM). Formatting only groups the tokens when an option needs it (reindenting, aligned
# reindenting, spaces around operators, stripping comments): without, it is 3-4x cheaper.
SECONDS_PER_MB = {("format", False): 2.0, ("format", True): 7.5, ("parse", False): 7.4, ("parse", True): 7.4,
                  ("split", False): 4.8, ("split", True): 9.0, ("all", False): 12.6, ("all", True): 24.0}


class Sql:
    def __init__(self, rng: random.Random, complexity: int, comments: float, strings: float) -> None:
        self.rng, self.c, self.comments, self.strings = rng, complexity, comments, strings

    def col(self, aliases: list[str]) -> str:
        return f"{self.rng.choice(aliases)}.{self.rng.choice(COLUMNS)}"

    def literal(self) -> str:
        rng = self.rng
        if rng.random() < self.strings:
            return "'" + rng.choice(COLUMNS) + " it''s " + str(rng.randint(0, 999)) + "'"
        return str(rng.randint(0, 1000)) if rng.random() < 0.8 else f"{rng.randint(0, 999)}.{rng.randint(0, 99)}"

    def expr(self, aliases: list[str], depth: int = 0) -> str:
        rng = self.rng
        r = rng.random()
        if depth >= self.c or r < 0.35:
            return self.col(aliases) if rng.random() < 0.65 else self.literal()
        if r < 0.55:
            return f"{self.expr(aliases, depth + 1)} {rng.choice(['+', '-', '*', '/', '||'])} {self.expr(aliases, depth + 1)}"
        if r < 0.75:
            args = ", ".join(self.expr(aliases, depth + 1) for _ in range(rng.randint(1, 2)))
            return f"{rng.choice(FUNCS)}({args})"
        if r < 0.9:
            whens = " ".join(f"when {self.cond(aliases, depth + 1)} then {self.expr(aliases, depth + 1)}"
                             for _ in range(rng.randint(1, 3)))
            return f"case {whens} else {self.expr(aliases, depth + 1)} end"
        return f"cast({self.expr(aliases, depth + 1)} as {rng.choice(['integer', 'varchar(40)', 'numeric(12, 2)'])})"

    def cond(self, aliases: list[str], depth: int = 0) -> str:
        rng = self.rng
        r = rng.random()
        if depth >= self.c or r < 0.5:
            op = rng.choice(["=", "<>", "<", ">=", "like", "in", "is", "between"])
            left = self.col(aliases)
            if op == "in":
                return f"{left} in ({', '.join(self.literal() for _ in range(rng.randint(1, 4 * self.c)))})"
            if op == "is":
                return f"{left} is {rng.choice(['null', 'not null'])}"
            if op == "like":
                return f"{left} like '%{rng.choice(COLUMNS)}%'"
            if op == "between":
                return f"{left} between {self.literal()} and {self.literal()}"
            return f"{left} {op} {self.expr(aliases, depth + 1)}"
        if r < 0.85:
            return f"({self.cond(aliases, depth + 1)} {rng.choice(['and', 'or'])} {self.cond(aliases, depth + 1)})"
        return f"{'not ' if rng.random() < 0.3 else ''}exists ({self.select(depth + 1, nested=True)})"

    def comment(self) -> str:
        if self.rng.random() >= self.comments:
            return ""
        if self.rng.random() < 0.5:
            return f"-- {self.rng.choice(COLUMNS)} check {self.rng.randint(1, 99)}\n"
        return f"/* note: {self.rng.choice(TABLES)} {self.rng.randint(1, 99)} */ "

    def select(self, depth: int = 0, joins: int | None = None, nested: bool = False) -> str:
        rng = self.rng
        n = joins if joins is not None else rng.randint(1, 2)
        n = max(1, min(n, len(TABLES)))
        tables = rng.sample(TABLES, n)
        aliases = [f"t{depth}{i}" for i in range(n)]
        cols = ", ".join(
            (f"{self.expr(aliases, depth)} as c{i}" if rng.random() < 0.4 else self.col(aliases))
            for i in range(rng.randint(1, 2 + 2 * self.c))
        )
        sql = f"select {'distinct ' if rng.random() < 0.1 else ''}{cols}\n{self.comment()}from {tables[0]} {aliases[0]}"
        for i in range(1, n):
            kind = rng.choice(["join", "left join", "inner join", "left outer join", "cross join"])
            sql += f" {kind} {tables[i]} {aliases[i]}"
            if kind != "cross join":
                sql += f" on {aliases[i]}.{rng.choice(COLUMNS)} = {aliases[i - 1]}.{rng.choice(COLUMNS)}"
                if rng.random() < 0.3:
                    sql += f" and {self.cond(aliases[: i + 1], self.c)}"
        if rng.random() < 0.8:
            sql += f" {self.comment()}where {self.cond(aliases, depth)}"
        if rng.random() < 0.35:
            sql += f" group by {', '.join(self.col(aliases) for _ in range(rng.randint(1, 3)))}"
            if rng.random() < 0.5:
                sql += f" having count(*) > {rng.randint(1, 10)}"
        if not nested and rng.random() < 0.5:
            sql += f" order by {self.col(aliases)} {rng.choice(['asc', 'desc'])} limit {rng.randint(1, 500)}"
        return sql

    def statement(self, kind: str) -> str:
        rng, c = self.rng, self.c
        table = rng.choice(TABLES)
        if kind == "select":
            return self.select()
        if kind == "join":
            return self.select(joins=rng.randint(2, 2 + 2 * c))
        if kind == "nested":
            inner = self.select(depth=1, nested=True)
            for level in range(rng.randint(1, 1 + c)):
                inner = (f"select s{level}.*, {self.expr([f's{level}'])} as x{level} from ({inner}) s{level} "
                         f"where s{level}.id in (select r{level}.id from {rng.choice(TABLES)} r{level} where {self.cond([f'r{level}'])})")
            return inner
        if kind == "cte":
            parts = [f"q{i} as ({self.select(depth=1, nested=True)})" for i in range(rng.randint(1, 1 + c))]
            return f"with {', '.join(parts)} select * from q0 join {table} t on t.id = q0.id where {self.cond(['t', 'q0'])}"
        if kind == "union":
            return f" {rng.choice(['union', 'union all', 'except', 'intersect'])} ".join(
                self.select(nested=True) for _ in range(rng.randint(2, 2 + c)))
        if kind == "window":
            cols = ", ".join(
                f"{rng.choice(['row_number()', 'rank()', 'sum(t.amount)', 'avg(t.price)', 'lag(t.qty, 1)'])} over "
                f"(partition by t.{rng.choice(COLUMNS)} order by t.{rng.choice(COLUMNS)} {rng.choice(['asc', 'desc'])}) as w{i}"
                for i in range(rng.randint(1, 1 + c)))
            return f"select t.id, {cols} from {table} t where {self.cond(['t'])}"
        if kind == "insert":
            cols = rng.sample(COLUMNS, rng.randint(2, 7))
            rows = ",\n".join("(" + ", ".join(self.literal() for _ in cols) + ")" for _ in range(rng.randint(1, 6 * c * c)))
            return f"insert into {table} ({', '.join(cols)}) values {rows}"
        if kind == "update":
            sets = ", ".join(f"{col} = {self.expr(['u'])}" for col in rng.sample(COLUMNS, rng.randint(1, 2 + c)))
            return f"update {table} u set {sets} where {self.cond(['u'])}"
        if kind == "delete":
            return f"delete from {table} where {self.cond([table])}"
        cols = ",\n".join(
            f"  {col} {rng.choice(['integer', 'varchar(255)', 'numeric(10, 2)', 'timestamp', 'text', 'boolean'])}"
            f"{' not null' if rng.random() < 0.4 else ''}{' default ' + self.literal() if rng.random() < 0.2 else ''}"
            for col in rng.sample(COLUMNS, rng.randint(2, len(COLUMNS))))
        extra = ",\n  foreign key (user_id) references users (id) on delete cascade" if rng.random() < 0.3 else ""
        return f"create table if not exists {table}_{rng.randint(0, 99)} (\n{cols},\n  primary key (id){extra}\n)"


class Pools:
    """Statements per (kind, complexity, string density), each pool grown on demand from its own seed,
    so that scripts are assembled fast (the generator runs on every spec load). A statement longer than
    8000 characters is never pooled: sqlparse refuses statements of more than 10,000 tokens."""

    SIZE = 16

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.pools: dict[tuple[str, int, float], tuple[Sql, list[str]]] = {}

    def statement(self, rng: random.Random, kind: str, complexity: int, strings: float) -> str:
        key = (kind, complexity, strings)
        if key not in self.pools:
            self.pools[key] = (Sql(random.Random(f"{self.seed}:{kind}:{complexity}:{strings}"), complexity, 0.1, strings), [])
        gen, pool = self.pools[key]
        k = rng.randrange(self.SIZE)
        while len(pool) <= k:
            text = gen.statement(kind)
            if len(text) <= 8000:
                pool.append(text)
        return pool[k]

    def script(self, rng: random.Random, mix: str, complexity: int, comments: float, strings: float, size: int) -> str:
        """Statements of the mix until the script holds about ``size`` characters."""
        weights = MIXES[mix]
        kinds = list(weights)
        cum = [sum(weights[k] for k in kinds[:i + 1]) for i in range(len(kinds))]
        commenter = Sql(rng, complexity, comments, strings)
        out, length = [], 0
        while length < size:
            kind = rng.choices(kinds, cum_weights=cum)[0]
            text = commenter.comment() + self.statement(rng, kind, complexity, strings) + ";\n\n"
            out.append(text)
            length += len(text)
        return "".join(out)


def generate(count: int = 300, seed: int = 1, out_dir: str = "inputs/sqlparse"):
    """Yield ``count`` input records; SQL scripts land in ``out_dir`` (relative to this file's folder)."""
    rng = random.Random(seed)
    pools = Pools(seed)
    folder = input_folder(out_dir, HERE)
    for n in range(count):
        mix = rng.choice(list(MIXES))
        complexity = rng.choice((1, 1, 2, 2, 3, 4))
        mode = rng.choice(MODES)
        reindent = rng.choice(("none", "reindent", "reindent", "aligned"))
        strip_comments, operators = rng.random() < 0.4, rng.random() < 0.4
        repeat = rng.choice((1, 1, 1, 2, 3))
        options = ["--mode", mode, "--keyword-case", rng.choice(("upper", "lower", "capitalize", "none")),
                   "--identifier-case", rng.choice(("lower", "none", "none")),
                   "--indent-width", str(rng.choice((2, 4))), "--repeat", str(repeat)]
        if reindent == "reindent":
            options.append("--reindent")
            options += [flag for flag in ("--comma-first", "--compact") if rng.random() < 0.2]
            if rng.random() < 0.25:
                options += ["--wrap-after", str(rng.choice((40, 80, 120)))]
        elif reindent == "aligned":
            options.append("--reindent-aligned")
        options += ["--strip-comments"] * strip_comments + ["--operators"] * operators
        if rng.random() < 0.15:
            options += ["--truncate-strings", str(rng.choice((5, 20)))]
        # Work in seconds (estimated), log-uniform; the script's size is what is left after the cost of
        # the mode, the formatter's options and the repeats.
        grouping = reindent != "none" or strip_comments or operators
        seconds = 0.08 * 16 ** rng.random()
        size = int(seconds / SECONDS_PER_MB[mode, grouping] * 1e6 / repeat)
        comments, strings = rng.choice((0.0, 0.1, 0.4)), rng.choice((0.05, 0.3, 0.7))
        path = folder / f"s{n:04d}-{mix}-c{complexity}.sql"
        write_if_changed(path, pools.script(random.Random(rng.getrandbits(32)), mix, complexity, comments, strings, max(size, 300)))
        yield {"id": f"sqlparse-{n:04d}", "argv": [*options, relative_path(path, HERE)], "files": [relative_path(path, HERE)]}
