"""The set-based Horwitz-Reps-Binkley slicer that slicer/slice_index.py replaced, kept as the oracle
its compiled product-graph search must agree with (tests/test_slice_index.py)."""

from __future__ import annotations

import ast
from collections import deque

import numpy as np

from mantispy.slicer.sdg import SDG, Node
from mantispy.slicer.slice_index import _function_facts as function_facts
from mantispy.slicer.slice_index import clause_headers, import_time_given, in_class_body, raise_facts

PASS1 = {"control", "data", "summary", "call", "param-in"}
PASS2 = {"control", "data", "summary", "param-out"}


def backward_slice(sdg: SDG, criteria: set[Node]) -> set[Node]:
    """All SDG nodes the criteria depend on (HRB two-pass), closed under syntax: a kept statement in an
    ``except`` or ``with`` body needs that clause's header (its exception type, its context manager)
    to exist in the emitted program, so the headers join the criteria until nothing changes."""
    first: set[Node] = set()  # found by pass 1 (and so expanded by both passes)
    nodes: set[Node] = set()  # the slice so far
    todo = set(criteria)  # to expand with both passes
    descend: set[Node] = set()  # to expand with pass 2 only
    while todo or descend:  # incremental: each round expands only what is new
        new_first = _reach(sdg, todo, PASS1, first)
        first |= new_first
        nodes |= new_first | _reach(sdg, (new_first - nodes) | descend, PASS2, nodes | new_first)
        # Dunders and properties of kept classes that the program also calls explicitly are kept for the
        # objects the slice already has: what they need is followed, but not up to their static call
        # sites (those matter only if the slice already holds them).
        ascend, descend = _escaping_bodies(sdg, nodes)
        writers_ascend, writers_descend = _constant_writers(sdg, nodes)
        classes_ascend, classes_descend = _class_bodies(sdg, nodes, first)
        todo = (_enclosing_headers(sdg, nodes) | ascend | classes_ascend | writers_ascend) - first
        descend = (descend | classes_descend | writers_descend | _uncaught_raises(sdg, nodes)) - nodes
    return nodes


def _constant_writers(sdg: SDG, nodes: set[Node]) -> tuple[set[Node], set[Node]]:
    """The module/class-body statements that write the import-time constants the slice reads (``global``
    edges, see sdg._import_time_constants): they run at import, in no caller's context, so both
    passes expand them (pass 1 ascends to the imports that run their module), except those whose module
    has surely run when they are read (slice_index.import_time_given): pass 2 only.
    Returns (to expand with both passes, with pass 2 only)."""
    ascend: set[Node] = set()
    descend: set[Node] = set()
    for writer, reader, kind, label in sdg.labelled_edges():
        if kind == "global" and reader in nodes:
            (descend if import_time_given(sdg, writer, reader, label) else ascend).add(writer)
    return ascend, descend


def _class_bodies(sdg: SDG, nodes: set[Node], first: set[Node]) -> tuple[set[Node], set[Node]]:
    """The attribute statements of every class whose body runs in the slice: ``x: int`` of a
    dataclass, enum members, ``__slots__``, class constants are read implicitly (by decorators,
    metaclasses, ``getattr``), so a kept class keeps them (methods are decided one by one); with both
    passes when pass 1 found the class body's entry, else with pass 2 only."""
    ascend: set[Node] = set()
    descend: set[Node] = set()
    for key, proc in sdg.procs.items():
        if proc.unit.kind == "class" and sdg.entry(key) in nodes:
            for v in proc.cfg.statements():
                if not (v.kind == "def" and isinstance(v.node, (ast.FunctionDef, ast.AsyncFunctionDef))):
                    (ascend if sdg.entry(key) in first else descend).add(sdg.vertex(key, v.id))
    return ascend, descend


def _escaping_bodies(sdg: SDG, nodes: set[Node]) -> tuple[set[Node], set[Node]]:
    """Bodies of functions the slice creates that code outside the program may call.

    A function no resolved call reaches, yet created by a kept statement, has escaped as a value
    (``type=convert``, ``key=lambda ...``, a callback stored away), and a dunder method or property of a
    kept class is called implicitly (``sorted`` calls ``__lt__``, ``for`` calls ``__iter__``): whatever
    calls them is invisible to the call graph, so their whole bodies are kept. Returns (what to expand
    with both passes, what with pass 2 only: bodies of implicit methods that also have static callers)."""
    ascend: set[Node] = set()  # expanded by both passes
    descend: set[Node] = set()  # by pass 2 only: never up along their static call edges
    for entry, creators, implicit, class_entry, uncalled, body in _function_facts(sdg):
        created = any(c in nodes for c in creators) or (implicit and class_entry in nodes)
        if created and (implicit or uncalled):
            for creator in creators:  # a method's class body is not ascended for it
                (descend if in_class_body(sdg, creator) else ascend).add(creator)
            (ascend if uncalled else descend).update([entry, *body])
    return ascend, descend


