"""What-if completion time: replay a recorded Dask job on another cluster configuration.

Each task's recorded time becomes CPU work and other (IO) time, by its operation's measured class: a
CPU-bound operation (thread CPU at least 60 % of its tasks' time, by the workers' own accounting) is all
CPU work, its other time being the contention it met; for the others the thread-CPU share is CPU work
and the rest IO. The recording's own contention (its tasks and the machine's other load) is taken out.

The replay is an event simulation close to Dask's scheduler, work stealing aside: root tasks go to the
first free thread in priority order; a task whose inputs exist goes to the worker where it would start
soonest counting the transfer of its missing inputs (:mod:`.transfer_model`: a latency per fetch and bytes at a
rate per operation, from the workers' log of their fetches); every worker runs its queue in priority order. CPU
work (with the (de)serialising of inputs moved between workers, and the worker's own per-task Python)
shares the machine's cores (processor sharing), and Python that holds the GIL shares one core per worker
process; results held past 60 % of a worker's memory limit spill to disk and are read back (past Dask's
pause and terminate shares the assumptions say what Dask would do instead). The driver's
own time between computations is kept as recorded.

The recording's CPU beside its tasks is split three ways, each following what drives it:
* the worker processes' own CPU beyond their tasks' (the event loop (de)serialising results and messages,
  from the workers' CPU series): per-task work that holds the worker's GIL, so a single worker pays it in
  series with its tasks;
* the rest of the recording's own processes' load while tasks ran (the scheduler's per-task transitions,
  the job's own process): a demand that grows with the number of tasks running at once (the scheduler's
  work follows the task rate), scaled from the recording's mean concurrency, taken as at least one task: a
  recording whose tasks ran a small share of its time (0.02 tasks at once, beside another program's load)
  put the whole of that load on each running task, tens of cores of it;
* other programs' load (the machine's busy CPU beyond the recording's own process tree, steal time
  included; profiles recorded without the tree's CPU count it as the recording's own): taken out of the
  recorded tasks' times with the rest, kept in the replay of the recorded configuration that calibrates
  the replay (below), and left out of the prediction, which is for the job on the machine without it;
* the intake of the first computation: each new worker process deserialises its first tasks and imports
  their libraries (measured on groupby_join: 0.94 CPU s at 2 workers, 1.97 s at 4), so the recorded
  intake's CPU per worker is spread over the target's workers and cores.
Last, every replay is scaled by the factor that makes the replay of the recorded configuration take the
recording's own Dask time (what the simulation misses of this job's placement and transfers).
Paper: Tian et al. §2.4 (computing devices rescheduled, memory as a reversed roofline, IO linear in
bandwidth).
"""

from __future__ import annotations

import heapq
import math
from collections import defaultdict
from dataclasses import dataclass, field
from statistics import median

from .operations import CPU_SHARE_FOR_CPU, cpu_shares
from .transfer_model import TransferModel, transfer_model
from .types import DataflowProfile, TaskRun

SPILL_TARGET = 0.6
"""Dask's ``distributed.worker.memory.target``: managed memory above this share of the limit spills."""
PAUSE_FRACTION = 0.8
"""Dask's ``distributed.worker.memory.pause``: past this share of its limit a worker runs no more tasks."""
TERMINATE_FRACTION = 0.95
"""Dask's ``distributed.worker.memory.terminate``: past this share of its limit the nanny restarts the worker."""
DEFAULT_DISK_BANDWIDTH = 300e6
"""Bytes per second of spilling (serialising and writing, reading back) when none was recorded."""
MAX_CALIBRATION = 2.0
"""The replay is scaled to reproduce the recording, by at most this factor either way."""
GIL_FREE_MODULES = ("numpy", "pandas", "pyarrow", "scipy", "numexpr", "sklearn", "zlib", "lz4", "bz2", "lzma",
                    "hashlib", "_hashlib", "zstandard", "snappy", "blosc", "cupy", "numba", "dask.array",
                    "dask.dataframe", "distributed.shuffle")
