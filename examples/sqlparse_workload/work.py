"""Format generated SQL with sqlparse: the entry of slicing tests and benchmarks on a PyPI package.

Usage: python work.py N SEED [reindent]
"""
import random
import sys

import sqlparse


def make_sql(n, seed):
    rng = random.Random(seed)
    parts = []
    for i in range(n):
        cols = ", ".join(rng.sample(["id", "name", "total", "qty"], rng.randint(1, 3)))
        where = " and ".join(f"{c} > {rng.randint(0, 99)}" for c in rng.sample(["id", "qty"], rng.randint(0, 2)))
        parts.append(f"select {cols} from t{i % 3}" + (f" where {where}" if where else "") + ";")
    return " ".join(parts)

text = make_sql(int(sys.argv[1]), int(sys.argv[2]))
print(len(sqlparse.format(text, reindent=len(sys.argv) > 3, keyword_case="upper")))
