"""The SDG's edge store (slicer/labelled_graph.py) against networkx's MultiDiGraph, which it replaced:
the same nodes in the same order, the same edges and counts, repeated edges kept once."""

from __future__ import annotations

import networkx as nx
from hypothesis import given
from hypothesis import strategies as st

from mantispy.slicer.labelled_graph import LabelledDigraph

NODES = st.tuples(st.sampled_from(["v", "fin", "fout"]), st.integers(0, 6))
KEYS = st.tuples(st.sampled_from(["control", "data", "summary"]), st.sampled_from([None, "def", ("attr", "x")]))


@given(st.lists(st.tuples(NODES, NODES, KEYS), max_size=60), st.lists(NODES, max_size=5))
def test_the_edge_store_reads_as_the_multidigraph_it_replaced(edges, lone):
    ours, theirs = LabelledDigraph(), nx.MultiDiGraph()
    for a, b, key in edges:
        ours.add_edge(a, b, key)
        theirs.add_edge(a, b, key=key, kind=key[0], label=key[1])
    ours.add_nodes_from(lone)
    theirs.add_nodes_from(lone)
    assert list(ours.nodes) == list(theirs.nodes)
    assert len(ours) == ours.number_of_nodes() == theirs.number_of_nodes()
    assert ours.number_of_edges() == theirs.number_of_edges()
    assert sorted(map(repr, ours.labelled())) == sorted(
        repr((a, b, d["kind"], d["label"])) for a, b, d in theirs.edges(data=True))
    for node in theirs.nodes:
        assert node in ours
        assert sorted(map(repr, ours.in_edges(node, data=True))) == sorted(map(repr, theirs.in_edges(node, data=True)))
        assert sorted(map(repr, ours.out_edges(node, data=True))) == sorted(map(repr, theirs.out_edges(node, data=True)))
        assert {p: set(keys) for p, keys in ours.pred[node].items()} == {p: set(keys) for p, keys in theirs.pred[node].items()}
    assert ("nowhere", -1) not in ours