"""Modules whose work runs in kernels that release the GIL (Dask's array and dataframe layers call numpy
and pandas): an operation calling any of them runs on several threads of one worker at once. Any other
operation (Python code, Dask's bags, the standard library's parsers) holds the GIL."""


class WhatIfError(ValueError):
    """A configuration or profile the replay cannot use."""


@dataclass(frozen=True)
class Configuration:
    """A cluster to replay on."""

    workers: int
    threads_per_worker: int
    memory_limit: int | None
    cores: int

    def __post_init__(self) -> None:
        if self.workers < 1 or self.threads_per_worker < 1 or self.cores < 1:
            raise WhatIfError("--workers, --threads and the core count must be at least 1")
        if self.memory_limit is not None and self.memory_limit <= 0:
            raise WhatIfError("--memory-limit must be positive")


@dataclass
class Prediction:
    """A replay's answer: completion time, where it goes, and what it assumed."""

    config: Configuration
    completion_s: float
    dask_s: float
    driver_s: float
    bottleneck_operation: str
    bottleneck_resource: str
    operation_busy_s: dict[str, float]
    transferred_bytes: int
    spilled_bytes: int
    cpu_saturation: float  # mean CPU demand over the cores while tasks ran
    calibration: float  # the recording's Dask time over the replay's of the recorded configuration
    assumptions: list[str] = field(default_factory=list)


@dataclass
class _Task:
    key: str
    operation: str
    deps: list[str]
    dependents: list[str]
    priority: tuple[float, ...]
    cpu: float
    io: float
    nbytes: int
    batch: int
    gil: bool


def holds_gil(functions: list[str]) -> bool:
    """Whether an operation's work is Python holding the GIL: none of its callables is in a module whose
    kernels release it."""
    return not any(f == m or f.startswith(m + ".") for f in functions for m in GIL_FREE_MODULES)


