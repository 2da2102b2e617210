"""Workload: index a generated text corpus with Whoosh and run a batch of queries against it.

    python workload.py --queries FILE [--docs N] [--doc-words W] [--vocab V] [--seed S]
                       [--analyzer standard|stemming|simple] [--fields body|title,body]
                       [--group and|or] [--scoring bm25|tfidf|frequency] [--segments N]
                       [--storage ram|dir] [--hits K] [--pages P] [--sort score|date|title]
                       [--highlight] [--correct] [--repeat R]

A search workload in the spirit of the Mantis paper's Lucene case. The corpus is generated
deterministically from the seed: ``--docs`` documents with a title, a body of about ``--doc-words``
words, tags and a date; words are drawn from a ``--vocab``-word vocabulary with a Zipf-like (log-uniform
rank) distribution, so a few words are very common and most are rare. The index lives in Whoosh's
RamStorage or (``--storage dir``) in a temporary folder the workload creates and removes at the end
(Whoosh's temporary files go there too); it is committed in ``--segments`` segments (unmerged), so
searches visit every segment.

The query file holds one query per line in Whoosh's query language: terms, multi-term queries, "phrases"
(with ~slop), AND/OR/NOT with parentheses, wildcards (``ka*``, ``ka?o*``) and fuzzy terms
(``word~2``, ``word~1/2`` for a prefix length). Each query is parsed, searched ``--pages`` pages of
``--hits`` results each (sorted by score or by a field), optionally with highlighted body fragments
and a spelling correction; the whole batch runs ``--repeat`` times. Prints one line: documents,
queries, hits, and a digest of the result lists, so runs can be compared for identical output.
"""

from __future__ import annotations

import argparse
import hashlib
import random
import shutil
import tempfile

from whoosh import highlight, scoring
from whoosh.analysis import SimpleAnalyzer, StandardAnalyzer, StemmingAnalyzer
from whoosh.fields import ID, KEYWORD, NUMERIC, TEXT, Schema
from whoosh.filedb.filestore import FileStorage, RamStorage
from whoosh.qparser import AndGroup, FuzzyTermPlugin, MultifieldParser, OrGroup, QueryParser

# Keep in sync with inputs.py: the query generator builds its words with the same function.
SYLLABLES = ("ka", "lo", "mi", "ne", "ru", "ta", "vo", "si", "pe", "du",
             "ga", "zo", "fi", "ho", "ju", "be", "co", "ly", "wa", "xe")


def word(rank: int) -> str:
    """The vocabulary's word of the given rank (0 = most frequent): two or more syllables."""
    n = rank + len(SYLLABLES)
    out = []
    while n:
        n, d = divmod(n, len(SYLLABLES))
        out.append(SYLLABLES[d])
    return "".join(reversed(out))


def zipf_words(rng: random.Random, vocab: int, count: int) -> list[str]:
    return [word(int(vocab ** rng.random()) - 1) for _ in range(count)]


