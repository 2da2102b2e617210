"""The dataflow profile: one recorded Dask job, the artefact ``record`` writes and ``show``/``whatif`` read.

JSON (``format`` = ``mantispy-dataflow-profile``, ``version`` 1). :func:`profile_from_json` checks every
field and names the first bad one in a :class:`ProfileError`; :meth:`DataflowProfile.to_json` writes what
it reads back. Times are seconds since the epoch, as the workers' clocks gave them. ``machine`` (the whole machine's
busy CPU seconds through the job) is optional: profiles written without it read as an empty list; so is each
point's ``own_s`` (the recording's own processes' CPU seconds).
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

FORMAT = "mantispy-dataflow-profile"
VERSION = 1


class ProfileError(ValueError):
    """A profile file that cannot be read: the message names the file or field and what is wrong."""


STARTED_BY = ("mantispy", "external", "job")
"""Who started the recorded scheduler: mantispy (a LocalCluster), someone else (``--scheduler``), the job."""


@dataclass(frozen=True)
class ClusterConfig:
    """The cluster the job ran on: workers, threads per worker, memory limit per worker, machine cores."""

    workers: int
    threads_per_worker: int
    memory_limit: int | None
    cores: int
    address: str = ""
    started_by: str = "mantispy"  # or "external": a scheduler mantispy connected to; "job": one the job started

    @property
    def slots(self) -> int:
        """Task slots: workers times threads."""
        return self.workers * self.threads_per_worker


@dataclass(frozen=True)
class TaskRun:
    """One task: its operation (Dask's key prefix), dependencies, priority, and where and when it ran."""

    key: str
    operation: str
    deps: tuple[str, ...]
    priority: tuple[float, ...]
    worker: str
    thread: int
    start: float
    stop: float
    compute_s: float
    transfer_s: float
    spill_s: float
    nbytes: int
    status: str  # "memory" (done), "erred", or "unfinished" (the job ended before it ran)
    submitted: float | None = None  # when its graph reached the scheduler (None: before the recorder started)

    @property
    def ran(self) -> bool:
        """Whether the task ran (it has a worker and times)."""
        return self.status != "unfinished"


@dataclass(frozen=True)
class FunctionRef:
    """A callable a task executes, located by module, qualified name, file and line."""

    module: str
    qualname: str
    file: str
    line: int

    @property
    def label(self) -> str:
        """``module.qualname``."""
        return f"{self.module}.{self.qualname}" if self.module else self.qualname


@dataclass(frozen=True)
class WorkerInfo:
    """A worker of the cluster."""

    address: str
    name: str
    nthreads: int
    memory_limit: int


@dataclass(frozen=True)
class WorkerPoint:
    """One heartbeat of a worker: CPU %, process memory, managed and spilled bytes, IO rates."""

    worker: str
    t: float
    cpu: float
    memory: int
    managed: int
    spilled_disk: int
    incoming_bytes: int
    outgoing_bytes: int
    disk_read_bps: float
    disk_write_bps: float
    net_read_bps: float
    net_write_bps: float


@dataclass(frozen=True)
class Transfer:
    """One fetch of task results from one worker to another, as the receiving worker logged it."""

    worker: str  # the receiver
    source: str  # the worker the data came from
    start: float
    stop: float
    keys: tuple[str, ...]  # the tasks whose results it moved
    nbytes: int  # their size, as the receiver measured it

    @property
    def duration_s(self) -> float:
        """How long the fetch took."""
        return max(0.0, self.stop - self.start)


@dataclass(frozen=True)
class MachinePoint:
    """The whole machine's busy CPU seconds (all processes, all cores, since boot) at one moment, and the
    CPU seconds the recording's own processes had used by then (the recorder with the scheduler it
    started, the job and the workers it started; None in profiles recorded before they were kept)."""

    t: float
    busy_s: float
    own_s: float | None = None


@dataclass
class DataflowProfile:
    """A recorded Dask job: the command, the cluster, every task, the workers and their series."""

    command: list[str]
    cwd: str
    cluster: ClusterConfig
    started: float
    ended: float
    returncode: int | None
    complete: bool
    tasks: list[TaskRun]
    functions: dict[str, list[FunctionRef]] = field(default_factory=dict)
    workers: list[WorkerInfo] = field(default_factory=list)
    series: list[WorkerPoint] = field(default_factory=list)
    worker_metrics: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    machine: list[MachinePoint] = field(default_factory=list)
    transfers: list[Transfer] = field(default_factory=list)  # empty in profiles recorded before they were kept

    @property
    def wall_s(self) -> float:
        """The job's wall time: from the script's start to its end."""
        return self.ended - self.started

    def to_json(self) -> str:
        """The profile as JSON text."""
        body: dict[str, Any] = {"format": FORMAT, "version": VERSION}
        body.update(asdict(self))
        return json.dumps(body, indent=1, allow_nan=False)

    def write(self, path: Path) -> None:
        """Write the JSON next to ``path`` and move it into place."""
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(self.to_json(), encoding="utf-8")
        tmp.replace(path)


def read_profile(path: Path) -> DataflowProfile:
    """Read and check a profile file."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ProfileError(f"{path}: no such file; write one with `mantispy dataflow record -o {path} -- SCRIPT`") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ProfileError(f"{path}: cannot be read ({exc})") from None
    try:
        return profile_from_json(text)
    except ProfileError as exc:
        raise ProfileError(f"{path}: {exc}") from None


def profile_from_json(text: str) -> DataflowProfile:
    """Parse and check a profile's JSON text."""
    try:
        body = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise ProfileError(f"not JSON ({exc}); record the job again") from None
    root = _Fields(body, "profile")
    if root.text("format") != FORMAT:
        raise ProfileError(f"field format: expected {FORMAT!r}; this is not a dataflow profile")
    if root.integer("version") != VERSION:
        raise ProfileError(f"field version: {body.get('version')!r} is not {VERSION}; record the job again")
    c = root.obj("cluster")
    memory_limit = c.opt_integer("memory_limit")
    cluster = ClusterConfig(workers=c.integer("workers", low=1), threads_per_worker=c.integer("threads_per_worker", low=1),
                            memory_limit=memory_limit, cores=c.integer("cores", low=1), address=c.text("address"),
                            started_by=c.choice("started_by", STARTED_BY))
    tasks = []
    for i, item in enumerate(root.items("tasks")):
        t = _Fields(item, f"tasks[{i}]")
        tasks.append(TaskRun(key=t.text("key"), operation=t.text("operation"),
                             deps=tuple(t.texts("deps")), priority=tuple(t.numbers("priority")),
                             worker=t.text("worker"), thread=t.integer("thread"), start=t.number("start"), stop=t.number("stop"),
                             compute_s=t.number("compute_s", low=0.0), transfer_s=t.number("transfer_s", low=0.0),
                             spill_s=t.number("spill_s", low=0.0), nbytes=t.integer("nbytes", low=0),
                             status=t.choice("status", ("memory", "erred", "unfinished")),
                             submitted=None if item.get("submitted") is None else t.number("submitted")))
        if tasks[-1].stop < tasks[-1].start:
            raise ProfileError(f"field tasks[{i}].stop: before its start")
    functions: dict[str, list[FunctionRef]] = {}
    for op, entries in root.obj("functions").body.items():
        refs = []
        for j, entry in enumerate(entries if isinstance(entries, list) else _bad(f"functions.{op}", "a list")):
            f = _Fields(entry, f"functions.{op}[{j}]")
            refs.append(FunctionRef(module=f.text("module"), qualname=f.text("qualname"), file=f.text("file"),
                                    line=f.integer("line", low=0)))
        functions[str(op)] = refs
    workers = []
    for i, item in enumerate(root.items("workers")):
        w = _Fields(item, f"workers[{i}]")
        workers.append(WorkerInfo(address=w.text("address"), name=w.text("name"), nthreads=w.integer("nthreads", low=0),
                                  memory_limit=w.integer("memory_limit", low=0)))
    series = []
    for i, item in enumerate(root.items("series")):
        p = _Fields(item, f"series[{i}]")
        series.append(WorkerPoint(worker=p.text("worker"), t=p.number("t"), cpu=p.number("cpu", low=0.0),
                                  memory=p.integer("memory", low=0), managed=p.integer("managed", low=0),
                                  spilled_disk=p.integer("spilled_disk", low=0), incoming_bytes=p.integer("incoming_bytes", low=0),
                                  outgoing_bytes=p.integer("outgoing_bytes", low=0), disk_read_bps=p.number("disk_read_bps", low=0.0),
                                  disk_write_bps=p.number("disk_write_bps", low=0.0), net_read_bps=p.number("net_read_bps", low=0.0),
                                  net_write_bps=p.number("net_write_bps", low=0.0)))
    machine = []
    for i, item in enumerate(root.items("machine") if "machine" in body else []):
        m = _Fields(item, f"machine[{i}]")
        machine.append(MachinePoint(t=m.number("t"), busy_s=m.number("busy_s", low=0.0),
                                    own_s=None if item.get("own_s") is None else m.number("own_s", low=0.0)))
    transfers = []
    for i, item in enumerate(root.items("transfers") if "transfers" in body else []):
        x = _Fields(item, f"transfers[{i}]")
        transfers.append(Transfer(worker=x.text("worker"), source=x.text("source"), start=x.number("start"),
                                  stop=x.number("stop"), keys=tuple(x.texts("keys")), nbytes=x.integer("nbytes", low=0)))
        if transfers[-1].stop < transfers[-1].start:
            raise ProfileError(f"field transfers[{i}].stop: before its start")
    metrics = root.obj("worker_metrics")
    worker_metrics = {str(k): metrics.number(k) for k in metrics.body}
    returncode = root.opt_integer("returncode", low=None)  # negative: killed by that signal
    started, ended = root.number("started"), root.number("ended")
    if ended < started:
        raise ProfileError("field ended: before started")
    return DataflowProfile(command=root.texts("command"), cwd=root.text("cwd"), cluster=cluster, started=started,
                           ended=ended, returncode=returncode, complete=root.flag("complete"), tasks=tasks,
                           functions=functions, workers=workers, series=series, worker_metrics=worker_metrics,
                           notes=root.texts("notes"), machine=machine, transfers=transfers)


def _bad(name: str, what: str) -> Any:
    raise ProfileError(f"field {name}: expected {what}")


class _Fields:
    """Typed access to one JSON object's fields, naming the field in every error."""

    def __init__(self, body: Any, where: str) -> None:
        if not isinstance(body, dict):
            _bad(where, "an object")
        self.body = body
        self.where = where

    def _get(self, name: str) -> Any:
        if name not in self.body:
            _bad(f"{self.where}.{name}", "a value (it is missing)")
        return self.body[name]

    def text(self, name: str) -> str:
        value = self._get(name)
        return value if isinstance(value, str) else _bad(f"{self.where}.{name}", "a string")

    def flag(self, name: str) -> bool:
        value = self._get(name)
        return value if isinstance(value, bool) else _bad(f"{self.where}.{name}", "true or false")

    def integer(self, name: str, low: int | None = None) -> int:
        value = self._get(name)
        if isinstance(value, bool) or not isinstance(value, int) or (low is not None and value < low):
            _bad(f"{self.where}.{name}", "an integer" + (f" >= {low}" if low is not None else ""))
        return value

    def opt_integer(self, name: str, low: int | None = 0) -> int | None:
        return None if self.body.get(name) is None else self.integer(name, low=low)

    def number(self, name: str, low: float | None = None) -> float:
        value = self._get(name)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                or (low is not None and value < low):
            _bad(f"{self.where}.{name}", "a finite number" + (f" >= {low:g}" if low is not None else ""))
        return float(value)

    def choice(self, name: str, options: tuple[str, ...]) -> str:
        value = self.text(name)
        return value if value in options else _bad(f"{self.where}.{name}", "one of " + ", ".join(options))

    def items(self, name: str) -> list:  # noqa: A003 - a JSON list field
        value = self._get(name)
        return value if isinstance(value, list) else _bad(f"{self.where}.{name}", "a list")

    def texts(self, name: str) -> list[str]:
        value = self.items(name)
        return value if all(isinstance(v, str) for v in value) else _bad(f"{self.where}.{name}", "a list of strings")

    def numbers(self, name: str) -> list[float]:
        value = self.items(name)
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in value):
            _bad(f"{self.where}.{name}", "a list of finite numbers")
        return [float(v) for v in value]

    def obj(self, name: str) -> _Fields:
        return _Fields(self._get(name), f"{self.where}.{name}")
