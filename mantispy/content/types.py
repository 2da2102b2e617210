"""The content-feature artefact: ``content.json`` in a build's work folder (see :mod:`mantispy.content`).

:class:`ContentFeature` is one candidate (a pattern the program compiled, and where);
:class:`ContentTable` holds the candidates, their values and costs per input and what the build chose.
:func:`read_table` reads the JSON back field by field; a bad document raises :class:`ContentError`
naming the field.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

FORMAT = "mantispy-content-features"
VERSION = 1


class ContentError(ValueError):
    """A content artefact that cannot be read; the message names the field."""


KINDS = ("regex", "scanner", "byte")
"""``regex``: one pattern the program compiled; ``scanner``: the alternation, in the order the program
compiled them, of the patterns one place compiled (a lexer's rules), counting the tokens it makes;
``byte``: one punctuation byte or the newline, counted in the input files whatever the program compiles
(the input's structure: separators, brackets, quotes, lines), for programs whose own patterns are too
few or too slow to count."""


INPUT_FILES = "<input files>"
"""The place of a ``byte`` candidate: it comes from no program file."""


@dataclass(frozen=True)
class ContentFeature:
    """A regular expression the program compiled, as a feature: its matches in the input files."""

    id: str
    """``content:FILE:LINE:KIND#DIGEST`` (see :func:`mantispy.runtime.content.feature_id`)."""
    pattern: str
    """The pattern's text (a bytes pattern latin-1 decoded); a scanner's alternation of its rules."""
    bytes: bool
    """Whether the program compiled a bytes pattern."""
    flags: int
    """The compiled pattern's flags."""
    file: str
    """The program file, relative to its root, whose code compiled it (:data:`INPUT_FILES` for a ``byte``)."""
    line: int
    """The line that compiled it (0 for a ``byte``)."""
    qualname: str
    """The function (or ``<module>``) that compiled it."""
    kind: str = "regex"
    """One of :data:`KINDS`."""
    parts: int = 1
    """How many of the program's patterns the feature's pattern alternates (1 for a ``regex``)."""

    def runtime(self) -> dict[str, Any]:
        """What :mod:`mantispy.runtime.content` takes."""
        return {"id": self.id, "pattern": self.pattern, "bytes": self.bytes, "flags": self.flags}


@dataclass
class ContentTable:
    """Candidates, their values and costs per input, and the build's choice."""

    key: str
    """What the table was computed for (source hash, inputs, probe): a build reuses it only when equal."""
    candidates: list[ContentFeature]
    values: dict[str, dict[str, float]]
    """input id -> feature id -> value (the features measured on that input)."""
    seconds: dict[str, dict[str, float]]
    """input id -> feature id -> CPU seconds to compute it (reading the files included)."""
    chosen: list[str] = field(default_factory=list)
    """The feature ids offered to the models, best first."""
    reasons: dict[str, str] = field(default_factory=dict)
    """feature id -> why it was not chosen (or, for a chosen one, its correlation)."""

    def feature(self, fid: str) -> ContentFeature | None:
        """The candidate with id ``fid``."""
        return next((c for c in self.candidates if c.id == fid), None)

    def to_json(self) -> dict[str, Any]:
        """The JSON document."""
        return {"format": FORMAT, "version": VERSION, "key": self.key,
                "candidates": [asdict(c) for c in self.candidates], "values": self.values,
                "seconds": self.seconds, "chosen": self.chosen, "reasons": self.reasons}

    def save(self, path: Path) -> None:
        """Write the document atomically."""
        tmp = Path(path).with_name(Path(path).name + ".tmp")
        tmp.write_text(json.dumps(self.to_json(), indent=1) + "\n", encoding="utf-8")
        tmp.replace(path)


def _need(data: Any, key: str, kind: type, where: str) -> Any:
    if not isinstance(data, dict) or key not in data:
        raise ContentError(f"{where}: field {key!r} is missing")
    value = data[key]
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise ContentError(f"{where}: field {key!r} must be {kind.__name__}, not {type(value).__name__}")
    return value


def feature_from_json(data: Any, where: str = "candidate") -> ContentFeature:
    """One candidate, checked field by field."""
    fid = _need(data, "id", str, where)
    if not fid.startswith("content:"):
        raise ContentError(f"{where}: field 'id' must start with 'content:'")
    line = _need(data, "line", int, where)
    if line < 0:
        raise ContentError(f"{where}: field 'line' must not be negative")
    kind = _need(data, "kind", str, where) if "kind" in data else "regex"  # tables written before scanners
    if kind not in KINDS:
        raise ContentError(f"{where}: field 'kind' must be one of {', '.join(KINDS)}, not {kind!r}")
    parts = _need(data, "parts", int, where) if "parts" in data else 1
    if parts < 1 or (kind in ("regex", "byte") and parts != 1):
        raise ContentError(f"{where}: field 'parts' must be 1 for a regex or a byte and at least 1 for a scanner, "
                           f"not {parts}")
    return ContentFeature(id=fid, pattern=_need(data, "pattern", str, where), bytes=_need(data, "bytes", bool, where),
                          flags=_need(data, "flags", int, where), file=_need(data, "file", str, where), line=line,
                          qualname=_need(data, "qualname", str, where), kind=kind, parts=parts)


def _numbers(data: Any, where: str) -> dict[str, dict[str, float]]:
    if not isinstance(data, dict):
        raise ContentError(f"{where} must be an object of input ids")
    out: dict[str, dict[str, float]] = {}
    for iid, row in data.items():
        if not isinstance(row, dict):
            raise ContentError(f"{where}[{iid!r}] must be an object of feature ids")
        for fid, value in row.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ContentError(f"{where}[{iid!r}][{fid!r}] must be a finite number")
        out[str(iid)] = {str(f): float(v) for f, v in row.items()}
    return out


def table_from_json(data: Any, where: str = "content.json") -> ContentTable:
    """A :class:`ContentTable` from its document, checked field by field."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ContentError(f"{where}: not a {FORMAT} document (field 'format')")
    if data.get("version") != VERSION:
        raise ContentError(f"{where}: field 'version' must be {VERSION}")
    raw = _need(data, "candidates", list, where)
    candidates = [feature_from_json(c, f"{where}: candidates[{n}]") for n, c in enumerate(raw)]
    known = {c.id for c in candidates}
    chosen = _need(data, "chosen", list, where)
    for n, fid in enumerate(chosen):
        if not isinstance(fid, str) or fid not in known:
            raise ContentError(f"{where}: chosen[{n}] {fid!r} is not among the candidates")
    reasons = _need(data, "reasons", dict, where)
    if not all(isinstance(v, str) for v in reasons.values()):
        raise ContentError(f"{where}: field 'reasons' must map feature ids to text")
    return ContentTable(key=_need(data, "key", str, where), candidates=candidates,
                        values=_numbers(_need(data, "values", dict, where), f"{where}: values"),
                        seconds=_numbers(_need(data, "seconds", dict, where), f"{where}: seconds"),
                        chosen=list(chosen), reasons=dict(reasons))


def read_table(path: Path) -> ContentTable:
    """Read ``content.json``; raises :class:`ContentError` (unreadable file or bad field)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ContentError(f"{path}: unreadable ({exc})") from None
    return table_from_json(data, str(path))
