"""Choosing a model's form by cross-validation on the training inputs, and its prediction interval.

Program cost is mostly multiplicative (documents x queries x terms, tokens x nesting), which SPORE's
additive polynomial fits badly, and it is mostly the relative error that users read. So several
:class:`Candidate` models compete, each scored by the median relative error of its *out-of-fold*
predictions (grouped k-fold over the training inputs: repeats of an input stay in one fold; every
step of the fit, screening included, sees only its fold's training part):

* ``constant``: one number for every input (the value minimising squared relative error);
* the black box's view: the input descriptors only (numbers in argv / kwargs, input file sizes), in
  each form;
* the content view (when the build offers content features, :mod:`mantispy.content`): the input
  descriptors plus the content features, what a predictor computes without running any evaluator;
* the sampled view (when the build offers sampled features, :mod:`mantispy.sampled`): the content view
  plus the counters counted on samples of the input files, so that their stand-ins are kept only where
  cross-validation prefers them to the content view;
* the program's view: program features plus the input descriptors, in each form.

The forms (:data:`mantispy.modeling.spore.FORMS`) are the additive polynomial of scaled features
(degree as asked) and the multiplicative log form (degrees 1 and 2). The candidate with the smallest
cross-validated error wins; on a tie the simpler view wins (constant, inputs, content, sampled, program), so a
model worse than a constant, or worse than the black box, on cross-validation is never chosen. The fit then
averages the chosen candidate with the next best-ranked ones that come close to it (:mod:`averaging`).

The chosen candidate's out-of-fold residuals also give its prediction interval: the quantiles of
log(actual / predicted) at the interval's levels, with the finite-sample (conformal) rank
ceil((n + 1) * level), as factors on the estimate. Those residuals come from the chosen candidate fitted
again leaving one training input out at a time (:func:`leave_one_input_out`): fits on all training inputs
but one err as the final fit on all of them does, where the selection's five folds hold out a fifth. On
the suite's builds refitted over 50 fresh train/test splits (30 training inputs each), the held-out
coverage of the p10-p90 interval fell in 75-85 % in 23 splits instead of 18, its mean 81.0 % instead of
83.0 %.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .defaults import INTERVAL_LEVELS
from .spore import ModelingError, SporeRegressor

VIEWS = ("constant", "inputs", "content", "sampled", "program")
DEFAULT_LEVELS = INTERVAL_LEVELS
RESAMPLES = 400
"""Paired bootstrap resamples of the training inputs behind :func:`share_better`."""


@dataclass(frozen=True)
class Candidate:
    """One model the selection may choose: a view of the data and a form."""

    view: str  # "constant", "inputs", "content", "sampled" or "program"
    form: str = "polynomial"  # "polynomial" or "log" (ignored by the constant)
    degree: int = 1

    @property
    def label(self) -> str:
        """Short name for tables and logs: ``program log-2``, ``inputs polynomial-3``, ``constant``."""
        return "constant" if self.view == "constant" else f"{self.view} {self.form}-{self.degree}"


def candidate_forms(form: str, degree: int) -> list[tuple[str, int]]:
    """(form, degree) pairs to try: ``auto`` tries the polynomial of ``degree`` and the log form of
    degrees 1 and 2; a named form is tried at ``degree`` only."""
    if form == "auto":
        return [("polynomial", degree), ("log", 1), ("log", 2)]
    return [(form, degree)]


def constant_value(y: np.ndarray) -> float:
    """The constant that minimises the squared relative error: sum(1/y) / sum(1/y^2)."""
    y = np.asarray(y, dtype=float)
    return float(np.sum(1 / y) / np.sum(1 / y**2))


def relative_error(predicted: np.ndarray, actual: np.ndarray) -> np.ndarray:
    """|predicted - actual| / actual, element-wise (nan predictions count as 100 %)."""
    predicted = np.asarray(predicted, dtype=float)
    actual = np.asarray(actual, dtype=float)
    errors = np.abs(predicted - actual) / actual
    return np.where(np.isnan(errors), 1.0, errors)


def group_folds(groups: np.ndarray, folds: int, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Grouped k-fold splits (groups shuffled with ``seed``); fewer folds when there are few groups."""
    unique = np.unique(groups)
    folds = min(folds, len(unique))
    if folds < 2:
        raise ModelingError(f"{len(unique)} training inputs cannot be cross-validated; profile more inputs")
    order = np.random.default_rng(seed).permutation(len(unique))
    fold_of = {unique[i]: n % folds for n, i in enumerate(order)}
    labels = np.array([fold_of[g] for g in groups])
    return [(np.flatnonzero(labels != k), np.flatnonzero(labels == k)) for k in range(folds)]


