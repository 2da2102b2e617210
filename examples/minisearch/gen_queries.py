"""Write a deterministic file of minisearch queries of varied shape.

Example::

    python gen_queries.py --count 50 --seed 7 -o queries.txt
    python gen_queries.py --count 20 --shape prefix --prefix-len 1 -o wide.txt
    python gen_queries.py --count 20 --shape term --terms rare -o rare.txt

Shapes: ``term`` (one word), ``multi`` (2-4 words), ``boolean`` (AND / OR / NOT
with parentheses), ``phrase`` (quoted, often a real collocation), ``prefix``
(``abc*`` wildcards) and ``mixed`` (a blend of all of them).
"""

import argparse
import random
import sys

import corpus

SHAPES = ("term", "multi", "boolean", "phrase", "prefix")
MIX_WEIGHTS = (3, 3, 2, 1, 1)


def word_pool(kind):
    """Vocabulary words (no stop words) by frequency band."""
    words = corpus.vocabulary()[len(corpus.STOP_WORDS):]
    if kind == "common":
        return words[:200]
    if kind == "rare":
        return words[1200:]
    return words


class QueryMaker:
    """Draws queries of each shape from a seeded random generator."""

    def __init__(self, rng, pool, prefix_len):
        self.rng = rng
        self.pool = pool
        self.prefix_len = prefix_len

    def word(self):
        return self.rng.choice(self.pool)

    def term(self):
        return self.word()

    def multi(self):
        return " ".join(self.word() for _ in range(self.rng.randint(2, 4)))

    def phrase(self):
        if self.rng.random() < 0.6:
            words = list(self.rng.choice(corpus.PHRASES))
        else:
            words = [self.word() for _ in range(self.rng.randint(2, 3))]
        return '"' + " ".join(words) + '"'

    def prefix(self):
        length = self.prefix_len or self.rng.randint(1, 4)
        return self.word()[:length] + "*"

    def boolean(self):
        a, b, c = self.word(), self.word(), self.word()
        form = self.rng.randrange(5)
        if form == 0:
            return f"{a} AND {b}"
        if form == 1:
            return f"{a} OR {b} OR {c}"
        if form == 2:
            return f"{a} AND NOT {b}"
        if form == 3:
            return f"({a} OR {b}) AND {c}"
        return f"{a} {b} NOT ({c} OR {self.prefix()})"

    def make(self, shape):
        if shape == "mixed":
            shape = self.rng.choices(SHAPES, weights=MIX_WEIGHTS)[0]
        return getattr(self, shape)()


def main(argv=None):
    parser = argparse.ArgumentParser(description="Generate a file of minisearch queries.")
    parser.add_argument("--count", type=int, default=20, metavar="N",
                        help="number of queries (default 20)")
    parser.add_argument("--seed", type=int, default=0, metavar="S", help="random seed (default 0)")
    parser.add_argument("--shape", choices=SHAPES + ("mixed",), default="mixed",
                        help="kind of query to make (default mixed)")
    parser.add_argument("--terms", choices=("common", "rare", "any"), default="any",
                        help="draw words from the common, rare or whole vocabulary (default any)")
    parser.add_argument("--prefix-len", type=int, default=0, metavar="L",
                        help="letters before '*' in wildcards; 0 = random 1-4 (default 0)")
    parser.add_argument("-o", "--out", default="-", metavar="FILE",
                        help="output file, '-' for stdout (default -)")
    args = parser.parse_args(argv)
    if not 1 <= args.count <= 100_000:
        parser.error("--count must be between 1 and 100000")
    if not 0 <= args.prefix_len <= 10:
        parser.error("--prefix-len must be between 0 and 10")

    maker = QueryMaker(random.Random(args.seed), word_pool(args.terms), args.prefix_len)
    lines = [maker.make(args.shape) for _ in range(args.count)]
    text = "\n".join(lines) + "\n"
    if args.out == "-":
        sys.stdout.write(text)
    else:
        try:
            with open(args.out, "w", encoding="utf-8") as handle:
                handle.write(text)
        except OSError as exc:
            print(f"gen_queries.py: error: cannot write {args.out!r}: {exc}", file=sys.stderr)
            return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
