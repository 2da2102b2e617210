"""Every candidate's value and cost on given inputs: ``python -m mantispy.runtime.content`` in a child
process, watched count by count. A pattern whose count runs past the limit (a regex that backtracks without
end on this input) is dropped with its reason and a new child counts what was left after it. Before that,
:func:`screen` leaves out the candidates whose count on a window of one input already costs far more than
the budget."""

from __future__ import annotations

import json
import math
import os
import selectors
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from mantispy.runtime.content import read_inputs
from mantispy.runtime.descriptors import argv_files

from .types import ContentFeature


@dataclass
class Measured:
    """Values and CPU seconds per input and feature; features dropped, with why."""

    values: dict[str, dict[str, float]] = field(default_factory=dict)
    seconds: dict[str, dict[str, float]] = field(default_factory=dict)
    dropped: dict[str, str] = field(default_factory=dict)
    reading: dict[str, float] = field(default_factory=dict)  # input id -> CPU seconds of reading its files


def input_files(record, cwd: Path) -> list[str]:
    """The files a predictor reads for ``record``: its listed files, else the arguments naming files."""
    return list(record.files) if record.files else argv_files(list(record.argv), str(cwd))


def measure(candidates: list[ContentFeature], records: list, cwd: Path, limit_s: float,
            window: int | None = None, jobs: int = 1) -> Measured:
    """Count every candidate on every record's files (``window``: on that many bytes from their middle).
    ``limit_s``: the longest one count may run; a pattern whose count runs past it (a regex that backtracks
    without end on this input), or fails, is dropped with its reason, and a new child counts what was left
    after it. ``jobs``: children at a time, each counting its share of the candidates."""
    shares = [candidates[n::jobs] for n in range(max(1, jobs))] if jobs > 1 else [candidates]
    if len(shares) > 1:
        with ThreadPoolExecutor(len(shares)) as pool:
            parts = list(pool.map(lambda share: measure(share, records, cwd, limit_s, window), shares))
        whole = Measured()
        for part in parts:
            for mine, theirs in ((whole.values, part.values), (whole.seconds, part.seconds)):
                for iid, counted in theirs.items():
                    mine.setdefault(iid, {}).update(counted)
            whole.dropped.update(part.dropped)
            whole.reading.update(part.reading)
        return whole
    result = Measured()
    alive = {f.id: f for f in candidates}
    work = [(r.id, input_files(r, cwd), list(alive)) for r in records]  # per input: the counts still to make
    while work and alive:
        job = {"features": [f.runtime() for f in alive.values()],
               "inputs": [{"id": iid, "files": files, "cwd": str(cwd), "only": todo,
                           **({"window": window} if window else {})} for iid, files, todo in work]}
        rows, failed = _run(job, limit_s)
        done: set[tuple[str, str]] = set()
        for row in rows:
            result.values.setdefault(row["input"], {})[row["feature"]] = float(row["value"])
            result.seconds.setdefault(row["input"], {})[row["feature"]] = float(row["seconds"])
            result.reading[row["input"]] = float(row.get("reading", 0.0))
            done.add((row["input"], row["feature"]))
        if failed is None:
            break
        culprit = next(((iid, fid) for iid, _, todo in work for fid in todo if (iid, fid) not in done), None)
        if culprit is None:
            break
        result.dropped[culprit[1]] = f"input {culprit[0]}: {failed}"
        del alive[culprit[1]]
        work = [(iid, files, [fid for fid in todo if fid in alive and (iid, fid) not in done])
                for iid, files, todo in work]
        work = [item for item in work if item[2]]
    for fid in result.dropped:
        for table in (result.values, result.seconds):
            for row in table.values():
                row.pop(fid, None)
    return result


SCREEN_BYTES = 4096
"""The window of the median training input every candidate is first counted on."""
SCREEN_FACTOR = 2.0
"""A candidate whose count on that window, scaled to the input's size, costs this many times the budget is
not measured further."""
GROWTH_MIN_S = 0.001
"""A count shorter than this on the window is taken to grow linearly with the text (its time on half the
window says too little)."""
GROWTH_MAX = 3.0
"""The largest exponent of the text's size a count's time is taken to grow with."""


GROWTH_STEP = 4
"""The window is this many times the smaller one the growth of a count's time is judged from."""


def growth(seconds: float, smaller_seconds: float, step: float = GROWTH_STEP) -> float:
    """The exponent of the text's size that a count's time grows with, from its time on a window and on one
    ``step`` times smaller: 1 for a linear scan (and for counts too short to tell), about 2 for a pattern
    that rescans the rest of the text from every position (a file-name glob ``(?s:.*\\.py)\\Z`` searched
    through a file)."""
    if seconds < GROWTH_MIN_S or smaller_seconds <= 0:
        return 1.0
    return min(max(math.log(seconds / smaller_seconds) / math.log(step), 1.0), GROWTH_MAX)


def _fastest(candidates: list[ContentFeature], record, cwd: Path, limit_s: float, window: int,
             times: int = 2) -> tuple[dict[str, float], dict[str, str]]:
    """Each candidate's least counting time (reading left out) over ``times`` counts on ``window`` bytes of
    ``record``'s files, and the candidates dropped."""
    best: dict[str, float] = {}
    dropped: dict[str, str] = {}
    for _ in range(times):
        sample = measure([c for c in candidates if c.id not in dropped], [record], cwd, limit_s, window=window)
        dropped.update(sample.dropped)
        reading = sample.reading.get(record.id, 0.0)
        for fid, seconds in sample.seconds.get(record.id, {}).items():
            best[fid] = min(best.get(fid, math.inf), max(seconds - reading, 0.0))
    return {f: t for f, t in best.items() if f not in dropped}, dropped