def predict(profile: DataflowProfile, config: Configuration) -> Prediction:
    """Replay ``profile`` on ``config`` and predict the job's completion time."""
    ran = [t for t in profile.tasks if t.ran]
    if not ran:
        raise WhatIfError("the profile has no task that ran; record a job that computes something with Dask")
    assumptions: list[str] = []
    if not profile.complete:
        assumptions.append("the recorded job did not complete: only the tasks that ran are replayed")
    gil_ops = {op for op in {t.operation for t in ran}
               if holds_gil([f.label for f in profile.functions.get(op, [])])}
    background = background_demand(profile)
    work = intrinsic_work(profile, gil_ops, background)
    span = max(t.stop for t in ran) - min(t.start for t in ran)
    in_workers = min(worker_overhead(profile), background * span)
    worker_cpu_per_task = in_workers / len(ran)
    beside = max(0.0, background - in_workers / span) if span > 0 else background
    foreign = min(beside, foreign_demand(profile))
    elsewhere = beside - foreign
    concurrency = sum(t.stop - t.start for t in ran) / span if span > 0 else 1.0
    tasks = _build_tasks(profile, ran, work, gil_ops)
    overhead = _dispatch_overhead(ran)
    transfers = transfer_model(profile, ran)
    assumptions.append(transfers.describe())
    disk_bw = _disk_bandwidth(profile)
    baseline = _worker_baseline(profile)
    assumptions += _memory_thresholds(config, baseline, max(t.nbytes for t in ran))
    if not profile.machine:
        assumptions.append("no machine CPU series in the profile: the scheduler's and the job's own CPU use is ignored")
    batches = _batches(profile, ran)
    first_submit = batches[0].offset
    warmup = intake_cpu(profile, batches[0]) / profile.cluster.workers
    recorded = profile.cluster

    def more_intake(target: Configuration) -> float:
        return warmup * (max(1.0, target.workers / target.cores) - max(1.0, recorded.workers / recorded.cores))

    def replay(target: Configuration, other_programs: float = 0.0) -> tuple[_Simulation, float]:
        sim = _Simulation(tasks, target, overhead, transfers, disk_bw, baseline,
                          _Load(elsewhere, max(concurrency, 1.0), worker_cpu_per_task, other_programs))
        first = batches[0]
        intake = _Batch(first.keys, first.offset, first.waits, first.gap, max(0.0, first.latency + more_intake(target)))
        return sim, sim.run([intake, *batches[1:]]) - first_submit

    if worker_cpu_per_task > 0:
        assumptions.append(f"the workers' own Python beside their tasks (their CPU series): {worker_cpu_per_task * 1e3:.1f} ms "
                           "per task, holding the worker's GIL")
    if elsewhere > 0:
        assumptions.append(f"the rest of the recording's own load (the scheduler, the job's process): {elsewhere:.2f} cores "
                           f"at the recording's {concurrency:.1f} tasks running at once, growing with the tasks running")
    if foreign > 0.005:
        assumptions.append(f"other programs kept {foreign:.2f} cores busy while the tasks ran: taken out of the recording "
                           "and not replayed")
    if abs(more_intake(config)) >= 0.01:
        assumptions.append(f"the first computation's intake: {warmup:.2f} CPU s per new worker, {more_intake(config):+.2f} s "
                           f"at {config.workers} worker(s) on {config.cores} cores")

    last_recorded = max(t.stop for t in ran)
    recorded_dask = last_recorded - profile.started - first_submit
    r = profile.cluster
    _, own = replay(Configuration(r.workers, r.threads_per_worker, r.memory_limit, r.cores), foreign)
    calibration = min(MAX_CALIBRATION, max(1 / MAX_CALIBRATION, recorded_dask / own)) if own > 0 else 1.0
    if abs(calibration - 1.0) > 0.02:
        assumptions.append(f"the replay of the recorded configuration gives {own:.2f} s of Dask time where the recording "
                           f"took {recorded_dask:.2f} s: every replay is scaled by {calibration:.3f}")
    sim, dask_s = replay(config)
    dask_s *= calibration
    tail = max(0.0, profile.ended - last_recorded)
    completion = first_submit + dask_s + tail
    driver = first_submit + tail + sum(b.gap for b in batches[1:] if b.waits)
    busy = dict(sorted(sim.busy.items(), key=lambda kv: -kv[1]))
    bottleneck = next(iter(busy), "")
    return Prediction(config=config, completion_s=completion, dask_s=dask_s, driver_s=driver,
                      bottleneck_operation=bottleneck,
                      bottleneck_resource=sim.resource_of(bottleneck), operation_busy_s=busy,
                      transferred_bytes=sim.transferred, spilled_bytes=sim.spilled,
                      cpu_saturation=sim.mean_saturation(), calibration=calibration, assumptions=assumptions)


def background_demand(profile: DataflowProfile) -> float:
    """Cores the rest of the machine kept busy while tasks ran (the scheduler, the job's own process, other
    programs): the machine's busy CPU seconds over the tasks' span, less the tasks' own CPU seconds."""
    points = sorted(profile.machine, key=lambda p: p.t)
    ran = [t for t in profile.tasks if t.ran]
    if len(points) < 2 or not ran:
        return 0.0
    first, last = min(t.start for t in ran), max(t.stop for t in ran)
    if last - first < 0.05:
        return 0.0
    shares = cpu_shares(profile)
    tasks_cpu = sum(shares.get(t.operation, 1.0) * t.compute_s for t in ran)
    busy = _busy_at(points, last) - _busy_at(points, first)
    return min(float(profile.cluster.cores), max(0.0, (busy - tasks_cpu) / (last - first)))


def foreign_demand(profile: DataflowProfile) -> float:
    """Cores other programs kept busy while tasks ran (steal time included): the machine's busy CPU seconds
    over the tasks' span less the recording's own processes' (0 for profiles without the latter)."""
    points = sorted(profile.machine, key=lambda p: p.t)
    ran = [t for t in profile.tasks if t.ran]
    if len(points) < 2 or not ran or any(p.own_s is None for p in points):
        return 0.0
    first, last = min(t.start for t in ran), max(t.stop for t in ran)
    if last - first < 0.05:
        return 0.0
    busy = _busy_at(points, last) - _busy_at(points, first)
    own = _busy_at(points, last, "own_s") - _busy_at(points, first, "own_s")
    return min(float(profile.cluster.cores), max(0.0, (busy - own) / (last - first)))


