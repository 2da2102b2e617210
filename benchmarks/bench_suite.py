"""The paper's §6 redone for Python: ``mantispy build`` on real third-party programs, one table.

    python benchmarks/bench_suite.py                 # every program of benchmarks/suite, 300 inputs each
    python benchmarks/bench_suite.py --quick         # CI: one program (sqlparse), 40 inputs
    python benchmarks/bench_suite.py --programs whoosh,markdown --count 300

For each program it assembles the campaign (benchmarks/suite/prepare.py: a copy of the installed
package plus the suite's workload and input generator), runs ``mantispy build`` (profile every input
instrumented and uninstrumented, fit on 10 % of the inputs, the cost loop, validation on the other 90 %),
measures budget-mode instrumentation (``mantispy instrument --budget 0.05`` calibrated on the median
input) and writes one row per program into benchmarks/RESULTS.md (section ``suite``), with the goals
(median error <= 5 %, evaluator cost <= 1 % of run time, black box several times worse) marked met or
not. Per-program build records stay in benchmarks/work/suite/NAME/predictor/build.json.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE / "suite"))

from results import machine_fingerprint, write_section  # noqa: E402

from mantispy.modeling.selection import coverage_range  # noqa: E402

# whoosh, the slowest to analyse, last. networkx (benchmarks/suite/networkx, --programs networkx) is not in the
# default run: `import networkx` loads its whole 117 kLOC package, whose SDG does not fit this machine.
PROGRAMS = ("demo", "markdown", "sqlparse", "pycparser", "mistune", "whoosh")
DEMO = "demo"  # not a suite program: make demo's campaign (examples/campaigns/minisearch-demo.toml)
DEMO_SPEC = HERE.parent / "examples" / "campaigns" / "minisearch-demo.toml"
WORK = HERE / "work" / "suite"


def log(message: str) -> None:
    print(f"[suite {time.strftime('%H:%M:%S')}] {message}", flush=True)


def bench_program(name: str, count: int, train_fraction: float, jobs: int, lookahead: int,
                  budget_check: bool) -> dict:
    """Build one program's predictor and collect its row."""
    from prepare import prepare

    from mantispy.build import BuildOptions, build

    started = time.perf_counter()
    if name == DEMO:  # make demo's campaign as it is (40 inputs, half for training), for the accuracy table
        spec, train_fraction = DEMO_SPEC, 0.5
    else:
        spec = prepare(name, WORK, count=count)
    out = WORK / name / "predictor"
    record = build(BuildOptions(spec=spec, out=out, work=WORK / name / "build-work", train_fraction=train_fraction,
                                jobs=jobs, lookahead=lookahead, force=True),
                   log=lambda m: log(f"{name}: {m}"))
    row = {"program": name, "seconds": time.perf_counter() - started, "record": str(out / "build.json")}
    row["budget"] = budget_overhead(name, spec, record) if budget_check else None
    log(f"{name}: done in {row['seconds']:.0f} s")
    (WORK / name / "row.json").write_text(json.dumps(row, indent=1) + "\n")  # for --render-only
    return row


