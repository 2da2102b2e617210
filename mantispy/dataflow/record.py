"""Record a Dask job: start (or reach) a scheduler, watch it with the recorder plugin, run the job unchanged.

The job is the user's script, run by the same Python (or ``--python``) with ``DASK_SCHEDULER_ADDRESS`` set
and a boot folder first on its path (``mantispy/dataflow/boot``): its own ``Client()`` connects to the
watched scheduler, and a job without a client is sent there too. A job that starts a cluster of its own is
recorded on that cluster instead (the boot folder's scheduler preload, :data:`PRELOAD_MODULE`, puts the
recorder on every scheduler the job starts and writes what it saw when it closes). The cluster's worker
processes are registered with mantispy's watchdog, and the job runs in a process group of its own that
the watchdog ends too, so neither outlives it. A job that fails halfway still gives its profile, marked
incomplete.
"""

from __future__ import annotations

import importlib
import inspect
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mantispy.core.watchdog import WATCHDOG, run_watched
from mantispy.measurement import MachineSnapshot

from .plugin import PLUGIN_NAME, DataflowRecorder, TransferLog, snapshot
from .types import ClusterConfig, DataflowProfile, FunctionRef, MachinePoint, TaskRun, Transfer, WorkerInfo, WorkerPoint

CONNECT_TIMEOUT_S = 10.0


class RecordError(Exception):
    """The job could not be recorded: one line saying why and what to do."""


@dataclass(frozen=True)
class ClusterRequest:
    """The LocalCluster to start (ignored when recording on an existing scheduler)."""

    workers: int = 2
    threads_per_worker: int = 1
    memory_limit: int | None = None  # bytes per worker; None: Dask's default share of the machine's memory


@dataclass
class Recording:
    """What ``record`` hands back: the profile and the job's exit status."""

    profile: DataflowProfile
    returncode: int
    interrupted: bool = False  # mantispy was interrupted (SIGINT) while the job ran: the job was stopped


INTERRUPTED_NOTE = "mantispy was interrupted while the job ran: the job was stopped there; this profile is incomplete"


def record_job(argv: Sequence[str], request: ClusterRequest, scheduler: str | None = None,
               cwd: Path | None = None, interval: float = 0.25, quiet: bool = False, watch: bool = True) -> Recording:
    """Run ``argv`` (a full command line: interpreter, script, arguments) as a Dask job and record it.

    ``watch=False`` runs the job the same way without the recorder (its profile then holds no task): the
    benchmark's measure of the recorder's overhead and of the job's own time."""
    from distributed import Client

    logging.getLogger("distributed").setLevel(logging.ERROR)
    cluster = None
    started_by = "external" if scheduler else "mantispy"
    try:
        if scheduler is None:
            cluster = _start_cluster(request)
            address = cluster.scheduler_address
        else:
            address = scheduler
        try:
            client = Client(address, timeout=CONNECT_TIMEOUT_S, set_as_default=False)
        except OSError as exc:
            raise RecordError(f"--scheduler {address}: no Dask scheduler answered in {CONNECT_TIMEOUT_S:g} s ({exc}); "
                              "start one with `dask scheduler`, or leave --scheduler out to record on a LocalCluster") from None
        try:
            if watch:
                _register(client, interval, address)
            machine = _MachineSampler(interval / 2)
            job_started = time.time()
            interrupted = False
            with tempfile.TemporaryDirectory(prefix="mantis-dataflow-own-") as own_folder:
                try:
                    returncode = _run_job(argv, address, cwd, quiet, Path(own_folder) if watch else None, interval)
                except KeyboardInterrupt:  # the job is stopped; what the recorder holds is kept, marked incomplete
                    if not watch:
                        raise
                    interrupted, returncode = True, -signal.SIGINT
                finally:
                    job_ended = time.time()
                    machine.stop()
                own = job_clusters(Path(own_folder))
            raw: dict[str, Any] | None = {}
            if watch:
                if not interrupted:
                    time.sleep(min(1.0, interval * 3))  # one more heartbeat of every worker
                raw = client.run_on_scheduler(snapshot, name=PLUGIN_NAME)
                if interrupted and raw is not None:
                    raw = {**raw, "notes": [*(raw.get("notes") or ()), INTERRUPTED_NOTE]}
                if scheduler is not None:
                    client.unregister_scheduler_plugin(PLUGIN_NAME)
                    client.unregister_worker_plugin(TransferLog.name)
        finally:
            client.close()
    finally:
        if cluster is not None:
            cluster.close()
    if raw is None:
        raise RecordError(f"the scheduler at {address} lost mantispy's recorder during the job; record it again")
    if watch:
        raw, address, started_by = _choose_cluster(raw, own, address, started_by)
    profile = build_profile(list(argv), str(cwd or Path.cwd()), raw, job_started, job_ended, returncode,
                            request, address, started_by)
    profile.machine = machine.points
    return Recording(profile, returncode, interrupted)


