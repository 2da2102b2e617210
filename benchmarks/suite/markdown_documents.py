"""Generated Markdown documents for the suite's Markdown renderers (Python-Markdown, mistune).

``document(rng, style, size, density, depth, blocks)`` assembles a document of about ``size``
characters whose *style* weights the block kinds (prose paragraphs, nested lists, tables, fenced code,
nested block quotes, definition lists, admonitions, raw HTML, reference links and footnotes), whose
*inline density* sets how much of the prose carries emphasis, code spans, links, footnote references
and smart punctuation, and whose nesting depth varies. Deterministic for a seed; no renderer needed.
A prepared campaign gets a copy of this file next to its generator (benchmarks/suite/prepare.py).
"""

from __future__ import annotations

import random

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


def document_shape(rng: random.Random) -> tuple[str, float, int]:
    """A random (style, inline density, nesting depth) for :func:`document`."""
    style = rng.choice(list(STYLES))
    density = rng.choice((0.0, 0.05, 0.15, 0.3, 0.5))
    depth = rng.choice((0, 1, 2, 4))
    return style, density, depth
