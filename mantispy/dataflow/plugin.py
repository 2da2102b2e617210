"""The scheduler plugin that records a Dask job: its task graph, each task's run, the workers' series.

It runs inside the scheduler (a LocalCluster mantispy starts, or a remote ``dask scheduler`` whose
environment has mantispy installed), so it imports only the standard library and ``distributed``, keeps
plain JSON-ready values, and never raises into the scheduler: a hook that fails adds a note instead.
:func:`snapshot` is what ``Client.run_on_scheduler`` calls to read it back.
"""

from __future__ import annotations

import functools
import inspect
import time
from typing import Any

from distributed.diagnostics.plugin import SchedulerPlugin, WorkerPlugin

PLUGIN_NAME = "mantispy-dataflow"
TRANSFER_TOPIC = f"{PLUGIN_NAME}-transfer"
"""The event topic on which :class:`TransferLog` reports each fetch to the scheduler."""
FUNCTIONS_PER_OPERATION = 3
"""How many tasks of each operation have their callables located (the rest run the same code)."""
_MAX_CALLABLES = 24
_MAX_DEPTH = 6


class DataflowRecorder(SchedulerPlugin):
    """Keeps the graph, the task runs, worker facts and worker metric series of every job it sees."""

    name = PLUGIN_NAME

    def __init__(self, interval: float = 0.25) -> None:
        self.interval = interval
        self.graph: dict[str, dict[str, Any]] = {}
        self.runs: dict[str, dict[str, Any]] = {}
        self.functions: dict[str, list[dict[str, Any]]] = {}
        self.workers: dict[str, dict[str, Any]] = {}
        self.series: list[dict[str, Any]] = []
        self.transfers: list[dict[str, Any]] = []
        self.notes: list[str] = []
        self.metrics_at_start: dict[str, float] = {}
        self.started = time.time()
        self._last_heartbeat: dict[str, float] = {}
        self._located: dict[str, int] = {}
        self.methods: dict[str, list[dict[str, Any]]] = {}  # operation -> [{"method", "receivers": [type names]}]
        self._method_tasks: dict[str, tuple[str, list[str]]] = {}  # task -> (operation, methods it calls by name)
        self._scheduler: Any = None
        self._callback: Any = None

    async def start(self, scheduler: Any) -> None:
        """Remember the scheduler, its metrics so far, its workers; start sampling their metrics."""
        from tornado.ioloop import PeriodicCallback

        self._scheduler = scheduler
        self.started = time.time()
        self.metrics_at_start = _flat_metrics(scheduler)
        for address in list(scheduler.workers):
            self.add_worker(scheduler, address)
        self._callback = PeriodicCallback(self._sample, self.interval * 1000)
        self._callback.start()

    async def close(self) -> None:
        """Stop sampling."""
        if self._callback is not None:
            self._callback.stop()

    def _guarded(self, what: str, fn: Any, *args: Any) -> None:
        try:
            fn(*args)
        except Exception as exc:  # noqa: BLE001 - a recorder must never break the scheduler
            note = f"{what}: {type(exc).__name__}: {exc}"
            if note not in self.notes and len(self.notes) < 50:
                self.notes.append(note)

    def add_worker(self, scheduler: Any, worker: str) -> None:
        """Note a worker's threads and memory limit."""
        self._guarded("add_worker", self._add_worker, scheduler, worker)

    def _add_worker(self, scheduler: Any, worker: str) -> None:
        ws = scheduler.workers[worker]
        self.workers[worker] = {"name": str(ws.name), "nthreads": int(ws.nthreads),
                                "memory_limit": int(ws.memory_limit or 0), "added": time.time()}

    def remove_worker(self, scheduler: Any, worker: str, **kwargs: Any) -> None:
        """Note when a worker left."""
        if worker in self.workers:
            self.workers[worker]["removed"] = time.time()

    def update_graph(self, scheduler: Any, *, client: str = "", keys: Any = (), tasks: Any = (),
                     annotations: Any = None, priority: Any = None, stimulus_id: str = "", **kwargs: Any) -> None:
        """Keep every new task's operation, dependencies and priority; locate a few tasks' callables."""
        self._guarded("update_graph", self._update_graph, scheduler, tasks, priority or {})

    def _update_graph(self, scheduler: Any, tasks: Any, priority: dict) -> None:
        now = time.time()
        for key in tasks:
            ts = scheduler.tasks.get(key)
            if ts is None:
                continue
            name = str(key)
            if name in self.graph and (name not in self.runs or ts.state == "memory"):
                continue  # a task of an earlier graph that a later one reuses (persisted data): submitted then
            operation = str(ts.prefix.name)
            prio = priority.get(key, ts.priority)
            self.graph[name] = {"operation": operation, "deps": [str(dep.key) for dep in ts.dependencies],
                                "priority": [float(p) for p in prio] if prio is not None else [],
                                "submitted": now}
            if self._located.get(operation, 0) < FUNCTIONS_PER_OPERATION:
                self._located[operation] = self._located.get(operation, 0) + 1
                located = self.functions.setdefault(operation, [])
                methods: list[str] = []
                for entry in _locate(ts.run_spec, methods):
                    if entry not in located:
                        located.append(entry)
                if methods:  # which class's method it is shows once the operand exists: see _finished
                    self._method_tasks[name] = (operation, methods)

    def transition(self, key: Any, start: str, finish: str, *args: Any, **kwargs: Any) -> None:
        """Keep each finished task's worker, thread, bytes and start/stop times."""
        if start == "processing" and finish in ("memory", "erred"):
            self._guarded("transition", self._finished, key, finish, kwargs)

    def _finished(self, key: Any, finish: str, kwargs: dict) -> None:
        stops = [{"action": str(s.get("action")), "start": float(s["start"]), "stop": float(s["stop"]),
                  **({"source": str(s["source"])} if s.get("source") else {})}
                 for s in kwargs.get("startstops") or ()]
        name = str(key)
        entry = {"worker": str(kwargs.get("worker", "")), "thread": int(kwargs.get("thread") or 0),
                 "nbytes": int(kwargs.get("nbytes") or 0), "startstops": stops,
                 "status": "memory" if finish == "memory" else "erred"}
        if name in self._method_tasks and finish == "memory" and self._scheduler is not None:
            self._receivers(key, *self._method_tasks.pop(name))
        if name not in self.graph and self._scheduler is not None:  # a task submitted before we started
            ts = self._scheduler.tasks.get(key)
            if ts is not None:
                self.graph[name] = {"operation": str(ts.prefix.name),
                                    "deps": [str(dep.key) for dep in ts.dependencies],
                                    "priority": [float(p) for p in ts.priority or ()], "submitted": None}
        self.runs[name] = entry

    def _receivers(self, key: Any, operation: str, methods: list[str]) -> None:
        """The types of a finished task's inputs, on which the methods it calls by name may be found (the
        recorder looks them up after the job: the scheduler need not import the data's libraries)."""
        ts = self._scheduler.tasks.get(key)
        receivers = sorted({str(dep.type) for dep in (ts.dependencies if ts is not None else ()) if getattr(dep, "type", None)})
        known = self.methods.setdefault(operation, [])
        for method in methods:
            entry = {"method": method, "receivers": receivers}
            if entry not in known:
                known.append(entry)

    def log_event(self, topic: str, msg: Any) -> None:
        """Keep each fetch a worker's :class:`TransferLog` reports."""
        if topic == TRANSFER_TOPIC:
            self._guarded("transfer", self._transfer, msg)

    def _transfer(self, msg: dict[str, Any]) -> None:
        self.transfers.append({"worker": str(msg["worker"]), "source": str(msg["source"]),
                               "start": float(msg["start"]), "stop": float(msg["stop"]),
                               "keys": [str(k) for k in msg["keys"]], "nbytes": int(msg["nbytes"])})

    def _sample(self) -> None:
        self._guarded("metrics", self._sample_metrics)

    def _sample_metrics(self) -> None:
        if self._scheduler is None:
            return
        for address, ws in list(self._scheduler.workers.items()):
            metrics = ws.metrics or {}
            beat = metrics.get("time")
            if beat is None or self._last_heartbeat.get(address) == beat:
                continue
            self._last_heartbeat[address] = beat
            spilled = metrics.get("spilled_bytes") or {}
            transfer = metrics.get("transfer") or {}
            disk = metrics.get("host_disk_io") or {}
            net = metrics.get("host_net_io") or {}
            self.series.append({
                "worker": address, "t": float(beat), "cpu": float(metrics.get("cpu") or 0.0),
                "memory": int(metrics.get("memory") or 0), "managed": int(metrics.get("managed_bytes") or 0),
                "spilled_disk": int(spilled.get("disk") or 0),
                "incoming_bytes": int(transfer.get("incoming_bytes") or 0),
                "outgoing_bytes": int(transfer.get("outgoing_bytes") or 0),
                "disk_read_bps": float(disk.get("read_bps") or 0.0), "disk_write_bps": float(disk.get("write_bps") or 0.0),
                "net_read_bps": float(net.get("read_bps") or 0.0), "net_write_bps": float(net.get("write_bps") or 0.0),
            })

    def snapshot(self) -> dict[str, Any]:
        """Everything recorded so far, as JSON-ready values; the metrics are the change since start."""
        self._sample()
        now_metrics = _flat_metrics(self._scheduler) if self._scheduler is not None else {}
        metrics = {name: value - self.metrics_at_start.get(name, 0.0) for name, value in now_metrics.items()
                   if value - self.metrics_at_start.get(name, 0.0) != 0.0}
        return {"started": self.started, "snapshot_at": time.time(), "graph": self.graph, "runs": self.runs,
                "functions": self.functions, "methods": self.methods, "workers": self.workers, "series": self.series,
                "transfers": self.transfers, "worker_metrics": metrics, "notes": list(self.notes)}


