"""Model averaging: the geometric mean of the candidates cross-validation ranks best.

On tens of training inputs the cross-validated errors of the candidates (:mod:`selection`) are close and
noisy, so which one wins moves with the split, and a single winner is sometimes a polynomial that
extrapolates badly or a constant. Averaging the few best candidates' estimates (in log space: the
geometric mean, since errors are read as ratios) keeps what they agree on. Measured on the suite's
builds refitted over fresh train/test splits (benchmarks/RESULTS.md, "Model averaging"), before it
shipped.
"""

from __future__ import annotations

import numpy as np

from .selection import VIEWS, Scored, Selection

ENSEMBLE_SIZE = 3
"""How many of the best-ranked candidates are averaged, at most."""
TOLERANCE = 0.3
"""A candidate joins the average only when its cross-validated error is within this share of the best's
(a clearly better candidate is not diluted by worse ones)."""


def members(selection: Selection, views: tuple[str, ...] = VIEWS, size: int = ENSEMBLE_SIZE,
            tolerance: float = TOLERANCE) -> list[Scored]:
    """The candidates to average: the ``size`` best of ``views`` whose cross-validated error is at most
    (1 + ``tolerance``) times the best's (fewer when fewer qualify; the best alone at least)."""
    best = selection.ranked(views)[:size]
    return [s for s in best if s.error <= best[0].error * (1 + tolerance)] if best else []


def geometric_mean(predictions: list[np.ndarray], floor: float) -> np.ndarray:
    """Element-wise geometric mean of the members' estimates, each first raised to ``floor`` (> 0), as the
    standard-library evaluation does (:func:`mantispy.modeling.evaluation.predict`)."""
    logs = [np.log(np.maximum(np.asarray(p, dtype=float), floor)) for p in predictions]
    return np.maximum(np.exp(np.minimum(np.mean(logs, axis=0), 700.0)), floor)


def label(scored: list[Scored]) -> str:
    """How tables name an average: ``mean of program log-2 + program log-1 + content log-1``."""
    if len(scored) == 1:
        return scored[0].candidate.label
    return "mean of " + " + ".join(s.candidate.label for s in scored)
