"""Workload: render Markdown documents with Python-Markdown (markdown).

    python workload.py [--extensions a,b,...] [--output-format html|xhtml] [--tab-length N]
                       [--repeat R] [--fresh] FILE [FILE ...]

Reads each Markdown file and converts it to HTML with ``markdown.Markdown`` loaded with the given
extensions (any of Python-Markdown's bundled ones: extra, toc, admonition, sane_lists, smarty,
codehilite, wikilinks, nl2br, meta, md_in_html, legacy_attrs, ...; none by default), ``--repeat`` times
per file. One converter is reused (``reset()`` between documents) unless ``--fresh`` asks for a new one
per conversion. Prints one line: files, bytes in, bytes out, and a digest of the HTML, so two runs
(original / instrumented) can be checked for identical output.
"""

from __future__ import annotations

import argparse
import hashlib

import markdown


def converter(args) -> markdown.Markdown:
    # Dotted names load the extension modules by import (from wherever ``markdown`` itself comes from),
    # not through the installed distribution's entry points.
    extensions = [name if "." in name else f"markdown.extensions.{name}" for name in args.extensions.split(",") if name]
    configs = {"markdown.extensions.codehilite": {"use_pygments": False}}
    return markdown.Markdown(extensions=extensions, output_format=args.output_format, tab_length=args.tab_length,
                             extension_configs={k: v for k, v in configs.items() if k in extensions})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", help="Markdown files to render")
    parser.add_argument("--extensions", default="", help="comma-separated Python-Markdown extensions")
    parser.add_argument("--output-format", choices=("html", "xhtml"), default="html")
    parser.add_argument("--tab-length", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=1, help="conversions per file")
    parser.add_argument("--fresh", action="store_true", help="a new converter for every conversion")
    args = parser.parse_args()
    digest = hashlib.sha256()
    bytes_in = bytes_out = 0
    md = converter(args)
    for name in args.files:
        with open(name, encoding="utf-8") as handle:
            text = handle.read()
        for _ in range(args.repeat):
            if args.fresh:
                md = converter(args)
            html = md.reset().convert(text)
            bytes_in += len(text)
            bytes_out += len(html)
            digest.update(html.encode())
            if "toc" in args.extensions:
                digest.update(md.toc.encode())
    print(f"markdown: {len(args.files)} files x {args.repeat}, {bytes_in} bytes in, {bytes_out} bytes out, "
          f"sha256 {digest.hexdigest()[:16]}")


if __name__ == "__main__":
    main()
