"""Workload: format, parse and analyse SQL scripts with sqlparse.

    python workload.py [--mode format|parse|split|all] [--keyword-case upper|lower|capitalize|none]
                       [--identifier-case upper|lower|capitalize|none] [--indent-width N] [--reindent]
                       [--reindent-aligned] [--strip-comments] [--operators] [--comma-first] [--compact]
                       [--wrap-after N] [--truncate-strings N] [--repeat R] FILE [FILE ...]

For each SQL file, ``--repeat`` times: ``format`` pretty-prints the script with ``sqlparse.format`` and
the chosen options; ``parse`` parses it with ``sqlparse.parse`` and analyses every statement (its type,
the tables it reads or writes, identifiers, functions, comparisons, nesting depth, token counts);
``split`` splits it into statements with ``sqlparse.split`` and formats each statement on its own;
``all`` does the three. Prints one line with counts and a digest of everything produced.
"""

from __future__ import annotations

import argparse
import hashlib

import sqlparse
from sqlparse import sql as S
from sqlparse import tokens as T


def analyse(statement: S.Statement, digest) -> tuple[int, int]:
    """Walk the grouped token tree; returns (tokens, deepest nesting)."""
    tables: set[str] = set()
    counts = {"identifiers": 0, "functions": 0, "comparisons": 0, "parens": 0, "where": 0, "case": 0}
    deepest = 0
    stack = [(statement, 0)]
    expect_table = False
    while stack:
        token, depth = stack.pop()
        deepest = max(deepest, depth)
        if isinstance(token, S.Identifier):
            counts["identifiers"] += 1
            if expect_table and token.get_real_name():
                tables.add(token.get_real_name().lower())
        elif isinstance(token, S.Function):
            counts["functions"] += 1
        elif isinstance(token, S.Comparison):
            counts["comparisons"] += 1
        elif isinstance(token, S.Parenthesis):
            counts["parens"] += 1
        elif isinstance(token, S.Where):
            counts["where"] += 1
        elif isinstance(token, S.Case):
            counts["case"] += 1
        if token.ttype in T.Keyword or token.ttype in T.DML or token.ttype in T.DDL:
            expect_table = token.normalized in ("FROM", "JOIN", "INTO", "UPDATE", "TABLE") or token.normalized.endswith(" JOIN")
        if token.is_group:
            stack.extend((child, depth + 1) for child in reversed(token.tokens))
    tokens = sum(1 for _ in statement.flatten())
    digest.update(f"{statement.get_type()}|{sorted(tables)}|{sorted(counts.items())}|{deepest}".encode())
    return tokens, deepest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", help="SQL files")
    parser.add_argument("--mode", choices=("format", "parse", "split", "all"), default="format")
    parser.add_argument("--keyword-case", choices=("upper", "lower", "capitalize", "none"), default="upper")
    parser.add_argument("--identifier-case", choices=("upper", "lower", "capitalize", "none"), default="none")
    parser.add_argument("--indent-width", type=int, default=2)
    parser.add_argument("--reindent", action="store_true")
    parser.add_argument("--reindent-aligned", action="store_true")
    parser.add_argument("--strip-comments", action="store_true")
    parser.add_argument("--operators", action="store_true", help="use_space_around_operators")
    parser.add_argument("--comma-first", action="store_true")
    parser.add_argument("--compact", action="store_true")
    parser.add_argument("--wrap-after", type=int, default=0)
    parser.add_argument("--truncate-strings", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()

    options = {
        "keyword_case": None if args.keyword_case == "none" else args.keyword_case,
        "identifier_case": None if args.identifier_case == "none" else args.identifier_case,
        "strip_comments": args.strip_comments,
        "use_space_around_operators": args.operators,
        "indent_width": args.indent_width,
    }
    if args.reindent_aligned:
        options["reindent_aligned"] = True
    elif args.reindent:
        options.update(reindent=True, comma_first=args.comma_first, compact=args.compact, wrap_after=args.wrap_after)
    if args.truncate_strings:
        options["truncate_strings"] = args.truncate_strings

    digest = hashlib.sha256()
    statements = tokens = deepest = chars = 0
    for name in args.files:
        with open(name, encoding="utf-8") as handle:
            text = handle.read()
        for _ in range(args.repeat):
            if args.mode in ("format", "all"):
                pretty = sqlparse.format(text, **options)
                chars += len(pretty)
                digest.update(pretty.encode())
            if args.mode in ("parse", "all"):
                for statement in sqlparse.parse(text):
                    if not str(statement).strip():
                        continue
                    statements += 1
                    n, d = analyse(statement, digest)
                    tokens += n
                    deepest = max(deepest, d)
            if args.mode in ("split", "all"):
                for piece in sqlparse.split(text):
                    pretty = sqlparse.format(piece, **options)
                    chars += len(pretty)
                    digest.update(pretty.encode())
    print(f"sqlparse: {len(args.files)} files x {args.repeat}, mode {args.mode}, {statements} statements analysed, "
          f"{tokens} tokens, depth {deepest}, {chars} chars out, sha256 {digest.hexdigest()[:16]}")


if __name__ == "__main__":
    main()
