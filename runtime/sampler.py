"""The built-in stack sampler: what every thread of a Python process is running, many times a second.

Standard library only (and ctypes for the signal trigger's timer). A daemon thread wakes ``rate`` times
a second, reads every other thread's current frame (``sys._current_frames``) and records one *sample* per
thread: the wall-clock timestamp, the process and thread ids, the stack (interned: each distinct stack is
written once, as its frames from the outermost) and a weight in seconds.

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

With the ``thread`` trigger (the default) no signal, timer or trace hook is used, so a program with its
own ``SIGPROF``/``ITIMER_PROF`` handler, a profiler (``sys.setprofile``, ``sys.settrace``,
``sys.monitoring``) or coverage runs exactly as without the sampler; :func:`collisions` says which of them
the program installed (they are recorded with the run, and need no fallback). The thread takes the GIL to
read the frames, so a thread inside one long C call is seen when the call returns, with its CPU time up to
then. And it gets the GIL when the program gives it up: a program that releases it often in short C calls
(hashlib's updates of 2 KB and more) is sampled at those releases, and its time is charged to their callers.

The ``signal`` trigger (cpu mode only) samples the main thread on ``SIGPROF`` instead: a timer on the main
thread's own CPU clock (``timer_create`` through ctypes, the signal sent to that thread only; where that is
missing, ``ITIMER_PROF`` on the process's CPU time), ``rate`` times a second of CPU, whose handler runs in the
main thread at its next bytecode boundary, wherever the program is, and records its stack and the CPU time
it used since its previous sample (and writes the batch when one is due, unless the sampler's thread is
writing). The sampler's thread, which blocks ``SIGPROF`` itself, keeps sampling the other threads, ``rate``
times a second while there are any; while there are none it wakes every :data:`IDLE_TICK_S` (the handler
wakes it sooner when a thread appears): each wake-up takes the GIL, and at 100 Hz that cost a program that
releases the GIL every 60 us 13 % of its CPU time (the thread trigger's price there). The trigger is not armed,
and the thread samples the main thread as before, when the program already has a ``SIGPROF`` handler or an
``ITIMER_PROF`` timer, or the sampler does not start in the main thread; each batch says which trigger it
was taken with, and why not the signal (``trigger_note``). A program that installs its own ``SIGPROF``
handler later gets the timer's signals until the sampler's thread sees it (within :data:`IDLE_TICK_S`), which
then deletes the timer and samples the main thread itself from there on (the batch notes it). The signal interrupts the
system call the main thread is in; Python retries its own (PEP 475), a C extension that does not retry
``EINTR`` sees an error.

Samples go to ``<dir>/samples-<pid>.jsonl``, one JSON line per batch (every ``flush_s`` and at exit):
``{"pid", "command", "stacks": {id: [frame, ...]}, "samples": [[t, tid, stack_id, weight], ...]}``,
frames as ``"qualname\\tfile\\tline"`` (the function's first line). A forked child (multiprocessing's
fork) starts its own sampler and file; spawned Python processes start one through the bootstrap
(:mod:`mantispy.runtime.sample_boot`) when ``MANTIS_SAMPLE_DIR`` is set in their environment.
"""

from __future__ import annotations

import atexit
import collections
import gc
import os
import sys
import threading
import time

ENV_DIR = "MANTIS_SAMPLE_DIR"
ENV_RATE = "MANTIS_SAMPLE_RATE"
ENV_MODE = "MANTIS_SAMPLE_MODE"
ENV_TRIGGER = "MANTIS_SAMPLE_TRIGGER"
MODES = ("cpu", "wall")
TRIGGERS = ("thread", "signal")  # what takes the main thread's samples: the sampler's thread, or SIGPROF
IDLE_TICK_S = 0.25  # how often the sampler's thread wakes under the signal trigger while no other thread runs
MIN_RATE, MAX_RATE = 1.0, 1000.0
FLUSH_S = 0.5
SWITCH_S = 0.001  # the largest switch interval (seconds) while sampling: the sampler's thread gets the GIL in time
GC_FRAME = "(garbage collection)\t<gc>\t0"  # the frame garbage collection is recorded under
GC_SAFE = sys.version_info >= (3, 12)  # collections timed, switch interval lowered (see the module docstring)


