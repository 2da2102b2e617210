"""Whether the candidate's runs are costlier than the baseline's, input by input: a permutation test
stratified by input (the candidate/baseline labels shuffled only among the runs of one input).

The statistic is the sum over inputs of the difference between the candidate's and the baseline's mean
log value, so every input weighs the same however long it runs. Unlike a signed-rank test on per-input
medians it uses every repeat: two inputs with three baseline and two candidate runs each can reach
p = 0.01, where medians of two inputs can never go below 0.25 (the one-sided test of a change that only
two of six inputs reach). Labellings are enumerated exactly when there are at most ``EXACT`` of them,
otherwise ``SAMPLES`` are drawn (seeded).
"""

from __future__ import annotations

import itertools
import math

import numpy as np

EXACT = 20_000
SAMPLES = 4_000


def _labellings(total: int, chosen: int) -> np.ndarray:
    """Every way to choose ``chosen`` of ``total`` runs, as boolean rows."""
    rows = []
    for picked in itertools.combinations(range(total), chosen):
        row = np.zeros(total, dtype=bool)
        row[list(picked)] = True
        rows.append(row)
    return np.array(rows)


def stratified_p(groups: list[tuple[list[float], list[float]]], greater: bool = True, seed: int = 0) -> float | None:
    """One-sided p-value that the candidate's values (second of each pair) exceed the baseline's (first)
    — fall short of them with ``greater=False`` — given (baseline values, candidate values) per input,
    values already on a log scale. None when no input has runs of both."""
    usable = [(np.asarray(b, dtype=float), np.asarray(c, dtype=float)) for b, c in groups if len(b) and len(c)]
    if not usable:
        return None
    sign = 1.0 if greater else -1.0
    observed = sign * sum(c.mean() - b.mean() for b, c in usable)
    count = math.prod(math.comb(len(b) + len(c), len(c)) for b, c in usable)
    rng = np.random.default_rng(seed)
    per_input = []
    for base, cand in usable:
        values = np.concatenate([base, cand])
        n, k = len(values), len(cand)
        if count <= EXACT:
            labels = _labellings(n, k)
        else:
            labels = np.array([rng.permutation(n) < k for _ in range(SAMPLES)])
        # difference of means for each labelling: mean of the chosen minus mean of the rest
        chosen = (labels * values).sum(axis=1) / k
        rest = ((~labels) * values).sum(axis=1) / (n - k)
        per_input.append(chosen - rest)
    if count <= EXACT:
        totals = np.zeros(1)
        for differences in per_input:
            totals = (totals[:, None] + differences[None, :]).ravel()
        statistics = sign * totals
        return float((statistics >= observed - 1e-12).mean())
    statistics = sign * np.sum(per_input, axis=0)
    return float((1 + (statistics >= observed - 1e-12).sum()) / (1 + len(statistics)))
