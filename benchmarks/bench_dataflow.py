"""Dataflow what-if completion time and recorder overhead on five Dask workloads (issue 23).

    python benchmarks/bench_dataflow.py [--repeats 3] [--overhead-repeats 5] [--only NAME,...] [--write]
    python benchmarks/bench_dataflow.py --overhead-only [--overhead-repeats 12]
    python benchmarks/bench_dataflow.py --classifier-only

Workloads (benchmarks/dataflow/jobs, inputs from benchmarks/dataflow/prepare.py, seeded): a groupby and
join over generated Parquet (dask.dataframe), array reductions with a rechunk and a matrix product
(dask.array), a bag word count over text files, a delayed ETL over CSV chunks, a futures fan-out.

Each job is run ``--warmup`` times first, unrecorded and not kept (a cold first run is slower), then
recorded ``--overhead-repeats`` times (``mantispy dataflow record`` at 2 workers x 1 thread) and run
without the recorder at every configuration (workers x threads that fit this 2-core machine),
``--repeats`` times; every run of every job and configuration is interleaved and shuffled (seeded). Each
recording predicts every configuration by itself (the issue's "recorded once"), compared with the median
measured completion time (the script's wall time): the table shows the first recording's prediction and
the mean error of all recordings' (one recording made beside a burst of load is as wrong at every
configuration as it was slow). The noise floor is the median absolute relative deviation of each
configuration's repeats. Recorder overhead: recorded runs against unrecorded runs at the recording's
configuration, interleaved.

With --write the tables replace this benchmark's section of benchmarks/RESULTS.md. ``--overhead-only``
measures the recorder's overhead alone (plain and recorded runs at the recording's configuration,
``--overhead-repeats`` of each per job, interleaved and shuffled), with a bootstrap 95 % interval of each
ratio of medians; it prints and keeps the last full run's measurements as they are. ``--classifier-only``
records each job once more (one after the other, at the recording's configuration; run it on a quiet
machine: under other load the workers' CPU share falls and the profile calls an operation disk-bound) and
prints the resource classifier's line: its held-out accuracy and its agreement with those recordings.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
WORK = HERE / "work" / "dataflow"
sys.path.insert(0, str(HERE.parent))

from benchmarks.results import machine_fingerprint, write_section  # noqa: E402
from mantispy.dataflow.record import ClusterRequest, python_command, record_job  # noqa: E402
from mantispy.dataflow.types import read_profile  # noqa: E402
from mantispy.dataflow.whatif import Configuration, predict  # noqa: E402

JOBS = HERE / "dataflow" / "jobs"
RECORDED = (2, 1)
CONFIGS = [(1, 1), (1, 2), (2, 1), (2, 2), (4, 1)]


def workloads(data: Path, out: Path) -> dict[str, list[str]]:
    """Name -> script and arguments."""
    return {
        "groupby_join": [str(JOBS / "groupby_join.py"), str(data), str(out)],
        "array_reduce": [str(JOBS / "array_reduce.py"), "8000"],
        "bag_wordcount": [str(JOBS / "bag_wordcount.py"), str(data)],
        "delayed_etl": [str(JOBS / "delayed_etl.py"), str(data), str(out)],
        "futures_fanout": [str(JOBS / "futures_fanout.py"), "160"],
    }


def prepare(data: Path) -> None:
    """Generate the inputs once."""
    if (data / "done").exists():
        return
    subprocess.run([sys.executable, str(HERE / "dataflow" / "prepare.py"), "--out", str(data), "--scale", "1.5"],
                   check=True)
    (data / "done").write_text("ok\n")


def run(job: list[str], config: tuple[int, int], watch: bool):
    """One run of a job on a fresh LocalCluster; the recording (watch) or just its wall time."""
    result = record_job(python_command(job[0], job[1:]), ClusterRequest(*config), quiet=True, watch=watch)
    if result.returncode != 0:
        raise SystemExit(f"{job[0]} failed at {config} (exit {result.returncode})")
    return result.profile


def main() -> None:
    """Record, run, predict, tabulate."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--overhead-repeats", type=int, default=5)
    parser.add_argument("--only", default="")
    parser.add_argument("--seed", type=int, default=23)
    parser.add_argument("--warmup", type=int, default=1,
                        help="unrecorded runs of each job before the plan, not kept (a cold first run is slower)")
    parser.add_argument("--write", action="store_true")
    parser.add_argument("--tabulate-only", action="store_true",
                        help="Predict again from the last run's recordings and measurements (benchmarks/work/dataflow).")
    parser.add_argument("--overhead-only", action="store_true",
                        help="Measure the recorder's overhead alone (see the module docstring).")
    parser.add_argument("--classifier-only", action="store_true",
                        help="Record each job once and print the resource classifier's line (see the module docstring).")
    args = parser.parse_args()
    if args.classifier_only:
        _classifier_only(args)
        return
    if args.tabulate_only:
        _tabulate_again(args)
        return
    if args.overhead_only:
        _overhead_only(args)
        return
    jobs = _chosen_jobs(args)
    plan: list[tuple[str, tuple[int, int], bool]] = []
    for name in jobs:
        plan += [(name, config, False) for config in CONFIGS for _ in range(args.repeats)]
        plan += [(name, RECORDED, False) for _ in range(max(0, args.overhead_repeats - args.repeats))]
        plan += [(name, RECORDED, True) for _ in range(args.overhead_repeats)]
    random.Random(args.seed).shuffle(plan)
    walls: dict[tuple[str, tuple[int, int], bool], list[float]] = {}
    recordings: dict[str, list] = {}
    started = time.time()
    for name in jobs:
        for _ in range(args.warmup):
            run(jobs[name], RECORDED, False)
    for old in WORK.glob("*.profile.*.json"):
        old.unlink()
    for i, (name, config, watch) in enumerate(plan, 1):
        profile = run(jobs[name], config, watch)
        walls.setdefault((name, config, watch), []).append(profile.wall_s)
        if watch:
            kept = recordings.setdefault(name, [])
            profile.write(WORK / f"{name}.profile.{len(kept)}.json")
            if not kept:
                profile.write(WORK / f"{name}.profile.json")
            kept.append(profile)
        print(f"[{i}/{len(plan)}] {name} {config[0]}x{config[1]} {'recorded' if watch else 'plain'} "
              f"{profile.wall_s:.2f} s", flush=True)
    (WORK / "measured.json").write_text(json.dumps(
        {"args": {"repeats": args.repeats, "overhead_repeats": args.overhead_repeats, "seed": args.seed,
                  "warmup": args.warmup},
         "walls": [[name, list(config), watch, values] for (name, config, watch), values in walls.items()]}))
    lines = _tables(jobs, walls, recordings, args)
    lines.append(f"Total benchmark time {time.time() - started:.0f} s.")
    print("\n".join(lines))
    if args.write:
        write_section("bench_dataflow", "Dataflow what-if and recorder overhead on five Dask workloads (issue 23)",
                      machine_fingerprint(), lines)


