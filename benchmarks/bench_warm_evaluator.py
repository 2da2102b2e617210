"""Benchmark: what one warm evaluation costs, this kit's server against an earlier revision's (issues 8, 18).

A predictor keeps its evaluator warm: a server that imported the program's modules once forks a child per
input. What an evaluation costs beyond the sliced program's own work (the fork, the child's confinement
and scratch folder, the reply, the child's exit and cleanup) decides which features fit the cost budget:
on the suite's mistune workload the budget (5 % of a run) is 7.5-8 ms, and a sampled stand-in spends most
of it on that fixed part, and on regexes the program compiles per run, which every forked child compiled
again. The server now forks each evaluation before its request comes, replies before reaping the child
(slicer/kit/evaluate.py, ``_fork_evaluation``), and compiles the patterns its evaluations compiled so that
later children find them in re's cache (``_learn_patterns``).

This prepares the suite's mistune workload, emits two evaluators: the cheap feature ``--repeat``'s loop
(its slice is the argument parsing: almost all of its cost is the fixed part) and the counter of
``Markdown._iter_render``'s loop, evaluated as the cost loop evaluates a sampled stand-in (a 2.5 % sample of
the input file, cut per evaluation). Each gets two copies: one with this tree's kit, one with the kit of
``--baseline`` (a git revision). Round trips of the four servers run interleaved, in a shuffled order, on
the same inputs; CPU time is that of each server's process tree over the whole run, per evaluation. The
program's own runs (the original workload, no mantispy) are timed in the same loop, for the budget.
Writes its section of benchmarks/RESULTS.md.

    .venv/bin/python benchmarks/bench_warm_evaluator.py [--rounds 30] [--baseline REV] [--inputs 5]
"""

from __future__ import annotations

import argparse
import importlib.util
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE / "suite"))
from results import machine_fingerprint, write_section  # noqa: E402

from mantispy.sampled.evaluate import evaluate_sampled  # noqa: E402
from mantispy.slicer import kit  # noqa: E402
from mantispy.slicer.evaluators import SliceSession  # noqa: E402
from mantispy.slicer.warm_client import WarmEvaluator  # noqa: E402

CHEAP = "workload.py:main:loop:2"
COUNTER = "mistune/markdown.py:Markdown._iter_render:loop:1"
FRACTION = 0.025


def with_kit_of(evaluator: Path, copy: Path, revision: str) -> None:
    """A copy of an emitted evaluator whose kit files (all but the generated constants) are those of
    ``revision``."""
    shutil.copytree(evaluator, copy)
    for name, module in kit.COPIED.items():
        path = Path(module).resolve().relative_to(REPO).as_posix()
        text = subprocess.run(["git", "show", f"{revision}:{path}"], cwd=REPO, capture_output=True, text=True,
                              check=True).stdout
        (copy / name).write_text(text)


def tree_cpu(root: int) -> float:
    """CPU seconds of a server's process tree: the live processes and the children they have reaped."""
    total = 0.0
    try:
        processes = [psutil.Process(root), *psutil.Process(root).children(recursive=True)]
    except psutil.NoSuchProcess:
        return 0.0
    for process in processes:
        try:
            times = process.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += times.user + times.system + times.children_user + times.children_system
    return total


