"""Workload: render Markdown documents with mistune.

    python workload.py [--plugins a,b,...] [--renderer html|ast] [--escape] [--hard-wrap]
                       [--repeat R] [--fresh] FILE [FILE ...]

Reads each Markdown file and renders it with a ``mistune.create_markdown`` parser loaded with the given
plugins (any of mistune's bundled ones: strikethrough, footnotes, table, url, abbr, def_list, math,
mark, insert, superscript, subscript, task_lists, spoiler, ruby; none by default), to HTML or to
mistune's token tree (``--renderer ast``), ``--repeat`` times per file. One parser is reused unless
``--fresh`` asks for a new one per rendering. Prints one line: files, bytes in, size of the output and a
digest of it, so two runs (original / instrumented) can be checked for identical output.
"""

from __future__ import annotations

import argparse
import hashlib
import json

import mistune


def parser_for(args):
    plugins = [name for name in args.plugins.split(",") if name]
    renderer = None if args.renderer == "ast" else "html"
    return mistune.create_markdown(escape=args.escape, hard_wrap=args.hard_wrap, renderer=renderer, plugins=plugins)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", help="Markdown files to render")
    parser.add_argument("--plugins", default="", help="comma-separated mistune plugins")
    parser.add_argument("--renderer", choices=("html", "ast"), default="html")
    parser.add_argument("--escape", action="store_true", help="escape raw HTML")
    parser.add_argument("--hard-wrap", action="store_true", help="line breaks become <br />")
    parser.add_argument("--repeat", type=int, default=1, help="renderings per file")
    parser.add_argument("--fresh", action="store_true", help="a new parser for every rendering")
    args = parser.parse_args()
    digest = hashlib.sha256()
    bytes_in = size_out = 0
    markdown = parser_for(args)
    for name in args.files:
        with open(name, encoding="utf-8") as handle:
            text = handle.read()
        for _ in range(args.repeat):
            if args.fresh:
                markdown = parser_for(args)
            out = markdown(text)
            rendered = out if isinstance(out, str) else json.dumps(out, sort_keys=True)
            bytes_in += len(text)
            size_out += len(rendered)
            digest.update(rendered.encode())
    print(f"mistune: {len(args.files)} files x {args.repeat}, {bytes_in} bytes in, {size_out} chars out, "
          f"sha256 {digest.hexdigest()[:16]}")


if __name__ == "__main__":
    main()
