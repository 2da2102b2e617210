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

HERE = Path(__file__).resolve().parent

WORDS = (
    "alpha beta gamma delta epsilon zeta theta kappa lambda sigma omega parser token render block inline "
    "table list code quote link image value count loop branch call record model predict input output "
    "program feature budget runtime profile sample slice cost memory index query search result page "
    "engine cluster worker queue schedule thread process signal buffer stream packet frame window"
).split()
KINDS = ("para", "list", "table", "code", "quote", "deflist", "admonition", "html", "heading", "reflinks")
STYLES = {
    "prose": {"para": 8, "heading": 2, "quote": 1, "list": 1},
    "lists": {"list": 8, "para": 2, "heading": 1},
    "tables": {"table": 6, "para": 2, "heading": 1},
    "code": {"code": 6, "para": 3, "heading": 1},
    "quotes": {"quote": 6, "para": 2, "list": 1},
    "reference": {"para": 5, "reflinks": 3, "deflist": 2, "heading": 1},
    "html": {"html": 5, "para": 3, "heading": 1},
    "docs": {"para": 4, "admonition": 2, "code": 2, "deflist": 1, "table": 1, "list": 2, "heading": 2},
    "mixed": {kind: 1 for kind in KINDS},
}
EXTENSION_SETS = {
    "none": "",
    "extra": "extra",
    "docs": "extra,toc,admonition,sane_lists,smarty",
    "full": "extra,toc,admonition,sane_lists,smarty,codehilite,wikilinks,nl2br,meta,legacy_attrs,md_in_html",
    "tables": "tables,fenced_code",
    "toc": "toc,attr_list,smarty",
    "typo": "smarty,legacy_em,nl2br",
}


def _words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def _fragment(rng: random.Random, n: int, density: float) -> str:
    parts = []
    for _ in range(n):
        w = _words(rng, rng.randint(1, 3))
        if rng.random() >= density:
            parts.append(w)
            continue
        r = rng.random()
        if r < 0.18:
            parts.append(f"*{w}*")
        elif r < 0.32:
            parts.append(f"**{w}**")
        elif r < 0.40:
            parts.append(f"***{w}*** and _{w}_")
        elif r < 0.52:
            parts.append(f"`{w.replace(' ', '_')}()`")
        elif r < 0.64:
            parts.append(f"[{w}](https://example.org/{rng.randint(1, 999)} \"{w}\")")
        elif r < 0.70:
            parts.append(f"[{w}][r{rng.randint(1, 20)}]")
        elif r < 0.76:
            parts.append(f"{w}[^n{rng.randint(1, 8)}]")
        elif r < 0.84:
            parts.append(f"\"{w}\" -- {w}... it's")
        elif r < 0.88:
            parts.append(f"<https://example.com/{w.replace(' ', '/')}>")
        elif r < 0.92:
            parts.append(f"![{w}](img/{rng.randint(1, 99)}.png)")
        elif r < 0.96:
            parts.append(f"[[{w.title().replace(' ', '')}]]")
        else:
            parts.append(f"<span class=\"x\">{w}</span> &amp; HTML")
    return " ".join(parts)


