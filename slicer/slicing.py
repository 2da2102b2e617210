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
import hashlib
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from . import slice_index
from .dataflow import RET, reaching_definitions  # noqa: F401 - reaching_definitions re-exported for tests
from .sdg import SDG, Node, local_form
from .slice_index import SliceIndex

PASS1 = slice_index.PASS1
PASS2 = slice_index.PASS2


class CriterionError(Exception):
    """The feature cannot be found in the program's source."""


def backward_slice(sdg: SDG, criteria: set[Node]) -> set[Node]:
    """All SDG nodes the criteria depend on (HRB two-pass), closed under what Python runs implicitly
    and under syntax (a kept statement in an ``except`` or ``with`` body needs that clause's header):
    see slice_index.py, which computes it as one search of a compiled product graph."""
    index = SliceIndex.of(sdg)
    return index.nodes_of(index.slice(criteria))


# ---------------------------------------------------------------------- criteria
def _char_col(source_lines: list[bytes], line: int, byte_col: int) -> int:
    return len(source_lines[line - 1][:byte_col].decode("utf-8", "replace")) if 0 < line <= len(source_lines) else byte_col


def criterion_nodes(sdg: SDG, feature: dict[str, Any]) -> set[Node]:
    """SDG vertices standing for a manifest feature (see the module docstring)."""
    file, kind, detail = feature["file"], feature["kind"], feature["detail"]
    line, col = feature["span"][0], feature["span"][1]
    index = _CriterionIndex.of(sdg)
    facts = index.file(file)
    if facts is None:
        raise CriterionError(f"{file}: not a file of the analysed program")
    lines = facts.lines

    def at(node: ast.AST) -> bool:
        return getattr(node, "lineno", None) == line and _char_col(lines, line, node.col_offset) == col

    found: set[Node] = set()
    if kind == "loop":
        if detail in ("for", "async for"):
            targets = {id(n.target) for n in facts.at_line((ast.For, ast.AsyncFor), line) if at(n)}
            found = facts.vertices("for-next", lambda v: id(v.node) in targets)
        elif detail == "while":
            tests = {id(n.test) for n in facts.at_line((ast.While,), line) if at(n)}
            found = facts.vertices("test", lambda v: id(v.node) in tests)
        else:  # a comprehension's for clause: its target comes right after "for" (or "async for")
            found = facts.vertices("for-next", lambda v: _clause_target(lines, line, col, v.node))
    elif kind == "branch":
        found = _branch_criterion(sdg, facts, feature, at)
    elif kind == "call":
        key = (file, feature["qualname"])
        if key in sdg.procs:
            found = {sdg.entry(key)}
        else:
            found = {sdg.entry(p.key) for p in facts.procs if p.unit.kind in ("function", "lambda") and at(p.unit.node)}
    elif kind == "exception":
        found = facts.vertices("handler", lambda v: at(v.node))
    elif kind == "value":
        found = index.value_writers(feature)
        found |= _returned_values(sdg, found)
    if not found:
        raise CriterionError(f"{feature['id']}: no program statement found for it at {file}:{line}")
    return found


class _FileFacts:
    """One file of the program, indexed for finding criteria: its procedures, source lines, ast nodes by
    type and first line, and CFG vertices (those with an ast node) by kind."""

    def __init__(self, sdg: SDG, procs: list) -> None:
        self.sdg = sdg
        self.procs = procs
        self.lines = procs[0].source.source.encode("utf-8").splitlines()
        self.tree = procs[0].source.tree
        self.nodes: dict[type, list[ast.AST]] = {}
        for node in ast.walk(self.tree):
            self.nodes.setdefault(type(node), []).append(node)
        self.by_kind: dict[str | None, list[tuple[Any, Any]]] = {}
        for p in procs:
            for v in p.cfg.vertices.values():
                if v.node is not None:
                    self.by_kind.setdefault(v.kind, []).append((p, v))
                    self.by_kind.setdefault(None, []).append((p, v))

    def of_type(self, types: tuple[type, ...]) -> list[ast.AST]:
        """The file's ast nodes of these types."""
        return [n for t in types for n in self.nodes.get(t, ())]

    def at_line(self, types: tuple[type, ...], line: int) -> list[ast.AST]:
        """The file's ast nodes of these types that start on ``line``."""
        return [n for n in self.of_type(types) if n.lineno == line]

    def vertices(self, kind: str | None, predicate) -> set[Node]:
        """The SDG vertices of the file's CFG vertices of ``kind`` (None: any) for which ``predicate`` holds."""
        return {self.sdg.vertex(p.key, v.id) for p, v in self.by_kind.get(kind, ()) if predicate(v)}


