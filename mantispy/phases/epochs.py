"""Epochs: a recording's samples in consecutive time slices, each summarised by what it runs."""

from __future__ import annotations

import math
import os
from collections import defaultdict
from dataclasses import dataclass, field

from mantispy.sampling.interpreter import library_paths
from mantispy.sampling.store import RecordingStore
from mantispy.sampling.types import WHOLE, Frame, Recording, Window


@dataclass
class Epoch:
    """One time slice: [start, end) seconds from the recording's start, the seconds its samples stand
    for, and for each of the program's functions the seconds it was on the stack (inclusive: a function
    counts once per sample however deep it recurses)."""

    start: float
    end: float
    seconds: float = 0.0
    weights: dict[str, float] = field(default_factory=dict)
    frames: dict[str, Frame] = field(default_factory=dict)

    def shares(self, min_share: float = 0.0) -> dict[str, float]:
        """Function -> its share of the epoch's function time, leaving out functions on the stack less than
        ``min_share`` of the epoch (the rest renormalised to sum to 1)."""
        if self.seconds <= 0:
            return {}
        kept = {name: weight for name, weight in self.weights.items() if weight / self.seconds >= min_share}
        rest = sum(kept.values())
        return {name: weight / rest for name, weight in kept.items()} if rest > 0 else {}


def library_prefixes(recording: Recording | None = None) -> tuple[str, ...]:
    """Where the standard library and installed packages live: frames there are not the program's own.
    Those of the interpreter that ran ``recording`` where it says (recordings made before stores kept them do
    not), else this one's."""
    if recording is not None and recording.library:
        return tuple(recording.library)
    return library_paths()


def recorder_prefix() -> str:
    """Where mantispy's run-time files live (the sampler and its bootstrap): their frames (the sampler's
    exit handler) are never the program's."""
    from mantispy.runtime import sampler

    return os.path.dirname(os.path.abspath(sampler.__file__)) + os.sep


def program_frames(frames: tuple[Frame, ...], include_library: bool, prefixes: tuple[str, ...]) -> list[Frame]:
    """The frames of the program's own code (every real frame with ``include_library``), outermost first."""
    own = recorder_prefix()
    return [frame for frame in frames if frame.file and not frame.file.startswith("<") and not frame.file.startswith(own)
            and (include_library or not frame.file.startswith(prefixes))]


def counted_frames(frames: tuple[Frame, ...], include_library: bool, prefixes: tuple[str, ...], depth: int) -> list[Frame]:
    """The program frames a sample counts with: its outermost ``depth`` (0: every one)."""
    own = program_frames(frames, include_library, prefixes)
    return own[:depth] if depth else own


