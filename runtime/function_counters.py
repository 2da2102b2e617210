"""Performance counters per function: read at the entry and exit of chosen functions, inclusive per call,
in one run (AutoPerf's per-function profiles; issue 22).

Each thread reads its own counters: ``perf_event_open`` on the thread (:mod:`.perf_counters`: the
hardware events that open, read as one group; software page faults and context switches), the thread's
CPU time (``time.thread_time_ns``), and, where no software event opens, ``getrusage(RUSAGE_THREAD)``
(page faults, context switches). At a measured call's entry the values are read; at its exit they are
read again, and the difference is the call's cost, callees included.

Every call of a chosen function is counted; which calls are measured is :mod:`.call_sampling`'s choice:
all of a function's first calls, then as many as keep the cost of measuring it under a share of the
run's CPU time (``MANTIS_FUNCTION_COUNTERS_BUDGET``, default 0.005; 0 measures every call). Per function
the profile keeps the number of calls, the number measured, the totals over all calls (estimated from the
measured ones, see :mod:`.call_sampling`) and the mean over its last ``RECENT`` measured calls (the paper averages the last calls
of a function). What reading the counters adds to a measured call is taken off it: the CPU time of
back-to-back reads (calibrated at the start) for calls measured in a row, and for the calls measured once
in a stride the mean of *empty stretches* measured in their place (one strided opening in ``EMPTY_EVERY``
reads the counters twice with nothing between and lets the call run unmeasured): a read after a stretch of
the program's own code costs more than one right after another, and on a function of 0.1 us that
difference was most of what the sampled profile put down to it.

Functions (``def``s: not module or class bodies, lambdas or comprehensions) are chosen by ``fnmatch``
patterns on ``FILE:QUALNAME``, where FILE is relative to the program's root folder for its own files and
absolute for others (``'sqlparse/lexer.py:*'``, ``'*:Lexer.get_tokens'``). By default the chosen
functions are *probed* as their modules are imported (:mod:`.function_wrapping`), so only they pay, and a
call that is not measured pays only its count; ``async def`` functions and lambdas are then not measured.
With ``MANTIS_FUNCTION_COUNTERS_HOOK=monitoring`` Python 3.12+ uses ``sys.monitoring`` instead
(PY_START, PY_RETURN, PY_UNWIND, PY_YIELD, PY_RESUME, PY_THROW under a free tool id; code that is not
chosen is disabled at its first event; each call of a chosen function costs a Python callback). Either
way a generator's call runs from its first start to its return, its suspensions left out, and a
recursive function's nested calls count too (each call is inclusive). Child processes are not followed.

Use: ``python -m mantispy.runtime.function_counters SCRIPT|-m MODULE ARGS...`` with
``MANTIS_FUNCTION_COUNTERS`` (comma-separated patterns), ``MANTIS_FUNCTION_COUNTERS_OUT`` (the JSON file
written at exit) and optionally ``MANTIS_FUNCTION_COUNTERS_ROOT`` in the environment. Standard library
and ctypes only.
"""

from __future__ import annotations

import atexit
import fnmatch
import json
import os
import resource
import sys
import threading
import time
from collections import deque
from typing import Any

from . import call_sampling, function_wrapping, perf_counters

ENV_PATTERNS = "MANTIS_FUNCTION_COUNTERS"
ENV_OUT = "MANTIS_FUNCTION_COUNTERS_OUT"
ENV_ROOT = "MANTIS_FUNCTION_COUNTERS_ROOT"
FORMAT = "mantispy-function-counters"
VERSION = 1
RECENT = 10
"""Measured calls the per-call mean is taken over (the most recent ones)."""
ENV_HOOK = "MANTIS_FUNCTION_COUNTERS_HOOK"
HOOKS = ("probes", "monitoring")
"""How calls are seen: probes added to the chosen functions as their modules are imported (the default,
every version), or ``sys.monitoring`` events (3.12+; probes where it is missing or no tool id is free)."""
EMPTY_EVERY = 4
"""One strided opening of a function's gate in this many measures an empty stretch instead of the call (the
call runs unmeasured; see :meth:`FunctionProfiler._measure_empty`)."""
MIN_EMPTY = 3
"""Empty stretches a function needs before their mean replaces the calibrated bias for its strided calls."""
CALIBRATION_PAIRS = 128
"""Empty measured stretches timed at the start (16 gave lower quartiles 1.0-1.6 us apart between runs)."""
MEASURING_BOOKKEEPING_S = 1.5e-6
"""What measuring a call costs beside its three counter reads (the sampler's strides count it)."""