@dataclass
class Scored:
    """A candidate with its out-of-fold predictions and their median relative error."""

    candidate: Candidate
    columns: list[str]
    predictions: np.ndarray
    error: float
    problem: str | None = None  # why a fold could not be fitted (the candidate then loses)

    def row(self) -> dict[str, Any]:
        """The selection table's row (model JSON)."""
        row: dict[str, Any] = {"candidate": self.candidate.label, "view": self.candidate.view,
                               "form": self.candidate.form, "degree": self.candidate.degree,
                               "cv_median_rel_error": None if math.isinf(self.error) else self.error,
                               "columns": len(self.columns)}
        if self.problem:
            row["problem"] = self.problem
        return row


@dataclass
class Selection:
    """The outcome: every candidate scored, the chosen one, and why."""

    scored: list[Scored] = field(default_factory=list)
    chosen: Scored | None = None
    reason: str = ""
    views: tuple[str, ...] = VIEWS  # the views the model may draw from (averaging's members included)
    confidence: dict[str, Any] | None = None  # the view-confidence rule's comparison, when it ran

    def ranked(self, views: Sequence[str] = VIEWS) -> list[Scored]:
        """The scored candidates of ``views`` that could be fitted, best first (ties: the simpler view)."""
        rank = {view: n for n, view in enumerate(VIEWS)}
        usable = [s for s in self.scored if s.candidate.view in views and math.isfinite(s.error)]
        return sorted(usable, key=lambda s: (round(s.error, 12), rank[s.candidate.view]))

    def best(self, view: str) -> Scored | None:
        """The best-scoring candidate of one view."""
        of_view = [s for s in self.scored if s.candidate.view == view]
        return min(of_view, key=lambda s: s.error) if of_view else None

    def to_json(self) -> dict[str, Any]:
        """What the model JSON keeps of the selection."""
        assert self.chosen is not None
        out: dict[str, Any] = {
            "criterion": "median relative error of out-of-fold predictions (grouped k-fold over training inputs)",
            "chosen": self.chosen.candidate.label, "reason": self.reason,
            "candidates": [s.row() for s in self.scored]}
        if self.confidence is not None:
            out["view_confidence"] = self.confidence
        return out


EstimatorFactory = Callable[[Candidate], SporeRegressor]


def score(candidate: Candidate, frame, columns: list[str], y: np.ndarray, groups: np.ndarray,
          splits: Sequence[tuple[np.ndarray, np.ndarray]], make: EstimatorFactory) -> Scored:
    """Out-of-fold predictions of one candidate, and their median relative error."""
    predictions = np.full(len(y), np.nan)
    for train, test in splits:
        if candidate.view == "constant":
            predictions[test] = constant_value(y[train])
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                est = make(candidate).fit(frame.iloc[train][columns], y[train], groups=groups[train])
            predictions[test] = est.predict(frame.iloc[test][columns])
        except ModelingError as exc:
            return Scored(candidate, columns, predictions, math.inf, str(exc))
    return Scored(candidate, columns, predictions, float(np.median(relative_error(predictions, y))))


