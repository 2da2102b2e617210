"""Which calls of a chosen function a per-function counter profile measures (issue 22's overhead goal).

Reading the counters at a call's entry and exit costs a few microseconds (a system call per counter); a
function called a million times would make the run several times slower. So every call is *counted*
(exactly, by a C-level ``itertools.count``), and only some are *measured*: all of a function's first
``every_call_first`` calls, and after that about one call in ``stride``, where the stride keeps the cost
of measuring that function under ``budget`` of the process's CPU time (the stride follows the function's
call rate: measuring cost / (budget x CPU seconds per call)). Strides are jittered (x0.5-1.5, seeded)
so that a program whose calls alternate in a pattern is not sampled in step with it. A function called
rarely is measured at every call; ``budget`` 0 measures every call.

Totals over all calls are then estimated as the measured calls' mean times the exact number of calls
(what AutoPerf's averaged per-call profiles need); the profile says how many calls were measured.

The hot path is what the probes do inline: ``n = calls[i](); if n >= due[i]: measure``. Standard library
only.
"""

from __future__ import annotations

import itertools
import os
import random
import time
from dataclasses import dataclass

ENV_BUDGET = "MANTIS_FUNCTION_COUNTERS_BUDGET"
ENV_EVERY_CALL_FIRST = "MANTIS_FUNCTION_COUNTERS_EVERY_CALL_FIRST"
DEFAULT_BUDGET = 0.005
"""Measuring one chosen function may cost this share of the process's CPU time."""
DEFAULT_EVERY_CALL_FIRST = 100
"""A function's first calls are all measured."""
MAX_STRIDE = 10_000_000
NEVER = 1 << 62
"""A due call number no function reaches."""


@dataclass(frozen=True)
class SamplingSettings:
    """How calls are chosen for measuring (see the module docstring)."""

    budget: float = DEFAULT_BUDGET
    every_call_first: int = DEFAULT_EVERY_CALL_FIRST

    @classmethod
    def from_environment(cls) -> SamplingSettings:
        """The settings named in the environment (``MANTIS_FUNCTION_COUNTERS_BUDGET``, a share >= 0;
        ``MANTIS_FUNCTION_COUNTERS_EVERY_CALL_FIRST``, a count >= 0); malformed values raise ValueError."""
        try:
            budget = float(os.environ.get(ENV_BUDGET, DEFAULT_BUDGET))
            first = int(os.environ.get(ENV_EVERY_CALL_FIRST, DEFAULT_EVERY_CALL_FIRST))
        except ValueError:
            budget, first = -1.0, -1
        if not 0 <= budget < float("inf") or first < 0:
            raise ValueError(f"{ENV_BUDGET} must be a share of the CPU time >= 0 (0: measure every call) and "
                             f"{ENV_EVERY_CALL_FIRST} a whole number >= 0; unset them for the defaults")
        return cls(budget, first)

    @property
    def every_call(self) -> bool:
        """Whether every call is measured."""
        return self.budget == 0


class CallSampler:
    """Per chosen function: its exact call count and the number of the next call to measure.

    ``calls[i]`` is function ``i``'s counter (call it at each call: it returns the call's number, from 1);
    ``due[i]`` the number from which a call is measured. :meth:`measuring` is told of each measured call
    as it starts, and moves ``due[i]`` on.
    """

    def __init__(self, settings: SamplingSettings, measuring_cost_s: float, seed: int = 22) -> None:
        self.settings = settings
        self.measuring_cost_s = measuring_cost_s
        self.calls: list = []  # bound __next__ of each function's itertools.count
        self.due: list[int] = []
        self._counts: list[itertools.count] = []
        self._last: list[tuple[int, float]] = []  # (call number, process CPU seconds) at the last measured call
        self._random = random.Random(seed)
        self.index: dict[str, int] = {}

    def add(self, name: str) -> int:
        """The index of function ``name`` (the same index each time a name is added)."""
        found = self.index.get(name)
        if found is not None:
            return found
        counter = itertools.count(1)
        self._counts.append(counter)
        self.calls.append(counter.__next__)
        self.due.append(1)
        self._last.append((0, time.process_time()))
        found = self.index[name] = len(self.due) - 1
        return found

    def measuring(self, index: int, number: int) -> None:
        """Call ``number`` of function ``index`` is measured: choose the next call to measure."""
        settings = self.settings
        if settings.every_call or number < settings.every_call_first:
            self.due[index] = number + 1
            return
        now = time.process_time()
        last_number, last_time = self._last[index]
        self._last[index] = (number, now)
        per_call = (now - last_time) / max(number - last_number, 1)
        stride = self.measuring_cost_s / (settings.budget * per_call) if per_call > 0 else MAX_STRIDE
        stride = min(max(stride, 1.0), MAX_STRIDE) * self._random.uniform(0.5, 1.5)
        self.due[index] = number + max(1, int(stride))

    def count(self, index: int) -> int:
        """How many times function ``index`` was called so far."""
        return int(repr(self._counts[index])[6:-1]) - 1  # "count(N)": N is the next number it returns