PER_CALL_SOFTWARE = ("sw.page_faults", "sw.context_switches")
"""The software events a per-call reader reads (CPU time comes from the thread's clock)."""

THREAD_EVENTS = ("thread.cpu_ns", "thread.minor_faults", "thread.major_faults", "thread.voluntary_switches",
                 "thread.involuntary_switches")
"""The thread's own measures: its CPU time always; the rest where no software perf event opens."""

_GENERATOR_LIKE = 0x20 | 0x80 | 0x100 | 0x200
_TOOL_NAME = "mantispy-function-counters"
_RUSAGE_THREAD = getattr(resource, "RUSAGE_THREAD", None)
_HERE = os.path.dirname(os.path.realpath(__file__))
_DISABLE = getattr(getattr(sys, "monitoring", None), "DISABLE", None)


class _ThreadCounters:
    """One thread's counters, read with as few system calls as a per-call reader needs: the hardware events
    that open, as one group (one read); the software page-fault and context-switch events, each on its own
    (this kernel's software groups report stale members); the thread's CPU time (``time.thread_time_ns``,
    what task-clock would say); and, where no software event opens, ``getrusage(RUSAGE_THREAD)``."""

    def __init__(self, events: list[str]) -> None:
        hardware = [e for e in events if e.startswith("hw.")]
        software = [e for e in PER_CALL_SOFTWARE if e in events]
        self.hardware = perf_counters.open_group(0, hardware)[0] if hardware else None
        self.software = perf_counters.open_counters(0, software, inherit=False)[0] if software else None
        self.names = [*(self.hardware.names if self.hardware is not None else []),
                      *(list(self.software.fds) if self.software is not None else []), "thread.cpu_ns",
                      *(THREAD_EVENTS[1:] if self.software is None else [])]

    def read(self) -> list[float]:
        """The values at a call's entry: the thread's CPU clock read last, so the other reads' system calls
        fall outside the call's CPU time."""
        values = self.hardware.values() if self.hardware is not None else []
        if self.software is not None:
            values += self.software.values()
        values.append(float(time.thread_time_ns()))
        return self._rusage(values)

    def read_warmed(self) -> list[float]:
        """:meth:`read`, after a first read whose values are thrown away. A call measured once in a stride
        comes after a stretch of the program's own code, and its reads' path is cold then: on this machine
        an empty measured stretch so placed showed a median 0.8-1.3 us of CPU time against 0.1 us right
        after other reads, which the bias calibrated on back-to-back reads does not take off (a 0.1 us
        function's total came out 6-20x its every-call total). One read before the measured one warms the
        path (median 0.3-0.4 us)."""
        self.read()
        return self.read()

    def read_at_exit(self) -> list[float]:
        """The values at a call's exit, in :meth:`read`'s order: the CPU clock read first."""
        clock = float(time.thread_time_ns())
        values = self.hardware.values() if self.hardware is not None else []
        if self.software is not None:
            values += self.software.values()
        values.append(clock)
        return self._rusage(values)

    def _rusage(self, values: list[float]) -> list[float]:
        if self.software is None and _RUSAGE_THREAD is not None:
            usage = resource.getrusage(_RUSAGE_THREAD)
            values += [float(usage.ru_minflt), float(usage.ru_majflt), float(usage.ru_nvcsw), float(usage.ru_nivcsw)]
        elif self.software is None:  # pragma: no cover - not Linux
            values += [0.0, 0.0, 0.0, 0.0]
        return values