class _CriterionIndex:
    """Per-file facts and variable writers of an SDG, built once (on first use) for all its features."""

    def __init__(self, sdg: SDG) -> None:
        self.sdg = sdg
        by_file: dict[str, list] = {}
        for key, proc in sdg.procs.items():
            by_file.setdefault(key[0], []).append(proc)
        self._procs = by_file
        self._files: dict[str, _FileFacts] = {}
        self._writers: dict[tuple, list[Node]] | None = None

    @classmethod
    def of(cls, sdg: SDG) -> _CriterionIndex:
        """The index of ``sdg``, kept on it."""
        return sdg.cached("_criterion_index", cls)

    def file(self, file: str) -> _FileFacts | None:
        """The facts of one file, or None if it is not a file of the program."""
        found = self._files.get(file)
        if found is None and file in self._procs:
            found = self._files[file] = _FileFacts(self.sdg, self._procs[file])
        return found

    def value_writers(self, feature: dict) -> set[Node]:
        """Every vertex that writes the location of a value feature ``NAME#V``."""
        if self._writers is None:
            self._writers = {}
            for key, proc in self.sdg.procs.items():
                for vid, access in proc.access.items():
                    for loc in access.defs:
                        self._writers.setdefault((key[0], loc), []).append(self.sdg.vertex(key, vid))
        base = feature.get("variable") or feature["id"].rsplit("#", 1)[0]
        file, scope, _, name = base.split(":", 3)
        loc = ("attr", name.rsplit(".", 1)[-1]) if "." in name else ("var", file, scope, name)
        found: set[Node] = set()
        for proc_file in self._procs:
            found.update(self._writers.get((proc_file, local_form(loc, proc_file)), ()))
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


def _branch_criterion(sdg: SDG, facts: _FileFacts, feature: dict, at) -> set[Node]:
    detail, line = feature["detail"], feature["span"][0]
    if detail in ("if", "elif", "implicit-else"):
        tests = {id(n.test) for n in facts.at_line((ast.If,), line) if at(n)}
        return facts.vertices("test", lambda v: id(v.node) in tests)
    if detail in ("ifexp-true", "ifexp-false"):
        exps = [n for n in facts.at_line((ast.IfExp,), line) if at(n)]
        holding = facts.vertices(None, lambda v: v.span is not None and any(_within(v.span, n) for n in exps))
        return holding and {max(holding, key=lambda node: _span_start(sdg, node))}
    if detail == "case":
        return facts.vertices("case", lambda v: _case_at(facts.lines, feature, v.node))
    if detail == "else":
        tests = {id(n.test) for n in facts.of_type((ast.If,)) if n.orelse and not _is_elif(n, facts.lines)
                 and n.body[-1].end_lineno <= line <= n.orelse[0].lineno}
        return facts.vertices("test", lambda v: id(v.node) in tests)
    if detail == "loop-else":
        loops = [n for n in facts.of_type((ast.For, ast.AsyncFor, ast.While)) if n.orelse
                 and n.body[-1].end_lineno <= line <= n.orelse[0].lineno]
        heads = ({id(n.target) for n in loops if not isinstance(n, ast.While)},
                 {id(n.test) for n in loops if isinstance(n, ast.While)})
        found = facts.vertices("for-next", lambda v: id(v.node) in heads[0])
        found |= facts.vertices("test", lambda v: id(v.node) in heads[1])
        breaks = {id(b) for n in loops for b in _own_breaks(n)}
        return found | facts.vertices(None, lambda v: id(v.node) in breaks)
    if detail == "try-else":
        tries = [n for n in facts.of_type((ast.Try, ast.TryStar)) if n.orelse
                 and n.body[-1].end_lineno <= line <= n.orelse[0].lineno]
        inside = {id(s) for t in tries for stmt in t.body for s in ast.walk(stmt)}
        return facts.vertices(None, lambda v: id(v.node) in inside)
    return set()


def _is_elif(node: ast.If, lines: list[bytes]) -> bool:
    """Is ``node``'s else arm an ``elif``? The AST makes ``else:`` holding only an ``if`` alike; the
    source says (``col_offset`` is a byte offset, as ``lines`` are bytes)."""
    if len(node.orelse) != 1 or not isinstance(node.orelse[0], ast.If):
        return False
    inner = node.orelse[0]
    text = lines[inner.lineno - 1] if 0 < inner.lineno <= len(lines) else b""
    return text[inner.col_offset:].startswith(b"elif")


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
    """Is ``case`` (an ``ast.match_case``, which has no position of its own) the one whose ``case`` keyword
    is at the feature's position? Its pattern follows the keyword, maybe after parentheses, line breaks
    and comments (``case (`` alone on its line, the alternatives on the lines below: pycparser)."""
    line, col = feature["span"][0], feature["span"][1]
    pattern = case.pattern
    if not 0 < line <= pattern.lineno <= len(lines):
        return False
    end_col = _char_col(lines, pattern.lineno, pattern.col_offset)
    between = [lines[n - 1].decode("utf-8", "replace") for n in range(line, pattern.lineno + 1)]
    between[-1] = between[-1][:end_col]
    between[0] = between[0][col + 4:] if len(between) > 1 else between[0][col + 4:end_col]
    if not between[0][:1].isspace() and between[0][:1] not in ("(", ""):
        return False  # "case" is followed by a separator: "caseX" is no keyword
    return all(not text.split("#", 1)[0].strip(" \t\r\n(\\") for text in between)


