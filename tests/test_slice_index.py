"""The compiled slicer (slicer/slice_index.py) against the set-based two-pass algorithm it replaced
(tests/slice_reference.py): the same vertices for every feature of the corpus programs, and for a
spread of a real program's features; slicing every feature at once (batch_reach.py) against one
search per feature; the vectorised slice facts against the loops they replaced."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import breadth_first_order, connected_components

from mantispy.slicer import slice_index
from mantispy.slicer.batch_reach import CondensedReach
from mantispy.slicer.evaluators import SliceSession
from mantispy.slicer.slice_index import SliceIndex
from mantispy.slicer.slicing import CriterionError, backward_slice, criterion_nodes, iter_feature_slices, slice_feature
from tests import slice_reference
from tests.test_slicing import SHOP, write_program

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

CLOSURES = {  # every closure rule of the slicer has something to do here
    "main.py": '''
        import sys
        from lib import Box, Stop, count, make_key, CONST

        def step(i, n):
            if i >= n:
                raise Stop()
            return i + 1

        def main(argv):
            n = int(argv[0])
            boxes = sorted(Box(k) for k in range(n, 0, -1))
            i = 0
            with open(__file__) as handle:
                first = handle.readline()
            while True:
                try:
                    i = step(i, n)
                except Stop:
                    break
            keyed = sorted(range(n), key=make_key(n))
            total = count(boxes) + len(keyed) + CONST + len(first)
            print(total)

        if __name__ == "__main__":
            main(sys.argv[1:])
    ''',
    "lib.py": '''
        from dataclasses import dataclass

        CONST = 7

        class Stop(Exception):
            pass

        @dataclass(order=True)
        class Box:
            size: int
            label: str = "box"

            def __lt__(self, other):
                return self.size < other.size

            @property
            def double(self):
                return self.size * 2

        def make_key(n):
            def key(x):
                return (x * 7) % max(n, 1)
            return key

        def count(boxes):
            seen = 0
            for box in boxes:
                if box.double > 4:
                    seen += 1
            return seen
    ''',
}


def _assert_same_slices(session: SliceSession, feature_ids: list[str]) -> int:
    compared = 0
    for fid in feature_ids:
        try:
            criteria = criterion_nodes(session.sdg, session.features[fid])
        except CriterionError:
            continue
        fast, reference = backward_slice(session.sdg, criteria), slice_reference.backward_slice(session.sdg, criteria)
        assert fast == reference, (fid, sorted(map(str, fast - reference))[:3], sorted(map(str, reference - fast))[:3])
        compared += 1
    return compared


@pytest.mark.parametrize("files", [SHOP, CLOSURES], ids=["shop", "closures"])
def test_every_feature_of_the_corpus_gets_the_reference_slice(tmp_path, files):
    root = write_program(tmp_path, files)
    session = SliceSession(root, "main.py")
    assert _assert_same_slices(session, list(session.features)) > 20


def test_a_spread_of_minisearch_features_gets_the_reference_slice():
    session = SliceSession(EXAMPLES / "minisearch", "search.py")
    ids = list(session.features)
    assert _assert_same_slices(session, ids[:: max(1, len(ids) // 150)]) > 100


def test_several_criteria_are_one_search_and_the_index_is_built_once(tmp_path):
    root = write_program(tmp_path, SHOP)
    session = SliceSession(root, "main.py")
    index = SliceIndex.of(session.sdg)
    assert SliceIndex.of(session.sdg) is index
    a = criterion_nodes(session.sdg, session.features["main.py:main:loop:1"])
    b = criterion_nodes(session.sdg, session.features["shop/cart.py:price_of:branch:1"])
    both = index.nodes_of(index.slice(a | b))
    assert both == backward_slice(session.sdg, a) | backward_slice(session.sdg, b)
    assert both != backward_slice(session.sdg, a)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_batched_reachability_is_a_search_per_start_set(seed):
    """Random graphs with cycles; more start sets than one word holds, some with several vertices."""
    rng = np.random.default_rng(seed)
    n = 400
    src = rng.integers(0, n, 700)  # mostly forward edges (a deep DAG), and a few back edges (cycles)
    dst = np.minimum(src + rng.integers(1, 12, 700), n - 1)
    back = rng.integers(0, n, 25)
    src, dst = np.r_[src, back], np.r_[dst, np.maximum(back - rng.integers(1, 6, 25), 0)]
    graph = csr_matrix((np.ones(len(src)), (src, dst)), shape=(n, n))
    graph.sum_duplicates()
    labels = connected_components(graph, directed=True, connection="strong")[1]
    assert labels.max() + 1 < n  # the graph has cycles to condense
    condensed = CondensedReach(graph.indptr, graph.indices, labels)
    starts = [rng.choice(n, size=rng.integers(1, 4), replace=False) for _ in range(150)]
    bits = condensed.reach([np.unique(labels[s]) for s in starts], words=3)
    for j, s in enumerate(starts):
        expected = np.zeros(n, dtype=bool)
        for vertex in s:
            expected[breadth_first_order(graph, int(vertex), directed=True, return_predecessors=False)] = True
        assert np.array_equal(CondensedReach.column(bits, j)[labels], expected), j
        assert np.array_equal(CondensedReach.columns(bits[labels], j // 64)[j % 64], expected), j


def test_every_feature_sliced_at_once_matches_one_slice_per_feature(monkeypatch):
    """Several sweeps (one word per sweep here), and the vectorised facts equal the reference loops."""
    monkeypatch.setattr(slice_index, "WORDS", 1)
    sweeps = []
    reach = CondensedReach.reach
    monkeypatch.setattr(CondensedReach, "reach", lambda self, keys, words: sweeps.append(len(keys)) or reach(self, keys, words))
    session = SliceSession(EXAMPLES / "minisearch", "search.py")
    index = SliceIndex.of(session.sdg)
    seen: list[str] = []
    distinct = 0
    for fids, facts in iter_feature_slices(session.sdg, session.features):
        distinct += 1
        for fid in fids[:2]:
            alone = slice_feature(session.sdg, session.features[fid], "search.py")
            assert alone["kept"] == {f: list(spans) for f, spans in facts["kept"].items()}, fid
            assert alone["calls"] == facts["calls"], fid
            assert alone["statements_kept"] == facts["statements_kept"]
        _, mask = index.keyed_slice(criterion_nodes(session.sdg, session.features[fids[0]]))
        assert facts == slice_reference.facts(index, mask)
        seen.extend(fids)
    assert len(sweeps) > 1 and distinct > 32 and len(seen) == len(set(seen))
    assert set(seen) == {f for f in session.features if _has_criterion(session, f)}


def _has_criterion(session: SliceSession, fid: str) -> bool:
    try:
        criterion_nodes(session.sdg, session.features[fid])
    except CriterionError:
        return False
    return True
