"""Per-process resource time series of a process tree (psutil), plus Linux software perf events.

Every ``interval`` seconds :class:`ResourcePoller` visits the recorded program and its descendants and
makes points (OpenTSDB-shaped: metric, timestamp, value, tags ``host``, ``pid``, ``command``, ``run``):
CPU user and system seconds (cumulative) and CPU percent since the last poll, RSS bytes, read and write
bytes (cumulative), threads, voluntary and involuntary context switches (cumulative), open files; and,
where ``perf_event_open`` allows, task-clock, page faults, context switches and CPU migrations.
"""

from __future__ import annotations

import socket
import time

import psutil

from .perf_events import PerfCounters, open_counters
from .types import Point


class ResourcePoller:
    """Polls one process tree; :meth:`poll` returns the points of one visit."""

    def __init__(self, root_pid: int, run: str, perf: bool = True) -> None:
        self.root_pid = root_pid
        self.run = run
        self.host = socket.gethostname()
        self.perf = perf
        self.perf_note: str | None = None
        self._processes: dict[int, psutil.Process] = {}
        self._counters: dict[int, PerfCounters] = {}
        self._last_cpu: dict[int, tuple[float, float]] = {}
        self._tried: set[int] = set()
        self.seen: set[int] = set()

    def _tree(self) -> list[psutil.Process]:
        try:
            root = self._processes.get(self.root_pid) or psutil.Process(self.root_pid)
            self._processes[self.root_pid] = root
            found = [root, *root.children(recursive=True)]
        except psutil.Error:
            return [p for p in self._processes.values() if _running(p)]
        for process in found:
            self._processes.setdefault(process.pid, process)
            if process.pid not in self._tried:
                self._tried.add(process.pid)
                if self.perf:
                    counters, why = open_counters(process.pid)
                    if counters is not None:
                        self._counters[process.pid] = counters
                    elif why and self.perf_note is None:
                        self.perf_note = why
        return [self._processes[p.pid] for p in found]

    def poll(self) -> list[Point]:
        """One visit of every process of the tree."""
        points: list[Point] = []
        for process in self._tree():
            try:
                with process.oneshot():
                    now = time.time()
                    cpu = process.cpu_times()
                    memory = process.memory_info()
                    threads = process.num_threads()
                    switches = process.num_ctx_switches()
                    try:
                        io = process.io_counters()
                    except (psutil.AccessDenied, AttributeError):
                        io = None
                    try:
                        files = process.num_fds()
                    except (psutil.AccessDenied, AttributeError):
                        files = None
                    name = " ".join(process.cmdline())[:200] or process.name()
            except psutil.Error:  # it ended between the listing and the visit
                continue
            self.seen.add(process.pid)
            tags = {"host": self.host, "pid": str(process.pid), "command": name, "run": self.run}
            values = {"proc.cpu.user_s": cpu.user, "proc.cpu.system_s": cpu.system, "proc.rss_bytes": memory.rss,
                      "proc.threads": threads, "proc.ctx.voluntary": switches.voluntary,
                      "proc.ctx.involuntary": switches.involuntary}
            previous = self._last_cpu.get(process.pid)
            used = cpu.user + cpu.system
            if previous is not None and now > previous[0]:
                values["proc.cpu.percent"] = 100.0 * (used - previous[1]) / (now - previous[0])
            self._last_cpu[process.pid] = (now, used)
            if io is not None:
                values["proc.io.read_bytes"] = io.read_bytes
                values["proc.io.write_bytes"] = io.write_bytes
            if files is not None:
                values["proc.open_files"] = files
            counters = self._counters.get(process.pid)
            if counters is not None:
                values.update(counters.read())
            points += [Point(metric, now, float(value), tags) for metric, value in values.items()]
        return points

    def close(self) -> None:
        """Close the perf counters."""
        for counters in self._counters.values():
            counters.close()
        self._counters.clear()


def _running(process: psutil.Process) -> bool:
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False
