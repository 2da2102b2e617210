"""Benchmark mantispy's instrumentor on real third-party pure-Python packages.

    .venv/bin/python benchmarks/bench_instrument.py [--quick] [--packages markdown,sqlparse] [--write]

For each package (installed from PyPI into this interpreter's environment if missing):

1. copy its source folder out of site-packages into ``benchmarks/work/<pkg>/orig/<pkg>`` and time
   ``mantispy instrument`` on ``orig`` (lines of Python per second);
2. run a deterministic generated workload (``benchmarks/workloads/*.py``) against the original copy,
   the fully instrumented copy, and the original copy under ``coverage run --branch``; CPU time
   (user+sys of the child) is the best of N interleaved runs; report ratios to the original;
3. instrument again with ``--budget 0.05 --calibrate "<workload> --size S --seed 1"`` and measure
   the budget-mode copy the same way, on the calibration input and on a different one (seed 2,
   another size).

Every variant's output line (which carries a digest of the work's result) must equal the original's.
Results go to ``benchmarks/RESULTS.md`` between this script's markers (other sections are left alone)
and, raw, to ``benchmarks/work/bench_instrument.json``. See ``benchmarks/README.md``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.metadata
import json
import os
import platform
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
WORK = HERE / "work"
WORKLOADS = HERE / "workloads"
RESULTS = HERE / "RESULTS.md"
START, END = "<!-- bench_instrument:start -->", "<!-- bench_instrument:end -->"
BUDGET = 0.05
KINDS = ("loop", "branch", "call", "exception", "value")


@dataclass(frozen=True)
class Package:
    name: str  # import name = folder name in site-packages
    dist: str  # distribution name on PyPI
    pin: str  # version installed when missing
    workload: str  # file in benchmarks/workloads
    size: int  # calibration / main input size
    alt_size: int  # the other input's size (seed 2)


PACKAGES = [
    Package("markdown", "Markdown", "3.11.3", "markdown_render.py", size=60, alt_size=75),
    Package("sqlparse", "sqlparse", "0.6.1", "sqlparse_format.py", size=400, alt_size=500),
    Package("pycparser", "pycparser", "3.12", "pycparser_parse.py", size=25, alt_size=30),
]


@dataclass
class PackageResult:
    name: str
    version: str
    files: int = 0
    lines: int = 0
    instrument_s: float = 0.0
    features: dict[str, int] = field(default_factory=dict)
    nonzero_features: int = 0
    shifted_lines: int = 0
    invocation: str = ""
    alt_invocation: str = ""
    cpu: dict[str, float] = field(default_factory=dict)  # variant -> best CPU seconds
    runs: dict[str, list[float]] = field(default_factory=dict)
    budget_instrument_s: float = 0.0
    removed: int = 0
    active_sites: int = 0
    calibration: dict = field(default_factory=dict)
    output: str = ""


# ----------------------------------------------------------------------------- helpers
def log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def ensure_installed(pkg: Package) -> str:
    try:
        return importlib.metadata.version(pkg.dist)
    except importlib.metadata.PackageNotFoundError:
        pass
    log(f"installing {pkg.dist}=={pkg.pin} from PyPI")
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", f"{pkg.dist}=={pkg.pin}"], check=True)
    importlib.invalidate_caches()
    return importlib.metadata.version(pkg.dist)


def package_dir(pkg: Package) -> Path:
    """The package's folder in site-packages, found without importing it."""
    files = importlib.metadata.distribution(pkg.dist).files or []
    for f in files:
        parts = Path(str(f)).parts
        if len(parts) == 2 and parts[0] == pkg.name and parts[1] == "__init__.py":
            return Path(str(f.locate())).resolve().parent
    raise SystemExit(f"bench: cannot find the {pkg.name}/ folder of {pkg.dist}")


def base_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("MANTIS_", "COVERAGE_")) and k not in ("PYTHONPATH", "PYTHONSTARTUP")}
    env["PYTHONHASHSEED"] = "0"
    return env


