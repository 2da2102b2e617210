"""Workload: build a generated graph with networkx and run a mix of graph algorithms on it.

    python workload.py PARAMS.json [--repeat R]

PARAMS.json describes the graph and the work::

    {"model": "gnp", "n": 800, "degree": 6, "seed": 7, "weighted": true, "directed": false,
     "params": {...model-specific...},
     "algorithms": [{"name": "bfs", "sources": 20}, {"name": "betweenness", "k": 40}, ...]}

Models: ``gnp`` (Erdős–Rényi with the given mean degree), ``ba`` (Barabási–Albert preferential
attachment), ``ws`` (Watts–Strogatz small world, rewiring ``p``), ``powerlaw`` (Holme–Kim power law with
triangle closing ``p``), ``sbm`` (stochastic block model: ``blocks`` communities, ``mix`` of the edges
between them), ``grid`` (2-D grid with ``holes``), ``geometric`` (random geometric graph), ``regular``
(random d-regular), ``tree`` (random tree plus ``extra`` edges). Weights, when asked for, are seeded
integers 1..100. Directed graphs orient every edge at random (``reciprocal`` of them both ways).

Algorithms (each takes its listed parameters): ``bfs`` (sources), ``dijkstra`` (sources),
``astar`` (pairs), ``components``, ``betweenness`` (k), ``closeness`` (sources), ``pagerank``
(alpha, tol), ``clustering``, ``triangles``, ``cores``, ``mst`` (algorithm), ``coloring`` (strategy),
``louvain`` (resolution), ``label_propagation``, ``cliques`` (limit), ``maxflow`` (pairs, flow_func),
``matching``, ``bridges``, ``dag`` (topological sort and longest path of an acyclic orientation, and
its transitive reduction with ``reduce``). PageRank is networkx's pure-Python power iteration
(``nx.pagerank`` itself would run in SciPy, outside the instrumented source). Every result is folded
into a digest; the program prints one line with the graph's size and the digest.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random

import networkx as nx
from networkx.algorithms import flow as nxflow
from networkx.algorithms.link_analysis.pagerank_alg import _pagerank_python


def build(spec: dict) -> nx.Graph:
    model, n, degree, seed = spec["model"], int(spec["n"]), float(spec["degree"]), int(spec["seed"])
    params = spec.get("params", {})
    if model == "gnp":
        g = nx.fast_gnp_random_graph(n, min(1.0, degree / max(1, n - 1)), seed=seed)
    elif model == "ba":
        g = nx.barabasi_albert_graph(n, max(1, round(degree / 2)), seed=seed)
    elif model == "ws":
        g = nx.connected_watts_strogatz_graph(n, max(2, round(degree)), params.get("p", 0.1), seed=seed)
    elif model == "powerlaw":
        g = nx.powerlaw_cluster_graph(n, max(1, round(degree / 2)), params.get("p", 0.3), seed=seed)
    elif model == "sbm":
        blocks = int(params.get("blocks", 4))
        sizes = [n // blocks + (1 if i < n % blocks else 0) for i in range(blocks)]
        mix = float(params.get("mix", 0.1))
        p_in = min(1.0, degree * (1 - mix) / max(1, sizes[0] - 1))
        p_out = min(1.0, degree * mix / max(1, n - sizes[0]))
        probs = [[p_in if i == j else p_out for j in range(blocks)] for i in range(blocks)]
        g = nx.stochastic_block_model(sizes, probs, seed=seed)
    elif model == "grid":
        side = max(2, int(n ** 0.5))
        g = nx.convert_node_labels_to_integers(nx.grid_2d_graph(side, side), ordering="sorted")
        rng = random.Random(seed)
        holes = rng.sample(sorted(g.nodes), int(g.number_of_nodes() * params.get("holes", 0.0)))
        g.remove_nodes_from(holes)
    elif model == "geometric":
        radius = (degree / (3.14159 * n)) ** 0.5
        g = nx.random_geometric_graph(n, radius, seed=seed)
    elif model == "regular":
        d = max(1, round(degree))
        g = nx.random_regular_graph(d if (d * n) % 2 == 0 else d + 1, n, seed=seed)
    elif model == "tree":
        g = nx.random_labeled_tree(n, seed=seed)
        rng = random.Random(seed)
        nodes = sorted(g.nodes)
        for _ in range(int(n * params.get("extra", 0.0))):
            g.add_edge(rng.choice(nodes), rng.choice(nodes))
        g.remove_edges_from(list(nx.selfloop_edges(g)))
    else:
        raise SystemExit(f"unknown graph model {model!r}")
    g = nx.Graph(g)  # plain simple graph, attributes (positions) dropped
    rng = random.Random(seed + 1)
    if spec.get("weighted"):
        for u, v in sorted(g.edges):
            g.edges[u, v]["weight"] = rng.randint(1, 100)
    if spec.get("directed"):
        d = nx.DiGraph()
        d.add_nodes_from(sorted(g.nodes))
        reciprocal = float(params.get("reciprocal", 0.2))
        for u, v, data in sorted(g.edges(data=True)):
            if rng.random() < 0.5:
                u, v = v, u
            d.add_edge(u, v, **data)
            if rng.random() < reciprocal:
                d.add_edge(v, u, **data)
        return d
    return g


def undirected(g: nx.Graph) -> nx.Graph:
    return g.to_undirected(as_view=True) if g.is_directed() else g


def pick(g: nx.Graph, count: int, seed: int) -> list:
    nodes = sorted(g.nodes)
    return random.Random(seed).sample(nodes, min(count, len(nodes)))


def run(g: nx.Graph, algo: dict, seed: int, digest) -> None:
    name = algo["name"]
    weight = "weight" if nx.is_weighted(g) else None
    u = undirected(g)

    def fold(value) -> None:
        digest.update(f"{name}:{value}".encode())

    if name == "bfs":
        for s in pick(g, algo.get("sources", 10), seed):
            lengths = nx.single_source_shortest_path_length(g, s)
            fold((s, len(lengths), sum(lengths.values())))
    elif name == "dijkstra":
        for s in pick(g, algo.get("sources", 10), seed):
            lengths = nx.single_source_dijkstra_path_length(g, s, weight=weight or "weight")
            fold((s, len(lengths), round(sum(lengths.values()), 6)))
    elif name == "astar":
        nodes = sorted(g.nodes)
        rng = random.Random(seed)
        for _ in range(algo.get("pairs", 10)):
            a, b = rng.choice(nodes), rng.choice(nodes)
            try:
                fold(nx.astar_path_length(g, a, b, heuristic=lambda x, y: 0, weight=weight or "weight"))
            except nx.NetworkXNoPath:
                fold("nopath")
    elif name == "components":
        if g.is_directed():
            fold(sorted(len(c) for c in nx.strongly_connected_components(g))[-5:])
            fold(nx.number_weakly_connected_components(g))
        else:
            fold(sorted(len(c) for c in nx.connected_components(g))[-5:])
    elif name == "betweenness":
        values = nx.betweenness_centrality(g, k=min(algo.get("k", 20), g.number_of_nodes()), weight=weight, seed=seed)
        fold(round(max(values.values(), default=0), 9))
    elif name == "closeness":
        for s in pick(g, algo.get("sources", 10), seed):
            fold(round(nx.closeness_centrality(g, u=s, distance=weight), 9))
    elif name == "pagerank":
        ranks = _pagerank_python(g, alpha=algo.get("alpha", 0.85), tol=algo.get("tol", 1e-6), max_iter=1000)
        fold(round(max(ranks.values(), default=0), 6))
    elif name == "clustering":
        fold(round(nx.average_clustering(u), 9))
    elif name == "triangles":
        fold(sum(nx.triangles(u).values()) // 3)
    elif name == "cores":
        core = nx.core_number(nx.Graph(u))
        fold(max(core.values(), default=0))
    elif name == "mst":
        tree = nx.minimum_spanning_tree(u, weight=weight or "weight", algorithm=algo.get("algorithm", "kruskal"))
        fold((tree.number_of_edges(), tree.size(weight=weight)))
    elif name == "coloring":
        colors = nx.greedy_color(u, strategy=algo.get("strategy", "largest_first"))
        fold(max(colors.values(), default=-1) + 1)
    elif name == "louvain":
        parts = nx.community.louvain_communities(u, weight=weight, resolution=algo.get("resolution", 1.0), seed=seed)
        fold((len(parts), round(nx.community.modularity(u, parts, weight=weight), 9)))
    elif name == "label_propagation":
        parts = list(nx.community.label_propagation_communities(u))
        fold(sorted(len(p) for p in parts)[-5:])
    elif name == "cliques":
        count = biggest = 0
        for clique in nx.find_cliques(u):
            count += 1
            biggest = max(biggest, len(clique))
            if count >= algo.get("limit", 100000):
                break
        fold((count, biggest))
    elif name == "maxflow":
        flow_func = {"edmonds_karp": nxflow.edmonds_karp, "preflow_push": nxflow.preflow_push,
                     "shortest_augmenting_path": nxflow.shortest_augmenting_path}[algo.get("flow_func", "preflow_push")]
        capacity = g.copy() if g.is_directed() else nx.DiGraph(g)
        for a, b, data in capacity.edges(data=True):
            data["capacity"] = data.get("weight", 1)
        rng = random.Random(seed)
        nodes = sorted(capacity.nodes)
        for _ in range(algo.get("pairs", 3)):
            a, b = rng.sample(nodes, 2)
            fold(nx.maximum_flow_value(capacity, a, b, flow_func=flow_func))
    elif name == "matching":
        fold(len(nx.max_weight_matching(u, weight=weight or "weight")))
    elif name == "bridges":
        fold((sum(1 for _ in nx.bridges(u)), sum(1 for _ in nx.articulation_points(u))))
    elif name == "dag":
        order = {v: i for i, v in enumerate(sorted(g.nodes))}
        dag = nx.DiGraph((a, b, d) if order[a] < order[b] else (b, a, d) for a, b, d in g.edges(data=True))
        dag.add_nodes_from(g.nodes)
        fold(len(list(nx.topological_sort(dag))))
        fold(nx.dag_longest_path_length(dag, weight=weight or "weight"))
        if algo.get("reduce", False):
            fold(nx.transitive_reduction(dag).number_of_edges())
    else:
        raise SystemExit(f"unknown algorithm {name!r}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("params", help="JSON file: graph model, size, density and algorithm mix")
    parser.add_argument("--repeat", type=int, default=1, help="times the algorithm mix runs")
    args = parser.parse_args()
    with open(args.params, encoding="utf-8") as handle:
        spec = json.load(handle)
    g = build(spec)
    digest = hashlib.sha256()
    for r in range(args.repeat):
        for i, algo in enumerate(spec["algorithms"]):
            run(g, algo, int(spec["seed"]) + 31 * i + r, digest)
    print(f"networkx: {spec['model']} graph, {g.number_of_nodes()} nodes, {g.number_of_edges()} edges, "
          f"{len(spec['algorithms'])} algorithms x {args.repeat}, sha256 {digest.hexdigest()[:16]}")


if __name__ == "__main__":
    main()
