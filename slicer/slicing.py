"""Backward slices of the SDG for a feature counter: the Horwitz-Reps-Binkley two-pass algorithm,
closed under what Python runs implicitly (the paper's "slicing made practical", in Python terms).

The criterion of a feature is the set of SDG vertices whose executions (or values) determine the
counter at program exit:

* loop: the ``for-next`` vertex (``while``: its test; comprehension clause: its ``for-next``);
* branch arm: the test that decides it (the last test of the chain for ``else`` and the implicit
  else), the ``case`` vertex, the vertex holding a conditional expression; loop ``else``: the loop head
  and the loop's ``break`` statements; ``try ... else``: the statements of the ``try`` body;
* call: the function's entry vertex (reached by the call vertices of its callers);
* exception handler: the ``handler`` vertex (it depends on the statements that may raise into it);
* value ``NAME#V``: every vertex that writes the variable's location (assignments, loop targets,
  parameters at entry).

Pass 1 goes backwards along control, data, summary, call and parameter-in edges (it ascends into
callers but never descends into callees, whose effect arrives through summary edges); pass 2 starts
from everything pass 1 found and goes along control, data, summary and parameter-out edges (it
descends into callees but does not ascend again). The writers of import-time constants the slice
reads (``global`` edges, context-free: they run at import) are expanded by both passes.
"""

from __future__ import annotations

import ast
from collections import deque
from typing import Any

from .dataflow import RET, reaching_definitions  # noqa: F401 - reaching_definitions re-exported for tests
from .sdg import SDG, Node, _local_form

PASS1 = {"control", "data", "summary", "call", "param-in"}
PASS2 = {"control", "data", "summary", "param-out"}


class CriterionError(Exception):
    """The feature cannot be found in the program's source."""


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
        todo = (_enclosing_headers(sdg, nodes) | ascend | _class_bodies(sdg, nodes) | _constant_writers(sdg, nodes)) - first
        descend -= nodes
    return nodes


def _constant_writers(sdg: SDG, nodes: set[Node]) -> set[Node]:
    """The module/class-body statements that write the import-time constants the slice reads (``global``
    edges, see sdg._import_time_constants): they run at import, in no caller's context, so both
    passes expand them (pass 1 ascends to the imports that run their module)."""
    preds = _predecessors(sdg, frozenset({"global"}))
    return {writer for node in nodes for writer in preds.get(node, ())}


def _class_bodies(sdg: SDG, nodes: set[Node]) -> set[Node]:
    """The attribute statements of every class whose body runs in the slice: ``x: int`` of a
    dataclass, enum members, ``__slots__``, class constants are read implicitly (by decorators,
    metaclasses, ``getattr``), so a kept class keeps them (methods are decided one by one)."""
    extra: set[Node] = set()
    for key, proc in sdg.procs.items():
        if proc.unit.kind == "class" and sdg.entry(key) in nodes:
            for v in proc.cfg.statements():
                if not (v.kind == "def" and isinstance(v.node, (ast.FunctionDef, ast.AsyncFunctionDef))):
                    extra.add(sdg.vertex(key, v.id))
    return extra


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
            ascend.update(creators)
            (ascend if uncalled else descend).update([entry, *body])
    return ascend, descend


def _function_facts(sdg: SDG) -> list[tuple]:
    """Per function/lambda: (entry, creator vertices, called implicitly?, its class's entry, never called
    explicitly?, its statement vertices); computed once per SDG."""
    cached = sdg.__dict__.get("_function_facts")
    if cached is not None:
        return cached
    facts = []
    for key, proc in sdg.procs.items():
        if proc.unit.kind not in ("function", "lambda"):
            continue
        entry = sdg.entry(key)
        creators = [pred for pred, _, d in sdg.graph.in_edges(entry, data=True) if d.get("label") == "def"]
        name = proc.unit.qualname.rsplit(".", 1)[-1].split("@")[0]
        implicit = name.startswith("__") and name.endswith("__") or _is_property(proc.unit.node)
        parent = proc.unit.parent
        class_entry = sdg.entry((key[0], parent.qualname)) if parent is not None and parent.kind == "class" else None
        body = [sdg.vertex(key, v.id) for v in proc.cfg.statements()]
        facts.append((entry, creators, implicit, class_entry, not sdg.calls_to.get(key), body))
    sdg.__dict__["_function_facts"] = facts
    return facts


