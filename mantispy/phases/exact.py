"""Exact repeats: stretches of a run's sample trace that repeat one unit of stacks over and over.

The paper's first mining step (its section 2.1): a long-running function or loop gives the same stack
sample after sample (a unit of one), or the same few stacks in turn (a loop sampled in step with its body:
a unit of several). Each such stretch is a phase found exactly, with boundaries at the samples where the
repetition starts and stops rather than at epoch edges; the fuzzy step (:mod:`detect`) then looks at what
lies between them. A stretch is a maximal run of the trace ``s`` where ``s[i] == s[i + p]`` for a period
``p``; stretches are taken longest first, never overlapping (Crochemore's repetitions, found here by one
scan per period, which is linear in the trace for the few short periods that matter).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Stretch:
    """Samples ``first`` to ``last`` (indices into the trace, inclusive): ``period`` stacks repeated."""

    first: int
    last: int
    period: int

    @property
    def length(self) -> int:
        """How many samples it spans."""
        return self.last - self.first + 1


def exact_stretches(trace: Sequence[int], min_length: int, max_period: int = 8) -> list[Stretch]:
    """The non-overlapping exact repeats of ``trace`` (stack ids in time order) at least ``min_length``
    samples long and holding at least two units, in trace order. Among overlapping candidates the longest
    wins (the shorter period on a tie: a unit of one repeated is not also a unit of two)."""
    n = len(trace)
    candidates: list[Stretch] = []
    for period in range(1, max(1, max_period) + 1):
        i = 0
        while i + period < n:
            if trace[i] != trace[i + period]:
                i += 1
                continue
            start = i
            while i + period < n and trace[i] == trace[i + period]:
                i += 1
            last = i - 1 + period  # trace[start..last] repeats with this period
            length = last - start + 1
            if length >= max(min_length, 2 * period) and not _shorter_period(trace, start, period):
                candidates.append(Stretch(start, last, period))
    chosen: list[Stretch] = []
    taken = [False] * n
    for stretch in sorted(candidates, key=lambda s: (-s.length, s.period, s.first)):
        first, last = stretch.first, stretch.last
        while first <= last and taken[first]:
            first += 1
        while last >= first and taken[last]:
            last -= 1
        if any(taken[first:last + 1]) or last - first + 1 < max(min_length, 2 * stretch.period):
            continue  # what is left of it is cut by a longer stretch, or too short to stand alone
        for index in range(first, last + 1):
            taken[index] = True
        chosen.append(Stretch(first, last, stretch.period))
    return sorted(chosen, key=lambda s: s.first)


def _shorter_period(trace: Sequence[int], start: int, period: int) -> bool:
    """Whether the unit starting at ``start`` repeats a shorter one (AA is A twice, ABAB is AB twice)."""
    unit = trace[start:start + period]
    return any(period % p == 0 and all(unit[k] == unit[k % p] for k in range(period)) for p in range(1, period))
