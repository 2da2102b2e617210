"""Input generator for the whoosh workload: query files plus index and search options.

``generate(count, seed, out_dir)`` yields campaign input records ``{"id", "argv", "files"}``. Each input
has its own query file (written under ``out_dir``, relative to this file's folder unless absolute) and
varies, besides the number of queries, what drives the search engine's cost in ways size alone does
not show: the query shape (single terms, multi-term, phrases with slop, boolean, wildcards with short or
long prefixes, fuzzy terms with edit distance 1 or 2), how common the query words are in the corpus,
the corpus (documents, words per document, vocabulary, analyzer, segments, RAM or folder storage), hits
per page, pages, sorting, highlighting, spelling correction and repeats. Deterministic for a seed; the
Whoosh package is not needed to generate inputs.
"""

from __future__ import annotations

import random
from pathlib import Path

from suite_files import input_folder, relative_path, write_if_changed

HERE = Path(__file__).resolve().parent

# Keep in sync with workload.py: the corpus uses the same words.
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


SHAPES = ("term", "multi", "phrase", "boolean", "wildcard", "fuzzy", "mixed")
# Milliseconds per query of each shape on a corpus of 20,000 words (measured on a 2-core VM), used to
# spread the inputs' run times while keeping the slowest within a few seconds. Highlighting a hit of a
# fuzzy query makes Whoosh expand the fuzzy terms again (a Levenshtein scan of every segment's terms).
QUERY_MS = {"term": 2.0, "multi": 2.6, "phrase": 2.5, "boolean": 3.5, "wildcard": 22.0, "fuzzy": 12.0, "mixed": 5.0}
HIGHLIGHT_PER_HIT = {"fuzzy": 0.3, "mixed": 0.12}


def _rank(rng: random.Random, terms: str, vocab: int) -> int:
    kind = rng.choice(("common", "mid", "rare")) if terms == "any" else terms
    if kind == "common":
        return rng.randrange(0, 25)
    if kind == "mid":
        return rng.randrange(25, min(500, vocab))
    return rng.randrange(min(500, vocab - 1), vocab)


def _query(rng: random.Random, shape: str, terms: str, vocab: int) -> str:
    w = lambda: word(_rank(rng, terms, vocab))  # noqa: E731
    if shape == "mixed":
        shape = rng.choice(SHAPES[:-1])
    if shape == "term":
        return w()
    if shape == "multi":
        return " ".join(w() for _ in range(rng.randint(2, 5)))
    if shape == "phrase":
        phrase = '"' + " ".join(w() for _ in range(rng.randint(2, 4))) + '"'
        return phrase + (f"~{rng.randint(1, 5)}" if rng.random() < 0.35 else "")
    if shape == "boolean":
        form = rng.randrange(4)
        if form == 0:
            return f"({w()} OR {w()}) AND NOT {w()}"
        if form == 1:
            return f"{w()} AND ({w()} OR {w()} OR {w()})"
        if form == 2:
            return f"({w()} AND {w()}) OR ({w()} AND NOT {w()})"
        return " OR ".join(w() for _ in range(rng.randint(2, 6)))
    if shape == "wildcard":
        base = w()
        if rng.random() < 0.25 and len(base) >= 4:
            return base[:2] + "?" + base[3:rng.randint(3, len(base))] + "*"
        return base[:rng.choice((1, 2, 2, 3, 3, 4, 5, 6))] + "*"
    # fuzzy
    distance = rng.choice((1, 1, 2))
    suffix = f"/{rng.randint(1, 3)}" if rng.random() < 0.3 else ""
    return f"{w()}~{distance}{suffix}"


def generate(count: int = 300, seed: int = 1, out_dir: str = "inputs/whoosh"):
    """Yield ``count`` input records; query files land in ``out_dir`` (relative to this file's folder)."""
    rng = random.Random(seed)
    folder = input_folder(out_dir, HERE)
    for n in range(count):
        shape = rng.choice(SHAPES)
        terms = rng.choice(("common", "mid", "rare", "any", "any"))
        vocab = rng.choice((2000, 5000, 5000, 20000))
        docs = rng.choice((150, 300, 600, 1000, 1500))
        doc_words = rng.choice((15, 30, 60, 100))
        while docs * doc_words > 60000:
            doc_words //= 2
        highlight = rng.random() < 0.3
        correct = rng.random() < 0.15
        fields = "title,body" if rng.random() < 0.25 else "body"
        hits, pages = rng.choice((5, 10, 10, 20, 50)), rng.choice((1, 1, 1, 2, 3, 5))
        segments = rng.choice((1, 1, 1, 2, 4, 8))
        if highlight and shape in HIGHLIGHT_PER_HIT and hits * pages > 10:
            hits, pages = min(hits, 10), 1
        # Expanding a wildcard or fuzzy term scans each segment's term list.
        per_segment = 1 + segments / 4 if shape in ("wildcard", "fuzzy", "mixed") else 1
        per_hit = HIGHLIGHT_PER_HIT.get(shape, 0.04) * (1 + segments / 4) if highlight else 0
        per_query_ms = (QUERY_MS[shape] * (1 + docs * doc_words / 20000) * (1.5 if fields != "body" else 1)
                        * per_segment * (1 + 0.4 * (pages - 1)) * (3 if correct else 1) * (1 + pages * hits * per_hit))
        budget_ms = 80 * 15 ** rng.random()  # query work: 80 ms .. 1.2 s (estimated)
        queries_n = max(2, min(rng.randint(5, 80), int(budget_ms / per_query_ms)))
        lines = [f"# {shape} queries, {terms} terms"]
        lines += [_query(rng, shape, terms, vocab) for _ in range(queries_n)]
        path = folder / f"w{n:04d}-{shape}-{terms}.txt"
        write_if_changed(path, "\n".join(lines) + "\n")
        repeat = rng.choice((1, 1, 1, 2, 3)) if queries_n * per_query_ms < 300 else 1
        argv = ["--queries", relative_path(path, HERE), "--docs", str(docs), "--doc-words", str(doc_words),
                "--vocab", str(vocab), "--seed", str(rng.randint(1, 10**6)),
                "--analyzer", rng.choice(("standard", "standard", "standard", "stemming", "simple")),
                "--fields", fields, "--group", rng.choice(("and", "and", "or")),
                "--scoring", rng.choice(("bm25", "bm25", "tfidf", "frequency")),
                "--segments", str(segments),
                "--storage", rng.choice(("ram", "ram", "dir")),
                "--hits", str(hits), "--pages", str(pages),
                "--sort", rng.choice(("score", "score", "score", "date", "title")), "--repeat", str(repeat)]
        if highlight:
            argv.append("--highlight")
        if correct:
            argv.append("--correct")
        yield {"id": f"whoosh-{n:04d}", "argv": argv, "files": [relative_path(path, HERE)]}
