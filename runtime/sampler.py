"""The built-in stack sampler: what every thread of a Python process is running, many times a second.

Standard library only. A daemon thread wakes ``rate`` times a second, reads every other thread's
current frame (``sys._current_frames``) and records one *sample* per thread: the wall-clock timestamp,
the process and thread ids, the stack (interned: each distinct stack is written once, as its frames from
the outermost) and a weight in seconds.

* ``cpu`` mode (the default): a thread's weight is the CPU time it used since its previous sample, read
  from its own CPU clock (``pthread_getcpuclockid``); a thread that used none (waiting, sleeping) gives
  no sample. The flame graph is where CPU time went.
* ``wall`` mode: every thread gives a sample each tick, weighted by the time since the previous tick
  (also what ``cpu`` mode falls back to where threads have no CPU clock of their own; each batch says
  which mode it was taken in).

A thread whose stack changed since the previous tick moved on at some unknown moment inside the
interval: half the interval's weight goes to the stack it had, half to the stack it has (an unbiased
split; charging all of it to the new stack would shift a function's last interval to its successor).

Time a thread spent collecting garbage (``gc.callbacks`` time each collection on the collecting
thread's clock) is split off the weight of its next sample and recorded under that sample's stack with
one more frame, :data:`GC_FRAME` (``(garbage collection)`` in the file ``<gc>``): a gen-2 collection of a
large heap holds the GIL for 0.1 s and more, and would otherwise be charged to whatever function the
sampler found when it got the GIL back. While it samples, the interpreter's switch interval is at most
:data:`SWITCH_S` (restored at exit): with the default 5 ms, the sampler's thread waited 0.35-0.42 s for
the GIL while sqlparse's grouping ran (Python 3.11-3.13), and those stretches went unsampled.

Both only from Python 3.12 (:data:`GC_SAFE`). On 3.11, Python code that runs inside a collection (the
timing callback) while this thread walks the program's frames can crash the interpreter with a
segmentation fault (CPython 3.11 can make frame objects for frames that are being set up or torn down):
benchmarks/stress_sampler.py, a collection every few allocations, crashed 3.11.7 with the callback and
never 3.12.1 or 3.13.0 (RESULTS.md, "Does the sampler crash the sampled program?"). So on 3.11 the sampler
keeps the program's switch interval and adds no callback, and a collection goes to the function sampled
next. And on 3.11 no automatic collection starts while the sampler reads the frames
(:class:`_collections_held`): a collection that ran ``__del__`` methods in the program's thread while the
sampler held its frame objects crashed the same stress when the program switched threads every 20 us.

No signal, timer or trace hook is used, so a program with its own ``SIGPROF``/``ITIMER_PROF`` handler, a
profiler (``sys.setprofile``, ``sys.settrace``, ``sys.monitoring``) or coverage runs exactly as without
the sampler; :func:`collisions` says which of them the program installed (they are recorded with the
run, and need no fallback). The thread takes the GIL to read the frames, so a thread inside one long C
call is seen when the call returns, with its CPU time up to then.

Samples go to ``<dir>/samples-<pid>.jsonl``, one JSON line per batch (every ``flush_s`` and at exit):
``{"pid", "command", "stacks": {id: [frame, ...]}, "samples": [[t, tid, stack_id, weight], ...]}``,
frames as ``"qualname\\tfile\\tline"`` (the function's first line). A forked child (multiprocessing's
fork) starts its own sampler and file; spawned Python processes start one through the bootstrap
(:mod:`mantispy.runtime.sample_boot`) when ``MANTIS_SAMPLE_DIR`` is set in their environment.
"""

from __future__ import annotations

import atexit
import gc
import os
import sys
import threading
import time

ENV_DIR = "MANTIS_SAMPLE_DIR"
ENV_RATE = "MANTIS_SAMPLE_RATE"
ENV_MODE = "MANTIS_SAMPLE_MODE"
MODES = ("cpu", "wall")
MIN_RATE, MAX_RATE = 1.0, 1000.0
FLUSH_S = 0.5
SWITCH_S = 0.001  # the largest switch interval (seconds) while sampling: the sampler's thread gets the GIL in time
GC_FRAME = "(garbage collection)\t<gc>\t0"  # the frame garbage collection is recorded under
GC_SAFE = sys.version_info >= (3, 12)  # collections timed, switch interval lowered (see the module docstring)


