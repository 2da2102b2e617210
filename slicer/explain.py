"""Why a statement is in a feature's slice: the chain of dependences that reaches it from the criterion.

A slice that keeps most of a program is held there by a few dependences, each sound on its own
(a method lookup that may find any class's attribute of that name, a module body that runs when any
of its importers does); finding them by reading the slice is hopeless on a large package. The slice's
own search (:meth:`slice_index.SliceIndex.chain`) remembers how it reached each vertex, so the
shortest chain to a kept statement is one walk back. ``mantispy slice ... --why FILE:LINE`` prints it.
"""

from __future__ import annotations

from dataclasses import dataclass

from .sdg import SDG, Node
from .slice_index import SliceIndex
from .slicing import criterion_nodes


@dataclass(frozen=True)
class Step:
    """One vertex of the chain: where it is and how the previous step depends on it."""

    file: str | None
    line: int | None
    unit: str
    what: str  # the vertex: a statement's first source line, or what a parameter vertex carries
    how: str  # the dependence of the previous step on this one ("criterion" for the first)
    passes: str  # "1" (found going up into callers), "2" (going down into callees), "rule"


def why_kept(sdg: SDG, feature: dict, file: str, line: int) -> list[Step] | None:
    """The chain from ``feature``'s criterion to a vertex of ``file`` whose source spans ``line``; None
    when the slice keeps none."""
    index = SliceIndex.of(sdg)
    targets = _statements_at(sdg, file, line)
    chain = index.chain(criterion_nodes(sdg, feature), targets) if targets else None
    if chain is None:
        return None
    steps: list[Step] = []
    previous: Node | None = None
    for node, search in chain:
        if steps and node == previous:  # the same vertex found by pass 1, then expanded by pass 2
            continue
        how = "criterion" if previous is None else _dependence(sdg, previous, node)
        steps.append(_step(sdg, node, how, "rule" if search == 0 else str(search)))
        previous = node
    return steps


def _statements_at(sdg: SDG, file: str, line: int) -> list[Node]:
    """The vertices of ``file`` that start on ``line``; else the innermost that span it (a line inside a
    parenthesised expression)."""
    spans = {}
    for key, proc in sdg.procs.items():
        if key[0] != file:
            continue
        for vertex in proc.cfg.vertices.values():
            if vertex.span is not None and vertex.span[0] <= line <= vertex.span[2]:
                spans[sdg.vertex(key, vertex.id)] = vertex.span
    starting = [node for node, span in spans.items() if span[0] == line]
    if starting or not spans:
        return starting
    inner = min(span[2] - span[0] for span in spans.values())
    return [node for node, span in spans.items() if span[2] - span[0] == inner]


def _dependence(sdg: SDG, dependent: Node, on: Node) -> str:
    """How ``dependent`` depends on ``on``: the SDG's edge kinds and labels from ``on`` to it, "summary"
    for a summary edge, "rule" for one of the slice's closure rules."""
    if on[0] == "hub" or dependent[0] == "hub":
        return "rule: " + (on[1] if on[0] == "hub" else dependent[1])
    keys = sdg.graph.succ.get(on, {}).get(dependent)
    if not keys:
        return "summary" if on[0] == "ain" and dependent[0] == "aout" else "rule"
    return ", ".join(kind if label is None or kind == "control" else f"{kind} {_location(label)}"
                     for kind, label in keys)


def _location(label) -> str:
    """A dataflow location in words: ``('var', unit, name)`` -> name, ``('attr', f)`` -> .f."""
    if isinstance(label, tuple) and label:
        if label[0] == "var":
            return str(label[-1])
        if label[0] == "attr":
            return "." + str(label[1])
        return ":".join(str(part) for part in label)
    return str(label)


def _step(sdg: SDG, node: Node, how: str, passes: str) -> Step:
    if node[0] == "hub":
        kind = "a function the runtime calls" if node[1] == "runtime-call" else "an exception a callee raises"
        return Step(None, None, "", kind, how, passes)
    where = sdg.span_of(node)
    file, line = (where[0], where[1][0]) if where is not None else (None, None)
    if node[0] == "v":
        proc = sdg.procs[node[1]]
        unit = proc.unit.qualname
        file = proc.source.path
        what = _source_line(proc.source, line) if line is not None else f"({proc.cfg.vertices[node[2]].kind} of {unit})"
    elif node[0] in ("ain", "aout"):
        caller = node[1][0]
        unit = caller[1]
        file = file or caller[0]
        role = "argument" if node[0] == "ain" else "result"
        what = f"({role} {_location(node[2])} of the call here)"
    else:
        proc_key = node[1]
        file, unit = proc_key[0], proc_key[1]
        role = "parameter in" if node[0] == "fin" else "effect out"
        what = f"({role}: {_location(node[2])})"
    return Step(file, line, unit, what, how, passes)


def _source_line(source, line: int) -> str:
    lines = source.lines()
    return lines[line - 1].strip() if 0 < line <= len(lines) else ""