def screen(candidates: list[ContentFeature], record, cwd: Path, wall_s: float, max_cost: float,
           limit_s: float, largest: tuple[str, float] | None = None) -> dict[str, str]:
    """The candidates too costly to measure on every training input, with why: each is counted on
    :data:`SCREEN_BYTES` from the middle of ``record``'s files (the median training input, whose run took
    ``wall_s``; an input no larger than the window is counted whole) and on :data:`GROWTH_STEP` times fewer
    bytes, twice each, which says how its time grows with the text (:func:`growth`). One whose count, scaled
    so to the input's whole size, costs more than :data:`SCREEN_FACTOR` x ``max_cost`` of that run is left
    out, and so is one whose count on the ``largest`` training input (its id and bytes) would take over half
    of ``limit_s`` (past it, it would be dropped there after that long; the growth is an estimate). Counting a thousand regexes on every input (Pygments compiles 1,025, hundreds of them
    file-name globs whose count takes 8 ms on a 3 kB file, 0.2 s on 17.5 kB and would take seconds on 110 kB)
    would take many minutes for features no model could afford."""
    try:
        size = len(read_inputs(input_files(record, cwd), str(cwd)))
    except OSError:  # the counting child says why, input by input
        return {}
    if wall_s <= 0 or size < 2:
        return {}
    window = min(size, SCREEN_BYTES)
    sample = measure(candidates, [record], cwd, limit_s, window=window)
    out = dict(sample.dropped)
    reading = sample.reading.get(record.id, 0.0)  # of the whole files: not scaled
    first = {fid: max(seconds - reading, 0.0) for fid, seconds in sample.seconds.get(record.id, {}).items()}
    budget_s = SCREEN_FACTOR * max_cost * wall_s
    over = {fid for fid, counting in first.items() if counting * size / window + reading > budget_s}  # growing or not
    rest = [c for c in candidates if c.id in first and c.id not in over]
    counted, dropped = _fastest(rest, record, cwd, limit_s, window, times=1)
    smaller_window = max(window // GROWTH_STEP, 1)
    smaller, dropped_smaller = _fastest([c for c in rest if c.id in counted], record, cwd, limit_s, smaller_window)
    out.update(dropped)
    out.update(dropped_smaller)
    for fid, seconds in sample.seconds.get(record.id, {}).items():
        if fid in out:
            continue
        counting = min(first[fid], counted.get(fid, math.inf))
        exponent = 1.0 if fid in over else growth(counting, smaller.get(fid, 0.0), window / smaller_window)
        scaled = counting * (size / window) ** exponent + reading
        grows = f" (time growing as size^{exponent:.1f})" if exponent > 1.2 else ""
        on = (f"{window} bytes of input {record.id}, {scaled / wall_s:.0%} of its run scaled to its {size} bytes"
              if window < size else f"input {record.id} ({size} bytes), {scaled / wall_s:.0%} of its run")
        if scaled > budget_s:
            out[fid] = (f"too expensive: {seconds * 1000:.1f} ms to count on {on}{grows} (limit {max_cost:.1%}; "
                        "not measured further)")
        elif largest is not None and counting * (largest[1] / window) ** exponent > limit_s / 2:
            projected = counting * (largest[1] / window) ** exponent
            out[fid] = (f"too expensive: {seconds * 1000:.1f} ms to count on {on}{grows}; on input {largest[0]} "
                        f"({largest[1]:.0f} bytes) it would take about {projected:.1f} s, over half the "
                        f"{limit_s:.1f} s a count may take (not measured further)")
    return out


def _run(job: dict, limit_s: float) -> tuple[list[dict], str | None]:
    """The child's JSON lines, and why it stopped early (None when it finished). The child is stopped when
    one count runs past ``limit_s`` (the first also has :data:`STARTUP_S` to start and read its input)."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump(job, handle)
    try:
        with tempfile.TemporaryFile() as errors:
            proc = subprocess.Popen([sys.executable, "-m", "mantispy.runtime.content", handle.name],
                                    stdout=subprocess.PIPE, stderr=errors)
            try:
                lines, finished = _lines_until_stalled(proc, limit_s)
            finally:
                if proc.poll() is None:
                    proc.kill()
                proc.wait()
            errors.seek(0)
            said = errors.read().decode("utf-8", errors="replace").strip().splitlines()
    finally:
        os.unlink(handle.name)
    if not finished:
        why: str | None = f"a count ran past {limit_s:.1f} s"
    else:
        why = None if proc.returncode == 0 else (said or ["failed"])[-1]
    rows = []
    for line in lines:
        try:
            rows.append(json.loads(line))
        except ValueError:
            continue
    return rows, why


STARTUP_S = 2.0
"""What the measuring child may take before its first count, beyond the per-count limit."""


def _lines_until_stalled(proc: subprocess.Popen, limit_s: float) -> tuple[list[str], bool]:
    """The lines ``proc`` printed, read as they come, until it closes its output (True) or prints nothing
    for ``limit_s`` seconds (False)."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    selector = selectors.DefaultSelector()
    selector.register(fd, selectors.EVENT_READ)
    lines: list[str] = []
    pending = b""
    deadline = time.monotonic() + limit_s + STARTUP_S
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not selector.select(left):
                return lines, False
            chunk = os.read(fd, 65536)
            if not chunk:
                if pending:
                    lines.append(pending.decode("utf-8", errors="replace"))
                return lines, True
            pending += chunk
            *complete, pending = pending.split(b"\n")
            if complete:
                lines += [line.decode("utf-8", errors="replace") for line in complete]
                deadline = time.monotonic() + limit_s
    finally:
        selector.close()
