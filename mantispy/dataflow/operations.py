"""A profile's operations: Dask's task prefixes as a DAG, with time, parallelism, bytes and the critical path.

An operation is one task prefix (``random_sample``, ``mean_chunk``, a fused ``read-parquet-assign``); its
upstream operations are those its tasks depend on. Its measured resource class comes from the workers'
own accounting (thread CPU seconds against the rest of each task's time), spill and transfer times.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from .types import DataflowProfile, FunctionRef, TaskRun, Transfer

CPU_SHARE_FOR_CPU = 0.6
"""An operation whose tasks spend at least this share of their time on a CPU is CPU-bound."""
MIN_TRANSFER_S = 0.05
"""Transfers shorter than this in all never make an operation network-bound."""
_DASK_INTERNAL = ("dask.", "dask_expr.", "toolz.", "tlz.", "distributed.", "builtins.", "_operator.", "operator.")


@dataclass(frozen=True)
class Operation:
    """One operation of a recorded job (times in seconds from the job's start)."""

    name: str
    tasks: int
    compute_s: float
    transfer_s: float
    spill_s: float
    first_start: float
    last_stop: float
    bytes_out: int
    bytes_in: int
    bytes_moved: int  # of its results, fetched by other workers (the workers' own log of each fetch)
    upstream: tuple[str, ...]
    cpu_share: float | None  # thread CPU over task time, from the workers' metrics; None when not reported
    critical_s: float  # its tasks' compute time on the critical path
    functions: tuple[FunctionRef, ...]

    @property
    def span_s(self) -> float:
        """From its first task's start to its last task's stop."""
        return max(0.0, self.last_stop - self.first_start)

    @property
    def parallelism(self) -> float:
        """Compute time over span: how many of its tasks ran at once, on average."""
        return self.compute_s / self.span_s if self.span_s > 0 else float(self.tasks > 0)

    @property
    def measured_class(self) -> str:
        """The dominant resource as measured: cpu, memory (spilling), network (transfers) or disk (waiting)."""
        if self.spill_s > 0.5 * max(self.compute_s, 1e-9):
            return "memory"
        if self.transfer_s > max(self.compute_s, MIN_TRANSFER_S):
            return "network"
        if self.cpu_share is None or self.cpu_share >= CPU_SHARE_FOR_CPU:
            return "cpu"
        return "disk"

    @property
    def own_functions(self) -> tuple[FunctionRef, ...]:
        """Its callables outside Dask's own wrappers (the user's code and the libraries doing the work)."""
        own = tuple(f for f in self.functions if not f.label.startswith(_DASK_INTERNAL))
        return own or self.functions


def cpu_shares(profile: DataflowProfile) -> dict[str, float]:
    """Per operation, thread CPU seconds over (CPU + non-CPU) seconds, from the workers' metrics."""
    cpu: dict[str, float] = defaultdict(float)
    other: dict[str, float] = defaultdict(float)
    for name, value in profile.worker_metrics.items():
        parts = name.split("/")
        if len(parts) == 4 and parts[0] == "execute" and parts[3] == "seconds":
            if parts[2] == "thread-cpu":
                cpu[parts[1]] += value
            elif parts[2] == "thread-noncpu":
                other[parts[1]] += value
    return {op: min(1.0, cpu[op] / (cpu[op] + other[op])) for op in set(cpu) | set(other) if cpu[op] + other[op] > 0}


def spill_seconds(profile: DataflowProfile) -> dict[str, float]:
    """Per operation, the seconds its tasks spent reading and writing spilled data, from the workers' metrics
    (``execute/OP/disk-read|disk-write/seconds``): a task's own record of a read holds only those over 5 ms,
    so a job that spilled in many short reads showed almost none (2 of 64 tasks, 0.17 s of reads at 0.17 s of
    compute, measured cpu)."""
    spent: dict[str, float] = defaultdict(float)
    for name, value in profile.worker_metrics.items():
        parts = name.split("/")
        if len(parts) == 4 and parts[0] == "execute" and parts[2] in ("disk-read", "disk-write") \
                and parts[3] == "seconds":
            spent[parts[1]] += value
    return dict(spent)


def fetch_shares(transfer: Transfer, by_key: dict[str, TaskRun]) -> list[tuple[str, float]]:
    """(operation, share) for each known result one fetch moved: a fetch of several results is shared
    among them in proportion to their sizes (equally when none has a size); unknown keys get nothing."""
    known = [by_key[k] for k in transfer.keys if k in by_key]
    sizes = sum(t.nbytes for t in known)
    return [(task.operation, task.nbytes / sizes if sizes else 1 / len(known)) for task in known]


def moved_bytes(profile: DataflowProfile) -> dict[str, int]:
    """Per operation, the bytes of its results that workers fetched from one another (the profile's
    transfers; a result fetched by two workers counts twice)."""
    by_key = {t.key: t for t in profile.tasks}
    moved: dict[str, float] = defaultdict(float)
    for transfer in profile.transfers:
        for operation, share in fetch_shares(transfer, by_key):
            moved[operation] += transfer.nbytes * share
    return {op: round(b) for op, b in moved.items()}


@dataclass(frozen=True)
class TransferTotals:
    """The job's fetches between workers, summed."""

    fetches: int
    nbytes: int
    seconds: float
    median_rate: float | None  # bytes per second over fetches of at least RATE_MIN_BYTES; None: none so large


RATE_MIN_BYTES = 100_000
"""Smaller fetches are all latency: their rate says nothing of the network."""


def transfer_totals(profile: DataflowProfile) -> TransferTotals:
    """How many fetches, how many bytes, how long, and at what median rate."""
    rates = sorted(x.nbytes / x.duration_s for x in profile.transfers
                   if x.duration_s > 0 and x.nbytes >= RATE_MIN_BYTES)
    return TransferTotals(fetches=len(profile.transfers), nbytes=sum(x.nbytes for x in profile.transfers),
                          seconds=sum(x.duration_s for x in profile.transfers),
                          median_rate=rates[len(rates) // 2] if rates else None)


def critical_path(profile: DataflowProfile) -> list[TaskRun]:
    """The chain of dependent tasks with the most compute and transfer time (ran tasks only)."""
    ran = {t.key: t for t in profile.tasks if t.ran}
    order = sorted(ran.values(), key=lambda t: (t.stop, t.start))
    best: dict[str, float] = {}
    previous: dict[str, str | None] = {}
    for task in order:
        upstream = [(best[d], d) for d in task.deps if d in best]
        length, via = max(upstream, default=(0.0, None))
        best[task.key] = length + task.compute_s + task.transfer_s
        previous[task.key] = via
    if not best:
        return []
    key: str | None = max(best, key=lambda k: best[k])
    chain = []
    while key is not None:
        chain.append(ran[key])
        key = previous[key]
    return chain[::-1]


def operations(profile: DataflowProfile) -> list[Operation]:
    """The job's operations, in the order their first tasks started."""
    by_key = {t.key: t for t in profile.tasks}
    shares = cpu_shares(profile)
    spilled = spill_seconds(profile)
    on_path: dict[str, float] = defaultdict(float)
    for task in critical_path(profile):
        on_path[task.operation] += task.compute_s
    groups: dict[str, list[TaskRun]] = defaultdict(list)
    for task in profile.tasks:
        groups[task.operation].append(task)
    moved = moved_bytes(profile)
    result = []
    for name, tasks in groups.items():
        ran = [t for t in tasks if t.ran]
        upstream = sorted({by_key[d].operation for t in tasks for d in t.deps if d in by_key} - {name})
        bytes_in = sum(by_key[d].nbytes for t in tasks for d in t.deps if d in by_key)
        result.append(Operation(
            name=name, tasks=len(tasks), compute_s=sum(t.compute_s for t in ran),
            transfer_s=sum(t.transfer_s for t in ran),
            spill_s=max(sum(t.spill_s for t in ran), spilled.get(name, 0.0)),
            first_start=min((t.start for t in ran), default=profile.ended) - profile.started,
            last_stop=max((t.stop for t in ran), default=profile.ended) - profile.started,
            bytes_out=sum(t.nbytes for t in ran), bytes_in=bytes_in,
            bytes_moved=moved.get(name, 0), upstream=tuple(upstream),
            cpu_share=shares.get(name), critical_s=on_path.get(name, 0.0),
            functions=tuple(profile.functions.get(name, ()))))
    return sorted(result, key=lambda op: (op.first_start, op.name))
