"""The bytecode backend's collector: count a program's features without rewriting its source.

``mantispy run SRC --backend monitor`` starts the program unchanged with a *plan* (``plan.json`` in the
boot folder whose ``sitecustomize`` installs this module; see
:mod:`mantispy.monitoring.plan`): for every file of SRC, the feature ids the source instrumentor would
give it and, for each counter, what in the bytecode marks one count:

* ``calls``: ``[index, first_line, name, column]``: a start of a code object of the file whose
  ``co_firstlineno`` and ``co_name`` match (lambdas sharing a line are told apart by column);
* ``entries``: ``[[index, ...], line, col, end_line, end_col, owners]``: the construct whose first
  instruction executes once per count (a loop's target or body, an arm's first statement, a handler's body), in
  ``ast`` positions (columns in UTF-8 bytes, as ``co_positions`` gives them). Every instruction of the
  code object that lies inside the span while the instruction before it (in layout) does not is such a
  first instruction; the compiler's copies of a block (``finally`` bodies) each have their own;
* ``derived``: ``[index, [[counter, coefficient], ...]]``: a count that has no instruction of its own (an
  ``if`` with no ``else``: the entries of what it starts or follows minus its arms, or a hidden
  counter of its tests minus its arm) is the sum of those counters' counts (public or hidden) times
  their coefficients.

The counts go through the source runtime's collector (:mod:`mantispy.runtime.collector`), so threads,
forked and spawned children, SIGTERM and the output file behave exactly as for instrumented code, and
the result is the same ``{feature_id: count}`` JSON.

On Python 3.12+ the counting uses ``sys.monitoring`` (its own tool id): ``PY_START`` everywhere, which
prepares a code object of the program the first time it starts and is disabled for every other code
object; ``INSTRUCTION`` events only on the program's code objects, disabled at every offset that marks
nothing, so after warm-up only counted instructions call back. On 3.11, ``sys.settrace`` with opcode
events in the program's frames gives the same counts, more slowly. Values (the first k versions of a
variable) are the source backend's alone.

Beside other sys.monitoring tools (coverage.py's sysmon core, debuggers, profilers) mantispy takes a
free id of its own (4, 3, then 1), says at start which ids others hold and at exit which it saw, and when
none is free says so in one line and lets the program run uncounted. Once it has seen another tool, the
lines holding counted instructions get LINE events of its own too (see ``_install_monitoring``), so that
another tool's DISABLE cannot take a count away. CPython's rules leave two blind spots: code that
runs inside another tool's callback produces no events for anyone, and when another tool changes its
global events, frames already running stop reporting their instructions until they return (calls, and
frames started afterwards, are counted). Standard library only.
"""

from __future__ import annotations

import itertools
import json
import os
import sys
import threading

from . import collector as _collector

TYPE_CHECKING = False
if TYPE_CHECKING:  # no run-time import of typing (start-up cost)
    from typing import Any

PLAN_NAME = "plan.json"
"""The plan's file name inside a boot folder (beside the ``sitecustomize`` that reads it): no environment
variable of mantispy's own, so the program sees the same environment under both backends."""

PLAN_FORMAT = "mantispy-monitor-plan"
PLAN_VERSION = 2
TOOL_NAME = "mantispy"
PREFERRED_TOOL_IDS = (4, 3, 1)  # 0 debugger, 2 profiler, 5 optimizer: left to the tools they are for


class MonitoredRegistration(_collector.Registration):
    """A file's counters as the collector sees them, fed by bytecode events instead of probes.

    ``counters`` holds the public counters and then the hidden ones; :meth:`counts` returns the public
    counts, derived ones computed from the hidden counters."""

    __slots__ = ("derived_arms",)

    def __init__(self, file: str, counter_ids: tuple[str, ...], hidden: int, derived: list) -> None:
        super().__init__(file, counter_ids, (), 0)
        self.counters = tuple(itertools.count(1) for _ in range(len(counter_ids) + hidden))
        self.baseline = [0] * len(self.counters)
        self.derived_arms = derived

    def counts(self) -> list[int]:
        """Public counts since the baseline, derived ones from their formulas over public and hidden ones."""
        raw = [n - b for n, b in zip(self.raw_counts(), self.baseline)]
        public = raw[: len(self.counter_ids)]
        for index, terms in self.derived_arms:
            public[index] = max(0, sum(raw[counter] * coefficient for counter, coefficient in terms))
        return public


