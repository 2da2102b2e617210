"""Vocabulary shared by the stages' artefacts (manifests, slice results, the slicer's IR)."""

from __future__ import annotations

Span = tuple[int, int, int, int]
"""A source region: start line, start column, end line, end column (lines 1-based, columns 0-based).

Manifests and slice results store columns as the ``ast`` module numbers them (UTF-8 byte offsets)."""


def shown_key(key: object) -> str:
    """A key read from a user's JSON as a one-line error message names it: itself when it is printable text,
    otherwise JSON-quoted (so a key holding a newline cannot break the message onto two lines)."""
    if isinstance(key, str) and key.isprintable():
        return key
    import json

    return json.dumps(key if isinstance(key, str) else repr(key))
