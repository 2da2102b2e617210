"""Input generator for the networkx workload: graph parameter files (model, size, density, algorithms).

``generate(count, seed, out_dir)`` yields campaign input records ``{"id", "argv", "files"}``, one JSON
parameter file per input (written under ``out_dir``, relative to this file's folder unless absolute).
Inputs vary the graph model (random, preferential attachment, small world, power law with clustering,
community blocks, grids with holes, geometric, regular, trees with extra edges), its size and mean
degree, weights and direction, and above all the *algorithm mix* (paths, centrality, local structure,
communities, optimisation, or a mix) with each algorithm's own knobs (sources, samples, pairs,
tolerance, strategy, flow algorithm). The parameter file is a few hundred bytes whatever the work it
describes, so its size says almost nothing about the run time. A rough cost model (measured) keeps
every input's estimated work within a log-uniform budget. Deterministic for a seed; networkx is not
needed here.
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

from suite_files import input_folder, relative_path, write_if_changed

HERE = Path(__file__).resolve().parent

MODELS = ("gnp", "ba", "ws", "powerlaw", "sbm", "grid", "geometric", "regular", "tree")
MIXES = {
    "paths": ("bfs", "dijkstra", "astar", "closeness", "components"),
    "centrality": ("betweenness", "pagerank", "closeness", "bfs"),
    "structure": ("clustering", "triangles", "cores", "cliques", "bridges", "components"),
    "community": ("louvain", "label_propagation", "clustering", "components"),
    "optimization": ("mst", "coloring", "maxflow", "matching", "dag"),
}
MIXES["mixed"] = tuple(sorted({a for names in MIXES.values() for a in names}))

# Milliseconds on a graph of 1000 nodes and 3000 edges (measured on a 2-core VM): per source / sample /
# pair for the repeated algorithms, per call for the others; scaled by (n + m) / 4000 (by (n / 1000)**2 for
# matching and the costly colorings).
UNIT_MS = {"bfs": 0.5, "dijkstra": 1.7, "astar": 1.0, "closeness": 1.5, "betweenness": 3.0, "maxflow": 45.0,
           "components": 1.0, "pagerank": 100.0, "clustering": 15.0, "triangles": 3.5, "cores": 10.0,
           "cliques": 7.0, "bridges": 45.0, "louvain": 150.0, "label_propagation": 35.0, "mst": 18.0,
           "coloring": 2.5, "dag": 16.0}
PER_ITEM = {"bfs": "sources", "dijkstra": "sources", "closeness": "sources", "astar": "pairs", "betweenness": "k",
            "maxflow": "pairs"}


def _edges(model: str, n: int, degree: float) -> float:
    return {"grid": 2.0 * n, "tree": n * 1.2}.get(model, n * degree / 2)


def _algorithm(rng: random.Random, name: str, n: int, m: float, directed: bool, weighted: bool,
               share_ms: float) -> dict | None:
    """The algorithm with knobs that spend about ``share_ms``; None when it cannot fit."""
    scale = (n + m) / 4000  # traversals touch every node and edge
    quad = (n / 1000) ** 2
    algo: dict = {"name": name}
    if name in PER_ITEM:
        each = UNIT_MS[name] * scale
        if name == "closeness":  # reverses a directed graph per call; Dijkstra on a weighted one
            each *= (8 if directed else 1) * (2.5 if weighted else 1)
        algo[PER_ITEM[name]] = max(1, min(n, 300 if name != "maxflow" else 20, int(share_ms / each)))
        if name == "maxflow":
            algo["flow_func"] = rng.choice(("preflow_push", "edmonds_karp", "shortest_augmenting_path"))
        return algo
    if name == "matching":  # blossom algorithm
        return algo if 900 * quad * max(1.0, scale) ** 0.6 <= share_ms * 1.2 else None
    if name == "coloring":
        strategy = rng.choice(("largest_first", "smallest_last", "independent_set", "connected_sequential_bfs",
                               "saturation_largest_first", "random_sequential"))
        cost = {"independent_set": 1300 * quad, "saturation_largest_first": 550 * quad}.get(strategy, 5 * scale)
        if cost > share_ms * 1.2:
            strategy = "largest_first"
        algo["strategy"] = strategy
        return algo
    if name == "pagerank":
        algo["tol"] = rng.choice((1e-4, 1e-6, 1e-8))
        algo["alpha"] = rng.choice((0.5, 0.85, 0.95))
        # power iterations grow like log(1/tol) / log(1/alpha); the unit cost is for tol 1e-6, alpha 0.85
        iterations = math.log(1 / algo["tol"]) / -math.log(algo["alpha"]) / 85
        return algo if UNIT_MS[name] * scale * iterations <= share_ms * 1.2 else None
    if name == "louvain":
        algo["resolution"] = rng.choice((0.5, 1.0, 2.0))
    elif name == "mst":
        algo["algorithm"] = rng.choice(("kruskal", "prim", "boruvka"))
    elif name == "cliques":
        algo["limit"] = rng.choice((1000, 100000))
    elif name == "dag":
        algo["reduce"] = rng.random() < 0.4 and n <= 2000
    return algo if UNIT_MS.get(name, 10) * scale * (3 if algo.get("reduce") else 1) <= share_ms * 1.2 else None


def _params(rng: random.Random) -> dict:
    model = rng.choice(MODELS)
    n = rng.choice((200, 500, 1000, 2000, 4000))
    degree = rng.choice((3, 4, 6, 10, 16))
    if model == "geometric":
        n = min(n, 2000)
    params: dict = {}
    if model == "ws":
        params["p"] = rng.choice((0.01, 0.1, 0.5))
    elif model == "powerlaw":
        params["p"] = rng.choice((0.0, 0.3, 0.9))
    elif model == "sbm":
        params.update(blocks=rng.choice((2, 4, 10, 25)), mix=rng.choice((0.02, 0.1, 0.4)))
    elif model == "grid":
        params["holes"] = rng.choice((0.0, 0.1, 0.3))
    elif model == "tree":
        params["extra"] = rng.choice((0.0, 0.05, 0.3))
    directed = rng.random() < 0.25
    if directed:
        params["reciprocal"] = rng.choice((0.0, 0.2, 0.6))
    return {"model": model, "n": n, "degree": degree, "seed": rng.randint(1, 10**6), "weighted": rng.random() < 0.5,
            "directed": directed, "params": params}


def generate(count: int = 300, seed: int = 1, out_dir: str = "inputs/networkx"):
    """Yield ``count`` input records; parameter files land in ``out_dir`` (relative to this file's folder)."""
    rng = random.Random(seed)
    folder = input_folder(out_dir, HERE)
    for n in range(count):
        spec = _params(rng)
        m = _edges(spec["model"], spec["n"], spec["degree"])
        mix = rng.choice(list(MIXES))
        budget_ms = 150 * 12 ** rng.random()  # 150 ms .. 1.8 s of algorithm work (estimated)
        names = [rng.choice(MIXES[mix]) for _ in range(rng.randint(1, 5))]
        algorithms = []
        for name in names:
            algo = _algorithm(rng, name, spec["n"], m, spec["directed"], spec["weighted"], budget_ms / len(names))
            if algo is not None:
                algorithms.append(algo)
        if not algorithms:
            algorithms.append({"name": "components"})
        spec["algorithms"] = algorithms
        path = folder / f"g{n:04d}-{spec['model']}-{mix}.json"
        write_if_changed(path, json.dumps(spec, indent=1, sort_keys=True) + "\n")
        argv = [relative_path(path, HERE)]
        yield {"id": f"networkx-{n:04d}", "argv": argv, "files": [relative_path(path, HERE)]}
