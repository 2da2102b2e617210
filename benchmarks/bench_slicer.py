"""Benchmark: building CFGs, PDGs, the call graph and the SDG of real third-party packages (issues 5, 18).

Each package's wheel is downloaded from PyPI (pip download, no install) and unpacked into
benchmarks/work/src/; each analysis runs in a fresh child process (benchmarks/slicer_phases.py) so its
peak memory is its own, sampled by this process every half second as well. Phases: parse (Program.load),
CFG + PDG of every code unit of every file, call graph (astroid), a second CFG + PDG pass that hits the
per-file cache (keyed by content hash); with ``--sdg`` (the default) the SDG with its summary edges and
every feature sliced, under a time limit per package. Writes its section of benchmarks/RESULTS.md; rows
are kept per package in benchmarks/work/bench_slicer.json, so packages can be rerun one at a time.

    .venv/bin/python benchmarks/bench_slicer.py [--packages jinja2==3.1.6 pyparsing==3.3.3] [--limit 900] [--no-sdg]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import psutil

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from results import machine_fingerprint, write_section  # noqa: E402

WORK = HERE / "work" / "src"
DEFAULT = ["jinja2==3.1.6", "pyparsing==3.3.3", "docutils==0.23", "whoosh==2.7.4"]
DRIVERS = {  # the entry script of each package's SDG: what a build of a program using the package analyses
    "jinja2": HERE / "slicer_drivers" / "drive_jinja2.py",
    "pyparsing": HERE / "slicer_drivers" / "drive_pyparsing.py",
    "docutils": HERE / "slicer_drivers" / "drive_docutils.py",
    "whoosh": HERE / "suite" / "whoosh" / "workload.py",
}
ROWS = HERE / "work" / "bench_slicer.json"
GOAL_S, GOAL_MIB = 120, 6 * 1024  # issue 18: SDG + summary edges + every feature sliced



def fetch(spec: str) -> Path:
    """Unpack the package's wheel; return the folder of its top-level package."""
    name = spec.split("==")[0]
    target = WORK / name
    if not target.exists():
        download = WORK / "wheels"
        download.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(download), spec], check=True)
        wheel = next(p for p in download.glob("*.whl") if p.name.lower().startswith(name.lower().replace("-", "_")))
        with zipfile.ZipFile(wheel) as z:
            z.extractall(WORK / f"{name}-wheel")
        (WORK / f"{name}-wheel" / name).rename(target)
    return target


def with_driver(package: Path, driver: Path) -> Path:
    """A program folder holding the package and its driver as ``main.py`` (made once)."""
    app = package.parent / f"{package.name}-app"
    if not (app / package.name).exists():
        app.mkdir(parents=True, exist_ok=True)
        shutil.copytree(package, app / package.name)
    shutil.copyfile(driver, app / "main.py")
    return app


def analyse(root: Path, sdg: bool, limit: float, entry: str | None = None) -> dict:
    """Run the phases child on ``root`` (with ``entry``, the SDG of what that script imports); the last
    phase it reached, with its peak RSS (MiB, the most of the child's own figure and this process's
    samples) and whether it ran out of time."""
    command = [sys.executable, str(HERE / "slicer_phases.py"), str(root), *(["--sdg"] if sdg else []),
               *(["--entry", entry] if entry else [])]
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    watched = psutil.Process(child.pid)
    started, peak, timed_out = time.monotonic(), 0.0, False
    while child.poll() is None:
        try:
            peak = max(peak, watched.memory_info().rss / 2**20)
        except psutil.Error:
            pass
        if time.monotonic() - started > limit:
            child.kill()
            timed_out = True
            break
        time.sleep(0.5)
    out, err = child.communicate()
    rows = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    if not rows:
        print(err[-2000:], file=sys.stderr)
        raise SystemExit(f"analysis of {root} failed before its first phase")
    if child.returncode not in (0, None) and not timed_out:
        print(err[-2000:], file=sys.stderr)
    last = rows[-1]
    last.update(peak_mib=max(peak, last["peak_mib"]), timed_out=timed_out, limit_s=limit,
                elapsed_s=time.monotonic() - started)
    return last


