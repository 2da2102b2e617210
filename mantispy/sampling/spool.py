"""Reading the stack sampler's spool folder: the batches every sampled process appends, as they grow.

Each process writes ``samples-<pid>.jsonl`` (see :mod:`mantispy.runtime.sampler`); stack ids are per
process, so the reader maps them to ids shared by the whole recording (equal frames, equal id).
"""

from __future__ import annotations

import json
import math
from pathlib import Path


class SpoolReader:
    """Reads the sampler's batch files as they grow; maps each process's stack ids to recording-wide ones."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.offsets: dict[Path, int] = {}
        self.ids: dict[tuple[int, int], int] = {}
        self.by_frames: dict[tuple[str, ...], int] = {}
        self.modes: set[str] = set()  # the modes the processes sampled in (cpu falls back to wall)
        self.fallbacks: dict[int, str] = {}  # process -> why it was not sampled on SIGPROF as asked
        self.triggers: dict[int, str] = {}  # process -> how its main thread was last sampled ("thread", "signal")

    def read(self) -> tuple[dict[int, list[str]], list[tuple[float, int, int, int, float]]]:
        """New stacks and samples since the last read (only whole lines)."""
        stacks: dict[int, list[str]] = {}
        samples: list[tuple[float, int, int, int, float]] = []
        for path in sorted(self.folder.glob("samples-*.jsonl")):
            offset = self.offsets.get(path, 0)
            try:
                with open(path, "rb") as handle:
                    handle.seek(offset)
                    data = handle.read()
            except OSError:
                continue
            end = data.rfind(b"\n") + 1
            self.offsets[path] = offset + end
            for line in data[:end].splitlines():
                try:
                    batch = json.loads(line)
                    self._batch(batch, stacks, samples)
                except (ValueError, KeyError, TypeError, AttributeError, OverflowError):  # a damaged line: skip it
                    continue
        return stacks, samples

    def _batch(self, batch: dict, stacks: dict[int, list[str]], samples: list) -> None:
        """Take one batch line in whole or not at all (a damaged one raises before anything is kept)."""
        pid = int(batch["pid"])
        local_stacks = {int(local): frames for local, frames in batch.get("stacks", {}).items()}
        if not all(isinstance(frames, list) and all(isinstance(f, str) for f in frames) for frames in local_stacks.values()):
            raise TypeError("a stack is not a list of frames")
        rows = [(float(t), int(tid), int(local), float(weight)) for t, tid, local, weight in batch.get("samples", [])]
        if not all(math.isfinite(t) and math.isfinite(weight) for t, _tid, _local, weight in rows):
            raise ValueError("a sample's time or weight is not a finite number")
        note = batch.get("trigger_note")
        self.modes.add(str(batch.get("mode", "")))
        self.triggers[pid] = str(batch.get("trigger", "thread"))
        if note:
            self.fallbacks[pid] = " ".join(str(note).split())[:200]
        for local, frames in local_stacks.items():
            key = tuple(frames)
            global_id = self.by_frames.get(key)
            if global_id is None:
                global_id = self.by_frames[key] = len(self.by_frames)
                stacks[global_id] = list(frames)
            self.ids[(pid, local)] = global_id
        for t, tid, local, weight in rows:
            global_id = self.ids.get((pid, local))
            if global_id is not None:
                samples.append((t, pid, tid, global_id, weight))

    def trigger_notes(self) -> list[str]:
        """One note per process asked to sample its main thread on SIGPROF that could not."""
        return [f"process {pid}: its main thread was sampled by the sampler's thread, not on SIGPROF: {why}"
                for pid, why in sorted(self.fallbacks.items())]

    def collisions(self) -> list[str]:
        """What the program's processes installed that a signal- or hook-based sampler would collide with, and
        what the sampler did about it (by how each process's main thread was sampled)."""
        notes = []
        for path in sorted(self.folder.glob("collisions-*.json")):
            try:
                found = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            pid = path.stem.split("-", 1)[1]
            notes.append(f"process {pid} installed {', '.join(map(str, found))}: {self._outcome(pid)}")
        return notes

    def _outcome(self, pid: str) -> str:
        process = int(pid) if pid.isdigit() else -1
        if process in self.fallbacks:
            return "the sampler's signal trigger gave SIGPROF up to it and sampled from its own thread instead"
        if self.triggers.get(process) == "signal":
            return ("the sampler's signal trigger uses SIGPROF and a timer on the main thread's CPU clock only, "
                    "so it did not collide")
        return ("the built-in sampler uses no signal, timer or trace hook, so it did not collide "
                "(--sampler signal uses SIGPROF where it is free)")
