"""Dataflow jobs on Dask (issue 23): the profile reader, the operations view, the what-if replay's model
on hand-made profiles whose answers are known, and the real CLI recording real Dask jobs on a
LocalCluster and on a scheduler and worker started with Dask's own commands."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mantispy.dataflow.operations import critical_path, operations, transfer_totals
from mantispy.dataflow.transfer_model import DEFAULT_BANDWIDTH, DEFAULT_LATENCY_S, transfer_model
from mantispy.dataflow.types import (
    ClusterConfig,
    DataflowProfile,
    FunctionRef,
    MachinePoint,
    ProfileError,
    TaskRun,
    Transfer,
    WorkerPoint,
    profile_from_json,
    read_profile,
)
from mantispy.dataflow.whatif import Configuration, WhatIfError, holds_gil, predict, worker_overhead
from tests.helpers import MANTISPY, read_mutated

NUMPY_KERNEL = [FunctionRef("numpy._core.fromnumeric", "sum", "fromnumeric.py", 1)]
PYTHON_CODE = [FunctionRef("__main__", "parse", "job.py", 3)]


def task(key: str, start: float, stop: float, deps: tuple[str, ...] = (), op: str = "work", worker: str = "w1",
         thread: int = 1, nbytes: int = 1000, submitted: float = 0.0) -> TaskRun:
    """A task that ran from ``start`` to ``stop`` (seconds; the job starts at 0)."""
    return TaskRun(key=key, operation=op, deps=deps, priority=(0.0, float(len(key))), worker=worker, thread=thread,
                   start=start, stop=stop, compute_s=stop - start, transfer_s=0.0, spill_s=0.0, nbytes=nbytes,
                   status="memory", submitted=submitted)


def profile_of(tasks: list[TaskRun], workers: int = 1, threads: int = 1, cpu_share: dict[str, float] | None = None,
               functions: dict[str, list[FunctionRef]] | None = None, ended: float | None = None,
               memory_limit: int | None = None) -> DataflowProfile:
    """A complete profile of ``tasks`` on a 2-core machine; ``cpu_share`` per operation as the workers report it."""
    metrics = {}
    for op, share in (cpu_share or {t.operation: 1.0 for t in tasks}).items():
        total = sum(t.compute_s for t in tasks if t.operation == op)
        metrics[f"execute/{op}/thread-cpu/seconds"] = share * total
        metrics[f"execute/{op}/thread-noncpu/seconds"] = (1 - share) * total
    return DataflowProfile(command=["python", "job.py"], cwd="/tmp", cluster=ClusterConfig(workers, threads, memory_limit, 2),
                           started=0.0, ended=ended if ended is not None else max(t.stop for t in tasks),
                           returncode=0, complete=True, tasks=tasks, functions=functions or {}, worker_metrics=metrics)


def independent(n: int, seconds: float, op: str = "work") -> list[TaskRun]:
    """``n`` independent tasks run one after another on one thread."""
    return [task(f"{op}-{i}", i * seconds, (i + 1) * seconds, op=op) for i in range(n)]


def dask_seconds(profile: DataflowProfile, workers: int, threads: int, memory_limit: int | None = None) -> float:
    return predict(profile, Configuration(workers, threads, memory_limit, 2)).completion_s


# ---------------------------------------------------------------------------------------------- the model


def test_cpu_bound_tasks_scale_with_workers_up_to_the_cores():
    profile = profile_of(independent(8, 1.0), functions={"work": NUMPY_KERNEL})
    assert dask_seconds(profile, 1, 1) == pytest.approx(8.0, rel=0.02)
    assert dask_seconds(profile, 2, 1) == pytest.approx(4.0, rel=0.02)
    assert dask_seconds(profile, 4, 1) == pytest.approx(4.0, rel=0.02)  # two cores: four workers share them
    assert dask_seconds(profile, 1, 2) == pytest.approx(4.0, rel=0.02)  # numpy releases the GIL


def test_python_holding_the_gil_gets_one_core_per_worker_process():
    profile = profile_of(independent(8, 1.0), functions={"work": PYTHON_CODE})
    assert dask_seconds(profile, 1, 2) == pytest.approx(8.0, rel=0.02)
    assert dask_seconds(profile, 2, 1) == pytest.approx(4.0, rel=0.02)
    assert holds_gil(["__main__.parse", "dask._task_spec._execute_subgraph"])
    assert not holds_gil(["numpy._core.fromnumeric.sum", "__main__.parse"])
    assert holds_gil(["dask.bag.core.map_chunk", "toolz.itertoolz.frequencies"])  # Python objects
    assert not holds_gil(["dask.array.chunk.getitem"])  # numpy underneath


def test_a_chain_does_not_get_faster_with_more_workers():
    chain = [task("c0", 0, 1), task("c1", 1, 2, ("c0",)), task("c2", 2, 3, ("c1",)), task("c3", 3, 4, ("c2",))]
    profile = profile_of(chain, functions={"work": NUMPY_KERNEL})
    assert dask_seconds(profile, 4, 1) == pytest.approx(4.0, rel=0.02)
    assert [t.key for t in critical_path(profile)] == ["c0", "c1", "c2", "c3"]


def test_spilling_the_workers_metrics_report_makes_an_operation_memory_bound():
    """A persisted array larger than the memory limit, summed: the workers' metrics had 0.17 s of disk reads for
    0.17 s of compute, the tasks' own records (reads over 5 ms only) almost none, and the operation measured cpu."""
    profile = profile_of(independent(4, 0.05, op="sum"), functions={"sum": NUMPY_KERNEL})
    assert operations(profile)[0].measured_class == "cpu"
    metrics = {**profile.worker_metrics, "execute/sum/disk-read/seconds": 0.169}
    spilled = replace(profile, worker_metrics=metrics)
    assert operations(spilled)[0].spill_s == pytest.approx(0.169) and operations(spilled)[0].measured_class == "memory"


def test_waiting_operations_overlap_beyond_the_cores():
    profile = profile_of(independent(8, 1.0, op="read"), cpu_share={"read": 0.1}, functions={"read": NUMPY_KERNEL})
    assert operations(profile)[0].measured_class == "disk"
    assert dask_seconds(profile, 4, 1) == pytest.approx(2.0, rel=0.05)


