"""Children never outlive mantispy: a watchdog process that ends them when mantispy ends, however it ends.

Each process that starts programs (the CLI, a joblib or Dask worker) starts one watchdog on first use:
``python -m mantispy.core.watchdog``, in a session of its own, reading its standard input. Before a child
runs, mantispy writes ``+g PGID`` (a process group: a profiled program in its own session, with whatever
it starts) or ``+p PID`` (one process: a program sharing mantispy's terminal); when the child is done,
``-g PGID`` / ``-p PID``. When mantispy exits (normally, by an exception, SIGINT, SIGTERM, or SIGKILL,
which nothing inside mantispy could catch), the kernel closes the pipe; the watchdog reads end-of-file,
sends SIGTERM to every child still registered, SIGKILL a moment later to those still alive, and exits.

Standard library only.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from typing import Any

GRACE_S = 1.0
"""Between SIGTERM and SIGKILL when the watchdog ends what is left."""


class Watchdog:
    """The client side: one watchdog process per mantispy process, started on first use."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._proc: subprocess.Popen | None = None
        self._owner = 0
        self._watched: set[tuple[str, int]] = set()

    def _pipe(self):
        if self._proc is None or self._owner != os.getpid():  # a forked child starts its own
            self._proc = subprocess.Popen([sys.executable, "-m", "mantispy.core.watchdog"], stdin=subprocess.PIPE,
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                          start_new_session=True, close_fds=True)
            self._owner = os.getpid()
        return self._proc.stdin

    def _say(self, line: str) -> None:
        with self._lock:
            try:
                pipe = self._pipe()
                pipe.write(line.encode() + b"\n")
                pipe.flush()
            except OSError:  # the watchdog is gone: nothing more it can do for us
                pass

    def start(self) -> None:
        """Start the watchdog process now (it starts on first use otherwise): before a timed run, so that
        its start-up is not timed."""
        with self._lock:
            try:
                self._pipe()
            except OSError:
                pass

    def watch_group(self, pgid: int) -> None:
        """End the process group ``pgid`` if mantispy ends before :meth:`forget_group`."""
        self._watched.add(("g", pgid))
        self._say(f"+g {pgid}")

    def forget_group(self, pgid: int) -> None:
        """The group is done."""
        self._watched.discard(("g", pgid))
        self._say(f"-g {pgid}")

    def watch_process(self, pid: int) -> None:
        """End the process ``pid`` if mantispy ends before :meth:`forget_process`."""
        self._watched.add(("p", pid))
        self._say(f"+p {pid}")

    def forget_process(self, pid: int) -> None:
        """The process is done."""
        self._watched.discard(("p", pid))
        self._say(f"-p {pid}")

    def end_all(self) -> None:
        """End every child still watched, now (mantispy is stopping: an interrupt, an error). Their runs
        return as killed, so the threads waiting for them finish and mantispy can exit."""
        for entry in list(self._watched):
            _signal(*entry, signal.SIGKILL)


WATCHDOG = Watchdog()
"""This process's watchdog."""


def run_watched(argv: list[str], *, timeout: float | None = None, capture_output: bool = False,
                own_group: bool = False, **popen: Any) -> subprocess.CompletedProcess:
    """:func:`subprocess.run` whose child is registered with this process's watchdog while it runs: it
    ends when mantispy ends, however mantispy ends. Raises :class:`subprocess.TimeoutExpired` after
    killing a child that runs past ``timeout``. With ``own_group`` the child starts a session of its own
    and the whole group is watched, so what it starts (a cluster's worker processes) ends with it too:
    whatever of the group is still running when the child ends is ended then."""
    if capture_output:
        popen.update(stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if own_group:
        popen["start_new_session"] = True
    with subprocess.Popen(argv, **popen) as proc:
        if own_group:
            WATCHDOG.watch_group(proc.pid)
        else:
            WATCHDOG.watch_process(proc.pid)
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        except BaseException:
            proc.kill()
            proc.communicate()
            raise
        finally:
            if own_group:
                _signal("g", proc.pid, signal.SIGKILL)
                WATCHDOG.forget_group(proc.pid)
            else:
                WATCHDOG.forget_process(proc.pid)
    return subprocess.CompletedProcess(argv, proc.returncode, stdout, stderr)


def _signal(kind: str, target: int, signum: int) -> bool:
    """Send ``signum``; False when the target is gone."""
    try:
        if kind == "g":
            os.killpg(target, signum)
        else:
            os.kill(target, signum)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _alive(kind: str, target: int) -> bool:
    return _signal(kind, target, 0)


def serve(lines) -> None:
    """Keep the registry from ``lines`` until they end, then end what is still registered."""
    watched: set[tuple[str, int]] = set()
    for line in lines:
        parts = line.split()
        if len(parts) != 2 or parts[0] not in ("+g", "-g", "+p", "-p") or not parts[1].isdigit():
            continue
        entry = (parts[0][1], int(parts[1]))
        if parts[0][0] == "+":
            watched.add(entry)
        else:
            watched.discard(entry)
    alive = [entry for entry in watched if _signal(*entry, signal.SIGTERM)]
    deadline = time.monotonic() + GRACE_S
    while alive and time.monotonic() < deadline:
        time.sleep(0.05)
        alive = [entry for entry in alive if _alive(*entry)]
    for entry in alive:
        _signal(*entry, signal.SIGKILL)


def main() -> None:
    """``python -m mantispy.core.watchdog``: the watchdog process."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C meant for mantispy must not end its watchdog first
    serve(line.decode("ascii", "replace") for line in sys.stdin.buffer)


if __name__ == "__main__":
    main()
