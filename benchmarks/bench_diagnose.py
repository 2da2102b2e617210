"""Benchmark of ``mantispy diagnose`` (issue 22, AutoPerf's evaluation): seeded regressions and neutral
changes in copies of the suite's real packages, each diagnosed against the unchanged package.

    python benchmarks/bench_diagnose.py [--only NAME,...] [--inputs 6] [--repeats 3] [--candidate-repeats 2]

Cases: ``benchmarks/diagnose_cases.py`` (what each change does, the function it is in and the counter it
should move). Each program's campaign is the suite's (``benchmarks/suite/prepare.py``, 6 inputs, seed 3);
each case runs the whole diagnosis as ``mantispy diagnose`` does (the AST diff, both versions profiled
over the inputs interleaved, the autoencoders, the verdict), with the default settings (k = 2, 5 %
least effect, half of the candidate's runs flagged, one-sided p at most 0.05).

Scores: F1 of the verdict (a seeded regression is positive; a neutral change negative), the named
function's and counter's top-1 accuracy over the seeded regressions, beside the same F1 for the
whole-process CPU comparison (pyperf compare_to's style: per-input medians, paired, 5 % and p 0.05),
and the slowest autoencoder fit. Writes the ``bench_diagnose`` section of RESULTS.md.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE / "suite"))
sys.path.insert(0, str(HERE.parent))

from diagnose_cases import CASES, apply  # noqa: E402
from prepare import prepare  # noqa: E402
from results import machine_fingerprint, write_section  # noqa: E402

from mantispy.campaign import load_spec  # noqa: E402
from mantispy.diagnosis.analysis import diagnose  # noqa: E402
from mantispy.diagnosis.changes import diff_trees  # noqa: E402
from mantispy.diagnosis.counting import count_versions  # noqa: E402
from mantispy.diagnosis.profiling import BASELINE, CANDIDATE, profile_versions  # noqa: E402
from mantispy.diagnosis.types import COUNT_KINDS, Settings  # noqa: E402

INPUT_COUNT, INPUT_SEED = 6, 3


def f1(truth: list[bool], said: list[bool]) -> tuple[float, int, int, int]:
    """F1, true positives, false positives, false negatives."""
    tp = sum(t and s for t, s in zip(truth, said))
    fp = sum(s and not t for t, s in zip(truth, said))
    fn = sum(t and not s for t, s in zip(truth, said))
    return (2 * tp / (2 * tp + fp + fn) if tp else 0.0), tp, fp, fn


def run_case(case, spec_path: Path, work: Path, repeats: int, candidate_repeats: int, seed: int) -> dict:
    """Diagnose one case; the row of the table."""
    spec = load_spec(spec_path)
    baseline = spec.source_root
    candidate = work / f"{case.name}-app"
    shutil.rmtree(candidate, ignore_errors=True)
    shutil.copytree(baseline, candidate, ignore=shutil.ignore_patterns("__pycache__"))
    apply(case, candidate)
    started = time.perf_counter()
    changes = diff_trees(baseline, candidate)
    patterns = {BASELINE: sorted({changes.baseline_name(n) for n in changes.touched}), CANDIDATE: changes.touched}
    runs = profile_versions(spec, {BASELINE: baseline, CANDIDATE: candidate}, patterns, spec.inputs,
                            {BASELINE: repeats, CANDIDATE: candidate_repeats}, seed)
    counters_only = diagnose(changes, runs, Settings(seed=seed))
    counted = time.perf_counter()
    counts = count_versions(spec, {BASELINE: baseline, CANDIDATE: candidate}, spec.inputs, seed)
    count_seconds = time.perf_counter() - counted
    diagnosis = diagnose(changes, runs, Settings(seed=seed), counts)
    shutil.rmtree(candidate, ignore_errors=True)
    grew = [c for c in diagnosis.count_changes if c.regressed]
    fits = [f.fit_seconds for f in diagnosis.findings if f.fit_seconds is not None]
    failed = [r for r in runs if r.status != "ok"]
    return {"case": case, "verdict": diagnosis.verdict, "function": diagnosis.function, "counter": diagnosis.counter,
            "effect": diagnosis.effect, "confidence": diagnosis.confidence, "cpu": diagnosis.cpu_total,
            "floor": diagnosis.noise_floor, "touched": len(changes.touched), "fit_max": max(fits, default=0.0),
            "seconds": time.perf_counter() - started, "failed": len(failed),
            "counters_only": counters_only.verdict, "count_seconds": count_seconds,
            "count_failed": sum(r.status != "ok" for r in counts),
            "grew": "-" if not grew else f"{COUNT_KINDS[grew[0].kind]} of {grew[0].function} x{grew[0].effect:.2f}"
                                          + (f" (+{len(grew) - 1} more)" if len(grew) > 1 else "")}


def _pct(value: float | None) -> str:
    if value is not None and value >= 10:
        return f"x{value:.3g}"
    return "-" if value is None else f"{(value - 1) * 100:+.1f}%"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="", help="comma-separated case names")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--candidate-repeats", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-write", action="store_true", help="print, do not touch RESULTS.md")
    args = parser.parse_args()
    chosen = [c for c in CASES if not args.only or c.name in args.only.split(",")]
    started = time.perf_counter()
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-diagnose-") as tmp:
        work = Path(tmp)
        specs = {name: prepare(name, work / "suite", count=INPUT_COUNT, seed=INPUT_SEED)
                 for name in sorted({c.program for c in chosen})}
        for number, case in enumerate(chosen, 1):
            row = run_case(case, specs[case.program], work, args.repeats, args.candidate_repeats, args.seed)
            rows.append(row)
            print(f"[{number}/{len(chosen)}] {case.name}: {row['verdict']} {row['function']} {row['counter']} "
                  f"{_pct(row['effect'])}; cpu {_pct(row['cpu'].ratio)} {row['cpu'].verdict} "
                  f"({row['seconds']:.0f} s)", flush=True)
    minutes = (time.perf_counter() - started) / 60
    truth = [r["case"].kind == "regression" for r in rows]
    ours = f1(truth, [r["verdict"] == "regression" for r in rows])
    theirs = f1(truth, [r["cpu"].verdict == "regression" for r in rows])
    counters = f1(truth, [r["counters_only"] == "regression" for r in rows])
    regressions = [r for r in rows if r["case"].kind == "regression"]
    right_function = sum(r["function"] == r["case"].function for r in regressions)
    right_counter = sum(r["counter"] == r["case"].counter for r in regressions)
    found = [r for r in regressions if r["verdict"] == "regression"]
    lines = [
        f"Command: `python benchmarks/bench_diagnose.py` ({minutes:.1f} min). {len(regressions)} seeded regressions and "
        f"{len(rows) - len(regressions)} neutral changes (`benchmarks/diagnose_cases.py`) in copies of the suite's "
        f"packages; each program's suite campaign with {INPUT_COUNT} inputs (seed {INPUT_SEED}); baseline run "
        f"{args.repeats} times and candidate {args.candidate_repeats} times per input, interleaved and shuffled; "
        "default settings (k = 2, least effect 5 %, half the runs flagged, one-sided p <= 0.05). *CPU total*: the "
        "whole process's CPU time compared per input with the same effect and significance rule (pyperf "
        "compare_to's style), the comparison a diagnosis must beat. Effects are on the median input; the noise "
        "floor is the median relative deviation between the baseline's repeats of an input. *Program counts*: "
        "one run of an instrumented copy of each version per input (loops, calls, handlers); the first count "
        "that grew is shown, and the verdict rests on counts only where no counter finding decided it; "
        "*counters only* is the verdict of the same runs without the counts.",
        "",
        "| case | kind | seeded in (counter) | verdict | named function (counter) | effect | program counts that grew "
        "| counters only | CPU total | noise floor |",
        "| --- | --- | --- | --- | --- | ---: | --- | --- | --- | ---: |",
    ]
    for r in rows:
        case = r["case"]
        named = "-" if r["function"] is None else f"{r['function']} ({r['counter']})"
        mark = "" if case.kind == "neutral" or r["verdict"] != "regression" else (
            " ✓" if r["function"] == case.function and r["counter"] == case.counter else
            " (function ✓)" if r["function"] == case.function else " ✗")
        seeded = f"{case.function} ({case.counter})" if case.kind == "regression" else case.function
        floor = "-" if r["floor"] is None else f"{r['floor']:.1%}"
        failed = f" ({r['failed']} runs failed)" if r["failed"] else ""
        count_failed = f" ({r['count_failed']} counting runs failed)" if r["count_failed"] else ""
        lines.append(f"| {case.name} | {case.kind}: {case.what} | {seeded} | {r['verdict']}{failed} | {named}{mark} | "
                     f"{_pct(r['effect'])} | {r['grew']}{count_failed} | {r['counters_only']} | "
                     f"{_pct(r['cpu'].ratio)} {r['cpu'].verdict} | {floor} |")
    fit_max = max((r["fit_max"] for r in rows), default=0.0)
    lines += [
        "",
        f"- **Verdict F1: {ours[0]:.2f}** ({ours[1]} regressions found, {ours[2]} false alarms, {ours[3]} missed) "
        f"against **{theirs[0]:.2f}** for the CPU total ({theirs[1]} found, {theirs[2]} false alarms, {theirs[3]} "
        f"missed), and **{counters[0]:.2f}** from the counters alone, without the program counts ({counters[1]} "
        f"found, {counters[2]} false alarms, {counters[3]} missed). Goal: F1 >= 0.95.",
        f"- **Root cause top-1**: function {right_function}/{len(regressions)} of the seeded regressions "
        f"({right_function / max(len(regressions), 1):.0%}; {sum(r['function'] == r['case'].function for r in found)}"
        f"/{len(found)} of those found), counter {right_counter}/{len(regressions)} "
        f"({right_counter / max(len(regressions), 1):.0%}). Goal: >= 90 %. The CPU total names neither.",
        f"- **Training**: the slowest autoencoder fit took {fit_max:.2f} s of CPU (goal <= 10 s per model).",
        f"- **Counting**: instrumenting both versions and one counting run each per input took "
        f"{statistics.median(r['count_seconds'] for r in rows):.0f} s per case (median; "
        f"{max(r['count_seconds'] for r in rows):.0f} s at most).",
        "- Profiling overhead: see \"Per-function counter profiles: overhead\" (the same profiler).",
    ]
    for line in lines:
        print(line)
    if not args.no_write and not args.only:
        write_section("bench_diagnose", "Regression diagnosis: seeded regressions (issue 22)", machine_fingerprint(),
                      lines)


if __name__ == "__main__":
    main()
