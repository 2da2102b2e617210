"""Per-phase models and anomaly detection on real programs (issue 21): held-out errors, FPR and FNR.

    python benchmarks/bench_phases.py [--programs sqlparse,pycparser] [--train 40] [--per-kind 25]
                                      [--sampler builtin|signal] [--loaded 10]

For each program of the suite (its real workload in mode ``all``: every phase of the workload runs, one
after the other, on one input file):

Inputs: the suite generators' SQL scripts and C files (every mix, style, complexity and depth), sized for
0.8-3 s of work each, with one set of workload options (``--mode all``), so that a run's phases last
long enough for 0.1 s epochs and recur across runs (the suite's own inputs mostly run under a second and
vary the options, which gives every run phases of its own).

1. a campaign of ``--train`` inputs is profiled with ``mantispy profile --sample`` (each input once
   instrumented, for its feature counts, and once as it is, sampled at 100 Hz with resources every
   0.1 s); ``mantispy phases --fit`` models every phase and the whole run, and reports held-out errors;
2. for each anomaly kind, ``2 x --per-kind`` further inputs (none seen in training) run through
   ``mantispy check --model ... -- workload.py ARGS``, half of them normal and half with the anomaly
   injected from outside the program, in a shuffled order (seeded): a CPU hog (one busy process per
   core, for the whole run), a memory balloon (a preloaded thread that allocates and touches 128 MiB
   0.2 s into the run and keeps it), an IO stall (each open() of the input file first waits 0.5 s), a
   slowed phase (a preloaded wrapper that spends 0.3 s of CPU before each call of one function of one
   phase: sqlparse.split, or pycparser's CParser.parse);
3. the false positive rate (normal runs flagged) and false negative rate (anomalous runs not flagged)
   of the phase-aware check, and of the whole-run threshold baseline (the same rule on the run's
   totals), per kind;
4. with ``--loaded N``: N more unseen inputs checked as normal runs beside one busy process (in a session
   of its own) for the whole of their runs: a loaded machine is no anomaly of the program, and a sampler
   that the load moves (README, Limits) makes the check flag such runs.

Everything runs through the real CLI. Results go to RESULTS.md (section bench_phases) and, with every
verdict, to the work folder's results.json.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE / "suite"))

from benchmarks.results import publish  # noqa: E402

CLI = [sys.executable, "-m", "mantispy"]
INJECT = HERE / "anomaly_boot"
KINDS = ("cpu_hog", "memory_balloon", "io_stall", "slowed_phase")
SLOWED = {"sqlparse": "sqlparse:split:0.3:busy", "pycparser": "pycparser.c_parser:CParser.parse:0.3:busy"}
SUFFIX = {"sqlparse": ".sql", "pycparser": ".c"}
PYCPARSER_CHARS_PER_S = 120_000  # mode all on this machine (about 130 kB/s measured on mixed-style files)


def _suite_module(name: str):
    """The suite generator module of one program (benchmarks/suite/NAME/inputs.py)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"suite_{name}_inputs", HERE / "suite" / name / "inputs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def phase_inputs(name: str, folder: Path, count: int, seed: int) -> list[dict]:
    """``count`` inputs of one program in its workload's multi-phase mode ``all`` with one set of options,
    made by the suite generator's own synthesizers (every SQL mix and complexity, every C style and
    depth), each sized for 0.8-3 s of work (log-uniform), long enough for 0.1 s epochs to resolve its phases."""
    suite = _suite_module(name)
    rng = random.Random(seed)
    out = folder / "inputs" / "phases"
    out.mkdir(parents=True, exist_ok=True)
    records = []
    pools: dict = {}
    sql_pools = suite.Pools(seed) if name == "sqlparse" else None
    for n in range(count):
        seconds = 0.8 * (3.0 / 0.8) ** rng.random()
        if name == "sqlparse":
            mix, complexity = rng.choice(list(suite.MIXES)), rng.choice((1, 1, 2, 2, 3, 4))
            size = int(seconds / suite.SECONDS_PER_MB["all", True] * 1e6)
            path = out / f"p{n:04d}-{mix}-c{complexity}.sql"
            text = sql_pools.script(random.Random(rng.getrandbits(32)), mix, complexity, rng.choice((0.0, 0.1, 0.4)),
                                    rng.choice((0.05, 0.3, 0.7)), size)
            argv = ["--mode", "all", "--reindent", "--keyword-case", "upper"]
        else:
            style, depths = rng.choice(list(suite.STYLES)), (rng.choice((1, 2, 3, 4)), rng.choice((1, 2, 3, 4)))
            size = int(seconds * PYCPARSER_CHARS_PER_S / suite.STYLE_COST[style])
            key = (style, *depths)
            if key not in pools:
                pools[key] = suite.Gen(random.Random(f"{seed}:{style}:{depths}"), style, *depths)
            path = out / f"p{n:04d}-{style}-e{depths[0]}n{depths[1]}.c"
            text = pools[key].unit(random.Random(rng.getrandbits(32)), size)
            argv = ["--mode", "all", "--dialect", "legacy"]
        path.write_text(text, encoding="utf-8")
        relative = path.relative_to(folder).as_posix()
        records.append({"id": f"{name}-phases-{n:04d}", "argv": [*argv, relative], "files": [relative]})
    return records