def budget_overhead(name: str, spec: Path, record) -> dict | None:
    """Instrument with --budget 0.05, calibrated on the input of median run time (``record``: the build's
    BuildRecord); the overhead the budget mode measured in its last round."""
    from mantispy.campaign import load_spec

    points = record.metrics["wall_s"].validation["points"]
    if not points:
        return None
    median_input = sorted(points, key=lambda p: p["actual"])[len(points) // 2]["input_id"]
    loaded = load_spec(spec)
    argv = next(r.argv for r in loaded.inputs if r.id == median_input)
    out = WORK / name / "budget"
    command = [sys.executable, "-m", "mantispy", "instrument", str(loaded.source_root), "-o", str(out), "--force",
               "--budget", "0.05", "--calibrate", " ".join([loaded.entry.target, *map(_quote, argv)]),
               "--calibrate-repeats", "3"]
    proc = subprocess.run(command, cwd=loaded.workdir, capture_output=True, text=True)
    if proc.returncode != 0:
        log(f"{name}: budget mode failed: {proc.stderr.strip()[-300:]}")
        return {"error": proc.stderr.strip().splitlines()[-1][:200] if proc.stderr.strip() else "failed"}
    calibration = json.loads((out / ".mantis" / "manifest.json").read_text()).get("calibration") or {}
    return {"overhead": calibration.get("final_overhead"), "met": calibration.get("met"),
            "rounds": len(calibration.get("rounds", [])), "input": median_input}


def _quote(arg: str) -> str:
    import shlex

    return shlex.quote(arg)


def pct(value) -> str:
    return "n/a" if value is None else f"{value:.1%}"


def render(rows: list[dict], args, elapsed: float) -> list[str]:
    """The RESULTS.md section."""
    lines = [
        f"Command: `python benchmarks/bench_suite.py{' --quick' if args.quick else ''}` — {args.count} inputs per "
        f"program, models fitted on {args.train_fraction:.0%} of them and validated on the rest; "
        + ("rendered from the stored builds. " if args.render_only else f"whole run {elapsed / 60:.1f} min on this machine. ")
        + "Features are counted after the instrumentor's k=5 value "
        "versions; evaluator cost = the combined evaluator's run over the program's run, per held-out input "
        "(median), with the warm evaluator predictors keep (program modules imported once, a fork per input) "
        "and, in parentheses, in a fresh interpreter per prediction.",
        "",
        "| program | runs | raw features | selected features (kind @ line) | rounds | wall median / mean err | "
        "black box wall median / mean | peak RSS median / mean err | black box RSS median / mean | evaluator cost "
        "warm (fresh interpreter) | overhead full / budget 5 % | slice fidelity |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    notes = []
    accuracy = []
    for row in rows:
        if "error" in row:
            lines.append(f"| {row['program']} | failed: {row['error']} |" + " |" * 10)
            continue
        record = json.loads(Path(row["record"]).read_text())
        wall = record["metrics"]["wall_s"]["validation"]
        rss = record["metrics"]["max_rss_kb"]["validation"]
        ev = record["evaluator"]
        features = "; ".join(f"{f['kind']} @ {f['file']}:{f['line']}" if f.get("file") else f"`{f['id']}`"
                             for f in record["features"]) or "none"
        rounds = len([r for r in record["rounds"] if not r.get("lookahead")])
        overhead = (record["campaign"].get("overhead") or {}).get("median_overhead")
        budget = row.get("budget") or {}
        fidelity = ev["fidelity"]
        total = fidelity["inputs"] * fidelity["features"]
        lines.append(
            f"| {row['program']} | {record['campaign']['runs']} | {record['campaign']['raw_features']} | {features} | "
            f"{rounds} | {pct(wall['median_rel_error'])} / {pct(wall['mean_rel_error'])} | "
            f"{pct(wall['blackbox'].get('median_rel_error'))} / {pct(wall['blackbox'].get('mean_rel_error'))} | "
            f"{pct(rss['median_rel_error'])} / {pct(rss['mean_rel_error'])} | "
            f"{pct(rss['blackbox'].get('median_rel_error'))} / {pct(rss['blackbox'].get('mean_rel_error'))} | "
            f"{pct(ev.get('median_fraction'))} ({pct(ev.get('cold_median_fraction'))}) | "
            f"{pct(overhead)} / {pct(budget.get('overhead'))} | "
            + (f"{fidelity['agreed']}/{total}" if total else "no features") + " |")
        accuracy.append(accuracy_row(row["program"], record))
        goals = []
        median = wall["median_rel_error"]
        goals.append(f"median wall error ≤ 5 %: {'met' if median is not None and median <= 0.05 else 'NOT met'}")
        cost = ev.get("median_fraction") if ev.get("features") else None
        goals.append("no program feature in the models (input descriptors or constants): nothing to evaluate"
                     if not ev.get("features") else
                     f"evaluator cost ≤ 1 %: {'met' if cost is not None and cost <= 0.01 else 'NOT met'}"
                     + (f" (warm evaluator; {pct(ev.get('cold_median_fraction'))} in a fresh interpreter)" if cost else ""))
        bb = wall["blackbox"].get("median_rel_error")
        if bb is not None and median:
            goals.append(f"black box {bb / median:.1f}× the model's median error")
        notes.append(f"- **{row['program']}**" + (f" ({row['seconds'] / 60:.1f} min)" if row.get("seconds") else "") + ": " + "; ".join(goals) + ".")
    header = ["", "Accuracy against the noise floor (CPU time; `work` is the load-independent target judged against "
              "CPU time; black box = the best of the same model forms on argv numbers and file sizes; coverage = "
              "share of held-out inputs inside the p10-p90 interval, goal 75-85 %):", "",
              "| program | CPU noise floor | all-feature ceiling (CPU / work) | CPU model median err | work model median err | black box CPU | "
              "p10-p90 coverage CPU / work | goals: ≤ 1.5x noise floor; never worse than the black box; 2x better where "
              "it is above 2x the floor |",
              "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    return lines + ["", *notes] + (header + accuracy if accuracy else [])


def accuracy_row(program: str, record: dict) -> str:
    """One row of the accuracy-against-noise table (issue: predictions a scheduler can trust)."""
    floor = ((record["campaign"].get("noise") or {}).get("cpu_s") or {}).get("floor")
    cpu = record["metrics"].get("cpu_s", {}).get("validation", {})
    work = record["metrics"].get("work_s", {}).get("validation", {})
    box = (cpu.get("blackbox") or {}).get("median_rel_error")
    best = min((v for v in (cpu.get("median_rel_error"), work.get("median_rel_error")) if v is not None), default=None)
    verdicts = []
    if best is not None and floor:
        verdicts.append(f"{best / floor:.1f}x the floor: {'met' if best <= 1.5 * floor else 'NOT met'}")
    if best is not None and box is not None:
        verdicts.append(f"vs black box {box / best:.1f}x: " + ("NOT met (worse)" if best > box else "met"))
        if floor and box > 2 * floor:
            verdicts.append(f"2x better: {'met' if box >= 2 * best else 'NOT met'}")
    for name, validation in (("CPU", cpu), ("work", work)):
        covered, n, level = (validation.get("interval_coverage"), validation.get("interval_n") or validation.get("n"),
                             validation.get("interval_level"))
        if covered is not None and n and level:
            low, high = coverage_range(int(n), level[1] - level[0])
            verdicts.append(f"{name} coverage 75-85 %: {'met' if 0.75 <= covered <= 0.85 else 'NOT met'}, "
                            f"{'as' if low <= covered <= high else 'NOT as'} calibrated ({low:.0%}-{high:.0%} of {n})")
    ceiling = record.get("ceiling") or {}
    best_ceiling = min((c.get("median_rel_error") for c in ceiling.values() if isinstance(c, dict)
                        and c.get("median_rel_error") is not None and c is not ceiling.get("max_rss_kb")
                        and c is not ceiling.get("wall_s")), default=None)
    return (f"| {program} | {pct(floor)} | {pct(best_ceiling)} | {pct(cpu.get('median_rel_error'))} | "
            f"{pct(work.get('median_rel_error'))} | "
            f"{pct(box)} | {pct(cpu.get('interval_coverage'))} / {pct(work.get('interval_coverage'))} | "
            f"{'; '.join(verdicts) or 'n/a'} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="CI mode: sqlparse only, 40 inputs")
    parser.add_argument("--programs", default=None, help="comma list (default: all five)")
    parser.add_argument("--count", type=int, default=None, help="inputs per program (default 300; quick 40)")
    parser.add_argument("--train-fraction", type=float, default=None, help="default 0.1 (quick 0.25)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--lookahead", type=int, default=None, help="default 30 (quick 10)")
    parser.add_argument("--no-budget", action="store_true", help="skip the budget-mode measurement")
    parser.add_argument("--no-write", action="store_true", help="do not touch RESULTS.md")
    parser.add_argument("--render-only", action="store_true",
                        help="write the table from the build records already in benchmarks/work/suite (no builds)")
    parser.add_argument("--missing", action="append", default=[], metavar="NAME=WHY",
                        help="with --render-only: why a program has no build record (shown in its row)")
    args = parser.parse_args(argv)
    programs = args.programs.split(",") if args.programs else (["sqlparse"] if args.quick else list(PROGRAMS))
    args.count = args.count or (40 if args.quick else 300)
    args.train_fraction = args.train_fraction or (0.25 if args.quick else 0.1)
    lookahead = args.lookahead if args.lookahead is not None else (10 if args.quick else 30)
    started = time.perf_counter()
    rows = []
    if args.render_only:
        for name in programs:
            record = WORK / name / "predictor" / "build.json"
            stored = WORK / name / "row.json"  # the row bench_program wrote (seconds with preparation, budget)
            if stored.exists() and record.exists():
                rows.append(json.loads(stored.read_text()))
            elif record.exists():
                seconds = json.loads(record.read_text()).get("build_seconds", 0.0)
                rows.append({"program": name, "seconds": seconds, "record": str(record), "budget": None})
            else:
                why = dict(m.split("=", 1) for m in args.missing).get(name, "not built")
                rows.append({"program": name, "error": why})
        programs = []
    for name in programs:
        try:
            rows.append(bench_program(name, args.count, args.train_fraction, args.jobs, lookahead,
                                      budget_check=not args.no_budget and not args.quick))
        except Exception as exc:  # one program failing must not lose the others' rows
            log(f"{name}: FAILED: {type(exc).__name__}: {exc}")
            rows.append({"program": name, "error": f"{type(exc).__name__}: {str(exc)[:150]}"})
    elapsed = time.perf_counter() - started
    lines = render(rows, args, elapsed)
    print("\n".join(lines))
    if not args.no_write:
        section = "suite-quick" if args.quick else "suite"
        title = "Predictors on real programs (quick CI run)" if args.quick else "Predictors on real programs (paper §6)"
        write_section(section, title, machine_fingerprint(), lines)
    return 1 if any("error" in r for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
