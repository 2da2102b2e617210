"""What moving task results between workers costs, read from a recording (the what-if's transfer model).

A fetch costs the receiving worker a latency, then its bytes at a rate that depends on what is moved:
numpy buffers are sent as they are, a bag's partitions (lists of Python objects) are pickled and
unpickled, some ten times slower per byte (measured here: 16-32 MB arrays at 330-1,090 MB/s, 1-2 MB bag
partitions at 4-58 MB/s, on one machine's loopback). So the rate is kept per operation, the operation
being the one whose results a fetch moved.

Read from the workers' own log of each fetch (the profile's ``transfers``: receiver, bytes, start and
stop): the latency is the median duration of the fetches too small for their bytes to matter (at least
three of them), and an operation's rate is its fetched bytes over their time beyond that latency, over
its fetches large enough to measure one (a fetch of several results shared among their operations in
proportion to the results' sizes). Both are what the recording saw, contention included, as the replay's
other costs are. Profiles recorded before fetches were logged fall back to the bytes that moved between
the workers the tasks ran on over the workers' gather time; with too little moved to measure, Dask's
default rate.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from statistics import median

from .operations import RATE_MIN_BYTES, fetch_shares
from .types import DataflowProfile, TaskRun

DEFAULT_BANDWIDTH = 100e6
"""Bytes per second between workers when the recording moved too little to measure it (Dask's default)."""
DEFAULT_LATENCY_S = 0.002
"""Seconds a fetch costs beyond its bytes when the recording has too few small fetches to measure it."""
MIN_MEASURED_BYTES = 1_000_000
"""An operation's (or the job's) rate is measured over at least this many fetched bytes."""
MIN_MEASURED_SECONDS = 0.01
MIN_SMALL_FETCHES = 3


@dataclass(frozen=True)
class TransferModel:
    """Seconds a task spends fetching the results it lacks on its worker."""

    latency_s: float
    bandwidth: float  # bytes per second for the results of an operation without a rate of its own
    by_operation: dict[str, float] = field(default_factory=dict)
    source: str = "default"  # "transfer log", "gather time" or "default"

    def seconds(self, missing: list[tuple[str, int]]) -> float:
        """One fetch of ``missing`` results, each (its operation, its bytes); 0 when nothing is missing."""
        if not missing:
            return 0.0
        return self.latency_s + sum(nbytes / self.by_operation.get(op, self.bandwidth) for op, nbytes in missing)

    def describe(self) -> str:
        """One line for the prediction's assumptions."""
        if self.source == "default":
            return (f"transfers at {self.bandwidth / 1e6:.0f} MB/s and {self.latency_s * 1e3:.0f} ms a fetch "
                    "(the recording moved too little to measure)")
        own = ", ".join(f"{op} {rate / 1e6:.1f} MB/s" for op, rate in sorted(self.by_operation.items()))
        return (f"transfers at {self.bandwidth / 1e6:.1f} MB/s and {self.latency_s * 1e3:.1f} ms a fetch (from the "
                f"recording's {self.source}){'; per operation: ' + own if own else ''}")


def transfer_model(profile: DataflowProfile, ran: list[TaskRun]) -> TransferModel:
    """The transfer model of the module docstring, from ``profile``'s fetches (or its gather time)."""
    from_log = _from_transfer_log(profile)
    if from_log is not None:
        return from_log
    return _from_gather_time(profile, ran)


def _from_transfer_log(profile: DataflowProfile) -> TransferModel | None:
    fetches = [x for x in profile.transfers if x.duration_s > 0]
    if not fetches:
        return None
    small = [x.duration_s for x in fetches if x.nbytes < RATE_MIN_BYTES]
    latency = median(small) if len(small) >= MIN_SMALL_FETCHES else DEFAULT_LATENCY_S
    by_key = {t.key: t for t in profile.tasks}
    moved: dict[str, float] = defaultdict(float)
    spent: dict[str, float] = defaultdict(float)
    for fetch in fetches:
        if fetch.nbytes < RATE_MIN_BYTES:
            continue
        beyond = max(0.0, fetch.duration_s - latency)
        for operation, share in fetch_shares(fetch, by_key):
            moved[operation] += share * fetch.nbytes
            spent[operation] += share * beyond
    by_operation = {op: moved[op] / spent[op] for op in moved
                    if moved[op] >= MIN_MEASURED_BYTES and spent[op] >= MIN_MEASURED_SECONDS}
    total_moved, total_spent = sum(moved.values()), sum(spent.values())
    if total_moved >= MIN_MEASURED_BYTES and total_spent >= MIN_MEASURED_SECONDS:
        bandwidth = total_moved / total_spent
    elif len(small) < MIN_SMALL_FETCHES:
        return None  # nothing measured: the gather time may still say something
    else:
        bandwidth = DEFAULT_BANDWIDTH
    return TransferModel(latency, bandwidth, by_operation, "transfer log")


def _from_gather_time(profile: DataflowProfile, ran: list[TaskRun]) -> TransferModel:
    """Profiles without a transfer log: the bytes of dependencies that ran on another worker than their
    dependent, over the workers' gather time."""
    worker_of = {t.key: t.worker for t in ran}
    size = {t.key: t.nbytes for t in ran}
    moved = {(d, t.worker) for t in ran for d in t.deps if worker_of.get(d) not in (None, t.worker)}
    moved_bytes = sum(size.get(d, 0) for d, _ in moved)
    seconds = sum(v for k, v in profile.worker_metrics.items() if k.startswith("gather-dep/") and k.endswith("/seconds"))
    if moved_bytes > MIN_MEASURED_BYTES and seconds > 0.02:
        return TransferModel(DEFAULT_LATENCY_S, moved_bytes / seconds, {}, "gather time")
    return TransferModel(DEFAULT_LATENCY_S, DEFAULT_BANDWIDTH, {}, "default")
