"""The bytecode backend against the source backend and coverage.py's sys.monitoring core (issue 24).

    python benchmarks/bench_monitor.py [--programs sqlparse,markdown,mistune,pycparser,whoosh,networkx]
                                       [--versions 3.12,3.13] [--inputs 2] [--repeats 3] [--write]

For each suite program (benchmarks/suite, prepared into benchmarks/work/monitor) and each interpreter
(pyenv's 3.12 / 3.13, in a virtual environment of their own with coverage.py installed from PyPI):

* equality: per input, the counts of ``mantispy run --backend monitor`` against the instrumented copy's
  loop, branch, call and handler counters (``instrument --only loops,branches,calls,exceptions``), and
  the full instrumentation's counters (else arms derived from other counts where they can be)
  against a build with a probe on every arm (``--probe-every-arm``); any difference makes the run exit 1;
* overhead: CPU time (the child's rusage) of the original program, the source backend's full
  instrumentation (values included, as ``mantispy profile`` runs it), the same with a probe on every
  else arm (``--probe-every-arm``), the source backend's counters alone, the bytecode backend, and
  ``coverage run --branch`` with ``COVERAGE_CORE=sysmon``; every variant's bytecode cached first (one
  warm-up run each), then all variants of all inputs interleaved and shuffled (seeded), repeated; medians
  of per-input ratios to the original's median, and the noise floor (median absolute relative deviation
  of the original's repeats); and the share of all counts that no probe took (derived).

With --write the table is appended to benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
WORK = HERE / "work" / "monitor"
sys.path.insert(0, str(HERE.parent))

from benchmarks.suite.prepare import prepare  # noqa: E402
from mantispy.monitoring.launch import MonitoredLaunch  # noqa: E402
from mantispy.standalone_runtime import standalone_runtime_dir  # noqa: E402
from tests.test_python_versions import interpreter  # noqa: E402

MANTISPY = [sys.executable, "-m", "mantispy"]


def venv_with_coverage(version: str) -> str:
    """A virtual environment of pyenv's ``version`` with coverage.py (made once)."""
    base = interpreter(version)
    if base is None:
        raise SystemExit(f"no CPython {version} under pyenv")
    venv = WORK / f"venv-{version}"
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([base, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", "coverage>=7.4"], check=True)
    return str(python)


def cpu_of(argv: list[str], env: dict[str, str], cwd: Path) -> float:
    """The child's user + system CPU seconds (it must succeed)."""
    proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{argv[:3]} failed: {proc.stderr.read().decode()[-500:] if proc.stderr else ''}")
    return usage.ru_utime + usage.ru_stime


def inputs_of(folder: Path, count: int) -> list[list[str]]:
    spec = importlib.util.spec_from_file_location(f"inputs_{folder.name}", folder / "inputs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(folder))
    cwd = os.getcwd()
    os.chdir(folder)
    try:
        spec.loader.exec_module(module)
        records = list(module.generate(count=max(count, 2), seed=5))
    finally:
        os.chdir(cwd)
        sys.path.remove(str(folder))
    return [r["argv"] for r in records[:count]]


def instrumented(folder: Path, name: str, only: str | None, *extra: str) -> Path:
    """The instrumented copy ``folder/name`` of the program, made again when the instrumentor changed."""
    out = folder / name
    manifest = out / ".mantis" / "manifest.json"
    tool = HERE.parent / "instrument"
    newest = max(p.stat().st_mtime for p in [*tool.glob("*.py"), *(HERE.parent / "runtime").glob("*.py")])
    if not manifest.exists() or manifest.stat().st_mtime < newest:
        options = [*(["--only", only] if only else []), *extra]
        subprocess.run([*MANTISPY, "instrument", str(folder / "app"), "-o", str(out), "--skip-errors", "--force",
                        *options], check=True, capture_output=True)
    return out


def counts(path: Path) -> dict[str, int]:
    return {k: v for k, v in json.loads(path.read_text()).items() if ":value:" not in k}


def bench(program: str, version: str, n_inputs: int, repeats: int, seed: int) -> dict:
    folder = WORK / program
    if not (folder / "app").exists():
        prepare(program, WORK, count=4, seed=5)
    python = venv_with_coverage(version)
    full = instrumented(folder, "instrumented-full", None)
    every_arm = instrumented(folder, "instrumented-full-every-arm", None, "--probe-every-arm")
    counters = instrumented(folder, "instrumented-counters", "loops,branches,calls,exceptions")
    runtime = standalone_runtime_dir(WORK / "pyroot")
    scratch = WORK / "scratch"
    scratch.mkdir(exist_ok=True)
    base_env = {**os.environ, "PYTHONHASHSEED": "0"}
    base_env.pop("PYTHONPATH", None)
    base_env.pop("MANTIS_ROOT_PID", None)
    # Every variant runs with its bytecode cached, as campaigns run (their env lets Python write it): with
    # PYTHONDONTWRITEBYTECODE inherited, each run would compile the program (networkx: 0.4 s) and the
    # larger instrumented copy, and the ratios would weigh compilation.
    base_env.pop("PYTHONDONTWRITEBYTECODE", None)
    argvs = inputs_of(folder, n_inputs)
    no_probe = set(json.loads((full / ".mantis" / "manifest.json").read_text()).get("derived", {}))
    equality = []
    with MonitoredLaunch(folder / "app", scratch / "monitor.json", python) as launch:
        monitor_env = {**{k: v for k, v in launch.env.items() if k != "PYTHONDONTWRITEBYTECODE"}, "PYTHONHASHSEED": "0"}
        for argv in argvs:
            source_env = {**base_env, "PYTHONPATH": os.pathsep.join([str(counters), str(runtime)]),
                          "MANTIS_FEATURES_OUT": str(scratch / "source.json")}
            cpu_of([python, str(counters / "workload.py"), *argv], source_env, folder)
            cpu_of([python, str(folder / "app" / "workload.py"), *argv], monitor_env, folder)
            a, b = counts(scratch / "source.json"), counts(scratch / "monitor.json")
            differ = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
            # The counts derived from others (no probe) against a build that probes every arm.
            for build, out in ((full, "full.json"), (every_arm, "every.json")):
                cpu_of([python, str(build / "workload.py"), *argv],
                       {**base_env, "PYTHONPATH": os.pathsep.join([str(build), str(runtime)]),
                        "MANTIS_FEATURES_OUT": str(scratch / out)}, folder)
            c, d = counts(scratch / "full.json"), counts(scratch / "every.json")
            derived = sorted(k for k in set(c) | set(d) if c.get(k) != d.get(k))
            equality.append({"counters": len(a), "differ": len(differ), "examples": differ[:5],
                             "probed": len(d), "derived_differ": len(derived), "derived_examples": derived[:5],
                             "counts": sum(c.values()), "derived_counts": sum(c.get(k, 0) for k in no_probe)})
        variants = {
            "original": ([python, str(folder / "app" / "workload.py")], base_env),
            "source (full)": ([python, str(full / "workload.py")],
                              {**base_env, "PYTHONPATH": os.pathsep.join([str(full), str(runtime)]),
                               "MANTIS_FEATURES_OUT": str(scratch / "full.json")}),
            "source (full, every arm)": ([python, str(every_arm / "workload.py")],
                                         {**base_env, "PYTHONPATH": os.pathsep.join([str(every_arm), str(runtime)]),
                                          "MANTIS_FEATURES_OUT": str(scratch / "every.json")}),
            "source (counts)": ([python, str(counters / "workload.py")],
                                {**base_env, "PYTHONPATH": os.pathsep.join([str(counters), str(runtime)]),
                                 "MANTIS_FEATURES_OUT": str(scratch / "counts.json")}),
            "monitor": ([python, str(folder / "app" / "workload.py")], monitor_env),
            "coverage sysmon": ([python, "-m", "coverage", "run", "--branch", "--data-file", str(scratch / "cov"),
                                 str(folder / "app" / "workload.py")], {**base_env, "COVERAGE_CORE": "sysmon"}),
        }
        for argv, env in variants.values():  # warm-up: write each variant's bytecode cache
            cpu_of([*argv, *argvs[0]], env, folder)
        plan = [(v, i) for v in variants for i in range(len(argvs)) for _ in range(repeats)]
        random.Random(seed).shuffle(plan)
        times: dict[tuple[str, int], list[float]] = {}
        for variant, i in plan:
            argv, env = variants[variant]
            times.setdefault((variant, i), []).append(cpu_of([*argv, *argvs[i]], env, folder))
    ratios = {}
    for variant in variants:
        per_input = [statistics.median(times[(variant, i)]) / statistics.median(times[("original", i)])
                     for i in range(len(argvs))]
        ratios[variant] = statistics.median(per_input)
    noise = statistics.median(abs(t / statistics.median(ts) - 1) for i in range(len(argvs))
                              for ts in [times[("original", i)]] for t in ts)
    original_s = statistics.median(statistics.median(times[("original", i)]) for i in range(len(argvs)))
    return {"program": program, "version": version, "inputs": len(argvs), "repeats": repeats, "ratios": ratios,
            "noise": noise, "original_cpu_s": original_s, "equality": equality}


def table(rows: list[dict]) -> str:
    lines = ["| program | Python | inputs x repeats | original CPU s | source (full) | source (full, every arm) "
             "| source (counts) | monitor | coverage sysmon | noise floor | counters equal | derived = probed "
             "| counts derived |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        q = r["ratios"]
        equal = sum(e["counters"] - e["differ"] for e in r["equality"])
        total = sum(e["counters"] for e in r["equality"])
        probed = sum(e.get("probed", 0) - e.get("derived_differ", 0) for e in r["equality"])
        probed_total = sum(e.get("probed", 0) for e in r["equality"])
        share = sum(e.get("derived_counts", 0) for e in r["equality"]) / max(1, sum(e.get("counts", 0) for e in r["equality"]))
        lines.append(f"| {r['program']} | {r['version']} | {r['inputs']} x {r['repeats']} | {r['original_cpu_s']:.2f} "
                     f"| {q['source (full)']:.2f}x | {q['source (full, every arm)']:.2f}x | {q['source (counts)']:.2f}x "
                     f"| {q['monitor']:.2f}x | {q['coverage sysmon']:.2f}x "
                     f"| {r['noise']:.1%} | {equal}/{total} | {probed}/{probed_total} | {share:.0%} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--programs", default="sqlparse,markdown,mistune,pycparser,whoosh,networkx")
    parser.add_argument("--versions", default="3.12,3.13")
    parser.add_argument("--inputs", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--write", action="store_true", help="append the table to benchmarks/RESULTS.md")
    args = parser.parse_args(argv)
    WORK.mkdir(parents=True, exist_ok=True)
    rows = []
    started = time.time()
    for program in args.programs.split(","):
        for version in args.versions.split(","):
            row = bench(program, version, args.inputs, args.repeats, args.seed)
            rows.append(row)
            print(table([row]).splitlines()[-1], flush=True)
            for e in row["equality"]:
                if e["differ"]:
                    print("   differ:", e["examples"], flush=True)
                if e.get("derived_differ"):
                    print("   derived differ from probed:", e["derived_examples"], flush=True)
    text = table(rows)
    print(text)
    print(f"({time.time() - started:.0f} s)")
    (WORK / "results.json").write_text(json.dumps(rows, indent=1))
    if args.write:
        with open(HERE / "RESULTS.md", "a", encoding="utf-8") as handle:
            handle.write("\n" + text + "\n")
    unequal = [r for r in rows if any(e["differ"] or e.get("derived_differ") for e in r["equality"])]
    if unequal:  # the suite programs' equality check: a difference fails the run (make bench-monitor, exit 1)
        print("counts differ: " + ", ".join(f"{r['program']} under {r['version']}" for r in unequal), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
