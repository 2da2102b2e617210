"""Which content candidates a build offers its models.

A candidate is offered when, on the training inputs, it is

* cheap: the median CPU time of reading the input files and counting, over the program's wall time on
  the same input, is within the build's budget (``max_cost``);
* informative: not the same on every input, and its rank correlation with a metric (or, per byte of
  input, with the metric per byte) reaches :data:`MIN_CORRELATION`;
* new: not a copy of the input's size (the black box has that) nor of a candidate already offered
  (|Pearson r| of the logs at least :data:`COPY_CORRELATION`).

At most ``limit`` are offered, scanners first, then the most correlated; every other candidate gets its
reason. An offered scanner supersedes the single patterns compiled at its place: their counts are parts
of its count, and offering both gives a fit on tens of training inputs collinear columns to trade against
each other (sqlparse, ten fresh train/test splits: mean CPU-time error 16.1 % with the lexer's rules beside
its scanner, 14.6 % with this rule; the model better than the black box in 5 and 8 of them).
Determinism (the same value when counted again) is checked by the build on its cost inputs.
"""

from __future__ import annotations

import math
import statistics

import numpy as np
from scipy.stats import spearmanr

from .measure import Measured
from .types import ContentFeature

MIN_CORRELATION = 0.3
COPY_CORRELATION = 0.995
DEFAULT_LIMIT = 8


def _rank_correlation(x: np.ndarray, y: np.ndarray) -> float:
    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return 0.0
    rho = spearmanr(x, y).statistic
    return 0.0 if not math.isfinite(rho) else abs(float(rho))


def _log_copy(x: np.ndarray, y: np.ndarray) -> float:
    a, b = np.log1p(np.abs(x)), np.log1p(np.abs(y))
    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return 0.0
    return abs(float(np.corrcoef(a, b)[0, 1]))


def choose(candidates: list[ContentFeature], measured: Measured, metrics: dict[str, dict[str, float]],
           walls: dict[str, float], sizes: dict[str, float], max_cost: float,
           limit: int = DEFAULT_LIMIT) -> tuple[list[str], dict[str, str]]:
    """(the offered feature ids, best first; {feature id: reason}) from values measured on the training
    inputs (``metrics``: metric -> input id -> value; ``walls``: input id -> wall seconds; ``sizes``:
    input id -> bytes of input files)."""
    reasons: dict[str, str] = dict(measured.dropped)
    ids = sorted(i for i in walls if i in measured.values)
    size = np.array([sizes.get(i, 0.0) for i in ids], dtype=float)
    scored: list[tuple[float, str, np.ndarray]] = []
    for cand in candidates:
        if cand.id in reasons:
            continue
        if not ids or any(cand.id not in measured.values[i] for i in ids):
            reasons[cand.id] = "not measured on every training input"
            continue
        values = np.array([measured.values[i][cand.id] for i in ids], dtype=float)
        fraction = statistics.median(measured.seconds[i][cand.id] / walls[i] for i in ids if walls[i] > 0)
        if fraction > max_cost:
            reasons[cand.id] = f"too expensive: {fraction:.1%} of the run time (limit {max_cost:.1%})"
            continue
        if np.ptp(values) == 0:
            reasons[cand.id] = f"the same value ({values[0]:g}) on every training input"
            continue
        best = 0.0
        for by_input in metrics.values():
            target = np.array([by_input.get(i, math.nan) for i in ids], dtype=float)
            ok = np.isfinite(target)
            best = max(best, _rank_correlation(values[ok], target[ok]))
            if np.all(size[ok] > 0):
                best = max(best, _rank_correlation(values[ok] / size[ok], target[ok] / size[ok]))
        if best < MIN_CORRELATION:
            reasons[cand.id] = f"rank correlation with the metrics {best:.2f} (needs {MIN_CORRELATION})"
            continue
        if np.ptp(size) > 0 and _log_copy(values, size) >= COPY_CORRELATION:
            reasons[cand.id] = "moves with the input files' size (the black box has that)"
            continue
        scored.append((best, cand.id, values))
    by_id = {c.id: c for c in candidates}
    scanned: dict[tuple[str, int], str] = {}  # place -> the scanner offered there
    chosen: list[tuple[str, np.ndarray]] = []
    for best, fid, values in sorted(scored, key=lambda s: (by_id[s[1]].kind != "scanner", -s[0], s[1])):
        cand = by_id[fid]
        copy = next((other for other, v in chosen if _log_copy(values, v) >= COPY_CORRELATION), None)
        if cand.kind == "regex" and (cand.file, cand.line) in scanned:
            reasons[fid] = f"counted by the scanner offered at its place ({scanned[(cand.file, cand.line)]})"
        elif copy is not None:
            reasons[fid] = f"a copy of {copy}"
        elif len(chosen) >= limit:
            reasons[fid] = f"rank correlation {best:.2f}: {limit} better candidates offered"
        else:
            chosen.append((fid, values))
            reasons[fid] = f"offered: rank correlation {best:.2f} with a metric on {len(ids)} training inputs"
            if cand.kind == "scanner":
                scanned[(cand.file, cand.line)] = fid
    return [fid for fid, _ in chosen], reasons