def select(frame, program_columns: list[str], input_columns: list[str], y: np.ndarray, groups: np.ndarray,
           forms: list[tuple[str, int]], make: EstimatorFactory, folds: int = 5, seed: int = 0,
           content_columns: Sequence[str] = (), sampled_columns: Sequence[str] = (),
           view_confidence: float = 0.0) -> Selection:
    """Score the constant, the inputs', the content view's (``content_columns`` with the inputs), the sampled
    view's (``sampled_columns`` with those) and the program's candidates; choose the best (ties: simplest).

    With ``view_confidence`` > 0, a view richer than the input descriptors keeps the choice only where it is
    confidently better than each simpler view (:func:`confident_view`); otherwise the model is drawn from the
    simplest view it did not beat with that confidence."""
    splits = group_folds(groups, folds, seed)
    selection = Selection()
    selection.scored.append(score(Candidate("constant"), frame, [], y, groups, splits, make))
    if input_columns:
        for form, degree in forms:
            selection.scored.append(score(Candidate("inputs", form, degree), frame, input_columns, y, groups, splits, make))
    if content_columns:
        columns = [*input_columns, *content_columns]
        for form, degree in forms:
            selection.scored.append(score(Candidate("content", form, degree), frame, columns, y, groups, splits, make))
    if sampled_columns:
        columns = [*input_columns, *content_columns, *sampled_columns]
        for form, degree in forms:
            selection.scored.append(score(Candidate("sampled", form, degree), frame, columns, y, groups, splits, make))
    if program_columns:
        for form, degree in forms:
            selection.scored.append(score(Candidate("program", form, degree), frame, program_columns, y, groups,
                                          splits, make))
    chosen = (selection.ranked() or selection.scored)[0]  # every candidate failing: the constant's row
    selection.chosen = chosen
    if view_confidence > 0 and math.isfinite(chosen.error):
        demoted = confident_view(selection, y, groups, view_confidence, seed)
        if demoted is not None:
            return demoted
    best_program = selection.best("program")
    best_inputs = selection.best("inputs")
    if chosen.candidate.view == "constant" and (best_program or best_inputs):
        selection.reason = "no model beat a constant on cross-validation"
    elif chosen.candidate.view == "inputs" and best_program is not None:
        selection.reason = (f"the input descriptors alone ({chosen.error:.1%}) did as well as the program's features "
                            f"({best_program.error:.1%}) on cross-validation")
    elif chosen.candidate.view in ("content", "sampled") and best_program is not None:
        what = "content features" if chosen.candidate.view == "content" else "content and sampled features"
        selection.reason = (f"the input descriptors with the {what} ({chosen.error:.1%}) did as well as the "
                            f"program's features ({best_program.error:.1%}) on cross-validation")
    else:
        selection.reason = f"smallest cross-validated error ({chosen.error:.1%})"
    return selection


def share_better(better: Scored, worse: Scored, y: np.ndarray, groups: np.ndarray, resamples: int = RESAMPLES,
                 seed: int = 0) -> float:
    """The share of paired bootstrap resamples of the training inputs (inputs drawn with replacement, each
    with all its rows) in which ``better``'s out-of-fold predictions have a smaller median relative error
    than ``worse``'s (ties count half)."""
    errors_a = relative_error(better.predictions, y)
    errors_b = relative_error(worse.predictions, y)
    unique, inverse = np.unique(groups, return_inverse=True)
    rows = [np.flatnonzero(inverse == k) for k in range(len(unique))]
    rng = np.random.default_rng(seed)
    wins = 0.0
    for _ in range(resamples):
        picked = np.concatenate([rows[k] for k in rng.integers(0, len(unique), len(unique))])
        a, b = float(np.median(errors_a[picked])), float(np.median(errors_b[picked]))
        wins += 1.0 if a < b else 0.5 if a == b else 0.0
    return wins / resamples


def confident_view(selection: Selection, y: np.ndarray, groups: np.ndarray, confidence: float,
                   seed: int = 0) -> Selection | None:
    """The view-confidence rule. Where the best candidate's view is richer than the input descriptors, the
    views are walked from the descriptors' up to the best's (inputs, content, sampled, program): a richer
    view's best candidate takes over from the view held so far only where it is better than that view's
    best in at least ``confidence`` of the paired resamples of :func:`share_better`. The model is then drawn
    from the view held at the end and the simpler ones (``selection.views``; the constant stays with the
    ranking). Returns the changed selection, or None when the best candidate's view keeps the choice.

    Why: on tens of training inputs the cross-validated errors of close candidates are noisy, and a richer
    view that wins there by a little can lose to the black box on the held-out inputs."""
    best = selection.chosen
    assert best is not None
    held = selection.best("inputs")
    if best.candidate.view in ("constant", "inputs") or held is None or not math.isfinite(held.error):
        return None
    compared = []
    for view in VIEWS[2:VIEWS.index(best.candidate.view) + 1]:
        rival = selection.best(view)
        if rival is None or not math.isfinite(rival.error) or rival.error >= held.error:
            continue
        share = share_better(rival, held, y, groups, seed=seed)
        compared.append({"candidate": rival.candidate.label, "against": held.candidate.label, "share": share})
        if share >= confidence:
            held = rival
    selection.confidence = {"required": confidence, "resamples": RESAMPLES, "compared": compared,
                            "kept": held.candidate.view}
    if held.candidate.view == best.candidate.view:
        return None
    selection.views = VIEWS[:VIEWS.index(held.candidate.view) + 1]
    selection.chosen = selection.ranked(selection.views)[0]
    selection.reason = (f"{best.candidate.label} ({best.error:.1%}) was not better than {held.candidate.label} "
                        f"({held.error:.1%}) on cross-validation in {confidence:.0%} of {RESAMPLES} resamples of the "
                        f"training inputs, so the model keeps to the {_view_words(held.candidate.view)}")
    return selection


