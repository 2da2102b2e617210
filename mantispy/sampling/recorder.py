"""``mantispy record``: run a program with the stack sampler in every Python process of its tree, poll its
resources, and store both, batch by batch, while it runs.

The program runs unchanged (its own interpreter, argv, stdin, stdout, stderr and exit status): the sampler
starts from a ``sitecustomize`` bootstrap (:mod:`mantispy.runtime.sample_boot`) put first on
``PYTHONPATH``, and writes batches into a private spool folder, which this recorder reads every quarter
second into the store, one transaction per batch, together with the resource points
(:mod:`.resources`). A program that installed its own SIGPROF handler, timer or profiler is noted with
the recording (the built-in sampler uses none of them, so nothing collides; ``--sampler signal`` samples
the main thread on SIGPROF, and falls back to the built-in way where the program has a handler of its own).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from mantispy.core.launch import LaunchError, program_argv
from mantispy.core.watchdog import WATCHDOG
from mantispy.runtime import sample_boot, sampler

from . import pyspy
from .interpreter import library_paths_of
from .resources import ResourcePoller
from .spool import SpoolReader
from .store import RecordingError, RecordingStore
from .types import Point, Recording

DEFAULT_STORE = Path(".mantis") / "record.db"
SAMPLERS = ("builtin", "signal", "py-spy")
INGEST_S = 0.25


@dataclass
class RecordOptions:
    """What ``mantispy record`` was asked."""

    invocation: list[str]  # a script path or -m MODULE, then the program's arguments
    store: Path = DEFAULT_STORE
    rate: float = 100.0
    interval: float = 1.0
    mode: str = "cpu"
    sampler: str = "builtin"  # or signal (the built-in one, its main thread sampled on SIGPROF), or py-spy
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
        if self.sampler not in SAMPLERS:
            raise RecordingError(f"--sampler {self.sampler}: choose builtin, signal or py-spy")
        if self.sampler == "signal" and self.mode != "cpu":
            raise RecordingError("--sampler signal samples on the main thread's CPU clock: use it with --mode cpu")


@dataclass
class RecordResult:
    """What one recording stored."""

    recording: Recording
    samples: int
    points: int
    processes: int


def boot_folder() -> Path:
    """The folder whose ``sitecustomize`` starts the sampler."""
    return Path(sample_boot.__file__).resolve().parent


def sampler_env(pythonpath: str | None, spool: Path, rate: float, mode: str, name: str = "builtin") -> dict[str, str]:
    """The environment that makes every Python process of a program sample itself into ``spool`` (``name``:
    builtin, or signal for the main thread sampled on SIGPROF)."""
    return {"PYTHONPATH": os.pathsep.join([str(boot_folder()), *([pythonpath] if pythonpath else [])]),
            sampler.ENV_DIR: str(spool), sampler.ENV_RATE: str(rate), sampler.ENV_MODE: mode,
            sampler.ENV_TRIGGER: "signal" if name == "signal" else "thread"}


def store_sampled_run(store: RecordingStore, run_id: int, command: list[str], sampled: dict) -> int:
    """Store what a campaign run sampled (``RunRecord.sampled``) as a recording of that run; returns its id."""
    recording = Recording(id=0, command=command, started=sampled["started"], ended=None, status="recording",
                          host=socket.gethostname(), rate=sampled["rate"], interval=sampled["interval"],
                          mode=sampled["mode"], sampler=str(sampled.get("sampler", "builtin")), run_id=run_id,
                          library=list(sampled.get("library", [])))
    rid = store.begin(recording, os.getpid())
    points = [Point(*row) for row in sampled["points"]]
    store.add_batch(rid, {int(k): v for k, v in sampled["stacks"].items()},
                    [tuple(row) for row in sampled["samples"]], points)
    store.finish(rid, "complete", sampled.get("returncode"), list(sampled.get("notes", [])))
    return rid


SEGFAULT_NOTE = ("the program died of a segmentation fault: on Python 3.11 an in-process sampler that reads the "
                 "program's frames has caused such crashes where collections run Python code (__del__ in "
                 "reference cycles; README, Limits); record it again with --sampler py-spy, or on Python 3.12+")
"""The note a recording gets when its Python 3.11 program died of SIGSEGV under the built-in sampler."""


def _python_minor(python: str) -> tuple[int, int] | None:
    """(major, minor) of the interpreter ``python``, or None if it cannot say."""
    try:
        said = subprocess.run([python, "-c", "import sys; print(*sys.version_info[:2])"], capture_output=True,
                              text=True, timeout=30).stdout.split()
        return (int(said[0]), int(said[1])) if len(said) == 2 else None
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return None


def record(options: RecordOptions, log: Callable[[str], None] = lambda _m: None,
           store: RecordingStore | None = None) -> RecordResult:
    """Run and record the program; returns what was stored (the program's status is in the recording)."""
    options.check()
    options.cwd = Path(options.cwd).resolve()
    try:
        argv = program_argv(options.cwd, options.invocation, options.python)
    except LaunchError as exc:
        raise RecordingError(str(exc)) from None
    py_spy = pyspy.find() if options.sampler == "py-spy" else None
    own_store = store is None
    store = store or RecordingStore(options.store)
    recording = Recording(id=0, command=list(options.invocation), started=time.time(), ended=None, status="recording",
                          host=socket.gethostname(), rate=options.rate, interval=options.interval, mode=options.mode,
                          sampler=options.sampler, run_id=options.run_id, cwd=str(options.cwd),
                          library=list(library_paths_of(argv[0])))
    try:
        recording.id = store.begin(recording, os.getpid())
    except RecordingError:
        if own_store:
            store.close()
        raise
    spool = Path(tempfile.mkdtemp(prefix="mantis-record-"))
    env = dict(os.environ)
    if py_spy is None:
        env.update(sampler_env(env.get("PYTHONPATH"), spool, options.rate, options.mode, options.sampler))
    spy: subprocess.Popen | None = None
    spy_started = 0.0
    notes: list[str] = []
    reader = SpoolReader(spool)
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
        if py_spy is not None:
            spy_started = time.time()
            with open(spool / "py-spy.log", "wb") as spy_log:
                spy = subprocess.Popen(pyspy.command(py_spy, proc.pid, spool / "trace.json", options.rate, options.mode),
                                       stdout=subprocess.DEVNULL, stderr=spy_log, start_new_session=True)
            WATCHDOG.watch_group(spy.pid)
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
            try:  # returns as soon as the program ends
                proc.wait(timeout=min(INGEST_S, max(next_poll - time.monotonic(), 0.01)))
            except subprocess.TimeoutExpired:
                pass
        returncode = proc.returncode
        if spy is None and returncode == -signal.SIGSEGV and _python_minor(argv[0]) == (3, 11):
            notes.append(SEGFAULT_NOTE)
        if spy is not None:
            try:
                spy.wait(timeout=60)
            except subprocess.TimeoutExpired:
                spy.kill()
                spy.wait()
            said = (spool / "py-spy.log").read_text(encoding="utf-8", errors="replace")
            stacks, samples = pyspy.read_trace(spool / "trace.json", spy_started)
            if not samples and pyspy.refusal(said):
                notes.append(pyspy.PTRACE_FIX)
                raise RecordingError(pyspy.PTRACE_FIX)
            if not samples and spy.returncode:
                notes.append("py-spy: " + (said.strip().splitlines() or ["failed"])[-1][:300])
        else:
            stacks, samples = reader.read()  # what the processes wrote at exit
        if stacks or samples:
            store.add_batch(recording.id, stacks, samples, [])
            stored_samples += len(samples)
            processes.update(s[1] for s in samples)
        poller.close()
        processes |= poller.seen
        notes += reader.collisions()
        notes += reader.trigger_notes()
        if options.mode == "cpu" and "wall" in reader.modes:
            notes.append("sampled in wall mode: this platform gives threads no CPU clock of their own")
        if poller.perf_note:
            notes.append(f"no perf events: {poller.perf_note}")
        if stored_samples == 0:
            notes.append("no sample: the program ended before the first sample, used no CPU (cpu mode), or is not a "
                         "Python program")
        status = "complete"
    except RecordingError:
        status = "failed"
        raise
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
        if spy is not None:
            if spy.poll() is None:
                spy.kill()
                spy.wait()
            WATCHDOG.forget_group(spy.pid)
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