class _File:
    """One file of the plan, prepared lazily: its registration and its entries."""

    __slots__ = ("rel", "plan", "registration")

    def __init__(self, rel: str, plan: dict) -> None:
        self.rel = rel
        self.plan = plan
        self.registration: MonitoredRegistration | None = None

    def counters(self) -> tuple:
        if self.registration is None:
            with _collector.get_lock():
                if self.registration is None:
                    _collector.ensure_installed()
                    reg = MonitoredRegistration(self.rel, tuple(self.plan["counters"]), int(self.plan["hidden"]),
                                                [list(d) for d in self.plan["derived"]])
                    _collector.add(reg)
                    self.registration = reg
        return self.registration.counters


class Plan:
    """The plan's files, and what each code object of the program counts (found on its first start)."""

    def __init__(self, data: dict) -> None:
        problem = plan_problem(data)
        if problem is not None:
            raise ValueError(problem)
        self.roots = [(os.path.normcase(os.path.abspath(data["root"])),
                       {rel: _File(rel, spec) for rel, spec in data["files"].items()})]
        for package in data.get("packages", []):  # installed packages counted on request (--include)
            self.roots.append((os.path.normcase(os.path.abspath(package["root"])),
                               {rel: _File(rel, spec) for rel, spec in package["files"].items()}))
        self._by_filename: dict[str, _File | None] = {}
        self._placeless: set[str] = set()

    def file_of(self, code) -> _File | None:
        """The plan's file holding ``code`` (None for code of any other file)."""
        name = code.co_filename
        try:
            return self._by_filename[name]
        except KeyError:
            pass
        found = None
        if not (name.startswith("<") and name.endswith(">")):
            path = os.path.normcase(os.path.abspath(name))
            for root, files in self.roots:
                if path.startswith(root + os.sep):
                    found = files.get(path[len(root) + 1:].replace(os.sep, "/"))
                    if found is not None:
                        break
        self._by_filename[name] = found
        return found

    def prepare(self, code) -> tuple[Any, dict[int, tuple[Any, ...]], int] | None:
        """What ``code`` counts: the counter of its calls (or None), {offset: counters entered} and the
        offset where a call starts (its first RESUME); None when it belongs to no file of the plan."""
        file = self.file_of(code)
        if file is None:
            return None
        counters = file.counters()
        matching = [(index, column) for index, line, name, column in file.plan["calls"]
                    if line == code.co_firstlineno and name == code.co_name]
        if len(matching) > 1:  # lambdas (or same-named functions) sharing a line: the nearest column before
            start = _body_column(code)
            before = [(column, index) for index, column in matching if column is not None and column <= start]
            matching = [(max(before)[1], None)] if before else matching[:1]
        call = counters[matching[0][0]] if matching else None
        entries: dict[int, list] = {}
        flow = _Flow(code)
        identity = [code.co_firstlineno, code.co_name]
        placeless = not any(flow.positions.values())
        for spec in file.plan["entries"]:
            indexes, span, owners = spec[0], spec[1:5], spec[5]
            if identity not in owners:
                continue
            if placeless:  # compiled without column positions: no construct can be found in it
                if file.rel not in self._placeless:
                    self._placeless.add(file.rel)
                    _warn(f"{file.rel}: compiled without column positions (-X no_debug_ranges or "
                          "PYTHONNODEBUGRANGES): its loop, branch and handler counts stay 0, its calls are counted")
                break
            for offset in flow.entries(span):
                entries.setdefault(offset, []).extend(counters[i] for i in indexes)
        return call, {offset: tuple(found) for offset, found in entries.items()}, flow.start


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _ints(value: Any, size: int | None = None) -> bool:
    return isinstance(value, list) and (size is None or len(value) == size) and all(_is_int(v) for v in value)


