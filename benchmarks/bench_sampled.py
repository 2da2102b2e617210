"""Sampled stand-ins for expensive counters, over train/test splits of the suite's builds (issue 18).

The features that explain a parser's cost (tokens made, groups matched, inline patterns tried) are counted
deep inside it, so their slices cost as much as the run and the cost loop rejects them. A sampled feature
(:mod:`mantispy.runtime.sampled_input`) counts the same counter on a run of the program over the first part
of each input file and scales the count to the whole file: its cost is the sample's share of a run.

For each split this benchmark fits the model the build would fit with every feature (the all-feature
ceiling), takes the counters it selected, offers their sampled stand-ins beside the features the build
judged cheap, and compares the held-out CPU-time error with the shipped refit on the cheap features alone
(what ``bench_splits.py`` reports) and the black box, on the same split.

    python benchmarks/bench_sampled.py [--programs sqlparse,markdown] [--fractions 0.025,0.05]
        [--splits 10] [--first-seed 70] [--no-write]

The sampled runs use a copy of the program instrumented for counters only (``--only
loops,branches,calls,exceptions``) in ``benchmarks/work/suite/NAME/sampled-inst``; their table is kept
in ``sampled-FRACTION.json`` beside it. Cost: each sampled run's CPU time (a fresh interpreter) less the
median CPU time of runs on 256-byte samples of ten inputs (the start-up a warm evaluator pays once), over
the program's own CPU time on the input (the store's uninstrumented runs, median of repeats).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_splits import content_columns, not_cheap  # noqa: E402
from results import publish  # noqa: E402

from mantispy.campaign import load_spec  # noqa: E402
from mantispy.modeling.fitting import FitRequest, fit_campaign  # noqa: E402
from mantispy.runtime.content import CONTENT_PREFIX  # noqa: E402
from mantispy.runtime.descriptors import INPUT_PREFIX  # noqa: E402
from mantispy.sampled.gate import sampling_gate  # noqa: E402
from mantispy.sampled.measure import is_counter, measure, measure_input  # noqa: E402
from mantispy.sampled.types import SampledError, SampledRun, read_table  # noqa: E402
from mantispy.store import RunStore  # noqa: E402

SUITE = HERE / "work" / "suite"
PROGRAMS = ("sqlparse", "markdown", "mistune", "pycparser")
METRIC = "cpu_s"
STARTUP_FRACTION = 1e-9  # a sample of MIN_BYTES: the program's start-up and a few lines


def instrumented_copy(folder: Path) -> Path:
    """The counters-only instrumented copy of the suite program in ``folder`` (made once)."""
    out = folder / "sampled-inst"
    if not (out / ".mantis" / "manifest.json").exists():
        subprocess.run([sys.executable, "-m", "mantispy", "instrument", str(folder / "app"), "-o", str(out), "--force",
                        "--only", "loops,branches,calls,exceptions"], check=True, stdout=subprocess.DEVNULL)
    return out


def sampled_table(folder: Path, fraction: float, jobs: int):
    """The program's sampled table at ``fraction`` (measured once, then read back)."""
    path = folder / f"sampled-{fraction:g}.json"
    try:
        return read_table(path)
    except SampledError:
        pass
    spec = load_spec(folder / "campaign.toml")
    started = time.time()
    table = measure(spec, instrumented_copy(folder), fraction, jobs=jobs, log=print)
    print(f"{folder.name}: {len(table.runs)} sampled run(s), {len(table.failed)} without counts, "
          f"{time.time() - started:.0f} s", flush=True)
    table.save(path)
    return table


def startup_seconds(folder: Path) -> float:
    """Median CPU time of the counters-only program on 256-byte samples of ten inputs."""
    path = folder / "sampled-startup.json"
    if path.exists():
        return float(json.loads(path.read_text())["cpu_s"])
    spec = load_spec(folder / "campaign.toml")
    runs = [measure_input(spec, instrumented_copy(folder), record, STARTUP_FRACTION) for record in spec.inputs[:10]]
    seconds = statistics.median(r.cpu_s for r in runs if isinstance(r, SampledRun))
    path.write_text(json.dumps({"cpu_s": seconds}))
    return seconds


def original_cpu(store: RunStore, campaign) -> dict[str, float]:
    """Each input's CPU time uninstrumented (median of its repeats)."""
    frame = store.dataframe(campaign, metrics_from="original")
    return frame.groupby("input_id")[f"metric:{METRIC}"].median().to_dict()


def cost_fractions(table, startup: float, cpu: dict[str, float]) -> list[float]:
    """Per input: the sampled run's CPU time beyond start-up over the program's own CPU time."""
    return [max(run.cpu_s - startup, 0.0) / cpu[iid] for iid, run in table.runs.items() if cpu.get(iid)]


