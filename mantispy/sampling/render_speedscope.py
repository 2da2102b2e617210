"""speedscope's file format (https://www.speedscope.app/file-format-schema.json): one sampled profile per
thread, in seconds, frames shared, samples in time order with their weights."""

from __future__ import annotations

import json
from collections.abc import Iterable

from .store import RecordingStore
from .types import WHOLE, Frame, Recording, Sample, Window

SCHEMA = "https://www.speedscope.app/file-format-schema.json"


def render(store: RecordingStore, recording: Recording, window: Window = WHOLE) -> str:
    """The window's samples as a speedscope document (one profile per process and thread)."""
    frames = store.frames(recording.id)
    return json.dumps(document(store.samples(recording, window), frames, recording, window))


def document(samples: Iterable[Sample], frames: dict[int, tuple[Frame, ...]], recording: Recording,
             window: Window) -> dict:
    """The speedscope JSON object."""
    shared: list[dict] = []
    index: dict[Frame, int] = {}
    threads: dict[tuple[int, int], list[Sample]] = {}
    for sample in samples:
        threads.setdefault((sample.pid, sample.tid), []).append(sample)
    profiles = []
    for (pid, tid), rows in sorted(threads.items()):
        rows.sort(key=lambda s: s.t)
        stacks, weights = [], []
        for sample in rows:
            ids = []
            for frame in frames.get(sample.stack, ()):
                if frame not in index:
                    index[frame] = len(shared)
                    shared.append({"name": frame.name, "file": frame.file, "line": frame.line})
                ids.append(index[frame])
            stacks.append(ids)
            weights.append(sample.weight)
        start = rows[0].t - recording.started
        profiles.append({"type": "sampled", "name": f"pid {pid} thread {tid}", "unit": "seconds",
                         "startValue": start, "endValue": start + sum(weights), "samples": stacks, "weights": weights})
    return {"$schema": SCHEMA, "shared": {"frames": shared}, "profiles": profiles, "activeProfileIndex": 0,
            "exporter": "mantispy", "name": f"recording {recording.id} ({window.describe()}, {recording.mode} time)"}