def _items(spec: dict, field: str) -> list[Any]:
    """The list ``spec[field]``, or one item no check accepts when it is not a list."""
    value = spec.get(field)
    return value if isinstance(value, list) else [None]


def _file_problem(spec: Any) -> str | None:
    """What is wrong with one file's plan (None when it can be used)."""
    if not isinstance(spec, dict):
        return "expected an object"
    counters: Any = spec.get("counters")
    hidden: Any = spec.get("hidden")
    if not isinstance(counters, list) or not all(isinstance(c, str) for c in counters):
        return "field counters: expected a list of feature ids"
    if not _is_int(hidden) or hidden < 0:
        return "field hidden: expected a count"
    size = len(counters) + hidden
    for call in _items(spec, "calls"):
        if not (isinstance(call, list) and len(call) == 4 and _is_int(call[0]) and 0 <= call[0] < len(counters)
                and _is_int(call[1]) and isinstance(call[2], str) and (call[3] is None or _is_int(call[3]))):
            return "field calls: expected [index, line, name, column or null] items"
    for entry in _items(spec, "entries"):
        if not (isinstance(entry, list) and len(entry) == 6 and _ints(entry[0]) and entry[0]
                and all(0 <= i < size for i in entry[0]) and _ints(entry[1:5])
                and isinstance(entry[5], list) and all(isinstance(o, list) and len(o) == 2 and _is_int(o[0])
                                                       and isinstance(o[1], str) for o in entry[5])):
            return "field entries: expected [[indexes], line, col, end_line, end_col, [[line, name], ...]] items"
    if hidden > sum(len(entry[0]) for entry in _items(spec, "entries")):  # each is counted at an entry of its own
        return "field hidden: more hidden counters than the entries count into"
    for derived in _items(spec, "derived"):
        if not (isinstance(derived, list) and len(derived) == 2 and _is_int(derived[0]) and 0 <= derived[0] < len(counters)
                and isinstance(derived[1], list) and all(
                    isinstance(t, list) and len(t) == 2 and _is_int(t[0]) and 0 <= t[0] < size and _is_int(t[1])
                    for t in derived[1])):
            return "field derived: expected [index, [[counter index, coefficient], ...]] items"
    return None


def plan_problem(data: Any) -> str | None:
    """What makes ``data`` unusable as a monitor plan, in one line naming the field (None: usable)."""
    if not isinstance(data, dict) or data.get("format") != PLAN_FORMAT:
        return "not a mantispy monitor plan"
    if data.get("version") != PLAN_VERSION:
        return f"monitor plan version {data.get('version')!r}; this mantispy reads version {PLAN_VERSION}"
    roots = [("", data)] + [(f"packages[{n}].", p) for n, p in enumerate(data.get("packages", []))] \
        if isinstance(data.get("packages", []), list) else None
    if roots is None:
        return "field packages: expected a list"
    for prefix, part in roots:
        if not isinstance(part, dict) or not isinstance(part.get("root"), str) or not isinstance(part.get("files"), dict):
            return f"field {prefix}root / {prefix}files: expected a folder and an object of files"
        for rel, spec in part["files"].items():
            problem = _file_problem(spec)
            if problem is not None:
                return f"{prefix}files[{json.dumps(rel)}]: {problem}"
    return None


