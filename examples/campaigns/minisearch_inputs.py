"""Input generator for the minisearch campaign: diverse query batches written as query files.

Each input varies what drives the search engine's cost in ways the input's size alone does not show:
the query mix (terms, phrases, boolean, prefix wildcards), corpus size, hits per page, highlighting,
fuzzy matching and repeats. Deterministic for a given seed.
"""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
GEN_QUERIES = HERE.parent / "minisearch" / "gen_queries.py"
SHAPES = ("term", "multi", "boolean", "phrase", "prefix", "mixed")


def generate(count: int = 60, seed: int = 1, out_dir: str = ".mantis/inputs/minisearch",
             docs: tuple[int, ...] = (500, 1000, 2000, 3000), queries: tuple[int, int] = (3, 25),
             hits: tuple[int, ...] = (5, 10, 20, 50), fuzzy: tuple[int, ...] = (0, 0, 0, 1),
             options: bool = True):
    """Yield ``count`` input records; their query files land in ``out_dir`` (relative to this folder).

    ``docs``: the corpus sizes to draw from; ``queries``: the range of queries per file; ``hits`` and
    ``fuzzy``: the values of those options to draw from; ``options``: also vary highlighting and
    repeats. The paper's Lucene setting (one corpus, query files that differ in what they ask) is
    ``docs = [1000], hits = [50], fuzzy = [1], options = false`` (minisearch-demo.toml): then the cost lies in the files'
    content, which the numbers on the command line do not show."""
    rng = random.Random(seed)
    # File names carry no input parameters (a path is a value the program sees: "q0007-phrase-rare.txt"
    # leaked the shape into a feature); the seed's own folder keeps different streams apart.
    queries = (int(queries[0]), int(queries[1]))
    folder = HERE / out_dir / (f"seed{seed}" if queries == (3, 25) else f"seed{seed}-queries{queries[0]}-{queries[1]}")
    folder.mkdir(parents=True, exist_ok=True)
    for n in range(count):
        shape = rng.choice(SHAPES)
        terms = rng.choice(("common", "rare", "any"))
        query_file = folder / f"q{n:04d}.txt"
        prefix_len = rng.choice((1, 2, 3, 4)) if shape in ("prefix", "mixed") else 0
        if not query_file.exists():
            subprocess.run(
                [sys.executable, str(GEN_QUERIES), "--count", str(rng.randint(*queries)), "--seed", str(seed * 1000 + n),
                 "--shape", shape, "--terms", terms, "--prefix-len", str(prefix_len), "-o", str(query_file)],
                check=True,
            )
        else:  # keep the random stream identical whether or not the file already exists
            rng.randint(*queries)
        argv = ["--docs", str(rng.choice(tuple(docs))), "--queries", str(query_file.relative_to(HERE)),
                "--hits", str(rng.choice(tuple(hits))), "--fuzzy", str(rng.choice(tuple(fuzzy)))]
        if options and rng.random() < 0.3:
            argv.append("--no-highlight")
        if options and rng.random() < 0.2:
            argv += ["--repeat", str(rng.choice((2, 3)))]
        yield {"id": f"q{n:04d}", "argv": argv, "files": [str(query_file.relative_to(HERE))]}
