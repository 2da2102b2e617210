"""Performance counters of a process through Linux's ``perf_event_open`` (standard library and ctypes).

Hardware events (instructions, cycles, cache references and misses, branches and branch misses) need
a PMU the kernel exposes; virtual machines often have none. Software events (task-clock, page faults,
context switches, CPU migrations) are counted by the kernel itself and work wherever
``perf_event_open`` is allowed. Each event is opened on its own (with ``inherit``, so threads and
child processes the program starts after the counter opened are counted too, summed into it as they
exit) and read with the times it was enabled and running, so a counter the kernel multiplexed with
others is scaled up to the whole time (``value * enabled / running``). A group read (one ``read`` for
all events) is not used for them: the perf_event_open manual says some kernels refuse it on inherited
counters. With ``on_exec`` they are opened switched off and the kernel switches them on at the exec: opened
on the calling thread before it starts a program, they count that program from its first instruction.

:func:`probe` says which events this machine offers and why the others are missing, in words: no PMU
(``ENOENT``/``EOPNOTSUPP``), ``perf_event_paranoid`` (``EACCES``/``EPERM``), no ``perf_event_open`` at
all (``ENOSYS``: a seccomp filter, or a kernel built without perf events). :func:`open_counters` opens
the available events of one process. Where nothing opens, ``resource.getrusage`` still gives page
faults, context switches and block IO of reaped children (:func:`rusage_metrics`), which is what a
run's stored metrics fall back to.

:class:`ReplayCounters` stands in for :class:`Counters` with recorded values (``read()`` and
``close()``, the :class:`CounterSource` protocol): how the hardware path is exercised on a machine
without a PMU.
"""

from __future__ import annotations

import ctypes
import errno
import os
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

PERF_TYPE_HARDWARE = 0
PERF_TYPE_SOFTWARE = 1

HARDWARE_EVENTS: dict[str, int] = {
    "hw.cycles": 0, "hw.instructions": 1, "hw.cache_references": 2, "hw.cache_misses": 3,
    "hw.branches": 4, "hw.branch_misses": 5,
}
"""Stored metric name -> ``PERF_COUNT_HW_*`` config."""

SOFTWARE_EVENTS: dict[str, int] = {
    "sw.task_clock_ns": 1, "sw.page_faults": 2, "sw.context_switches": 3, "sw.cpu_migrations": 4,
}
"""Stored metric name -> ``PERF_COUNT_SW_*`` config."""

EVENTS: dict[str, tuple[int, int]] = {
    **{name: (PERF_TYPE_HARDWARE, config) for name, config in HARDWARE_EVENTS.items()},
    **{name: (PERF_TYPE_SOFTWARE, config) for name, config in SOFTWARE_EVENTS.items()},
}

_SYSCALL = {"x86_64": 298, "aarch64": 241, "armv7l": 364, "ppc64le": 319, "s390x": 331, "riscv64": 241}
_ATTR_SIZE = 128  # PERF_ATTR_SIZE_VER7 is 128; older kernels accept a larger size whose tail is zero
_FORMAT_TIMES = 1 | 2  # PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING
_FORMAT_GROUP = 8  # PERF_FORMAT_GROUP: the leader's read gives every member's value
_FLAG_DISABLED = 1 << 0
_FLAG_INHERIT = 1 << 1
_FLAG_ENABLE_ON_EXEC = 1 << 12
_FLAG_EXCLUDE_KERNEL = 1 << 5
_FLAG_EXCLUDE_HV = 1 << 6
_PERF_FLAG_FD_CLOEXEC = 8