def _is_property(node: ast.AST) -> bool:
    for decorator in getattr(node, "decorator_list", []):
        name = decorator.attr if isinstance(decorator, ast.Attribute) else getattr(decorator, "id", "")
        if name in ("property", "setter", "getter", "deleter", "cached_property"):
            return True
    return False


def _enclosing_headers(sdg: SDG, nodes: set[Node]) -> set[Node]:
    """Handler and with-enter/-exit vertices whose bodies contain a kept vertex."""
    headers: set[Node] = set()
    by_proc: dict = {}
    for node in nodes:
        if node[0] == "v":
            by_proc.setdefault(node[1], []).append(node[2])
    for key, vids in by_proc.items():
        cfg = sdg.procs[key].cfg
        containers = []
        for v in cfg.vertices.values():
            if v.kind == "handler" and v.span:
                containers.append((v.span, [v.id]))
            elif v.kind == "with-exit" and v.span:
                enters = [u.id for u in cfg.vertices.values() if u.kind == "with-enter"
                          and any(u.node is item for item in v.node.items)]
                containers.append((v.span, [v.id, *enters]))
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
        for a, b, data in sdg.graph.edges(data=True):
            if data["kind"] in kinds:
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


# ---------------------------------------------------------------------- criteria
def _char_col(source_lines: list[bytes], line: int, byte_col: int) -> int:
    return len(source_lines[line - 1][:byte_col].decode("utf-8", "replace")) if 0 < line <= len(source_lines) else byte_col


def criterion_nodes(sdg: SDG, feature: dict[str, Any]) -> set[Node]:
    """SDG vertices standing for a manifest feature (see the module docstring)."""
    file, kind, detail = feature["file"], feature["kind"], feature["detail"]
    line, col = feature["span"][0], feature["span"][1]
    procs = [p for key, p in sdg.procs.items() if key[0] == file]
    if not procs:
        raise CriterionError(f"{file}: not a file of the analysed program")
    lines = procs[0].source.source.encode("utf-8").splitlines()

    def at(node: ast.AST) -> bool:
        return getattr(node, "lineno", None) == line and _char_col(lines, line, node.col_offset) == col

    def vertices(predicate) -> set[Node]:
        return {sdg.vertex(p.key, v.id) for p in procs for v in p.cfg.vertices.values() if v.node is not None and predicate(v)}

    found: set[Node] = set()
    if kind == "loop":
        if detail in ("for", "async for"):
            found = vertices(lambda v: v.kind == "for-next" and _parent_loop_at(p_tree(sdg, file), v.node, at))
        elif detail == "while":
            found = vertices(lambda v: v.kind == "test" and _is_loop_test(p_tree(sdg, file), v.node, ast.While, at))
        else:  # a comprehension's for clause: its target comes right after "for" (or "async for")
            found = vertices(lambda v: v.kind == "for-next" and _clause_target(lines, line, col, v.node))
    elif kind == "branch":
        found = _branch_criterion(sdg, procs, file, feature, lines, at, vertices)
    elif kind == "call":
        key = (file, feature["qualname"])
        if key in sdg.procs:
            found = {sdg.entry(key)}
        else:
            found = {sdg.entry(p.key) for p in procs if p.unit.kind in ("function", "lambda") and at(p.unit.node)}
    elif kind == "exception":
        found = vertices(lambda v: v.kind == "handler" and at(v.node))
    elif kind == "value":
        found = _value_criterion(sdg, feature)
        found |= _returned_values(sdg, found)
    if not found:
        raise CriterionError(f"{feature['id']}: no program statement found for it at {file}:{line}")
    return found


def _returned_values(sdg: SDG, nodes: set[Node]) -> set[Node]:
    """The actual-out of the returned value of every call at these statements: ``x = f(a)`` defines x from
    what f returns, which the statement vertex alone does not stand for (see sdg._result_only_calls)."""
    extra: set[Node] = set()
    for node in nodes:
        if node[0] != "v":
            continue
        for call in sdg.procs[node[1]].calls:
            if call.vertex == node[2]:
                extra.add(sdg.actual("aout", call, RET))
    return {n for n in extra if n in sdg.graph}


def p_tree(sdg: SDG, file: str) -> ast.Module:
    """The ast of a file of the program."""
    return next(p.source.tree for k, p in sdg.procs.items() if k[0] == file)


def _parent_loop_at(tree: ast.Module, target: ast.AST, at) -> bool:
    return any(isinstance(n, (ast.For, ast.AsyncFor)) and n.target is target and at(n) for n in ast.walk(tree))


