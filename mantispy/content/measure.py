"""Every candidate's value and cost on given inputs: ``python -m mantispy.runtime.content`` in a child
process with a time limit. A pattern whose count runs past the limit (a regex that backtracks without
end on this input) is dropped with its reason and the rest are measured again without it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from mantispy.runtime.descriptors import argv_files

from .types import ContentFeature


@dataclass
class Measured:
    """Values and CPU seconds per input and feature; features dropped, with why."""

    values: dict[str, dict[str, float]] = field(default_factory=dict)
    seconds: dict[str, dict[str, float]] = field(default_factory=dict)
    dropped: dict[str, str] = field(default_factory=dict)


def input_files(record, cwd: Path) -> list[str]:
    """The files a predictor reads for ``record``: its listed files, else the arguments naming files."""
    return list(record.files) if record.files else argv_files(list(record.argv), str(cwd))


def measure(candidates: list[ContentFeature], records: list, cwd: Path, limit_s: float) -> Measured:
    """Count every candidate on every record's files. ``limit_s``: the most one child may run before its
    pattern in progress is dropped (as are patterns that fail to compile or count)."""
    result = Measured()
    features = list(candidates)
    pending = [(r.id, input_files(r, cwd)) for r in records]
    while features and pending:
        job = {"features": [f.runtime() for f in features],
               "inputs": [{"id": iid, "files": files, "cwd": str(cwd)} for iid, files in pending]}
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
            json.dump(job, handle)
        try:
            lines, failed = _run(handle.name, limit_s)
        finally:
            os.unlink(handle.name)
        done: set[tuple[str, str]] = set()
        for row in lines:
            result.values.setdefault(row["input"], {})[row["feature"]] = float(row["value"])
            result.seconds.setdefault(row["input"], {})[row["feature"]] = float(row["seconds"])
            done.add((row["input"], row["feature"]))
        if failed is None:
            break
        order = [(iid, f.id) for iid, _ in pending for f in features]
        culprit = next((pair for pair in order if pair not in done), None)
        if culprit is None:
            break
        result.dropped[culprit[1]] = f"input {culprit[0]}: {failed}"
        features = [f for f in features if f.id != culprit[1]]
        first = next(n for n, (iid, _) in enumerate(pending) if iid == culprit[0])
        pending = pending[first:]  # from the culprit's input on, without it
    for fid in result.dropped:
        for table in (result.values, result.seconds):
            for row in table.values():
                row.pop(fid, None)
    return result


def _run(job_path: str, limit_s: float) -> tuple[list[dict], str | None]:
    """The child's JSON lines, and why it stopped early (None when it finished)."""
    try:
        proc = subprocess.run([sys.executable, "-m", "mantispy.runtime.content", job_path], capture_output=True,
                              text=True, timeout=limit_s)
        out, why = proc.stdout, None if proc.returncode == 0 else (proc.stderr.strip().splitlines() or ["failed"])[-1]
    except subprocess.TimeoutExpired as exc:
        raw = exc.stdout or ""
        out, why = raw.decode() if isinstance(raw, bytes) else raw, f"a count ran past {limit_s:.0f} s"
    rows = []
    for line in out.splitlines():
        try:
            rows.append(json.loads(line))
        except ValueError:
            continue
    return rows, why