_WHY = {
    errno.ENOENT: "this CPU (or the virtual machine) exposes no such event: no hardware PMU",
    errno.EOPNOTSUPP: "this CPU (or the virtual machine) exposes no such event: no hardware PMU",
    errno.ENODEV: "this CPU (or the virtual machine) exposes no such event: no hardware PMU",
    errno.EACCES: "not permitted: /proc/sys/kernel/perf_event_paranoid is {paranoid}; run as root, or set it "
                  "to 2 or less (1 for kernel events)",
    errno.EPERM: "not permitted: /proc/sys/kernel/perf_event_paranoid is {paranoid} (or a seccomp filter "
                 "refuses it); run as root, or set it to 2 or less",
    errno.ENOSYS: "perf_event_open is not available here (a seccomp filter, or a kernel without perf events)",
    errno.EINVAL: "the kernel refused the event's settings (an old kernel?)",
    errno.EMFILE: "too many open files: raise the limit (ulimit -n)",
}


class CounterSource(Protocol):
    """What reads a process's counters: live (:class:`Counters`) or recorded (:class:`ReplayCounters`)."""

    def read(self) -> dict[str, float]:
        """Current cumulative values, by stored metric name (scaled for multiplexing)."""
        ...

    def close(self) -> None:
        """Release the counters."""
        ...


@dataclass(frozen=True)
class EventStatus:
    """Whether one event can be counted on this machine, and if not, why."""

    name: str
    kind: str  # "hardware" | "software"
    available: bool
    reason: str  # "" when available
    code: int = 0  # the errno perf_event_open gave (0 when available)


class Counters:
    """Open counters of one process (see :func:`open_counters`)."""

    def __init__(self, pid: int, fds: dict[str, int]) -> None:
        self.pid, self.fds = pid, fds

    def read(self) -> dict[str, float]:
        """Current values scaled by enabled/running time; an event that never ran is left out."""
        values = {}
        for name, fd in list(self.fds.items()):
            try:
                data = os.read(fd, 24)
            except OSError:
                continue
            if len(data) != 24:
                continue
            value, enabled, running = struct.unpack("=QQQ", data)
            if running == 0:
                continue
            values[name] = float(value) * (enabled / running if running < enabled else 1.0)
        return values

    def values(self) -> list[float]:
        """Current values in the order the counters were opened (:attr:`fds`), unscaled: a per-call reader's
        fast path (0 for one that cannot be read)."""
        values = []
        for fd in self.fds.values():
            try:
                data = os.read(fd, 24)
            except OSError:
                data = b""
            values.append(float(struct.unpack("=QQQ", data)[0]) if len(data) == 24 else 0.0)
        return values

    def close(self) -> None:
        """Close every counter."""
        for fd in self.fds.values():
            try:
                os.close(fd)
            except OSError:
                pass
        self.fds = {}


class ReplayCounters:
    """Recorded counter values standing in for live ones (``read`` returns them; tests and machines
    without a PMU use it to exercise what consumes hardware counters)."""

    def __init__(self, values: Mapping[str, float]) -> None:
        self.values = {str(name): float(value) for name, value in values.items()}
        self.closed = False

    def read(self) -> dict[str, float]:
        """The recorded values."""
        return dict(self.values)

    def close(self) -> None:
        """Nothing to release."""
        self.closed = True


def paranoid_level() -> str:
    """``/proc/sys/kernel/perf_event_paranoid`` as text, or "unknown"."""
    try:
        with open("/proc/sys/kernel/perf_event_paranoid", encoding="ascii") as handle:
            return handle.read().strip()
    except OSError:
        return "unknown"


def _attr(kind: int, config: int, inherit: bool, group: bool = False, on_exec: bool = False) -> ctypes.Array:
    buffer = ctypes.create_string_buffer(_ATTR_SIZE)
    struct.pack_into("=IIQ", buffer, 0, kind, _ATTR_SIZE, config)
    struct.pack_into("=Q", buffer, 32, _FORMAT_TIMES | (_FORMAT_GROUP if group else 0))  # read_format
    flags = _FLAG_EXCLUDE_HV | (_FLAG_INHERIT if inherit else 0)
    if on_exec:
        flags |= _FLAG_DISABLED | _FLAG_ENABLE_ON_EXEC
    if kind == PERF_TYPE_HARDWARE:
        flags |= _FLAG_EXCLUDE_KERNEL  # user-space work: allowed at perf_event_paranoid 2, and what the program does
    struct.pack_into("=Q", buffer, 40, flags)
    return buffer


