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
             docs: tuple[int, ...] = (500, 1000, 2000, 3000)):
    """Yield ``count`` input records; their query files land in ``out_dir`` (relative to this folder).
    ``docs``: the corpus sizes to draw from."""
    rng = random.Random(seed)
    # File names carry no input parameters (a path is a value the program sees: "q0007-phrase-rare.txt"
    # leaked the shape into a feature); the seed's own folder keeps different streams apart.
    folder = HERE / out_dir / f"seed{seed}"
    folder.mkdir(parents=True, exist_ok=True)
    for n in range(count):
        shape = rng.choice(SHAPES)
        terms = rng.choice(("common", "rare", "any"))
        queries = folder / f"q{n:04d}.txt"
        prefix_len = rng.choice((1, 2, 3, 4)) if shape in ("prefix", "mixed") else 0
        if not queries.exists():
            subprocess.run(
                [sys.executable, str(GEN_QUERIES), "--count", str(rng.randint(3, 25)), "--seed", str(seed * 1000 + n),
                 "--shape", shape, "--terms", terms, "--prefix-len", str(prefix_len), "-o", str(queries)],
                check=True,
            )
        else:  # keep the random stream identical whether or not the file already exists
            rng.randint(3, 25)
        argv = ["--docs", str(rng.choice(tuple(docs))), "--queries", str(queries.relative_to(HERE)),
                "--hits", str(rng.choice((5, 10, 20, 50))), "--fuzzy", str(rng.choice((0, 0, 0, 1)))]
        if rng.random() < 0.3:
            argv.append("--no-highlight")
        if rng.random() < 0.2:
            argv += ["--repeat", str(rng.choice((2, 3)))]
        yield {"id": f"q{n:04d}", "argv": argv, "files": [str(queries.relative_to(HERE))]}