class Sampler:
    """One process's sampler thread (see the module docstring)."""

    def __init__(self, directory: str, rate: float = 100.0, mode: str = "cpu", flush_s: float = FLUSH_S,
                 trigger: str = "thread") -> None:
        self.directory = directory
        self.rate = min(max(float(rate), MIN_RATE), MAX_RATE)
        self.mode = mode if mode in MODES else "cpu"
        if self.mode == "cpu" and not hasattr(time, "pthread_getcpuclockid"):  # no per-thread CPU clocks here
            self.mode = "wall"
        self.trigger = trigger if trigger in TRIGGERS else "thread"
        self.trigger_note: str | None = None  # why the signal trigger was asked for and not armed
        self._signal_tid: int | None = None  # the thread SIGPROF samples (the main thread), once armed
        self._signal_cpu = 0  # its CPU clock (ns) at its previous sample
        self._signal_codes: tuple = ()  # its stack at its previous sample (code objects, innermost first)
        self._signal_off = False
        self._queued: collections.deque = collections.deque()  # (stamp, thread, codes, seconds, gc seconds) from SIGPROF
        self._timer: _ThreadCpuTimer | None = None  # the main thread's CPU-clock timer (else ITIMER_PROF)
        self._in_handler = False
        self._others = True  # whether the program has threads other than the main one (the signal trigger's)
        self._gate = threading.Lock()  # the idle sampler's thread waits on it; the handler opens it for a thread
        self._gate.acquire()
        self._writer = threading.Lock()  # held by whoever interns and writes (the thread, or the handler)
        self._last_flush = time.monotonic()
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
        if self.trigger == "signal":
            self.trigger_note = self._arm()
            if self.trigger_note is not None:
                self.trigger = "thread"
        self._thread = threading.Thread(target=self._run, name="mantispy-sampler", daemon=True)
        self._thread.start()

    def _arm(self) -> str | None:
        """Install the SIGPROF handler and start the CPU-time timer; None when armed, else why not."""
        import signal

        if self.mode != "cpu":
            return "the signal trigger samples on CPU time (cpu mode only)"
        if not hasattr(signal, "setitimer") or not hasattr(signal, "SIGPROF"):
            return "this platform has no ITIMER_PROF timer"
        if threading.current_thread() is not threading.main_thread():
            return "the sampler did not start in the main thread"
        handler = signal.getsignal(signal.SIGPROF)
        if handler is not signal.SIG_DFL and not _is_sampler_handler(handler):  # None: one set outside Python
            return "the program has a SIGPROF handler of its own"
        if signal.getitimer(signal.ITIMER_PROF) != (0.0, 0.0):
            return "the program has an ITIMER_PROF timer of its own"
        import json  # noqa: F401 - imported now, not inside a handler that may interrupt an import

        self._signal_tid = threading.get_ident()
        self._signal_cpu = time.thread_time_ns()
        self._others = False
        signal.signal(signal.SIGPROF, self._on_signal)
        period = 1.0 / self.rate
        self._timer = _ThreadCpuTimer.start(signal.SIGPROF, period)
        if self._timer is None:
            signal.setitimer(signal.ITIMER_PROF, period, period)
        return None

    def _disarm(self) -> None:
        """Stop the timer and give SIGPROF its default action back, which it had when the timer was armed
        (from the main thread; elsewhere the handler stays, doing nothing). Nothing is touched if the program took SIGPROF over meanwhile."""
        if self._signal_tid is None or self._signal_off:
            return
        self._signal_off = True
        import signal

        try:
            if _is_sampler_handler(signal.getsignal(signal.SIGPROF)):
                if self._timer is not None:
                    self._timer.delete()
                else:
                    signal.setitimer(signal.ITIMER_PROF, 0.0, 0.0)
                signal.signal(signal.SIGPROF, signal.SIG_DFL)  # what it was when the timer was armed
        except (ValueError, OSError):
            pass

    def _on_signal(self, signum: int, frame) -> None:
        """SIGPROF, in the main thread: queue its stack and the CPU time it used since its previous sample."""
        if self._in_handler or self._signal_off:  # a handler runs Python code, so a second one can start inside it
            return
        self._in_handler = True
        try:
            in_callback = False
            while frame is not None and frame.f_code.co_filename == _THIS_FILE:
                in_callback = in_callback or frame.f_code is _ON_GC_CODE
                frame = frame.f_back
            used = time.thread_time_ns()
            seconds = (used - self._signal_cpu) / 1e9
            self._signal_cpu = used
            if frame is None or seconds <= 0:
                return
            tid = self._signal_tid
            if tid is None:
                return
            innermost_first = []
            while frame is not None:
                innermost_first.append(frame.f_code)
                frame = frame.f_back
            self._signal_codes = codes = tuple(innermost_first)
            gc_part = min(self._gc_pending(tid, in_callback), seconds)
            self._queued.append((time.time(), tid, codes, seconds - gc_part, gc_part))
            if not self._others and len(sys._current_frames()) > 2:  # a thread appeared: sample it from now on
                self._others = True
                _open(self._gate)
            if self._writer.acquire(blocking=False):  # never waits: the thread may hold it
                try:
                    self._drain()
                    if time.monotonic() - self._last_flush >= self.flush_s:
                        self.flush()
                finally:
                    self._writer.release()
        except Exception:  # noqa: BLE001 - sampling must never break the program
            pass
        finally:
            self._in_handler = False

    def _taken_over(self) -> None:
        """The program installed a SIGPROF handler of its own: delete the timer (an ``ITIMER_PROF`` one is
        the program's to set now) and sample the main thread from the sampler's thread from here on, its CPU
        since the last signal included."""
        self._signal_off = True
        if self._timer is not None:
            self._timer.delete()
        self._drain()
        tid, self._signal_tid = self._signal_tid, None
        if tid is not None:
            self._cpu[tid] = self._signal_cpu
        self._others = True
        self.trigger = "thread"
        self.trigger_note = "the program installed a SIGPROF handler of its own while it ran"

    def _gc_pending(self, tid: int, in_callback: bool) -> float:
        """Seconds ``tid`` spent collecting garbage since its previous sample (a collection whose end the
        callback has not counted yet included, when ``in_callback``); marks them as taken."""
        collected = self._gc_ns.get(tid, 0)
        pending = collected - self._gc_seen.get(tid, 0)
        began = self._gc_started.get(tid) if in_callback else None
        if began is not None:  # a collection just ended and its callback has not counted it yet: count it now
            running = max(self._now(tid) - began, 0)
            pending += running
            collected += running
        self._gc_seen[tid] = collected
        return max(pending, 0) / 1e9

    def _drain(self) -> None:
        """Intern and keep what SIGPROF queued (in the sampler's thread, or after it ended)."""
        rows = []
        queued = self._queued
        while queued:
            try:
                stamp, tid, codes, seconds, gc_part = queued.popleft()
            except IndexError:
                break
            stack = self._intern(codes)
            if gc_part > 0:
                rows.append([stamp, tid, self._gc_stack_id(stack), gc_part])
            if seconds > 0:
                rows.append([stamp, tid, stack, seconds])
        if rows:
            with self._lock:
                self._samples.extend(rows)

    def stop(self) -> None:
        """Stop sampling and write what is left (called at exit). Collections stop being timed first: one
        while this waits for the sampler's thread is the sampler's exit, not the program's; and what the
        calling thread did since its last sample (a collection included) goes to the stack it had then."""
        self._stopping = threading.get_ident()
        if self._stopping == self._signal_tid and not self._signal_off and self._signal_codes:
            used = time.thread_time_ns()
            seconds, self._signal_cpu = (used - self._signal_cpu) / 1e9, used
            if seconds > 0:
                self._queued.append((time.time(), self._signal_tid, self._signal_codes, seconds, 0.0))
        self.detach()
        self._stop.set()
        _open(self._gate)
        thread = self._thread
        if thread is not None and thread is not threading.current_thread() and thread.is_alive():
            thread.join(timeout=2)
        if self._writer.acquire(timeout=2):
            try:
                self._drain()
            finally:
                self._writer.release()
        self.flush()

    def detach(self) -> None:
        """Stop the SIGPROF timer, stop timing garbage collections and give the program its switch interval
        back (unless it set one of its own meanwhile)."""
        self._disarm()
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
        if self._signal_tid is not None:
            _block_sigprof()
        period = 1.0 / self.rate
        me = threading.get_ident()
        last = time.monotonic()
        next_tick = last + period
        while not self._stop.is_set():
            if self._signal_tid is not None and not self._others:  # idle: the handler samples the main thread
                self._gate.acquire(timeout=IDLE_TICK_S)  # waits without the GIL
                next_tick = time.monotonic()
            delay = next_tick - time.monotonic()
            if delay > 0 and self._stop.wait(delay):
                break
            if self._stop.is_set():
                break
            now = time.monotonic()
            next_tick += period
            if next_tick < now:  # fell behind (a long C call held the GIL): do not burst to catch up
                next_tick = now + period
            with self._writer:
                if self._signal_tid is not None and not self._signal_off and not _handler_is_ours():
                    self._taken_over()
                self.sample(me, now - last)
                self._drain()
                if now - self._last_flush >= self.flush_s:
                    self.flush()
            last = now

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
        self._others = len(frames) > 2 or self._signal_tid not in frames
        rows = []
        previous = self._previous
        for tid, frame in frames.items():
            if tid == me or tid == self._signal_tid:
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
            gc_part = min(self._gc_pending(tid, in_callback), weight)
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
        return self._intern(codes)

    def _intern(self, codes) -> int:
        """The id of the stack of ``codes`` (innermost first), new stacks kept for the next batch."""
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
        self._last_flush = time.monotonic()
        with self._lock:
            samples, self._samples = self._samples, []
            stacks, self._new_stacks = self._new_stacks, {}
        if not samples and not stacks:
            return
        import json

        batch = {"pid": self.pid, "command": _command(), "mode": self.mode, "rate": self.rate, "trigger": self.trigger,
                 "stacks": stacks, "samples": samples}
        if self.trigger_note:
            batch["trigger_note"] = self.trigger_note
        line = json.dumps(batch, separators=(",", ":"))
        try:
            with open(self._path, "a", encoding="utf-8") as handle:
                handle.write(line + "\n")
        except OSError:  # the recording's folder is gone: the recorder ended
            pass


