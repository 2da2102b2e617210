"""Client of a warm feature evaluator (``python evaluate.py --mantis-serve``; see the emitted evaluate.py).

The server imports the sliced program's modules once, then runs each input in a forked child of that
pre-initialised process, so an evaluation costs the entry's own work, not an interpreter start-up and the
program's imports. Standard library only: predictor packages ship a copy of this file as ``_warm.py``.

A :class:`WarmEvaluator` serialises requests (one lock), restarts a server that died, and kills the whole
server session when a request runs past its timeout.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import threading
import time


class WarmError(Exception):
    """The evaluator failed, or ran past its timeout (``timed_out``)."""

    def __init__(self, message: str, timed_out: bool = False) -> None:
        super().__init__(message)
        self.timed_out = timed_out


class WarmEvaluator:
    """One warm server for one evaluator folder; ``evaluate`` is thread-safe."""

    def __init__(self, evaluator_dir: str, python: str | None = None, start_timeout: float = 300.0) -> None:
        self.evaluator_dir = os.path.abspath(str(evaluator_dir))
        self.python = python or sys.executable
        self.start_timeout = start_timeout
        self._lock = threading.Lock()
        self._proc: subprocess.Popen | None = None
        self._buffer = b""

    # -------------------------------------------------------------- the server process
    def _start(self) -> None:
        self._proc = subprocess.Popen(
            [self.python, os.path.join(self.evaluator_dir, "evaluate.py"), "--mantis-serve"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True)
        self._buffer = b""
        reply = self._read_line(self.start_timeout)
        if reply is None or not reply.get("ready"):
            self.close()
            raise WarmError("the warm evaluator did not start" + (f": {reply}" if reply else ""))

    def _read_line(self, timeout: float | None) -> dict | None:
        assert self._proc is not None and self._proc.stdout is not None
        fd = self._proc.stdout.fileno()
        deadline = None if timeout is None else time.monotonic() + timeout
        while b"\n" not in self._buffer:
            wait = None if deadline is None else max(deadline - time.monotonic(), 0.0)
            ready, _, _ = select.select([fd], [], [], wait)
            if not ready:
                raise TimeoutError
            chunk = os.read(fd, 65536)
            if not chunk:
                return None
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return json.loads(line)

    def close(self) -> None:
        """Stop the server (and any evaluation it is running)."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        try:  # the server's unconfined parent ends the confined server and removes its private folder
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=5)
        except (ProcessLookupError, PermissionError, subprocess.TimeoutExpired):
            pass
        try:  # and whatever is left of its session
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        proc.wait()
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                stream.close()

    def start(self) -> None:
        """Start the server now (otherwise the first ``evaluate`` does)."""
        with self._lock:
            if self._proc is None or self._proc.poll() is not None:
                self._start()

    # -------------------------------------------------------------- requests
    def evaluate(self, argv=None, kwargs=None, cwd: str | None = None,
                 timeout: float | None = None) -> tuple[dict, float]:
        """({feature id: value}, seconds of the round trip) for one input; raises WarmError."""
        request = (json.dumps({"argv": list(argv or ()), "kwargs": kwargs or {},
                               "cwd": os.path.abspath(cwd or os.getcwd())}) + "\n").encode()
        with self._lock:
            for attempt in (1, 2):
                if self._proc is None or self._proc.poll() is not None:
                    self._start()
                assert self._proc is not None and self._proc.stdin is not None
                started = time.perf_counter()
                try:
                    self._proc.stdin.write(request)
                    self._proc.stdin.flush()
                    reply = self._read_line(timeout)
                except TimeoutError:
                    self.close()
                    raise WarmError(f"evaluator ran longer than {timeout:.3g} s", timed_out=True) from None
                except (BrokenPipeError, OSError):
                    reply = None
                seconds = time.perf_counter() - started
                if reply is not None:
                    break
                self.close()  # the server died: start a new one, once
            else:
                raise WarmError("the warm evaluator died twice on this input")
        if "error" in reply:
            raise WarmError(str(reply["error"]))
        return reply["values"], seconds

    def __enter__(self) -> WarmEvaluator:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self) -> None:  # pragma: no cover - best effort at interpreter exit
        try:
            self.close()
        except Exception:
            pass
