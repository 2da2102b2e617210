"""Benchmark of per-function counter profiles (issue 22): what reading counters at chosen functions costs.

    python benchmarks/bench_counters.py [--repeats 5]

The suite's workloads (sqlparse, Markdown, pycparser from PyPI, generated inputs) run plain and under
``python -m mantispy.runtime.function_counters`` with two choices of functions: *few* (a handful of
functions called hundreds of times, as AutoPerf annotates the functions a change touched) and *hot* (a
function called 10^4-10^6 times); the hot choice also with every call measured and, on 3.12, through
``sys.monitoring``. Beside the overhead, how close the sampled runs' estimated CPU time of the hot choice
comes to the every-call runs' measured one (the ratio of medians; a test checks the estimate's arithmetic on a
deterministic clock, this is the same on the machine's). Each on the project's Python 3.11 and, where pyenv has it, on 3.12 (the packages are
imported from 3.11's site-packages, they are pure Python).
Runs are interleaved in a shuffled order (seed 22), ``--repeats`` times each; CPU = user+sys of the
child, medians; the noise floor is the median absolute relative deviation of the plain repeats.

Writes the ``bench_counters`` section of RESULTS.md.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from results import machine_fingerprint, write_section  # noqa: E402

from mantispy.standalone_runtime import standalone_runtime_dir  # noqa: E402
from tests.test_python_versions import interpreter  # noqa: E402

WORKLOADS = {
    "sqlparse": (["sqlparse_format.py", "--size", "400", "--seed", "1"],
                 {"few": "*/sqlparse/engine/grouping.py:group,*/sqlparse/__init__.py:format",
                  "hot": "*/sqlparse/lexer.py:*"}),
    "markdown": (["markdown_render.py", "--size", "60", "--seed", "1"],
                 {"few": "*/markdown/core.py:Markdown.convert,*/markdown/blockparser.py:BlockParser.parseDocument",
                  "hot": "*/markdown/inlinepatterns.py:Pattern.getCompiledRegExp"}),
    "pycparser": (["pycparser_parse.py", "--size", "25", "--seed", "1"],
                  {"few": "*/pycparser/c_parser.py:CParser.parse,*/pycparser/c_lexer.py:CLexer.input",
                   "hot": "*/pycparser/c_lexer.py:CLexer.token"}),
}


def child_cpu(argv: list[str], env: dict[str, str]) -> float:
    """User+sys CPU seconds of one run of ``argv`` (the workloads' folder is its working directory)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, cwd=HERE / "workloads", env=env, check=True, stdout=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


VARIANTS = {
    "few": ("few", {}),
    "hot": ("hot", {}),
    "hot, every call": ("hot", {"MANTIS_FUNCTION_COUNTERS_BUDGET": "0"}),
    "hot, sys.monitoring": ("hot", {"MANTIS_FUNCTION_COUNTERS_HOOK": "monitoring"}),
}
"""Profiled variants: (choice of functions, settings); the defaults are probes and a 0.5 % budget."""


def plan(runtime: Path, out: Path) -> dict[str, tuple[list[str], dict[str, str]]]:
    """Variant name -> (interpreter prefix, environment) for each interpreter and choice of functions."""
    pythons = {"3.11": (sys.executable, {})}
    newer = interpreter("3.12")
    if newer is not None:
        site = sysconfig.get_paths()["purelib"]
        pythons["3.12"] = (newer, {"PYTHONPATH": f"{runtime}{os.pathsep}{site}"})
    found = {}
    for version, (python, extra) in pythons.items():
        found[f"{version} plain"] = ([python], extra)
        for variant, (choice, settings) in VARIANTS.items():
            if "MANTIS_FUNCTION_COUNTERS_HOOK" in settings and version == "3.11":
                continue
            found[f"{version} {variant}"] = ([python, "-m", "mantispy.runtime.function_counters"],
                                             {**extra, **settings, "MANTIS_FUNCTION_COUNTERS_OUT": str(out),
                                              "CHOICE": choice})
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="mantis-bench-counters-") as tmp:
        runtime = standalone_runtime_dir(Path(tmp) / "runtime")
        variants = plan(runtime, Path(tmp) / "profile.json")
        order = [(name, variant) for name in WORKLOADS for variant in variants for _ in range(args.repeats)]
        random.Random(22).shuffle(order)
        cpu: dict[tuple[str, str], list[float]] = {}
        calls: dict[tuple[str, str], tuple[int, int]] = {}
        estimated: dict[tuple[str, str], list[float]] = {}  # the profile's total thread CPU time per run
        for n, (name, variant) in enumerate(order, 1):
            argv, patterns = WORKLOADS[name]
            prefix, extra = variants[variant]
            env = {**os.environ, **{k: v for k, v in extra.items() if k != "CHOICE"}}
            if "CHOICE" in extra:
                env["MANTIS_FUNCTION_COUNTERS"] = patterns[extra["CHOICE"]]
            seconds = child_cpu([*prefix, *argv], env)
            cpu.setdefault((name, variant), []).append(seconds)
            if "CHOICE" in extra:
                import json

                profile = json.loads(Path(extra["MANTIS_FUNCTION_COUNTERS_OUT"]).read_text())
                calls[(name, variant)] = (sum(f["calls"] for f in profile["functions"].values()),
                                          sum(f["measured_calls"] for f in profile["functions"].values()))
                estimated.setdefault((name, variant), []).append(
                    sum(f["totals"]["thread.cpu_ns"] for f in profile["functions"].values()) / 1e9)
            print(f"[{n}/{len(order)}] {name} {variant}: cpu {seconds:.2f} s", flush=True)
    versions = sorted({v.split()[0] for v in variants})
    lines = [
        f"Command: `python benchmarks/bench_counters.py --repeats {args.repeats}` "
        f"({(time.perf_counter() - started) / 60:.1f} min). {args.repeats} interleaved repeats per program and "
        "variant, shuffled (seed 22); medians of the child's user+sys CPU time, as a change against the plain "
        "run on the same interpreter. *few*: a handful of functions called hundreds of times; *hot*: one "
        "function (sqlparse: one module's) called 10^4-10^6 times. Counters read at a measured call's entry and "
        "exit: the software page-fault and context-switch events (no PMU here) and the thread's CPU time. "
        "Default settings: probes added to the chosen functions as their modules are imported, every call "
        "counted, the first 100 calls of each function measured and then as many as keep measuring it under "
        "0.5 % of the CPU time; *every call*: budget 0 (every call measured, as before sampling); "
        "*sys.monitoring*: the 3.12+ event hook with the default sampling. Cells: CPU change, then calls "
        "counted / calls measured. *hot estimate / every call*: the median over repeats of the hot functions' "
        "total CPU time as the sampled profile estimates it, against the median the every-call profile "
        "measures (the repeats' spread of the every-call total in brackets).",
        "",
        "| program | Python | plain CPU s (noise floor) | " + " | ".join(VARIANTS) + " | hot estimate / every call |",
        "| --- | --- | ---: | " + " | ".join("---:" for _ in VARIANTS) + " | ---: |",
    ]
    for name in WORKLOADS:
        for version in versions:
            plain = cpu[(name, f"{version} plain")]
            base = statistics.median(plain)
            noise = statistics.median(abs(v - base) / base for v in plain)
            cells = []
            for variant in VARIANTS:
                key = (name, f"{version} {variant}")
                if key not in cpu:
                    cells.append("-")
                    continue
                counted, measured = calls.get(key, (0, 0))
                cells.append(f"{statistics.median(cpu[key]) / base - 1:+.1%} ({counted:,} / {measured:,})")
            every = estimated.get((name, f"{version} hot, every call"), [])
            sampled = estimated.get((name, f"{version} hot"), [])
            if every and sampled:
                middle = statistics.median(every)
                spread = statistics.median(abs(v - middle) / middle for v in every)
                cells.append(f"{statistics.median(sampled) / middle:.2f} ({spread:.1%})")
            else:
                cells.append("-")
            lines.append(f"| {name} | {version} | {base:.2f} ({noise:.1%}) | " + " | ".join(cells) + " |")
    lines += ["", "Goal (issue 22, for the profiles `diagnose` will use): profiling overhead at most 4 %."]
    print("\n".join(lines))
    write_section("bench_counters", "Per-function counter profiles: overhead (issue 22)", machine_fingerprint(), lines)


if __name__ == "__main__":
    main()
