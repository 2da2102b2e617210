"""Epochs: a recording's samples in consecutive time slices, each summarised by what it runs."""

from __future__ import annotations

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
            own = program_frames(frames.get(sample.stack, ()), include_library, prefixes)
            if depth:
                own = own[:depth]
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