def training_spec(folder: Path, name: str, inputs: list[dict]) -> Path:
    """A campaign spec of the training inputs beside the suite's spec (same app, entry and environment)."""
    lines = [f'name = "{name}-phases"', 'source = "app"', 'entry = "workload.py"', "timeout = 120",
             'calibration_runs = "all"', "original_repeats = 1", "", "[env]", 'PYTHONHASHSEED = "0"',
             'PYTHONDONTWRITEBYTECODE = ""', "", "[instrument]", "k = 0", 'only = ["loops", "calls"]', ""]
    for record in inputs:
        lines += ["[[inputs.list]]", f"id = {json.dumps(record['id'])}", f"argv = {json.dumps(record['argv'])}",
                  f"files = {json.dumps(record['files'])}", ""]
    spec = folder / "phases.toml"
    spec.write_text("\n".join(lines), encoding="utf-8")
    return spec


def run(cmd: list[str], cwd: Path, env: dict | None = None, timeout: float = 3600) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env={**os.environ, **(env or {})},
                          timeout=timeout)


def hog(count: int | None = None) -> list[subprocess.Popen]:
    """``count`` busy processes (default: one per core), each in a session of its own: Linux's autogroup
    scheduler shares the CPU between sessions first, so hogs in the benchmark's own session would only
    compete with each other (as another user's processes do not)."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True)
            for _ in range(count or os.cpu_count() or 1)]


def check_run(folder: Path, name: str, record: dict, kind: str | None, store: Path) -> dict:
    """Run one test input through mantispy check, with the anomaly ``kind`` injected (None: normal)."""
    env = {"PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": ""}
    hogs: list[subprocess.Popen] = []
    if kind == "cpu_hog":
        hogs = hog()
        time.sleep(0.2)
    elif kind is not None:
        env["PYTHONPATH"] = str(INJECT)
        env.update({"memory_balloon": {"MANTIS_INJECT_BALLOON": "128:0.2:3600"},
                    "io_stall": {"MANTIS_INJECT_IO_STALL": f"{SUFFIX[name]}:0.5"},
                    "slowed_phase": {"MANTIS_INJECT_DELAY": SLOWED[name]}}[kind])
    try:
        proc = run([*CLI, "check", "--model", "model.json", "--store", str(store), "--json", "--",
                    "app/workload.py", *record["argv"]], folder, env, timeout=600)
    finally:
        for process in hogs:
            process.kill()
            process.wait()
    if proc.returncode != 0:
        return {"input": record["id"], "kind": kind, "error": (proc.stderr.strip().splitlines() or ["?"])[-1]}
    out = proc.stdout
    verdict = json.loads(out[out.index("\n{") + 1:] if not out.startswith("{") else out)
    top = verdict["departures"][0] if verdict["departures"] else None
    return {"input": record["id"], "kind": kind, "anomalous": verdict["anomalous"],
            "baseline": verdict["baseline"]["anomalous"],
            "top": None if top is None else f"{top['phase']} {top['metric']} ({top['name'][:60]})",
            "departures": [(d["phase"], d["metric"], round(d["z"], 1) if d["z"] is not None else "new")
                           for d in verdict["departures"]],
            "baseline_departures": [(d["metric"], d["z"] and round(d["z"], 1)) for d in verdict["baseline"]["comparisons"]
                                    if d["departs"]],
            "comparisons": [_compact(d) for d in verdict["comparisons"]],
            "baseline_comparisons": [_compact(d) for d in verdict["baseline"]["comparisons"]]}


def _compact(comparison: dict) -> list:
    """phase, metric, actual, expected, z (None for a phase never seen), departs, model, function, total,
    run_change."""
    return [comparison["phase"], comparison["metric"], comparison["actual"], comparison["expected"], comparison["z"],
            comparison["departs"], comparison["model"], comparison.get("function", ""), comparison.get("total", 0.0),
            comparison.get("run_change")]


def program(name: str, work: Path, train: int, per_kind: int, seed: int, log, sampler: str = "builtin",
            loaded: int = 0) -> dict:
    """Train on one program and check its test runs."""
    from prepare import prepare

    needed = train + 2 * per_kind * len(KINDS) + loaded
    spec = prepare(name, work, count=1, seed=1)  # the app folder (a copy of the package) and the entry script
    folder = spec.parent
    inputs = phase_inputs(name, folder, needed, seed)
    training, testing = inputs[:train], inputs[train:needed - loaded]
    store = folder / "phases.db"
    for stale in (store, folder / "checks.db", folder / "model.json"):
        for path in (stale, Path(f"{stale}-wal"), Path(f"{stale}-shm")):
            path.unlink(missing_ok=True)
    began = time.perf_counter()
    profiled = run([*CLI, "profile", str(training_spec(folder, name, training)), "--store", str(store), "--sample",
                    "--sample-interval", "0.1", "--sampler", sampler, "-q"], folder)  # check runs record the same way
    if profiled.returncode != 0:
        raise SystemExit(f"{name}: profile failed: {profiled.stderr.strip()[-500:]}")
    log(f"{name}: profiled {train} inputs in {time.perf_counter() - began:.0f} s")
    began = time.perf_counter()
    fitted = run([*CLI, "phases", "--fit", "model.json", "--store", str(store)], folder)
    if fitted.returncode != 0:
        raise SystemExit(f"{name}: phases --fit failed: {fitted.stderr.strip()}")
    log(fitted.stdout.strip())
    fit_s = time.perf_counter() - began
    model = json.loads((folder / "model.json").read_text())
    plan = []
    for n, kind in enumerate(KINDS):
        chunk = testing[n * 2 * per_kind:(n + 1) * 2 * per_kind]
        plan += [(record, kind, m % 2 == 1) for m, record in enumerate(chunk)]
    random.Random(seed + 1).shuffle(plan)
    results = []
    for m, (record, kind, anomalous) in enumerate(plan):
        outcome = check_run(folder, name, record, kind if anomalous else None, folder / "checks.db")
        outcome["group"] = kind
        results.append(outcome)
        if m % 20 == 19:
            log(f"{name}: {m + 1}/{len(plan)} checks")
    busy = hog(1) if loaded else []
    try:
        for record in inputs[needed - loaded:]:
            outcome = check_run(folder, name, record, None, folder / "checks.db")
            outcome["group"] = "loaded"
            results.append(outcome)
    finally:
        for process in busy:
            process.kill()
            process.wait()
    return {"program": name, "fit_output": fitted.stdout, "fit_s": fit_s, "evaluation": model["evaluation"],
            "epoch_s": model["epoch_s"],
            "phases": {label: phase["name"] for label, phase in model["phases"].items()},
            "training_runs": model["training"]["runs"], "results": results}


def rates(results: list[dict], kind: str, key: str) -> tuple[str, str]:
    """FPR and FNR of one detector (``anomalous`` or ``baseline``) on one kind's runs."""
    rows = [r for r in results if r["group"] == kind and "error" not in r]
    normal = [r for r in rows if r["kind"] is None]
    anomalous = [r for r in rows if r["kind"] is not None]
    fp = sum(r[key] for r in normal)
    fn = sum(not r[key] for r in anomalous)
    return (f"{fp / len(normal):.2f} ({fp}/{len(normal)})" if normal else "-",
            f"{fn / len(anomalous):.2f} ({fn}/{len(anomalous)})" if anomalous else "-")


