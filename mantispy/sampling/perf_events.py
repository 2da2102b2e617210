"""Linux software performance counters (task-clock, page faults, context switches) of one process,
through ``perf_event_open`` (ctypes).

Software events need no PMU, so they work in virtual machines; ``perf_event_paranoid`` and seccomp may
still refuse them, and :func:`open_counters` then returns nothing and says why. Hardware events
(instructions, cycles) are the counter backend's business (issue 22).
"""

from __future__ import annotations

import ctypes
import os
import struct

PERF_TYPE_SOFTWARE = 1
SOFTWARE_EVENTS = {"perf.task_clock_ns": 1, "perf.page_faults": 2, "perf.context_switches": 3,
                   "perf.cpu_migrations": 4}
_SYSCALL = {"x86_64": 298, "aarch64": 241}
_ATTR_SIZE = 128
_FLAG_EXCLUDE_HV = 1 << 6
_PERF_FLAG_FD_CLOEXEC = 8


class PerfCounters:
    """Open software counters of one process; :meth:`read` gives {metric: value} (cumulative)."""

    def __init__(self, pid: int, fds: dict[str, int]) -> None:
        self.pid, self.fds = pid, fds

    def read(self) -> dict[str, float]:
        """Current values (a counter whose process is gone is dropped)."""
        values = {}
        for metric, fd in list(self.fds.items()):
            try:
                data = os.read(fd, 8)
            except OSError:
                data = b""
            if len(data) == 8:
                values[metric] = float(struct.unpack("=Q", data)[0])
        return values

    def close(self) -> None:
        """Close every counter."""
        for fd in self.fds.values():
            try:
                os.close(fd)
            except OSError:
                pass
        self.fds = {}


def _attr(config: int) -> ctypes.Array:
    buffer = ctypes.create_string_buffer(_ATTR_SIZE)
    struct.pack_into("=IIQ", buffer, 0, PERF_TYPE_SOFTWARE, _ATTR_SIZE, config)
    struct.pack_into("=Q", buffer, 40, _FLAG_EXCLUDE_HV)
    return buffer


def open_counters(pid: int) -> tuple[PerfCounters | None, str | None]:
    """Software counters of process ``pid``, or (None, why not)."""
    number = _SYSCALL.get(os.uname().machine)
    if number is None:
        return None, f"no perf_event_open table for {os.uname().machine}"
    libc = ctypes.CDLL(None, use_errno=True)
    fds: dict[str, int] = {}
    why = None
    for metric, config in SOFTWARE_EVENTS.items():
        fd = libc.syscall(ctypes.c_long(number), _attr(config), ctypes.c_int(pid), ctypes.c_int(-1), ctypes.c_int(-1),
                          ctypes.c_ulong(_PERF_FLAG_FD_CLOEXEC))
        if fd < 0:
            error = ctypes.get_errno()
            why = f"perf_event_open refused ({os.strerror(error)}; see /proc/sys/kernel/perf_event_paranoid)"
            continue
        fds[metric] = fd
    return (PerfCounters(pid, fds), None) if fds else (None, why)