def worker_overhead(profile: DataflowProfile) -> float:
    """CPU seconds the worker processes spent beside their tasks while tasks ran: the workers' CPU series
    (each point's CPU percentage over the interval it ends) less the tasks' own CPU seconds."""
    ran = [t for t in profile.tasks if t.ran]
    if not ran or not profile.series:
        return 0.0
    first, last = min(t.start for t in ran), max(t.stop for t in ran)
    by_worker: dict[str, list] = defaultdict(list)
    for point in profile.series:
        by_worker[point.worker].append(point)
    busy = 0.0
    for points in by_worker.values():
        points.sort(key=lambda p: p.t)
        for a, b in zip(points, points[1:]):
            overlap = min(b.t, last) - max(a.t, first)
            if overlap > 0:
                busy += b.cpu / 100 * overlap
    shares = cpu_shares(profile)
    return max(0.0, busy - sum(shares.get(t.operation, 1.0) * t.compute_s for t in ran))


def intake_cpu(profile: DataflowProfile, batch: _Batch) -> float:
    """The CPU seconds between a batch's submission and its first task's start: the recording's own
    processes' where the profile has them, else the machine's."""
    points = sorted(profile.machine, key=lambda p: p.t)
    if len(points) < 2 or batch.latency <= 0:
        return 0.0
    counter = "busy_s" if any(p.own_s is None for p in points) else "own_s"
    submitted = profile.started + batch.offset
    return max(0.0, _busy_at(points, submitted + batch.latency, counter) - _busy_at(points, submitted, counter))


def _busy_at(points: list, t: float, counter: str = "busy_s") -> float:
    """A machine point's ``counter`` interpolated at ``t`` (clamped to the series' ends)."""
    if t <= points[0].t:
        return getattr(points[0], counter)
    for a, b in zip(points, points[1:]):
        if a.t <= t <= b.t:
            before, after = getattr(a, counter), getattr(b, counter)
            return before + (after - before) * ((t - a.t) / (b.t - a.t) if b.t > a.t else 1.0)
    return getattr(points[-1], counter)


def intrinsic_work(profile: DataflowProfile, gil_ops: set[str], background: float = 0.0) -> dict[str, tuple[float, float]]:
    """Per task, (CPU seconds, other seconds) with the recording's own contention taken out."""
    shares = cpu_shares(profile)
    ran = [t for t in profile.tasks if t.ran]
    cores = profile.cluster.cores
    demand = {t.key: 1.0 for t in ran}  # first assume every task wanted a core all along
    work: dict[str, tuple[float, float]] = {}
    for _ in range(2):
        slowdown = _recorded_slowdown(ran, demand, cores, gil_ops, background)
        for task in ran:
            d = task.compute_s
            share = shares.get(task.operation, 1.0)
            sigma = slowdown.get(task.key, 1.0)
            if share >= CPU_SHARE_FOR_CPU:  # a CPU-bound operation: its other time is contention, not IO
                cpu, io = d / sigma, 0.0
            else:
                cpu = share * d
                io = d - cpu * sigma
                if io < 0:
                    cpu, io = d / sigma, 0.0
            work[task.key] = (cpu, io)
            demand[task.key] = cpu / (cpu + io) if cpu + io > 0 else 0.0
    return work


