"""The sampled table: per input, the counts of one run of the instrumented program on the input's
sample, and what scales them to the whole input (see :mod:`mantispy.runtime.sampled_input`).

``sampled.json``::

    {"format": "mantispy-sampled-features", "version": 1, "fraction": 0.05, "program": "...", "key": "...",
     "runs": {INPUT_ID: {"scale": 20.1, "cpu_s": 0.21, "returncode": 0, "counts": {COUNTER: N, ...}}},
     "failed": {INPUT_ID: "why no counts"}}

``counts`` are the raw counts on the sample (loop, branch, call and handler counters; never values);
a sampled feature's value is ``counts[counter] * scale``. ``key`` (optional) says what the table was
measured for (the build's source hash, fraction and inputs), so that a build reuses only its own.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mantispy.runtime.sampled_input import sampled_id

FORMAT = "mantispy-sampled-features"
VERSION = 1


class SampledError(Exception):
    """An unreadable or malformed sampled table; the message names the file and the field."""


@dataclass(frozen=True)
class SampledRun:
    """One input's run on its sample."""

    scale: float
    """Whole input size over sampled size (>= 1)."""
    cpu_s: float
    """CPU time of the sampled run (a fresh interpreter: start-up included)."""
    returncode: int
    """The sampled run's exit status (a program may fail at the cut; its counts are kept)."""
    counts: dict[str, float]
    """Counter -> count on the sample."""


@dataclass
class SampledTable:
    """Every input's sampled run."""

    fraction: float
    program: str
    runs: dict[str, SampledRun] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    key: str = ""

    def values(self, counters: list[str]) -> dict[str, dict[str, float]]:
        """``{input id: {sampled id: scaled count}}`` for ``counters`` (0 where a run did not reach one)."""
        return {iid: {sampled_id(c): run.counts.get(c, 0.0) * run.scale for c in counters}
                for iid, run in self.runs.items()}

    def to_json(self) -> dict[str, Any]:
        """The table as ``sampled.json`` holds it."""
        return {"format": FORMAT, "version": VERSION, "fraction": self.fraction, "program": self.program, "key": self.key,
                "runs": {iid: {"scale": r.scale, "cpu_s": r.cpu_s, "returncode": r.returncode, "counts": r.counts}
                         for iid, r in sorted(self.runs.items())},
                "failed": dict(sorted(self.failed.items()))}

    def save(self, path: Path) -> None:
        """Write ``sampled.json`` (through a temporary file, so a reader never sees half of it)."""
        path = Path(path)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(self.to_json()), encoding="utf-8")
        tmp.replace(path)


def _number(value: Any, where: str, low: float = 0.0) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < low:
        raise SampledError(f"{where}: expected a finite number >= {low:g}, got {value!r}")
    return float(value)


def table_from_json(data: Any, source: str = "sampled.json") -> SampledTable:
    """Check and read a decoded ``sampled.json``; raises :class:`SampledError` naming the field."""
    if not isinstance(data, dict):
        raise SampledError(f"{source}: expected a JSON object; build the table again (mantispy.sampled.measure)")
    if data.get("format") != FORMAT:
        raise SampledError(f"{source}: field format is {data.get('format')!r}, not {FORMAT!r}; not a sampled table")
    if data.get("version") != VERSION:
        raise SampledError(f"{source}: field version is {data.get('version')!r}; this mantispy reads version {VERSION}")
    fraction = _number(data.get("fraction"), f"{source}: field fraction")
    if not 0 < fraction <= 1:
        raise SampledError(f"{source}: field fraction is {fraction}; it must be in (0, 1]")
    program = data.get("program")
    if not isinstance(program, str):
        raise SampledError(f"{source}: field program must be a string (the instrumented program's folder)")
    key = data.get("key", "")
    if not isinstance(key, str):
        raise SampledError(f"{source}: field key must be a string")
    runs_data, failed = data.get("runs"), data.get("failed", {})
    if not isinstance(runs_data, dict):
        raise SampledError(f"{source}: field runs must be an object of input id -> run")
    if not isinstance(failed, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in failed.items()):
        raise SampledError(f"{source}: field failed must be an object of input id -> reason")
    runs: dict[str, SampledRun] = {}
    for iid, run in runs_data.items():
        where = f"{source}: field runs.{iid}"
        if not isinstance(run, dict):
            raise SampledError(f"{where}: expected an object with scale, cpu_s, returncode and counts")
        returncode = run.get("returncode")
        if isinstance(returncode, bool) or not isinstance(returncode, int):
            raise SampledError(f"{where}.returncode: expected an integer, got {returncode!r}")
        counts = run.get("counts")
        if not isinstance(counts, dict):
            raise SampledError(f"{where}.counts: expected an object of counter -> count")
        runs[iid] = SampledRun(scale=_number(run.get("scale"), f"{where}.scale", 1.0),
                               cpu_s=_number(run.get("cpu_s"), f"{where}.cpu_s"), returncode=returncode,
                               counts={str(k): _number(v, f"{where}.counts.{k}") for k, v in counts.items()})
    return SampledTable(fraction=fraction, program=program, runs=runs, failed=dict(failed), key=key)


def read_table(path: Path) -> SampledTable:
    """Read ``sampled.json``; raises :class:`SampledError` (unreadable file or bad field)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SampledError(f"{path}: unreadable ({exc})") from None
    return table_from_json(data, str(path))
