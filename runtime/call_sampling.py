"""Which calls of a chosen function a per-function counter profile measures (issue 22's overhead goal).

Reading the counters at a call's entry and exit costs a few microseconds (a system call per counter); a
function called a million times would make the run several times slower. So every call is *counted*
exactly, and only some are *measured*: every call until a function's measured calls have read its
counters over ``every_call_first`` stretches (a call is one stretch, a generator's call one more per
resume), and after that about one call in ``stride``, where the stride keeps the cost of measuring that function under
``budget`` of the process's CPU time (the stride follows the function's call rate: measuring cost /
(budget x CPU seconds per call); a generator's measuring cost counts each of its resumes). Strides are
jittered (x0.5-1.5, seeded) so that a program whose calls alternate in a pattern is not sampled in step
with it. A function called rarely is measured at every call; ``budget`` 0 measures every call.

Totals over all calls are then estimated in two parts (what AutoPerf's averaged per-call profiles need):
the first calls', measured every one, as they are, and the later calls' as the mean of those measured
among them times their exact number. (A function's first calls are often its slowest, before caches and
the interpreter's specialisation warm up: one mean over both parts would lend the later calls their cost.)
The profile says how many calls were measured. (What the reads themselves add to the later calls is taken
off by the profiler, from empty stretches measured at some of their gates' openings:
:mod:`.function_counters`; :meth:`CallSampler.is_first` tells the two parts apart.)

The hot path is what a probe does inline: ``if next(gate_i):`` measure, where ``gate_i`` is an iterator
of Falses ending in Trues (:class:`CallSampler`), published per function under its own name (in
builtins), so a call that is not measured costs one specialised global load and one C-level ``next``
(about 10 ns). Standard library only.
"""

from __future__ import annotations

import itertools
import operator
import os
import random
import time
from collections.abc import Iterator

