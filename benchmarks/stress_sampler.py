"""Does the stack sampler crash the program it samples? A stress test, per Python version.

    python benchmarks/stress_sampler.py                        # 3.11 (this venv), 3.12 and 3.13 (pyenv)
    python benchmarks/stress_sampler.py --runs 8 --seconds 4 --switch 0.00002   # a program that switches often

Each run is a fresh interpreter that starts mantispy's sampler (runtime/sampler.py, loaded from the file,
as ``mantispy record``'s bootstrap loads it) at 1,000 samples a second, lowers the switch interval further
(``--switch``, default Python's 5 ms; the 3.12 sampler lowers it to 1 ms unless it is lower already), sets the collector
to run every few allocations and then, for ``--seconds``, builds and drops deep call chains of small
reference cycles (constructors, list comprehensions, generators, lambdas): collections start inside frames
that are being set up or torn down, and finalizers (``__del__``) run Python code inside them, while the
sampler walks every thread's frames. A run that dies of a signal is a crash. Variants: ``shipped`` is the sampler as it is (garbage collections timed through
``gc.callbacks`` and a 1 ms switch interval from Python 3.12); ``gc-timed`` forces that behaviour on any
version (so on 3.11 it shows why it is off there). Variants, versions and collector thresholds are interleaved. Writes the ``stress_sampler``
section of RESULTS.md.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import itertools
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SAMPLER = HERE.parent / "runtime" / "sampler.py"
VARIANTS = ("shipped", "gc-timed")


def child(variant: str, threshold: int, seconds: float, switch: float) -> None:
    """One stressed run (in its own interpreter)."""
    spec = importlib.util.spec_from_file_location("mantis_sampler_under_stress", SAMPLER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if variant == "gc-timed":  # the Python timing callback (and the lower switch interval) on any version
        module.GC_SAFE = True
    sampler = module.Sampler(tempfile.mkdtemp(prefix="mantis-stress-"), 1000.0, "cpu")
    sampler.start()
    if switch < sys.getswitchinterval():  # never above what the sampler chose
        sys.setswitchinterval(switch)
    gc.set_threshold(threshold, 2, 2)

    class Node:
        def __init__(self, kids):
            self.kids = kids
            self.me = self

    class Finalized(Node):
        def __del__(self):  # Python code run inside the collection that frees the cycle
            pass

    def produce(count):
        for _ in range(count):
            yield Finalized([Node([]) for _ in range(3)])

    def descend(depth):
        if depth == 0:
            return sum(1 for _ in produce(20))
        pair = [Node([]) for _ in range(2)]
        return descend(depth - 1) + len(pair) + (lambda value: value)(1)

    end = time.monotonic() + seconds
    total = 0
    while time.monotonic() < end:
        total += descend(40)
    sampler.stop()
    print(total)


def interpreter(version: str) -> str | None:
    """This interpreter for its own version, else pyenv's newest of that version."""
    if version == f"{sys.version_info.major}.{sys.version_info.minor}":
        return sys.executable
    root = Path.home() / ".pyenv" / "versions"
    found = sorted(root.glob(f"{version}.*/bin/python3")) if root.is_dir() else []
    return str(found[-1]) if found else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20, help="runs per version and variant")
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--switch", type=float, default=0.005, help="switch interval during a run (s; 0.005 is Python's default)")
    parser.add_argument("--versions", default="3.11,3.12,3.13")
    parser.add_argument("--child", nargs=4, metavar=("VARIANT", "THRESHOLD", "SECONDS", "SWITCH"), help=argparse.SUPPRESS)
    parser.add_argument("--no-write", action="store_true", help="print the table only")
    args = parser.parse_args()
    if args.child:
        variant, threshold, seconds, switch = args.child
        child(variant, int(threshold), float(seconds), float(switch))
        return
    pythons = {v: interpreter(v) for v in args.versions.split(",")}
    crashes = {(v, k): [] for v in pythons for k in VARIANTS}
    thresholds = itertools.cycle((5, 15, 25, 35, 45, 55, 65))
    started = time.perf_counter()
    for _ in range(args.runs):
        for version, python in pythons.items():
            if python is None:
                continue
            for variant in VARIANTS:
                command = [python, "-X", "faulthandler", __file__, "--child", variant, str(next(thresholds)),
                           str(args.seconds), str(args.switch)]
                done = subprocess.run(command, capture_output=True, text=True, timeout=args.seconds * 20 + 60)
                crashes[(version, variant)].append(done.returncode)
                if done.returncode != 0:
                    print(f"{version} {variant}: exit {done.returncode}: {done.stderr.strip().splitlines()[:1]}", flush=True)
    lines = [f"Command: `python benchmarks/stress_sampler.py --runs {args.runs} --seconds {args.seconds:g} "
             f"--switch {args.switch:g}` ({(time.perf_counter() - started) / 60:.0f} min). Runs that died "
             "of a signal (negative exit status) out of all runs, per Python version and sampler variant.", "",
             "| Python | variant | runs | crashed | exit statuses seen |", "|---|---|---:|---:|---|"]
    for (version, variant), codes in crashes.items():
        if pythons[version] is None:
            lines.append(f"| {version} | {variant} | 0 | - | no interpreter |")
            continue
        crashed = sum(1 for c in codes if c < 0)
        lines.append(f"| {version} | {variant} | {len(codes)} | {crashed} | {', '.join(str(c) for c in sorted(set(codes)))} |")
    print("\n".join(lines))
    if not args.no_write:
        sys.path.insert(0, str(HERE))
        from results import machine_fingerprint, write_section

        write_section("stress_sampler", "Does the sampler crash the sampled program? (issue 21)",
                      machine_fingerprint(), lines)


if __name__ == "__main__":
    main()