def _chosen_jobs(args) -> dict[str, list[str]]:
    """The workloads ``--only`` names (all by default), their inputs generated once."""
    data, out = WORK / "data", WORK / "out"
    out.mkdir(parents=True, exist_ok=True)
    prepare(data)
    jobs = workloads(data, out)
    return {k: v for k, v in jobs.items() if k in args.only.split(",")} if args.only else jobs


def _overhead_only(args) -> None:
    """Plain against recorded runs at the recording's configuration; ratios of medians with bootstrap intervals."""
    jobs = _chosen_jobs(args)
    plan = [(name, watch) for name in jobs for watch in (False, True) for _ in range(args.overhead_repeats)]
    random.Random(args.seed).shuffle(plan)
    walls: dict[tuple[str, bool], list[float]] = {}
    started = time.time()
    for i, (name, watch) in enumerate(plan, 1):
        wall = run(jobs[name], RECORDED, watch).wall_s
        walls.setdefault((name, watch), []).append(wall)
        print(f"[{i}/{len(plan)}] {name} {'recorded' if watch else 'plain'} {wall:.2f} s", flush=True)
    rng = random.Random(args.seed)
    lines = [f"Recorder overhead alone: `python benchmarks/bench_dataflow.py --overhead-only --overhead-repeats "
             f"{args.overhead_repeats} --seed {args.seed}` ({(time.time() - started) / 60:.0f} min), at "
             f"{RECORDED[0]}x{RECORDED[1]}.", "",
             "| workload | plain (median) | recorded (median) | overhead | bootstrap 95 % interval | noise floor |",
             "|---|---|---|---|---|---|"]
    overheads = []
    for name in jobs:
        plain, recorded = walls[(name, False)], walls[(name, True)]
        ratio = statistics.median(recorded) / statistics.median(plain) - 1
        overheads.append(ratio)
        boots = sorted(statistics.median(rng.choices(recorded, k=len(recorded)))
                       / statistics.median(rng.choices(plain, k=len(plain))) - 1 for _ in range(4000))
        lines.append(f"| {name} | {statistics.median(plain):.2f} s | {statistics.median(recorded):.2f} s | "
                     f"{ratio * 100:+.1f} % | {boots[100] * 100:+.1f} % to {boots[3899] * 100:+.1f} % | "
                     f"{_spread(plain) * 100:.1f} % |")
    lines += ["", f"Median recorder overhead: {statistics.median(overheads) * 100:+.1f} % (goal <= 2 %)."]
    print("\n".join(lines))