def split_rows(folder: Path, tables: dict[float, object], seeds: range, fraction_of_train: float,
               gated: bool = True) -> list[dict]:
    """Per split: the held-out CPU error of the ceiling, of the shipped refit and of each fraction's.
    ``gated``: stand-ins are offered only where the build's gate (:mod:`mantispy.sampled.gate`) opens on the
    split's all-feature model; elsewhere the refit with them is the shipped one."""
    content = content_columns(folder)
    rows = []
    with RunStore(folder / "build-work" / "mantis.db", create=False) as store:
        campaign = store.campaigns()[0]
        columns, excluded = not_cheap(folder, store, campaign)

        def fit(seed: int, exclude: tuple[str, ...], extra: dict) -> dict:
            request = FitRequest(metric=METRIC, degree=3, train_fraction=fraction_of_train, seed=seed,
                                 exclude=exclude, sensitivity=False, metrics_from="original", extra_features=extra)
            return fit_campaign(store, campaign.name, request)

        for seed in seeds:
            ceiling = fit(seed, (), content)
            counters = sorted(f for f in ceiling["scaling"] if not f.startswith((INPUT_PREFIX, CONTENT_PREFIX))
                              and is_counter(f) and f in columns)
            gate = sampling_gate(METRIC, ceiling)
            if gated and not gate.open:
                counters = []
            shipped = fit(seed, excluded, content)
            row = {"seed": seed, "offered": bool(counters), "ceiling": ceiling["evaluation"]["test"]["median_rel_error"],
                   "shipped": shipped["evaluation"]["test"]["median_rel_error"],
                   "blackbox": shipped["evaluation"]["blackbox"]["median_rel_error"], "counters": counters,
                   "sampled": {}}
            for fraction, table in tables.items():
                if not counters:
                    row["sampled"][fraction] = (row["shipped"], 0)
                    continue
                extra = {iid: dict(values) for iid, values in content.items()}
                for iid, values in table.values(counters).items():
                    extra.setdefault(iid, {}).update(values)
                model = fit(seed, excluded, extra)
                used = sum(1 for f in model["scaling"] if f.startswith("sampled:"))
                row["sampled"][fraction] = (model["evaluation"]["test"]["median_rel_error"], used)
            print(f"{folder.name} seed {seed}: ceiling {row['ceiling']:.1%}, shipped {row['shipped']:.1%}, "
                  + ", ".join(f"sampled {f:g} {e:.1%} ({u} used)" for f, (e, u) in row["sampled"].items())
                  + f", black box {row['blackbox']:.1%} ({len(counters)} counter(s); {gate.describe()})", flush=True)
            rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", default=",".join(PROGRAMS))
    parser.add_argument("--fractions", default="0.025,0.05", help="sample sizes, as fractions of each input file")
    parser.add_argument("--splits", type=int, default=10)
    parser.add_argument("--first-seed", type=int, default=70, help="the splits' seeds start here")
    parser.add_argument("--jobs", type=int, default=2, help="sampled runs at a time")
    parser.add_argument("--no-gate", action="store_true", help="offer the stand-ins on every split (the build's "
                        "gate off)")
    parser.add_argument("--no-write", action="store_true", help="print, do not touch RESULTS.md")
    args = parser.parse_args(argv)
    fractions = [float(f) for f in args.fractions.split(",")]
    started = time.time()
    head = " | ".join(f"sampled {f:.1%}: mean err (better / worse than shipped), cost median (p90)" for f in fractions)
    lines = [f"| program | splits | offered on | ceiling mean err | shipped mean err | {head} | black box mean err |",
             "|---|---|---|---|---|" + "---|" * len(fractions) + "---|"]
    for name in args.programs.split(","):
        folder = SUITE / name
        if not (folder / "predictor" / "build.json").exists():
            print(f"{name}: no build in {folder}; run benchmarks/bench_suite.py first", file=sys.stderr)
            continue
        record = json.loads((folder / "predictor" / "build.json").read_text())
        tables = {f: sampled_table(folder, f, args.jobs) for f in fractions}
        startup = startup_seconds(folder)
        with RunStore(folder / "build-work" / "mantis.db", create=False) as store:
            cpu = original_cpu(store, store.campaigns()[0])
        rows = split_rows(folder, tables, range(args.first_seed, args.first_seed + args.splits),
                          float(record["options"]["train_fraction"]), gated=not args.no_gate)
        cells = []
        for f in fractions:
            errors = [r["sampled"][f][0] for r in rows]
            better = sum(r["sampled"][f][0] < r["shipped"] for r in rows)
            worse = sum(r["sampled"][f][0] > r["shipped"] for r in rows)
            costs = sorted(cost_fractions(tables[f], startup, cpu))
            failed = len(tables[f].failed)
            cells.append(f"{statistics.fmean(errors):.1%} ({better} / {worse}), {statistics.median(costs):.1%} "
                         f"({costs[int(0.9 * (len(costs) - 1))]:.1%})" + (f", {failed} input(s) without counts" if failed else ""))
        lines.append(f"| {name} | {len(rows)} | {sum(r['offered'] for r in rows)} | {statistics.fmean(r['ceiling'] for r in rows):.1%} | "
                     f"{statistics.fmean(r['shipped'] for r in rows):.1%} | " + " | ".join(cells)
                     + f" | {statistics.fmean(r['blackbox'] for r in rows):.1%} |")
    lines.append("")
    lines.append(f"`python benchmarks/bench_sampled.py --programs {args.programs} --fractions {args.fractions} "
                 f"--splits {args.splits} --first-seed {args.first_seed}{' --no-gate' if args.no_gate else ''}` ({(time.time() - started) / 60:.1f} min). "
                 "Mean held-out CPU-time error over the splits (30 training inputs each); offered on: splits whose "
                 "all-feature model opened the build's gate (elsewhere the shipped refit is counted); better / worse: splits "
                 "where the refit with the sampled stand-ins beats / loses to the shipped refit. Cost: a sampled run's "
                 "CPU time beyond start-up over the program's CPU time on the input, median (90th percentile) over inputs.")
    publish("bench_sampled", "Sampled stand-ins for expensive counters (issue 18)", lines, not args.no_write)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
