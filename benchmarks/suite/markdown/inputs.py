"""Input generator for the markdown workload: Markdown documents plus rendering options.

``generate(count, seed, out_dir)`` yields campaign input records ``{"id", "argv", "files"}``, one
document per input (written under ``out_dir``, relative to this file's folder unless absolute). The
documents differ in more than length: their *style* weights the block kinds (prose paragraphs, nested
lists, tables, fenced code, nested block quotes, definition lists, admonitions, raw HTML, reference
links and footnotes), their *inline density* sets how much of the prose carries emphasis, code spans,
links, footnote references and smart punctuation, and nesting depth varies. The options vary the
extensions loaded (from none to a dozen), the output format, the tab length and how many times the
document is rendered. Deterministic for a seed; Python-Markdown is not needed to generate inputs.
"""

from __future__ import annotations

import random
from pathlib import Path

from markdown_documents import Blocks, document, document_shape
from suite_files import input_folder, relative_path, write_if_changed

HERE = Path(__file__).resolve().parent

EXTENSION_SETS = {
    "none": "",
    "extra": "extra",
    "docs": "extra,toc,admonition,sane_lists,smarty",
    "full": "extra,toc,admonition,sane_lists,smarty,codehilite,wikilinks,nl2br,meta,legacy_attrs,md_in_html",
    "tables": "tables,fenced_code",
    "toc": "toc,attr_list,smarty",
    "typo": "smarty,legacy_em,nl2br",
}


# Rough relative cost per byte of each extension set (measured), used to spread run times without
# letting the slowest inputs run for more than a few seconds.
EXTENSION_COST = {"none": 0.5, "extra": 1.0, "docs": 1.6, "full": 2.2, "tables": 0.8, "toc": 1.0, "typo": 0.9}


def generate(count: int = 300, seed: int = 1, out_dir: str = "inputs/markdown"):
    """Yield ``count`` input records; documents land in ``out_dir`` (relative to this file's folder)."""
    rng = random.Random(seed)
    blocks = Blocks(seed)
    folder = input_folder(out_dir, HERE)
    for n in range(count):
        style, density, depth = document_shape(rng)
        extensions = rng.choice(list(EXTENSION_SETS))
        # Conversion work in KB (bytes converted), log-uniform, scaled down for costly options.
        work_kb = 220 * 9 ** rng.random() / ((1 + 1.5 * density) * EXTENSION_COST[extensions])
        size_kb = min(rng.choice((8, 20, 50, 100, 150)), work_kb)
        repeat = max(1, min(8, round(work_kb / size_kb)))
        path = folder / f"m{n:04d}-{style}.md"
        write_if_changed(path, document(random.Random(rng.getrandbits(32)), style, int(size_kb * 1000), density, depth, blocks))
        argv = ["--extensions", EXTENSION_SETS[extensions], "--output-format", rng.choice(("html", "html", "xhtml")),
                "--tab-length", str(rng.choice((4, 4, 4, 2, 8))), "--repeat", str(repeat), relative_path(path, HERE)]
        if rng.random() < 0.3:
            argv.insert(0, "--fresh")
        yield {"id": f"markdown-{n:04d}", "argv": argv, "files": [relative_path(path, HERE)]}