def _classifier_only(args) -> None:
    """One fresh recording per job, kept in work/dataflow/classifier/, and the classifier's line on them."""
    jobs = _chosen_jobs(args)
    folder = WORK / "classifier"
    folder.mkdir(parents=True, exist_ok=True)
    recordings = {}
    for name in jobs:
        recordings[name] = run(jobs[name], RECORDED, True)
        recordings[name].write(folder / f"{name}.profile.json")
        print(f"{name}: recorded at {RECORDED[0]}x{RECORDED[1]} in {recordings[name].wall_s:.2f} s", flush=True)
    print("\n".join(_classifier_lines(recordings)))


def _tabulate_again(args) -> None:
    saved = json.loads((WORK / "measured.json").read_text())
    saved["args"].setdefault("warmup", 0)
    walls = {(name, tuple(config), watch): values for name, config, watch, values in saved["walls"]}
    names = list(dict.fromkeys(name for name, _, _ in walls))
    recordings = {name: [read_profile(path) for path in sorted(WORK.glob(f"{name}.profile.*.json"),
                                                               key=lambda p: int(p.name.split(".")[-2]))]
                  or [read_profile(WORK / f"{name}.profile.json")] for name in names}
    for key, value in saved["args"].items():
        setattr(args, key, value)
    lines = _tables({name: None for name in names}, walls, recordings, args)
    print("\n".join(lines))
    if args.write:
        write_section("bench_dataflow", "Dataflow what-if and recorder overhead on five Dask workloads (issue 23)",
                      machine_fingerprint(), lines)


def _classifier_lines(recordings) -> list[str]:
    """The resource classifier: held-out accuracy on its corpus, agreement with the measured classes."""
    from collections import Counter

    from mantispy.dataflow.classify import classify_operation, held_out_accuracy, load_corpus
    from mantispy.dataflow.operations import operations

    corpus = load_corpus()
    accuracy = held_out_accuracy(corpus)
    counts = Counter(e.label for e in corpus)
    agree = total = 0
    rows = []
    for name, profile in recordings.items():
        for op in operations(profile):
            found = classify_operation(op.functions)
            if found is None:
                continue
            total += 1
            agree += found[0] == op.measured_class
            if found[0] != op.measured_class:
                rows.append(f"{name}:{op.name} (measured {op.measured_class}, code {found[0]})")
    return [f"Resource classifier (`mantispy/dataflow/classify.py`): corpus of {len(corpus)} functions measured on this "
            f"machine ({', '.join(f'{k} {v}' for k, v in sorted(counts.items()))}); accuracy on held-out functions "
            f"{accuracy['stratified'] * 100:.1f} % (stratified 5-fold), {accuracy['by_package'] * 100:.1f} % with whole "
            f"packages held out (goal >= 90 %). Agreement with the class measured in the five profiles: {agree} of {total} "
            f"operations whose code could be read ({agree / max(total, 1) * 100:.0f} %); differing: "
            + ("; ".join(rows) if rows else "none") + "."]


