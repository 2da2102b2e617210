"""The SDG's two fixpoints (MOD/REF through the call graph, summary edges) against plain reference
computations: the worklists that replaced round-robin passes and a stack-ordered worklist must reach
the same least fixpoint on programs with recursion, name-fallback calls with many callees and fields."""

from __future__ import annotations

from collections import defaultdict

import pytest

from mantispy.slicer import sdg as sdg_module
from mantispy.slicer.callgraph import build_call_graph
from mantispy.slicer.program import Program
from tests.test_slice_index import CLOSURES
from tests.test_slicing import SHOP, write_program

RECURSIVE = {
    "main.py": '''
        import sys
        from walk import Tree, Leaf, visit, size

        def build(n):
            if n <= 0:
                return Leaf(n)
            return Tree(build(n - 1), build(n - 2))

        def main(argv):
            root = build(int(argv[0]))
            seen = []
            visit(root, seen)
            print(size(root), len(seen), root.describe())

        main(sys.argv[1:])
    ''',
    "walk.py": '''
        class Node:
            label = "node"

            def describe(self):
                return self.label + str(self.weight())

            def weight(self):
                return 1

        class Leaf(Node):
            def __init__(self, value):
                self.value = value
                self.marks = []

            def weight(self):
                self.marks.append(self.value)
                return self.value

        class Tree(Node):
            def __init__(self, left, right):
                self.left = left
                self.right = right
                self.marks = []

            def weight(self):
                return self.left.weight() + self.right.weight()

            def describe(self):
                self.label = "tree"
                return even(self) + Node.describe(self)

        def even(node):
            return "" if not isinstance(node, Tree) else odd(node.left)

        def odd(node):
            return "+" if not isinstance(node, Tree) else even(node.right)

        def visit(node, seen):
            seen.append(node)
            for child in children(node):
                visit(child, seen)

        def children(node):
            return [node.left, node.right] if isinstance(node, Tree) else []

        def size(node):
            return 1 + sum(size(c) for c in children(node))

        def anything(x):
            return x.weight() + x.describe().count("t")
    ''',
}


def _reference_summaries(sdg) -> set[tuple]:
    """Summary edges by the definition, recomputed until nothing changes: for every procedure's formal-out,
    the formal-ins that reach it along control, data and the summary edges found so far."""
    intra = defaultdict(set)
    for a, b, kind, label in sdg.labelled_edges():
        if kind in ("control", "data") and label != "def":
            intra[b].add(a)
    fouts = [n for n in sdg.graph.nodes if n[0] == "fout"]
    summaries: set[tuple] = set()
    changed = True
    while changed:
        changed = False
        for fout in fouts:
            seen, todo = {fout}, [fout]
            while todo:
                for p in intra[todo.pop()]:
                    if p not in seen:
                        seen.add(p)
                        todo.append(p)
            for fin in (n for n in seen if n[0] == "fin" and n[1] == fout[1]):
                for call in sdg.calls_to.get(fout[1], []):
                    edge = (("ain", call.id, fin[2]), ("aout", call.id, fout[2]))
                    if edge not in summaries:
                        summaries.add(edge)
                        intra[edge[1]].add(edge[0])
                        changed = True
    return summaries


def _sdg_before_propagation(root):
    program = Program.load(root)
    sdg = sdg_module.SDG(program, build_call_graph(program, "main.py"))
    sdg.precision = sdg_module.Precision()
    sdg_module._procedures(sdg)
    sdg_module._resolve_calls(sdg)
    sdg_module._local_effects(sdg)
    return sdg


def _reference_effects(sdg) -> dict:
    """MOD/REF by round-robin passes over every call until one changes nothing (the former algorithm)."""
    mod = {key: set(proc.mod) for key, proc in sdg.procs.items()}
    ref = {key: set(proc.ref) for key, proc in sdg.procs.items()}
    changed = True
    while changed:
        changed = False
        for key, proc in sdg.procs.items():
            for call in proc.calls:
                for callee in call.callees:
                    gained_mod = {loc for loc in mod[callee] if sdg_module._nonlocal(loc, proc)}
                    gained_ref = {loc for loc in ref[callee] if sdg_module._nonlocal(loc, proc)}
                    if sdg.procs[callee].mutates_args:
                        gained_mod |= {loc for loc in sdg_module._mutated_roots(sdg, proc, call) if loc[0] == "attr"}
                    if not gained_mod <= mod[key] or not gained_ref <= ref[key]:
                        mod[key] |= gained_mod
                        ref[key] |= gained_ref
                        changed = True
    return {key: (mod[key], ref[key]) for key in sdg.procs}


@pytest.mark.parametrize("files", [SHOP, CLOSURES, RECURSIVE], ids=["shop", "closures", "recursive"])
def test_summary_edges_and_effects_are_the_least_fixpoints(tmp_path, files):
    root = write_program(tmp_path, files)
    staged = _sdg_before_propagation(root)
    expected_effects = _reference_effects(staged)
    sdg_module._propagate_effects(staged)
    assert {key: (proc.mod, proc.ref) for key, proc in staged.procs.items()} == expected_effects

    program = Program.load(root)
    sdg = sdg_module.build_sdg(program, build_call_graph(program, "main.py"))
    found = {(a, b) for a, b, kind, _ in sdg.labelled_edges() if kind == "summary"}
    assert found == _reference_summaries(sdg)
    assert len(found) == sdg.summary_count  # each edge once
    if files is RECURSIVE:
        assert any(a[1][0][1] == "visit" for a, _ in found)  # the recursive walk has summaries of its own