class FunctionProfiler:
    """Per-function inclusive counter deltas of the chosen functions (see the module docstring)."""

    def __init__(self, root: str, patterns: list[str], recent: int = RECENT, hook: str = "probes",
                 sampling: call_sampling.SamplingSettings | None = None) -> None:
        if hook not in HOOKS:
            raise ValueError(f"{ENV_HOOK} must be one of {', '.join(HOOKS)}, not {hook!r}")
        self.root = os.path.realpath(root)
        self.patterns = [p for p in patterns if p]
        self.recent = recent
        self.hook = hook
        self.sampling = sampling or call_sampling.SamplingSettings()
        statuses = perf_counters.probe([e for e in perf_counters.EVENTS if e.startswith("hw.")] + list(PER_CALL_SOFTWARE))
        self.perf_events = [s.name for s in statuses if s.available]
        self.refused = {s.name: s.reason for s in statuses if not s.available}
        self._chosen: dict[int, int | None] = {}  # id(code) -> the function's index when chosen, None when not
        self._codes: list = []  # keeps code objects alive, so their ids stay theirs
        self._local = threading.local()
        self._lock = threading.Lock()
        self.sampler = call_sampling.CallSampler(self.sampling, measuring_cost_s=0.0)
        self.stats: dict[int, dict] = {}  # function index -> measured calls, their totals, the last ones
        self._openings: dict[int, int] = {}  # function index -> strided openings of its gate so far
        self.names: list[str] | None = None
        self.clock_bias_ns = 0.0
        self._clock = 0  # the thread CPU clock's place among the values (set with the names)
        self._tool: int | None = None
        self.api = "none"
        self._finder: Any = None
        self.started = False

    # ------------------------------------------------------------------ choosing
    def name_of(self, code) -> str | None:
        """``FILE:QUALNAME`` when ``code`` is a chosen function, else None."""
        index = self.index_of(code)
        return None if index is None else self.function_name(index)

    def index_of(self, code) -> int | None:
        """The chosen function's index when ``code`` is one, else None (memoised per code object)."""
        key = id(code)
        if key in self._chosen:
            return self._chosen[key]
        filename = os.path.realpath(code.co_filename) if code.co_filename and not code.co_filename.startswith("<") else ""
        file = self.file_part(filename)
        qualname = getattr(code, "co_qualname", code.co_name)
        full = f"{file}:{qualname}"
        is_def = bool(code.co_flags & 0x2) and not code.co_name.startswith("<")  # not a module, class body, lambda
        chosen = is_def and filename and os.path.dirname(filename) != _HERE and self.matches(full)
        self._codes.append(code)
        index = self._chosen[key] = self.sampler.add(full) if chosen else None
        return index

    def function_name(self, index: int) -> str:
        """The ``FILE:QUALNAME`` of function ``index``."""
        return self.sampler.names[index]

    def file_part(self, path: str) -> str:
        """How names call a file: relative to the root (POSIX) for the program's own, else absolute."""
        path = os.path.realpath(path) if path else ""
        inside = path.startswith(self.root + os.sep)
        return os.path.relpath(path, self.root).replace(os.sep, "/") if inside else path

    def matches(self, name: str) -> bool:
        """Whether ``FILE:QUALNAME`` is chosen."""
        return any(fnmatch.fnmatchcase(name, p) for p in self.patterns)

    # ------------------------------------------------------------------ measuring
    def _thread(self):
        state = getattr(self._local, "state", None)
        if state is None:
            reader = _ThreadCounters(self.perf_events)
            with self._lock:
                if self.names is None:
                    self.names = list(reader.names)
                    self._clock = self.names.index("thread.cpu_ns")
            state = self._local.state = (reader, [], {})  # reader, open segments, suspended generator calls
        return state

    def _calibrate(self) -> None:
        """Time this thread's counter reads: what measuring one call costs (its three reads, see
        :meth:`_ThreadCounters.read_warmed`), for the sampler's strides, and the CPU time an empty measured
        stretch shows (the lower quartile of ``CALIBRATION_PAIRS``), taken off each measured call."""
        reader = self._thread()[0]
        pairs = CALIBRATION_PAIRS
        began = time.process_time()
        empty = []
        for _ in range(pairs):
            before = reader.read_warmed()
            empty.append(reader.read_at_exit()[self._clock] - before[self._clock])
        per_measurement = (time.process_time() - began) / pairs
        self.sampler.measuring_cost_s = per_measurement + MEASURING_BOOKKEEPING_S
        self.clock_bias_ns = max(0.0, sorted(empty)[len(empty) // 4])

    def start_call(self, index: int):
        """A call of function ``index`` that its gate chose starts: the token :meth:`stop_call` takes."""
        self.sampler.measuring(index)
        reader = self._thread()[0]
        if self._empty_due(index):
            self._measure_empty(index, reader)
            return None
        return index, reader, reader.read_warmed()

    def stop_call(self, token) -> None:
        """A measured call (:meth:`start_call`'s token) returns or raises (None: the call was not measured,
        an empty stretch was)."""
        if token is None:
            return
        index, reader, before = token
        after = reader.read_at_exit()
        first = self.sampler.finished(index)
        self._account(index, [a - b for a, b in zip(after, before)], first)

    def due(self, index: int) -> bool:
        """Count a call of function ``index``; whether it is measured."""
        if not next(self.sampler.gates[index]):
            return False
        self.sampler.measuring(index)
        if self._empty_due(index):
            self._measure_empty(index, self._thread()[0])
            return False
        return True

    def _empty_due(self, index: int) -> bool:
        """Whether this strided opening of function ``index``'s gate measures an empty stretch (the first
        strided opening does, then one in ``EMPTY_EVERY``)."""
        if self.sampler.is_first(index):
            return False
        opened = self._openings[index] = self._openings.get(index, 0) + 1
        return opened % EMPTY_EVERY == 1

    def _measure_empty(self, index: int, reader: _ThreadCounters) -> None:
        """Read the counters twice with nothing between, where a strided call of function ``index`` would
        have been measured. A call measured once in a stride comes after a stretch of the program's own
        code: the reads' path is cold then, and an empty stretch so placed shows more CPU time than the
        back-to-back reads the bias was calibrated on (on this machine a median 0.5-0.8 us more, with the
        warming read; 1.1-1.3 us more without). Their mean, per stretch, is taken off the strided calls."""
        before = reader.read_warmed()
        after = reader.read_at_exit()
        delta = [a - b for a, b in zip(after, before)]
        with self._lock:
            entry = self._entry(index, len(delta))
            entry["empty"] += 1
            entry["empty_totals"] = [t + d for t, d in zip(entry["empty_totals"], delta)]

    def enter(self, index: int, frame_id: int, resumed: bool = False) -> None:
        """A measured call of a chosen function starts (or a generator of it resumes)."""
        reader, stack, suspended = self._thread()
        carried = suspended.pop(frame_id, None) if resumed else None
        if carried is not None:
            self.sampler.resumed(index)
        stack.append((index, frame_id, reader.read_warmed(), carried))

    def is_suspended(self, frame_id: int) -> bool:
        """Whether ``frame_id`` is a measured generator call, suspended in this thread."""
        return frame_id in self._thread()[2]

    def leave(self, frame_id: int, suspended_only: bool = False, discard: bool = False) -> None:
        """A measured call returns or raises (or, ``suspended_only``, a generator of it yields; ``discard``:
        a generator is closed before it finished, and its call is not counted)."""
        reader, stack, suspended = self._thread()
        if not stack or stack[-1][1] != frame_id:
            suspended.pop(frame_id, None)
            return  # an exit of a call not measured (or whose entry came before the profile started)
        index, _, before, carried = stack.pop()
        if discard:
            suspended.pop(frame_id, None)
            return
        after = reader.read_at_exit()
        delta = [a - b for a, b in zip(after, before)]
        if carried is not None:
            delta = [d + c for d, c in zip(delta, carried)]
        if suspended_only:
            suspended[frame_id] = delta
            return
        first = self.sampler.finished(index)
        self._account(index, delta, first)

    def forget(self, frame_id: int) -> None:
        """A suspended generator call that will not resume (closed or collected)."""
        self._thread()[2].pop(frame_id, None)

    def measured(self, name: str, index: int | None = None):
        """The decorator a probed generator function gets (see :mod:`.function_wrapping`): each call is
        counted; a measured one runs from its first start to its return, its suspensions left out."""
        profiler = self
        if index is None:
            index = self.sampler.add(name)

        def decorate(function):
            import functools

            @functools.wraps(function)
            def generator(*args, **kwargs):
                if not profiler.due(index):
                    return function(*args, **kwargs)
                return _measured_generator(profiler, index, function(*args, **kwargs))

            return generator

        return decorate

    def _entry(self, index: int, width: int) -> dict:
        """Function ``index``'s accumulators (made at its first measurement; hold the lock)."""
        entry = self.stats.get(index)
        if entry is None:
            entry = self.stats[index] = {
                "measured": 0, "totals": [0.0] * width, "first": 0, "first_totals": [0.0] * width,
                "recent": deque(maxlen=self.recent), "later_raw": [0.0] * width, "later_stretches": 0,
                "empty": 0, "empty_totals": [0.0] * width}
        return entry

    def _account(self, index: int, delta: list[float], first: bool = True) -> None:
        """Add one measured call (``first``: one of the function's first calls, all measured)."""
        raw = list(delta)
        delta[self._clock] = max(0.0, delta[self._clock] - self.clock_bias_ns)
        with self._lock:
            entry = self._entry(index, len(delta))
            if not first:
                entry["later_raw"] = [t + d for t, d in zip(entry["later_raw"], raw)]
                entry["later_stretches"] += self.sampler.stretches(index)
            entry["measured"] += 1
            entry["totals"] = [t + d for t, d in zip(entry["totals"], delta)]
            if first:
                entry["first"] += 1
                entry["first_totals"] = [t + d for t, d in zip(entry["first_totals"], delta)]
            entry["recent"].append(delta)

    # ------------------------------------------------------------------ hooks
    def start(self) -> None:
        """Install the hooks (probes added as modules are imported; or sys.monitoring events on 3.12+)."""
        if self.started:
            return
        self.started = True
        self._calibrate()
        monitoring: Any = getattr(sys, "monitoring", None)
        if self.hook == "monitoring" and monitoring is not None:
            for tool in range(6):
                if monitoring.get_tool(tool) is None:
                    monitoring.use_tool_id(tool, _TOOL_NAME)
                    self._tool = tool
                    break
        if self._tool is not None:
            events = monitoring.events
            for event, callback in ((events.PY_START, self._py_start), (events.PY_RESUME, self._py_resume),
                                    (events.PY_THROW, self._py_throw),
                                    (events.PY_RETURN, self._py_return), (events.PY_YIELD, self._py_yield),
                                    (events.PY_UNWIND, self._py_unwind)):
                monitoring.register_callback(self._tool, event, callback)
            monitoring.set_events(self._tool, events.PY_START | events.PY_RESUME | events.PY_THROW | events.PY_RETURN
                                  | events.PY_YIELD | events.PY_UNWIND)
            self.api = "sys.monitoring"
        else:
            self.api = "probes"
            sampler = self.sampler
            hooks = function_wrapping.ProbeHooks(self.measured, self.start_call, self.stop_call, sampler)
            self._finder = function_wrapping.install(self.file_part, function_wrapping.Choice(self.matches, sampler.add),
                                                     hooks, function_wrapping.file_may_match(self.patterns))

    def stop(self) -> None:
        """Remove the hooks."""
        if not self.started:
            return
        self.started = False
        if self._tool is not None:
            monitoring: Any = getattr(sys, "monitoring")
            monitoring.set_events(self._tool, 0)
            monitoring.free_tool_id(self._tool)
            self._tool = None
        elif self._finder is not None:
            function_wrapping.uninstall(self._finder)
            self._finder = None

    def _py_start(self, code, offset):
        index = self.index_of(code)
        if index is None:
            return _DISABLE
        if self.due(index):
            self.enter(index, id(sys._getframe(1)))
        return None

    def _py_resume(self, code, offset):
        index = self.index_of(code)
        if index is None:
            return _DISABLE
        frame_id = id(sys._getframe(1))
        if self.is_suspended(frame_id):
            self.enter(index, frame_id, resumed=True)
        return None

    def _py_throw(self, code, offset, exception):
        index = self.index_of(code)  # (a thrown-into generator resumes; this event cannot be disabled)
        frame_id = id(sys._getframe(1))
        if index is not None and self.is_suspended(frame_id):
            self.enter(index, frame_id, resumed=True)

    def _py_return(self, code, offset, retval):
        if self.index_of(code) is None:
            return _DISABLE
        self.leave(id(sys._getframe(1)))
        return None

    def _py_yield(self, code, offset, retval):
        if self.index_of(code) is None:
            return _DISABLE
        self.leave(id(sys._getframe(1)), suspended_only=True)
        return None

    def _py_unwind(self, code, offset, exception):
        if self.index_of(code) is not None:
            self.leave(id(sys._getframe(1)), discard=isinstance(exception, GeneratorExit))

    # ------------------------------------------------------------------ the profile
    def result(self) -> dict:
        """The profile as a JSON-ready document (format ``mantispy-function-counters``): per function its
        calls (every call, counted), the calls measured, the totals over all calls (the first calls' own,
        plus the later measured calls' scaled by later calls / later measured calls) and the mean of the
        last measured calls."""
        names = self.names or list(THREAD_EVENTS)
        functions = {}
        by_index = list(self.sampler.names)
        with self._lock:
            for index, entry in sorted(self.stats.items(), key=lambda item: by_index[item[0]]):
                if not entry["measured"]:  # only empty stretches so far: nothing measured to report
                    continue
                recent = list(entry["recent"])
                calls = max(self.sampler.count(index), entry["measured"])
                functions[by_index[index]] = {
                    "calls": calls,
                    "measured_calls": entry["measured"],
                    "totals": dict(zip(names, _estimated_totals(entry, calls))),
                    "recent_mean": {n: sum(r[i] for r in recent) / len(recent) for i, n in enumerate(names)},
                    "recent_calls": len(recent),
                    "empty_stretches": entry["empty"],
                }
        settings = self.sampling
        return {"format": FORMAT, "version": VERSION, "root": self.root, "patterns": self.patterns, "events": names,
                "refused": self.refused, "recent": self.recent, "python": sys.version.split()[0],
                "api": self.api, "clock_bias_ns": self.clock_bias_ns, "sampling": {"budget": settings.budget, "every_call_first": settings.every_call_first},
                "functions": functions}


def _measured_generator(profiler: FunctionProfiler, index: int, inner):
    """Drive generator ``inner`` for its consumer, measuring its active stretches as one call."""
    key = id(inner)
    resumed, to_send, to_throw = False, None, None
    while True:
        profiler.enter(index, key, resumed=resumed)
        resumed = True
        try:
            if to_throw is not None:
                error, to_throw = to_throw, None
                value = inner.throw(error)
            else:
                value = inner.send(to_send)
        except StopIteration as stop:
            profiler.leave(key)
            return stop.value
        except BaseException:
            profiler.leave(key)
            raise
        profiler.leave(key, suspended_only=True)
        try:
            to_send = yield value
        except GeneratorExit:
            profiler.forget(key)
            inner.close()
            raise
        except BaseException as exc:  # thrown in by the consumer: into the generator
            to_throw, to_send = exc, None

def _estimated_totals(entry: dict, calls: int) -> list[float]:
    """Totals over all ``calls`` of a function from its measured ones: the first calls' (every one measured)
    as they are, plus the later measured calls' scaled to the later calls. The later calls' own are their
    counter deltas less the mean empty stretch measured among them (per stretch; the calibrated bias, call
    by call, until ``MIN_EMPTY`` empty stretches were measured)."""
    later_measured = entry["measured"] - entry["first"]
    if later_measured <= 0:  # no stride yet: every call measured, or a mean of the first calls is all there is
        return [t * calls / entry["measured"] for t in entry["totals"]]
    scale = (calls - entry["first"]) / later_measured
    if entry["empty"] >= MIN_EMPTY:
        per_stretch = [e / entry["empty"] for e in entry["empty_totals"]]
        later = [max(0.0, r - p * entry["later_stretches"]) for r, p in zip(entry["later_raw"], per_stretch)]
    else:
        later = [t - f for t, f in zip(entry["totals"], entry["first_totals"])]
    return [f + part * scale for f, part in zip(entry["first_totals"], later)]


def write(profile: FunctionProfiler, path: str) -> None:
    """Write the profile atomically (a temporary file, then a rename)."""
    target = os.path.abspath(path)
    tmp = f"{target}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump(profile.result(), handle, indent=1, sort_keys=True)
    os.replace(tmp, target)


def main(argv: list[str]) -> None:
    """``python -m mantispy.runtime.function_counters SCRIPT|-m MODULE ARGS...`` (see the module docstring)."""
    import runpy

    if not argv or (argv[0] == "-m" and len(argv) < 2):
        sys.exit("usage: python -m mantispy.runtime.function_counters SCRIPT|-m MODULE ARGS...")
    patterns = [p.strip() for p in os.environ.get(ENV_PATTERNS, "").split(",") if p.strip()]
    out = os.environ.get(ENV_OUT)
    if argv[0] == "-m":
        root = os.environ.get(ENV_ROOT) or os.getcwd()
        sys.argv = [argv[1], *argv[2:]]
    else:
        script = os.path.abspath(argv[0])
        root = os.environ.get(ENV_ROOT) or os.path.dirname(script)
        sys.argv = [argv[0], *argv[1:]]
        sys.path[0] = os.path.dirname(script)
    try:
        profiler = FunctionProfiler(root, patterns, hook=os.environ.get(ENV_HOOK, "probes"),
                                    sampling=call_sampling.SamplingSettings.from_environment())
    except ValueError as exc:
        sys.exit(f"mantispy: function counters: {exc}")

    def finish() -> None:
        profiler.stop()
        if out:
            try:
                write(profiler, out)
            except OSError as exc:
                sys.stderr.write(f"mantispy: function counters: cannot write {out}: {exc}\n")

    atexit.register(finish)
    profiler.start()
    if argv[0] == "-m":
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
    elif profiler.api == "probes":
        _run_probed_script(profiler, script)
    else:
        runpy.run_path(script, run_name="__main__")


def _run_probed_script(profiler: FunctionProfiler, script: str) -> None:
    """Run ``script`` as ``__main__`` with its chosen functions probed (runpy cannot transform it)."""
    import types

    with open(script, "rb") as handle:
        source = handle.read()
    choice = function_wrapping.Choice(profiler.matches, profiler.sampler.add)
    code = function_wrapping.probed_code(source, script, profiler.file_part(script), choice)
    module = types.ModuleType("__main__")
    module.__dict__.update({"__file__": script, "__builtins__": __builtins__, "__spec__": None, "__loader__": None,
                            "__package__": None, "__cached__": None})
    saved = sys.modules.get("__main__")
    sys.modules["__main__"] = module
    try:
        exec(code, module.__dict__)
    finally:
        if saved is not None:
            sys.modules["__main__"] = saved


if __name__ == "__main__":
    main(sys.argv[1:])
