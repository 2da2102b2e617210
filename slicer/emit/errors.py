"""The emitter's one error: the slice cannot be emitted."""

from __future__ import annotations


class EmitError(Exception):
    """The slice cannot be emitted (unknown criterion, unparsable kept file, bad entry)."""
