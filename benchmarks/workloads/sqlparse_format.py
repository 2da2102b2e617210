"""Workload: parse and pretty-print generated SQL with sqlparse.

    python sqlparse_format.py --size N --seed S

Generates N SQL statements deterministically from the seed (SELECT with joins, nested sub-queries,
CASE, GROUP BY / HAVING / ORDER BY, INSERT, UPDATE, DELETE, CREATE TABLE), reformats each with
``sqlparse.format(reindent=True, keyword_case="upper", ...)``, parses it with ``sqlparse.parse`` and
walks the token tree. Prints one line with counts and a digest of the formatted text.
"""

from __future__ import annotations

import argparse
import hashlib
import random

import sqlparse

TABLES = ["users", "orders", "items", "payments", "events", "sessions", "products", "stock"]
COLUMNS = ["id", "user_id", "order_id", "amount", "price", "created_at", "status", "name", "qty", "kind"]
FUNCS = ["sum", "count", "avg", "max", "min", "coalesce", "lower", "upper"]


def column(rng: random.Random, alias: str | None = None) -> str:
    col = rng.choice(COLUMNS)
    return f"{alias}.{col}" if alias else col


def expr(rng: random.Random, aliases: list[str], depth: int = 0) -> str:
    r = rng.random()
    if depth > 2 or r < 0.35:
        return column(rng, rng.choice(aliases)) if rng.random() < 0.7 else str(rng.randint(0, 1000))
    if r < 0.55:
        return f"{expr(rng, aliases, depth + 1)} {rng.choice(['+', '-', '*', '/'])} {expr(rng, aliases, depth + 1)}"
    if r < 0.75:
        return f"{rng.choice(FUNCS)}({expr(rng, aliases, depth + 1)})"
    if r < 0.9:
        return (f"case when {cond(rng, aliases, depth + 1)} then {expr(rng, aliases, depth + 1)} "
                f"else {expr(rng, aliases, depth + 1)} end")
    return f"'{rng.choice(COLUMNS)}_{rng.randint(0, 99)}'"


def cond(rng: random.Random, aliases: list[str], depth: int = 0) -> str:
    r = rng.random()
    if depth > 2 or r < 0.5:
        op = rng.choice(["=", "<>", "<", ">=", "like", "in", "is"])
        left = column(rng, rng.choice(aliases))
        if op == "in":
            return f"{left} in ({', '.join(str(rng.randint(1, 99)) for _ in range(rng.randint(1, 5)))})"
        if op == "is":
            return f"{left} is {rng.choice(['null', 'not null'])}"
        if op == "like":
            return f"{left} like '%{rng.choice(COLUMNS)}%'"
        return f"{left} {op} {expr(rng, aliases, depth + 1)}"
    if r < 0.85:
        return f"({cond(rng, aliases, depth + 1)} {rng.choice(['and', 'or'])} {cond(rng, aliases, depth + 1)})"
    return f"exists ({select(rng, depth + 2)})"


def select(rng: random.Random, depth: int = 0) -> str:
    n = rng.randint(1, 3 if depth else 4)
    tables = rng.sample(TABLES, n)
    aliases = [f"t{i}" for i in range(n)]
    cols = ", ".join(
        f"{expr(rng, aliases, depth)} as c{i}" if rng.random() < 0.4 else column(rng, rng.choice(aliases))
        for i in range(rng.randint(1, 6))
    )
    sql = f"select {'distinct ' if rng.random() < 0.1 else ''}{cols} from {tables[0]} t0"
    for i in range(1, n):
        sql += (f" {rng.choice(['join', 'left join', 'inner join'])} {tables[i]} t{i} "
                f"on t{i}.{rng.choice(COLUMNS)} = t{i - 1}.{rng.choice(COLUMNS)}")
    if rng.random() < 0.8:
        sql += f" where {cond(rng, aliases, depth)}"
    if rng.random() < 0.4:
        sql += f" group by {column(rng, aliases[0])}"
        if rng.random() < 0.5:
            sql += f" having count(*) > {rng.randint(1, 10)}"
    if rng.random() < 0.5 and not depth:
        sql += f" order by {column(rng, aliases[0])} {rng.choice(['asc', 'desc'])} limit {rng.randint(1, 500)}"
    return sql


def statement(rng: random.Random) -> str:
    r = rng.random()
    if r < 0.55:
        return select(rng) + ";"
    table = rng.choice(TABLES)
    if r < 0.7:
        cols = rng.sample(COLUMNS, rng.randint(2, 6))
        rows = ", ".join(
            "(" + ", ".join(str(rng.randint(0, 999)) if rng.random() < 0.6 else f"'v{rng.randint(0, 99)}'" for _ in cols) + ")"
            for _ in range(rng.randint(1, 6))
        )
        return f"insert into {table} ({', '.join(cols)}) values {rows};"
    if r < 0.82:
        sets = ", ".join(f"{c} = {expr(rng, ['t0'])}" for c in rng.sample(COLUMNS, rng.randint(1, 4)))
        return f"update {table} t0 set {sets} where {cond(rng, ['t0'])};"
    if r < 0.9:
        return f"delete from {table} where {cond(rng, [table])};"
    cols = ",\n".join(
        f"  {c} {rng.choice(['integer', 'varchar(255)', 'numeric(10, 2)', 'timestamp', 'text'])}"
        f"{' not null' if rng.random() < 0.4 else ''}"
        for c in rng.sample(COLUMNS, rng.randint(2, 8))
    )
    return f"create table if not exists {table}_{rng.randint(0, 99)} (\n{cols},\n  primary key (id)\n);"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=300, help="statements to format")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    digest = hashlib.sha256()
    tokens = chars = 0
    for _ in range(args.size):
        sql = statement(rng)
        pretty = sqlparse.format(sql, reindent=True, keyword_case="upper", identifier_case="lower",
                                 strip_comments=True, use_space_around_operators=True)
        chars += len(pretty)
        digest.update(pretty.encode())
        for parsed in sqlparse.parse(sql):
            tokens += sum(1 for _ in parsed.flatten())
            digest.update(str(parsed.get_type()).encode())
    print(f"sqlparse: {args.size} statements, {tokens} tokens, {chars} chars out, sha256 {digest.hexdigest()[:16]}")


if __name__ == "__main__":
    main()