def test_the_recordings_own_contention_is_taken_out():
    # four workers on two cores: each 1-second task of CPU work took 2 seconds
    tasks = [task(f"t{i}", 2.0 * (i // 4), 2.0 * (i // 4) + 2.0, worker=f"w{i % 4}") for i in range(8)]
    profile = profile_of(tasks, workers=4, cpu_share={"work": 0.5}, functions={"work": NUMPY_KERNEL})
    assert dask_seconds(profile, 4, 1) == pytest.approx(4.0, rel=0.05)  # its own configuration: as recorded
    assert dask_seconds(profile, 1, 1) == pytest.approx(8.0, rel=0.05)  # 8 tasks of 1 s of CPU, one at a time


def test_the_machines_other_load_is_taken_out():
    tasks = independent(4, 1.0)
    busy = [MachinePoint(0.0, 100.0), MachinePoint(4.0, 100.0 + 4 * 1.0 + 4 * 1.5)]  # tasks + 1.5 cores of others
    loaded = replace(profile_of(tasks, functions={"work": NUMPY_KERNEL}), machine=busy)
    # 1 task + 1.5 cores of other load on 2 cores: each task was slowed 1.25x; without that load it runs faster
    assert dask_seconds(loaded, 1, 1) == pytest.approx(4.0, rel=0.02)  # the same load assumed in the replay
    assert dask_seconds(profile_of(tasks, functions={"work": NUMPY_KERNEL}), 1, 1) == pytest.approx(4.0, rel=0.02)
    assert dask_seconds(loaded, 2, 1) > 2.0 * 1.2  # with that load, two workers are not twice as fast


def test_other_programs_load_is_taken_out_of_the_recording_and_not_replayed():
    """The 1.5 cores beside the tasks were other programs' (the recording's own process tree used only the
    tasks' CPU): each task was slowed 1.25x by them and runs in 0.8 s without them."""
    tasks = independent(4, 1.0)
    others = [MachinePoint(0.0, 100.0, 10.0), MachinePoint(4.0, 100.0 + 4 * 1.0 + 4 * 1.5, 10.0 + 4 * 1.0)]
    loaded = replace(profile_of(tasks, functions={"work": NUMPY_KERNEL}), machine=others)
    alone = predict(loaded, Configuration(1, 1, None, 2))
    assert alone.completion_s == pytest.approx(3.2, rel=0.02) and alone.calibration == pytest.approx(1.0, abs=0.02)
    assert any("other programs kept 1.50 cores busy" in note for note in alone.assumptions), alone.assumptions
    assert dask_seconds(loaded, 2, 1) == pytest.approx(1.6, rel=0.05)
    ours = [MachinePoint(0.0, 100.0, 10.0), MachinePoint(4.0, 100.0 + 4 * 1.0 + 4 * 1.5, 10.0 + 4 * 1.0 + 4 * 1.5)]
    own_load = replace(profile_of(tasks, functions={"work": NUMPY_KERNEL}), machine=ours)
    assert dask_seconds(own_load, 1, 1) == pytest.approx(4.0, rel=0.02)  # the recording's own load: replayed


def test_the_machines_other_load_grows_with_the_tasks_running_at_once():
    # recorded one task at a time beside 1 core of other load (the scheduler's work follows the task rate): two
    # workers run two tasks at once beside 2 cores of it, four cores of demand on two cores
    tasks = independent(4, 1.0)
    busy = [MachinePoint(0.0, 100.0), MachinePoint(4.0, 100.0 + 4 * 1.0 + 4 * 1.0)]
    loaded = replace(profile_of(tasks, functions={"work": NUMPY_KERNEL}), machine=busy)
    assert dask_seconds(loaded, 1, 1) == pytest.approx(4.0, rel=0.02)
    assert dask_seconds(loaded, 2, 1) == pytest.approx(4.0, rel=0.05)


def test_sparse_tasks_beside_another_programs_load_do_not_multiply_it():
    """Four 50 ms tasks spread over 4 s (0.05 tasks at once) beside 1.5 cores of another program: the load was
    put down to the tasks running, 30 cores per running task, and the replay of the recorded configuration
    came out several times the recording (an audit's delayed job: 4.18 s predicted for 1.25 s recorded)."""
    tasks = [task(f"t{i}", 1.0 * i, 1.0 * i + 0.05, submitted=1.0 * i) for i in range(4)]  # submitted one by one
    busy = [MachinePoint(0.0, 100.0), MachinePoint(3.05, 100.0 + 4 * 0.05 + 3.05 * 1.5)]
    loaded = replace(profile_of(tasks, functions={"work": NUMPY_KERNEL}), machine=busy)
    own = predict(loaded, Configuration(1, 1, None, 2))
    assert own.completion_s == pytest.approx(3.05, rel=0.02)
    assert 0.9 <= own.calibration <= 1.1, own.assumptions  # the replay explains the recording by itself


def test_a_task_a_later_graph_reuses_keeps_its_first_submission(monkeypatch):
    """persist(), wait(), then a computation on the persisted array: the second graph names the persisted keys
    again, and their submission time and priority were overwritten with the second graph's (the tasks seemed
    submitted after they had run, and the replay saw one batch and no spill)."""
    from types import SimpleNamespace

    from mantispy.dataflow import plugin as plugin_module

    ticks = iter(range(1000))
    monkeypatch.setattr(plugin_module.time, "time", lambda: float(next(ticks)))
    held = SimpleNamespace(prefix=SimpleNamespace(name="random_sample"), dependencies=[], priority=(0, 1, 0),
                           state="processing", run_spec=None)
    scheduler = SimpleNamespace(tasks={"x-0": held})
    recorder = plugin_module.DataflowRecorder()
    recorder.update_graph(scheduler, tasks=["x-0"], priority={"x-0": (0, 1, 0)})
    first = recorder.graph["x-0"]["submitted"]
    held.state = "memory"
    recorder.runs["x-0"] = {"status": "memory"}
    recorder.update_graph(scheduler, tasks=["x-0"], priority={"x-0": (1, 5, 0)})
    assert recorder.graph["x-0"]["submitted"] == first and recorder.graph["x-0"]["priority"] == [0.0, 1.0, 0.0]
    held.state = "waiting"  # released and computed again: a new submission
    recorder.update_graph(scheduler, tasks=["x-0"], priority={"x-0": (2, 7, 0)})
    assert recorder.graph["x-0"]["submitted"] > first and recorder.graph["x-0"]["priority"] == [2.0, 7.0, 0.0]


def _point(worker: str, t: float, cpu: float) -> WorkerPoint:
    return WorkerPoint(worker, t, cpu, 0, 0, 0, 0, 0, 0.0, 0.0, 0.0, 0.0)


def test_a_workers_own_python_beside_its_tasks_is_read_from_its_cpu_series():
    tasks = [task(f"t{i}", 0.5 * i, 0.5 * i + 0.4, op="parse") for i in range(8)]  # 0.4 s of CPU every 0.5 s
    series = [_point("w1", t, 100.0) for t in (0.0, 1.0, 2.0, 3.0, 4.0)]  # the process busy all along
    machine = [MachinePoint(0.0, 100.0), MachinePoint(3.9, 103.9)]  # and nothing else on the machine
    profile = replace(profile_of(tasks, functions={"parse": PYTHON_CODE}), series=series, machine=machine)
    assert worker_overhead(profile) == pytest.approx(3.9 - 8 * 0.4, abs=0.01)  # tasks span 0 to 3.9 s
    assert any(note.startswith("the workers' own Python beside their tasks (their CPU series): 87.5 ms per task")
               for note in predict(profile, Configuration(1, 1, None, 2)).assumptions)
    assert worker_overhead(profile_of(tasks)) == 0.0  # no series: nothing known


def test_each_new_worker_pays_the_first_computations_intake():
    # submitted at 0, the first task started at 0.5 while both cores were busy: the two workers deserialised
    # the graph and imported its libraries (0.5 CPU s each); four workers on two cores take twice as long
    tasks = [task(f"t{i}", 0.5 + (i // 2), 1.5 + (i // 2), worker=f"w{i % 2}") for i in range(8)]
    busy = [MachinePoint(0.0, 100.0), MachinePoint(0.5, 101.0), MachinePoint(4.5, 109.0)]
    profile = replace(profile_of(tasks, workers=2, functions={"work": NUMPY_KERNEL}), machine=busy)
    recorded = dask_seconds(profile, 2, 1)
    assert recorded == pytest.approx(4.5, rel=0.02)
    four = predict(profile, Configuration(4, 1, None, 2))
    assert four.completion_s == pytest.approx(recorded + 0.5, rel=0.02)
    assert "the first computation's intake: 0.50 CPU s per new worker, +0.50 s at 4 worker(s) on 2 cores" in four.assumptions
    assert dask_seconds(profile, 1, 1) == pytest.approx(8.5, rel=0.02)  # one worker: its intake as recorded


def test_the_drivers_own_time_between_computations_is_kept():
    first = [task("a", 1.0, 2.0, submitted=1.0)]
    second = [task("b", 3.0, 4.0, submitted=3.0)]  # the driver worked 1 s between the two computations
    profile = profile_of(first + second, ended=4.5, functions={"work": NUMPY_KERNEL})
    prediction = predict(profile, Configuration(2, 1, None, 2))
    assert prediction.completion_s == pytest.approx(4.5, rel=0.02)
    assert prediction.driver_s == pytest.approx(2.5, rel=0.02)


def test_a_memory_limit_below_the_data_spills_and_slows_the_job():
    tasks = [task(f"p{i}", i * 0.1, (i + 1) * 0.1, nbytes=200_000_000) for i in range(8)]
    tasks.append(task("sum", 0.8, 0.9, tuple(t.key for t in tasks), op="sum", nbytes=8))
    profile = profile_of(tasks, functions={"work": NUMPY_KERNEL, "sum": NUMPY_KERNEL})
    roomy = predict(profile, Configuration(1, 1, 16_000_000_000, 2))
    tight = predict(profile, Configuration(1, 1, 1_000_000_000, 2))
    assert roomy.spilled_bytes == 0 and tight.spilled_bytes > 0
    assert tight.completion_s > roomy.completion_s + 1.0
    assert tight.bottleneck_resource.startswith("memory")


def test_a_memory_limit_dask_would_pause_or_kill_a_worker_at_is_said():
    """--memory-limit 100kB predicted a job that spilled, where Dask pauses a worker past 80 % of its limit
    and its nanny restarts it past 95 %: the prediction now says what it assumes there."""
    tasks = [task(f"p{i}", i * 0.1, (i + 1) * 0.1, nbytes=200_000_000) for i in range(4)]
    profile = profile_of(tasks, functions={"work": NUMPY_KERNEL})
    roomy = predict(profile, Configuration(1, 1, 16_000_000_000, 2))
    assert not [a for a in roomy.assumptions if "Dask" in a and "limit" in a]
    killed = predict(profile, Configuration(1, 1, 100_000, 2))
    said = [a for a in killed.assumptions if "95 %" in a]
    assert said and "restart" in said[0] and "200.0 MB" in said[0], killed.assumptions
    paused = predict(profile, Configuration(1, 1, 320_000_000, 2))  # 100 MB of its own + 200 MB: past 80 %, not 95 %
    said = [a for a in paused.assumptions if "80 %" in a]
    assert said and "pause" in said[0] and not [a for a in paused.assumptions if "95 %" in a], paused.assumptions


def test_transfers_between_workers_cost_time():
    parts = [task(f"p{i}", 0.0, 0.1, worker=f"w{i % 2}", nbytes=100_000_000) for i in range(2)]
    joined = task("join", 0.2, 0.3, ("p0", "p1"), op="join", worker="w0")
    profile = profile_of(parts + [joined], workers=2, functions={"work": NUMPY_KERNEL, "join": NUMPY_KERNEL})
    one = predict(profile, Configuration(1, 2, None, 2))
    two = predict(profile, Configuration(2, 1, None, 2))
    assert one.transferred_bytes == 0 and two.transferred_bytes == 100_000_000
    assert two.completion_s > one.completion_s + 0.5  # 100 MB at Dask's default 100 MB/s


def _fetch_log_profile(bag_seconds: float) -> DataflowProfile:
    """Two workers: an array operation's 16 MB result and a bag's 2 MB one both fetched for a join, three
    small fetches beside them; the bag's fetch takes ``bag_seconds`` beyond 4 ms of latency."""
    parts = [task("arr-0", 0.0, 0.1, op="arr", worker="w1", nbytes=16_000_000),
             task("bag-0", 0.0, 0.1, op="bag", worker="w2", nbytes=2_000_000),
             task("tiny-0", 0.0, 0.1, op="tiny", worker="w2", nbytes=100)]
    joined = task("join-0", 0.2, 0.3, ("arr-0", "bag-0", "tiny-0"), op="join", worker="w1")
    profile = profile_of(parts + [joined], workers=2, functions={op: NUMPY_KERNEL for op in ("arr", "bag", "tiny", "join")})
    profile.transfers = [Transfer("w1", "w2", 0.1, 0.102, ("tiny-0",), 100), Transfer("w2", "w1", 0.1, 0.104, ("tiny-0",), 100),
                         Transfer("w1", "w2", 0.1, 0.106, ("tiny-0",), 100),
                         Transfer("w2", "w1", 0.1, 0.124, ("arr-0",), 16_000_000),
                         Transfer("w1", "w2", 0.1, 0.104 + bag_seconds, ("bag-0",), 2_000_000)]
    return profile


def test_fetches_cost_the_logged_latency_and_each_operations_own_rate():
    profile = _fetch_log_profile(0.5)
    model = transfer_model(profile, [t for t in profile.tasks if t.ran])
    assert model.source == "transfer log" and model.latency_s == pytest.approx(0.004)
    assert model.by_operation == pytest.approx({"arr": 800e6, "bag": 4e6})  # bytes over time beyond the latency
    assert model.bandwidth == pytest.approx(18e6 / 0.52)
    assert model.seconds([("bag", 1_000_000), ("arr", 8_000_000)]) == pytest.approx(0.004 + 0.25 + 0.01)
    assert model.seconds([("other", 1_000_000)]) == pytest.approx(0.004 + 1e6 / model.bandwidth)
    assert model.seconds([]) == 0.0
    assert "bag 4.0 MB/s" in model.describe() and "transfer log" in model.describe()


def test_a_profile_without_a_fetch_log_falls_back_to_gather_time_or_the_default():
    profile = _fetch_log_profile(0.5)
    profile.transfers = []
    ran = [t for t in profile.tasks if t.ran]
    assert transfer_model(profile, ran) == transfer_model(profile, ran)
    assert (transfer_model(profile, ran).source, transfer_model(profile, ran).bandwidth) == ("default", DEFAULT_BANDWIDTH)
    profile.worker_metrics["gather-dep/w1/seconds"] = 0.9
    fallback = transfer_model(profile, ran)
    assert fallback.source == "gather time" and fallback.bandwidth == pytest.approx(2_000_100 / 0.9)  # what the join fetched
    assert fallback.latency_s == DEFAULT_LATENCY_S


def test_the_replay_charges_fetches_at_the_rates_the_recording_logged():
    """The join's inputs sit on two workers: with the bag's results slow to move (4 MB/s logged) the replay
    runs it where the bag's result is and fetches the arrays (800 MB/s); with them fast, where the arrays are."""
    two = Configuration(2, 1, None, 2)
    slow, fast = predict(_fetch_log_profile(0.5), two), predict(_fetch_log_profile(0.001), two)
    assert slow.transferred_bytes >= 16_000_000 and fast.transferred_bytes <= 2_000_100
    assert any("per operation: arr 800.0 MB/s, bag 4.0 MB/s" in a for a in slow.assumptions), slow.assumptions
    alone = predict(_fetch_log_profile(0.5), Configuration(1, 2, None, 2))
    assert alone.transferred_bytes == 0


def test_fetched_bytes_go_to_the_operation_whose_results_moved():
    profile = profile_of([task("a0", 0, 1, op="load"), task("a1", 0, 1, op="load", worker="w2"),
                          task("b0", 1, 2, deps=("a0", "a1"), op="sum")])
    sizes = {"a0": 300, "a1": 100}
    profile.tasks = [replace(t, nbytes=sizes.get(t.key, 8)) for t in profile.tasks]
    profile.transfers = [Transfer("w1", "w2", 1.0, 1.5, ("a1",), 120), Transfer("w3", "w1", 1.0, 1.2, ("a0", "a1"), 400),
                         Transfer("w3", "w1", 1.0, 1.1, ("gone",), 50)]
    moved = {op.name: op.bytes_moved for op in operations(profile)}
    assert moved == {"load": 520, "sum": 0}  # the fetch of unknown keys belongs to no operation
    totals = transfer_totals(profile)
    assert (totals.fetches, totals.nbytes, round(totals.seconds, 6), totals.median_rate) == (3, 570, 0.8, None)
    profile.transfers.append(Transfer("w1", "w2", 2.0, 2.5, ("a1",), 1_000_000))
    assert transfer_totals(profile).median_rate == 2_000_000


def test_bad_configurations_and_empty_profiles_are_refused():
    with pytest.raises(WhatIfError):
        Configuration(0, 1, None, 2)
    empty = replace(profile_of(independent(1, 1.0)), tasks=[])
    with pytest.raises(WhatIfError, match="no task"):
        predict(empty, Configuration(1, 1, None, 2))


# ---------------------------------------------------------------------------------------------- the artefact

names = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
seconds = st.floats(0, 1e4, allow_nan=False)


@st.composite
def profiles(draw) -> DataflowProfile:
    n = draw(st.integers(0, 6))
    tasks = []
    for i in range(n):
        start = draw(seconds)
        tasks.append(TaskRun(key=f"k{i}", operation=draw(names), deps=tuple(f"k{j}" for j in range(i) if draw(st.booleans())),
                             priority=tuple(draw(st.lists(st.integers(-5, 5).map(float), max_size=3))),
                             worker=draw(names), thread=draw(st.integers(0, 2**40)), start=start,
                             stop=start + draw(seconds), compute_s=draw(seconds), transfer_s=draw(seconds),
                             spill_s=draw(seconds), nbytes=draw(st.integers(0, 2**40)),
                             status=draw(st.sampled_from(["memory", "erred", "unfinished"])),
                             submitted=draw(st.none() | seconds)))
    started = draw(seconds)
    return DataflowProfile(
        command=draw(st.lists(names, max_size=3)), cwd=draw(names),
        cluster=ClusterConfig(draw(st.integers(1, 64)), draw(st.integers(1, 64)), draw(st.none() | st.integers(1, 2**40)),
                              draw(st.integers(1, 256)), draw(names), draw(st.sampled_from(["mantispy", "external"]))),
        started=started, ended=started + draw(seconds), returncode=draw(st.none() | st.integers(-9, 255)),
        complete=draw(st.booleans()), tasks=tasks,
        functions={draw(names): [FunctionRef(draw(names), draw(names), draw(names), draw(st.integers(0, 10**6)))]},
        machine=[MachinePoint(draw(seconds), draw(seconds), draw(st.none() | seconds)) for _ in range(draw(st.integers(0, 2)))], notes=draw(st.lists(names, max_size=2)),
        worker_metrics={draw(names): draw(seconds)}, transfers=draw(st.lists(transfers(), max_size=3)))


@st.composite
def transfers(draw) -> Transfer:
    start = draw(seconds)
    return Transfer(worker=draw(names), source=draw(names), start=start, stop=start + draw(seconds),
                    keys=tuple(draw(st.lists(names, max_size=3))), nbytes=draw(st.integers(0, 2**40)))


@given(profiles())
@settings(max_examples=60, deadline=None)
def test_a_profile_reads_back_as_written(profile):
    assert profile_from_json(profile.to_json()) == profile


@given(st.data())
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_a_mutated_profile_is_read_or_refused_in_one_line(tmp_path, data):
    document = json.loads(profile_of(independent(2, 1.0), functions={"work": PYTHON_CODE}).to_json())
    document["machine"] = [{"t": 0.0, "busy_s": 1.0}]
    document["transfers"] = [{"worker": "w2", "source": "w1", "start": 1.0, "stop": 1.5, "keys": ["k0"], "nbytes": 10}]
    read = read_mutated(document, data, tmp_path, read_profile, ProfileError)
    assert read is None or isinstance(read, DataflowProfile)


def test_profile_errors_name_the_field(tmp_path):
    document = json.loads(profile_of(independent(2, 1.0)).to_json())
    document["tasks"][1]["compute_s"] = -1
    path = tmp_path / "p.json"
    path.write_text(json.dumps(document))
    with pytest.raises(ProfileError, match=r"tasks\[1\]\.compute_s"):
        read_profile(path)


# ---------------------------------------------------------------------------------------------- the CLI

DELAYED_JOB = '''
import sys
from dask import compute, delayed
from distributed import Client


def parse(n):
    return sum(i * i for i in range(n))


def total(parts):
    return sum(parts)


if __name__ == "__main__":
    with Client():
        parts = [delayed(parse)(200_000 + i) for i in range(6)]
        (result,) = compute(delayed(total)(parts))
        print(result)
    if len(sys.argv) > 1 and sys.argv[1] == "fail":
        raise SystemExit(3)
'''

NO_CLIENT_JOB = '''
import dask.array as da

x = da.ones((400, 400), chunks=(100, 100))
print(int((x + x.T).sum().compute()))
'''


def run_mantispy(*args: str, cwd: Path, timeout: float = 240) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop("DASK_SCHEDULER_ADDRESS", None)
    return subprocess.run([*MANTISPY, *args], capture_output=True, text=True, cwd=cwd, timeout=timeout, env=env)


def one_line_error(proc: subprocess.CompletedProcess, code: int) -> str:
    assert proc.returncode == code, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("mantispy: error:")]
    assert len(errors) == 1, proc.stderr
    return errors[0]


def test_record_show_and_whatif_a_delayed_job(tmp_path):
    (tmp_path / "job.py").write_text(DELAYED_JOB)
    proc = run_mantispy("dataflow", "record", "--workers", "2", "--threads", "1", "-o", "job.profile.json",
                        "--store", "store.db", "--", "job.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(sum(sum(i * i for i in range(200_000 + k)) for k in range(6)))
    profile = read_profile(tmp_path / "job.profile.json")
    assert profile.complete and profile.cluster.workers == 2 and profile.cluster.started_by == "mantispy"
    ops = {op.name: op for op in operations(profile)}
    assert ops["parse"].tasks == 6 and ops["total"].upstream == ("parse",)
    assert {t.worker for t in profile.tasks} == {w.address for w in profile.workers}  # both workers ran tasks
    own = [point.own_s for point in profile.machine]
    assert None not in own and own == sorted(own)  # the recording's process tree: its workers' tasks included
    assert own[-1] - own[0] >= 0.5 * sum(t.compute_s for t in profile.tasks if t.ran)
    parse = [f for f in ops["parse"].own_functions if f.qualname == "parse"]
    assert parse and parse[0].line == DELAYED_JOB.splitlines().index("def parse(n):") + 1
    # the workers' thread-CPU accounting reached the profile (how much of a task's time was CPU depends on
    # the machine's load: 0.43 in a fresh clone's suite on 2 busy cores, so no threshold here)
    assert ops["parse"].cpu_share is not None and 0 < ops["parse"].cpu_share <= 1
    assert profile.machine and profile.series
    # total ran on one worker and fetched the parts the other computed, each fetch with its bytes
    parse_keys = {t.key: t for t in profile.tasks if t.operation == "parse"}
    assert profile.transfers and all(x.source != x.worker and x.nbytes > 0 for x in profile.transfers)
    assert all(k in parse_keys and parse_keys[k].worker == x.source for x in profile.transfers for k in x.keys)
    assert ops["parse"].bytes_moved == sum(x.nbytes for x in profile.transfers) and ops["total"].bytes_moved == 0

    shown = run_mantispy("dataflow", "show", "last", "--store", "store.db", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "parse" in shown.stdout and "critical path" in shown.stdout and "job.py" in shown.stdout
    assert f"transfers: {len(profile.transfers)} fetch(es) between workers" in shown.stdout
    # the classifier's agreement with the measured class, which only the benchmark computed
    assert re.search(r"the code's class agrees with the measured one on \d+ of \d+ operation", shown.stdout), shown.stdout
    listed = run_mantispy("dataflow", "list", "--store", "store.db", cwd=tmp_path)
    assert "complete" in listed.stdout and "job.py" in listed.stdout
    exported = run_mantispy("dataflow", "export", "last", "again.json", "--store", "store.db", cwd=tmp_path)
    assert exported.returncode == 0, exported.stderr
    assert read_profile(tmp_path / "again.json") == profile  # the stored profile whole, as record -o wrote it

    whatif = run_mantispy("dataflow", "whatif", "job.profile.json", "--workers", "1", "--threads", "1", "--json",
                          cwd=tmp_path)
    assert whatif.returncode == 0, whatif.stderr
    prediction = json.loads(whatif.stdout)
    assert prediction["completion_s"] > 0 and prediction["bottleneck_operation"] == "parse"
    text = run_mantispy("dataflow", "whatif", "1", "--store", "store.db", "--workers", "4", "--threads", "1",
                        cwd=tmp_path)
    assert "predicted:" in text.stdout and "bottleneck: parse" in text.stdout

    page = run_mantispy("dataflow", "show", "job.profile.json", "--html", "job.html", cwd=tmp_path)
    assert page.returncode == 0, page.stderr
    from tests.helpers import find_browser, run_chromium

    browser = find_browser()
    if browser is None:
        pytest.skip("no chromium on PATH: install Debian's chromium (.ci/run does) to run the browser check")
    dom = run_chromium(browser, (tmp_path / "job.html").as_uri() + "?operation=parse", tmp_path, "--dump-dom").stdout
    assert 'data-rendered="ok"' in re.search(r"<html\b[^>]*>", dom).group(0)
    assert set(re.findall(r'<g class="op[^"]*" data-operation="([^"]+)"', dom)) == set(ops)
    assert 'class="op selected" data-operation="parse"' in dom
    bars = re.findall(r'<rect class="bar[^"]*" data-task-op="([^"]+)"', dom)
    assert len(bars) == len([t for t in profile.tasks if t.ran]) and bars.count("parse") == 6
    assert "def parse(n):" in dom and "job.py:" in dom  # the operation's source, with its place
    assert "measured class " in dom and "code's class " in dom  # both classes in each operation's title
    assert "fetched by other workers" in dom and "fetches between workers" in dom  # parse's moved bytes, the totals


def test_a_job_without_a_client_is_recorded_too(tmp_path):
    import socket

    (tmp_path / "job.py").write_text(NO_CLIENT_JOB)
    with socket.socket() as taken:  # another cluster's dashboard port: Dask warned in four lines when it was held
        try:
            taken.bind(("127.0.0.1", 8787))
            taken.listen()
        except OSError:
            pass  # held already (the point of the check)
        proc = run_mantispy("dataflow", "record", "-o", "p.json", "--store", "s.db", "--", "job.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "8787" not in proc.stderr and "already in use" not in proc.stderr, proc.stderr
    assert proc.stdout.strip() == str(2 * 400 * 400)
    profile = read_profile(tmp_path / "p.json")
    assert len([t for t in profile.tasks if t.ran]) >= 16


OWN_CLUSTER_JOB = (DELAYED_JOB.replace("from distributed import Client", "from distributed import Client, LocalCluster")
                   .replace("with Client():", "with LocalCluster(n_workers=3, threads_per_worker=1, dashboard_address=None) "
                                              "as cluster, Client(cluster):")
                   .replace("200_000", "300_000"))
"""The delayed job on a cluster it starts itself (3 workers, where the recorder's would have 2)."""


@pytest.mark.parametrize("how", ["LocalCluster", "Client keywords"])
def test_a_job_that_starts_its_own_cluster_is_recorded_on_it(tmp_path, how):
    """A job making its own LocalCluster (3 workers, not the recorder's 2), or asking its Client for one
    (``Client(n_workers=3, ...)``, which Dask refused while the recorder's address was set), is recorded on
    that cluster: its tasks, its workers, the workers' CPU accounting of the last tasks (sent as each worker
    closes), and the cluster named as the job's own in the profile and in show."""
    job = OWN_CLUSTER_JOB
    if how == "Client keywords":
        job = DELAYED_JOB.replace("with Client():", "with Client(n_workers=3, threads_per_worker=1, "
                                                    "dashboard_address=None):").replace("200_000", "300_000")
    (tmp_path / "job.py").write_text(job)
    proc = run_mantispy("dataflow", "record", "-o", "p.json", "--store", "s.db", "--", "job.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(sum(sum(i * i for i in range(300_000 + k)) for k in range(6)))
    profile = read_profile(tmp_path / "p.json")
    assert profile.complete and profile.cluster.started_by == "job" and profile.cluster.workers == 3
    assert profile.cluster.address.startswith("tcp://")
    ops = {op.name: op for op in operations(profile)}
    assert ops["parse"].tasks == 6 and ops["total"].upstream == ("parse",)
    assert ops["parse"].cpu_share is not None and 0 < ops["parse"].cpu_share <= 1
    if len({t.worker for t in profile.tasks if t.operation == "parse"}) > 1:  # the job's workers reported fetches
        assert profile.transfers and ops["parse"].bytes_moved > 0
    shown = run_mantispy("dataflow", "show", "p.json", cwd=tmp_path)
    assert "the job's own cluster at tcp://" in shown.stdout
    whatif = run_mantispy("dataflow", "whatif", "p.json", "--workers", "1", "--threads", "1", "--json", cwd=tmp_path)
    assert whatif.returncode == 0 and json.loads(whatif.stdout)["bottleneck_operation"] == "parse"


def test_a_job_and_what_it_leaves_running_end_with_the_recording(tmp_path):
    """The job runs in a process group of its own: a process it starts and leaves behind ends when the job
    does, as a cluster's workers would."""
    import psutil

    (tmp_path / "job.py").write_text(textwrap.dedent('''
        import subprocess
        import sys
        from distributed import Client
        left = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
        open("left.pid", "w").write(str(left.pid))
        with Client() as client:
            print(client.submit(sum, [1, 2]).result())
    '''))
    proc = run_mantispy("dataflow", "record", "--store", "s.db", "--", "job.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    left = int((tmp_path / "left.pid").read_text())
    deadline = time.time() + 10
    while psutil.pid_exists(left) and psutil.Process(left).status() != psutil.STATUS_ZOMBIE and time.time() < deadline:
        time.sleep(0.1)
    assert not psutil.pid_exists(left) or psutil.Process(left).status() == psutil.STATUS_ZOMBIE


def test_bad_input_is_one_line(tmp_path):
    (tmp_path / "plain.py").write_text("print('no dask here')\n")
    no_dask = run_mantispy("dataflow", "record", "--store", "s.db", "--", "plain.py", cwd=tmp_path)
    assert "ran no Dask task" in one_line_error(no_dask, 2)
    listed = run_mantispy("dataflow", "list", "--store", "s.db", cwd=tmp_path).stdout
    assert "plain.py" in listed and " incomplete " in listed  # kept, and marked: a profile of no task is not whole

    missing = run_mantispy("dataflow", "record", "--", "nothere.py", cwd=tmp_path)
    assert "nothere.py" in one_line_error(missing, 2)
    unreachable = run_mantispy("dataflow", "record", "--scheduler", "tcp://127.0.0.1:9", "--", "plain.py", cwd=tmp_path)
    assert "no Dask scheduler answered" in one_line_error(unreachable, 2)
    (tmp_path / "junk.json").write_text("{not json")
    junk = run_mantispy("dataflow", "show", "junk.json", cwd=tmp_path)
    assert "junk.json" in one_line_error(junk, 2)
    gone = run_mantispy("dataflow", "whatif", "7", "--store", "s.db", "--workers", "1", "--threads", "1", cwd=tmp_path)
    assert "no dataflow profile 7" in one_line_error(gone, 2)
    (tmp_path / "taken.json").write_text("mine")
    (tmp_path / "job.py").write_text(DELAYED_JOB)
    taken = run_mantispy("dataflow", "record", "-o", "taken.json", "--", "job.py", cwd=tmp_path)
    assert "taken.json" in one_line_error(taken, 2) and (tmp_path / "taken.json").read_text() == "mine"
    # a cluster's shape is the running scheduler's: options that would shape a LocalCluster are refused, not dropped
    shaped = run_mantispy("dataflow", "record", "--scheduler", "tcp://127.0.0.1:9", "--workers", "3", "--", "plain.py",
                          cwd=tmp_path)
    assert "--workers" in one_line_error(shaped, 2) and "--scheduler" in one_line_error(shaped, 2)
    profile_of(independent(2, 0.1)).write(tmp_path / "p.json")
    for limit in ("", "lots"):  # an empty limit fell back to the recorded one, silently
        bad_limit = run_mantispy("dataflow", "whatif", "p.json", "--workers", "1", "--threads", "1", "--memory-limit",
                                 limit, cwd=tmp_path)
        assert "--memory-limit" in one_line_error(bad_limit, 2)
    export_taken = run_mantispy("dataflow", "export", "p.json", "taken.json", cwd=tmp_path)
    assert "taken.json" in one_line_error(export_taken, 2) and (tmp_path / "taken.json").read_text() == "mine"


WORKER_LOGS_AN_ERROR = """
import logging
from distributed import Client
from mantispy.dataflow.record import ClusterRequest, _start_cluster


def heartbeat_fails():
    logging.getLogger("distributed.worker").error("Failed to communicate with scheduler during heartbeat.")


if __name__ == "__main__":
    cluster = _start_cluster(ClusterRequest(workers=1))
    with Client(cluster.scheduler_address) as client:
        client.run(heartbeat_fails)
    cluster.close()
"""


def test_the_cluster_mantispy_starts_keeps_its_workers_errors_off_stderr(tmp_path):
    # CI saw a worker's heartbeat meet the scheduler closing first: Dask logged the error with a
    # traceback on mantispy's stderr, under the one line mantispy itself had to say.
    (tmp_path / "cluster.py").write_text(WORKER_LOGS_AN_ERROR)
    proc = subprocess.run([sys.executable, "cluster.py"], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "heartbeat" not in proc.stderr


def test_a_profile_names_the_tasks_that_failed():
    """A job whose task raised: the profile said '5 tasks ran of 5' and nothing of which one failed."""
    from mantispy.dataflow.record import ClusterRequest, build_profile

    def run(status: str) -> dict:
        return {"worker": "tcp://w:1", "thread": 1, "nbytes": 8, "status": status,
                "startstops": [{"action": "compute", "start": 1.0, "stop": 1.5}]}

    raw = {"graph": {"parse-0": {"operation": "parse"}, "parse-1": {"operation": "parse"},
                     "boom-7": {"operation": "boom", "deps": ["parse-0"]}},
           "runs": {"parse-0": run("memory"), "parse-1": run("memory"), "boom-7": run("erred")}}
    profile = build_profile(["python", "job.py"], "/tmp", raw, 0.0, 2.0, 1, ClusterRequest(1, 1, None), "tcp://s:1",
                            "mantispy")
    assert not profile.complete
    assert any("1 of 3 tasks failed" in note and "boom-7" in note and "boom" in note for note in profile.notes), \
        profile.notes


def test_functions_shipped_by_value_and_partition_methods_are_located_in_their_files():
    """A function of a library module that reached the scheduler pickled by value had only '<dynamic-code>'
    for its file, so its page showed no source; an operation that calls a method of its partitions (dask's
    methodcaller: cumsum, astype...) showed only dask's wrapper."""
    import json as json_module

    from mantispy.dataflow.record import ClusterRequest, build_profile

    line = json_module.decoder.JSONDecoder.decode.__code__.co_firstlineno
    raw = {"graph": {"cumsum-0": {"operation": "cumsum"}},
           "functions": {"cumsum": [{"module": "json.decoder", "qualname": "JSONDecoder.decode", "file": "<dynamic-code>",
                                     "line": line}]},
           "methods": {"cumsum": [{"method": "encode", "receivers": ["builtins.int", "json.encoder.JSONEncoder"]},
                                  {"method": "no_such_method", "receivers": ["json.decoder.JSONDecoder"]}]}}
    profile = build_profile(["python", "job.py"], "/tmp", raw, 0.0, 1.0, 0, ClusterRequest(1, 1, None), "tcp://s:1",
                            "mantispy")
    refs = profile.functions["cumsum"]
    assert refs[0].file == json_module.decoder.__file__ and refs[0].line == line
    assert [(r.module, r.qualname, r.file) for r in refs[1:]] == [
        ("json.encoder", "JSONEncoder.encode", json_module.encoder.__file__)]  # int has no encode; the missing one left out


DATAFRAME_BAG_JOB = '''
import dask.bag as db
import dask.dataframe as dd
import numpy as np
import pandas as pd
from distributed import Client


def words(line):
    return line.split()


if __name__ == "__main__":
    with Client():
        frame = dd.from_pandas(pd.DataFrame({"k": np.arange(400) % 7, "x": np.arange(400.0)}), npartitions=4)
        print(frame.groupby("k").x.sum().compute().sum(), frame.x.cumsum().max().compute())
        print(sorted(db.from_sequence(["a b c", "b c d"] * 20, npartitions=4).map(words).flatten().frequencies()))
'''


def test_a_dataframe_and_bag_job_is_recorded_with_the_code_of_its_operations(tmp_path):
    (tmp_path / "job.py").write_text(DATAFRAME_BAG_JOB)
    proc = run_mantispy("dataflow", "record", "-o", "p.json", "--store", "s.db", "--", "job.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    profile = read_profile(tmp_path / "p.json")
    ops = {op.name: op for op in operations(profile)}
    assert profile.complete and {"frompandas", "cumsum", "flatten"} <= set(ops), sorted(ops)
    cumsum = [(f.qualname, f.file) for f in profile.functions["cumsum"]]
    assert any(q.endswith(".cumsum") and Path(file).is_file() and "pandas" in file for q, file in cumsum), cumsum
    assert any(f.qualname == "words" for f in profile.functions["flatten"])  # the job's own function, in the bag's map
    shown = [f for refs in profile.functions.values() for f in refs]
    assert all(Path(f.file).is_file() for f in shown if f.line and f.module != "builtins"), \
        [(f.module, f.qualname, f.file) for f in shown if f.line and not Path(f.file).is_file()]


INTERRUPTED_JOB = '''
import time
from dask import compute, delayed
from distributed import Client


def nap(i):
    time.sleep(0.05 if i < 4 else 60)
    return i


if __name__ == "__main__":
    with Client():
        print(sum(compute(*[delayed(nap)(i) for i in range(4)])), flush=True)
        print(compute(*[delayed(nap)(i) for i in range(4, 6)]))
'''


def test_an_interrupted_recording_keeps_its_partial_profile(tmp_path):
    """Ctrl-C while the job ran lost everything the recorder held."""
    (tmp_path / "job.py").write_text(INTERRUPTED_JOB)
    env = {k: v for k, v in os.environ.items() if k != "DASK_SCHEDULER_ADDRESS"}
    proc = subprocess.Popen([*MANTISPY, "dataflow", "record", "--store", "s.db", "--", "job.py"], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "6"  # the first computation's result: its four tasks ran
        time.sleep(1.0)  # the second computation's tasks are running
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 130 and "Traceback" not in stderr, stderr
    assert "the partial profile 1 is kept, marked incomplete" in stderr, stderr
    listed = run_mantispy("dataflow", "list", "--store", "s.db", cwd=tmp_path).stdout
    assert " incomplete " in listed, listed
    shown = run_mantispy("dataflow", "show", "1", "--store", "s.db", "--json", cwd=tmp_path)
    document = json.loads(shown.stdout)
    assert not document["complete"] and any("interrupted" in note for note in document["notes"]), document["notes"]
    assert [op["name"] for op in document["operations"]] == ["nap"] and "4 tasks ran of 6" in stderr, stderr


def test_a_failing_job_keeps_its_partial_profile(tmp_path):
    (tmp_path / "job.py").write_text(DELAYED_JOB)
    proc = run_mantispy("dataflow", "record", "--store", "s.db", "-o", "p.json", "--", "job.py", "fail", cwd=tmp_path)
    assert "the job failed (exit status 3)" in one_line_error(proc, 1)
    profile = read_profile(tmp_path / "p.json")
    assert not profile.complete and profile.returncode == 3 and profile.tasks
    assert "incomplete" in run_mantispy("dataflow", "list", "--store", "s.db", cwd=tmp_path).stdout


def _dask_command() -> list[str]:
    dask = Path(sys.executable).parent / "dask"
    if not dask.exists():
        pytest.skip(f"no dask command beside {sys.executable}")
    return [str(dask)]


def test_record_on_a_scheduler_and_worker_started_with_dasks_own_commands(tmp_path):
    dask = _dask_command()
    scheduler_file = tmp_path / "scheduler.json"
    env = dict(os.environ)
    procs = [subprocess.Popen([*dask, "scheduler", "--port", "0", "--no-dashboard", "--scheduler-file", str(scheduler_file)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, start_new_session=True)]
    try:
        deadline = time.time() + 60
        while not scheduler_file.exists() and time.time() < deadline:
            time.sleep(0.2)
        address = json.loads(scheduler_file.read_text())["address"]
        procs.append(subprocess.Popen([*dask, "worker", address, "--nthreads", "2", "--no-dashboard", "--nworkers", "1"],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, start_new_session=True))
        from distributed import Client

        with Client(address, timeout=30) as client:
            client.wait_for_workers(1, timeout=60)
        (tmp_path / "job.py").write_text(DELAYED_JOB)
        proc = run_mantispy("dataflow", "record", "--scheduler", address, "-o", "p.json", "--store", "s.db", "--",
                            "job.py", cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        profile = read_profile(tmp_path / "p.json")
        assert profile.cluster.started_by == "external" and profile.cluster.address == address
        assert profile.cluster.workers == 1 and profile.cluster.threads_per_worker == 2
        assert {op.name for op in operations(profile)} >= {"parse", "total"}
        with Client(address, timeout=30) as client:  # the recorder left the scheduler
            assert "mantispy-dataflow" not in client.run_on_scheduler(lambda dask_scheduler: list(dask_scheduler.plugins))
            left = client.run(lambda dask_worker: list(dask_worker.plugins))
            assert not any(name.startswith("mantispy-") for names in left.values() for name in names), left
    finally:
        for proc in procs:
            os.killpg(proc.pid, signal.SIGTERM)
        for proc in procs:
            proc.wait(timeout=30)


@pytest.mark.parametrize("cluster", ["Client()", "LocalCluster(n_workers=2, dashboard_address=None) as own, Client(own)"])
def test_the_clusters_workers_do_not_outlive_a_killed_mantispy(tmp_path, cluster):
    """The recorder's cluster, or one the job started itself (in the job's process group)."""
    import psutil

    (tmp_path / "job.py").write_text("import time\nfrom distributed import Client, LocalCluster\n"
                                     f"if __name__ == '__main__':\n    with {cluster}:\n"
                                     "        open('started', 'w').close()\n        time.sleep(60)\n")
    env = dict(os.environ)
    env.pop("DASK_SCHEDULER_ADDRESS", None)
    proc = subprocess.Popen([*MANTISPY, "dataflow", "record", "--store", "s.db", "--", "job.py"], cwd=tmp_path, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 120
        while not (tmp_path / "started").exists() and time.time() < deadline:
            time.sleep(0.2)
        assert (tmp_path / "started").exists()
        children = psutil.Process(proc.pid).children(recursive=True)
        assert len(children) >= 3  # the job, the workers (their nannies), the watchdog
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    gone, alive = psutil.wait_procs(children, timeout=20)
    assert not alive, [p.cmdline() for p in alive]


def test_the_boot_folder_leaves_the_job_its_path(tmp_path):
    (tmp_path / "job.py").write_text(textwrap.dedent('''
        import sys
        from distributed import Client
        with Client() as client:
            print(client.submit(sum, [1, 2]).result())
        print(any("mantis-dataflow-" in p for p in sys.path))
    '''))
    proc = run_mantispy("dataflow", "record", "--store", "s.db", "--", "job.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["3", "False"]


def test_the_replay_is_scaled_to_reproduce_its_own_recording():
    # 4 one-second tasks with 0.2 s the replay cannot explain between each (the recorded dispatch gap is
    # capped at 50 ms, so each task costs 1.05 s, the gap counted once): the replay of 1x1 is 4.2 s where the
    # recording took 4.6 s (it was 4.4 s while the gap was counted twice)
    tasks = [task(f"t{i}", 1.2 * i, 1.2 * i + 1.0) for i in range(4)]
    profile = profile_of(tasks, functions={"work": NUMPY_KERNEL})
    own = predict(profile, Configuration(1, 1, None, 2))
    assert own.completion_s == pytest.approx(4.6, rel=0.01)
    assert own.calibration == pytest.approx(4.6 / 4.2, rel=0.01)
    assert any("scaled by 1.095" in note for note in own.assumptions)
    assert predict(profile, Configuration(2, 1, None, 2)).completion_s == pytest.approx(4.6 / 2, rel=0.1)


# ---------------------------------------------------------------------------------------------- classes from code

def test_the_shipped_corpus_has_200_measured_functions_of_every_class():
    from mantispy.dataflow.classify import CLASSES, load_corpus

    corpus = load_corpus()
    assert len(corpus) >= 200
    assert {e.label for e in corpus} == set(CLASSES)
    assert all(e.features and e.measured["calls"] >= 1 for e in corpus)
    assert len({e.function for e in corpus}) == len(corpus)


def test_code_features_follow_calls_into_the_modules_a_function_imports(tmp_path):
    from mantispy.dataflow.code_features import features_at, features_of_source

    source = textwrap.dedent('''
        import socket
        from shutil import copyfileobj


        def fetch(host):
            with socket.create_connection((host, 80)) as s:
                for _ in range(3):
                    s.recv(65536)
            return helper()


        def helper():
            return copyfileobj
    ''')
    features = features_of_source(source)
    assert features["call:recv"] == 1 and features["mod:socket"] >= 1 and features["loop_depth"] == 1
    assert features["call:create_connection"] == 1 and "node:Return" in features
    path = tmp_path / "net.py"
    path.write_text("import shutil\n\n\ndef copy(a, b):\n    shutil.copyfile(a, b)\n")
    followed = features_at(str(path), 4)
    assert followed["call:copyfile"] == 1
    assert followed.get("call:open", 0) > 0  # inside shutil.copyfile, found through the import


def test_code_features_hold_the_words_of_the_function_and_parameter_names():
    from mantispy.dataflow.code_features import features_of_source

    dump = features_of_source("def dump(obj, fp, *, sort_keys=False):\n    fp.write(str(obj))\n")
    dumps = features_of_source("def dumps(obj, *, sort_keys=False):\n    return str(obj)\n")
    assert dump["name:dump"] == 1 and dump["param:fp"] == 1 and dump["param:sort"] == dump["param:keys"] == 1
    assert "param:obj" in dumps and "param:fp" not in dumps and "name:dumps" in dumps
    method = features_of_source("def readHTTPResponse(self, sock_file):\n    return sock_file.read()\n")
    assert {"name:read", "name:http", "name:response", "param:sock", "param:file"} <= set(method)
    assert "param:self" not in method


def test_the_classifier_chooses_its_smoothing_on_its_training_functions_alone():
    from mantispy.dataflow.classify import ALPHAS, ResourceClassifier, load_corpus

    corpus = load_corpus()
    model = ResourceClassifier().fit([e.features for e in corpus], [e.label for e in corpus])
    assert model.alpha_ in ALPHAS
    fixed = ResourceClassifier(alpha=0.7).fit([e.features for e in corpus], [e.label for e in corpus])
    assert fixed.alpha_ == 0.7
    few = corpus[:3] + [e for e in corpus if e.label != corpus[0].label][:2]  # fewer than 5 of a class
    assert ResourceClassifier().fit([e.features for e in few], [e.label for e in few]).alpha_ == 1.0


@given(st.data())
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_a_mutated_corpus_is_read_or_refused_in_one_line(tmp_path, data):
    from mantispy.dataflow.classify import CORPUS, CorpusError, load_corpus

    document = json.loads(CORPUS.read_text())
    document["functions"] = document["functions"][:3] + [e for e in document["functions"] if e["label"] == "network"][:1]
    read = read_mutated(document, data, tmp_path, load_corpus, CorpusError)
    assert read is None or isinstance(read, list)


def test_the_classifier_predicts_held_out_functions_and_operations():
    from mantispy.dataflow.classify import CLASSES, ResourceClassifier, classify_operation, load_corpus

    corpus = load_corpus()
    train, test = corpus[::2], corpus[1::2]
    model = ResourceClassifier().fit([e.features for e in train], [e.label for e in train])
    predicted = model.predict([e.features for e in test])
    accuracy = sum(p == e.label for p, e in zip(predicted, test)) / len(test)
    assert accuracy > 0.5  # four classes: well above chance (the benchmark reports the real figure)
    import shutil

    found = classify_operation([FunctionRef("shutil", "copyfile", shutil.__file__,
                                            shutil.copyfile.__code__.co_firstlineno)])
    assert found is not None and found[0] in CLASSES and abs(sum(found[1].values()) - 1) < 1e-9
    assert classify_operation([FunctionRef("dask._task_spec", "Alias.__call__", "", 0)]) is None