def _uncaught_raises(sdg: SDG, nodes: set[Node]) -> set[Node]:
    """The uncaught ``raise`` statements of the callees of calls that may raise into a handler of their own
    unit and that a kept vertex is control dependent on, and of the procedures those callees pass
    exceptions on from (slice_index.raise_facts); expanded with pass 2 only."""
    facts = sdg.__dict__.get("_reference_raise_facts")
    if facts is None:
        facts = sdg.__dict__["_reference_raise_facts"] = raise_facts(sdg)
    found: set[Node] = set()
    seen: set = set()
    todo = [callee for dependent, callee in facts.catching_calls if dependent in nodes]
    while todo:
        key = todo.pop()
        if key in seen:
            continue
        seen.add(key)
        found.update(facts.raises.get(key, ()))
        todo.extend(facts.passes.get(key, ()))
    return found


def _function_facts(sdg: SDG) -> list[tuple]:
    """Per function: (entry, creators, implicit?, class entry, uncalled?, body) — facts of the program,
    shared with the compiled slicer (what is under test is how the slices use them)."""
    cached = sdg.__dict__.get("_reference_function_facts")
    if cached is None:
        cached = sdg.__dict__["_reference_function_facts"] = function_facts(sdg)
    return cached


def _enclosing_headers(sdg: SDG, nodes: set[Node]) -> set[Node]:
    """Handler and with-enter/-exit vertices whose bodies contain a kept vertex."""
    headers: set[Node] = set()
    by_proc: dict = {}
    for node in nodes:
        if node[0] == "v":
            by_proc.setdefault(node[1], []).append(node[2])
    for key, vids in by_proc.items():
        cfg = sdg.procs[key].cfg
        containers = clause_headers(cfg)
        for vid in vids:
            span = cfg.vertices[vid].span
            if span is None:
                continue
            for outer, ids in containers:
                if vid not in ids and (outer[0], outer[1]) <= span[:2] and span[2:] <= (outer[2], outer[3]):
                    headers.update(sdg.vertex(key, i) for i in ids)
    return headers


def _predecessors(sdg: SDG, kinds: frozenset[str]) -> dict[Node, list[Node]]:
    """node -> predecessors along edges of ``kinds``; built once per SDG and edge-kind set."""
    cache = sdg.__dict__.setdefault("_pred_cache", {})
    if kinds not in cache:
        preds: dict[Node, list[Node]] = {}
        for a, b, kind, _label in sdg.labelled_edges():
            if kind in kinds:
                preds.setdefault(b, []).append(a)
        cache[kinds] = preds
    return cache[kinds]


def _reach(sdg: SDG, start: set[Node], kinds: set[str], known: set[Node] | None = None) -> set[Node]:
    """Nodes reachable backwards from ``start`` along ``kinds`` (start included), not expanding
    through nodes in ``known`` other than the start nodes themselves; returns the nodes found."""
    preds = _predecessors(sdg, frozenset(kinds))
    known = known if known is not None else set()
    found = set(start)
    todo = deque(start)
    while todo:
        for pred in preds.get(todo.popleft(), ()):
            if pred not in found and pred not in known:
                found.add(pred)
                todo.append(pred)
    return found


def facts(index, mask) -> dict:
    """The facts of a slice mask as SliceIndex.facts computed them with Python loops over the whole
    program (before its arrays): the oracle for the vectorised version."""
    kept_sids = np.unique(index.span_id[mask])
    kept_sids = kept_sids[kept_sids >= 0]
    kept: dict[str, set] = {}
    for sid in kept_sids:
        file, span = index.spans[sid]
        kept.setdefault(file, set()).add(span)
    keep_units: dict[str, set] = {}
    for uid in np.unique(index.unit_id[mask]):
        if uid >= 0:
            file, qualname = index.units[uid]
            keep_units.setdefault(file, set()).add(qualname)
    calls = []
    for vertex, call, site, callees in index.calls:
        if not mask[vertex]:
            continue
        reached = [c for c, entry in callees if mask[entry]]
        calls.append({
            "site": site,
            "callees": [f"{f}:{q}" for f, q in call.callees],
            "why": ("it runs code the criterion depends on: " + ", ".join(f"{f}:{q}" for f, q in reached))
            if reached else "its result or effects reach the criterion (through summary edges)",
            "implicit": call.implicit,
            "resolved": call.resolved,  # "static", "name-fallback" or "observed" (hybrid slicing)
        })
    is_kept = np.zeros(len(index.spans) + 1, dtype=bool)
    is_kept[kept_sids] = True
    unresolved = [site for site, sids in index.unresolved if is_kept[sids].any()]
    calls_only: dict[str, list] = {}
    for vertex, returned, file, span in index.stores:
        if mask[vertex] and not mask[returned]:
            calls_only.setdefault(file, []).append(span)
    return {"kept": {f: tuple(sorted(spans)) for f, spans in sorted(kept.items())},  # spans: tuples
            "keep_units": {f: sorted(units) for f, units in sorted(keep_units.items())},
            "calls": calls, "unresolved": unresolved, "calls_only": calls_only,
            "statements_total": index.statements_total,
            "statements_kept": int(np.count_nonzero(mask & index.statement))}