class Sampler:
    """One process's sampler thread (see the module docstring)."""

    def __init__(self, directory: str, rate: float = 100.0, mode: str = "cpu", flush_s: float = FLUSH_S) -> None:
        self.directory = directory
        self.rate = min(max(float(rate), MIN_RATE), MAX_RATE)
        self.mode = mode if mode in MODES else "cpu"
        if self.mode == "cpu" and not hasattr(time, "pthread_getcpuclockid"):  # no per-thread CPU clocks here
            self.mode = "wall"
        self.flush_s = flush_s
        self.pid = os.getpid()
        self._stacks: dict[tuple, int] = {}
        self._keys: list[tuple] = []  # stack id -> its key (code ids innermost first, or ("gc", stack id))
        self._new_stacks: dict[int, list[str]] = {}
        self._samples: list[list] = []
        self._cpu: dict[int, int] = {}
        self._previous: dict[int, int] = {}
        self._names: dict = {}  # id(code) -> its frame name
        self._kept: list = []  # the code objects whose ids are keys
        self._clocks: dict[int, int] = {}
        self._gc_ns: dict[int, int] = {}  # thread -> nanoseconds it spent collecting garbage so far
        self._gc_seen: dict[int, int] = {}  # thread -> its _gc_ns when it was last sampled
        self._gc_started: dict[int, int] = {}
        self._gc_stacks: dict[int, int] = {}  # stack id -> the id of that stack with GC_FRAME on top
        self._clock = time.thread_time_ns if self.mode == "cpu" else time.perf_counter_ns
        self._switch: float | None = None
        self._stopping: int | None = None  # the thread inside stop(), once it is called
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._path = os.path.join(directory, f"samples-{self.pid}.jsonl")

    def start(self) -> None:
        """Start sampling in a daemon thread (from 3.12 timing garbage collections, the switch interval
        lowered)."""
        if GC_SAFE:  # first: at a collection's end the GIL may change hands in its callbacks
            gc.callbacks.insert(0, self._on_gc)
        if GC_SAFE and sys.getswitchinterval() > SWITCH_S:
            self._switch = sys.getswitchinterval()
            sys.setswitchinterval(SWITCH_S)
        self._thread = threading.Thread(target=self._run, name="mantispy-sampler", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop sampling and write what is left (called at exit). Collections stop being timed first: one
        while this waits for the sampler's thread is the sampler's exit, not the program's; and what the
        calling thread did since its last sample (a collection included) goes to the stack it had then."""
        self._stopping = threading.get_ident()
        self.detach()
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread() and thread.is_alive():
            thread.join(timeout=2)
        self.flush()

    def detach(self) -> None:
        """Stop timing garbage collections and give the program its switch interval back (unless it set
        one of its own meanwhile)."""
        try:
            gc.callbacks.remove(self._on_gc)
        except ValueError:
            pass
        if self._switch is not None and sys.getswitchinterval() == SWITCH_S:
            sys.setswitchinterval(self._switch)
        self._switch = None

    def _on_gc(self, phase: str, info: dict) -> None:
        """gc.callbacks: time each collection on the clock the weights are read from."""
        try:
            tid = threading.get_ident()
            if phase == "start":
                self._gc_started[tid] = self._clock()
            else:
                began = self._gc_started.pop(tid, None)
                if began is not None:
                    self._gc_ns[tid] = self._gc_ns.get(tid, 0) + self._clock() - began
        except Exception:  # noqa: BLE001 - sampling must never break the program
            pass

    def _run(self) -> None:
        period = 1.0 / self.rate
        me = threading.get_ident()
        last_flush = last = time.monotonic()
        next_tick = last + period
        while not self._stop.is_set():
            delay = next_tick - time.monotonic()
            if delay > 0 and self._stop.wait(delay):
                break
            now = time.monotonic()
            next_tick += period
            if next_tick < now:  # fell behind (a long C call held the GIL): do not burst to catch up
                next_tick = now + period
            self.sample(me, now - last)
            last = now
            if now - last_flush >= self.flush_s:
                self.flush()
                last_flush = now

    def sample(self, me: int, elapsed: float) -> None:
        """Record one sample of every thread but ``me`` (``elapsed``: wall seconds since the last tick). On
        Python 3.11 no automatic collection starts while the frames are read (see :func:`_collections_held`)."""
        if GC_SAFE:
            self._sample(me, elapsed)
            return
        with _collections_held():
            self._sample(me, elapsed)

    def _sample(self, me: int, elapsed: float) -> None:
        stamp = time.time()
        frames = sys._current_frames()
        rows = []
        previous = self._previous
        for tid, frame in frames.items():
            if tid == me:
                continue
            in_callback = frame.f_code is _ON_GC_CODE  # the GIL changed hands as a collection began or ended
            program_frame = frame.f_back if in_callback else frame
            if program_frame is None:
                continue
            before = previous.get(tid)
            if tid == self._stopping:  # inside stop(): the time since its last sample was the program's
                if before is None:
                    continue
                stack = before
            else:
                stack = self._stack_id(program_frame)
            previous[tid] = stack
            if self.mode == "cpu":
                weight = self._cpu_delta(tid)
                if weight <= 0:
                    continue
            else:
                weight = elapsed
            collected = self._gc_ns.get(tid, 0)
            pending = collected - self._gc_seen.get(tid, 0)
            began = self._gc_started.get(tid) if in_callback else None
            if began is not None:  # a collection just ended and its callback has not counted it yet: count it now
                running = max(self._now(tid) - began, 0)
                pending += running
                collected += running
            self._gc_seen[tid] = collected
            gc_part = min(max(pending, 0) / 1e9, weight)
            if gc_part > 0:
                rows.append([stamp, tid, self._gc_stack_id(stack), gc_part])
                weight -= gc_part
                if weight <= 0:
                    continue
            if before is None or before == stack:
                rows.append([stamp, tid, stack, weight])
            else:  # the thread moved on somewhere inside the interval: half to where it was, half to where it is
                rows.append([stamp, tid, before, weight / 2])
                rows.append([stamp, tid, stack, weight / 2])
        del frames
        if rows:
            with self._lock:
                self._samples.extend(rows)

    def _now(self, tid: int) -> int:
        """Nanoseconds on the clock ``tid``'s garbage collections are timed with (its CPU clock in cpu mode)."""
        if self.mode != "cpu":
            return time.perf_counter_ns()
        clock = self._clocks.get(tid)
        try:
            return time.clock_gettime_ns(clock) if clock is not None else 0
        except OSError:
            return 0

    def _cpu_delta(self, tid: int) -> float:
        clock = self._clocks.get(tid)
        try:
            if clock is None:
                clock = self._clocks[tid] = time.pthread_getcpuclockid(tid)
            used = time.clock_gettime_ns(clock)
        except (OSError, OverflowError, AttributeError):  # the thread ended, or no per-thread clocks here
            self._clocks.pop(tid, None)
            return 0.0
        previous = self._cpu.get(tid)
        self._cpu[tid] = used
        return (used - previous) / 1e9 if previous is not None else used / 1e9

    def _stack_id(self, frame) -> int:
        codes = []
        while frame is not None:
            codes.append(frame.f_code)
            frame = frame.f_back
        key = tuple(map(id, codes))  # ids: a code object's hash covers its whole contents
        found = self._stacks.get(key)
        if found is None:
            found = self._stacks[key] = len(self._stacks)
            self._keys.append(key)
            names = self._names
            self._new_stacks[found] = [names.get(id(code)) or names.setdefault(id(code), _frame_name(code))
                                       for code in reversed(codes)]
            self._kept.extend(codes)  # alive while their ids are keys
        return found

    def _gc_stack_id(self, stack: int) -> int:
        """The id of ``stack`` with :data:`GC_FRAME` on top (interned like any stack)."""
        found = self._gc_stacks.get(stack)
        if found is None:
            key = ("gc", stack)
            found = self._gc_stacks[stack] = self._stacks[key] = len(self._stacks)
            self._keys.append(key)
            below = self._new_stacks.get(stack) or [self._names[code] for code in reversed(self._keys[stack])]
            self._new_stacks[found] = [*below, GC_FRAME]
        return found

    def flush(self) -> None:
        """Append the samples and new stacks gathered since the last flush as one JSON line."""
        with self._lock:
            samples, self._samples = self._samples, []
            stacks, self._new_stacks = self._new_stacks, {}
        if not samples and not stacks:
            return
        import json

        line = json.dumps({"pid": self.pid, "command": _command(), "mode": self.mode, "rate": self.rate,
                           "stacks": stacks, "samples": samples}, separators=(",", ":"))
        try:
            with open(self._path, "a", encoding="utf-8") as handle:
                handle.write(line + "\n")
        except OSError:  # the recording's folder is gone: the recorder ended
            pass


_ON_GC_CODE = Sampler._on_gc.__code__


class _collections_held:
    """No automatic garbage collection starts inside the block (the first threshold is 0 there), and the
    program's thresholds come back at its end unless the program set others meanwhile. For Python 3.11:
    when the GIL changes hands while the sampler holds the program's frame objects, a collection in the
    program's thread that runs ``__del__`` methods can crash the interpreter (benchmarks/stress_sampler.py).
    ``gc.disable`` is not used: a program that disables collection meanwhile would find it enabled again."""

    def __enter__(self) -> None:
        self._saved = gc.get_threshold()
        self._held = (0, *self._saved[1:]) if self._saved[0] else None
        if self._held is not None:
            gc.set_threshold(*self._held)

    def __exit__(self, *exc: object) -> None:
        if self._held is not None and gc.get_threshold() == self._held:
            gc.set_threshold(*self._saved)


def _frame_name(code) -> str:
    name = getattr(code, "co_qualname", code.co_name)
    return f"{name}\t{code.co_filename}\t{code.co_firstlineno}"


def _command() -> str:
    return " ".join(sys.argv)[:300] if getattr(sys, "argv", None) else sys.executable


def collisions() -> list[str]:
    """What the program installed that a signal- or hook-based sampler would collide with."""
    found = []
    try:
        import signal

        if hasattr(signal, "SIGPROF") and signal.getsignal(signal.SIGPROF) not in (signal.SIG_DFL, None):
            found.append("a SIGPROF handler")
        if hasattr(signal, "getitimer") and signal.getitimer(signal.ITIMER_PROF) != (0.0, 0.0):
            found.append("an ITIMER_PROF timer")
    except (ValueError, OSError):
        pass
    if sys.getprofile() is not None:
        found.append("a profile hook (sys.setprofile)")
    if sys.gettrace() is not None:
        found.append("a trace hook (sys.settrace)")
    monitoring = getattr(sys, "monitoring", None)
    if monitoring is not None:
        for tool in range(6):
            if monitoring.get_tool(tool):
                found.append(f"sys.monitoring tool {tool} ({monitoring.get_tool(tool)})")
    return found


_ACTIVE: list[Sampler] = []


def start_from_environment() -> Sampler | None:
    """Start this process's sampler when ``MANTIS_SAMPLE_DIR`` names a folder (the bootstrap calls it)."""
    directory = os.environ.get(ENV_DIR)
    if not directory or not os.path.isdir(directory) or _ACTIVE:
        return None
    try:
        rate = float(os.environ.get(ENV_RATE, "100"))
    except ValueError:
        rate = 100.0
    sampler = Sampler(directory, rate, os.environ.get(ENV_MODE, "cpu"))
    sampler.start()
    _ACTIVE.append(sampler)
    atexit.register(_stop_all)
    os.register_at_fork(after_in_child=_restart_in_child)
    return sampler


def _stop_all() -> None:
    for sampler in _ACTIVE:
        sampler.stop()
        _write_collisions(sampler)


def _write_collisions(sampler: Sampler) -> None:
    found = collisions()
    if not found:
        return
    import json

    try:
        with open(os.path.join(sampler.directory, f"collisions-{sampler.pid}.json"), "w", encoding="utf-8") as handle:
            json.dump(found, handle)
    except OSError:
        pass


def _restart_in_child() -> None:
    """After fork: the parent's sampler thread did not come along; start this process's own. A
    multiprocessing child leaves through ``os._exit`` after running its ``Finalize`` registry (which
    ``Process._bootstrap`` clears and refills through the after-forkers), so the last batch is written
    from there."""
    if not _ACTIVE:
        return
    parent = _ACTIVE.pop()
    parent.detach()
    sampler = Sampler(parent.directory, parent.rate, parent.mode, parent.flush_s)
    sampler.start()
    _ACTIVE.append(sampler)
    mp_util = sys.modules.get("multiprocessing.util")
    if mp_util is not None:
        try:
            mp_util.register_after_fork(_TOKEN, _finalize_in_child)
            _finalize_in_child(_TOKEN)
        except Exception:  # noqa: BLE001 - sampling must never break the program
            pass


class _Token:
    """A weakly referable key for multiprocessing's registries."""


_TOKEN = _Token()


def _finalize_in_child(token: _Token) -> None:
    mp_util = sys.modules.get("multiprocessing.util")
    if mp_util is not None:
        mp_util.Finalize(token, _stop_all, exitpriority=-50)