def _first_departure(result: dict) -> str:
    """The verdict's first departure as "phase metric" ("phase own time" for a function's own time), in the
    check's order (the phases' resources first, then by |z|)."""
    departing = [c for c in result.get("comparisons", []) if c[5]]
    if not departing:
        return result["top"].split(" (")[0] if result.get("top") else "-"
    first = min(departing, key=lambda c: (c[6] == "own-time", -abs(c[4]) if c[4] is not None else -1e9))
    return f"{first[0]} own time" if first[6] == "own-time" else f"{first[0]} {first[1]}"


def table(outcomes: list[dict]) -> list[str]:
    lines = ["| program | anomaly | phase-aware FPR | phase-aware FNR | whole-run FPR | whole-run FNR | "
             "most frequent first departure |", "|---|---|---|---|---|---|---|"]
    for outcome in outcomes:
        for kind in KINDS:
            fpr, fnr = rates(outcome["results"], kind, "anomalous")
            bfpr, bfnr = rates(outcome["results"], kind, "baseline")
            tops = [_first_departure(r) for r in outcome["results"]
                    if r["group"] == kind and r["kind"] is not None and r.get("anomalous")]
            common = max(set(tops), key=tops.count) if tops else "-"
            lines.append(f"| {outcome['program']} | {kind} | {fpr} | {fnr} | {bfpr} | {bfnr} | "
                         f"{common} ({tops.count(common) if tops else 0}/{len(tops)}) |")
    return lines