def _recorded_slowdown(ran: list[TaskRun], demand: dict[str, float], cores: int, gil_ops: set[str],
                       background: float) -> dict[str, float]:
    """Per task, its mean CPU slowdown while it ran: demand over cores, or over one core for GIL work."""
    events = sorted([(t.start, 1, t) for t in ran] + [(t.stop, 0, t) for t in ran], key=lambda e: (e[0], e[1]))
    running: dict[str, TaskRun] = {}
    acc: dict[str, float] = defaultdict(float)
    last = events[0][0] if events else 0.0
    for time_, kind, task in events:
        span = time_ - last
        if span > 0 and running:
            total = sum(demand[k] for k in running)
            gil_per_worker: dict[str, float] = defaultdict(float)
            for k, t in running.items():
                if t.operation in gil_ops:
                    gil_per_worker[t.worker] += demand[k]
            core = max(1.0, (total + background) / cores)
            for k, t in running.items():
                sigma = max(core, gil_per_worker[t.worker]) if t.operation in gil_ops else core
                acc[k] += sigma * span
        last = time_
        if kind == 1:
            running[task.key] = task
        else:
            running.pop(task.key, None)
    return {t.key: (acc[t.key] / t.compute_s if t.compute_s > 0 and acc[t.key] > 0 else 1.0) for t in ran}


def _build_tasks(profile: DataflowProfile, ran: list[TaskRun], work: dict[str, tuple[float, float]],
                 gil_ops: set[str]) -> dict[str, _Task]:
    keys = {t.key for t in ran}
    tasks: dict[str, _Task] = {}
    for t in ran:
        cpu, io = work[t.key]
        tasks[t.key] = _Task(t.key, t.operation, [d for d in t.deps if d in keys], [], t.priority, cpu, io,
                             t.nbytes, 0, t.operation in gil_ops)
    for task in tasks.values():
        for dep in task.deps:
            tasks[dep].dependents.append(task.key)
    return tasks


def _dispatch_overhead(ran: list[TaskRun]) -> float:
    """The scheduler's own time between two tasks on one thread when the second was waiting to run."""
    by_thread: dict[tuple[str, int], list[TaskRun]] = defaultdict(list)
    stop_of = {t.key: t.stop for t in ran}
    for t in ran:
        by_thread[(t.worker, t.thread)].append(t)
    gaps = []
    for runs in by_thread.values():
        runs.sort(key=lambda t: t.start)
        for prev, nxt in zip(runs, runs[1:]):
            ready = max([stop_of.get(d, 0.0) for d in nxt.deps] + [nxt.submitted or 0.0])
            if ready <= prev.stop:
                gaps.append(max(0.0, nxt.start - prev.stop))
    return min(0.05, median(gaps)) if gaps else 0.002


def _disk_bandwidth(profile: DataflowProfile) -> float:
    seconds = sum(v for k, v in profile.worker_metrics.items() if "/disk-write/seconds" in k or "/disk-read/seconds" in k)
    moved = sum(v for k, v in profile.worker_metrics.items() if "/disk-write/bytes" in k or "/disk-read/bytes" in k)
    return moved / seconds if seconds > 0.05 and moved > 1_000_000 else DEFAULT_DISK_BANDWIDTH


def _memory_thresholds(config: Configuration, baseline: int, largest: int) -> list[str]:
    """What the replay assumes where a worker's own memory and the largest result pass Dask's pause or
    terminate share of the limit (it spills them instead)."""
    limit = config.memory_limit
    if limit is None or baseline + largest <= PAUSE_FRACTION * limit:
        return []
    what = (f"a worker's own memory ({baseline / 1e6:.1f} MB) and the largest result ({largest / 1e6:.1f} MB) pass "
            f"{{share}} % of the {limit / 1e6:.1f} MB limit, where Dask {{would}}: this replay spills instead")
    if baseline + largest > TERMINATE_FRACTION * limit:
        return [what.format(share=round(TERMINATE_FRACTION * 100), would="restarts the worker (its nanny; the job would "
                            "likely fail with KilledWorker)")]
    return [what.format(share=round(PAUSE_FRACTION * 100), would="would pause the worker until memory is freed")]


def _worker_baseline(profile: DataflowProfile) -> int:
    """A worker process's memory beside its data (interpreter, libraries), from its first heartbeats."""
    first: dict[str, int] = {}
    for point in sorted(profile.series, key=lambda p: p.t):
        first.setdefault(point.worker, max(0, point.memory - point.managed))
    return int(median(first.values())) if first else 100_000_000