class LastHeartbeat(WorkerPlugin):
    """A worker plugin for clusters that close as soon as their job ends (a cluster the job started): a
    closing worker sends one more heartbeat, so the scheduler has its CPU accounting of the last tasks."""

    name = f"{PLUGIN_NAME}-last-heartbeat"

    async def teardown(self, worker: Any) -> None:
        """Send the heartbeat (the scheduler still knows the worker while it closes)."""
        try:
            await worker.heartbeat()
        except Exception:  # noqa: BLE001, S110 - never break a closing worker; the accounting is then short
            pass


class TransferLog(WorkerPlugin):
    """A worker plugin that reports every fetch of task results the worker makes (source, keys, bytes,
    times) to the scheduler, where :class:`DataflowRecorder` keeps it.

    Dask's worker logs each fetch in ``transfer_incoming_log`` (a bounded deque, times already on the
    scheduler's clock) before the fetched keys move to memory; at each such move the plugin sends the
    entries logged since its last report, and at teardown the rest."""

    name = f"{PLUGIN_NAME}-transfers"

    def __init__(self) -> None:
        self._worker: Any = None
        self._last: Any = None

    def setup(self, worker: Any) -> None:
        """Remember the worker; fetches logged before the plugin came are not the job's."""
        self._worker = worker
        log = getattr(worker, "transfer_incoming_log", None)
        self._last = log[-1] if log else None

    def transition(self, key: Any, start: str, finish: str, **kwargs: Any) -> None:
        """After a fetch lands, report what the worker logged since the last report."""
        if start == "flight":
            self._report()

    def teardown(self, worker: Any) -> None:
        """Report what is left while the worker can still talk to the scheduler."""
        self._report()

    def _report(self) -> None:
        try:
            log = self._worker.transfer_incoming_log
            fresh = []
            for entry in reversed(log):
                if entry is self._last:
                    break
                fresh.append(entry)
            if not fresh:
                return
            self._last = log[-1]
            address = str(self._worker.address)
            for entry in reversed(fresh):
                keys = entry.get("keys") or {}
                self._worker.log_event(TRANSFER_TOPIC, {
                    "worker": address, "source": str(entry.get("who", "")), "start": float(entry["start"]),
                    "stop": float(entry["stop"]), "keys": [str(k) for k in keys],
                    "nbytes": int(entry.get("total") or sum(int(v or 0) for v in keys.values()))})
        except Exception:  # noqa: BLE001, S110 - never break a worker; the profile then lacks these transfers
            pass


