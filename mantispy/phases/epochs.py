"""Epochs: a recording's samples in consecutive time slices, each summarised by what it runs."""

from __future__ import annotations

import sysconfig
from collections import defaultdict
from dataclasses import dataclass, field

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


def library_prefixes() -> tuple[str, ...]:
    """Where the standard library and installed packages live: frames there are not the program's own."""
    paths = sysconfig.get_paths()
    return tuple(sorted({paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib") if key in paths}))


def program_frames(frames: tuple[Frame, ...], include_library: bool, prefixes: tuple[str, ...]) -> list[Frame]:
    """The frames of the program's own code (every real frame with ``include_library``), outermost first."""
    return [frame for frame in frames if frame.file and not frame.file.startswith("<")
            and (include_library or not frame.file.startswith(prefixes))]


def epochs(store: RecordingStore, recording: Recording, epoch_s: float, window: Window = WHOLE,
           include_library: bool = False, depth: int = 0) -> list[Epoch]:
    """The recording's samples (inside ``window``) in epochs of ``epoch_s`` seconds, from the first
    sample's epoch to the last's (an epoch without samples is kept: an idle slice). With ``depth``, only
    the outermost ``depth`` program frames of each sample count (0: every frame)."""
    frames = store.frames(recording.id)
    prefixes = library_prefixes()
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
        index = int((sample.t - recording.started - window.start) // epoch_s)
        seconds[index] += sample.weight
        for label in labels:
            buckets[index][label] += sample.weight
    if not seconds:
        return []
    out = []
    for index in range(min(seconds), max(seconds) + 1):
        weights = dict(buckets.get(index, {}))
        start = window.start + index * epoch_s
        out.append(Epoch(start, start + epoch_s, seconds.get(index, 0.0), weights,
                         {label: seen[label] for label in weights}))
    return out
