"""Benchmark: building CFGs, PDGs and the call graph of real third-party packages (issue 5).

Each package's wheel is downloaded from PyPI (pip download, no install) and unpacked into
benchmarks/work/src/; each analysis runs in a fresh child process so its peak memory is its own.
Phases: parse (Program.load), CFG + PDG of every code unit of every file, call graph (astroid), and a
second CFG + PDG pass that hits the per-file cache (keyed by content hash). Writes its section of
benchmarks/RESULTS.md.

    .venv/bin/python benchmarks/bench_slicer.py [--packages jinja2==3.1.6 pyparsing==3.3.3 docutils==0.23]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from results import machine_fingerprint, write_section  # noqa: E402

WORK = HERE / "work" / "src"
DEFAULT = ["jinja2==3.1.6", "pyparsing==3.3.3", "docutils==0.23"]

CHILD = r"""
import json, resource, sys, time
from mantispy.slicer.program import Program
from mantispy.slicer.lookup import graphs_for
from mantispy.slicer.callgraph import build_call_graph
root = sys.argv[1]
t = time.perf_counter(); program = Program.load(root); parse = time.perf_counter() - t
t = time.perf_counter()
units = vertices = edges = 0
for source in program.files:
    g = graphs_for(source)
    units += len(g.cfgs)
    vertices += sum(len(c.vertices) for c in g.cfgs.values())
    edges += sum(p.graph.number_of_edges() for p in g.pdgs.values())
pdg = time.perf_counter() - t
t = time.perf_counter()
for source in program.files:
    graphs_for(source)
cached = time.perf_counter() - t
t = time.perf_counter(); cg = build_call_graph(program, None); callgraph = time.perf_counter() - t
sites = len(cg.sites) if hasattr(cg, "sites") else None
print(json.dumps({"files": len(program.files), "problems": len(program.problems),
    "lines": sum(s.source.count("\n") for s in program.files), "units": units, "vertices": vertices,
    "pdg_edges": edges, "parse_s": parse, "pdg_s": pdg, "cached_s": cached, "callgraph_s": callgraph,
    "call_sites": sites, "unresolved": len(cg.unresolved), "functions": len(cg.to_pycg()),
    "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packages", nargs="+", default=DEFAULT)
    args = parser.parse_args()
    rows = []
    for spec in args.packages:
        root = fetch(spec)
        proc = subprocess.run([sys.executable, "-c", CHILD, str(root)], capture_output=True, text=True, timeout=1800)
        if proc.returncode != 0:
            print(proc.stderr[-2000:], file=sys.stderr)
            raise SystemExit(f"analysis of {spec} failed")
        data = json.loads(proc.stdout.strip().splitlines()[-1])
        data["package"] = spec
        rows.append(data)
        print(json.dumps(data))
    lines = [
        "Whole-program analysis of unpacked PyPI wheels, each in a fresh process (peak = its max RSS).",
        "",
        "| package | files | lines | code units | CFG vertices | PDG edges | parse s | CFG+PDG s | cached again s | call graph s | total s | functions | unresolved call sites | peak MiB |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        total = r["parse_s"] + r["pdg_s"] + r["callgraph_s"]
        lines.append(
            f"| {r['package']} | {r['files']} | {r['lines']} | {r['units']} | {r['vertices']} | {r['pdg_edges']} | "
            f"{r['parse_s']:.1f} | {r['pdg_s']:.1f} | {r['cached_s']:.2f} | {r['callgraph_s']:.1f} | {total:.1f} | "
            f"{r['functions']} | {r['unresolved']} | {r['peak_mib']:.0f} |"
        )
    lines += ["", "Target: 20 kLOC in well under 30 s. The cache is per process, keyed by each file's content hash."]
    write_section("bench_slicer", "Program representation speed (issue 5)", machine_fingerprint(), lines)


if __name__ == "__main__":
    main()
