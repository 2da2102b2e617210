"""The paper's match metrics between two function-time distributions (equations 1 and 2)."""

from __future__ import annotations

import math


def f_sim(a: dict[str, float], b: dict[str, float]) -> float:
    """|T_a ∩ T_b| / max(|T_a|, |T_b|): the fraction of functions the two have in common."""
    if not a and not b:
        return 1.0
    return len(a.keys() & b.keys()) / max(len(a), len(b))


def t_sim(a: dict[str, float], b: dict[str, float]) -> float:
    """1 - (squared-chord distance of the two distributions) / 2: 1 for the same time shares, 0 for
    disjoint ones. The paper's t_sim is the distance over the common functions; this is it as a
    similarity over all functions (a function one side lacks counts with share 0)."""
    distance = sum((math.sqrt(a.get(name, 0.0)) - math.sqrt(b.get(name, 0.0))) ** 2 for name in a.keys() | b.keys())
    return 1.0 - distance / 2.0


def matches(a: dict[str, float], b: dict[str, float], f_threshold: float, t_threshold: float) -> bool:
    """Both metrics at or above their thresholds."""
    return f_sim(a, b) >= f_threshold and t_sim(a, b) >= t_threshold