def _spread(t: float, weight: float, epoch_s: float) -> list[tuple[int, float]]:
    """The epochs a sample taken at ``t`` stands for, with its weight's share in each: the time it weighs
    lies just before it (a sample that weighs 0.4 s, taken after a long C call held the GIL and kept the
    sampler out, covers the 0.4 s before it, not only the epoch it was taken in)."""
    last = int(t // epoch_s)
    if weight <= epoch_s * 0.5:
        return [(last, weight)]
    start = max(t - weight, 0.0)
    if start >= t:
        return [(last, weight)]
    out = []
    for index in range(int(start // epoch_s), last + 1):
        overlap = min(t, (index + 1) * epoch_s) - max(start, index * epoch_s)
        if overlap > 1e-9:  # not a float's rounding at an epoch's edge
            out.append((index, weight * overlap / (t - start)))
    return out or [(last, weight)]


def epochs(store: RecordingStore, recording: Recording, epoch_s: float, window: Window = WHOLE,
           include_library: bool = False, depth: int = 0) -> list[Epoch]:
    """The recording's samples (inside ``window``) in epochs of ``epoch_s`` seconds, from the first
    sample's epoch to the last's (an epoch without samples is kept: an idle slice; a sample's weight is
    spread over the time it stands for, see :func:`_spread`). With ``depth``, only
    the outermost ``depth`` program frames of each sample count (0: every frame)."""
    frames = store.frames(recording.id)
    prefixes = library_prefixes(recording)
    on_stack: dict[int, set[str]] = {}
    seen: dict[str, Frame] = {}
    buckets: dict[int, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    seconds: dict[int, float] = defaultdict(float)
    for sample in store.samples(recording, window):
        labels = on_stack.get(sample.stack)
        if labels is None:
            own = counted_frames(frames.get(sample.stack, ()), include_library, prefixes, depth)
            for frame in own:
                seen.setdefault(frame.label(), frame)
            labels = on_stack[sample.stack] = {frame.label() for frame in own}
        for index, share in _spread(sample.t - recording.started - window.start, sample.weight, epoch_s):
            seconds[index] += share
            for label in labels:
                buckets[index][label] += share
    if not seconds:
        return []
    out = []
    for index in range(min(seconds), max(seconds) + 1):
        weights = dict(buckets.get(index, {}))
        start = window.start + index * epoch_s
        out.append(Epoch(start, start + epoch_s, seconds.get(index, 0.0), weights,
                         {label: seen[label] for label in weights}))
    return out


@dataclass
class Trace:
    """A recording's samples in time order, each with its program frames' labels (see :func:`epochs`):
    what exact repeats are mined from, and what :func:`region_epochs` bins."""

    times: list[float]  # seconds from the window's start, at which each sample was taken
    weights: list[float]  # the seconds each sample stands for (just before it)
    stacks: list[int]  # one id per distinct label set: equal ids, equal program frames
    labels: list[frozenset[str]]  # stack id -> its labels
    frames: dict[str, Frame]


def trace(store: RecordingStore, recording: Recording, window: Window = WHOLE, include_library: bool = False,
          depth: int = 0) -> Trace:
    """The recording's samples (inside ``window``) as a trace, in time order (threads interleaved)."""
    frames = store.frames(recording.id)
    prefixes = library_prefixes(recording)
    ids: dict[frozenset[str], int] = {}
    by_stack: dict[int, int] = {}
    out = Trace([], [], [], [], {})
    for sample in sorted(store.samples(recording, window), key=lambda s: (s.t, s.pid, s.tid)):
        stack_id = by_stack.get(sample.stack)
        if stack_id is None:
            own = counted_frames(frames.get(sample.stack, ()), include_library, prefixes, depth)
            for frame in own:
                out.frames.setdefault(frame.label(), frame)
            labels = frozenset(frame.label() for frame in own)
            stack_id = by_stack[sample.stack] = ids.setdefault(labels, len(ids))
            if stack_id == len(out.labels):
                out.labels.append(labels)
        out.times.append(sample.t - recording.started - window.start)
        out.weights.append(sample.weight)
        out.stacks.append(stack_id)
    return out


def region_epochs(samples: Trace, first: int, last: int, start: float, end: float, epoch_s: float,
                  offset: float = 0.0) -> list[Epoch]:
    """Samples ``first`` to ``last`` of the trace in epochs of ``epoch_s`` from ``start`` to ``end``
    (seconds from the window's start; the last epoch ends at ``end``, shorter where the region is): each
    sample's whole weight spread over the part of the time it stands for inside the region. ``offset`` is the window's
    start, added to the epochs' times as :func:`epochs` does."""
    count = max(1, math.ceil((end - start) / epoch_s - 1e-9))
    seconds = [0.0] * count
    buckets: list[dict[str, float]] = [defaultdict(float) for _ in range(count)]
    for index in range(first, last + 1):
        t, weight = samples.times[index], samples.weights[index]
        low, high = max(start, t - weight), min(end, t)
        if high <= low:  # a sample at the region's very start: its time is before it; count it in the first epoch
            spread = [(min(count - 1, max(0, int((t - start) // epoch_s))), min(weight, epoch_s))]
        else:
            spread = []
            for k in range(int((low - start) // epoch_s), min(count - 1, int((high - start) // epoch_s)) + 1):
                overlap = min(high, start + (k + 1) * epoch_s) - max(low, start + k * epoch_s)
                if overlap > 1e-9:  # its whole weight, over the part of its time inside the region
                    spread.append((min(k, count - 1), weight * overlap / (high - low)))
        for k, share in spread:
            seconds[k] += share
            for label in samples.labels[samples.stacks[index]]:
                buckets[k][label] += share
    return [Epoch(offset + start + k * epoch_s, offset + min(end, start + (k + 1) * epoch_s), seconds[k], dict(buckets[k]),
                  {label: samples.frames[label] for label in buckets[k]}) for k in range(count)]