class _Flow:
    """A code object's instructions: positions, and where control comes from (fall-through and jumps)."""

    __slots__ = ("offsets", "positions", "predecessors", "start")

    def __init__(self, code) -> None:
        import dis

        jumps = set(dis.hasjrel) | set(dis.hasjabs) | set(getattr(dis, "hasjump", ()))
        instructions = list(dis.get_instructions(code))
        self.offsets = [i.offset for i in instructions]
        self.start = next((i.offset for i in instructions if i.opname == "RESUME"), 0)  # where a call begins
        self.positions: dict[int, tuple[int, int, int, int] | None] = {}
        self.predecessors: dict[int, list[int]] = {o: [] for o in self.offsets}
        for n, instruction in enumerate(instructions):
            pos = instruction.positions
            place = None if pos is None else (pos.lineno, pos.col_offset, pos.end_lineno, pos.end_col_offset)
            self.positions[instruction.offset] = place if place is not None and None not in place else None  # type: ignore[assignment]
            if instruction.opcode in jumps and isinstance(instruction.argval, int) and instruction.argval in self.predecessors:
                self.predecessors[instruction.argval].append(instruction.offset)
            if n + 1 < len(instructions) and not _ends_flow(instruction.opname):
                self.predecessors[instructions[n + 1].offset].append(instruction.offset)

    def entries(self, span) -> list[int]:
        """Offsets inside ``span`` that control reaches from outside it: the construct's first instruction,
        once per copy the compiler made of it. An instruction that only jumps back into the construct
        (its implicit ``return None`` placed elsewhere with the test's position) is no entry."""
        found = []
        for offset in self.offsets:
            pos = self.positions[offset]
            if pos is not None and _inside(pos, span) and (offset == self.offsets[0] or self._from_outside(offset, span)):
                found.append(offset)
        return found

    def _from_outside(self, offset: int, span) -> bool:
        seen = {offset}
        stack = list(self.predecessors[offset])
        while stack:
            before = stack.pop()
            if before in seen:
                continue
            seen.add(before)
            pos = self.positions[before]
            if pos is None:  # a compiler artefact without a place: look through it
                if before == self.offsets[0]:
                    return True
                stack.extend(self.predecessors[before])
            elif not _inside(pos, span):
                return True
        return False


def _ends_flow(opname: str) -> bool:
    return (opname.startswith(("RETURN", "RAISE", "RERAISE"))
            or opname in ("JUMP_FORWARD", "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT", "JUMP", "JUMP_NO_INTERRUPT"))


def _inside(pos: tuple[int, int, int, int], span) -> bool:
    line, col, end_line, end_col = span
    return (line, col) <= (pos[0], pos[1]) and (pos[2], pos[3]) <= (end_line, end_col)


def _body_column(code) -> int:
    """The column where ``code``'s body starts: its first positioned, non-empty instruction on its first line."""
    columns = [pos[1] for pos in _Flow(code).positions.values()
               if pos is not None and pos[0] == code.co_firstlineno and (pos[2], pos[3]) > (pos[0], pos[1])]
    return min(columns) if columns else 0


# ------------------------------------------------------------------------------------------ backends

_plan: Plan | None = None
_tool_id: int | None = None
_messages: list[str] = []
_seen_tools: dict[int, str] = {}
"""Other sys.monitoring tools seen while counting (at start, at each code object's first start, at exit)."""


def tools_in_use() -> dict[int, str]:
    """The sys.monitoring tool ids other tools hold (3.12+; empty before)."""
    monitoring = getattr(sys, "monitoring", None)
    if monitoring is None:
        return {}
    return {i: monitoring.get_tool(i) for i in range(6) if monitoring.get_tool(i) is not None and i != _tool_id}


