"""Text and JSON renderings of a dataflow profile's operations and of a what-if prediction."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from .operations import RATE_MIN_BYTES, Operation, critical_path, operations, transfer_totals
from .types import ClusterConfig, DataflowProfile
from .whatif import Prediction


def _size(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if abs(n) < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} GB"


def _memory(limit: int | None) -> str:
    return "Dask's default memory" if not limit else f"{_size(limit)} per worker"


def _where(cluster: ClusterConfig) -> str:
    """Which cluster ran the job, in words."""
    if cluster.started_by == "mantispy":
        return "LocalCluster"
    if cluster.started_by == "job":
        return f"the job's own cluster at {cluster.address}"
    return cluster.address


def render_operations(profile: DataflowProfile) -> str:
    """The job, its operations in start order, and its critical path."""
    ops = operations(profile)
    ran = [t for t in profile.tasks if t.ran]
    c = profile.cluster
    lines = [f"job: {' '.join(profile.command)}",
             f"  {'complete' if profile.complete else 'INCOMPLETE'}, exit status {profile.returncode}, "
             f"{profile.wall_s:.2f} s on {c.workers} worker(s) x {c.threads_per_worker} thread(s), {c.cores} cores, "
             f"{_memory(c.memory_limit)} ({_where(c)})"]
    if ran:
        first = min(t.start for t in ran) - profile.started
        last = max(t.stop for t in ran) - profile.started
        lines.append(f"  {len(ran)} tasks in {len(ops)} operations; tasks ran from {first:.2f} s to {last:.2f} s, "
                     f"{sum(t.compute_s for t in ran):.2f} s of task time")
    if profile.transfers:
        lines.append("  " + transfers_line(profile))
    path = critical_path(profile)
    if path:
        names: list[str] = []
        for task in path:
            if not names or names[-1] != task.operation:
                names.append(task.operation)
        lines.append(f"  critical path: {len(path)} tasks, {sum(t.compute_s + t.transfer_s for t in path):.2f} s: "
                     + " -> ".join(names))
    for note in profile.notes:
        lines.append(f"  note: {note}")
    lines.append("")
    header = f"{'operation':<44} {'tasks':>6} {'task s':>8} {'span s':>7} {'par':>5} {'in':>9} {'out':>9} {'moved':>9} {'cpu':>5} " \
             f"{'class':<8} {'code':<8} {'crit s':>7}  source"
    lines.append(header)
    classes = {op.name: code_class(op) for op in ops}
    for op in ops:
        lines.append(_operation_line(op, classes[op.name]))
    lines.append("")
    lines.append("in: its inputs' bytes; out: its results'; moved: of its results, fetched by other workers; "
                 "class: the resource measured (cpu: thread CPU >= 60 % of task time; memory: spilling; network: "
                 "transfers; disk: waiting); code: the class read off the operation's code (classify.py)")
    judged = [(op.measured_class, classes[op.name]) for op in ops if classes[op.name] != "-"]
    if judged:
        agree = sum(measured == code for measured, code in judged)
        lines.append(f"the code's class agrees with the measured one on {agree} of {len(judged)} operation(s) whose "
                     "code could be read")
    return "\n".join(lines) + "\n"


def transfers_line(profile: DataflowProfile) -> str:
    """The fetches between workers in one line: how many, how much, how long, at what rate."""
    totals = transfer_totals(profile)
    rate = "" if totals.median_rate is None else \
        f", median {_size(totals.median_rate)}/s on fetches of {_size(RATE_MIN_BYTES)} or more"
    return f"transfers: {totals.fetches} fetch(es) between workers moved {_size(totals.nbytes)} in {totals.seconds:.2f} s{rate}"


def code_class(op: Operation) -> str:
    """The class the resource classifier reads off the operation's functions, or '-'."""
    from .classify import classify_operation

    found = classify_operation(op.functions)
    return found[0] if found else "-"


def _operation_line(op: Operation, code: str) -> str:
    cpu = "-" if op.cpu_share is None else f"{op.cpu_share * 100:.0f}%"
    source = ", ".join(f"{f.label} ({f.file.rsplit('/', 1)[-1]}:{f.line})" if f.file else f.label
                       for f in op.own_functions[:2])
    name = op.name if len(op.name) <= 44 else op.name[:41] + "..."
    return (f"{name:<44} {op.tasks:>6} {op.compute_s:>8.3f} {op.span_s:>7.3f} {op.parallelism:>5.2f} "
            f"{_size(op.bytes_in):>9} {_size(op.bytes_out):>9} {_size(op.bytes_moved):>9} {cpu:>5} {op.measured_class:<8} {code:<8} "
            f"{op.critical_s:>7.3f}  {source}")


def operations_json(profile: DataflowProfile) -> dict[str, Any]:
    """The operations and the critical path as JSON-ready values."""
    ops = []
    for op in operations(profile):
        body = asdict(op)
        body.update(span_s=op.span_s, parallelism=op.parallelism, measured_class=op.measured_class,
                    code_class=code_class(op))
        ops.append(body)
    return {"command": profile.command, "complete": profile.complete, "wall_s": profile.wall_s,
            "cluster": asdict(profile.cluster), "operations": ops,
            "critical_path": [t.key for t in critical_path(profile)], "transfers": asdict(transfer_totals(profile)),
            "notes": profile.notes}


def render_prediction(profile: DataflowProfile, prediction: Prediction) -> str:
    """The predicted completion time, its parts, the bottleneck, the busiest operations, the assumptions."""
    c = prediction.config
    r = profile.cluster
    lines = [f"recorded: {profile.wall_s:.2f} s on {r.workers} worker(s) x {r.threads_per_worker} thread(s)",
             f"predicted: {prediction.completion_s:.2f} s on {c.workers} worker(s) x {c.threads_per_worker} thread(s), "
             f"{c.cores} cores, {_memory(c.memory_limit)}",
             f"  Dask part {prediction.dask_s:.2f} s, the job's own code {prediction.driver_s:.2f} s; cores "
             f"{prediction.cpu_saturation * 100:.0f}% busy while tasks ran",
             f"  bottleneck: {prediction.bottleneck_operation} — {prediction.bottleneck_resource}"]
    if prediction.transferred_bytes:
        lines.append(f"  transfers between workers: {_size(prediction.transferred_bytes)}")
    if prediction.spilled_bytes:
        lines.append(f"  spilled to disk: {_size(prediction.spilled_bytes)}")
    lines.append("  busiest operations (task seconds in the replay):")
    for name, seconds in list(prediction.operation_busy_s.items())[:5]:
        lines.append(f"    {seconds:8.3f}  {name}")
    for note in prediction.assumptions:
        lines.append(f"  assumed: {note}")
    return "\n".join(lines) + "\n"


def prediction_json(prediction: Prediction) -> dict[str, Any]:
    """The prediction as JSON-ready values."""
    return asdict(prediction)
