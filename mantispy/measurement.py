"""The measurement protocol's arithmetic: what the machine was doing during a run, how noisy a
campaign's timings are, and which inputs to measure again.

A shared machine disturbs timings in bursts. The profiler therefore interleaves and shuffles runs,
repeats each input's uninstrumented run (``original_repeats``), keeps the median, and records per run
the context that explains a disturbed timing:

``load_1m``       the 1-minute load average when the run ended
``other_cpu_s``   CPU seconds the rest of the machine used while the run ran (``/proc/stat`` busy time
                  minus the run's own CPU time; absent where ``/proc/stat`` cannot be read)
``cpu_mhz``       the mean current CPU frequency, where the kernel exposes it

The campaign's **noise floor** is the median, over inputs measured at least twice, of the median
absolute relative deviation of an input's repeats from their median: the error a perfect model of the
input would still show against one run. No model can be judged below it.
"""

from __future__ import annotations

import os
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CONTEXT_METRICS = ("load_1m", "other_cpu_s", "cpu_mhz")
"""Per-run context stored beside the metrics (never a modelling target by default)."""

NOISE_METRICS = ("wall_s", "cpu_s", "max_rss_kb")

_CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


@dataclass(frozen=True)
class MachineSnapshot:
    """What the machine had done up to one moment: busy CPU seconds since boot (or None)."""

    busy_s: float | None

    @classmethod
    def now(cls) -> MachineSnapshot:
        """Read ``/proc/stat``'s aggregate line (user, nice, system, irq, softirq, steal)."""
        try:
            with open("/proc/stat", encoding="ascii") as handle:
                fields = handle.readline().split()
        except OSError:
            return cls(None)
        if not fields or fields[0] != "cpu" or len(fields) < 8:
            return cls(None)
        ticks = [int(v) for v in fields[1:9]] + [0] * max(0, 9 - len(fields))
        user, nice, system, _idle, _iowait, irq, softirq, steal = ticks[:8]
        return cls((user + nice + system + irq + softirq + steal) / _CLOCK_TICKS)


def cpu_mhz() -> float | None:
    """Mean current frequency of the CPUs in MHz, from cpufreq or /proc/cpuinfo; None if unreadable."""
    values: list[float] = []
    for path in sorted(Path("/sys/devices/system/cpu").glob("cpu[0-9]*/cpufreq/scaling_cur_freq")):
        try:
            values.append(int(path.read_text().strip()) / 1000.0)
        except (OSError, ValueError):
            continue
    if not values:
        try:
            for line in Path("/proc/cpuinfo").read_text().splitlines():
                if line.startswith("cpu MHz"):
                    values.append(float(line.split(":", 1)[1]))
        except (OSError, ValueError, IndexError):
            return None
    return statistics.fmean(values) if values else None


def run_context(before: MachineSnapshot, after: MachineSnapshot, own_cpu_s: float) -> dict[str, float]:
    """The context metrics of one run, from snapshots taken at its start and end."""
    context: dict[str, float] = {}
    try:
        context["load_1m"] = float(os.getloadavg()[0])
    except OSError:
        pass
    if before.busy_s is not None and after.busy_s is not None:
        context["other_cpu_s"] = max(0.0, after.busy_s - before.busy_s - own_cpu_s)
    mhz = cpu_mhz()
    if mhz is not None:
        context["cpu_mhz"] = mhz
    return context


def relative_deviations(values: Iterable[float]) -> list[float]:
    """|x - median| / median of each repeat of one input (empty for fewer than two or a zero median)."""
    values = [float(v) for v in values]
    if len(values) < 2:
        return []
    middle = statistics.median(values)
    if middle <= 0:
        return []
    return [abs(v - middle) / middle for v in values]


def spread(values: Iterable[float]) -> float:
    """(max - min) / median of one input's repeats; 0 for fewer than two."""
    values = [float(v) for v in values]
    if len(values) < 2:
        return 0.0
    middle = statistics.median(values)
    return (max(values) - min(values)) / middle if middle > 0 else 0.0


def repeats_by_input(runs: Iterable[Mapping[str, Any]], variant: str, metric: str) -> dict[str, list[float]]:
    """{input id: the metric of each successful run of ``variant``} from store run rows."""
    found: dict[str, list[float]] = {}
    for run in runs:
        if run["variant"] == variant and run["status"] == "ok" and metric in run["metrics"]:
            found.setdefault(run["input_id"], []).append(float(run["metrics"][metric]))
    return found


def noise_floor(runs: Iterable[Mapping[str, Any]], variant: str = "original",
                metrics: Iterable[str] = NOISE_METRICS) -> dict[str, dict[str, Any]]:
    """Per metric: ``floor`` (median over inputs of their repeats' median relative deviation),
    ``inputs`` (how many inputs had at least two repeats) and ``median_spread``."""
    runs = list(runs)
    result: dict[str, dict[str, Any]] = {}
    for metric in metrics:
        per_input = repeats_by_input(runs, variant, metric)
        deviations = [statistics.median(d) for d in (relative_deviations(v) for v in per_input.values()) if d]
        spreads = [spread(v) for v in per_input.values() if len(v) >= 2]
        if deviations:
            result[metric] = {"floor": statistics.median(deviations), "inputs": len(deviations),
                              "median_spread": statistics.median(spreads)}
    return result


def inputs_to_rerun(runs: Iterable[Mapping[str, Any]], threshold: float, planned: int,
                    metrics: Iterable[str] = ("cpu_s",)) -> list[str]:
    """Inputs whose uninstrumented repeats disagree by more than ``threshold`` ((max - min) / median of
    CPU time: wall time also waits for whatever else runs, and concurrent jobs make it spread for every
    input) and that have not been re-run yet (no more than ``planned`` runs stored)."""
    runs = list(runs)
    chosen: set[str] = set()
    for metric in metrics:
        for input_id, values in repeats_by_input(runs, "original", metric).items():
            if 2 <= len(values) <= planned and spread(values) > threshold:
                chosen.add(input_id)
    return sorted(chosen)
