"""What each phase of a recorded run measured: its duration, CPU time, CPU use, peak memory and IO.

:func:`observe` finds a recording's phases (labels shared with other runs through ``known``), reads
each phase's resource use from the recording's time series and its functions' own time from its
samples; :class:`RunPhases` sums a run's phases by label (a phase that recurs counts once, with its
occurrences added), which is what per-phase models fit and what anomaly checks compare.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any

from mantispy.sampling.store import RecordingStore
from mantispy.sampling.types import Recording, Window

from .detect import Known, PhaseOptions, detect, detect_regions
from .epochs import Epoch, epochs, region_epochs, trace
from .exact import exact_stretches
from .own_time import OwnTime, own_time

PHASE_METRICS = ("wall_s", "cpu_s", "cpu_percent", "peak_rss_bytes", "io_bytes")
"""What is measured of each phase: seconds it lasted, CPU seconds its samples stand for (in cpu mode),
mean CPU percent of the process tree, largest RSS of one process, bytes read and written."""

METRIC_WORDS = {"wall_s": "duration", "cpu_s": "CPU time", "cpu_percent": "CPU use",
                "peak_rss_bytes": "peak memory", "io_bytes": "IO bytes"}


class PhaseDataError(Exception):
    """A recording phases cannot be found in; the message is one line naming it and the fix."""


@dataclass
class RunPhases:
    """One run's phases in time order, each a dict (see :meth:`Phase.to_dict`) with its resources."""

    recording: Recording
    epoch_s: float
    epochs: int
    phases: list[dict[str, Any]] = field(default_factory=list)
    own: OwnTime = field(default_factory=dict)  # phase label -> {function -> seconds of its own code}

    def order(self) -> list[str]:
        """Phase labels in order of first appearance."""
        seen: list[str] = []
        for row in self.phases:
            if row["label"] not in seen:
                seen.append(row["label"])
        return seen

    def by_label(self) -> dict[str, dict[str, float]]:
        """Label -> its metrics over every occurrence (durations, CPU and IO added; CPU use averaged
        over time; peak memory the largest). A metric the series could not give is left out."""
        out: dict[str, dict[str, float]] = {}
        for label in self.order():
            rows = [row for row in self.phases if row["label"] == label]
            wall = sum(row["end"] - row["start"] for row in rows)
            metrics: dict[str, float] = {"wall_s": wall, "cpu_s": sum(row["seconds"] for row in rows)}
            timed = [(row["cpu_percent"], row["end"] - row["start"]) for row in rows if row.get("cpu_percent") is not None]
            if timed and wall > 0:
                metrics["cpu_percent"] = sum(value * span for value, span in timed) / wall
            rss = [row["peak_rss_bytes"] for row in rows if row.get("peak_rss_bytes") is not None]
            if rss:
                metrics["peak_rss_bytes"] = max(rss)
            io = [row["io_bytes"] for row in rows if row.get("io_bytes") is not None]
            if io:
                metrics["io_bytes"] = sum(io)
            out[label] = metrics
        return out

    def names(self) -> dict[str, str]:
        """Label -> the phase's name (its distinctive functions)."""
        return {row["label"]: row["name"] for row in reversed(self.phases)}


def observe(store: RecordingStore, recording: Recording, options: PhaseOptions, known: Known) -> RunPhases:
    """The phases of one recording with their resources; raises PhaseDataError when it has none."""
    epoch = options.epoch_for(recording.rate)
    found = epochs(store, recording, epoch, include_library=options.include_library, depth=options.depth)
    if not found:
        raise PhaseDataError(f"recording {recording.id} has no sample: there is nothing to find phases in "
                             "(record a run that uses CPU, or use --mode wall)")
    if len(found) < 2:
        raise PhaseDataError(f"recording {recording.id} has samples in one epoch ({epoch:g} s) only: too short "
                             "for phases; record a run that computes longer (mantispy phases also takes a shorter "
                             "--epoch)")
    if options.exact_repeats:
        regions = exact_regions(store, recording, options, epoch)
        phases = detect_regions(regions, options, known)
        count = sum(len(region) for _, region in regions)
    else:
        phases, count = detect(found, options, known), len(found)
    rows = [{**phase.to_dict(options.min_share), **resources(store, recording, phase.start, phase.end)}
            for phase in phases]
    return RunPhases(recording, epoch, count, rows, own_time(store, recording, rows, options.include_library))


def exact_regions(store: RecordingStore, recording: Recording, options: PhaseOptions,
                  epoch_s: float) -> list[tuple[bool, list[Epoch]]]:
    """The recording cut at its exact repeats (``True``: one repeat's epochs) and what lies between them
    (``False``), in time order. A repeat must last ``confidence`` epochs' worth of samples."""
    samples = trace(store, recording, include_library=options.include_library, depth=options.depth)
    least = max(2, round(options.confidence * epoch_s * recording.rate))
    cuts: list[tuple[bool, int, int]] = []
    at = 0
    for stretch in exact_stretches(samples.stacks, least):
        if stretch.first > at:
            cuts.append((False, at, stretch.first - 1))
        cuts.append((True, stretch.first, stretch.last))
        at = stretch.last + 1
    if at < len(samples.stacks):
        cuts.append((False, at, len(samples.stacks) - 1))
    regions = []
    for exact, first, last in cuts:
        start = samples.times[first - 1] if first > 0 else max(0.0, samples.times[0] - samples.weights[0])
        end = max(samples.times[last], start + 1e-6)
        regions.append((exact, region_epochs(samples, first, last, start, end, epoch_s)))
    return regions


def resources(store: RecordingStore, recording: Recording, start: float, end: float) -> dict[str, float | None]:
    """Inside [start, end) seconds of a recording: mean CPU percent (summed over the processes), peak RSS
    (largest process) and the bytes read and written (growth of the cumulative counters). None where the
    series has no point inside the window (a phase shorter than the polling interval)."""
    window = Window(start, end)
    cpu: dict[float, float] = {}
    for point in store.points(recording, "proc.cpu.percent", window):
        cpu[point.t] = cpu.get(point.t, 0.0) + point.value
    rss = [point.value for point in store.points(recording, "proc.rss_bytes", window)]
    return {"cpu_percent": statistics.mean(cpu.values()) if cpu else None,
            "peak_rss_bytes": max(rss) if rss else None,
            "io_bytes": _growth(store, recording, ("proc.io.read_bytes", "proc.io.write_bytes"), start, end)}


def _growth(store: RecordingStore, recording: Recording, metrics: tuple[str, ...], start: float, end: float) -> float | None:
    """How much cumulative per-process counters grew from the last point before ``start`` (or the first
    inside) to the last point before ``end``, summed over processes and counters."""
    total, seen = 0.0, False
    for metric in metrics:
        by_pid: dict[int, list[tuple[float, float]]] = {}
        for point in store.points(recording, metric, Window(0.0, end)):
            by_pid.setdefault(int(point.tags.get("pid", 0)), []).append((point.t - recording.started, point.value))
        for series in by_pid.values():
            series.sort()
            before = [value for t, value in series if t < start]
            inside = [value for t, value in series if t >= start]
            if not inside:
                continue
            seen = True
            total += inside[-1] - (before[-1] if before else inside[0])
    return total if seen else None
