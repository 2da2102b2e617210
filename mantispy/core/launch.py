"""Start a program (original or instrumented) as a subprocess, the way ``mantispy run`` and the
calibration of the overhead budget do.

A program invocation is the part of a command line after the interpreter: a script path (resolved
against the program root first, so ``app.py`` means ``ROOT/app.py``) or ``-m module``, followed by the
program's own arguments. The root is put first on ``PYTHONPATH`` so that ``-m`` and the program's own
imports find the instrumented copy, not an installed original.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .watchdog import WATCHDOG

FEATURES_ENV = "MANTIS_FEATURES_OUT"
ROOT_PID_ENV = "MANTIS_ROOT_PID"


class LaunchError(Exception):
    """The invocation names nothing that can run."""


@dataclass
class Measurement:
    """One finished run."""

    returncode: int
    wall_s: float
    cpu_s: float  # user + sys of the child and its children
    max_rss_kb: int  # peak resident set size of the program's own process (see PeakRssSampler)


def program_argv(root: Path, invocation: Sequence[str], python: str | None = None) -> list[str]:
    """The full argv for ``invocation`` run against ``root``."""
    if not invocation:
        raise LaunchError("no program given: pass a script path or -m MODULE after --")
    python = python or sys.executable
    first, rest = invocation[0], list(invocation[1:])
    if first == "-m":
        if not rest:
            raise LaunchError("-m needs a module name")
        return [python, "-m", *rest]
    script = Path(first)
    if not script.is_absolute() and (root / script).is_file():
        script = root / script
    if not script.is_file():
        raise LaunchError(f"{first}: no such script under {root} or the current folder; give a path relative to {root}")
    return [python, str(script), *rest]


def program_env(root: Path, features_out: Path | None, extra_path: Sequence[Path] = ()) -> dict[str, str]:
    """Environment with ``root`` first on PYTHONPATH and the features output set (or cleared)."""
    env = dict(os.environ)
    paths = [str(root), *map(str, extra_path)]
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env.pop(ROOT_PID_ENV, None)
    if features_out is None:
        env.pop(FEATURES_ENV, None)
    else:
        env[FEATURES_ENV] = str(features_out)
    return env


class PeakRssSampler:
    """Samples a running process's peak resident set size (``VmHWM`` in ``/proc/PID/status``).

    ``ru_maxrss`` from ``wait4`` cannot be used: Linux carries the high-water mark of the address space a
    child had before ``exec`` (a copy of the profiler, tens of MB) into the child's figure. VmHWM belongs
    to the address space ``exec`` created and only grows, so the last sample is the peak up to then;
    growth in the final sampling interval before exit can be missed.
    """

    def __init__(self, pid: int, interval: float = 0.005, max_interval: float = 0.05) -> None:
        self.pid = pid
        self.peak_kb = 0
        self._interval, self._max_interval = interval, max_interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"rss-{pid}", daemon=True)
        self._thread.start()

    def _sample(self) -> bool:
        try:
            with open(f"/proc/{self.pid}/status", "rb") as fh:
                for line in fh:
                    if line.startswith(b"VmHWM:"):
                        self.peak_kb = max(self.peak_kb, int(line.split()[1]))
                        return True
        except (OSError, ValueError):
            return False
        return True  # a zombie has no VmHWM line: keep the last sample

    def _run(self) -> None:
        interval = self._interval
        while not self._stop.is_set() and self._sample():
            self._stop.wait(interval)
            interval = min(interval * 1.5, self._max_interval)

    def stop(self) -> int:
        """Stop sampling (call before the process is reaped) and return the peak in KiB."""
        self._stop.set()
        self._thread.join()
        return self.peak_kb


def run_measured(argv: Sequence[str], env: dict[str, str], cwd: Path | None = None, quiet: bool = False) -> Measurement:
    """Run to completion and measure wall time, CPU time (user+sys) and peak RSS of the child."""
    stdout = subprocess.DEVNULL if quiet else None
    start = time.perf_counter()
    proc = subprocess.Popen(list(argv), env=env, cwd=cwd, stdout=stdout, stderr=stdout)
    WATCHDOG.watch_process(proc.pid)
    sampler = PeakRssSampler(proc.pid)
    try:
        os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)  # exited, not yet reaped: pid still ours
        wall = time.perf_counter() - start
        peak = sampler.stop()
        _, status, usage = os.wait4(proc.pid, 0)
    except BaseException:
        sampler.stop()
        proc.kill()
        proc.wait()
        raise
    finally:
        WATCHDOG.forget_process(proc.pid)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return Measurement(
        returncode=proc.returncode,
        wall_s=wall,
        cpu_s=usage.ru_utime + usage.ru_stime,
        max_rss_kb=peak,
    )