ENV_BUDGET = "MANTIS_FUNCTION_COUNTERS_BUDGET"
ENV_EVERY_CALL_FIRST = "MANTIS_FUNCTION_COUNTERS_EVERY_CALL_FIRST"
DEFAULT_BUDGET = 0.005
"""Measuring one chosen function may cost this share of the process's CPU time."""
DEFAULT_EVERY_CALL_FIRST = 100
"""A function's first calls are all measured."""
MAX_STRIDE = 10_000_000
GATE_KEY = "__mantis_fc_gate_{}__"
"""The name a probe finds function ``i``'s gate by (published with :meth:`CallSampler.publish`)."""
NEXT_KEY = "__mantis_fc_next__"
"""The name a probe calls ``next`` by (a module may have a global of its own called ``next``)."""


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
    """Per chosen function: a *gate* that says which calls are measured, and the exact number of calls.

    ``gates[i]`` is function ``i``'s gate, an iterator: ``next(gates[i])`` at each call is False for the
    calls that are not measured and True for the one that is (a chain of ``stride - 1`` Falses, then
    Trues), all in C. A call that finds True calls :meth:`measuring`, which numbers it and sets the next
    gate; the calls between are counted from how far the gate was used (``operator.length_hint`` of its
    False part).
    """

    def __init__(self, settings: SamplingSettings, measuring_cost_s: float, seed: int = 22) -> None:
        self.settings = settings
        self.measuring_cost_s = measuring_cost_s
        self.gates: list[Iterator[bool]] = []
        self._falses: list[itertools.repeat] = []  # each gate's False part, to see how far it was used
        self._lengths: list[int] = []  # how many Falses each gate started with
        self._numbered: list[int] = []  # calls up to and including the last measured one
        self._last: list[tuple[int, float]] = []  # (call number, process CPU seconds) at the last measured call
        self._stretches: list[int] = []  # stretches the last measured call took (a generator's: 1 + resumes)
        self._resumes: list[int] = []
        self._spent: list[int] = []  # stretches measured so far (every call is measured while under every_call_first)
        self._random = random.Random(seed)
        self.index: dict[str, int] = {}
        self.names: list[str] = []  # by index
        self._published: dict | None = None
        self._gate_keys: list[str] = []

    def publish(self, namespace: dict) -> None:
        """Keep each function's gate under its name (``GATE_KEY``) in ``namespace``, now and as it changes."""
        self._published = namespace
        for index, gate in enumerate(self.gates):
            namespace[self._gate_keys[index]] = gate

    def add(self, name: str) -> int:
        """The index of function ``name`` (the same index each time a name is added)."""
        found = self.index.get(name)
        if found is not None:
            return found
        found = self.index[name] = len(self.gates)
        self.names.append(name)
        self._gate_keys.append(GATE_KEY.format(found))
        self.gates.append(_ALWAYS)  # (every call measured until the first one sets a gate)
        self._falses.append(_NONE)
        self._lengths.append(0)
        self._numbered.append(0)
        self._last.append((0, time.process_time()))
        self._stretches.append(1)
        self._resumes.append(0)
        self._spent.append(0)
        if self._published is not None:
            self._published[self._gate_keys[found]] = _ALWAYS
        return found

    def _arm(self, index: int, stride: int) -> None:
        """Let the next ``stride - 1`` calls pass and measure the one after."""
        gate: Iterator[bool]
        if stride <= 1:
            if self.gates[index] is _ALWAYS:
                return
            falses, gate = _NONE, _ALWAYS
        else:
            falses = itertools.repeat(False, stride - 1)
            gate = itertools.chain(falses, itertools.repeat(True))
        self._falses[index], self._lengths[index], self.gates[index] = falses, max(stride - 1, 0), gate
        if self._published is not None:
            self._published[self._gate_keys[index]] = gate

    def measuring(self, index: int) -> int:
        """A call of function ``index`` found its gate open and is measured: its number (from 1); the next
        gate is set."""
        number = self._numbered[index] + self._lengths[index] - operator.length_hint(self._falses[index]) + 1
        self._numbered[index] = number
        settings = self.settings
        if self.is_first(index):
            self._arm(index, 1)
            return number
        now = time.process_time()
        last_number, last_time = self._last[index]
        self._last[index] = (number, now)
        per_call = (now - last_time) / max(number - last_number, 1)
        cost = self.measuring_cost_s * self._stretches[index]
        stride = cost / (settings.budget * per_call) if per_call > 0 else MAX_STRIDE
        stride = min(max(stride, 1.0), MAX_STRIDE) * self._random.uniform(0.5, 1.5)
        self._arm(index, max(1, int(stride)))
        return number

    def resumed(self, index: int) -> None:
        """A measured generator call of function ``index`` resumed: one more stretch to read counters at."""
        self._resumes[index] += 1

    def is_first(self, index: int) -> bool:
        """Whether function ``index``'s calls are still all measured (its first calls, or budget 0); after
        them, one call in a stride is."""
        return self.settings.every_call or self._spent[index] < self.settings.every_call_first

    def stretches(self, index: int) -> int:
        """The stretches function ``index``'s last finished measured call took (1, or a generator's 1 +
        resumes)."""
        return self._stretches[index]

    def finished(self, index: int) -> bool:
        """A measured call of function ``index`` ended: its stretches set what measuring the next costs.
        Returns whether it was one of the first calls, all measured (else one measured in a stride)."""
        first = self.is_first(index)
        self._stretches[index] = 1 + self._resumes[index]
        self._spent[index] += self._stretches[index]
        self._resumes[index] = 0
        return first

    def count(self, index: int) -> int:
        """How many times function ``index`` was called so far."""
        return self._numbered[index] + self._lengths[index] - operator.length_hint(self._falses[index])


_ALWAYS = itertools.repeat(True)
"""The gate of a function whose every call is measured (shared: it never runs out)."""
_NONE = itertools.repeat(False, 0)
"""The False part of that gate: empty."""
