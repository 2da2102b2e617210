"""A small batch job for the build tests: an expensive set-up whose size the input gives, then a batch of
queries whose kind the input also gives. Its run time depends on the input's numbers in a way a cost
model can learn from cheap features (the parsed arguments) or expensive ones (the set-up's loops)."""

import argparse
import sys


def parse(argv):
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, required=True)
    parser.add_argument("--queries", type=int, default=10)
    parser.add_argument("--mode", choices=("scan", "sum"), default="scan")
    args = parser.parse_args(argv)
    if args.size < 1:
        parser.error("--size must be positive")
    return args


def build_table(size):
    table = []
    for i in range(size * 12000):
        table.append((i * 7919) % 1000)
    return table


def answer(table, query, mode):
    if mode == "scan":
        return sum(1 for value in table[: len(table) // 8] if value == query % 1000)
    return sum(table[query % 50 :: 50])


def main(argv=None):
    args = parse(argv)
    table = build_table(args.size)
    total = 0
    for query in range(args.queries):
        total += answer(table, query, args.mode)
    print(total)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
