"""Build a search index over a generated corpus and run a batch of queries.

Example::

    python search.py --docs 2000 --query "data AND search"
    python search.py --docs 5000 --queries queries.txt --hits 20 --fuzzy 1

Prints a compact summary to stdout and exits 0; invalid input prints a message
on stderr and exits 2.
"""

import argparse
import sys
import zlib

import corpus
from minisearch import InvertedIndex, QuerySyntaxError, Searcher


class UsageError(Exception):
    """Invalid input given on the command line or in the queries file."""


def positive_int(upper):
    """An argparse type: an integer in ``1..upper``."""

    def convert(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if not 1 <= value <= upper:
            raise argparse.ArgumentTypeError(f"must be between 1 and {upper}")
        return value

    return convert


def build_parser():
    parser = argparse.ArgumentParser(
        description="Index a generated corpus with minisearch and run a batch of queries."
    )
    parser.add_argument("--docs", type=positive_int(50_000), default=2000, metavar="N",
                        help="number of documents to generate and index (default 2000)")
    parser.add_argument("--seed", type=int, default=0, metavar="S",
                        help="corpus seed (default 0)")
    parser.add_argument("--queries", metavar="FILE",
                        help="text file with one query per line ('#' lines and blank lines skipped)")
    parser.add_argument("--query", action="append", default=[], metavar="Q",
                        help="a query; may be repeated (run after those of --queries)")
    parser.add_argument("--hits", type=positive_int(1000), default=10, metavar="K",
                        help="hits per page, i.e. results kept per query (default 10)")
    parser.add_argument("--repeat", type=positive_int(100), default=1, metavar="R",
                        help="run the whole batch R times (default 1)")
    parser.add_argument("--fuzzy", type=int, choices=(0, 1, 2), default=0,
                        help="let plain terms match within this many edits (default 0)")
    parser.add_argument("--highlight", action=argparse.BooleanOptionalAction, default=True,
                        help="make a snippet for every hit shown (default on)")
    parser.add_argument("--mode", choices=("bm25", "boolean"), default="bm25",
                        help="bm25: ranked, default operator OR; boolean: unranked, "
                             "default operator AND (default bm25)")
    return parser


def load_queries(args):
    """Collect the queries from --queries and --query, in that order."""
    queries = []
    if args.queries is not None:
        try:
            with open(args.queries, encoding="utf-8") as handle:
                lines = handle.read().splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"cannot read queries file {args.queries!r}: {exc}") from None
        for number, line in enumerate(lines, 1):
            line = line.strip()
            if line and not line.startswith("#"):
                queries.append((f"{args.queries}:{number}", line))
    queries.extend((f"--query #{i}", q) for i, q in enumerate(args.query, 1))
    if not queries:
        raise UsageError("no queries: give --queries FILE or --query Q")
    return queries


def run(args, out):
    """Build the index, run the batch ``args.repeat`` times and print a summary."""
    queries = load_queries(args)
    searcher = Searcher(InvertedIndex(), mode=args.mode, fuzzy=args.fuzzy)
    for where, text in queries:  # reject bad syntax before doing any work
        try:
            searcher.parse(text)
        except QuerySyntaxError as exc:
            raise UsageError(f"{where}: bad query {text!r}: {exc}") from None

    index = searcher.index
    for document in corpus.generate(args.docs, args.seed):
        index.add(document)

    results = []
    for _ in range(args.repeat):
        results = [searcher.search(text, k=args.hits, highlight=args.highlight)
                   for _, text in queries]

    checksum = 0
    for result in results:
        page = [(hit.doc_id, None if hit.score is None else round(hit.score, 6), hit.snippet)
                for hit in result.hits]
        checksum = zlib.crc32(repr((result.total, page)).encode(), checksum)

    first = results[0]
    print(f"index: {len(index)} docs, {index.total_length} terms indexed, "
          f"{len(index.postings)} distinct terms", file=out)
    print(f"queries: {len(queries)} x {args.repeat} run(s); mode={args.mode} "
          f"fuzzy={args.fuzzy} hits/page={args.hits} highlight={'on' if args.highlight else 'off'}",
          file=out)
    print(f"total hits: {sum(r.total for r in results)} (per run)", file=out)
    top = " ".join(str(hit.doc_id) for hit in first.hits) or "-"
    print(f"first query: {first.query!r} -> {first.total} hits; top ids: {top}", file=out)
    if first.hits and first.hits[0].snippet:
        print(f"  #{first.hits[0].doc_id}: {first.hits[0].snippet}", file=out)
    print(f"checksum: {checksum:08x}", file=out)


def main(argv=None):
    args = build_parser().parse_args(argv)
    try:
        run(args, sys.stdout)
    except UsageError as exc:
        print(f"search.py: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
