"""One package's whole-program analysis, phase by phase, for benchmarks/bench_slicer.py (run as a child so
that its peak memory is its own).

    python benchmarks/slicer_phases.py ROOT [--sdg] [--entry SCRIPT]

Prints one JSON line after each phase (so that a parent that stops a slow run still knows how far it got):
parse, CFG + PDG of every code unit, the same again from the per-file cache, the call graph; with
``--sdg`` also the system dependence graph with its summary edges (of the modules ``--entry`` imports, or
of every module) and every feature of the instrumentor's manifest sliced, each distinct slice once.
"""

from __future__ import annotations

import argparse
import json
import resource
import time
from pathlib import Path


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _emit(row: dict) -> None:
    print(json.dumps(dict(row, peak_mib=_peak_mib())), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path)
    parser.add_argument("--sdg", action="store_true", help="also the SDG with summary edges and every feature sliced")
    parser.add_argument("--entry", help="the entry script (relative to ROOT): the call graph and SDG cover what it imports")
    args = parser.parse_args()

    from mantispy.slicer.callgraph import build_call_graph
    from mantispy.slicer.lookup import graphs_for
    from mantispy.slicer.program import Program

    row: dict = {"phase": "parse"}
    started = time.perf_counter()
    program = Program.load(args.root)
    row.update(parse_s=time.perf_counter() - started, files=len(program.files), problems=len(program.problems),
               lines=sum(s.source.count("\n") for s in program.files))
    _emit(row)
    started = time.perf_counter()
    units = vertices = edges = 0
    for source in program.files:
        graphs = graphs_for(source)
        units += len(graphs.cfgs)
        vertices += sum(len(c.vertices) for c in graphs.cfgs.values())
        edges += sum(p.graph.number_of_edges() for p in graphs.pdgs.values())
    row.update(phase="pdg", pdg_s=time.perf_counter() - started, units=units, vertices=vertices, pdg_edges=edges)
    started = time.perf_counter()
    for source in program.files:
        graphs_for(source)
    row.update(cached_s=time.perf_counter() - started)
    _emit(row)
    started = time.perf_counter()
    callgraph = build_call_graph(program, args.entry)
    row.update(phase="callgraph", callgraph_s=time.perf_counter() - started, unresolved=len(callgraph.unresolved),
               functions=len(callgraph.to_pycg()))
    _emit(row)
    if not args.sdg:
        return

    from mantispy.slicer.evaluators import features_of
    from mantispy.slicer.sdg import build_sdg
    from mantispy.slicer.slicing import iter_feature_slices

    started = time.perf_counter()
    sdg = build_sdg(program, callgraph)
    row.update(phase="sdg", sdg_s=time.perf_counter() - started, sdg_nodes=sdg.graph.number_of_nodes(),
               sdg_edges=sdg.graph.number_of_edges(), summary_edges=sdg.summary_count)
    _emit(row)
    features = {f["id"]: f for f in features_of(program)}
    started = time.perf_counter()
    distinct = 0
    for _ids, _facts in iter_feature_slices(sdg, features, lambda _f, _why: None):
        distinct += 1
    row.update(phase="sliced", slice_all_s=time.perf_counter() - started, features=len(features), distinct_slices=distinct)
    _emit(row)


if __name__ == "__main__":
    main()