def _spread(values: list[float]) -> float:
    mid = statistics.median(values)
    return statistics.median(abs(v - mid) / mid for v in values) if len(values) > 1 else 0.0


def _tables(jobs, walls, recordings, args) -> list[str]:
    """The benchmark's tables; ``recordings`` holds every recorded run of a job, the first one first."""
    lines = [f"Command: `python benchmarks/bench_dataflow.py --repeats {args.repeats} --overhead-repeats "
             f"{args.overhead_repeats} --seed {args.seed}`. Each job run {args.warmup} time(s) first, unrecorded and not "
             f"kept (a cold first run is slower); recorded {args.overhead_repeats} times at {RECORDED[0]}x{RECORDED[1]} "
             "(workers x threads, LocalCluster of processes), each recording predicting every configuration by itself; "
             f"every configuration measured without the recorder, {args.repeats} repeats, all runs of all jobs interleaved "
             f"and shuffled (seed {args.seed}). Completion time = the script's wall time (interpreter start to exit; the "
             "cluster is up before). *predicted* and *error*: from the job's first recording; *error, each recording*: "
             "the mean (min-max) of the errors of the predictions each recording makes alone.", "",
             "| workload | tasks | config | measured (median) | noise floor | predicted | error | error, each recording | bottleneck |",
             "|---|---|---|---|---|---|---|---|---|"]
    errors: list[float] = []
    every: list[float] = []
    noise: list[float] = []
    per_job: dict[str, list[float]] = {}
    per_job_every: dict[str, list[float]] = {}
    for name in jobs:
        first = recordings[name][0]
        tasks = sum(1 for t in first.tasks if t.ran)
        for config in CONFIGS:
            measured = walls[(name, config, False)]
            actual = statistics.median(measured)
            predictions = [predict(profile, Configuration(config[0], config[1], profile.cluster.memory_limit,
                                                          profile.cluster.cores)) for profile in recordings[name]]
            each = [abs(p.completion_s - actual) / actual for p in predictions]
            error = each[0]
            errors.append(error)
            every += each
            per_job.setdefault(name, []).append(error)
            per_job_every.setdefault(name, []).extend(each)
            noise.append(_spread(measured))
            prediction = predictions[0]
            lines.append(f"| {name} | {tasks} | {config[0]}x{config[1]} | {actual:.2f} s | {_spread(measured) * 100:.1f} % | "
                         f"{prediction.completion_s:.2f} s | {error * 100:.1f} % | {statistics.fmean(each) * 100:.1f} % "
                         f"({min(each) * 100:.1f}-{max(each) * 100:.1f} %, {len(each)}) | "
                         f"{prediction.bottleneck_operation[:32]}: {prediction.bottleneck_resource} |")
    lines += ["", "| workload | mean error over configurations: first recording | each recording | recorder overhead "
              "(median recorded / median plain - 1) |", "|---|---|---|---|"]
    overheads = []
    for name in jobs:
        plain = statistics.median(walls[(name, RECORDED, False)])
        recorded = statistics.median(walls[(name, RECORDED, True)])
        overheads.append(recorded / plain - 1)
        lines.append(f"| {name} | {statistics.fmean(per_job[name]) * 100:.1f} % | "
                     f"{statistics.fmean(per_job_every[name]) * 100:.1f} % | {overheads[-1] * 100:+.1f} % "
                     f"({len(walls[(name, RECORDED, True)])} vs {len(walls[(name, RECORDED, False)])} runs) |")
    lines += ["", *_classifier_lines({name: profiles[0] for name, profiles in recordings.items()})]
    lines += ["", f"Mean completion-time error over all workloads and configurations: {statistics.fmean(errors) * 100:.1f} % "
              f"from each job's first recording, {statistics.fmean(every) * 100:.1f} % over every recording "
              f"(goal <= 8 %; median noise floor {statistics.median(noise) * 100:.1f} %). Median recorder overhead: "
              f"{statistics.median(overheads) * 100:+.1f} % (goal <= 2 %)."]
    return lines


if __name__ == "__main__":
    main()