def _view_words(view: str) -> str:
    return {"inputs": "input descriptors (what the black box sees)",
            "content": "input descriptors and content features",
            "sampled": "input descriptors, content and sampled features"}[view]


def leave_one_input_out(scored: Scored, frame, y: np.ndarray, groups: np.ndarray, make: EstimatorFactory,
                        seed: int = 0) -> Scored:
    """``scored``'s candidate scored again with one fold per training input (its repeats together): each
    input predicted by a fit on all the others."""
    inputs = len(np.unique(groups))
    return score(scored.candidate, frame, scored.columns, y, groups, group_folds(groups, inputs, seed), make)


def interval(predictions: np.ndarray, actual: np.ndarray, levels: tuple[float, float] = DEFAULT_LEVELS,
             source: str = "out-of-fold predictions") -> dict[str, Any] | None:
    """Factors (low, high) such that [estimate x low, estimate x high] covers the actual value with the
    levels' probability, from out-of-fold predictions (kept, sorted, as ``log_ratios``: the spread the
    interval stands on); None with fewer than 4 usable predictions.

    ``nominal`` is the share a new input falls in with exchangeable residuals: (high rank - low rank) /
    (n + 1). It is the levels' width where n is large enough for their conformal ranks (9 predictions for
    p10-p90); with fewer the ranks are the smallest and largest residual, and that interval holds only
    (n - 1) / (n + 1) (71 % on 6 inputs), which the interval says instead of claiming the levels."""
    predictions = np.asarray(predictions, dtype=float)
    actual = np.asarray(actual, dtype=float)
    usable = (predictions > 0) & np.isfinite(predictions) & (actual > 0)
    ratios = np.sort(np.log(actual[usable] / predictions[usable]))
    n = len(ratios)
    if n < 4:
        return None
    lo_level, hi_level = levels
    lo_rank = max(int(math.floor(lo_level * (n + 1))), 1)  # conformal ranks, 1-based
    hi_rank = min(int(math.ceil(hi_level * (n + 1))), n)
    return {"level": [lo_level, hi_level], "low": float(math.exp(ratios[lo_rank - 1])),
            "high": float(math.exp(ratios[hi_rank - 1])), "n": n, "nominal": round((hi_rank - lo_rank) / (n + 1), 4),
            "method": f"split-conformal quantiles of log(actual / predicted) over {source}",
            "log_ratios": [round(float(r), 6) for r in ratios]}


def coverage(points: Sequence[tuple[float, float, float]]) -> float | None:
    """Share of (actual, low, high) with low <= actual <= high; None for no points."""
    if not points:
        return None
    return sum(1 for actual, low, high in points if low <= actual <= high) / len(points)


def coverage_range(n: int, nominal: float, confidence: float = 0.95) -> tuple[float, float]:
    """The shares of ``n`` held-out inputs that a calibrated interval (one that holds the actual value with
    probability ``nominal``) holds, ``confidence`` of the time: the binomial's central quantiles over ``n``.
    With 20 inputs a calibrated p10-p90 interval holds anywhere from 60 % to 95 % of them."""
    if n < 1:
        raise ValueError("coverage over no inputs")
    from scipy.stats import binom

    tail = (1 - confidence) / 2
    return float(binom.ppf(tail, n, nominal)) / n, float(binom.ppf(1 - tail, n, nominal)) / n
