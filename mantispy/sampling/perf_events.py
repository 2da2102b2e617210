"""Linux software performance counters (task-clock, page faults, context switches, CPU migrations) of one
process, as resource series (``perf.*``), through :mod:`mantispy.runtime.perf_counters`.

Software events need no PMU, so they work in virtual machines; ``perf_event_paranoid`` and seccomp may
still refuse them, and :func:`open_counters` then returns nothing and says why. The poller visits every
process of the tree itself, so counters are opened per process, without ``inherit``.
"""

from __future__ import annotations

from mantispy.runtime import perf_counters

SERIES_NAMES = {name: "perf." + name.split(".", 1)[1] for name in perf_counters.SOFTWARE_EVENTS}
"""Counter event -> the series it is stored as (``sw.page_faults`` -> ``perf.page_faults``)."""


class PerfCounters:
    """Open software counters of one process; :meth:`read` gives {series: value} (cumulative)."""

    def __init__(self, counters: perf_counters.Counters) -> None:
        self.counters = counters
        self.pid = counters.pid

    def read(self) -> dict[str, float]:
        """Current values (a counter whose process is gone is dropped)."""
        return {SERIES_NAMES[name]: value for name, value in self.counters.read().items()}

    def close(self) -> None:
        """Close every counter."""
        self.counters.close()


def open_counters(pid: int) -> tuple[PerfCounters | None, str | None]:
    """Software counters of process ``pid``, or (None, why not)."""
    counters, refused = perf_counters.open_counters(pid, list(perf_counters.SOFTWARE_EVENTS), inherit=False)
    if counters is None:
        return None, next(iter(refused.values()), "perf_event_open opened nothing")
    return PerfCounters(counters), None
