"""How fast this machine's CPU runs now: the thread CPU time of a fixed loop.

On a shared or virtual machine the same work takes more CPU seconds at times (cycles stolen by or shared
with other guests are charged to the running thread): recordings of one Dask job at one configuration were
measured 55 % apart in wall time with no other program's load in the machine's accounting, and the cost of
this module's loop during those runs ranked with their wall times. A recording keeps the loop's cost while
it ran (:class:`SpeedProbe`); ``whatif --probe-speed`` measures it again (:func:`probe_cost_us`) and scales
the recording's CPU work by the ratio.
"""

from __future__ import annotations

import statistics
import threading
import time

LOOP_ADDS = 20_000
"""Multiply-adds in one measurement (about 1 ms of CPU here)."""


def loop_cost_us() -> float:
    """Microseconds of this thread's CPU time one pass of the fixed loop takes."""
    started = time.thread_time_ns()
    total = 0
    for i in range(LOOP_ADDS):
        total += i * i
    return (time.thread_time_ns() - started) / 1e3


def probe_cost_us(seconds: float = 0.5, every: float = 0.02) -> float:
    """The median loop cost over ``seconds`` of wall time, one pass every ``every`` seconds."""
    costs = [loop_cost_us()]
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        time.sleep(every)
        costs.append(loop_cost_us())
    return statistics.median(costs)


class SpeedProbe:
    """Measures the loop's cost every ``interval`` seconds in a daemon thread until stopped."""

    def __init__(self, interval: float = 0.1) -> None:
        self.costs: list[float] = []
        self._interval = interval
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="mantispy-speed", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._done.wait(self._interval):
            self.costs.append(loop_cost_us())

    def stop(self) -> float | None:
        """Stop; the median cost measured (None when the job ended before the first measurement)."""
        self._done.set()
        self._thread.join()
        return statistics.median(self.costs) if self.costs else None
