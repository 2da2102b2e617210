"""Flame trees: the samples of a window aggregated by stack (and two of them differenced).

A :class:`FlameTree` is the profile artefact every flame format renders: nodes keyed by their path of
frame labels from the root, each with its own (self) and total weight in seconds, and for a
differential tree the weights of the baseline beside them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from .store import RecordingStore
from .types import WHOLE, Frame, Recording, Window


@dataclass
class FlameNode:
    """One function on one path: its total and self weight (seconds), children by label."""

    label: str
    frame: Frame | None = None
    total: float = 0.0
    self_weight: float = 0.0
    base_total: float = 0.0  # differential trees: the baseline's weight of the same path
    children: dict[str, FlameNode] = field(default_factory=dict)

    def child(self, frame: Frame) -> FlameNode:
        """The child for ``frame``, made on first use."""
        label = frame.label()
        node = self.children.get(label)
        if node is None:
            node = self.children[label] = FlameNode(label, frame)
        return node


@dataclass
class FlameTree:
    """The aggregated stacks of one window (``baseline``: of a second window or run, for a diff)."""

    root: FlameNode
    recording: Recording
    window: Window
    samples: int
    title: str
    diff_against: str | None = None

    @property
    def total(self) -> float:
        """Seconds the window's samples stand for."""
        return self.root.total

    def folded(self) -> dict[tuple[str, ...], float]:
        """Path of labels -> self weight (Brendan Gregg's folded stacks)."""
        out: dict[tuple[str, ...], float] = {}

        def walk(node: FlameNode, path: tuple[str, ...]) -> None:
            if node.self_weight > 0:
                out[path] = out.get(path, 0.0) + node.self_weight
            for child in node.children.values():
                walk(child, (*path, child.label))

        for child in self.root.children.values():
            walk(child, (child.label,))
        return out


def add_weights(weights: dict[int, float], frames: dict[int, tuple[Frame, ...]], root: FlameNode | None = None,
                baseline: bool = False) -> FlameNode:
    """Add {stack id: weight} into a tree (into ``base_total`` when ``baseline``)."""
    root = root or FlameNode("all")
    for stack, weight in weights.items():
        node = root
        _add(node, weight, baseline)
        path = frames.get(stack, ())
        for frame in path:
            node = node.child(frame)
            _add(node, weight, baseline)
        if not baseline:
            node.self_weight += weight
    return root


def _add(node: FlameNode, weight: float, baseline: bool) -> None:
    if baseline:
        node.base_total += weight
    else:
        node.total += weight


def flame_tree(store: RecordingStore, recording: Recording, window: Window = WHOLE) -> FlameTree:
    """The flame tree of one window of a recording."""
    weights, count = store.stack_weights(recording, window)
    root = add_weights(weights, store.frames(recording.id))
    return FlameTree(root, recording, window, count, f"recording {recording.id}: {' '.join(recording.command)}")


def diff_tree(store: RecordingStore, recording: Recording, window: Window, base_store: RecordingStore,
              base: Recording, base_window: Window) -> FlameTree:
    """Window A's tree with window B's weights beside it (B is the baseline). Each side is normalised to
    its own total by the renderers, so runs of different length compare by share."""
    weights, count = store.stack_weights(recording, window)
    root = add_weights(weights, store.frames(recording.id))
    add_weights(base_store.stack_weights(base, base_window)[0], base_store.frames(base.id), root, baseline=True)
    tree = FlameTree(root, recording, window, count, f"recording {recording.id} against recording {base.id}")
    tree.diff_against = f"recording {base.id} ({base_window.describe()})"
    return tree


def totals_by_function(tree: FlameTree, names: Iterable[str]) -> dict[str, float]:
    """Seconds spent in each named function (its outermost appearance on each path, so recursion counts
    once), as a share of the tree's total: what "how much of the time went to f" asks."""
    totals = dict.fromkeys(names, 0.0)

    def walk(node: FlameNode) -> None:
        for child in node.children.values():
            if child.frame is not None and child.frame.name in totals:
                totals[child.frame.name] += child.total
            else:
                walk(child)

    walk(tree.root)
    return {name: value / tree.total for name, value in totals.items()} if tree.total else totals