class Fragments:
    """Pools of inline text per density, so documents are assembled fast (the generator runs on every
    spec load): a paragraph of n words joins about n / 4 fragments drawn from the pool."""

    def __init__(self, rng: random.Random, size: int = 300) -> None:
        self.rng = rng
        self.pools: dict[float, list[str]] = {}
        self.size = size

    def __call__(self, rng: random.Random, n: int, density: float) -> str:
        pool = self.pools.get(density)
        if pool is None:
            pool = self.pools[density] = [_fragment(self.rng, self.rng.randint(1, 7), density) for _ in range(self.size)]
        return " ".join(rng.choices(pool, k=max(1, n // 4))) + "."


def _block(rng: random.Random, kind: str, density: float, depth: int, inline: Fragments) -> list[str]:
    if kind == "para":
        return [inline(rng, rng.randint(8, 40), density), ""]
    if kind == "heading":
        level = rng.randint(2, 4)
        attr = f" {{#{_words(rng, 1)}-{rng.randint(1, 99999)} .c{rng.randint(1, 5)}}}" if rng.random() < 0.3 else ""
        return [f"{'#' * level} {_words(rng, 3).title()}{attr}", ""]
    if kind == "list":
        out = []
        ordered = rng.random() < 0.4
        for i in range(rng.randint(3, 10)):
            level = rng.randint(0, min(depth, i))
            marker = f"{i + 1}." if ordered else rng.choice("-*+")
            out.append(f"{'    ' * level}{marker} {inline(rng, rng.randint(2, 10), density)}")
        return out + [""]
    if kind == "table":
        cols = rng.randint(2, 7)
        out = ["| " + " | ".join(_words(rng, 1).title() for _ in range(cols)) + " |",
               "|" + "|".join(rng.choice(["---", ":---", ":---:", "---:"]) for _ in range(cols)) + "|"]
        for _ in range(rng.randint(2, 14)):
            out.append("| " + " | ".join(inline(rng, rng.randint(1, 3), density) for _ in range(cols)) + " |")
        return out + [""]
    if kind == "code":
        lang = rng.choice(["python", "c", "text", ""])
        out = [f"```{lang}"]
        for i in range(rng.randint(3, 25)):
            out.append(f"{'    ' * rng.randint(0, 3)}value_{i} = compute({rng.randint(1, 99)}, \"{_words(rng, 2)}\")  # <{_words(rng, 1)}>")
        return out + ["```", ""]
    if kind == "quote":
        out = []
        for _ in range(rng.randint(1, 4)):
            level = rng.randint(1, depth + 1)
            out += ["> " * level + inline(rng, rng.randint(5, 20), density), "> " * level]
        return out + [""]
    if kind == "deflist":
        out = []
        for _ in range(rng.randint(1, 4)):
            out += [_words(rng, 2).title(), f":   {inline(rng, rng.randint(4, 15), density)}", ""]
        return out
    if kind == "admonition":
        kind_name = rng.choice(["note", "warning", "tip", "danger"])
        return [f'!!! {kind_name} "{_words(rng, 2)}"', f"    {inline(rng, rng.randint(6, 25), density)}", "",
                f"    {inline(rng, rng.randint(3, 10), density)}", ""]
    if kind == "html":
        if rng.random() < 0.5:
            return ['<div class="box" markdown="1">', "", inline(rng, rng.randint(5, 20), density), "", "</div>", ""]
        return ["<table>", *(f"<tr><td>{_words(rng, 2)}</td><td>{rng.randint(1, 999)}</td></tr>" for _ in range(rng.randint(2, 8))), "</table>", ""]
    # reflinks
    return [f"[r{rng.randint(1, 20)}]: https://example.net/{_words(rng, 1)}/{rng.randint(1, 999)} \"{_words(rng, 2)}\"" for _ in range(rng.randint(2, 6))] + [""]


class Blocks:
    """Pools of blocks per (kind, inline density, nesting depth), each grown on demand from its own seed:
    a document draws its blocks from the pools, so that 300 documents are assembled fast (the generator
    runs on every spec load) while each still mixes its own sequence of blocks."""

    SIZE = 24

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.inline = Fragments(random.Random(f"{seed}:inline"))
        self.pools: dict[tuple[str, float, int], tuple[random.Random, list[str], list[int]]] = {}

    def block(self, rng: random.Random, kind: str, density: float, depth: int) -> tuple[str, int]:
        key = (kind, density, depth if kind in ("list", "quote") else 0)
        if key not in self.pools:
            self.pools[key] = (random.Random(f"{self.seed}:{key}"), [], [])
        own, texts, lengths = self.pools[key]
        k = rng.randrange(self.SIZE)
        while len(texts) <= k:
            text = "\n".join(_block(own, kind, density, key[2], self.inline))
            texts.append(text)
            lengths.append(len(text) + 1)
        return texts[k], lengths[k]


def document(rng: random.Random, style: str, size: int, density: float, depth: int, blocks: Blocks) -> str:
    """A document of about ``size`` characters in the given style."""
    weights = STYLES[style]
    kinds = list(weights)
    cum_weights = [sum(weights[k] for k in kinds[:i + 1]) for i in range(len(kinds))]
    out = ["Title: " + _words(rng, 3), "Author: " + _words(rng, 2), "", f"# {_words(rng, 4).title()}", ""]
    length = 0
    while length < size:
        text, n = blocks.block(rng, rng.choices(kinds, cum_weights=cum_weights)[0], density, depth)
        out.append(text)
        length += n
    for n in range(1, 9):
        out.append(f"[^n{n}]: {blocks.inline(rng, 6, density)}")
    out += ["", "*[HTML]: Hyper Text Markup Language", "*[API]: application programming interface"]
    return "\n".join(out) + "\n"


def _write(path: Path, text: str) -> None:
    """Write ``text`` unless the file already holds it (the generator runs on every spec load)."""
    try:
        if path.read_text(encoding="utf-8") == text:
            return
    except OSError:
        pass
    path.write_text(text, encoding="utf-8")


def _rel(path: Path) -> str:
    try:
        return path.relative_to(HERE).as_posix()
    except ValueError:
        return str(path)


# Rough relative cost per byte of each extension set (measured), used to spread run times without
# letting the slowest inputs run for more than a few seconds.
EXTENSION_COST = {"none": 0.5, "extra": 1.0, "docs": 1.6, "full": 2.2, "tables": 0.8, "toc": 1.0, "typo": 0.9}


def generate(count: int = 300, seed: int = 1, out_dir: str = "inputs/markdown"):
    """Yield ``count`` input records; documents land in ``out_dir`` (relative to this file's folder)."""
    rng = random.Random(seed)
    blocks = Blocks(seed)
    folder = Path(out_dir) if Path(out_dir).is_absolute() else HERE / out_dir
    folder.mkdir(parents=True, exist_ok=True)
    for n in range(count):
        style = rng.choice(list(STYLES))
        density = rng.choice((0.0, 0.05, 0.15, 0.3, 0.5))
        depth = rng.choice((0, 1, 2, 4))
        extensions = rng.choice(list(EXTENSION_SETS))
        # Conversion work in KB (bytes converted), log-uniform, scaled down for costly options.
        work_kb = 220 * 9 ** rng.random() / ((1 + 1.5 * density) * EXTENSION_COST[extensions])
        size_kb = min(rng.choice((8, 20, 50, 100, 150)), work_kb)
        repeat = max(1, min(8, round(work_kb / size_kb)))
        path = folder / f"m{n:04d}-{style}.md"
        _write(path, document(random.Random(rng.getrandbits(32)), style, int(size_kb * 1000), density, depth, blocks))
        argv = ["--extensions", EXTENSION_SETS[extensions], "--output-format", rng.choice(("html", "html", "xhtml")),
                "--tab-length", str(rng.choice((4, 4, 4, 2, 8))), "--repeat", str(repeat), _rel(path)]
        if rng.random() < 0.3:
            argv.insert(0, "--fresh")
        yield {"id": f"markdown-{n:04d}", "argv": argv, "files": [_rel(path)]}