@dataclass(frozen=True)
class _Load:
    """The CPU load beside the tasks' own work (see the module docstring)."""

    elsewhere: float  # cores busy outside the workers at the recording's mean concurrency
    concurrency: float  # the recording's mean number of tasks running at once, at least 1
    worker_cpu_per_task: float  # seconds of the worker's own GIL-holding Python per task
    other_programs: float = 0.0  # cores kept busy by other programs (only in the replay of the recording itself)


@dataclass
class _Batch:
    keys: list[str]
    offset: float  # recorded submission, seconds from the job's start
    waits: bool  # the driver submitted it once every earlier task had finished (it waited for results)
    gap: float  # recorded seconds from the earlier tasks' end (waits) or the previous batch (not) to this one
    latency: float  # recorded seconds from its submission to its first task's start (the scheduler's intake)


def _batches(profile: DataflowProfile, ran: list[TaskRun]) -> list[_Batch]:
    groups: dict[float, list[TaskRun]] = defaultdict(list)
    for t in ran:
        groups[t.submitted if t.submitted is not None else profile.started].append(t)
    out: list[_Batch] = []
    earlier_stop = -math.inf
    previous_submit = None
    for submitted in sorted(groups):
        members = groups[submitted]
        waits = bool(out) and earlier_stop <= submitted
        gap = (submitted - earlier_stop) if waits else (submitted - previous_submit if previous_submit else 0.0)
        latency = max(0.0, min(t.start for t in members) - submitted)
        out.append(_Batch([t.key for t in members], submitted - profile.started, waits, max(0.0, gap), latency))
        earlier_stop = max(earlier_stop, max(t.stop for t in members))
        previous_submit = submitted
    return out