def run_cpu(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, str]:
    """Run to completion; CPU seconds (user+sys of the child and its waited-for children) and stdout."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    if proc.returncode != 0:
        raise SystemExit(f"bench: {shlex.join(argv)} exited {proc.returncode}\n{stderr[-3000:]}")
    return usage.ru_utime + usage.ru_stime, stdout.strip()


def mantispy(*args: str, env: dict[str, str]) -> tuple[float, subprocess.CompletedProcess]:
    script = Path(sys.executable).with_name("mantispy")
    cli = [str(script)] if script.exists() else [sys.executable, "-m", "mantispy"]
    start = time.perf_counter()
    proc = subprocess.run([*cli, *args], env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"bench: mantispy {shlex.join(args)} failed ({proc.returncode})\n{proc.stdout}\n{proc.stderr}")
    return wall, proc


def python_lines(root: Path) -> tuple[int, int]:
    files = [p for p in root.rglob("*.py") if "__pycache__" not in p.parts]
    return len(files), sum(p.read_bytes().count(b"\n") for p in files)


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def version_of(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "missing"


def coverage_core() -> str:
    try:
        import coverage.tracer  # noqa: F401  (the C tracer extension)
    except ImportError:
        return "PyTracer"
    return "CTracer (sys.settrace, C)" if sys.version_info < (3, 12) else "default core"


def git_revision() -> str:
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO, capture_output=True, text=True).stdout.strip()
        return head + (" (+ uncommitted changes)" if dirty else "")
    except OSError:
        return "unknown"


# ----------------------------------------------------------------------------- one package
def bench_package(pkg: Package, repeats: int, scale: float) -> PackageResult:
    version = ensure_installed(pkg)
    res = PackageResult(pkg.name, version)
    env = base_env()
    work = WORK / pkg.name
    orig, full, budget = work / "orig", work / "full", work / "budget"
    if orig.exists():
        shutil.rmtree(orig)
    shutil.copytree(package_dir(pkg), orig / pkg.name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    res.files, res.lines = python_lines(orig)

    # 1. instrumentation speed (wall clock of the whole CLI, best of a few)
    times = []
    for _ in range(max(1, min(repeats, 3))):
        wall, proc = mantispy("instrument", str(orig), "-o", str(full), "--force", env=env)
        times.append(wall)
    res.instrument_s = min(times)
    manifest = json.loads((full / ".mantis" / "manifest.json").read_text())
    res.features = {kind: sum(1 for f in manifest["features"] if f["kind"] == kind) for kind in KINDS}
    res.shifted_lines = sum(f.get("shifted_lines", 0) for f in manifest["files"])
    bad = [f for f in manifest["files"] if f["status"] == "error"]
    if bad:
        log(f"{pkg.name}: {len(bad)} file(s) not instrumented: {[f['error'] for f in bad]}")
    log(f"{pkg.name} {version}: {res.lines} lines in {res.files} files instrumented in {res.instrument_s:.2f} s")

    script = WORKLOADS / pkg.workload
    size, alt_size = max(1, round(pkg.size * scale)), max(1, round(pkg.alt_size * scale))
    main_args = [str(script), "--size", str(size), "--seed", "1"]
    alt_args = [str(script), "--size", str(alt_size), "--seed", "2"]
    res.invocation = f"{pkg.workload} --size {size} --seed 1"
    res.alt_invocation = f"{pkg.workload} --size {alt_size} --seed 2"

    # 3a. budget-mode instrumentation (its calibration runs the main input)
    wall, proc = mantispy(
        "instrument", str(orig), "-o", str(budget), "--force", "--budget", str(BUDGET),
        "--calibrate", shlex.join(main_args), env=env,
    )
    res.budget_instrument_s = wall
    bmanifest = json.loads((budget / ".mantis" / "manifest.json").read_text())
    res.removed = len(bmanifest.get("removed", []))
    res.calibration = bmanifest.get("calibration") or {}
    rounds = res.calibration.get("rounds", [])
    res.active_sites = rounds[-1]["active_sites"] - rounds[-1].get("removed", 0) if rounds else 0
    log(f"{pkg.name}: budget mode built in {wall:.1f} s, {res.removed} sites removed, "
        f"mantispy's own calibration says {res.calibration.get('final_overhead', float('nan')):+.1%}")

    # 2 + 3b. timings, interleaved
    features_out = work / "features.json"
    cov_data = work / "coverage.data"

    def variant_env(root: Path, features: bool) -> dict[str, str]:
        e = dict(env, PYTHONPATH=str(root))
        if features:
            e["MANTIS_FEATURES_OUT"] = str(features_out)
        return e

    py = sys.executable
    variants: dict[str, tuple[list[str], dict[str, str]]] = {
        "original": ([py, *main_args], variant_env(orig, False)),
        "instrumented": ([py, *main_args], variant_env(full, True)),
        "coverage": ([py, "-m", "coverage", "run", "--branch", f"--include={orig / pkg.name}/*", *main_args],
                     dict(variant_env(orig, False), COVERAGE_FILE=str(cov_data))),
        "budget": ([py, *main_args], variant_env(budget, True)),
        "original@alt": ([py, *alt_args], variant_env(orig, False)),
        "budget@alt": ([py, *alt_args], variant_env(budget, True)),
    }
    # warm-up (writes .pyc files) and output check
    outputs = {}
    for name, (argv, venv) in variants.items():
        _, outputs[name] = run_cpu(argv, venv, work)
        if name == "instrumented":
            res.nonzero_features = len(json.loads(features_out.read_text())) if features_out.exists() else 0
    for name, out in outputs.items():
        ref = outputs["original@alt" if name.endswith("@alt") else "original"]
        if out != ref:
            raise SystemExit(f"bench: {pkg.name} {name} printed {out!r}, the original printed {ref!r}")
    if res.nonzero_features == 0:
        raise SystemExit(f"bench: the instrumented {pkg.name} run wrote no features")
    res.output = outputs["original"]
    res.runs = {name: [] for name in variants}
    for rep in range(repeats):
        for name, (argv, venv) in variants.items():
            cpu, _ = run_cpu(argv, venv, work)
            res.runs[name].append(cpu)
        log(f"{pkg.name}: round {rep + 1}/{repeats}: " + ", ".join(f"{n} {v[-1]:.2f}s" for n, v in res.runs.items()))
    res.cpu = {name: min(values) for name, values in res.runs.items()}
    return res


# ----------------------------------------------------------------------------- report
def ratio(res: PackageResult, variant: str, base: str = "original") -> float:
    return res.cpu[variant] / res.cpu[base]


def render(results: list[PackageResult], repeats: int, quick: bool, elapsed: float) -> str:
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    lines = [
        START,
        "## Instrumentation speed and run-time overhead (`benchmarks/bench_instrument.py`)",
        "",
        f"*Generated {dt.datetime.now().astimezone().strftime('%Y-%m-%d %H:%M %Z')} by "
        f"`benchmarks/bench_instrument.py{' --quick' if quick else ''}` in {elapsed / 60:.1f} min; "
        f"CPU time = user+sys of the child, best of {repeats} interleaved runs.*",
        "",
        f"- Machine: {cpu_model()}, {os.cpu_count()} logical CPUs ({affinity} usable), "
        f"{platform.system()} {platform.release()}",
        f"- Python {platform.python_version()} ({platform.python_implementation()}), mantispy {version_of('mantispy')} "
        f"at {git_revision()}, libcst {version_of('libcst')}, coverage {version_of('coverage')} [{coverage_core()}]",
        "- Packages: " + ", ".join(f"{r.name} {r.version}" for r in results),
        "",
        "| package | lines (files) | instrument s | lines/s | features loop/branch/call/except/value "
        "| original CPU s | instrumented × | coverage --branch × | budget × (same input) | budget × (other input) "
        "| sites removed by budget |",
        "|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        feats = "/".join(str(r.features.get(k, 0)) for k in KINDS)
        lines.append(
            f"| {r.name} {r.version} | {r.lines} ({r.files}) | {r.instrument_s:.2f} | {r.lines / r.instrument_s:,.0f} "
            f"| {feats} | {r.cpu['original']:.2f} | {ratio(r, 'instrumented'):.2f} | {ratio(r, 'coverage'):.2f} "
            f"| {ratio(r, 'budget'):.3f} | {ratio(r, 'budget@alt', 'original@alt'):.3f} "
            f"| {r.removed} of {r.removed + r.active_sites} |"
        )
    lines += ["", "Inputs and raw best CPU seconds:", ""]
    for r in results:
        cal = r.calibration
        lines.append(
            f"- **{r.name}**: same input `{r.invocation}` (also the `--calibrate` input), other input "
            f"`{r.alt_invocation}`. Best CPU s: " + ", ".join(f"{k} {v:.2f}" for k, v in r.cpu.items())
            + f". {r.nonzero_features} non-zero features in a fully instrumented run; "
            f"{r.shifted_lines} shifted line(s) reported by the manifest. Budget build took {r.budget_instrument_s:.0f} s "
            f"({len(cal.get('rounds', []))} calibration round(s); mantispy's own final estimate "
            f"{cal.get('final_overhead', float('nan')):+.1%}, met={cal.get('met')})."
        )
    lines += ["", "Targets:", ""]
    for r in results:
        full, cov = ratio(r, "instrumented"), ratio(r, "coverage")
        same, other = ratio(r, "budget") - 1, ratio(r, "budget@alt", "original@alt") - 1
        lines.append(
            f"- {r.name}: full instrumentation ≤ coverage.py branch mode: "
            f"**{'met' if full <= cov else 'NOT met'}** ({full:.2f}× vs {cov:.2f}×); budget mode ≤ {BUDGET:.0%}: "
            f"**{'met' if max(same, other) <= BUDGET else 'NOT met'}** ({same:+.1%} on the calibration input, "
            f"{other:+.1%} on the other input)."
        )
    lines += ["", END]
    return "\n".join(lines)


def write_results(section: str) -> None:
    text = RESULTS.read_text(encoding="utf-8") if RESULTS.exists() else "# Benchmark results\n"
    pattern = re.compile(re.escape(START) + r".*?" + re.escape(END), re.S)
    if pattern.search(text):
        text = pattern.sub(lambda _m: section, text)
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    RESULTS.write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 runs per variant and half-size inputs (does not write RESULTS.md unless --write)")
    parser.add_argument("--repeats", type=int, default=None, help="runs per variant (default 5, --quick 2)")
    parser.add_argument("--packages", default=",".join(p.name for p in PACKAGES), help="comma list (default: all)")
    parser.add_argument("--write", action="store_true", help="write RESULTS.md even with --quick")
    args = parser.parse_args()
    repeats = args.repeats or (2 if args.quick else 5)
    scale = 0.5 if args.quick else 1.0
    chosen = [p for p in PACKAGES if p.name in set(args.packages.split(","))]
    if not chosen:
        raise SystemExit(f"bench: no package among {args.packages!r}; choose from {[p.name for p in PACKAGES]}")
    WORK.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    results = [bench_package(p, repeats, scale) for p in chosen]
    elapsed = time.perf_counter() - start
    section = render(results, repeats, args.quick, elapsed)
    (WORK / "bench_instrument.json").write_text(json.dumps([asdict(r) for r in results], indent=1) + "\n")
    print(section)
    if not args.quick or args.write:
        write_results(section)
        log(f"wrote {RESULTS.relative_to(REPO)}")


if __name__ == "__main__":
    main()
