"""Which content candidates a build offers its models.

A candidate is offered when, on the training inputs, it is

* cheap: the median CPU time of reading the input files and counting, over the program's wall time on
  the same input, is within the build's budget (``max_cost``);
* informative: not the same on every input, and its rank correlation with a metric (or, per byte of
  input, with the metric per byte) reaches :data:`MIN_CORRELATION`;
* new: not a copy of the input's size (the black box has that) nor of a candidate already offered
  (|Pearson r| of the logs at least :data:`COPY_CORRELATION`).

The byte counts are judged as a group first (:func:`structure_gain`): only where a cross-validated
log-linear model of a time metric on the input files' size and the byte counts errs at most
:data:`STRUCTURE_GAIN` of the same model on the size alone, and :data:`STRUCTURE_MARGIN` less, does any
of them compete.

At most ``limit`` are offered, scanners first, then the program's single patterns and then the input's
byte counts (``byte`` candidates, generic where the program's patterns are its own), each the most
correlated first; every other candidate gets its reason. An offered scanner supersedes the single
patterns compiled at its place: their counts are parts of its count, and offering both gives a fit on
tens of training inputs collinear columns to trade against each other (sqlparse, ten fresh train/test
splits: mean CPU-time error 16.1 % with the lexer's rules beside its scanner, 14.6 % with this rule; the
model better than the black box in 5 and 8 of them).
Determinism (the same value when counted again) is checked by the build on its cost inputs.
"""

from __future__ import annotations

import math
import statistics
import warnings

import numpy as np
from scipy.stats import spearmanr

from .measure import Measured
from .types import ContentFeature

MIN_CORRELATION = 0.3
COPY_CORRELATION = 0.995
DEFAULT_LIMIT = 8
STRUCTURE_GAIN = 0.75
"""Byte counts are offered only when, on the training inputs, a cross-validated log-linear model of a metric
on the input files' size and the byte counts errs at most this share of the same model on the size alone..."""
STRUCTURE_MARGIN = 0.03
"""...and at least this much less (3 points of median relative error): a smaller gain is what the noise of
this kind of machine moves between folds (pyflakes: 3.2 % on the size alone, 2.0 % with byte counts on 28
training inputs, and the models that used them lost to the black box on the held-out inputs)."""


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
    structure = _structure_verdict(candidates, measured, metrics, sizes, ids, reasons)
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
    rank = {"scanner": 0, "regex": 1, "byte": 2}
    for best, fid, values in sorted(scored, key=lambda s: (rank.get(by_id[s[1]].kind, 1), -s[0], s[1])):
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
            if cand.kind == "byte":
                reasons[fid] += f" ({structure})"
            if cand.kind == "scanner":
                scanned[(cand.file, cand.line)] = fid
    return [fid for fid, _ in chosen], reasons


def _structure_verdict(candidates: list[ContentFeature], measured: Measured, metrics: dict[str, dict[str, float]],
                       sizes: dict[str, float], ids: list[str], reasons: dict[str, str]) -> str:
    """Judge the byte candidates as a group (:func:`structure_gain` on the time metrics, the best of them):
    where they do not pass, each gets the verdict as its reason; returns the verdict's words."""
    counted = [c.id for c in candidates if c.kind == "byte" and c.id not in reasons
               and all(c.id in measured.values[i] for i in ids)]
    if not counted:
        return ""
    counts = {i: {f: measured.values[i][f] for f in counted} for i in ids}
    timed: list[str] = [m for m in ("cpu_s", "wall_s") if m in metrics] or list(metrics)
    best: tuple[float, float, str] | None = None
    for name in timed:
        alone, with_bytes = structure_gain(counts, {i: metrics[name][i] for i in ids if i in metrics[name]}, sizes)
        if math.isfinite(alone) and math.isfinite(with_bytes) and alone > 0 and (
                best is None or with_bytes / alone < best[1] / best[0]):
            best = (alone, with_bytes, name)
    if best is None:
        verdict = "the input's structure could not be judged on these training inputs"
    else:
        alone, with_bytes, name = best
        verdict = (f"{name} cross-validated on the files' size and the byte counts {with_bytes:.1%}, on the size "
                   f"alone {alone:.1%}")
        if with_bytes <= STRUCTURE_GAIN * alone and alone - with_bytes >= STRUCTURE_MARGIN:
            return verdict
        verdict = (f"the input's structure says little beyond its size: {verdict} (needs at most {STRUCTURE_GAIN:.2f}x "
                   f"and {STRUCTURE_MARGIN:.0%} less)")
    for fid in counted:
        reasons[fid] = verdict
    return verdict


def structure_gain(counts: dict[str, dict[str, float]], metric: dict[str, float], sizes: dict[str, float],
                   folds: int = 5) -> tuple[float, float]:
    """(cross-validated median relative error of log(metric) ~ log(size), the same with the byte counts'
    logs added under a LASSO penalty) on the inputs that have all three. Where the input's structure says
    nothing that its size does not, the second is no smaller: then generic byte counts would only give a fit
    on a few dozen inputs more columns to overfit (seen on tabulate and pyflakes, whose CPU models lost to
    the black box with them)."""
    from sklearn.linear_model import LassoCV, LinearRegression
    from sklearn.model_selection import KFold

    ids = sorted(i for i in metric if i in counts and sizes.get(i, 0) > 0 and metric[i] > 0)
    names = sorted({f for i in ids for f in counts[i]})
    if len(ids) < 2 * folds or not names:
        return math.nan, math.nan
    y = np.log([metric[i] for i in ids])
    base = np.log([[sizes[i]] for i in ids])
    full = np.hstack([base, np.log1p([[counts[i].get(f, 0.0) for f in names] for i in ids])])
    errors = []
    for columns in (base, full):
        predicted = np.empty_like(y)
        for train, test in KFold(folds, shuffle=True, random_state=0).split(columns):
            mean, spread = columns[train].mean(0), columns[train].std(0)
            spread[spread == 0] = 1.0
            z = (columns - mean) / spread
            if columns.shape[1] == 1:
                model = LinearRegression().fit(z[train], y[train])
            else:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    model = LassoCV(cv=min(folds, len(train) // 2), random_state=0, max_iter=20000).fit(z[train], y[train])
            predicted[test] = model.predict(z[test])
        errors.append(float(np.median(np.abs(np.exp(predicted - y) - 1))))
    return errors[0], errors[1]