_ON_GC_CODE = Sampler._on_gc.__code__
_THIS_FILE = _ON_GC_CODE.co_filename  # frames of this file are the sampler's, not the program's


class _ThreadCpuTimer:
    """A POSIX timer on the calling thread's CPU clock that sends a signal to that thread alone (Linux
    ``timer_create`` with ``SIGEV_THREAD_ID``, through ctypes): the sampler's own CPU time does not advance it,
    and no other thread's system calls are interrupted."""

    SIGEV_THREAD_ID = 4

    def __init__(self, libc, timer_id) -> None:
        self._libc = libc
        self._id = timer_id

    @classmethod
    def start(cls, signum: int, period: float) -> _ThreadCpuTimer | None:
        """Arm a timer firing ``signum`` every ``period`` seconds of this thread's CPU; None where it cannot."""
        if not sys.platform.startswith("linux") or not hasattr(time, "CLOCK_THREAD_CPUTIME_ID"):
            return None
        try:
            import ctypes
            import ctypes.util

            class SigEvent(ctypes.Structure):
                _fields_ = [("value", ctypes.c_void_p), ("signo", ctypes.c_int), ("notify", ctypes.c_int),
                            ("tid", ctypes.c_int), ("pad", ctypes.c_int * 12)]

            class TimeSpec(ctypes.Structure):
                _fields_ = [("sec", ctypes.c_long), ("nsec", ctypes.c_long)]

            class ITimerSpec(ctypes.Structure):
                _fields_ = [("interval", TimeSpec), ("value", TimeSpec)]

            libc = ctypes.CDLL(None, use_errno=True)
            if not hasattr(libc, "timer_create"):  # glibc before 2.34 keeps it in librt
                libc = ctypes.CDLL(ctypes.util.find_library("rt") or "librt.so.1", use_errno=True)
            libc.timer_create.argtypes = [ctypes.c_int, ctypes.POINTER(SigEvent), ctypes.POINTER(ctypes.c_void_p)]
            libc.timer_settime.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.POINTER(ITimerSpec), ctypes.c_void_p]
            libc.timer_delete.argtypes = [ctypes.c_void_p]
            event = SigEvent(signo=signum, notify=cls.SIGEV_THREAD_ID, tid=threading.get_native_id())
            timer_id = ctypes.c_void_p()
            if libc.timer_create(time.CLOCK_THREAD_CPUTIME_ID, ctypes.byref(event), ctypes.byref(timer_id)) != 0:
                return None
            seconds, nanoseconds = int(period), int(round((period - int(period)) * 1e9))
            spec = ITimerSpec(TimeSpec(seconds, nanoseconds), TimeSpec(seconds, nanoseconds))
            if libc.timer_settime(timer_id, 0, ctypes.byref(spec), None) != 0:
                libc.timer_delete(timer_id)
                return None
            return cls(libc, timer_id)
        except (OSError, AttributeError, TypeError, ValueError):
            return None

    def delete(self) -> None:
        """Disarm and delete the timer."""
        if self._id is not None:
            self._libc.timer_delete(self._id)
            self._id = None