def _departs(row: list, k: float, epoch_s: float) -> bool:
    """The check's rule (mantispy.phases.anomaly, default floors) at another k, on a stored comparison."""
    import math

    from mantispy.phases.anomaly import CheckOptions, Comparison

    phase, metric, actual, expected, z, departs, model, *rest = row
    function, total, run_change = (rest + ["", 0.0, None][len(rest):])[:3]
    comparison = Comparison(phase, "", metric, actual, expected, math.inf if z is None else z, departs, model,
                            function, total, run_change)
    return comparison.departs_at(CheckOptions(k=k), epoch_s)


def sweep(outcomes: list[dict], ks: tuple[float, ...] = (3.0, 4.0, 5.0)) -> list[str]:
    """FPR and FNR (all kinds together, and per kind) of both detectors at several k, on the same runs."""
    lines = ["| program | k | phase-aware FPR | phase-aware FNR | whole-run FPR | whole-run FNR | FNR per kind "
             "(phase-aware / whole-run) |", "|---|---|---|---|---|---|---|"]
    for outcome in outcomes:
        rows = [r for r in outcome["results"] if "comparisons" in r and r["group"] != "loaded"]
        if not rows:
            continue
        for k in ks:
            cells = []
            for key in ("comparisons", "baseline_comparisons"):
                flagged = [any(_departs(c, k, outcome.get("epoch_s", 0.1)) for c in r[key]) for r in rows]
                normal = [f for f, r in zip(flagged, rows) if r["kind"] is None]
                anomalous = [f for f, r in zip(flagged, rows) if r["kind"] is not None]
                cells += [f"{sum(normal) / len(normal):.2f}", f"{1 - sum(anomalous) / len(anomalous):.2f}"]
            per_kind = []
            for kind in KINDS:
                of_kind = [r for r in rows if r["kind"] == kind]
                if of_kind:
                    misses = [sum(not any(_departs(c, k, outcome.get("epoch_s", 0.1)) for c in r[key]) for r in of_kind)
                              for key in ("comparisons", "baseline_comparisons")]
                    per_kind.append(f"{kind} {misses[0]}/{misses[1]} of {len(of_kind)}")
            lines.append(f"| {outcome['program']} | {k:g} | {' | '.join(cells)} | {'; '.join(per_kind)} |")
    return lines


def loaded_table(outcomes: list[dict]) -> list[str]:
    """Normal runs checked beside a busy process (``--loaded``): how many each detector flagged, and why."""
    lines = ["| program | normal runs beside a busy process | phase-aware: flagged | whole-run: flagged | "
             "first departures of the flagged |", "|---|---|---|---|---|"]
    for outcome in outcomes:
        rows = [r for r in outcome["results"] if r["group"] == "loaded" and "error" not in r]
        if rows:
            tops = [r["top"].split(" (")[0] for r in rows if r["anomalous"] and r.get("top")]  # the verdict's first
            lines.append(f"| {outcome['program']} | {len(rows)} | {sum(r['anomalous'] for r in rows)} | "
                         f"{sum(r['baseline'] for r in rows)} | {', '.join(sorted(set(tops))) or '-'} |")
    return lines if len(lines) > 2 else []