class _Simulation:
    """The event simulation of one configuration."""

    def __init__(self, tasks: dict[str, _Task], config: Configuration, overhead: float, transfers: TransferModel,
                 disk_bw: float, baseline: int, load: _Load) -> None:
        self.tasks = tasks
        self.load = load
        self.config = config
        self.overhead = overhead
        self.transfers = transfers
        self.disk_bw = disk_bw
        self.capacity = (None if config.memory_limit is None
                         else max(0.0, SPILL_TARGET * config.memory_limit - baseline))
        nworkers = config.workers
        self.queues: list[list[tuple[tuple[float, ...], float, str]]] = [[] for _ in range(nworkers)]
        self.roots: list[tuple[tuple[float, ...], str]] = []
        self.running: dict[str, tuple[int, float]] = {}  # key -> (worker, remaining intrinsic seconds)
        self.threads_busy = [0] * nworkers
        self.where: dict[str, set[int]] = {}
        self.held = [0.0] * nworkers
        self.debt = [0.0] * nworkers  # spill seconds the worker owes its next task
        self.done: set[str] = set()
        self.missing = {k: len(t.deps) for k, t in tasks.items()}
        self.pending_dependents = {k: len(t.dependents) for k, t in tasks.items()}
        self.busy: dict[str, float] = defaultdict(float)
        self.sigma_sum: dict[str, float] = defaultdict(float)
        self.started_at: dict[str, float] = {}
        self.extra_io: dict[str, float] = {}
        self.extra_cpu: dict[str, float] = {}
        self.transfer_cpu: dict[str, float] = {}  # seconds of (de)serialising and moving a task's inputs
        self.transferred = 0
        self.spilled = 0
        self.released: set[int] = set()
        self.batch_of: dict[str, int] = {}
        self.saturation_time = 0.0
        self._demand = 0.0
        self.active_time = 0.0
        mean = sum(t.cpu + t.io for t in tasks.values()) / max(1, len(tasks))
        self.mean_duration = mean + overhead

    def run(self, batches: list[_Batch]) -> float:
        now = 0.0
        released = self.released
        release_at: dict[int, float] = {0: batches[0].offset + batches[0].latency}
        batch_of = self.batch_of
        for i, batch in enumerate(batches):
            for key in batch.keys:
                batch_of[key] = i
        last_finish = 0.0
        unreleased_tasks = {i: set(b.keys) for i, b in enumerate(batches)}
        while True:
            for i in sorted(release_at):
                if i not in released and release_at[i] <= now + 1e-12:
                    released.add(i)
                    for key in batches[i].keys:
                        if self.missing[key] == 0:
                            self._ready(key, now)
            self._fill(now)
            speeds = self._speeds()
            candidates = [now + remaining / speeds[k] for k, (_, remaining) in self.running.items()]
            candidates += [r for i, r in release_at.items() if i not in released]
            candidates += [ready for q in self.queues for _, ready, _ in q if ready > now]
            if not candidates:
                break
            nxt = max(now, min(candidates))
            self._advance(now, nxt, speeds)
            now = nxt
            for key, (worker, remaining) in list(self.running.items()):
                if remaining <= 1e-9:
                    self._finish(key, worker, now)
                    last_finish = max(last_finish, now)
                    b = batch_of[key]
                    unreleased_tasks[b].discard(key)
            self._schedule_batches(batches, release_at, released, unreleased_tasks, now)
        return last_finish

    def _schedule_batches(self, batches: list[_Batch], release_at: dict[int, float], released: set[int],
                          left: dict[int, set[str]], now: float) -> None:
        for i in range(1, len(batches)):
            if i in release_at:
                continue
            if not batches[i].waits:
                if i - 1 in release_at:
                    release_at[i] = release_at[i - 1] - batches[i - 1].latency + batches[i].gap + batches[i].latency
                continue
            if all(not left[j] for j in range(i)) and all(j in released for j in range(i)):
                release_at[i] = now + batches[i].gap + batches[i].latency
            break

    def _ready(self, key: str, now: float) -> None:
        task = self.tasks[key]
        if not task.deps:
            heapq.heappush(self.roots, (task.priority, key))
            return
        best = None
        for w in range(self.config.workers):
            lacking = [(self.tasks[d].operation, self.tasks[d].nbytes) for d in task.deps if w not in self.where.get(d, ())]
            missing = sum(nbytes for _, nbytes in lacking)
            transfer = self.transfers.seconds(lacking) if missing else 0.0
            backlog = len(self.queues[w]) + self.threads_busy[w] + 1 - self.config.threads_per_worker
            wait = max(0, backlog) * self.mean_duration / self.config.threads_per_worker
            cost = (transfer + wait, missing, w)
            if best is None or cost < best[0]:
                best = (cost, transfer, missing)
        assert best is not None
        (_, _, worker), transfer, missing = best
        if missing:
            self.transferred += missing
            for d in task.deps:
                if worker not in self.where.get(d, set()):
                    self.where.setdefault(d, set()).add(worker)
                    self._hold(worker, self.tasks[d].nbytes)
        self.transfer_cpu[key] = transfer
        heapq.heappush(self.queues[worker], (task.priority, now, key))

    def _fill(self, now: float) -> None:
        for w in range(self.config.workers):
            while self.threads_busy[w] < self.config.threads_per_worker:
                key = self._take_local(w, now)
                if key is None and self.roots:
                    key = heapq.heappop(self.roots)[1]
                if key is None:
                    break
                self._start(key, w, now)

    def _take_local(self, w: int, now: float) -> str | None:
        queue = self.queues[w]
        waiting = []
        chosen = None
        while queue:
            item = heapq.heappop(queue)
            if item[1] <= now + 1e-12:
                chosen = item[2]
                break
            waiting.append(item)
        for item in waiting:
            heapq.heappush(queue, item)
        return chosen

    def _start(self, key: str, worker: int, now: float) -> None:
        task = self.tasks[key]
        extra = self.debt[worker]
        self.debt[worker] = 0.0
        self.extra_io[key] = extra
        self.extra_cpu[key] = self.transfer_cpu.pop(key, 0.0) + self.overhead  # the worker's Python, holding the GIL
        self.threads_busy[worker] += 1
        self.running[key] = (worker, task.cpu + task.io + extra + self.extra_cpu[key] + self.load.worker_cpu_per_task)
        self.started_at[key] = now

    def _speeds(self) -> dict[str, float]:
        own = self.load.worker_cpu_per_task
        held: dict[str, float] = {}  # share of the task's time on a core holding its worker's GIL
        free: dict[str, float] = {}  # share on a core with the GIL released
        for key in self.running:
            task = self.tasks[key]
            cpu = task.cpu + self.extra_cpu[key]
            total = cpu + task.io + self.extra_io[key] + own
            gil_cpu = (cpu if task.gil else 0.0) + own
            held[key] = gil_cpu / total if total > 0 else 0.0
            free[key] = (cpu + own - gil_cpu) / total if total > 0 else 0.0
        demand = sum(held.values()) + sum(free.values())
        background = self.load.elsewhere * len(self.running) / self.load.concurrency + self.load.other_programs
        core = max(1.0, (demand + background) / self.config.cores)
        gil: dict[int, float] = defaultdict(float)
        for key, (worker, _) in self.running.items():
            gil[worker] += held[key]
        speeds = {}
        for key, (worker, _) in self.running.items():
            sigma = max(core, gil[worker])
            speeds[key] = 1.0 / (held[key] * sigma + free[key] * core + (1.0 - held[key] - free[key]))
            self.sigma_sum[key] = sigma if self.tasks[key].gil else core
        self._demand = demand + background
        return speeds

    def _advance(self, now: float, nxt: float, speeds: dict[str, float]) -> None:
        span = nxt - now
        if span <= 0:
            return
        if self.running:
            self.active_time += span
            self.saturation_time += span * min(1.0, self._demand / self.config.cores)
        for key, (worker, remaining) in list(self.running.items()):
            self.running[key] = (worker, remaining - span * speeds[key])

    def _finish(self, key: str, worker: int, now: float) -> None:
        task = self.tasks[key]
        del self.running[key]
        self.threads_busy[worker] -= 1
        self.busy[task.operation] += now - self.started_at[key]
        self.done.add(key)
        self.where.setdefault(key, set()).add(worker)
        self._hold(worker, task.nbytes)
        for dep in task.deps:
            self.pending_dependents[dep] -= 1
            if self.pending_dependents[dep] == 0:
                for w in self.where.get(dep, ()):
                    self.held[w] = max(0.0, self.held[w] - self.tasks[dep].nbytes)
        for child in task.dependents:
            self.missing[child] -= 1
            if self.missing[child] == 0 and self._released(child):
                self._ready(child, now)

    def _released(self, key: str) -> bool:
        return self.batch_of[key] in self.released

    def _hold(self, worker: int, nbytes: int) -> None:
        self.held[worker] += nbytes
        if self.capacity is not None and self.held[worker] > self.capacity:
            excess = self.held[worker] - self.capacity
            self.spilled += int(excess)
            self.debt[worker] += 2 * excess / self.disk_bw  # written now, read back when needed
            self.held[worker] = self.capacity

    def mean_saturation(self) -> float:
        return self.saturation_time / self.active_time if self.active_time > 0 else 0.0

    def resource_of(self, operation: str) -> str:
        if not operation:
            return ""
        keys = [k for k, t in self.tasks.items() if t.operation == operation]
        sigma = median(self.sigma_sum.get(k, 1.0) for k in keys) if keys else 1.0
        cpu = sum(self.tasks[k].cpu for k in keys)
        io = sum(self.tasks[k].io for k in keys)
        if self.spilled and self.capacity is not None:
            return "memory (spilling to disk)"
        if cpu >= io:
            if any(self.tasks[k].gil for k in keys) and sigma > 1.05:
                return "cpu (one core per worker: its Python holds the GIL)"
            return "cpu (cores oversubscribed)" if sigma > 1.05 else "cpu"
        return "disk or waiting (not on a CPU)"