def _stored() -> dict:
    return json.loads(ROWS.read_text()) if ROWS.exists() else {}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packages", nargs="+", default=DEFAULT)
    parser.add_argument("--no-sdg", action="store_true", help="only the per-file graphs and the call graph")
    parser.add_argument("--limit", type=float, default=900.0, help="seconds per package before it is stopped")
    parser.add_argument("--render-only", action="store_true", help="write the section from the stored rows")
    parser.add_argument("--whole", action="store_true", help="analyse every module with no entry script (no driver)")
    args = parser.parse_args()
    stored = _stored()
    for spec in [] if args.render_only else args.packages:
        package = fetch(spec)
        driver = None if args.whole else DRIVERS.get(package.name)
        root = with_driver(package, driver) if driver else package
        data = analyse(root, not args.no_sdg, args.limit, "main.py" if driver else None)
        data.update(package=spec, entry=driver.name if driver else None)
        stored[spec if driver else f"{spec} (whole)"] = data
        ROWS.parent.mkdir(parents=True, exist_ok=True)
        ROWS.write_text(json.dumps(stored, indent=1) + "\n")
        print(json.dumps(data), flush=True)
    order = [*DEFAULT, *(f"{spec} (whole)" for spec in DEFAULT)]
    rows = [stored[k] for k in sorted(stored, key=lambda k: order.index(k) if k in order else len(order))]
    lines = [
        "Whole-program analysis of unpacked PyPI wheels, each in a fresh process (peak = its max RSS).",
        "",
        "| package | files | lines | code units | CFG vertices | PDG edges | parse s | CFG+PDG s | cached again s | call graph s | total s | functions | unresolved call sites |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        if "callgraph_s" not in r:
            continue
        total = r["parse_s"] + r["pdg_s"] + r["callgraph_s"]
        lines.append(
            f"| {r['package']} | {r['files']} | {r['lines']} | {r['units']} | {r['vertices']} | {r['pdg_edges']} | "
            f"{r['parse_s']:.1f} | {r['pdg_s']:.1f} | {r['cached_s']:.2f} | {r['callgraph_s']:.1f} | {total:.1f} | "
            f"{r['functions']} | {r['unresolved']} |"
        )
    lines += ["", "Target: 20 kLOC in well under 30 s. The cache is per process, keyed by each file's content hash.", "",
              f"SDG scale (issue 18's goal: SDG + summary edges + every feature sliced in <= {GOAL_S} s and "
              f"<= {GOAL_MIB // 1024} GB peak). Each package with a driver script as its entry (benchmarks/slicer_drivers/; "
              "Whoosh's is the suite's workload), as a build of a program using it analyses it: the SDG covers "
              "the modules the entry imports; each run stopped after its time limit. The goal is judged on SDG + summary edges s plus slicing all s, and the peak; "
              "\"analysis s\" is the child's whole run (parse, graphs, call graph, the manifest's features, SDG, "
              "slices); peak is its largest resident size.", "",
              "| package | lines | SDG + summary edges s | SDG vertices | SDG edges | summary edges | features | slicing all s (distinct slices) | analysis s | peak MiB | goal |",
              "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    for r in rows:
        if "sdg_s" not in r and not r.get("timed_out"):
            continue
        if "sdg_s" in r:
            sdg = f"{r['sdg_s']:.1f} | {r['sdg_nodes']:,} | {r['sdg_edges']:,} | {r['summary_edges']:,}"
        else:
            sdg = f"not finished in {r['limit_s']:.0f} s | | |"
        sliced = (f"{r['features']:,} | {r['slice_all_s']:.1f} ({r['distinct_slices']:,})" if "slice_all_s" in r
                  else "| not reached" if "sdg_s" not in r else f"| not finished in {r['limit_s']:.0f} s")
        met = "slice_all_s" in r and r["sdg_s"] + r["slice_all_s"] <= GOAL_S and r["peak_mib"] <= GOAL_MIB
        lines.append(f"| {r['package']}{'' if r.get('entry') else ' (whole, no entry)'} | {r['lines']} | {sdg} | {sliced} | {r['elapsed_s']:.0f} | "
                     f"{r['peak_mib']:.0f} | {'met' if met else 'NOT met'} |")
    write_section("bench_slicer", "Program representation speed (issues 5, 18)", machine_fingerprint(), lines)


if __name__ == "__main__":
    main()
