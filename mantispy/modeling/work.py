"""The load-independent target: the program's own work, in CPU seconds.

Wall and CPU time move with whatever else the machine does; the instrumented run's counts do not. The
``work_s`` metric of an input is its total loop iterations and total calls (from the instrumented run)
weighted by a per-kind cost fitted on the training inputs' CPU time (non-negative least squares on
relative error, plus a fixed start-up cost)::

    work_s = seconds_per_loop_iteration x loops + seconds_per_call x calls + startup_s

So a model of ``work_s`` predicts CPU seconds of the build's machine without learning its noise. A
predictor scales it by ``seconds_per_unit`` (1 on the build machine; ``mantispy calibrate`` re-measures
it on another machine from a few runs). Its accuracy is always reported against the measured CPU time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

WORK_METRIC = "work_s"
MEASURED = "cpu_s"  # what work_s stands for, and is validated against
KINDS = ("loop", "call")


def measured_metric(metric: str) -> str:
    """The stored metric a model's estimates are judged against: CPU time for ``work_s``."""
    return MEASURED if metric == WORK_METRIC else metric


@dataclass
class WorkWeights:
    """Seconds per unit of each kind of work, and the fixed start-up cost."""

    per_kind: dict[str, float]
    startup_s: float

    def to_json(self) -> dict[str, Any]:
        """The model JSON's ``work`` block."""
        return {"seconds_per": dict(self.per_kind), "startup_s": self.startup_s, "measured": MEASURED,
                "kinds": list(KINDS)}


def kind_columns(frame, manifest: dict[str, Any] | None) -> dict[str, list[str]]:
    """{kind: the frame's feature columns of that kind} for the kinds work counts."""
    kinds = {f["id"]: f["kind"] for f in (manifest or {}).get("features", [])}
    return {kind: [c for c in frame.columns if kinds.get(c) == kind] for kind in KINDS}


def totals(frame, columns: dict[str, list[str]]) -> np.ndarray:
    """Rows x kinds: each run's total count of each kind."""
    return np.column_stack([frame[columns[k]].sum(axis=1).to_numpy(dtype=float) if columns[k]
                            else np.zeros(len(frame)) for k in KINDS])


def fit_weights(counts: np.ndarray, cpu_s: np.ndarray) -> WorkWeights:
    """Non-negative seconds per unit of each kind and start-up seconds, minimising squared relative
    error against the measured CPU time."""
    from scipy.optimize import nnls

    cpu_s = np.asarray(cpu_s, dtype=float)
    design = np.column_stack([counts, np.ones(len(cpu_s))])
    scale = np.maximum(design.max(axis=0), 1e-300)  # columns of very different size: solve on a unit scale
    w = 1.0 / cpu_s
    coef, _ = nnls(design / scale * w[:, None], cpu_s * w)
    coef = coef / scale
    return WorkWeights({k: float(c) for k, c in zip(KINDS, coef[:-1])}, float(coef[-1]))


def add_work(frame, manifest: dict[str, Any] | None, train_ids: list[str]) -> tuple[Any, WorkWeights]:
    """``frame`` with a ``metric:work_s`` column, its weights fitted on the rows of ``train_ids``."""
    columns = kind_columns(frame, manifest)
    counts = totals(frame, columns)
    train = frame["input_id"].isin(train_ids).to_numpy()
    weights = fit_weights(counts[train], frame.loc[train, f"metric:{MEASURED}"].to_numpy(dtype=float))
    work = counts @ np.array([weights.per_kind[k] for k in KINDS]) + weights.startup_s
    frame = frame.copy()
    frame[f"metric:{WORK_METRIC}"] = work
    return frame, weights


def work_fallback(model: dict[str, Any]) -> dict[str, Any] | None:
    """A ``work_s`` model's ``training.work_fallback`` (why it is a model of CPU time instead), or None."""
    training = model.get("training")
    fallback = training.get("work_fallback") if isinstance(training, dict) else None
    return fallback if isinstance(fallback, dict) else None
