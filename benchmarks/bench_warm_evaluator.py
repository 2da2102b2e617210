"""Benchmark: what one warm evaluation costs, with and without the server's warm-up (issue 8).

A predictor keeps its evaluator warm: a server that imported the program's modules once forks a child
per input. The child used to rebuild the standard library's lazy state every time (argparse translates
each message through gettext, whose first lookups are slow) and its garbage collections touched the
inherited objects. The server now fills that state and freezes its objects (``gc.freeze``) before its
first fork (slicer/kit/evaluate.py, ``_warm_standard_library``).

This emits the evaluator of one cheap feature of the suite's mistune workload (the ``--repeat`` loop:
its slice is the argument parsing), makes a copy whose server skips the warm-up, and times round trips
of the two, interleaved, on the same input. Writes its section of benchmarks/RESULTS.md.

    .venv/bin/python benchmarks/bench_warm_evaluator.py [--rounds 60]
"""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE / "suite"))
from results import machine_fingerprint, write_section  # noqa: E402

from mantispy.slicer.evaluators import SliceSession  # noqa: E402
from mantispy.slicer.warm_client import WarmEvaluator  # noqa: E402

FEATURE = "workload.py:main:loop:2"
WARM_UP = "    _warm_standard_library()\n"
FREEZE = "    gc.freeze()"


def without_warm_up(evaluator: Path, copy: Path) -> None:
    """A copy of an emitted evaluator whose server forks without warming up first."""
    shutil.copytree(evaluator, copy)
    script = (copy / "evaluate.py").read_text()
    if WARM_UP not in script or FREEZE not in script:
        raise SystemExit("the emitted evaluate.py has no warm-up to remove: update this benchmark")
    (copy / "evaluate.py").write_text(script.replace(WARM_UP, "").replace(FREEZE, "    pass"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=60, help="round trips per evaluator")
    args = parser.parse_args()
    if importlib.util.find_spec("mistune") is None:
        raise SystemExit("mistune is not installed: make bench installs it (pip install -e '.[bench]')")
    from prepare import prepare

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        spec = prepare("mistune", work, count=3)
        generator = importlib.util.spec_from_file_location("_mistune_inputs", spec.parent / "inputs.py")
        module = importlib.util.module_from_spec(generator)
        generator.loader.exec_module(module)
        records = list(module.generate(count=3, out_dir=str(work / "inputs")))
        argv = records[0]["argv"]
        root = spec.parent / "app"
        session = SliceSession(root, "workload.py")
        warm_dir, cold_dir = work / "with-warm-up", work / "without"
        session.emit(FEATURE, warm_dir)
        without_warm_up(warm_dir, cold_dir)
        with_times, without_times = [], []
        with WarmEvaluator(str(warm_dir)) as warm, WarmEvaluator(str(cold_dir)) as plain:
            warm.start()
            plain.start()
            first = warm.evaluate(argv, cwd=str(root))[0]
            if first != plain.evaluate(argv, cwd=str(root))[0]:
                raise SystemExit("the two evaluators disagree")
            for _ in range(args.rounds):
                with_times.append(warm.evaluate(argv, cwd=str(root))[1])
                without_times.append(plain.evaluate(argv, cwd=str(root))[1])
    med_with, med_without = statistics.median(with_times), statistics.median(without_times)
    lines = [
        f"Evaluator of `{FEATURE}` of the suite's mistune workload (its slice: the argument parsing), "
        f"input `{' '.join(Path(a).name if '/' in a else a for a in argv)}`; {args.rounds} round trips of each server, interleaved "
        "(request written, child forked, reply read).",
        "",
        "| server | median ms | min ms |",
        "| --- | ---: | ---: |",
        f"| warmed up (gettext/argparse state, gc.freeze) before forking | {med_with * 1000:.2f} | {min(with_times) * 1000:.2f} |",
        f"| forks cold | {med_without * 1000:.2f} | {min(without_times) * 1000:.2f} |",
        "",
        f"Ratio cold / warmed up: {med_without / med_with:.2f}. The suite's mistune runs last 0.15–0.16 s (median), "
        "so its 5 % evaluator budget is 7.5–8 ms.",
    ]
    print("\n".join(lines))
    write_section("bench_warm_evaluator", "Warm evaluator round trip (issue 8)", machine_fingerprint(), lines)


if __name__ == "__main__":
    main()
