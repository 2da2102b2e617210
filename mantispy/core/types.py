"""Vocabulary shared by the stages' artefacts (manifests, slice results, the slicer's IR)."""

from __future__ import annotations

Span = tuple[int, int, int, int]
"""A source region: start line, start column, end line, end column (lines 1-based, columns 0-based).

Manifests and slice results store columns as the ``ast`` module numbers them (UTF-8 byte offsets)."""