def _open(gate: threading.Lock) -> None:
    """Let the thread waiting on ``gate`` through (nothing if it is open already)."""
    try:
        gate.release()
    except RuntimeError:
        pass


def _handler_is_ours() -> bool:
    """Whether SIGPROF's handler is still a sampler's."""
    try:
        import signal

        return _is_sampler_handler(signal.getsignal(signal.SIGPROF))
    except (ValueError, OSError):
        return True


def _is_sampler_handler(handler: object) -> bool:
    """Whether ``handler`` is a sampler's SIGPROF handler (a forked child inherits its parent's)."""
    return getattr(handler, "__func__", None) is Sampler._on_signal


def _block_sigprof() -> None:
    """Keep SIGPROF off the calling thread (the sampler's), so that the kernel hands it to the program's."""
    try:
        import signal

        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGPROF})
    except (AttributeError, ValueError, OSError):
        pass


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

        handler = signal.getsignal(signal.SIGPROF) if hasattr(signal, "SIGPROF") else None
        ours = _is_sampler_handler(handler)  # the signal trigger's, still installed (stopped outside the main thread)
        if handler not in (signal.SIG_DFL, None) and not ours:
            found.append("a SIGPROF handler")
        if hasattr(signal, "getitimer") and not ours and signal.getitimer(signal.ITIMER_PROF) != (0.0, 0.0):
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
    sampler = Sampler(directory, rate, os.environ.get(ENV_MODE, "cpu"), trigger=os.environ.get(ENV_TRIGGER, "thread"))
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
    sampler = Sampler(parent.directory, parent.rate, parent.mode, parent.flush_s,
                      trigger="signal" if parent._signal_tid is not None else "thread")
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
