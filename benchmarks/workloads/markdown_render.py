"""Workload: render generated Markdown documents with Python-Markdown (markdown).

    python markdown_render.py --size N --seed S

Generates N documents deterministically from the seed (headings, paragraphs with inline markup,
nested lists, tables, fenced code, footnotes, definition lists, admonitions, links) and renders each
with a fresh ``markdown.Markdown`` using the ``extra``, ``toc``, ``admonition``, ``sane_lists`` and
``smarty`` extensions. Prints one line: documents, bytes in, bytes out, and a digest of the HTML, so
two runs (original / instrumented) can be checked for identical output.
"""

from __future__ import annotations

import argparse
import hashlib
import random

import markdown

WORDS = (
    "alpha beta gamma delta epsilon zeta theta kappa lambda sigma omega parser token render "
    "block inline table list code quote link image value count loop branch call record model "
    "predict input output program feature budget runtime profile sample slice cost memory"
).split()


def words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def inline(rng: random.Random, n: int) -> str:
    parts = []
    for _ in range(n):
        r = rng.random()
        w = words(rng, rng.randint(1, 3))
        if r < 0.12:
            parts.append(f"*{w}*")
        elif r < 0.22:
            parts.append(f"**{w}**")
        elif r < 0.30:
            parts.append(f"`{w.replace(' ', '_')}()`")
        elif r < 0.38:
            parts.append(f"[{w}](https://example.org/{rng.randint(1, 999)} \"{w}\")")
        elif r < 0.42:
            parts.append(f"{w}[^n{rng.randint(1, 5)}]")
        elif r < 0.46:
            parts.append(f"\"{w}\" -- {w}...")
        else:
            parts.append(w)
    return " ".join(parts) + "."


def document(rng: random.Random, sections: int) -> str:
    out = [f"# {words(rng, 4).title()}", "", inline(rng, 20), ""]
    for s in range(sections):
        out += [f"## {words(rng, 3).title()} {s}", ""]
        for _ in range(rng.randint(1, 3)):
            out += [inline(rng, rng.randint(10, 40)), ""]
        kind = rng.randrange(6)
        if kind == 0:
            for i in range(rng.randint(3, 8)):
                out.append(f"{'    ' * (i % 2)}- {inline(rng, rng.randint(2, 8))}")
            out.append("")
        elif kind == 1:
            cols = rng.randint(2, 5)
            out.append("| " + " | ".join(words(rng, 1).title() for _ in range(cols)) + " |")
            out.append("|" + "|".join(rng.choice(["---", ":---", ":---:", "---:"]) for _ in range(cols)) + "|")
            for _ in range(rng.randint(2, 10)):
                out.append("| " + " | ".join(inline(rng, 1) for _ in range(cols)) + " |")
            out.append("")
        elif kind == 2:
            out.append("```python")
            for i in range(rng.randint(2, 10)):
                out.append(f"def f{i}(x):\n    return x * {rng.randint(1, 99)}  # {words(rng, 2)}")
            out += ["```", ""]
        elif kind == 3:
            for i in range(rng.randint(2, 6)):
                out += [f"{i + 1}. {inline(rng, rng.randint(3, 10))}"]
            out.append("")
        elif kind == 4:
            out += [words(rng, 2).title(), f":   {inline(rng, 8)}", ""]
        else:
            out += [f'!!! note "{words(rng, 2)}"', f"    {inline(rng, 12)}", ""]
        if rng.random() < 0.3:
            out += ["> " + inline(rng, 15), ">", "> " + inline(rng, 5), ""]
    for n in range(1, 6):
        out.append(f"[^n{n}]: {inline(rng, 6)}")
    out.append("")
    out.append("*[HTML]: " + words(rng, 3))
    return "\n".join(out) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=60, help="documents to render")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    digest = hashlib.sha256()
    bytes_in = bytes_out = 0
    for _ in range(args.size):
        text = document(rng, rng.randint(4, 12))
        md = markdown.Markdown(extensions=["extra", "toc", "admonition", "sane_lists", "smarty"])
        html = md.convert(text)
        bytes_in += len(text)
        bytes_out += len(html)
        digest.update(html.encode())
    print(f"markdown: {args.size} documents, {bytes_in} bytes in, {bytes_out} bytes out, sha256 {digest.hexdigest()[:16]}")


if __name__ == "__main__":
    main()
