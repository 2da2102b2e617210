"""Reachability from many start sets at once: bit-parallel propagation over a graph's condensation.

Slicing every feature of a large program asks one question thousands of times: which vertices of the
compiled slicing graph (slice_index.py) are reachable from these criteria? One breadth-first search
per question walks all edges each time. Here the strongly connected components are collapsed into a
DAG once, its vertices are put into topological levels once, and then up to ``64 * words`` questions
are answered by a single sweep over the DAG's edges in level order: each component carries one bit per
question, and an edge ``a -> b`` ORs a's bits into b's. A component's bits are final once every
lower level has been pushed, because all its predecessors lie on lower levels.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

WORDS = 16  # 64-bit words per component: 1,024 start sets per sweep


class CondensedReach:
    """The condensation of a directed graph (CSR ``indptr``/``indices``, strong-component ``labels``),
    levelled for sweeps; :meth:`reach` answers many reachability questions in one sweep."""

    def __init__(self, indptr: np.ndarray, indices: np.ndarray, labels: np.ndarray) -> None:
        self.labels = labels.astype(np.int64)
        self.count = int(self.labels.max()) + 1 if len(labels) else 0
        sources = np.repeat(np.arange(len(indptr) - 1, dtype=np.int64), np.diff(indptr))
        a, b = self.labels[sources], self.labels[indices.astype(np.int64)]
        keep = a != b
        pairs = np.unique(a[keep] * self.count + b[keep])
        src, dst = pairs // self.count, pairs % self.count
        level = _levels(src, dst, self.count)
        # edges grouped by the level of their source, and within a level by target (for reduceat)
        order = np.lexsort((dst, level[src]))
        src, dst, edge_level = src[order], dst[order], level[src[order]]
        bounds = np.searchsorted(edge_level, np.arange(int(level.max(initial=0)) + 2))
        self.levels = int(level.max(initial=0)) + 1
        self.steps: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
            if lo == hi:
                continue
            s, d = src[lo:hi], dst[lo:hi]
            starts = np.flatnonzero(np.r_[True, d[1:] != d[:-1]])
            self.steps.append((s, starts, d[starts]))
        self.edges = len(src)

    def reach(self, start_sets: Sequence[Sequence[int]], words: int = WORDS) -> np.ndarray:
        """For each start set (components), which components it reaches: a (components, words) uint64
        array whose bit j (word j // 64, bit j % 64) is set where start set j reaches."""
        if len(start_sets) > 64 * words:
            raise ValueError(f"at most {64 * words} start sets per sweep")
        bits = np.zeros((self.count, words), dtype=np.uint64)
        for j, components in enumerate(start_sets):
            bits[np.asarray(components, dtype=np.int64), j >> 6] |= np.uint64(1) << np.uint64(j & 63)
        for sources, starts, targets in self.steps:
            bits[targets] |= np.bitwise_or.reduceat(bits[sources], starts, axis=0)
        return bits

    @staticmethod
    def column(bits: np.ndarray, j: int) -> np.ndarray:
        """The components start set ``j`` reaches, as a boolean array over components."""
        return ((bits[:, j >> 6] >> np.uint64(j & 63)) & np.uint64(1)).astype(bool)

    @staticmethod
    def columns(bits: np.ndarray, word: int) -> np.ndarray:
        """The 64 start sets of word ``word`` at once: a (64, rows) boolean array, row ``j`` what start set
        ``64 * word + j`` reaches (one unpacking instead of 64 shifts of the whole column)."""
        column = np.ascontiguousarray(bits[:, word], dtype="<u8").view(np.uint8).reshape(-1, 8)  # byte 0: bits 0-7
        unpacked = np.unpackbits(column, axis=1, bitorder="little")  # rows x 64, bit j of the word in column j
        return np.ascontiguousarray(unpacked.T).view(bool)


def _levels(src: np.ndarray, dst: np.ndarray, count: int) -> np.ndarray:
    """Each vertex's topological level in the DAG ``src -> dst`` (0 for sources; otherwise one more than
    its highest predecessor), by Kahn's algorithm one whole level at a time."""
    order = np.argsort(src, kind="stable")
    out_dst = dst[order]
    out_ptr = np.searchsorted(src[order], np.arange(count + 1))
    indegree = np.bincount(dst, minlength=count)
    level = np.zeros(count, dtype=np.int64)
    frontier = np.flatnonzero(indegree == 0)
    depth = 0
    done = 0
    while len(frontier):
        level[frontier] = depth
        done += len(frontier)
        lo, hi = out_ptr[frontier], out_ptr[frontier + 1]
        lengths = hi - lo
        if not lengths.sum():
            break
        offsets = np.repeat(lo - np.cumsum(lengths) + lengths, lengths) + np.arange(lengths.sum())
        targets = out_dst[offsets]
        indegree -= np.bincount(targets, minlength=count)
        touched = np.unique(targets)
        frontier = touched[indegree[touched] == 0]
        depth += 1
    if done != count:
        raise ValueError("the graph given as a condensation has a cycle")
    return level
