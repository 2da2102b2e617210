"""The per-function counter profile (``mantispy counters --function ... -- SCRIPT``): its JSON read and
checked into typed records, and its table.

The document (written by :mod:`mantispy.runtime.function_counters`)::

    {"format": "mantispy-function-counters", "version": 1, "events": [EVENT, ...],
     "refused": {EVENT: why}, "recent": N, "api": "probes" | "sys.monitoring", "python": "3.12.1",
     "sampling": {"budget": share, "every_call_first": n}, "clock_bias_ns": x,
     "functions": {"FILE:QUALNAME": {"calls": n, "measured_calls": k, "totals": {EVENT: x},
                                     "recent_mean": {EVENT: x}, "recent_calls": m, "empty_stretches": e}}}

``calls`` counts every call; ``measured_calls`` (absent in older profiles: every call) how many had their
counters read; ``totals`` are over all calls (the measured calls' totals scaled up when not all were
measured; what reading the counters costs taken off); ``recent_mean`` is the mean of the last ``recent_calls``
measured calls; ``empty_stretches`` (informative, not read here) how many empty stretches the estimate of
the strided calls' reading cost stands on.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mantispy.core.types import shown_key
from mantispy.runtime.function_counters import FORMAT, VERSION

_FIX = "record it again with mantispy counters --function PATTERN -- SCRIPT ARGS"


class FunctionProfileError(Exception):
    """A function profile that cannot be read (the message names the file, the field and the fix)."""


@dataclass(frozen=True)
class FunctionCounts:
    """One function's calls and counter deltas (inclusive of its callees)."""

    name: str  # FILE:QUALNAME
    calls: int
    totals: dict[str, float]
    recent_mean: dict[str, float]  # mean per call over its last ``recent_calls`` measured calls
    recent_calls: int
    measured_calls: int = -1  # calls whose counters were read (-1: every call)

    @property
    def measured(self) -> int:
        """How many calls had their counters read."""
        return self.calls if self.measured_calls < 0 else self.measured_calls


@dataclass(frozen=True)
class FunctionProfile:
    """A per-function counter profile of one run."""

    events: list[str]
    refused: dict[str, str]
    api: str
    python: str
    functions: dict[str, FunctionCounts]


def load(path: Path) -> FunctionProfile:
    """Read and check a profile; raises FunctionProfileError (one line) when it cannot be used."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"), parse_constant=_refuse_constant)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise FunctionProfileError(f"{path}: not readable as JSON ({_one_line(exc)}); {_FIX}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise FunctionProfileError(f"{path}: not a mantispy function profile (field format); {_FIX}")
    version = data.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or not 1 <= version <= VERSION:
        raise FunctionProfileError(f"{path}: field version: {version!r} is not a version this mantispy reads "
                                   f"({VERSION}); upgrade mantispy or record again")

    def fail(field: str, expected: str) -> FunctionProfileError:
        return FunctionProfileError(f"{path}: field {field}: expected {expected}; {_FIX}")

    events = data.get("events")
    if not isinstance(events, list) or not all(isinstance(e, str) for e in events):
        raise fail("events", "a list of event names")
    refused = data.get("refused", {})
    if not isinstance(refused, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in refused.items()):
        raise fail("refused", "an object {event: reason}")
    api, python = data.get("api", ""), data.get("python", "")
    if not isinstance(api, str) or not isinstance(python, str):
        raise fail("api", "text")
    functions = data.get("functions")
    if not isinstance(functions, dict):
        raise fail("functions", "an object {FILE:QUALNAME: counts}")
    found = {}
    for name, raw in functions.items():
        where = f"functions.{shown_key(name)}"
        if not isinstance(raw, dict):
            raise fail(where, "an object with calls, totals, recent_mean, recent_calls")
        calls, recent_calls = _count(raw.get("calls")), _count(raw.get("recent_calls"))
        if calls is None:
            raise fail(f"{where}.calls", "a whole number >= 0")
        if recent_calls is None:
            raise fail(f"{where}.recent_calls", "a whole number >= 0")
        measured = _count(raw.get("measured_calls", calls))
        if measured is None or measured > calls:
            raise fail(f"{where}.measured_calls", "a whole number >= 0, no more than calls")
        if recent_calls > measured:
            raise fail(f"{where}.recent_calls", "no more than the measured calls")
        tables = {}
        for field in ("totals", "recent_mean"):
            table = raw.get(field)
            if not isinstance(table, dict) or not all(
                    isinstance(k, str) and isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
                    for k, v in table.items()):
                raise fail(f"{where}.{field}", "an object {event: finite number}")
            tables[field] = {k: float(v) for k, v in table.items()}
        found[name] = FunctionCounts(name, calls, tables["totals"], tables["recent_mean"], recent_calls, measured)
    return FunctionProfile(list(events), dict(refused), api, python, found)


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _refuse_constant(text: str) -> float:
    raise ValueError(f"{text} is not a number JSON allows")


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split())


UNITS = {"sw.task_clock_ns": ("task-clock ms", 1e-6), "thread.cpu_ns": ("thread CPU ms", 1e-6)}
"""Events shown in other units: event -> (column title, factor)."""


def table_rows(profile: FunctionProfile, events: list[str] | None = None) -> tuple[list[str], list[list[str]]]:
    """(header, rows) of the per-call means, the most expensive function (by thread CPU) first."""
    shown = events or [e for e in profile.events if not e.endswith(("cpu_migrations", "major_faults"))]
    header = ["function", "calls", "measured", *(UNITS.get(e, (e, 1.0))[0] + " /call" for e in shown)]
    order = sorted(profile.functions.values(), key=lambda f: -f.recent_mean.get("thread.cpu_ns", 0.0))
    rows = []
    for counts in order:
        cells = [counts.name, str(counts.calls), str(counts.measured)]
        for event in shown:
            value = counts.recent_mean.get(event)
            factor = UNITS.get(event, (event, 1.0))[1]
            cells.append("-" if value is None else f"{value * factor:.4g}")
        rows.append(cells)
    return header, rows