def snapshot(dask_scheduler: Any, name: str = PLUGIN_NAME) -> dict[str, Any] | None:
    """What the recorder named ``name`` holds (``Client.run_on_scheduler`` calls this), or None."""
    plugin = dask_scheduler.plugins.get(name)
    return plugin.snapshot() if plugin is not None else None


def _flat_metrics(scheduler: Any) -> dict[str, float]:
    """The scheduler's cumulative worker metrics with their keys joined by '/' (JSON keys)."""
    out: dict[str, float] = {}
    for key, value in (getattr(scheduler, "cumulative_worker_metrics", None) or {}).items():
        if isinstance(value, (int, float)):
            parts = key if isinstance(key, tuple) else (key,)
            out["/".join(str(p) for p in parts)] = float(value)
    return out


def _locate(spec: Any, methods: list[str] | None = None) -> list[dict[str, Any]]:
    """The callables a task's run spec executes (through partials, wrappers and subgraphs), located; the
    names of the methods it calls on its operands (dask's ``methodcaller``) go into ``methods``."""
    found: list[dict[str, Any]] = []
    seen: set[int] = set()

    def visit(value: Any, depth: int) -> None:
        if depth > _MAX_DEPTH or len(found) >= _MAX_CALLABLES or id(value) in seen:
            return
        seen.add(id(value))
        if isinstance(value, (str, bytes, int, float, bool, type(None))):
            return
        if isinstance(value, dict):
            for item in list(value.values())[:64]:
                visit(item, depth + 1)
            return
        if isinstance(value, (list, tuple, set, frozenset)):
            for item in list(value)[:64]:
                visit(item, depth + 1)
            return
        if isinstance(value, functools.partial):
            visit(value.func, depth + 1)
            visit(value.args, depth + 1)
            visit(value.keywords, depth + 1)
            return
        func = getattr(value, "func", None)
        if func is not None and not inspect.isroutine(value) and hasattr(value, "args"):  # a dask Task node
            visit(func, depth + 1)
            visit(getattr(value, "args", ()), depth + 1)
            visit(getattr(value, "kwargs", {}), depth + 1)
            inner = getattr(value, "inner_task", None) or getattr(value, "dsk", None)
            if inner is not None:
                visit(inner, depth + 1)
            return
        if callable(value):
            entry = _describe(value)
            if entry is not None:
                found.append(entry)
            method = getattr(value, "method", None)
            if methods is not None and type(value).__name__ == "methodcaller" and isinstance(method, str) \
                    and method not in methods:
                methods.append(method)
            wrapped = getattr(value, "__wrapped__", None)
            if wrapped is not None:
                visit(wrapped, depth + 1)
            for attr in ("dsk", "func", "_func"):  # subgraph callables, SubgraphCallable, methodcaller-likes
                inner = getattr(value, attr, None)
                if inner is not None and inner is not value and not inspect.isroutine(value):
                    visit(inner, depth + 1)

    visit(spec, 0)
    return found


def _describe(fn: Any) -> dict[str, Any] | None:
    target = fn
    if not (inspect.isfunction(target) or inspect.ismethod(target) or inspect.isbuiltin(target)):
        call = getattr(type(fn), "__call__", None)
        if inspect.isfunction(call):
            target = call
        else:
            return {"module": str(getattr(type(fn), "__module__", "") or ""),
                    "qualname": str(getattr(type(fn), "__qualname__", type(fn).__name__)), "file": "", "line": 0}
    module = str(getattr(target, "__module__", "") or "")
    qualname = str(getattr(target, "__qualname__", getattr(target, "__name__", repr(target))))
    code = getattr(inspect.unwrap(target), "__code__", None) if not inspect.isbuiltin(target) else None
    return {"module": module, "qualname": qualname,
            "file": str(code.co_filename) if code is not None else "",
            "line": int(code.co_firstlineno) if code is not None else 0}
