"""A directed multigraph whose edges carry only a key, ``(kind, label)``: the SDG's store.

networkx's MultiDiGraph keeps a dictionary of keys and a data dictionary per edge; on a 25 kLOC
package (Whoosh: 4.8 million edges) that is most of the SDG's memory and half of the time it takes to
add them. Here the keys of the edges from ``a`` to ``b`` are one tuple, shared by the successor and
predecessor maps. The read side is the part of networkx's interface the slicer uses (``nodes``,
``pred``, ``in_edges``/``out_edges`` with ``data=True``, ``in``, ``len``, ``number_of_nodes``/``_edges``),
plus :meth:`LabelledDigraph.labelled`, every edge as ``(a, b, kind, label)``."""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Iterator
from typing import Any

EdgeKey = tuple[str, Any]  # (kind, label)


class LabelledDigraph:
    """Nodes in the order they were added; for each ordered pair of nodes, the keys of its edges."""

    def __init__(self) -> None:
        self.succ: dict[Hashable, dict[Hashable, tuple[EdgeKey, ...]]] = {}
        self.pred: dict[Hashable, dict[Hashable, tuple[EdgeKey, ...]]] = {}
        self._edges = 0

    # ------------------------------------------------------------------ building
    def add_node(self, node: Hashable) -> None:
        """Add ``node`` if it is new."""
        if node not in self.succ:
            self.succ[node] = {}
            self.pred[node] = {}

    def add_nodes_from(self, nodes: Iterable[Hashable]) -> None:
        """Add each of ``nodes`` that is new."""
        for node in nodes:
            self.add_node(node)

    def add_edge(self, a: Hashable, b: Hashable, key: EdgeKey) -> None:
        """Add the edge ``a -> b`` with ``key`` (nothing if it is there already)."""
        out = self.succ.get(a)
        if out is None:
            self.add_node(a)
            out = self.succ[a]
        if b not in self.succ:
            self.add_node(b)
        keys = out.get(b)
        if keys is None:
            keys = (key,)
        elif key in keys:
            return
        else:
            keys = (*keys, key)
        out[b] = keys
        self.pred[b][a] = keys
        self._edges += 1

    # ------------------------------------------------------------------ reading
    @property
    def nodes(self) -> Iterable[Hashable]:
        """The nodes, in the order they were added."""
        return self.succ.keys()

    def __contains__(self, node: object) -> bool:
        return node in self.succ

    def __len__(self) -> int:
        return len(self.succ)

    def number_of_nodes(self) -> int:
        """How many nodes."""
        return len(self.succ)

    def number_of_edges(self) -> int:
        """How many edges (one per key of each pair)."""
        return self._edges

    def labelled(self) -> Iterator[tuple[Hashable, Hashable, str, Any]]:
        """``(a, b, kind, label)`` per edge."""
        for a, out in self.succ.items():
            for b, keys in out.items():
                for kind, label in keys:
                    yield a, b, kind, label

    def out_edges(self, node: Hashable, data: bool = False) -> Iterator[tuple]:
        """The edges leaving ``node``: ``(node, b)``, or ``(node, b, {"kind": ..., "label": ...})`` with ``data``."""
        for b, keys in self.succ.get(node, {}).items():
            for kind, label in keys:
                yield (node, b, {"kind": kind, "label": label}) if data else (node, b)

    def in_edges(self, node: Hashable, data: bool = False) -> Iterator[tuple]:
        """The edges entering ``node``: ``(a, node)``, or ``(a, node, {"kind": ..., "label": ...})`` with ``data``."""
        for a, keys in self.pred.get(node, {}).items():
            for kind, label in keys:
                yield (a, node, {"kind": kind, "label": label}) if data else (a, node)
