"""Input generator for the mistune workload: Markdown documents plus rendering options.

``generate(count, seed, out_dir)`` yields campaign input records ``{"id", "argv", "files"}``, one
document per input (written under ``out_dir``, relative to this file's folder unless absolute). The
documents come from the same generator as the Python-Markdown workload's (``markdown_documents``: styles
weighting block kinds, inline density, nesting depth), so the two renderers see the same kind of text;
the options vary the plugins loaded (none to a dozen), the renderer (HTML or the token tree), HTML
escaping, hard wraps and how many times the document is rendered. Deterministic for a seed; mistune is
not needed to generate inputs.
"""

from __future__ import annotations

import random
from pathlib import Path

from markdown_documents import Blocks, document, document_shape
from suite_files import input_folder, relative_path, write_if_changed

HERE = Path(__file__).resolve().parent

PLUGIN_SETS = {
    "none": "",
    "tables": "table,strikethrough",
    "notes": "footnotes,abbr,def_list",
    "gfm": "strikethrough,table,url,task_lists",
    "typo": "mark,insert,superscript,subscript",
    "full": "strikethrough,footnotes,table,url,abbr,def_list,math,mark,insert,superscript,subscript,task_lists,spoiler,ruby",
}
# Rough relative cost per byte of each plugin set and renderer, used to spread run times without letting
# the slowest inputs run for more than a few seconds.
PLUGIN_COST = {"none": 0.6, "tables": 0.8, "notes": 0.9, "gfm": 1.0, "typo": 1.0, "full": 1.5}


def generate(count: int = 300, seed: int = 1, out_dir: str = "inputs/mistune"):
    """Yield ``count`` input records; documents land in ``out_dir`` (relative to this file's folder)."""
    rng = random.Random(seed)
    blocks = Blocks(seed)
    folder = input_folder(out_dir, HERE)
    for n in range(count):
        style, density, depth = document_shape(rng)
        plugins = rng.choice(list(PLUGIN_SETS))
        renderer = rng.choice(("html", "html", "ast"))
        work_kb = 300 * 9 ** rng.random() / ((1 + 1.5 * density) * PLUGIN_COST[plugins] * (1.3 if renderer == "ast" else 1))
        size_kb = min(rng.choice((8, 20, 50, 100, 150)), work_kb)
        repeat = max(1, min(8, round(work_kb / size_kb)))
        path = folder / f"k{n:04d}-{style}.md"
        write_if_changed(path, document(random.Random(rng.getrandbits(32)), style, int(size_kb * 1000), density, depth, blocks))
        argv = ["--plugins", PLUGIN_SETS[plugins], "--renderer", renderer, "--repeat", str(repeat), relative_path(path, HERE)]
        if rng.random() < 0.3:
            argv.insert(0, "--escape")
        if rng.random() < 0.2:
            argv.insert(0, "--hard-wrap")
        if rng.random() < 0.25:
            argv.insert(0, "--fresh")
        yield {"id": f"mistune-{n:04d}", "argv": argv, "files": [relative_path(path, HERE)]}
