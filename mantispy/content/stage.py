"""The build's content stage: discover the program's regular expressions, measure them on the training
inputs, choose what to offer the models, check that the chosen ones are deterministic, and measure those
on every input. The result is the :class:`~mantispy.content.types.ContentTable` in ``content.json`` of
the build's work folder, reused while the program, the inputs and the budget stay the same."""

from __future__ import annotations

import hashlib
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mantispy.runtime import content as content_runtime
from mantispy.runtime import regex_probe
from mantispy.runtime.descriptors import describe_input

from . import choose as choosing
from . import discover as discovering
from . import measure as measuring
from .choose import choose
from .discover import byte_candidates, discover
from .measure import Measured, input_files, measure, screen
from .types import ContentError, ContentTable, read_table

PROBE_INPUTS = 5
"""Training inputs the program runs under the regex probe (spread over their run times)."""
DETERMINISM_INPUTS = 3
"""Training inputs each chosen feature is counted on a second time."""

TABLE_FILE = "content.json"
COUNT_LIMIT_S = 2.0
"""The least time one count may run before its pattern is dropped (else 5 x the slowest training run)."""


def _key(source_hash: str, record_ids: list[str], train_ids: list[str], max_cost: float) -> str:
    digest = hashlib.sha256()
    for module in (content_runtime, regex_probe, discovering, choosing, measuring):  # what finds, counts and chooses them
        digest.update(Path(str(module.__file__)).read_bytes())
    digest.update(",".join(sorted(record_ids)).encode())
    digest.update(",".join(sorted(train_ids)).encode())
    return f"{source_hash}:{digest.hexdigest()[:16]}:{max_cost}"


def _spread(ids_by_time: list[str], count: int) -> list[str]:
    if len(ids_by_time) <= count:
        return list(ids_by_time)
    return [ids_by_time[round(i * (len(ids_by_time) - 1) / (count - 1))] for i in range(count)]


