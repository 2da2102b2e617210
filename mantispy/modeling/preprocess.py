"""Preprocessing of raw feature columns before SPORE (paper §4.2).

On the training rows only: drop constant columns; collapse perfectly correlated columns (positive or
negative) into one representative, remembering the others as its aliases; scale every kept column to
[0, 1] with the training minimum and maximum.

Perfect correlation is found by hashing: two columns are perfectly (linearly) correlated exactly when
their min-max scaled training vectors are equal (positive) or sum to one (negative), so one pass over
the columns finds every group, without an m x m correlation matrix. The representative of a group is
the feature whose evaluator is likely cheapest (counters before values, then the shortest id); when the
cost loop excludes it, an alias can take its place in the next fit.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

KIND_PRIORITY = {"loop": 0, "call": 1, "branch": 2, "except": 3, "value": 4}
ROUND = 10  # decimals compared when hashing scaled columns


def _kind(feature_id: str) -> str:
    parts = feature_id.split(":")
    return parts[2] if len(parts) > 2 else "other"


def representative_order(feature_id: str) -> tuple[int, int, str]:
    """Sort key: which member of a perfectly correlated group stands for the group."""
    return (KIND_PRIORITY.get(_kind(feature_id), 5), len(feature_id), feature_id)


@dataclass
class Preprocessed:
    """The kept columns and how to get from raw feature values to them."""

    columns: list[str]  # kept feature ids, in matrix column order
    minimum: np.ndarray
    maximum: np.ndarray
    aliases: dict[str, list[tuple[str, int]]] = field(default_factory=dict)  # rep -> [(alias, +1/-1)]
    constant: list[str] = field(default_factory=list)
    raw_count: int = 0

    def scale(self, raw: np.ndarray) -> np.ndarray:
        """Raw values (rows x kept columns) to the [0, 1] training scale."""
        return (raw - self.minimum) / (self.maximum - self.minimum)


def preprocess(frame, columns: list[str], train_rows: np.ndarray) -> Preprocessed:
    """Choose and scale the feature columns of ``frame`` (a pandas DataFrame) using ``train_rows`` only."""
    train = frame.iloc[train_rows][columns].to_numpy(dtype=float)
    lo, hi = train.min(axis=0), train.max(axis=0)
    varying = hi > lo
    constant = [c for c, v in zip(columns, varying) if not v]
    kept_idx = np.flatnonzero(varying)
    order = sorted(kept_idx, key=lambda i: representative_order(columns[i]))
    scaled = (train[:, order] - lo[order]) / (hi[order] - lo[order])
    seen: dict[bytes, tuple[str, int]] = {}
    aliases: dict[str, list[tuple[str, int]]] = {}
    representatives: list[int] = []
    for position, i in enumerate(order):
        vector = np.round(scaled[:, position], ROUND) + 0.0  # +0.0 folds -0.0 into 0.0
        key = vector.tobytes()
        if key in seen:
            rep, sign = seen[key]
            aliases.setdefault(rep, []).append((columns[i], sign))
            continue
        flipped = (np.round(1.0 - scaled[:, position], ROUND) + 0.0).tobytes()
        if flipped in seen:
            rep, sign = seen[flipped]
            aliases.setdefault(rep, []).append((columns[i], -sign))
            continue
        seen[key] = (columns[i], 1)
        representatives.append(int(i))
    representatives.sort()  # back to the frame's column order
    return Preprocessed(
        columns=[columns[i] for i in representatives],
        minimum=lo[representatives],
        maximum=hi[representatives],
        aliases=aliases,
        constant=constant,
        raw_count=len(columns),
    )