FIND_EVERY = 4
"""The machine sampler looks for the recording's processes again every this many samples."""


class _MachineSampler:
    """Reads the machine's busy CPU seconds (``/proc/stat``) every ``interval`` in a thread, beside the CPU
    seconds of this process and its descendants (the scheduler a LocalCluster runs here, its nannies and
    workers, the job): what the rest of the machine did is the difference."""

    def __init__(self, interval: float) -> None:
        import threading

        import psutil

        self.points: list[MachinePoint] = []
        self._interval = interval
        self._done = threading.Event()
        self._me = psutil.Process()
        self._used: dict[tuple[int, float], float] = {}  # (pid, its start time) -> CPU seconds last read
        self._tree: list[psutil.Process] = []
        self._samples = 0
        self._sample()
        self._thread = threading.Thread(target=self._run, name="mantispy-machine", daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        own = self._own_cpu()
        snapshot = MachineSnapshot.now()
        if snapshot.busy_s is not None:
            self.points.append(MachinePoint(time.time(), snapshot.busy_s, own))

    def _own_cpu(self) -> float | None:
        """CPU seconds of this process tree so far; a process that ended keeps what it was last read at. The
        tree is looked for again every ``FIND_EVERY`` samples only: finding it reads every process's status,
        each read waiting for the GIL while the scheduler works."""
        import psutil

        if self._samples % FIND_EVERY == 0:
            try:
                self._tree = [self._me, *self._me.children(recursive=True)]
            except psutil.Error:
                return None
        self._samples += 1
        for process in self._tree:
            try:
                with process.oneshot():
                    times = process.cpu_times()
                    key = (process.pid, process.create_time())
            except psutil.Error:
                continue
            self._used[key] = max(self._used.get(key, 0.0), times.user + times.system)
        return sum(self._used.values())

    def _run(self) -> None:
        while not self._done.wait(self._interval):
            self._sample()

    def stop(self) -> None:
        """Take a last point and stop."""
        self._done.set()
        self._thread.join()
        self._sample()


def _start_cluster(request: ClusterRequest) -> Any:
    import psutil
    from distributed import LocalCluster

    # No dashboard; the scheduler's HTTP server (health, metrics) still starts, on a free port rather than on
    # 8787, which another cluster may hold (Dask then warns in four lines on stderr). The workers log only
    # critical lines: at ERROR a worker whose heartbeat meets the scheduler closing first prints a traceback,
    # and what the recording needs to say of a worker (lost, restarted, spilled) it says from the profile.
    kwargs: dict[str, Any] = {"n_workers": request.workers, "threads_per_worker": request.threads_per_worker,
                              "processes": True, "dashboard_address": ":0", "scheduler_kwargs": {"dashboard": False},
                              "silence_logs": logging.CRITICAL}
    if request.memory_limit is not None:
        kwargs["memory_limit"] = request.memory_limit
    cluster = LocalCluster(**kwargs)
    # multiprocessing's resource tracker ends by itself when this process does; killed on Ctrl-C, it printed
    # tracebacks under mantispy's line as the cluster closed
    from multiprocessing import resource_tracker

    tracker = getattr(resource_tracker._resource_tracker, "_pid", None)
    for child in psutil.Process().children(recursive=True):
        if child.pid != tracker:
            WATCHDOG.watch_process(child.pid)
    return cluster


def _register(client: Any, interval: float, address: str) -> None:
    try:
        client.register_plugin(DataflowRecorder(interval), name=PLUGIN_NAME)
        client.register_plugin(TransferLog(), name=TransferLog.name)
    except (ImportError, ModuleNotFoundError) as exc:
        raise RecordError(f"the scheduler at {address} cannot load mantispy's recorder ({exc}); install mantispy "
                          "in the scheduler's environment") from None


@dataclass
class JobCluster:
    """What the recorder saw on a scheduler the job started itself (the preload's JSON)."""

    address: str
    raw: dict[str, Any]

    @property
    def tasks(self) -> int:
        """How many tasks the job gave it."""
        return len(self.raw.get("graph") or {})


PRELOAD_MODULE = "mantispy_dataflow_preload"
"""The boot folder's scheduler preload: every scheduler the job starts gets the recorder plugin."""


def _run_job(argv: Sequence[str], address: str, cwd: Path | None, quiet: bool, own_folder: Path | None = None,
             interval: float = 0.25) -> int:
    """Run the job with the boot folder first on its path, in a process group of its own (a cluster it
    starts ends with it). With ``own_folder``, a scheduler the job starts records into that folder."""
    from mantispy.dataflow import boot as dataflow_boot

    with tempfile.TemporaryDirectory(prefix="mantis-dataflow-") as scratch:
        boot = Path(scratch) / "boot"
        boot.mkdir()
        here = Path(dataflow_boot.__file__).resolve().parent
        for name in ("sitecustomize.py", f"{PRELOAD_MODULE}.py"):
            shutil.copyfile(here / name, boot / name)
        env = dict(os.environ)
        env["DASK_SCHEDULER_ADDRESS"] = address
        env["PYTHONPATH"] = os.pathsep.join([str(boot)] + [p for p in [env.get("PYTHONPATH", "")] if p])
        if own_folder is not None:
            # by file: the boot folder leaves the job's sys.path once its sitecustomize has run
            env.update({"DASK_DISTRIBUTED__SCHEDULER__PRELOAD": json.dumps([str(boot / f"{PRELOAD_MODULE}.py")]),
                        "MANTIS_DATAFLOW_OWN": str(own_folder), "MANTIS_DATAFLOW_INTERVAL": repr(interval)})
        out = subprocess.DEVNULL if quiet else None
        return run_watched(list(argv), env=env, cwd=cwd, stdout=out, own_group=True).returncode


def job_clusters(folder: Path) -> list[JobCluster | str]:
    """The clusters the job started itself, as the preload wrote them, and its notes (strings) where one
    could not be recorded; a file that cannot be read becomes a note too."""
    found: list[JobCluster | str] = []
    for path in sorted(folder.glob("cluster-*")):
        try:
            if path.suffix == ".note":
                found.append(path.read_text(encoding="utf-8").strip())
            elif path.suffix == ".json":
                raw = json.loads(path.read_text(encoding="utf-8"))
                if isinstance(raw, dict):
                    found.append(JobCluster(str(raw.pop("address", "")), raw))
        except (OSError, ValueError) as exc:
            found.append(f"a cluster the job started could not be read back ({exc})")
    return found


def _choose_cluster(raw: dict[str, Any], own: list[JobCluster | str], address: str,
                    started_by: str) -> tuple[dict[str, Any], str, str]:
    """The recorded scheduler's snapshot, or, when the job ran its tasks on clusters of its own, the one
    that ran the most; the others are named in the profile's notes."""
    notes = [item for item in own if isinstance(item, str)]
    clusters = sorted((c for c in own if isinstance(c, JobCluster) and c.tasks), key=lambda c: -c.tasks)
    ours = len(raw.get("graph") or {})
    if clusters and clusters[0].tasks > ours:
        chosen, others = clusters[0], clusters[1:]
        raw = dict(chosen.raw)
        raw["notes"] = list(raw.get("notes") or ()) + notes
        if ours:
            raw["notes"].append(f"the job also ran {ours} task(s) on the scheduler mantispy started, not in this profile")
        for other in others:
            raw["notes"].append(f"the job also ran {other.tasks} task(s) on another cluster of its own ({other.address}), "
                                "not in this profile")
        return raw, chosen.address, "job"
    raw = dict(raw)
    raw["notes"] = list(raw.get("notes") or ()) + notes + [
        f"the job also ran {c.tasks} task(s) on a cluster of its own ({c.address}), not in this profile" for c in clusters]
    return raw, address, started_by


FAILED_TASKS_NAMED = 3
"""How many failed tasks a profile's note names (the rest are counted)."""


def build_profile(command: list[str], cwd: str, raw: dict[str, Any], started: float, ended: float,
                  returncode: int | None, request: ClusterRequest, address: str, started_by: str) -> DataflowProfile:
    """The profile from the recorder's snapshot and the job's times and exit status."""
    tasks = []
    graph: dict[str, dict[str, Any]] = raw.get("graph") or {}
    runs: dict[str, dict[str, Any]] = raw.get("runs") or {}
    for key, node in graph.items():
        run = runs.get(key)
        tasks.append(_task(key, node, run))
    workers = [WorkerInfo(address=a, name=str(w.get("name", "")), nthreads=int(w.get("nthreads", 0)),
                          memory_limit=int(w.get("memory_limit", 0))) for a, w in (raw.get("workers") or {}).items()]
    series = [WorkerPoint(**point) for point in raw.get("series") or ()]
    transfers = [Transfer(worker=x["worker"], source=x["source"], start=x["start"], stop=x["stop"],
                          keys=tuple(x["keys"]), nbytes=x["nbytes"]) for x in raw.get("transfers") or ()]
    script = _script_path(command, cwd)
    functions = {op: [_main_file(FunctionRef(**entry), script) for entry in entries]
                 for op, entries in (raw.get("functions") or {}).items()}
    for op, calls in (raw.get("methods") or {}).items():
        located = functions.setdefault(op, [])
        for call in calls:
            ref = _method_of(str(call.get("method", "")), [str(r) for r in call.get("receivers") or ()])
            if ref is not None and ref not in located:
                located.append(ref)
    notes = list(raw.get("notes") or ())
    if started_by == "mantispy":
        cluster = ClusterConfig(workers=request.workers, threads_per_worker=request.threads_per_worker,
                                memory_limit=request.memory_limit or (workers[0].memory_limit if workers else None),
                                cores=os.cpu_count() or 1, address=address, started_by=started_by)
    else:
        alive = [w for w in workers if w.nthreads > 0] or [WorkerInfo(address, "", 1, 0)]
        threads = sorted(w.nthreads for w in alive)[len(alive) // 2]
        cluster = ClusterConfig(workers=len(alive), threads_per_worker=threads,
                                memory_limit=alive[0].memory_limit or None, cores=os.cpu_count() or 1,
                                address=address, started_by=started_by)
    unfinished = sum(1 for t in tasks if not t.ran)
    complete = returncode == 0 and unfinished == 0 and bool(tasks)
    if returncode != 0 and INTERRUPTED_NOTE not in notes:
        notes.append(f"the job exited with status {returncode}: this profile is incomplete")
    if not tasks:
        notes.append("the job ran no Dask task: this profile is empty")
    if unfinished:
        notes.append(f"{unfinished} of {len(tasks)} tasks never finished")
    failed = [t for t in tasks if t.status == "erred"]
    if failed:
        shown = ", ".join(f"{t.key} ({t.operation})" for t in failed[:FAILED_TASKS_NAMED])
        more = f" and {len(failed) - FAILED_TASKS_NAMED} more" if len(failed) > FAILED_TASKS_NAMED else ""
        notes.append(f"{len(failed)} of {len(tasks)} tasks failed (raised): {shown}{more}")
    return DataflowProfile(command=command, cwd=cwd, cluster=cluster, started=started, ended=ended,
                           returncode=returncode, complete=complete, tasks=tasks, functions=functions,
                           workers=workers, series=series, worker_metrics=dict(raw.get("worker_metrics") or {}),
                           notes=notes, transfers=transfers)


def _script_path(command: list[str], cwd: str) -> str:
    """The job's script, absolute (the file its ``__main__`` functions come from)."""
    if len(command) < 2 or command[1].startswith("-"):
        return ""
    path = Path(command[1])
    return str(path if path.is_absolute() else Path(cwd) / path)


def _main_file(ref: FunctionRef, script: str) -> FunctionRef:
    """A function pickled by value reaches the scheduler with its file name lost (``<dynamic-code>``) but
    not its line: a function of the job's ``__main__`` is the script's; one of an importable module is
    that module's file."""
    if Path(ref.file).is_file() or not ref.module:
        return ref
    if ref.module == "__main__":
        return FunctionRef(ref.module, ref.qualname, script, ref.line) if script else ref
    found = _importable(ref.module, ref.qualname)
    code = getattr(inspect.unwrap(found), "__code__", None) if callable(found) else None
    if code is not None and Path(code.co_filename).is_file():
        return FunctionRef(ref.module, ref.qualname, code.co_filename, ref.line)
    return ref


def _importable(module: str, qualname: str) -> Any:
    """``module.qualname`` imported in this process (after the job), or None."""
    try:
        found: Any = importlib.import_module(module)
        for part in qualname.split("."):
            if part == "<locals>":
                return None
            found = getattr(found, part)
    except Exception:  # noqa: BLE001 - any import or lookup failure means: not found
        return None
    return found


def _method_of(method: str, receivers: list[str]) -> FunctionRef | None:
    """The function behind ``method`` on the first of the operand types (``module.Class`` names, as the
    workers reported their results' types) that has it, located; None when none has."""
    for receiver in receivers:
        module, _, qualname = receiver.rpartition(".")
        found = _importable(module, qualname) if module else None
        function = getattr(found, method, None) if isinstance(found, type) else None
        target = inspect.unwrap(function) if callable(function) else None
        code = getattr(target, "__code__", None)
        if target is not None and code is not None:
            return FunctionRef(str(getattr(target, "__module__", "") or module), str(target.__qualname__),
                               str(code.co_filename), int(code.co_firstlineno))
    return None


def _task(key: str, node: dict[str, Any], run: dict[str, Any] | None) -> TaskRun:
    common: dict[str, Any] = {"key": key, "operation": str(node.get("operation", "")), "deps": tuple(node.get("deps") or ()),
              "priority": tuple(float(p) for p in node.get("priority") or ()),
              "submitted": None if node.get("submitted") is None else float(node["submitted"])}
    if run is None:
        return TaskRun(**common, worker="", thread=0, start=0.0, stop=0.0, compute_s=0.0, transfer_s=0.0,
                       spill_s=0.0, nbytes=0, status="unfinished")
    stops = run.get("startstops") or []
    compute = [s for s in stops if s["action"] == "compute"]
    span = compute or stops
    start = min((s["start"] for s in span), default=0.0)
    stop = max((s["stop"] for s in span), default=start)
    return TaskRun(**common, worker=str(run.get("worker", "")), thread=int(run.get("thread", 0)), start=start,
                   stop=stop, compute_s=sum(s["stop"] - s["start"] for s in compute),
                   transfer_s=sum(s["stop"] - s["start"] for s in stops if s["action"] == "transfer"),
                   spill_s=sum(s["stop"] - s["start"] for s in stops if s["action"].startswith("disk-")),
                   nbytes=int(run.get("nbytes", 0)), status=str(run.get("status", "memory")))


def python_command(script: str, args: Sequence[str], python: str | None = None) -> list[str]:
    """The command that runs ``script`` (or ``-m module``) with ``args`` under ``python`` (default: this one)."""
    return [python or sys.executable, script, *args]