def content_table(spec, work: Path, source_hash: str, train: dict[str, dict[str, float]], max_cost: float,
                  jobs: int = 1, log: Callable[[str], None] = lambda _m: None) -> ContentTable:
    """The campaign's content table. ``train``: training input id -> {"wall_s", "cpu_s", ...} (measured
    medians); every record of ``spec`` that ran is measured for the chosen features."""
    path = Path(work) / TABLE_FILE
    records = {r.id: r for r in spec.inputs}
    key = _key(source_hash, list(records), list(train), max_cost)
    if path.exists():
        try:
            cached = read_table(path)
            if cached.key == key:
                log(f"content features: reusing {path} ({len(cached.chosen)} offered)")
                return cached
        except ContentError as exc:
            log(f"content features: {exc}; computing them again")
    by_time = sorted(train, key=lambda i: train[i]["wall_s"])
    candidates = discover(spec, _spread(by_time, PROBE_INPUTS), jobs=jobs, log=log)
    log(f"content features: the program compiled {len(candidates)} regular expression(s) of its own")
    walls = {i: train[i]["wall_s"] for i in train}
    limit = max(COUNT_LIMIT_S, 5 * max(walls.values(), default=0.0))
    workdir = Path(spec.workdir)
    screened: dict[str, str] = {}
    sizes = {i: _size(records[i], workdir) for i in train}
    if any(sizes.values()):  # inputs that name no file have no bytes to count
        bytes_counted = byte_candidates()
        log(f"content features: and {len(bytes_counted)} byte counts of the input files (newline, punctuation) "
            "are candidates too")
        candidates = [*candidates, *bytes_counted]
    if candidates and by_time:  # each first counted on a window of the median training input
        median = by_time[len(by_time) // 2]
        largest = max(by_time, key=lambda i: sizes[i])
        screened = screen(candidates, records[median], workdir, walls[median], max_cost, limit,
                          largest=(largest, sizes[largest]))
        if screened:
            log(f"content features: {len(screened)} left out as too expensive on a window of input {median}")
    kept = [c for c in candidates if c.id not in screened]
    measured = measure(kept, [records[i] for i in by_time], workdir, limit, jobs=jobs) if kept else Measured()
    measured.dropped.update(screened)
    metrics = {m: {i: row[m] for i, row in train.items() if m in row} for m in ("wall_s", "cpu_s", "max_rss_kb")}
    chosen, reasons = choose(candidates, measured, metrics, walls, sizes, max_cost)
    if chosen:
        by_id = {c.id: c for c in candidates}
        again = measure([by_id[f] for f in chosen], [records[i] for i in _spread(by_time, DETERMINISM_INPUTS)],
                        workdir, limit)
        for fid in list(chosen):
            differs = [i for i, row in again.values.items() if row.get(fid) != measured.values[i].get(fid)]
            if differs or fid in again.dropped:
                chosen.remove(fid)
                reasons[fid] = f"not deterministic: another count on input {(differs or ['?'])[0]} differs"
        rest = [records[i] for i in records if i not in train]
        if chosen and rest:
            more = measure([by_id[f] for f in chosen], rest, workdir, limit)
            for fid in more.dropped:
                chosen.remove(fid)
                reasons[fid] = f"failed on a held-out input: {more.dropped[fid]}"
            for mine, extra in ((measured.values, more.values), (measured.seconds, more.seconds)):
                for iid, row in extra.items():
                    mine.setdefault(iid, {}).update(row)
    log(offered_line(chosen, reasons, path))
    table = ContentTable(key=key, candidates=candidates, values=measured.values, seconds=measured.seconds,
                         chosen=chosen, reasons=reasons)
    table.save(path)
    return table


def offered_line(chosen: list[str], reasons: dict[str, str], path: Path, shown: int = 4) -> str:
    """The build's line on the content features offered: how many, the first ``shown`` with why, and where
    the rest are listed."""
    line = f"content features: {len(chosen)} offered to the models"
    if chosen:
        line += ": " + ", ".join(f"{f} ({reasons[f].split(': ', 1)[-1]})" for f in chosen[:shown])
    if len(chosen) > shown:
        line += f" and {len(chosen) - shown} more (all in {path})"
    return line


def _size(record, workdir: Path) -> float:
    """Bytes of the input files a predictor reads for ``record`` (as the input descriptors count them)."""
    try:
        described = describe_input(files=input_files(record, workdir), cwd=str(workdir))
    except OSError:
        return 0.0
    return float(sum(described["file_sizes"].values()))


def chosen_columns(table: ContentTable) -> dict[str, dict[str, float]]:
    """input id -> {chosen feature id: value}: the columns a fit adds to its frame."""
    return {iid: {f: row[f] for f in table.chosen if f in row} for iid, row in table.values.items()}


def cost(table: ContentTable, fid: str, walls: dict[str, float]) -> tuple[float | None, float | None]:
    """(median CPU seconds, median fraction of the wall time) of computing ``fid`` on the inputs ``walls``."""
    pairs = [(table.seconds[i][fid], w) for i, w in walls.items() if fid in table.seconds.get(i, {}) and w > 0]
    if not pairs:
        return None, None
    return statistics.median(s for s, _ in pairs), statistics.median(s / w for s, w in pairs)


def describe(table: ContentTable, fid: str) -> dict[str, Any]:
    """The feature's entry in a model's ``features`` (kind, place, snippet, detail)."""
    cand = table.feature(fid)
    if cand is None:
        return {}
    accepted = ("computed by the predictor at C speed, accepted by its correlation with the cost on the training "
                "inputs and by counting again, not by equality with an instrumented counter; " + table.reasons.get(fid, ""))
    if cand.kind == "byte":
        pattern = cand.pattern.encode("latin-1")
        byte = pattern[1:] if len(pattern) == 2 else pattern  # re.escape's backslash
        snippet = f"occurrences of {byte!r}"
        detail = (f"how many times the byte {byte!r} occurs in the input files: a count of the input's structure "
                  f"(separators, brackets, quotes, lines), not of the program's own patterns (a content feature: "
                  f"{accepted})")
    elif cand.kind == "scanner":
        snippet = f"scanner: the {cand.parts} patterns compiled here, tried in order"
        detail = (f"tokens of the program's own scanner in the input files: matches of the alternation of the {cand.parts} "
                  f"patterns {cand.file}:{cand.line} compiled, in the order it compiled them, as a lexer tries its rules "
                  f"(a content feature: {accepted})")
    else:
        shown = cand.pattern if len(cand.pattern) <= 80 else cand.pattern[:77] + "..."
        snippet = f"re.compile({shown!r})"
        detail = f"matches of the program's own regular expression in the input files (a content feature: {accepted})"
    return {"kind": "content", "file": cand.file, "line": cand.line, "end_line": cand.line, "qualname": cand.qualname,
            "snippet": snippet, "detail": detail}

