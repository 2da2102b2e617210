"""Which calls of a chosen function a per-function counter profile measures (issue 22's overhead goal).

Reading the counters at a call's entry and exit costs a few microseconds (a system call per counter); a
function called a million times would make the run several times slower. So every call is *counted*
(exactly, by a C-level ``itertools.count``), and only some are *measured*: all of a function's first
``every_call_first`` calls, and after that about one call in ``stride``, where the stride keeps the cost
of measuring that function under ``budget`` of the process's CPU time (the stride follows the function's
call rate: measuring cost / (budget x CPU seconds per call); a generator's measuring cost counts each
of its resumes). Strides are jittered (x0.5-1.5, seeded)
so that a program whose calls alternate in a pattern is not sampled in step with it. A function called
rarely is measured at every call; ``budget`` 0 measures every call.

Totals over all calls are then estimated as the measured calls' mean times the exact number of calls
(what AutoPerf's averaged per-call profiles need); the profile says how many calls were measured.

The hot path is what the probes do inline: ``if (n := calls_i()) >= due_i: measure``, where ``calls_i``
and ``due_i`` are names published (in builtins) per function, so a probe reads each with one specialised
global load. Standard library only.
"""

from __future__ import annotations

import itertools
import os
import random
import time

ENV_BUDGET = "MANTIS_FUNCTION_COUNTERS_BUDGET"
ENV_EVERY_CALL_FIRST = "MANTIS_FUNCTION_COUNTERS_EVERY_CALL_FIRST"
DEFAULT_BUDGET = 0.005
"""Measuring one chosen function may cost this share of the process's CPU time."""
DEFAULT_EVERY_CALL_FIRST = 100
"""A function's first calls are all measured."""
MAX_STRIDE = 10_000_000
CALLS_KEY = "__mantis_fc_calls_{}__"
"""The name a probe calls function ``i``'s counter by (published with :meth:`CallSampler.publish`)."""
DUE_KEY = "__mantis_fc_due_{}__"
"""The name a probe reads function ``i``'s due call number by."""


class SamplingSettings:
    """How calls are chosen for measuring (see the module docstring)."""

    __slots__ = ("budget", "every_call_first")

    def __init__(self, budget: float = DEFAULT_BUDGET, every_call_first: int = DEFAULT_EVERY_CALL_FIRST) -> None:
        self.budget, self.every_call_first = budget, every_call_first

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
        self._stretches: list[int] = []  # stretches the last measured call took (a generator's: 1 + resumes)
        self._resumes: list[int] = []
        self._random = random.Random(seed)
        self.index: dict[str, int] = {}
        self._published: dict | None = None
        self._due_keys: list[str] = []

    def publish(self, namespace: dict) -> None:
        """Keep each function's counter and due number under its names (``CALLS_KEY``, ``DUE_KEY``) in
        ``namespace``, now and as they change."""
        self._published = namespace
        for index in range(len(self.due)):
            namespace[CALLS_KEY.format(index)] = self.calls[index]
            namespace[self._due_keys[index]] = self.due[index]

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
        self._stretches.append(1)
        self._resumes.append(0)
        found = self.index[name] = len(self.due) - 1
        self._due_keys.append(DUE_KEY.format(found))
        if self._published is not None:
            self._published[CALLS_KEY.format(found)] = counter.__next__
            self._published[self._due_keys[found]] = 1
        return found

    def _set_due(self, index: int, number: int) -> None:
        self.due[index] = number
        if self._published is not None:
            self._published[self._due_keys[index]] = number

    def measuring(self, index: int, number: int) -> None:
        """Call ``number`` of function ``index`` is measured: choose the next call to measure."""
        settings = self.settings
        if settings.every_call or number < settings.every_call_first:
            self._set_due(index, number + 1)
            return
        now = time.process_time()
        last_number, last_time = self._last[index]
        self._last[index] = (number, now)
        per_call = (now - last_time) / max(number - last_number, 1)
        cost = self.measuring_cost_s * self._stretches[index]
        stride = cost / (settings.budget * per_call) if per_call > 0 else MAX_STRIDE
        stride = min(max(stride, 1.0), MAX_STRIDE) * self._random.uniform(0.5, 1.5)
        self._set_due(index, number + max(1, int(stride)))

    def resumed(self, index: int) -> None:
        """A measured generator call of function ``index`` resumed: one more stretch to read counters at."""
        self._resumes[index] += 1

    def finished(self, index: int) -> None:
        """A measured call of function ``index`` ended: its stretches set what measuring the next costs."""
        self._stretches[index] = 1 + self._resumes[index]
        self._resumes[index] = 0

    def count(self, index: int) -> int:
        """How many times function ``index`` was called so far."""
        return int(repr(self._counts[index])[6:-1]) - 1  # "count(N)": N is the next number it returns
