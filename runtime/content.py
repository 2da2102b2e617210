"""Content features: how many times one of the program's own regular expressions matches in an
input's files (issue 18, "component features").

A content feature is the program's tokenizer (or line scanner, or query splitter) run on the input by
itself, at C speed: ``len(finditer(pattern, text))`` over the input files, where the pattern is one the
program compiled (found by :mod:`mantispy.runtime.regex_probe`). Its value is not any counter of the
instrumented program, but it moves with the counts the program's work follows (tokens, identifiers,
lines, queries), so a model can use it where the slices of those counters cost as much as the run.

A scanner feature is the same count for the alternation of every rule a lexer compiled at one place, in
the order it tries them (``(?:rule1)|(?:rule2)|...``): scanning from the start, the first rule that
matches at a position wins, as in the lexer's own loop, so the count follows the number of tokens it
makes (not exactly: the search skips characters no rule matches, where such a lexer emits an error token,
and rules the program applies by code rather than by pattern are not in it).

A byte feature is the number of times one punctuation byte (or the newline) occurs in the files: its
pattern is that byte escaped, and it is counted with ``bytes.count`` (:func:`literal_byte`), which gives
the same number as the scan at memory speed.

A feature is a dict ``{"id", "pattern", "bytes", "flags"}`` (a bytes pattern is stored latin-1
decoded); :func:`feature_id` names it. Files are read as bytes; a str pattern searches their UTF-8
text (undecodable bytes replaced). Standard library only: predictor packages carry a copy of this file
and compute the same numbers at prediction time that the build computed at training time.

``python -m mantispy.runtime.content JOB.json`` (the build's measuring child) reads ``{"features":
[...], "inputs": [{"id", "files", "cwd", "only"?, "window"?}]}`` and prints one JSON line per (input,
feature) as soon as it is counted: ``{"input", "feature", "value", "seconds", "reading"}`` (``seconds``: CPU
time of reading the files and counting, what a predictor computing that feature alone would pay;
``reading``: the part of it spent reading). An input's
``only`` lists the feature ids to count on it, in that order (default: every feature); its ``window``
counts on that many bytes from the middle of its files instead of all of them.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import time

CONTENT_PREFIX = "content:"
"""Column and feature-id prefix of content features in data frames and models."""


def feature_id(file: str, line: int, pattern: str, is_bytes: bool, flags: int, kind: str = "regex") -> str:
    """``content:FILE:LINE:KIND#DIGEST``: where the program compiled the pattern, which pattern, and whether
    it is one regex (``regex``) or the alternation of a scanner's rules (``scanner``)."""
    digest = hashlib.sha256(f"{int(is_bytes)}:{flags}:{pattern}".encode("utf-8", "surrogatepass")).hexdigest()[:10]
    return f"{CONTENT_PREFIX}{file}:{line}:{kind}#{digest}"


def compile_feature(feature: dict) -> re.Pattern:
    """The feature's compiled pattern."""
    pattern = feature["pattern"].encode("latin-1") if feature.get("bytes") else feature["pattern"]
    return re.compile(pattern, int(feature.get("flags", 0)))


def read_inputs(files: list[str], cwd: str | None = None) -> bytes:
    """The input files' bytes, joined by newlines (``cwd``: what relative names are relative to)."""
    base = cwd or os.getcwd()
    parts = []
    for name in files:
        path = name if os.path.isabs(name) else os.path.join(base, name)
        with open(path, "rb") as handle:
            parts.append(handle.read())
    return b"\n".join(parts)


def literal_byte(compiled: re.Pattern) -> bytes | None:
    """The one byte a bytes pattern without flags matches literally (``b","``, ``rb"\\."``), else None."""
    pattern = compiled.pattern
    if not isinstance(pattern, bytes) or compiled.flags & ~re.ASCII:
        return None
    if len(pattern) == 1 and pattern not in b".^$*+?{}[]\\|()":
        return pattern
    if len(pattern) == 2 and pattern[:1] == b"\\" and not pattern[1:].isalnum():
        return pattern[1:]
    return None


def count_matches(compiled: re.Pattern, data: bytes, text: str | None = None) -> int:
    """How many non-overlapping matches ``compiled`` finds scanning ``data`` (or ``text``, its decoded
    form, for a str pattern) from the start. A pattern of one literal byte (a ``byte`` feature) is counted
    by ``bytes.count``, the same number at memory speed."""
    byte = literal_byte(compiled)
    if byte is not None:
        return data.count(byte)
    subject = data if isinstance(compiled.pattern, bytes) else (
        text if text is not None else data.decode("utf-8", errors="replace"))
    count = 0
    for _ in compiled.finditer(subject):
        count += 1
    return count


def content_values(features: list[dict], files: list[str], cwd: str | None = None) -> dict[str, float]:
    """{feature id: its value} for one input whose files are ``files``."""
    data = read_inputs(files, cwd)
    text = data.decode("utf-8", errors="replace")
    return {f["id"]: float(count_matches(compile_feature(f), data, text)) for f in features}


def middle(data: bytes, size: int) -> bytes:
    """The ``size`` bytes in the middle of ``data`` (all of it when it is no longer)."""
    if len(data) <= size:
        return data
    start = (len(data) - size) // 2
    return data[start:start + size]


def _measure(job: dict) -> None:
    features = {f["id"]: f for f in job["features"]}
    compiled: dict[str, re.Pattern] = {}  # compiled at first use: a pattern that fails fails in its turn
    for item in job["inputs"]:
        started = time.process_time()
        data = read_inputs(item["files"], item.get("cwd"))
        if item.get("window"):
            data = middle(data, int(item["window"]))
        text = data.decode("utf-8", errors="replace")
        reading = time.process_time() - started
        for fid in item.get("only") or list(features):
            if fid not in compiled:
                compiled[fid] = compile_feature(features[fid])
            pattern = compiled[fid]
            started = time.process_time()
            value = count_matches(pattern, data, text)
            seconds = time.process_time() - started + reading
            print(json.dumps({"input": item["id"], "feature": fid, "value": value, "seconds": seconds,
                              "reading": reading}), flush=True)


def main(argv: list[str]) -> None:
    """``python -m mantispy.runtime.content JOB.json`` (see the module docstring)."""
    if len(argv) != 1:
        sys.exit("usage: python -m mantispy.runtime.content JOB.json")
    with open(argv[0], encoding="utf-8") as handle:
        _measure(json.load(handle))


if __name__ == "__main__":
    main(sys.argv[1:])
