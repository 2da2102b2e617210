"""Own time: how long each of the program's functions ran its own code, phase by phase.

A sample's innermost program frame is the function whose own code was running, together with the
standard library, installed packages and C code it called (frames the program's own do not show).
Phases are found by the outermost frames of the stack (:class:`~.detect.PhaseOptions` ``depth``); own
time says where a phase's time went beneath them. A function that starts doing redundant work, or a
library call of it that becomes slow, shows as more own time of that function whatever phase label its
epochs end up with; :mod:`.anomaly` compares each function's share of the run with the shares the
model's training runs showed.

Time the sampler saw collecting garbage (its ``<gc>`` frame, :mod:`mantispy.runtime.sampler`) counts as
the own time of :data:`GARBAGE_COLLECTION`, not of the function that happened to allocate.

A sample stands for the time since its thread's previous one. Where the sampler could not sample for a
while (a long C call held the GIL, or, on Python 3.11, where it keeps the program's 5 ms switch interval,
its thread waited for the GIL: 0.35-0.42 s during sqlparse's grouping), the stack it then finds says
little about where that time went, so a sample counts at most :data:`MAX_PERIODS` sampling periods of own
time; the rest is nobody's.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import defaultdict
from typing import Any

from mantispy.sampling.store import RecordingStore
from mantispy.sampling.types import Frame, Recording

from .epochs import library_prefixes, program_frames

MAX_PERIODS = 3.0  # the most own time one sample counts, in sampling periods
GARBAGE_COLLECTION = "(garbage collection)"  # the own-time label of the time the sampler saw collecting garbage
OwnTime = dict[str, dict[str, float]]
"""Phase label -> {function label (``name (file:line)``) -> seconds of own time in that phase}."""


def innermost_program_frame(frames: tuple[Frame, ...], include_library: bool, prefixes: tuple[str, ...]) -> Frame | None:
    """The innermost frame of the program's own code in a stack given outermost first (None: none)."""
    own = program_frames(frames, include_library, prefixes)
    return own[-1] if own else None


def own_time(store: RecordingStore, recording: Recording, rows: list[dict[str, Any]], include_library: bool) -> OwnTime:
    """The own time of every function, split by the phase (``rows``, in time order, each with ``label``,
    ``start`` and ``end`` seconds from the recording's start) each sample fell in; a sample before the
    first phase counts for the first, one after the last for the last; each sample counts at most
    :data:`MAX_PERIODS` sampling periods."""
    if not rows:
        return {}
    most = MAX_PERIODS / max(recording.rate, 1e-9)
    prefixes = library_prefixes(recording)
    frames = store.frames(recording.id)
    inner: dict[int, str | None] = {}
    starts = [float(row["start"]) for row in rows]
    out: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for sample in store.samples(recording):
        if sample.stack not in inner:
            stack = frames.get(sample.stack, ())
            if stack and stack[-1].file == "<gc>":  # the sampler's garbage-collection frame: nobody's own code
                inner[sample.stack] = GARBAGE_COLLECTION
            else:
                frame = innermost_program_frame(stack, include_library, prefixes)
                inner[sample.stack] = None if frame is None else frame.label()
        function = inner[sample.stack]
        if function is None or sample.weight <= 0:
            continue
        index = max(bisect_right(starts, sample.t - recording.started) - 1, 0)
        out[rows[index]["label"]][function] += min(sample.weight, most)
    return {label: dict(functions) for label, functions in out.items()}


def run_seconds(own: OwnTime) -> dict[str, float]:
    """Function -> its own seconds over every phase of the run."""
    totals: dict[str, float] = defaultdict(float)
    for functions in own.values():
        for function, seconds in functions.items():
            totals[function] += seconds
    return dict(totals)


def run_shares(own: OwnTime) -> dict[str, float]:
    """Function -> its share of the run's own time over every phase (the shares sum to 1)."""
    totals = run_seconds(own)
    whole = sum(totals.values())
    return {function: seconds / whole for function, seconds in totals.items()} if whole > 0 else {}


def where(own: OwnTime, function: str) -> str | None:
    """The phase label holding most of ``function``'s own time (None: it had none)."""
    holding = [(functions.get(function, 0.0), label) for label, functions in own.items()]
    seconds, label = max(holding, default=(0.0, None))
    return label if seconds > 0 else None