# ---------------------------------------------------------------------- the slice artefact
def slice_feature(sdg: SDG, feature: dict[str, Any], entry: str) -> dict[str, Any]:
    """The slice artefact (docs/contracts.md) of one feature: kept statement spans per file and why."""
    return slice_features(sdg, [feature], entry)


def iter_feature_slices(sdg: SDG, features: dict[str, dict[str, Any]],
                        on_error: Callable[[str, str], None] | None = None) -> Iterator[tuple[list[str], dict[str, Any]]]:
    """Slice every feature of ``features`` (id -> manifest entry), each distinct slice once: yields (ids
    of the features sharing that slice (the same kept vertices), its facts: kept spans per file, kept units, kept calls and why,
    unresolved sites, statements kept / total). The slices are those of :func:`slice_feature`, computed
    a thousand criteria per sweep (SliceIndex.slices_of_many) and streamed, since the facts of every
    slice of a large program do not fit in memory together. A feature with no criterion in the
    program goes to ``on_error(feature id, reason)``."""
    ids, criteria = [], []
    for fid, feature in features.items():
        try:
            criteria.append(criterion_nodes(sdg, feature))
        except CriterionError as exc:
            if on_error is not None:
                on_error(fid, str(exc))
            continue
        ids.append(fid)
    index = SliceIndex.of(sdg)
    # criteria in different components often still reach the same vertices: group by the slice itself
    # (kept packed, an eighth of the mask) and compute each distinct slice's facts once
    distinct: dict[bytes, tuple[list[str], np.ndarray]] = {}
    for positions, _, mask in index.slices_of_many(criteria):
        packed = np.packbits(mask)
        digest = hashlib.blake2b(packed.tobytes(), digest_size=16).digest()
        entry = distinct.setdefault(digest, ([], packed))
        entry[0].extend(ids[p] for p in positions)
    for fids, packed in distinct.values():
        yield fids, index.facts(np.unpackbits(packed, count=index.n).astype(bool))


def slice_features(sdg: SDG, features: list[dict[str, Any]], entry: str,
                   also: dict[str, list] | None = None, removed: set[Node] | None = None) -> dict[str, Any]:
    """One slice for several features at once (the union of their criteria, sliced in one pass), as a
    predictor's combined evaluator needs it. The first feature fills the ``criterion*`` fields; all of
    them are listed under ``criteria``. ``also`` (file -> spans of statements) adds the statements the
    emitter keeps for the names they bind to the criteria (see SliceSession.emit_combined). ``removed``:
    statement vertices cut out of the program first, with their calls' actuals (a truncated slice,
    see SliceIndex.slice_without)."""
    if not features:
        raise CriterionError("no feature to slice for")
    criteria: set[Node] = set()
    for feature in features:
        criteria |= criterion_nodes(sdg, feature)
    index = SliceIndex.of(sdg)
    for file, spans in (also or {}).items():
        criteria |= index.statement_vertices(file, spans)
    if removed:
        mask = index.slice_without(criteria, removed)
        facts = index.facts(mask)
    else:
        key, mask = index.keyed_slice(criteria)
        facts = index.facts(mask, key)
    observed = _observed_in_slice(sdg, index, mask)
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
        "kept": {f: list(spans) for f, spans in facts["kept"].items()},  # spans as (immutable) tuples
        "keep_units": {f: list(units) for f, units in facts["keep_units"].items()},
        "calls": [dict(call) for call in facts["calls"]],
        "unresolved": list(facts["unresolved"]),
        "statements_total": facts["statements_total"],
        "statements_kept": facts["statements_kept"],
        **({"calls_only": {f: list(spans) for f, spans in facts["calls_only"].items()}} if facts["calls_only"] else {}),
        **({"calls_observed": observed} if sdg.observed is not None else {}),
    }


def _observed_in_slice(sdg: SDG, index: SliceIndex, mask) -> list[dict[str, Any]]:
    """Hybrid slicing: the call sites of kept statements that were resolved by observed calls (their
    static resolution failed), each with the observed callees and what the name fallback would have
    given instead."""
    return [{k: v for k, v in info.items() if not k.startswith("_")}
            for _, info in sorted(sdg.observed_sites.items())
            if info["_vertex"] in index.ids and mask[index.ids[info["_vertex"]]]]