def _open_one(pid: int, name: str, inherit: bool, group_fd: int = -1,
              group: bool = False, on_exec: bool = False) -> tuple[int | None, int]:
    """(fd, 0) or (None, errno)."""
    number = _SYSCALL.get(os.uname().machine)
    if number is None:
        return None, errno.ENOSYS
    libc = ctypes.CDLL(None, use_errno=True)
    kind, config = EVENTS[name]
    fd = libc.syscall(ctypes.c_long(number), _attr(kind, config, inherit, group, on_exec), ctypes.c_int(pid), ctypes.c_int(-1),
                      ctypes.c_int(group_fd), ctypes.c_ulong(_PERF_FLAG_FD_CLOEXEC))
    if fd < 0:
        return None, ctypes.get_errno() or errno.EINVAL
    return fd, 0


_NO_PMU = (errno.ENOENT, errno.EOPNOTSUPP, errno.ENODEV)
"""The errors that say the machine has no such event (not that the event was refused)."""


def _reason(code: int) -> str:
    paranoid = paranoid_level()
    if code == errno.EPERM and paranoid.lstrip("-").isdigit() and int(paranoid) <= 2:
        text = (f"not permitted though /proc/sys/kernel/perf_event_paranoid is {paranoid}: a seccomp filter or the "
                "container's policy refuses perf_event_open; run outside it, or as root")
    else:
        text = _WHY.get(code, "perf_event_open failed").format(paranoid=paranoid)
    return f"{text} ({errno.errorcode.get(code, code)})"


def refused_note(statuses: list[EventStatus], instead: str | None = None) -> str | None:
    """One line on the events this machine has but refuses to open here (not those it lacks, such as the
    hardware events of a virtual machine without a PMU), and what is measured instead (by default what
    runs store); None when none is."""
    refused = [s for s in statuses if not s.available and s.code not in _NO_PMU]
    if not refused:
        return None
    names = ", ".join(s.name for s in refused)
    instead = instead or f"runs store what the kernel's accounting says instead ({', '.join(RUSAGE_METRICS)})"
    return f"perf events refused here: {names}: {refused[0].reason}; {instead}; see mantispy counters"


def probe(names: list[str] | None = None) -> list[EventStatus]:
    """Try to open each event on this process (then close it): what this machine offers, and why not."""
    found = []
    for name in names or list(EVENTS):
        fd, code = _open_one(0, name, inherit=False)
        if fd is not None:
            os.close(fd)
        kind = "hardware" if EVENTS[name][0] == PERF_TYPE_HARDWARE else "software"
        found.append(EventStatus(name, kind, fd is not None, "" if fd is not None else _reason(code), code))
    return found


def open_counters(pid: int, names: list[str] | None = None, inherit: bool = True,
                  on_exec: bool = False) -> tuple[Counters | None, dict[str, str]]:
    """Open ``names`` (default: every event) on process ``pid``: (counters or None if none opened,
    {event: why it did not open}). ``on_exec``: they stay off until ``pid``, or with ``inherit`` a process it
    starts afterwards, execs; ``open_counters(0, on_exec=True)`` before starting a program counts the
    program from its first instruction, and nothing of the thread that started it."""
    fds: dict[str, int] = {}
    refused: dict[str, str] = {}
    for name in names or list(EVENTS):
        fd, code = _open_one(pid, name, inherit, on_exec=on_exec)
        if fd is None:
            refused[name] = _reason(code)
        else:
            fds[name] = fd
    return (Counters(pid, fds) if fds else None), refused


