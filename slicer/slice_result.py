"""The slice artefact the slicer hands to the emitter (docs/contracts.md, "Slicer → emitter").

A :class:`SliceResult` says which source a feature counter depends on: the spans of the CFG vertices in
the slice per file (in :mod:`ast` coordinates, UTF-8 *byte* columns), the code units whose definitions
must exist, how call sites were resolved, and the criterion itself (the manifest's feature id, kind,
file and span, the span in libcst coordinates: 1-based lines, 0-based *character* columns).

It is plain data: :meth:`SliceResult.to_dict` / :meth:`SliceResult.from_dict` give a JSON round trip,
:meth:`SliceResult.save` / :meth:`SliceResult.load` read and write files. Keys this version does not
know are kept in ``extra`` and written back unchanged, so a newer slicer's artefact survives a round trip.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mantispy.core.types import Span

_FIELDS = (
    "criterion", "criterion_kind", "criterion_file", "criterion_span", "criterion_detail", "entry", "kept",
    "keep_units", "calls", "unresolved", "statements_total", "statements_kept", "criteria", "calls_only",
)


@dataclass
class SliceResult:
    """The statements (vertex spans) one feature counter depends on, and where the program starts."""

    criterion: str  # feature id, e.g. "pkg/mod.py:run:loop:1"
    criterion_kind: str  # loop / branch / call / exception / value
    criterion_file: str  # path relative to the program root, POSIX separators
    criterion_span: Span  # libcst span of the construct (character columns), as the manifest gives it
    entry: str  # "main.py", "-m pkg.cli" or "pkg.mod:function"
    kept: dict[str, list[Span]] = field(default_factory=dict)  # file -> ast spans (byte columns)
    keep_units: dict[str, list[str]] = field(default_factory=dict)  # file -> qualnames
    calls: list[dict[str, Any]] = field(default_factory=list)  # {"site", "callees", "why", ...}
    unresolved: list[str] = field(default_factory=list)  # call sites "file:line:col" resolved by nothing
    statements_total: int = 0
    statements_kept: int = 0
    criterion_detail: str = ""  # the manifest's detail ("for", "elif", "implicit-else", ...), if known
    # A combined slice (several features at once): every criterion as {"id", "kind", "file", "span",
    # "detail"}, the first being the one above; empty for a single-feature slice.
    criteria: list[dict[str, Any]] = field(default_factory=list)
    # Kept statements that store a program call's result nobody in the slice reads (``n, d = f(x)``,
    # ``total += f(x)``) while the callee's ``return`` is cut: the emitter writes the bare call ``f(x)``.
    calls_only: dict[str, list[Span]] = field(default_factory=dict)  # file -> ast spans (byte columns)
    extra: dict[str, Any] = field(default_factory=dict)  # keys this version does not know, kept verbatim

    @property
    def criterion_version(self) -> int | None:
        """For a value criterion ``...:value:NAME#V``: V; else None."""
        if self.criterion_kind != "value" or "#" not in self.criterion:
            return None
        return int(self.criterion.rsplit("#", 1)[1])

    def all_criteria(self) -> list[dict[str, Any]]:
        """Every criterion of the slice as {"id", "kind", "file", "span", "detail"} (one for a single feature)."""
        if self.criteria:
            return [dict(c, span=_span(c["span"])) for c in self.criteria]
        return [{"id": self.criterion, "kind": self.criterion_kind, "file": self.criterion_file,
                 "span": self.criterion_span, "detail": self.criterion_detail}]

    def kept_spans(self, file: str) -> list[Span]:
        """The kept ast spans of one file (empty list if none)."""
        return list(self.kept.get(file, []))

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (spans as lists, files sorted, list orders kept)."""
        data: dict[str, Any] = dict(self.extra)
        data.update(
            criterion=self.criterion,
            criterion_kind=self.criterion_kind,
            criterion_file=self.criterion_file,
            criterion_span=list(self.criterion_span),
            criterion_detail=self.criterion_detail,
            entry=self.entry,
            kept={f: [list(s) for s in spans] for f, spans in sorted(self.kept.items())},
            keep_units={f: list(units) for f, units in sorted(self.keep_units.items())},
            calls=[dict(c) for c in self.calls],
            unresolved=list(self.unresolved),
            statements_total=self.statements_total,
            statements_kept=self.statements_kept,
        )
        if self.criteria:
            data["criteria"] = [dict(c, span=list(c["span"])) for c in self.criteria]
        if self.calls_only:
            data["calls_only"] = {f: [list(s) for s in spans] for f, spans in sorted(self.calls_only.items())}
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SliceResult:
        """Inverse of :meth:`to_dict`; accepts the slicer's dict (spans as lists, unknown keys kept)."""
        return cls(
            criterion=str(data["criterion"]),
            criterion_kind=str(data["criterion_kind"]),
            criterion_file=str(data["criterion_file"]),
            criterion_span=_span(data["criterion_span"]),
            criterion_detail=str(data.get("criterion_detail") or ""),
            entry=str(data["entry"]),
            kept={str(f): [_span(s) for s in spans] for f, spans in (data.get("kept") or {}).items()},
            keep_units={str(f): [str(u) for u in units] for f, units in (data.get("keep_units") or {}).items()},
            calls=[dict(c) for c in data.get("calls") or []],
            unresolved=[str(u) for u in data.get("unresolved") or []],
            statements_total=int(data.get("statements_total") or 0),
            statements_kept=int(data.get("statements_kept") or 0),
            criteria=[dict(c, span=list(_span(c["span"]))) for c in data.get("criteria") or []],
            calls_only={str(f): [_span(s) for s in spans] for f, spans in (data.get("calls_only") or {}).items()},
            extra={k: v for k, v in data.items() if k not in _FIELDS},
        )

    def to_json(self) -> str:
        """Pretty JSON text."""
        return json.dumps(self.to_dict(), indent=1) + "\n"

    @classmethod
    def from_json(cls, text: str) -> SliceResult:
        """Parse :meth:`to_json` output."""
        return cls.from_dict(json.loads(text))

    def save(self, path: Path) -> None:
        """Write as JSON."""
        Path(path).write_text(self.to_json(), encoding="utf-8")

    @classmethod
    def load(cls, path: Path) -> SliceResult:
        """Read a file written by :meth:`save` (or by the slicer)."""
        return cls.from_json(Path(path).read_text(encoding="utf-8"))


def _span(value: Any) -> Span:
    """A 4-tuple of ints from a list/tuple."""
    items = tuple(int(v) for v in value)
    if len(items) != 4:
        raise ValueError(f"a span has 4 numbers, not {len(items)}: {value!r}")
    return items[0], items[1], items[2], items[3]
