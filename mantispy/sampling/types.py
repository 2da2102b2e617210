"""The vocabulary of recordings: what a recording is, what a sample and a point are, and a query window."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Frame:
    """One stack frame: a function, its file and its first line."""

    name: str
    file: str
    line: int

    @classmethod
    def parse(cls, text: str) -> Frame:
        """From the sampler's ``"qualname\\tfile\\tline"``."""
        name, _, rest = text.partition("\t")
        file, _, line = rest.rpartition("\t")
        return cls(name, file, int(line) if line.isdigit() else 0)

    def label(self) -> str:
        """``name (file:line)``, the short form flame graphs show (the name alone for a frame of no file,
        such as the sampler's ``(garbage collection)`` in ``<gc>``)."""
        if not self.file or (self.file.startswith("<") and not self.line):
            return self.name
        return f"{self.name} ({self.file.rsplit('/', 1)[-1]}:{self.line})"


@dataclass
class Recording:
    """One recorded run: its command, how it was sampled, and how it ended."""

    id: int
    command: list[str]
    started: float  # epoch seconds
    ended: float | None
    status: str  # recording | complete | incomplete | failed
    returncode: int | None = None
    host: str = ""
    rate: float = 100.0
    interval: float = 1.0
    mode: str = "cpu"
    sampler: str = "builtin"
    run_id: int | None = None  # the campaign run this recording belongs to (profile --sample)
    notes: list[str] = field(default_factory=list)
    cwd: str = ""  # the folder the program ran in (its relative file arguments resolve against it)
    # where the program's interpreter keeps its standard library and installed packages (frames there are
    # not the program's own); empty for recordings made before stores kept it
    library: list[str] = field(default_factory=list)

    @property
    def duration(self) -> float | None:
        """Seconds from start to end (None while recording or when the recorder was killed)."""
        return None if self.ended is None else self.ended - self.started

    def to_dict(self) -> dict[str, Any]:
        """As JSON (the ``recording`` part of exports)."""
        return {"id": self.id, "command": self.command, "started": self.started, "ended": self.ended,
                "status": self.status, "returncode": self.returncode, "host": self.host, "rate": self.rate,
                "interval": self.interval, "mode": self.mode, "sampler": self.sampler, "run_id": self.run_id,
                "notes": self.notes, "cwd": self.cwd, "library": self.library}


@dataclass(frozen=True)
class Window:
    """A query's filter: a time window (seconds from the recording's start), a process, a thread."""

    start: float = 0.0
    end: float = math.inf
    pid: int | None = None
    tid: int | None = None

    def describe(self) -> str:
        """The window in words (for labels of empty results)."""
        parts = [f"{self.start:g}-{'end' if math.isinf(self.end) else f'{self.end:g}'} s"]
        if self.pid is not None:
            parts.append(f"pid {self.pid}")
        if self.tid is not None:
            parts.append(f"thread {self.tid}")
        return ", ".join(parts)


@dataclass(frozen=True)
class Sample:
    """One sample: when (epoch seconds), which process and thread, which stack, how much time it stands for."""

    t: float
    pid: int
    tid: int
    stack: int
    weight: float


@dataclass(frozen=True)
class Point:
    """One time series point, shaped like OpenTSDB's: metric, timestamp, value, tags."""

    metric: str
    t: float
    value: float
    tags: dict[str, str]


WHOLE = Window()
"""The whole recording, every process and thread."""