class CounterGroup:
    """Counters of one thread (or process) read together, in one ``read``: what a reader at every call of
    a function wants. Linux allows it only without ``inherit``."""

    def __init__(self, leader: int, members: list[tuple[str, int]]) -> None:
        self.leader, self.members = leader, members
        self.names = [name for name, _ in members]
        self._size = 8 * (3 + len(members))

    def values(self) -> list[float]:
        """The members' current values, in :attr:`names` order, scaled for multiplexing (zeros if unreadable)."""
        try:
            data = os.read(self.leader, self._size)
        except OSError:
            data = b""
        if len(data) != self._size:
            return [0.0] * len(self.members)
        nr, enabled, running, *counts = struct.unpack(f"={3 + len(self.members)}Q", data)
        scale = enabled / running if 0 < running < enabled else 1.0
        return [float(c) * scale for c in counts[:nr]] + [0.0] * (len(self.members) - nr)

    def read(self) -> dict[str, float]:
        """Current values by stored metric name."""
        return dict(zip(self.names, self.values()))

    def close(self) -> None:
        """Close every counter of the group."""
        for _, fd in self.members:
            try:
                os.close(fd)
            except OSError:
                pass
        self.members = []


def open_group(pid: int, names: list[str] | None = None) -> tuple[CounterGroup | None, dict[str, str]]:
    """Open ``names`` (default: every event) on ``pid`` (0: the calling thread) as one group, without
    ``inherit``: (the group or None if none opened, {event: why it did not open})."""
    members: list[tuple[str, int]] = []
    refused: dict[str, str] = {}
    # task-clock must not lead: under a task-clock leader this kernel counts no page fault of the members
    ordered = sorted(names or list(EVENTS), key=lambda name: name == "sw.task_clock_ns")
    for name in ordered:
        fd, code = _open_one(pid, name, inherit=False, group_fd=members[0][1] if members else -1, group=True)
        if fd is None:
            refused[name] = _reason(code)
        else:
            members.append((name, fd))
    return (CounterGroup(members[0][1], members) if members else None), refused


RUSAGE_METRICS = ("ru.minor_faults", "ru.major_faults", "ru.voluntary_switches", "ru.involuntary_switches",
                  "ru.blocks_in", "ru.blocks_out")
"""What ``wait4``'s resource usage of a reaped child gives besides CPU time: the counters' fallback."""


def rusage_metrics(usage) -> dict[str, float]:
    """Page faults, context switches and block IO from a ``resource.struct_rusage`` (``os.wait4``)."""
    return {"ru.minor_faults": float(usage.ru_minflt), "ru.major_faults": float(usage.ru_majflt),
            "ru.voluntary_switches": float(usage.ru_nvcsw), "ru.involuntary_switches": float(usage.ru_nivcsw),
            "ru.blocks_in": float(usage.ru_inblock), "ru.blocks_out": float(usage.ru_oublock)}


_PROC_IO_FIELDS = {"rchar": "io.read_chars", "wchar": "io.write_chars", "syscr": "io.read_syscalls",
                   "syscw": "io.write_syscalls", "read_bytes": "io.read_bytes", "write_bytes": "io.write_bytes"}
PROC_IO_METRICS = tuple(_PROC_IO_FIELDS.values())
"""What ``/proc/PID/io`` gives of a process and its reaped descendants: characters read and written and the
system calls that did it (files, pipes, sockets alike), and the bytes that reached or came from storage."""


def proc_io_metrics(pid: int) -> dict[str, float]:
    """``/proc/PID/io`` of a process that has exited and is not reaped yet (``waitid`` with ``WNOWAIT``):
    its whole run's IO, its reaped descendants' included; {} where it cannot be read."""
    try:
        with open(f"/proc/{pid}/io", encoding="ascii") as handle:
            text = handle.read()
    except OSError:
        return {}
    found = {}
    for line in text.splitlines():
        field, _, value = line.partition(":")
        name = _PROC_IO_FIELDS.get(field.strip())
        if name is not None and value.strip().isdigit():
            found[name] = float(value)
    return found


COUNTER_PREFIXES = ("hw.", "sw.", "ru.", "io.")


def is_counter_metric(name: str) -> bool:
    """Whether a stored metric is a counter (``hw.*``, ``sw.*``) or the kernel's accounting (``ru.*``,
    ``io.*``)."""
    return name.startswith(COUNTER_PREFIXES)