def _install_monitoring(plan: Plan) -> None:
    global _tool_id
    monitoring = getattr(sys, "monitoring")  # noqa: B009 - 3.12+ only; the type checker runs on 3.11
    events = monitoring.events
    free = [i for i in PREFERRED_TOOL_IDS if monitoring.get_tool(i) is None]
    if not free:
        taken = ", ".join(f"{i} ({monitoring.get_tool(i)})" for i in range(6) if monitoring.get_tool(i))
        _warn(f"no free sys.monitoring tool id (taken: {taken}); features not counted")
        return
    tool = free[0]
    monitoring.use_tool_id(tool, TOOL_NAME)
    _tool_id = tool
    disable = monitoring.DISABLE
    # Keyed by id(code): a code object hashes its whole contents on every lookup (about half a microsecond
    # for a large function), which made the lookups, not the events, most of the backend's cost.
    # ``keep`` holds every prepared code object, so that no id is reused by another while counting.
    prepared: dict[int, tuple[Any, dict[int, tuple[Any, ...]], int] | None] = {}
    entered: dict[int, dict[int, Any]] = {}  # id(code) -> {offset: its one counter, or a tuple of them}
    keep: list[Any] = []
    lock = threading.Lock()
    # Beside another tool, the lines holding a counted instruction get LINE events of mantispy's own, kept on:
    # CPython (3.12, 3.13) drops a tool's INSTRUCTION event at an instruction where another tool's LINE
    # callback returns DISABLE and no other tool's LINE event remains there (coverage.py's sysmon core
    # does so at each line's first run, so every counted line's first count was lost).
    guarded: dict[int, frozenset[int]] = {}  # id(code) -> lines holding a counted instruction

    def guard(code) -> None:
        offsets = entered[id(code)]
        guarded[id(code)] = frozenset(line for start, end, line in code.co_lines()
                                      if line is not None and any(start <= o < end for o in offsets))
        monitoring.set_local_events(tool, code, events.INSTRUCTION | events.LINE)

    def note_other_tools() -> None:
        others = tools_in_use()
        if others and not _seen_tools:
            for code in keep:
                if id(code) in entered and id(code) not in guarded:
                    guard(code)
        _seen_tools.update(others)

    def on_start(code, offset):
        try:
            found = prepared[id(code)]
        except KeyError:
            with lock:
                found = prepared.get(id(code), False)
                if found is False:
                    note_other_tools()
                    found = plan.prepare(code)
                    keep.append(code)
                    prepared[id(code)] = found
                    if found is not None and found[1]:
                        entered[id(code)] = {offset: hits[0] if len(hits) == 1 else hits for offset, hits in found[1].items()}
                        if _seen_tools:
                            guard(code)
                        else:
                            monitoring.set_local_events(tool, code, events.INSTRUCTION)
        if found is None or found[0] is None:
            return disable
        next(found[0])
        return None

    def on_line(code, line):
        lines = guarded.get(id(code))
        return None if lines is not None and line in lines else disable

    def on_instruction(code, offset):
        try:
            hit = entered[id(code)][offset]
        except KeyError:
            return disable
        if hit.__class__ is tuple:
            for counter in hit:
                next(counter)
        else:
            next(hit)
        return None

    monitoring.register_callback(tool, events.PY_START, on_start)
    monitoring.register_callback(tool, events.INSTRUCTION, on_instruction)
    monitoring.register_callback(tool, events.LINE, on_line)
    monitoring.set_events(tool, events.PY_START)
    if os.environ.get(_collector.ENV_ROOT) == str(os.getpid()) or not os.environ.get(_collector.ENV_ROOT):
        import atexit

        atexit.register(_report_other_tools)


def _report_other_tools() -> None:
    """At exit: the sys.monitoring tools that ran beside mantispy, if any (one line): those seen while it
    counted (a tool may start after mantispy and stop before the program exits) and those still there."""
    _seen_tools.update(tools_in_use())
    if _seen_tools:
        _warn("sys.monitoring tools beside mantispy: " + ", ".join(f"{i} ({n})" for i, n in sorted(_seen_tools.items())))


