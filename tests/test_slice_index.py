"""The compiled slicer (slicer/slice_index.py) against the set-based two-pass algorithm it replaced
(tests/slice_reference.py): the same vertices for every feature of the corpus programs, and for a
spread of a real program's features."""

from __future__ import annotations

from pathlib import Path

import pytest

from mantispy.slicer.evaluators import SliceSession
from mantispy.slicer.slice_index import SliceIndex
from mantispy.slicer.slicing import CriterionError, backward_slice, criterion_nodes
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