def _is_loop_test(tree: ast.Module, test: ast.AST, loop_type, at) -> bool:
    return any(isinstance(n, loop_type) and n.test is test and at(n) for n in ast.walk(tree))


def _clause_target(lines: list[bytes], line: int, col: int, target: ast.AST) -> bool:
    """Is ``target`` the target of the comprehension clause whose libcst span starts at (line, col)?

    libcst's CompFor starts at the whitespace before ``for``, which may include a line break."""
    if getattr(target, "lineno", None) is None:
        return False
    while 0 < line <= len(lines):
        text = lines[line - 1].decode("utf-8", "replace")
        col += len(text[col:]) - len(text[col:].lstrip())
        if col < len(text):
            break
        line, col = line + 1, 0
    else:
        return False
    rest = text[col:]
    keyword = "async for" if rest.startswith("async") else "for"
    offset = col + len(keyword) + (len(rest[len(keyword):]) - len(rest[len(keyword):].lstrip()))
    return target.lineno == line and _char_col(lines, line, target.col_offset) == offset


def _branch_criterion(sdg, procs, file, feature, lines, at, vertices) -> set[Node]:
    detail, line = feature["detail"], feature["span"][0]
    tree = p_tree(sdg, file)
    if detail in ("if", "elif", "implicit-else"):
        ifs = [n for n in ast.walk(tree) if isinstance(n, ast.If) and at(n)]
        return vertices(lambda v: v.kind == "test" and any(v.node is n.test for n in ifs))
    if detail in ("ifexp-true", "ifexp-false"):
        exps = [n for n in ast.walk(tree) if isinstance(n, ast.IfExp) and at(n)]
        return vertices(lambda v: v.span is not None and any(_within(v.span, n) for n in exps)) and {
            max((n for n in vertices(lambda v: v.span is not None and any(_within(v.span, e) for e in exps))),
                key=lambda node: _span_start(sdg, node))}
    if detail == "case":
        return vertices(lambda v: v.kind == "case" and _case_at(lines, feature, v.node))
    if detail == "else":
        ifs = [n for n in ast.walk(tree) if isinstance(n, ast.If) and n.orelse and not _is_elif(n)
               and n.body[-1].end_lineno <= line <= n.orelse[0].lineno]
        return vertices(lambda v: v.kind == "test" and any(v.node is n.test for n in ifs))
    if detail == "loop-else":
        loops = [n for n in ast.walk(tree) if isinstance(n, (ast.For, ast.AsyncFor, ast.While)) and n.orelse
                 and n.body[-1].end_lineno <= line <= n.orelse[0].lineno]
        heads = vertices(lambda v: any((v.kind == "for-next" and v.node is getattr(n, "target", None))
                                       or (v.kind == "test" and v.node is getattr(n, "test", None)) for n in loops))
        breaks = {b for n in loops for b in _own_breaks(n)}
        return heads | vertices(lambda v: v.node in breaks)
    if detail == "try-else":
        tries = [n for n in ast.walk(tree) if isinstance(n, (ast.Try, ast.TryStar)) and n.orelse
                 and n.body[-1].end_lineno <= line <= n.orelse[0].lineno]
        inside = {id(s) for t in tries for stmt in t.body for s in ast.walk(stmt)}
        return vertices(lambda v: id(v.node) in inside)
    return set()


def _is_elif(node: ast.If) -> bool:
    return len(node.orelse) == 1 and isinstance(node.orelse[0], ast.If)