def _install_trace(plan: Plan) -> None:
    """3.11: the same counts through sys.settrace (call events, opcode events in the program's frames).

    Each code object's opcode tracer is a closure over its own {offset: counters}, made once, so an opcode
    event looks nothing up by code object (whose hash covers its whole contents)."""
    prepared: dict[int, tuple[Any, Any, int] | None] = {}  # id(code) -> (call counter, tracer, RESUME offset)
    keep: list[Any] = []  # every code object looked at: no id is reused by another while counting

    def tracer_for(hits_at: dict[int, tuple[Any, ...]]) -> Any:
        def local(frame, event, arg):
            if event == "opcode":
                hits = hits_at.get(frame.f_lasti)
                if hits is not None:
                    for counter in hits:
                        next(counter)
            return local
        return local

    def on_call(frame, event, arg):
        if event != "call":
            return None
        code = frame.f_code
        try:
            found = prepared[id(code)]
        except KeyError:
            made = plan.prepare(code)
            keep.append(code)
            found = prepared[id(code)] = None if made is None else (
                made[0], tracer_for(made[1]) if made[1] else None, made[2])
        if found is None:
            return None
        # a generator's resumption is a "call" event too, at another RESUME than the first
        if found[0] is not None and frame.f_lasti == found[2]:
            next(found[0])
        if found[1] is None:
            return None
        frame.f_trace_opcodes = True
        frame.f_trace_lines = False
        return found[1]

    sys.settrace(on_call)
    threading.settrace(on_call)
    _trace_raw_threads(on_call)
    import atexit

    atexit.register(_report_replaced_trace, on_call)


def _trace_raw_threads(tracer: Any) -> None:
    """Threads started by ``_thread.start_new_thread`` itself (not through ``threading``, whose hook covers
    its own) get the tracer too: 3.11 traces per thread, where 3.12's sys.monitoring sees every thread."""
    import _thread
    import functools

    start = _thread.start_new_thread

    def start_new_thread(function, args, kwargs=None):
        @functools.wraps(function)
        def traced(*a, **k):
            sys.settrace(tracer)
            return function(*a, **k)

        return start(traced, args) if kwargs is None else start(traced, args, kwargs)

    _thread.start_new_thread = _thread.start_new = start_new_thread


def _report_replaced_trace(ours: Any) -> None:
    """At exit on 3.11: when another tracer (coverage.py's, a debugger's) took the thread's one trace hook
    from mantispy's, say so: counting stopped there (functions started later in this thread, and their
    loops and branches, went uncounted)."""
    current = sys.gettrace()
    if current is ours:
        return
    if current is None:
        _warn("mantispy's sys.settrace hook was replaced or removed while the program ran (Python 3.11 has one trace hook "
              "per thread; on 3.12+ sys.monitoring gives each tool its own): counts stop where it was removed")
        return
    owner = getattr(current, "__qualname__", None) or type(current).__qualname__
    module = getattr(current, "__module__", None) or type(current).__module__
    _warn(f"another tracer ({module}.{owner}) took mantispy's sys.settrace hook while the program ran (Python "
          "3.11 has one trace hook per thread; on 3.12+ sys.monitoring gives each tool its own): counts stop "
          "where it took it")


def _warn(message: str) -> None:
    _messages.append(message)
    try:
        sys.stderr.write(f"mantispy: {message}\n")
    except (OSError, ValueError):
        pass


def install(plan: Plan) -> str:
    """Start counting the plan's features in this process; returns the mechanism used."""
    global _plan
    _plan = plan
    if hasattr(sys, "monitoring"):
        others = tools_in_use()
        if others:
            _warn("sys.monitoring tools already active: " + ", ".join(f"{i} ({n})" for i, n in sorted(others.items())))
        _install_monitoring(plan)
        _seen_tools.update(others)
        return "sys.monitoring"
    _install_trace(plan)
    return "sys.settrace"


def install_from_file(path: str) -> str | None:
    """Install from the plan at ``path`` (nothing, with one line on stderr, when it cannot be read)."""
    try:
        with open(path, encoding="utf-8") as handle:
            plan = Plan(json.load(handle))
    except (OSError, ValueError) as exc:
        _warn(f"{path}: {exc}; features not counted")
        return None
    return install(plan)
