"""Content features (issue 18): what the program's own regexes, counted in the input files, buy a model
held to the default cost budget.

    python benchmarks/bench_content.py --programs pycparser,sqlparse --count 300
    python benchmarks/bench_content.py --render-only           # the table from the records already built

For each program it assembles the suite's campaign (benchmarks/suite/prepare.py), then runs ``mantispy
build`` twice on one profiled store (the second build reuses every run, so both models see the same
measurements, split and cost inputs): with content features, and with ``content=False`` (the build as it
was). The ceiling is the build without content features' all-feature model (every instrumented counter,
cheap or not; the with-build's own ceiling may choose the content view on cross-validation). The table compares held-out median errors (wall, CPU, and the work target against CPU
time) with the black box and the ceiling, says which content features the models used and what the
content stage costs; the goal (issue 18) is the budgeted model within 1.3x the ceiling's error.
Records stay in benchmarks/work/content/NAME/{with,without}/build.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE / "suite"))

from results import machine_fingerprint, write_section  # noqa: E402

PROGRAMS = ("pycparser", "sqlparse", "markdown", "mistune", "whoosh")
DEMO = "demo"
DEMO_SPEC = HERE.parent / "examples" / "campaigns" / "minisearch-demo.toml"
WORK = HERE / "work" / "content"
VARIANTS = ("with", "without")
METRICS = ("wall_s", "cpu_s", "work_s")


def log(message: str) -> None:
    print(f"[content {time.strftime('%H:%M:%S')}] {message}", flush=True)


def bench_program(name: str, count: int, train_fraction: float, jobs: int, variants: tuple[str, ...] = VARIANTS) -> None:
    """The builds of one program (records under WORK/NAME/VARIANT)."""
    from prepare import prepare

    from mantispy.build import BuildOptions, build

    if name == DEMO:
        spec, train_fraction = DEMO_SPEC, 0.5
    else:
        spec = prepare(name, WORK, count=count)
    for variant in variants:
        started = time.perf_counter()
        build(BuildOptions(spec=spec, out=WORK / name / variant, work=WORK / name / "build-work",
                           train_fraction=train_fraction, jobs=jobs, force=True, content=variant == "with"),
              log=lambda m, v=variant: log(f"{name} ({v}): {m}"))
        log(f"{name} ({variant}): built in {time.perf_counter() - started:.0f} s")


def _pct(value) -> str:
    return "n/a" if value is None else f"{value:.1%}"


def _error(record: dict, metric: str) -> float | None:
    return ((record.get("metrics", {}).get(metric) or {}).get("validation") or {}).get("median_rel_error")


def rows_of(name: str) -> list[str]:
    """The table rows of one program (one per metric), or a row saying what is missing."""
    records = {}
    for variant in VARIANTS:
        path = WORK / name / variant / "build.json"
        if not path.exists():
            return [f"| {name} | not built ({variant}) | | | | | | | |"]
        records[variant] = json.loads(path.read_text())
    table_path = WORK / name / "build-work" / "content.json"
    table = json.loads(table_path.read_text()) if table_path.exists() else {}
    lines = []
    for metric in METRICS:
        with_, without = records["with"], records["without"]
        if metric not in with_.get("metrics", {}):
            continue
        model = with_["metrics"][metric]["model"]
        used = [f for f in model.get("scaling", {}) if f.startswith("content:")]
        box = ((with_["metrics"][metric].get("validation") or {}).get("blackbox") or {}).get("median_rel_error")
        # the all-feature model of the build without content features: every instrumented counter, cheap or
        # not (the with-build's own ceiling may choose the content view on cross-validation)
        ceiling = (without.get("ceiling") or {}).get(metric, {}).get("median_rel_error")
        error = _error(with_, metric)
        ratio = f"{error / ceiling:.2f}x" if error is not None and ceiling else "n/a"
        noise = ((with_.get("campaign") or {}).get("noise") or {}).get("cpu_s" if metric == "work_s" else metric, {})
        lines.append(f"| {name} | {metric} | {_pct(error)} | {_pct(_error(without, metric))} | {_pct(box)} | "
                     f"{_pct(noise.get('floor'))} | "
                     f"{_pct(ceiling)} | {ratio} | {len(used)} of {len(table.get('chosen', []))} offered "
                     f"({len(table.get('candidates', []))} found) |")
    evaluator = records["with"].get("evaluator") or {}
    lines.append(f"| {name} | evaluator | {_pct(evaluator.get('median_fraction'))} of a run | "
                 f"{_pct((records['without'].get('evaluator') or {}).get('median_fraction'))} | | | | | "
                 f"content fidelity: {(evaluator.get('fidelity') or {}).get('mismatch_count', 'n/a')} mismatches |")
    return lines


def render(programs: list[str]) -> list[str]:
    """The section's lines."""
    lines = [
        "Command: `python benchmarks/bench_content.py --programs " + ",".join(programs) + "`: per program one "
        "profiled store, two builds at the default budget (5 % of a run): with content features and without; "
        "held-out median relative error; the ceiling is the model on every instrumented counter, cheap or not "
        "(from the build without content features); "
        "ratio = with / ceiling (goal <= 1.3x); noise floor: the median deviation of one uninstrumented run from its "
        "input's median (work_s is judged against CPU time, so its floor is CPU time's).",
        "",
        "| program | metric | with content | without | black box | noise floor | ceiling | ratio | content features used |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for name in programs:
        lines += rows_of(name)
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--programs", default=",".join(PROGRAMS), help="comma list (suite programs or demo)")
    parser.add_argument("--count", type=int, default=300)
    parser.add_argument("--train-fraction", type=float, default=0.1)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--variants", default=",".join(VARIANTS),
                        help="which builds to (re)make: with, without or both (the other's record is kept)")
    parser.add_argument("--render-only", action="store_true")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    programs = args.programs.split(",")
    failed = False
    if not args.render_only:
        for name in programs:
            try:
                bench_program(name, args.count, args.train_fraction, args.jobs, tuple(args.variants.split(",")))
            except Exception as exc:  # one program failing must not lose the others
                log(f"{name}: FAILED: {type(exc).__name__}: {exc}")
                failed = True
    lines = render(programs)
    print("\n".join(lines))
    if not args.no_write:
        write_section("bench_content", "Content features: the program's regexes as cheap features (issue 18)",
                      machine_fingerprint(), lines)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
