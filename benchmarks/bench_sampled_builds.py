"""Sampled features in real builds (issue 18): ``mantispy build`` with and without ``--sample-fraction``
on the suite's profiled stores, over several splits.

``bench_sampled.py`` refits on stored runs and bounds the stand-ins' cost by a whole counters-only run; this
benchmark runs the product itself: the gate, the sampled stage, the cost loop judging each stand-in with
its slice's warm evaluator on samples of the cost inputs, the validation on every held-out input. Per
program and seed, two builds on the same store (the suite's ``build-work``, so both see the same runs, split
and cost inputs): without sampled features, and with them. It reports the held-out CPU-time median error of
each, the stand-ins the CPU model shipped, their cost as the cost loop measured it, and the build times.

    python benchmarks/bench_sampled_builds.py [--programs sqlparse,markdown] [--seeds 100,101,102]
        [--fraction 0.025] [--no-write]

Records stay in ``benchmarks/work/sampled-builds/NAME/SEED/{without,with}/build.json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from results import publish  # noqa: E402

from mantispy.build import BuildOptions, build  # noqa: E402
from mantispy.build_record import BuildRecord  # noqa: E402
from mantispy.runtime.sampled_input import SAMPLED_PREFIX  # noqa: E402

SUITE = HERE / "work" / "suite"
WORK = HERE / "work" / "sampled-builds"
PROGRAMS = ("sqlparse", "markdown", "mistune", "pycparser")
METRIC = "cpu_s"


def log(message: str) -> None:
    print(f"[sampled-builds {time.strftime('%H:%M:%S')}] {message}", flush=True)


def build_pair(name: str, seed: int, fraction: float, jobs: int) -> dict:
    """The two builds of one program and seed; their row."""
    folder = SUITE / name
    train_fraction = float(json.loads((folder / "predictor" / "build.json").read_text())["options"]["train_fraction"])
    row: dict = {"program": name, "seed": seed}
    for variant, share in (("without", 0.0), ("with", fraction)):
        out = WORK / name / str(seed) / variant
        started = time.perf_counter()
        record = build(BuildOptions(spec=folder / "campaign.toml", out=out, work=folder / "build-work", seed=seed,
                                    train_fraction=train_fraction, jobs=jobs, force=True, sample_fraction=share),
                       log=lambda m, v=variant: log(f"{name} {seed} ({v}): {m}"))
        row[variant] = summary(record, time.perf_counter() - started)
        log(f"{name} {seed} ({variant}): {row[variant]}")
    (WORK / name / str(seed) / "row.json").write_text(json.dumps(row, indent=1) + "\n")
    return row


def summary(record: BuildRecord, seconds: float) -> dict:
    """What the table needs of one build record."""
    metric = record.metrics[METRIC]
    shipped = [f for f in metric.model.get("scaling", {}) if f.startswith(SAMPLED_PREFIX)]
    gate = (record.ceiling.get(METRIC) or {}).get("sampling") or {}
    costs = [record.verdicts[f].get("cost_fraction") for f in shipped if f in record.verdicts]
    return {"error": metric.validation.get("median_rel_error"),
            "blackbox": (metric.validation.get("blackbox") or {}).get("median_rel_error"),
            "ceiling": (record.ceiling.get(METRIC) or {}).get("median_rel_error"),
            "offered": gate.get("offered"), "shipped": shipped, "costs": [c for c in costs if c is not None],
            "seconds": seconds}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", default=",".join(PROGRAMS))
    parser.add_argument("--seeds", default="100,101,102")
    parser.add_argument("--fraction", type=float, default=0.025)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--no-write", action="store_true", help="print, do not touch RESULTS.md")
    args = parser.parse_args(argv)
    started = time.time()
    seeds = [int(s) for s in args.seeds.split(",")]
    lines = ["| program | builds | gate open | CPU err without | CPU err with (better / worse) | stand-ins shipped: cost "
             "median (max) | black box | ceiling | build time with / without |",
             "|---|---|---|---|---|---|---|---|---|"]
    for name in args.programs.split(","):
        if not (SUITE / name / "predictor" / "build.json").exists():
            print(f"{name}: no build in {SUITE / name}; run benchmarks/bench_suite.py first", file=sys.stderr)
            continue
        rows = [build_pair(name, seed, args.fraction, args.jobs) for seed in seeds]
        without = [r["without"]["error"] for r in rows]
        with_ = [r["with"]["error"] for r in rows]
        costs = [c for r in rows for c in r["with"]["costs"]]
        shipped = sum(len(r["with"]["shipped"]) for r in rows)
        lines.append(
            f"| {name} | {len(rows)} x 2 | {sum(bool(r['with']['offered']) for r in rows)} | "
            f"{statistics.fmean(without):.1%} | {statistics.fmean(with_):.1%} "
            f"({sum(w < o for w, o in zip(with_, without))} / {sum(w > o for w, o in zip(with_, without))}) | "
            f"{shipped}" + (f": {statistics.median(costs):.1%} ({max(costs):.1%})" if costs else "") + " | "
            f"{statistics.fmean(r['with']['blackbox'] for r in rows):.1%} | "
            f"{statistics.fmean(r['with']['ceiling'] for r in rows):.1%} | "
            f"{statistics.fmean(r['with']['seconds'] for r in rows):.0f} / "
            f"{statistics.fmean(r['without']['seconds'] for r in rows):.0f} s |")
    lines.append("")
    lines.append(f"`python benchmarks/bench_sampled_builds.py --programs {args.programs} --seeds {args.seeds} "
                 f"--fraction {args.fraction:g}` ({(time.time() - started) / 60:.1f} min). Held-out median CPU-time "
                 "error of the shipped CPU model, mean over the seeds' splits; better / worse: splits where the build "
                 "with sampled features beats / loses to the build without; stand-ins shipped: sampled features in the "
                 "CPU models, with their cost as the cost loop measured it (share of the median run).")
    publish("bench_sampled_builds", "Sampled features in real builds (issue 18)", lines, not args.no_write)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
