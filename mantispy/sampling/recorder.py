"""``mantispy record``: run a program with the stack sampler in every Python process of its tree, poll its
resources, and store both, batch by batch, while it runs.

The program runs unchanged (its own interpreter, argv, stdin, stdout, stderr and exit status): the sampler
starts from a ``sitecustomize`` bootstrap (:mod:`mantispy.runtime.sample_boot`) put first on
``PYTHONPATH``, and writes batches into a private spool folder, which this recorder reads every quarter
second into the store, one transaction per batch, together with the resource points
(:mod:`.resources`). A program that installed its own SIGPROF handler, timer or profiler is noted with
the recording (the sampler uses none of them, so nothing collides).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from mantispy.core.launch import LaunchError, program_argv
from mantispy.core.watchdog import WATCHDOG
from mantispy.runtime import sample_boot, sampler

from .resources import ResourcePoller
from .store import RecordingError, RecordingStore
from .types import Point, Recording

DEFAULT_STORE = Path(".mantis") / "record.db"
INGEST_S = 0.25


@dataclass
class RecordOptions:
    """What ``mantispy record`` was asked."""

    invocation: list[str]  # a script path or -m MODULE, then the program's arguments
    store: Path = DEFAULT_STORE
    rate: float = 100.0
    interval: float = 1.0
    mode: str = "cpu"
    cwd: Path = field(default_factory=Path.cwd)
    perf: bool = True
    run_id: int | None = None
    python: str | None = None

    def check(self) -> None:
        """Refuse options out of range, in one line naming the option."""
        if not sampler.MIN_RATE <= self.rate <= sampler.MAX_RATE:
            raise RecordingError(f"--rate {self.rate:g}: the sampler takes 1 to 1000 samples a second")
        if not 0.1 <= self.interval <= 3600:
            raise RecordingError(f"--interval {self.interval:g}: resource series are polled every 0.1 to 3600 s")
        if self.mode not in sampler.MODES:
            raise RecordingError(f"--mode {self.mode}: choose cpu (where CPU time goes) or wall (where time goes)")


@dataclass
class RecordResult:
    """What one recording stored."""

    recording: Recording
    samples: int
    points: int
    processes: int


class _Spool:
    """Reads the sampler's batch files as they grow; maps each process's stack ids to recording-wide ones."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.offsets: dict[Path, int] = {}
        self.ids: dict[tuple[int, int], int] = {}
        self.by_frames: dict[tuple[str, ...], int] = {}

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
                except (ValueError, KeyError, TypeError):  # a damaged line: skip it, keep the rest
                    continue
        return stacks, samples

    def _batch(self, batch: dict, stacks: dict[int, list[str]], samples: list) -> None:
        pid = int(batch["pid"])
        for local, frames in batch.get("stacks", {}).items():
            key = tuple(frames)
            global_id = self.by_frames.get(key)
            if global_id is None:
                global_id = self.by_frames[key] = len(self.by_frames)
                stacks[global_id] = list(frames)
            self.ids[(pid, int(local))] = global_id
        for t, tid, local, weight in batch.get("samples", []):
            global_id = self.ids.get((pid, int(local)))
            if global_id is not None:
                samples.append((float(t), pid, int(tid), global_id, float(weight)))

    def collisions(self) -> list[str]:
        """What the program's processes installed that a signal- or hook-based sampler would collide with."""
        notes = []
        for path in sorted(self.folder.glob("collisions-*.json")):
            try:
                found = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            pid = path.stem.split("-", 1)[1]
            notes.append(f"process {pid} installed {', '.join(map(str, found))}: the sampler uses no signal, timer or "
                         "trace hook, so it did not collide")
        return notes


def boot_folder() -> Path:
    """The folder whose ``sitecustomize`` starts the sampler."""
    return Path(sample_boot.__file__).resolve().parent


def record(options: RecordOptions, log: Callable[[str], None] = lambda _m: None,
           store: RecordingStore | None = None) -> RecordResult:
    """Run and record the program; returns what was stored (the program's status is in the recording)."""
    options.check()
    try:
        argv = program_argv(options.cwd, options.invocation, options.python)
    except LaunchError as exc:
        raise RecordingError(str(exc)) from None
    own_store = store is None
    store = store or RecordingStore(options.store)
    spool = Path(tempfile.mkdtemp(prefix="mantis-record-"))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(boot_folder()), *([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])])
    env[sampler.ENV_DIR], env[sampler.ENV_RATE], env[sampler.ENV_MODE] = str(spool), str(options.rate), options.mode
    recording = Recording(id=0, command=list(options.invocation), started=time.time(), ended=None, status="recording",
                          host=socket.gethostname(), rate=options.rate, interval=options.interval, mode=options.mode,
                          run_id=options.run_id)
    recording.id = store.begin(recording, os.getpid())
    notes: list[str] = []
    reader = _Spool(spool)
    stored_samples = stored_points = 0
    processes: set[int] = set()
    proc = None
    status, returncode = "failed", None
    try:
        try:
            proc = subprocess.Popen(argv, cwd=options.cwd, env=env, start_new_session=True)
        except OSError as exc:
            raise RecordingError(f"{argv[0]}: cannot start the program ({exc})") from None
        WATCHDOG.watch_group(proc.pid)
        recording.started = time.time()
        store.set_started(recording.id, recording.started)
        poller = ResourcePoller(proc.pid, run=str(recording.id), perf=options.perf)
        next_poll = time.monotonic()
        log(f"recording {recording.id}: pid {proc.pid}, {options.rate:g} Hz ({options.mode} time), resources every "
            f"{options.interval:g} s, into {store.path}")
        while True:
            finished = proc.poll() is not None
            points: list[Point] = []
            if not finished and time.monotonic() >= next_poll:
                points = poller.poll()
                next_poll += options.interval
            stacks, samples = reader.read()
            if stacks or samples or points:
                store.add_batch(recording.id, stacks, samples, points)
                stored_samples += len(samples)
                stored_points += len(points)
                processes.update(s[1] for s in samples)
            if finished:
                break
            time.sleep(min(INGEST_S, max(next_poll - time.monotonic(), 0.01)))
        returncode = proc.returncode
        stacks, samples = reader.read()  # what the processes wrote at exit
        if stacks or samples:
            store.add_batch(recording.id, stacks, samples, [])
            stored_samples += len(samples)
            processes.update(s[1] for s in samples)
        poller.close()
        processes |= poller.seen
        notes += reader.collisions()
        if poller.perf_note:
            notes.append(f"no perf events: {poller.perf_note}")
        if stored_samples == 0:
            notes.append("no sample: the program ended before the first sample, used no CPU (cpu mode), or is not a "
                         "Python program")
        status = "complete"
    except BaseException:
        status = "incomplete"
        raise
    finally:
        if proc is not None and proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                pass
            proc.wait()
        if proc is not None:
            WATCHDOG.forget_group(proc.pid)
        try:
            store.finish(recording.id, status, returncode, notes)
        except RecordingError:
            pass
        shutil.rmtree(spool, ignore_errors=True)
        if own_store:
            store.close()
    recording.status, recording.returncode, recording.notes = status, returncode, notes
    recording.ended = time.time()
    return RecordResult(recording, stored_samples, stored_points, len(processes))


def python_argv(invocation: Sequence[str]) -> bool:
    """Whether an invocation runs Python (a ``.py`` script or ``-m``): the sampler sees nothing else."""
    return bool(invocation) and (invocation[0] == "-m" or str(invocation[0]).endswith(".py"))