def _own_breaks(loop: ast.AST) -> list[ast.AST]:
    found, todo = [], list(loop.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Break):
            found.append(node)
        elif not isinstance(node, (ast.For, ast.AsyncFor, ast.While, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            todo.extend(ast.iter_child_nodes(node))
    return found


def _within(span, node: ast.AST) -> bool:
    return (span[0], span[1]) <= (node.lineno, node.col_offset) and (node.end_lineno, node.end_col_offset) <= (span[2], span[3])


def _span_start(sdg: SDG, node: Node) -> tuple:
    where = sdg.span_of(node)
    return where[1][:2] if where else (0, 0)


def _case_at(lines: list[bytes], feature: dict, case: ast.AST) -> bool:
    line, col = feature["span"][0], feature["span"][1]
    pattern = case.pattern
    text = lines[line - 1].decode("utf-8", "replace") if 0 < line <= len(lines) else ""
    after = col + 4 + (len(text[col + 4:]) - len(text[col + 4:].lstrip()))
    return pattern.lineno == line and _char_col(lines, line, pattern.col_offset) == after


def _value_criterion(sdg: SDG, feature: dict) -> set[Node]:
    base = feature.get("variable") or feature["id"].rsplit("#", 1)[0]
    file, scope, _, name = base.split(":", 3)
    if "." in name:
        loc = ("attr", name.rsplit(".", 1)[-1])
    else:
        loc = ("var", file, scope, name)
    found = set()
    for key, proc in sdg.procs.items():
        local = _local_form(loc, key[0])
        for vid, access in proc.access.items():
            if local in access.defs:
                found.add(sdg.vertex(key, vid))
    return found


# ---------------------------------------------------------------------- the slice artefact
def slice_feature(sdg: SDG, feature: dict[str, Any], entry: str) -> dict[str, Any]:
    """The slice artefact (docs/contracts.md) of one feature: kept statement spans per file and why."""
    return slice_features(sdg, [feature], entry)


def slice_features(sdg: SDG, features: list[dict[str, Any]], entry: str) -> dict[str, Any]:
    """One slice for several features at once (the union of their criteria, sliced in one pass), as a
    predictor's combined evaluator needs it. The first feature fills the ``criterion*`` fields; all of
    them are listed under ``criteria``."""
    if not features:
        raise CriterionError("no feature to slice for")
    criteria: set[Node] = set()
    for feature in features:
        criteria |= criterion_nodes(sdg, feature)
    nodes = backward_slice(sdg, criteria)
    kept: dict[str, set] = {}
    keep_units: dict[str, set] = {}
    for node in nodes:
        where = sdg.span_of(node)
        if where is not None:
            kept.setdefault(where[0], set()).add(tuple(where[1]))
        if node[0] == "v":
            proc = sdg.procs[node[1]]
            if node[2] == proc.cfg.entry.id and proc.unit.kind != "module":
                keep_units.setdefault(node[1][0], set()).add(node[1][1])
    calls = []
    for proc in sdg.procs.values():
        for call in proc.calls:
            if sdg.vertex(proc.key, call.vertex) in nodes:
                span = proc.cfg.vertices[call.vertex].span
                reached = [c for c in call.callees if sdg.entry(c) in nodes]
                calls.append({
                    "site": f"{proc.key[0]}:{span[0]}:{span[1]}" if span else proc.key[0],
                    "callees": [f"{f}:{q}" for f, q in call.callees],
                    "why": ("it runs code the criterion depends on: " + ", ".join(f"{f}:{q}" for f, q in reached))
                    if reached else "its result or effects reach the criterion (through summary edges)",
                    "implicit": call.implicit,
                    "resolved": call.resolved,  # "static", "name-fallback" or "observed" (hybrid slicing)
                })
    total = sum(len(p.cfg.statements()) for p in sdg.procs.values())
    kept_count = sum(1 for n in nodes if n[0] == "v" and sdg.procs[n[1]].cfg.vertices[n[2]].kind
                     not in ("entry", "exit", "raise-exit"))
    unresolved = [str(u) for u in sdg.callgraph.unresolved if (u.file, u.line, u.col) not in sdg.observed_sites
                  and any(u.file == f and (u.line, u.col) >= s[:2] and (u.line, u.col) <= s[2:] for f, spans in kept.items() for s in spans)]
    observed = _observed_in_slice(sdg, nodes)
    feature = features[0]
    return {
        "criterion": feature["id"],
        "criterion_kind": feature["kind"],
        "criterion_file": feature["file"],
        "criterion_span": list(feature["span"]),
        "criterion_detail": feature["detail"],
        "criteria": [{"id": f["id"], "kind": f["kind"], "file": f["file"], "span": list(f["span"]),
                      "detail": f["detail"]} for f in features],
        "entry": entry,
        "kept": {f: sorted(list(s) for s in spans) for f, spans in sorted(kept.items())},
        "keep_units": {f: sorted(units) for f, units in sorted(keep_units.items())},
        "calls": calls,
        "unresolved": unresolved,
        "statements_total": total,
        "statements_kept": kept_count,
        **({"calls_observed": observed} if sdg.observed is not None else {}),
    }


def _observed_in_slice(sdg: SDG, nodes: set[Node]) -> list[dict[str, Any]]:
    """Hybrid slicing: the call sites of kept statements that were resolved by observed calls (their
    static resolution failed), each with the observed callees and what the name fallback would have
    given instead."""
    return [{k: v for k, v in info.items() if not k.startswith("_")}
            for _, info in sorted(sdg.observed_sites.items()) if info["_vertex"] in nodes]
