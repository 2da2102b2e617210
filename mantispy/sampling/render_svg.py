"""A flame graph as one standalone SVG (no script): widths by share, hover titles with seconds and
percent; a differential tree is coloured red where the function's share grew against the baseline and
blue where it shrank."""

from __future__ import annotations

import hashlib
from html import escape

from .flame import FlameNode, FlameTree

WIDTH, ROW, MIN_WIDTH = 1200, 17, 0.3


def render(tree: FlameTree) -> str:
    """The SVG document (an empty, labelled one when the window holds no sample)."""
    depth = _depth(tree.root)
    height = (depth + 3) * ROW
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
             f'font-family="monospace" font-size="11">',
             f'<text x="4" y="{ROW - 4}" font-size="13">{escape(tree.title)} — {escape(tree.window.describe())}, '
             f'{tree.total:.3f} s in {tree.samples} samples'
             + (f" (red: larger share than in {escape(tree.diff_against)}, blue: smaller)" if tree.diff_against else "")
             + "</text>"]
    if tree.total <= 0:
        parts.append(f'<text x="4" y="{2 * ROW}">no sample in this window</text>')
    else:
        base_total = tree.root.base_total
        _draw(tree.root, 0.0, WIDTH / tree.total, 0, depth, tree.total, base_total, parts)
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def _depth(node: FlameNode) -> int:
    return 1 + max((_depth(child) for child in node.children.values()), default=0)


def _draw(node: FlameNode, x: float, scale: float, level: int, depth: int, total: float, base_total: float,
          parts: list[str]) -> None:
    width = node.total * scale
    if width < MIN_WIDTH:
        return
    y = (depth - level + 1) * ROW
    share = node.total / total
    title = f"{node.label}: {node.total:.4f} s, {share:.1%}"
    if base_total > 0:
        base_share = node.base_total / base_total
        title += f" (baseline {base_share:.1%})"
        color = _diff_color(share - base_share)
    else:
        color = _color(node.label)
    parts.append(f'<g><title>{escape(title)}</title><rect x="{x:.2f}" y="{y}" width="{width:.2f}" height="{ROW - 1}" '
                 f'fill="{color}" rx="2"/>')
    if width > 40:
        chars = int(width / 7)
        text = node.label if len(node.label) <= chars else node.label[: max(chars - 2, 0)] + ".."
        parts.append(f'<text x="{x + 3:.2f}" y="{y + ROW - 5}">{escape(text)}</text>')
    parts.append("</g>")
    offset = x
    for child in sorted(node.children.values(), key=lambda c: c.label):
        _draw(child, offset, scale, level + 1, depth, total, base_total, parts)
        offset += child.total * scale


def _color(label: str) -> str:
    digest = hashlib.md5(label.encode(), usedforsecurity=False).digest()
    return f"rgb({205 + digest[0] % 50},{80 + digest[1] % 120},{digest[2] % 60})"


def _diff_color(change: float) -> str:
    strength = min(abs(change) / 0.05, 1.0)  # 5 points of share is full colour
    fade = int(235 - 175 * strength)
    return f"rgb(235,{fade},{fade})" if change > 0 else f"rgb({fade},{fade},235)"
