"""Hybrid slicing (issue 6): statements kept by static against hybrid slices, and hybrid fidelity on
held-out inputs, on minisearch and on sqlparse (the installed package copied next to its workload).

For each program: the training inputs run the original source under the call recorder
(``python -m mantispy.runtime.observed_calls``); a static and a hybrid SliceSession slice a sample of
counter features spread over the program (``--features``); :func:`validate_hybrid` runs every hybrid
evaluator that differs from the static one on the held-out inputs; the static evaluators run on the
same inputs for comparison.

    .venv/bin/python benchmarks/bench_hybrid.py [--features 20] [--only minisearch|sqlparse] [-o out.json]
                                                [--record-python ~/.pyenv/versions/3.12.1/bin/python3]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mantispy.runtime import observed_calls as recorder
from mantispy.runtime.standalone import standalone_runtime_dir
from mantispy.slicer.evaluators import SliceSession, check_fidelity
from mantispy.slicer.hybrid import hybrid_session, validate_hybrid

REPO = Path(__file__).resolve().parent.parent

PROGRAMS = {
    "minisearch": {
        "entry": "search.py",
        "train": [["--docs", "150", "--query", "data"], ["--docs", "200", "--query", "ab*", "--fuzzy", "1"],
                  ["--docs", "120", "--query", '"search engine" OR lock', "--no-highlight"],
                  ["--docs", "100", "--query", "index AND NOT lock", "--mode", "boolean"]],
        "held_out": [["--docs", "180", "--query", "search"], ["--docs", "160", "--query", "eng*", "--hits", "5"],
                     ["--docs", "140", "--query", '"data index"', "--fuzzy", "1"],
                     ["--docs", "130", "--query", "lock OR data", "--mode", "boolean", "--no-highlight"]],
    },
    "sqlparse": {
        "entry": "work.py",
        "train": [["2", "1"], ["5", "2", "r"], ["3", "4"], ["4", "7", "r"]],
        "held_out": [["6", "3"], ["3", "9", "r"], ["8", "11"], ["5", "13", "r"]],
    },
}


def source_of(name: str, tmp: Path) -> Path:
    if name == "minisearch":
        return REPO / "examples" / "minisearch"
    spec = importlib.util.find_spec("sqlparse")
    root = tmp / "sqlparse-prog"
    shutil.copytree(Path(spec.origin).parent, root / "sqlparse", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "examples" / "sqlparse_workload" / "work.py", root / "work.py")
    return root


def record(src: Path, entry: str, inputs: list[list[str]], out: Path, python: str) -> tuple[float, float]:
    """Run the training inputs under the recorder; returns (seconds plain, seconds recording)."""
    env = {**os.environ, recorder.ENV_OUT: str(out), recorder.ENV_ROOT: str(src)}
    if python != sys.executable:  # mantispy is not installed there: a standalone copy of the run-time
        env["PYTHONPATH"] = str(standalone_runtime_dir(out.parent / "runtime"))
    plain = recorded = 0.0
    for args in inputs:
        started = time.perf_counter()
        subprocess.run([python, entry, *args], cwd=src, check=True, capture_output=True)
        plain += time.perf_counter() - started
        started = time.perf_counter()
        subprocess.run([python, "-m", "mantispy.runtime.observed_calls", entry, *args], cwd=src, env=env,
                       check=True, capture_output=True)
        recorded += time.perf_counter() - started
    return plain, recorded


def all_counters(static, hybrid, counters: list[str]) -> list[tuple[str, int, int]]:
    """(feature, static kept, hybrid kept) of every counter that slices."""
    sizes = []
    for fid in counters:
        try:
            sizes.append((fid, static.slice(fid).statements_kept, hybrid.slice(fid).statements_kept))
        except Exception:  # noqa: BLE001 - a construct the slicer cannot find: left out of the counts
            continue
    return sizes


def bench(name: str, n_features: int, tmp: Path, python: str = sys.executable, largest: int = 0,
          unreached: str = "keep") -> dict:
    info = PROGRAMS[name]
    src = source_of(name, tmp)
    obs_file = tmp / f"{name}.calls.json"
    plain, recorded = record(src, info["entry"], info["train"], obs_file, python)
    observations = json.loads(obs_file.read_text())
    started = time.perf_counter()
    static = SliceSession(src, info["entry"])
    static_s = time.perf_counter() - started
    started = time.perf_counter()
    hybrid = hybrid_session(static, obs_file, unreached)
    hybrid_s = time.perf_counter() - started
    counters = [f for f, i in static.features.items() if i["kind"] in ("loop", "branch", "call", "exception")]
    step = len(counters) / n_features
    sample = [counters[int(i * step)] for i in range(n_features)]
    distribution = {}
    if largest:  # every counter's sizes; the largest reductions join the validated features
        started = time.perf_counter()
        sizes = all_counters(static, hybrid, counters)
        cut = sorted(sizes, key=lambda r: (r[2] - r[1]) / r[1] if r[1] else 0)
        picked = [r[0] for r in cut[:largest] if r[2] < r[1] and r[0] not in sample]
        sample += picked
        distribution = {
            "counters": len(sizes), "seconds": round(time.perf_counter() - started, 1),
            "median_static_kept": statistics.median(r[1] for r in sizes),
            "median_hybrid_kept": statistics.median(r[2] for r in sizes),
            "smaller": sum(r[2] < r[1] for r in sizes), "larger": sum(r[2] > r[1] for r in sizes),
            "smaller_by_10pct": sum(r[2] < 0.9 * r[1] for r in sizes),
            "smaller_by_half": sum(r[2] < 0.5 * r[1] for r in sizes),
            "largest_reductions": [list(r) for r in cut[:largest]],
            "validated_largest": picked,
        }
    started = time.perf_counter()
    verdicts = validate_hybrid(static, hybrid, src, sample, info["held_out"], cwd=src)
    validate_s = time.perf_counter() - started
    static_rows = {r.feature: r for r in check_fidelity(static, src, info["held_out"], sample, cwd=src)}
    rows = []
    for v in verdicts:
        s = static_rows[v.feature]
        rows.append({**v.to_dict(), "static_fidelity": s.fidelity, "static_reason": s.reason})
    ok = [r for r in rows if r["statements_total"] and r["feature"] in sample[:n_features]]
    changed = [r for r in ok if not r["same_slice"]]
    big = [r for r in rows if r["feature"] in distribution.get("validated_largest", [])]
    if big:
        distribution["largest_median_static_kept"] = statistics.median(r["static_kept"] for r in big)
        distribution["largest_median_hybrid_kept"] = statistics.median(r["hybrid_kept"] for r in big)
        distribution["largest_trusted"] = sum(r["trusted"] for r in big)
        distribution["largest_hybrid_fidelity_100"] = sum(r["hybrid_fidelity"] == 1.0 for r in big)
        distribution["largest_static_fidelity_100"] = sum(r["static_fidelity"] == 1.0 for r in big)
    result = {
        "program": name, "python": sys.version.split()[0], "unreached": unreached,
        "recorded_with": subprocess.run([python, "-c", "import sys; print(sys.version.split()[0])"], capture_output=True,
                                        text=True).stdout.strip(),
        "train_inputs": info["train"], "held_out_inputs": info["held_out"],
        "observed_pairs": len(observations["calls"]), "observed_units": len(observations["started"]),
        "unresolved_sites": len(static.callgraph.unresolved),
        "sites_resolved_dynamically": len(hybrid.sdg.observed_sites),
        "record_seconds": {"plain": round(plain, 2), "recording": round(recorded, 2)},
        "build_seconds": {"static": round(static_s, 1), "hybrid_sdg": round(hybrid_s, 1), "validate": round(validate_s, 1)},
        "features": len(ok), "statements_total": ok[0]["statements_total"] if ok else 0,
        "median_static_kept": statistics.median(r["static_kept"] for r in ok) if ok else None,
        "median_hybrid_kept": statistics.median(r["hybrid_kept"] for r in ok) if ok else None,
        "median_used_kept": statistics.median(r["hybrid_kept"] if r["use"] == "hybrid" else r["static_kept"] for r in ok) if ok else None,
        "hybrid_smaller": sum(r["hybrid_kept"] < r["static_kept"] for r in ok),
        "hybrid_larger": sum(r["hybrid_kept"] > r["static_kept"] for r in ok),
        "same_slice": sum(r["same_slice"] for r in ok),
        "changed_validated": len(changed),
        "changed_trusted": sum(r["trusted"] for r in changed),
        "changed_hybrid_fidelity_100": sum(r["hybrid_fidelity"] == 1.0 for r in changed),
        "static_fidelity_100": sum(r["static_fidelity"] == 1.0 for r in ok),
        "all_counters": distribution,
        "rows": rows,
    }
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--features", type=int, default=20)
    parser.add_argument("--only", choices=sorted(PROGRAMS))
    parser.add_argument("-o", "--out", type=Path, default=None)
    parser.add_argument("--largest", type=int, default=0,
                        help="Also slice every counter, and validate this many with the largest reductions")
    parser.add_argument("--unreached", choices=("keep", "drop"), default="keep",
                        help="Unresolved sites that never ran in a unit that did: keep the name fallback or drop it")
    parser.add_argument("--record-python", default=sys.executable,
                        help="Interpreter the training runs are recorded with (e.g. a 3.12 one: sys.monitoring)")
    args = parser.parse_args()
    results = []
    with tempfile.TemporaryDirectory(prefix="mantis-bench-hybrid-") as tmp:
        for name in ([args.only] if args.only else list(PROGRAMS)):
            result = bench(name, args.features, Path(tmp), args.record_python, args.largest, args.unreached)
            results.append(result)
            summary = {k: v for k, v in result.items() if k != "rows"}
            print(json.dumps(summary, indent=1))
            for row in result["rows"]:
                print(f"  {row['feature']}: static {row['static_kept']} ({row['static_fidelity']:.0%}), hybrid "
                      f"{row['hybrid_kept']} ({'same' if row['same_slice'] else format(row['hybrid_fidelity'] or 0, '.0%')}), "
                      f"use {row['use']}; {row['reason'] if not row['same_slice'] else ''}")
            sys.stdout.flush()
    if args.out:
        args.out.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