def accuracy(outcomes: list[dict]) -> list[str]:
    lines = ["| program | phase | runs' phase name | held-out median error: duration / CPU time / CPU use / peak RSS |",
             "|---|---|---|---|"]
    for outcome in outcomes:
        errors = outcome["evaluation"].get("phases", {})
        for label, name in outcome["phases"].items():
            cells = " / ".join(f"{errors.get(label, {}).get(m, {}).get('median_rel_error', float('nan')):.1%}"
                               for m in ("wall_s", "cpu_s", "cpu_percent", "peak_rss_bytes"))
            lines.append(f"| {outcome['program']} | {label} | {name[:70]} | {cells} |")
    lines.append("")
    for outcome in outcomes:
        total = outcome["evaluation"].get("total_wall_s")
        if total:
            lines.append(f"- {outcome['program']}: run duration on {total['n']} held-out run(s), median error: sum of "
                         f"the phases' models {total['sum_of_phases']:.1%}, whole-run model {total['whole_run']:.1%} "
                         f"({outcome['training_runs']} training runs; fit {outcome['fit_s']:.0f} s).")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--programs", default="sqlparse,pycparser")
    parser.add_argument("--train", type=int, default=40)
    parser.add_argument("--per-kind", type=int, default=25)
    parser.add_argument("--seed", type=int, default=21)
    parser.add_argument("--sampler", choices=("builtin", "signal"), default="builtin",
                        help="The built-in sampler's trigger for training and check runs (profile --sampler).")
    parser.add_argument("--loaded", type=int, default=0,
                        help="Also check this many more unseen inputs as normal runs beside one busy process.")
    parser.add_argument("--work", type=Path, default=HERE / "work" / "phases")
    parser.add_argument("--no-write", action="store_true", help="Print the section; leave RESULTS.md as it is.")
    parser.add_argument("--from-results", action="store_true",
                        help="Write the section again from the work folder's results.json (no runs).")
    args = parser.parse_args()
    started = time.perf_counter()
    outcomes = []
    if args.from_results:
        outcomes = json.loads((args.work / "results.json").read_text(encoding="utf-8"))
    for name in [] if args.from_results else args.programs.split(","):
        outcomes.append(program(name, args.work, args.train, args.per_kind, args.seed, lambda m: print(m, flush=True),
                                args.sampler, args.loaded))
        (args.work / "results.json").write_text(json.dumps(outcomes, indent=1), encoding="utf-8")
    errors = [r for o in outcomes for r in o["results"] if "error" in r]
    elapsed = (time.perf_counter() - started) / 60 if not args.from_results else outcomes[0].get("minutes", 0.0)
    if not args.from_results and outcomes:
        outcomes[0]["minutes"] = elapsed
        outcomes[0]["settings"] = {"programs": args.programs, "train": args.train, "per_kind": args.per_kind,
                                   "seed": args.seed, "sampler": args.sampler, "loaded": args.loaded}
        (args.work / "results.json").write_text(json.dumps(outcomes, indent=1), encoding="utf-8")
    elif outcomes:  # the command that made the results, not this one's defaults
        for name, value in outcomes[0].get("settings", {}).items():
            setattr(args, name, value)
    lines = [
        f"Command: `python benchmarks/bench_phases.py --programs {args.programs} --train {args.train} --per-kind "
        f"{args.per_kind} --seed {args.seed}{'' if args.sampler == 'builtin' else ' --sampler ' + args.sampler}"
        f"{f' --loaded {args.loaded}' if args.loaded else ''}` "
        f"({elapsed:.0f} min). Suite workloads in mode `all`; {args.train} training inputs profiled "
        "with `profile --sample` (100 Hz, resources every 0.1 s); per anomaly kind, "
        f"{args.per_kind} normal and {args.per_kind} anomalous runs of unseen inputs, shuffled, each through "
        "`mantispy check --json` with its defaults (k = 4 robust spreads, and at least 10 % and 2 epochs / 16 MiB / "
        "10 CPU points; a function's own time: k spreads above the line its training runs' own seconds fit against "
        "their runs' own time, and 5 % of the run and an epoch's samples above that line plus the largest training "
        "residual; a value below its estimate departs only for CPU use: a run that took less time, CPU time, memory "
        "or IO than expected is no anomaly). Anomalies (see the script): CPU hog = one busy process per core; memory balloon = 128 MiB "
        "from 0.2 s on; IO stall = 0.5 s before each open of the input file; slowed phase = 0.3 s of CPU before each "
        "call of one function of one phase. Whole-run baseline = the same rule on the run's totals (duration, CPU "
        "time, CPU use, peak RSS) against whole-run models of the input descriptors.",
        "",
        "### Anomaly detection",
        "",
        *table(outcomes),
        "",
        "Goal: FPR <= 0.02 and FNR <= 0.05 per kind.",
        "",
        "The same runs judged at other thresholds k (the check's rule recomputed from each verdict's comparisons; "
        "FPR over all normal runs, FNR over all anomalous ones):",
        "",
        *sweep(outcomes),
        *([f"{len(errors)} check(s) failed and are left out: {errors[0]['error']}"] if errors else []),
        *(["", "Normal runs of unseen inputs checked beside one busy process (`--loaded`):", "",
           *loaded_table(outcomes)] if loaded_table(outcomes) else []),
        "",
        "### Per-phase models on held-out inputs",
        "",
        *accuracy(outcomes),
    ]
    publish("bench_phases", "Phases: per-phase models and anomaly detection (issue 21)", lines, not args.no_write)


if __name__ == "__main__":
    main()
