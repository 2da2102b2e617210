"""Program dependence graphs: control dependence (post-dominance frontiers) plus data dependence.

Control dependence is computed on the CFG with an edge entry -> exit (so top-level statements depend
on entry) and with ``raise-exit`` joined to ``exit``. By default exceptional edges that only leave the
unit are ignored for control dependence (WALA's NO_EXCEPTIONAL_EDGES), otherwise every statement after
a call would depend on that call not raising; exceptional edges into the unit's own handlers are kept,
so what a handler does depends on the statements that may raise into it. Vertices that cannot reach
the exit (an endless loop) get an edge to it, the usual fix.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

import networkx as nx

from .cfg import build_cfg, collect_units, iter_units
from .dataflow import Access, Location, Scopes, Unsupported, accesses, data_dependences
from .ir import CFG, CodeUnit


@dataclass(eq=False)
class PDG:
    """Dependences of one unit: ``graph`` edges (a -> b: b depends on a) with kind "data" or "control"."""

    cfg: CFG
    graph: nx.MultiDiGraph
    access: dict[int, Access]

    def dependences_of(self, vid: int) -> list[tuple[int, str, object]]:
        """(vertex, kind, label) pairs that ``vid`` depends on directly."""
        return [(a, d["kind"], d.get("label")) for a, _, d in self.graph.in_edges(vid, data=True)]

    def to_dot(self) -> str:
        """Graphviz text: solid data edges labelled with the location, dashed control edges."""
        lines = [f'digraph "pdg {self.cfg.unit.qualname}" {{', "  node [shape=box, fontname=monospace];"]
        for v in self.cfg.vertices.values():
            if v.kind in ("exit", "raise-exit"):
                continue
            where = f"{v.span[0]}: " if v.span else ""
            lines.append(f'  n{v.id} [label="{_escape(where + v.label)}"];')
        for a, b, d in self.graph.edges(data=True):
            if d["kind"] == "data":
                loc = d["label"]
                text = loc[-1] if loc[0] != "attr" else "." + loc[1]
                lines.append(f'  n{a} -> n{b} [label="{_escape(str(text))}"];')
            else:
                lines.append(f'  n{a} -> n{b} [style=dashed, label="{d["label"]}"];')
        lines.append("}")
        return "\n".join(lines)


def control_dependences(cfg: CFG, exceptional: bool = False) -> list[tuple[int, int, str]]:
    """(controlling vertex, dependent vertex, edge kind taken) pairs."""
    graph = nx.DiGraph()
    graph.add_nodes_from(cfg.graph.nodes)
    for a, b, d in cfg.graph.edges(data=True):
        if d["kind"] == "exception" and b == cfg.raise_exit.id and not exceptional:
            continue
        graph.add_edge(a, b, kind=d["kind"])
    exit_id = cfg.exit.id
    graph.add_edge(cfg.raise_exit.id, exit_id, kind="normal")
    graph.add_edge(cfg.entry.id, exit_id, kind="false")
    reaches = nx.ancestors(graph, exit_id) | {exit_id}
    for v in list(graph.nodes):
        if v not in reaches:
            graph.add_edge(v, exit_id, kind="false")
    reverse = graph.reverse(copy=True)
    ipdom = nx.immediate_dominators(reverse, exit_id)
    edges = []
    for a, b, d in graph.edges(data=True):
        if a == exit_id or ipdom.get(a) == b:
            continue
        # every vertex on the post-dominator tree path from b up to (not including) ipdom(a)
        runner = b
        stop = ipdom.get(a)
        seen = set()
        while runner is not None and runner != stop and runner not in seen:
            seen.add(runner)
            if runner not in (exit_id,):
                edges.append((a, runner, d["kind"]))
            if runner == ipdom.get(runner):
                break
            runner = ipdom.get(runner)
    return sorted(set(edges))


def build_pdg(cfg: CFG, scopes: Scopes, exceptional: bool = False) -> PDG:
    """The PDG of one unit."""
    access = accesses(cfg, scopes)
    graph = nx.MultiDiGraph()
    graph.add_nodes_from(cfg.graph.nodes)
    for a, b, kind in control_dependences(cfg, exceptional):
        graph.add_edge(a, b, kind="control", label=kind)
    for a, b, loc in data_dependences(cfg, access):
        graph.add_edge(a, b, kind="data", label=loc)
    return PDG(cfg, graph, access)


@dataclass
class ModuleGraphs:
    """Units, CFGs and PDGs of one module, and what the analysis could not model in it."""

    root: CodeUnit
    cfgs: dict[str, CFG]
    pdgs: dict[str, PDG]
    scopes: Scopes
    unsupported: list[Unsupported]


def analyse_module(source: str, file: str, tree: ast.Module | None = None, exceptional: bool = False) -> ModuleGraphs:
    """CFG and PDG of every unit of a module."""
    tree = tree if tree is not None else ast.parse(source, file)
    root = collect_units(tree, file)
    scopes = Scopes(source, file, root)
    cfgs, pdgs = {}, {}
    notes: set[Unsupported] = set()
    for unit in iter_units(root):
        cfg = build_cfg(unit)
        cfgs[unit.qualname] = cfg
        pdgs[unit.qualname] = build_pdg(cfg, scopes, exceptional)
        for access in pdgs[unit.qualname].access.values():
            notes.update(Unsupported(file, line, col, what) for line, col, what in access.unsupported)
    return ModuleGraphs(root, cfgs, pdgs, scopes, sorted(notes, key=lambda n: (n.line, n.col)))


def _escape(text: str) -> str:
    text = text if len(text) <= 60 else text[:57] + "..."
    return text.replace("\\", "\\\\").replace('"', '\\"')


__all__ = ["PDG", "ModuleGraphs", "analyse_module", "build_pdg", "control_dependences", "Location"]