def server_pid(folder: Path) -> int:
    """The pid of the warm server started for ``folder`` (a child of this process)."""
    script = str(folder / "evaluate.py")
    for child in psutil.Process().children():
        if script in child.cmdline():
            return child.pid
    raise SystemExit(f"no server found for {folder}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30, help="round trips per server and input")
    parser.add_argument("--inputs", type=int, default=5, help="mistune inputs")
    parser.add_argument("--baseline", default="HEAD~1", help="git revision whose kit is the baseline")
    parser.add_argument("--seed", type=int, default=8)
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()
    if importlib.util.find_spec("mistune") is None:
        raise SystemExit("mistune is not installed: make bench installs it (pip install -e '.[bench]')")
    baseline = subprocess.run(["git", "rev-parse", "--short", args.baseline], cwd=REPO, capture_output=True,
                              text=True, check=True).stdout.strip()
    from prepare import prepare

    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        spec = prepare("mistune", work, count=args.inputs)
        generator = importlib.util.spec_from_file_location("_mistune_inputs", spec.parent / "inputs.py")
        module = importlib.util.module_from_spec(generator)
        generator.loader.exec_module(module)
        records = list(module.generate(count=args.inputs, out_dir=str(work / "inputs")))
        root = spec.parent / "app"
        session = SliceSession(root, "workload.py")
        servers: dict[tuple[str, str], Path] = {}
        for feature, label in ((CHEAP, "cheap"), (COUNTER, "sampled")):
            emitted = work / f"{label}-emitted"
            session.emit(feature, emitted)
            servers[(label, "this kit")] = emitted
            with_kit_of(emitted, work / f"{label}-baseline", baseline)
            servers[(label, f"kit of {baseline}")] = work / f"{label}-baseline"
        warm = {key: WarmEvaluator(str(folder)) for key, folder in servers.items()}
        times: dict[tuple[str, str], list[float]] = {key: [] for key in servers}
        program_wall: list[float] = []
        try:
            for server in warm.values():
                server.start()
            pids = {key: server_pid(folder) for key, folder in servers.items()}

            def once(key: tuple[str, str], record: dict) -> tuple[dict, float]:
                argv = list(record["argv"])
                if key[0] == "cheap":
                    return warm[key].evaluate(argv, cwd=str(root))
                return evaluate_sampled(warm[key], ["sampled:" + COUNTER], argv, None, [], FRACTION, str(root))

            for key in servers:  # agree first (and warm the pages every later fork copies)
                if key[1] == "this kit":
                    other = (key[0], f"kit of {baseline}")
                    for record in records:
                        if once(key, record)[0] != once(other, record)[0]:
                            raise SystemExit(f"the two {key[0]} evaluators disagree on {record['argv']}")
            cpu_before = {key: tree_cpu(pid) for key, pid in pids.items()}
            jobs = [(key, record) for key in [*servers, None] for record in records for _ in range(args.rounds)]
            rng.shuffle(jobs)
            for key, record in jobs:
                if key is None:
                    started = time.perf_counter()
                    subprocess.run([sys.executable, "workload.py", *record["argv"]], cwd=root, check=True,
                                   stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
                    program_wall.append(time.perf_counter() - started)
                else:
                    times[key].append(once(key, record)[1])
            cpu = {key: (tree_cpu(pid) - cpu_before[key]) / len(times[key]) for key, pid in pids.items()}
        finally:
            for server in warm.values():
                server.close()
    run_ms = statistics.median(program_wall) * 1000
    lines = [
        f"The suite's mistune workload, {args.inputs} generated inputs; evaluators of `{CHEAP}` (the argument "
        f"parsing: its cost is almost all the server's fixed part) and of the counter `{COUNTER}` evaluated as "
        f"a sampled stand-in ({FRACTION:.1%} sample of the input cut per evaluation, as the cost loop does). "
        f"Each with this tree's kit and with the kit of {baseline}; {args.rounds} round trips per server and "
        "input, all servers and the program's own runs interleaved in one shuffled order (seed "
        f"{args.seed}). Round trip: request written to reply read (sample cutting included); CPU: the "
        "server's process tree over the whole loop, per evaluation.",
        "",
        "| evaluator | server | median round trip ms | p10-p90 ms | CPU ms per evaluation | share of a median run |",
        "| --- | --- | ---: | ---: | ---: | ---: |",
    ]
    for key in servers:
        values = sorted(times[key])
        median = statistics.median(values)
        p10, p90 = values[len(values) // 10], values[(9 * len(values)) // 10]
        lines.append(f"| {key[0]} | {key[1]} | {median * 1000:.2f} | {p10 * 1000:.2f}-{p90 * 1000:.2f} | "
                     f"{cpu[key] * 1000:.2f} | {median * 1000 / run_ms:.1%} |")
    ratios = {label: statistics.median(times[(label, f"kit of {baseline}")]) / statistics.median(times[(label, "this kit")])
              for label in ("cheap", "sampled")}
    lines += [
        "",
        f"Median run of the program itself (wall, `python workload.py`, same loop): {run_ms:.1f} ms, so the 5 % "
        f"budget is {run_ms * 0.05:.1f} ms. Round trip, kit of {baseline} / this kit: cheap "
        f"{ratios['cheap']:.2f}x, sampled {ratios['sampled']:.2f}x.",
    ]
    print("\n".join(lines))
    if not args.no_write:
        write_section("bench_warm_evaluator", "Warm evaluator round trip (issues 8, 18)", machine_fingerprint(), lines)


if __name__ == "__main__":
    main()