def corpus(seed: int, docs: int, doc_words: int, vocab: int):
    rng = random.Random(seed)
    tags = [word(rank) for rank in range(40)]
    for n in range(docs):
        length = max(3, int(rng.expovariate(1 / doc_words)) + 3) if rng.random() < 0.3 else rng.randint(doc_words // 2, doc_words * 3 // 2 + 1)
        sentences = []
        left = length
        while left > 0:
            k = min(left, rng.randint(4, 18))
            sentences.append(" ".join(zipf_words(rng, vocab, k)).capitalize() + ".")
            left -= k
        yield {
            "id": f"d{n}",
            "title": " ".join(zipf_words(rng, vocab, rng.randint(2, 8))).title(),
            "body": " ".join(sentences),
            "tags": " ".join(rng.sample(tags, rng.randint(0, 4))),
            "date": rng.randint(20000101, 20251231),
        }


class PositionalScorer(highlight.BasicFragmentScorer):
    """Whoosh's fragment score plus a tie-breaker that prefers earlier fragments. Whoosh orders fragments
    of equal score by their ``id()``, which would make the highlights (and the digest) vary from run to
    run; the tie-breaker stays below 0.5, so it never lifts a fragment over ``minscore``."""

    def __call__(self, fragment):
        return super().__call__(fragment) + 1.0 / (2 + fragment.startchar)


ANALYZERS = {"standard": StandardAnalyzer, "stemming": StemmingAnalyzer, "simple": SimpleAnalyzer}
SCORING = {"bm25": scoring.BM25F, "tfidf": scoring.TF_IDF, "frequency": scoring.Frequency}


def build_index(storage, args):
    analyzer = ANALYZERS[args.analyzer]()
    schema = Schema(
        id=ID(stored=True, unique=True),
        title=TEXT(stored=True, analyzer=analyzer, sortable=True),
        body=TEXT(stored=True, analyzer=analyzer),
        tags=KEYWORD(stored=True, commas=False, scorable=True),
        date=NUMERIC(stored=True, sortable=True),
    )
    index = storage.create_index(schema)
    documents = list(corpus(args.seed, args.docs, args.doc_words, args.vocab))
    per_segment = -(-len(documents) // max(1, args.segments))
    for start in range(0, len(documents), per_segment):
        writer = index.writer()
        for doc in documents[start:start + per_segment]:
            writer.add_document(**doc)
        writer.commit(merge=False)
    return index, len(documents)


def read_queries(path: str) -> list[str]:
    with open(path, encoding="utf-8") as handle:
        lines = [line.strip() for line in handle]
    return [line for line in lines if line and not line.startswith("#")]


def run_queries(index, queries: list[str], args, digest) -> tuple[int, int]:
    fields = args.fields.split(",")
    group = AndGroup if args.group == "and" else OrGroup
    if len(fields) == 1:
        parser = QueryParser(fields[0], index.schema, group=group)
    else:
        parser = MultifieldParser(fields, index.schema, group=group)
    parser.add_plugin(FuzzyTermPlugin())
    sortedby = None if args.sort == "score" else args.sort
    hits = corrected = 0
    with index.searcher(weighting=SCORING[args.scoring]()) as searcher:
        for _ in range(args.repeat):
            for text in queries:
                query = parser.parse(text)
                for page in range(1, args.pages + 1):
                    results = searcher.search_page(query, page, pagelen=args.hits, sortedby=sortedby)
                    results.results.scorer = PositionalScorer()
                    digest.update(f"{text}|{page}|{results.total}".encode())
                    for hit in results:
                        hits += 1
                        digest.update(hit["id"].encode())
                        if args.highlight:
                            digest.update(hit.highlights("body", top=2).encode())
                    if page >= results.pagecount:
                        break
                if args.correct:
                    correction = searcher.correct_query(query, text)
                    if correction.query != query:
                        corrected += 1
                        digest.update(correction.string.encode())
    return hits, corrected


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", required=True, help="query file: one Whoosh query per line")
    parser.add_argument("--docs", type=int, default=1000, help="documents in the corpus")
    parser.add_argument("--doc-words", type=int, default=60, help="mean words per document body")
    parser.add_argument("--vocab", type=int, default=5000, help="vocabulary size")
    parser.add_argument("--seed", type=int, default=1, help="corpus seed")
    parser.add_argument("--analyzer", choices=sorted(ANALYZERS), default="standard")
    parser.add_argument("--fields", default="body", help="default search fields, comma-separated")
    parser.add_argument("--group", choices=("and", "or"), default="and", help="default operator")
    parser.add_argument("--scoring", choices=sorted(SCORING), default="bm25")
    parser.add_argument("--segments", type=int, default=1, help="index segments (unmerged commits)")
    parser.add_argument("--storage", choices=("ram", "dir"), default="ram")
    parser.add_argument("--hits", type=int, default=10, help="hits per page")
    parser.add_argument("--pages", type=int, default=1, help="result pages fetched per query")
    parser.add_argument("--sort", choices=("score", "date", "title"), default="score")
    parser.add_argument("--highlight", action="store_true", help="highlight body fragments of every hit")
    parser.add_argument("--correct", action="store_true", help="spell-correct every query")
    parser.add_argument("--repeat", type=int, default=1, help="times the query batch runs")
    args = parser.parse_args()

    queries = read_queries(args.queries)
    # A private temporary folder, removed at the end: the index lives there with --storage dir, and
    # Whoosh's writer puts its temporary files there in either case (with RamStorage it would use
    # "<system temp>/MAIN.tmp", a fixed name that concurrent runs would share and delete under each other).
    folder = tempfile.mkdtemp(prefix="whoosh-suite-")
    tempfile.tempdir = folder
    try:
        storage = FileStorage(folder) if args.storage == "dir" else RamStorage()
        index, docs = build_index(storage, args)
        digest = hashlib.sha256()
        hits, corrected = run_queries(index, queries, args, digest)
        index.close()
    finally:
        tempfile.tempdir = None
        shutil.rmtree(folder, ignore_errors=True)
    print(f"whoosh: {docs} documents, {len(queries)} queries x {args.repeat}, {hits} hits, "
          f"{corrected} corrected, sha256 {digest.hexdigest()[:16]}")


if __name__ == "__main__":
    main()
