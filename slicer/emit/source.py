"""One program file as the emitter sees it: parsed by libcst once, with positions in both coordinate
systems (libcst's character columns, ast's UTF-8 byte columns), and the instrumentor's analysis of it."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider

from mantispy.core.types import Span
from mantispy.instrument.transformer import Options, instrument_source
from mantispy.slicer.program import SourceFile

from .errors import EmitError


class SourceText:
    """Character -> UTF-8 byte columns for one source (lines split the way ast numbers them)."""

    def __init__(self, source: str) -> None:
        self.lines = re.split(r"\r\n|\r|\n", source)

    def byte_col(self, line: int, col: int) -> int:
        """The byte offset of character column ``col`` of 1-based ``line``."""
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        return len(text[:col].encode("utf-8"))


def char_span(r: CodeRange) -> Span:
    return (r.start.line, r.start.column, r.end.line, r.end.column)


class ParsedFile:
    """One file parsed by libcst, with positions in both coordinate systems."""

    def __init__(self, source: SourceFile) -> None:
        self.source = source
        try:
            self.wrapper = MetadataWrapper(cst.parse_module(source.source), unsafe_skip_copy=True)
        except cst.ParserSyntaxError as exc:
            raise EmitError(f"{source.path}: libcst cannot parse it: {exc}") from None
        self.module = self.wrapper.module
        self.positions = self.wrapper.resolve(PositionProvider)
        self.text = SourceText(source.source)

    def char_span(self, node: cst.CSTNode) -> Span:
        """libcst span (character columns)."""
        return char_span(self.positions[node])

    def byte_span(self, node: cst.CSTNode, last: cst.CSTNode | None = None) -> Span:
        """ast-style span (byte columns) from the start of ``node`` to the end of ``last`` (or ``node``)."""
        start = self.positions[node].start
        end = self.positions[last if last is not None else node].end
        return (start.line, self.text.byte_col(start.line, start.column),
                end.line, self.text.byte_col(end.line, end.column))


_PARSED_CACHE: dict[tuple[str, str], ParsedFile] = {}
_ANALYSED_CACHE: dict[tuple[str, str, str, int], Any] = {}


def _cached(cache: dict, key: tuple, compute: Callable[[], Any]) -> Any:
    """``cache[key]``, computed once (a cache holds at most 512 entries: it starts again when full)."""
    found = cache.get(key)
    if found is None:
        if len(cache) > 512:
            cache.clear()
        found = cache[key] = compute()
    return found


def parsed_file(source: SourceFile) -> ParsedFile:
    """The parsed file, shared by every emission of the same source text (libcst trees are immutable, and
    plans refer to nodes by identity, so one tree serves many slices; parsing is most of an emission's time)."""
    return _cached(_PARSED_CACHE, (source.path, source.source), lambda: ParsedFile(source))


def derived_counters(source: str, path: str, k: int) -> frozenset[str]:
    """The counters of one file that the default instrumentation counts with no probe of their own (else
    arms whose count follows from others: :mod:`mantispy.instrument.derivation`), cached likewise."""
    return _cached(_ANALYSED_CACHE, (path, source, "derived", k),
                   lambda: frozenset(instrument_source(source, path, Options(k=k)).derived))


def instrumentor_analysis(source: str, path: str, family: str, k: int):
    """``instrument_source`` of one file for one feature family, cached like :func:`parsed_file`."""
    return _cached(_ANALYSED_CACHE, (path, source, family, k),
                   lambda: instrument_source(source, path, Options(families=frozenset({family}), k=k)))
