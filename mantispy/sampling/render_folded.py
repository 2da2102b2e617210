"""Folded stacks (Brendan Gregg's format: ``frame;frame;frame weight``), weights in microseconds."""

from __future__ import annotations

from .flame import FlameTree


def render(tree: FlameTree) -> str:
    """One line per distinct stack; integer microseconds (flamegraph.pl and speedscope read it)."""
    lines = []
    for path, weight in sorted(tree.folded().items()):
        micros = round(weight * 1e6)
        if micros > 0:
            lines.append(";".join(label.replace(";", ":") for label in path) + f" {micros}")
    return "\n".join(lines) + ("\n" if lines else "")
