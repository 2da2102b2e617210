"""The SDG compiled once into one graph whose reachability *is* the slice, for slicing every feature fast.

The Horwitz-Reps-Binkley two-pass slice with the closure rules of :mod:`slicing` is the least set of
vertices closed under: pass-1 edges from pass-1 vertices, pass-2 edges from every slice vertex, and
rules "if X is in the slice, expand Y with pass 1 (or pass 2 only)". All of these are reachability in a
*product graph* with two copies of each SDG vertex, ``(v, 1)`` (found by pass 1) and ``(v, 2)`` (in the
slice):

* a dependence ``a -> b`` of a pass-1 kind gives ``(b, 1) -> (a, 1)``, of a pass-2 kind
  ``(b, 2) -> (a, 2)``; every ``(v, 1) -> (v, 2)`` (what pass 1 finds, pass 2 expands);
* a closure rule triggered by X gives ``(X, 2) -> (Y, 1)`` or ``(X, 2) -> (Y, 2)``: the writers of
  import-time constants X reads (``global`` edges; pass 2 only for a class attribute, or a constant an
  import-time statement of the same module reads: see :func:`import_time_given`), the
  ``except``/``with`` headers around X, the attribute statements of X's class body (``(X, 1) -> (Y, 1)``
  and ``(X, 2) -> (Y, 2)``: a class body entered by pass 2 only needs no ascent to its class statement),
  and the bodies of functions X creates that only the runtime calls (one hub vertex per function, so
  that any of its creators triggers all its targets; a method's creator is not ascended for it).

The slice of a criterion is then one breadth-first search from its ``(v, 1)`` vertices, run by
scipy's compiled ``breadth_first_order`` over a CSR matrix (a hub vertex at the end stands for the
criteria, so several criteria are one search). The sets the set-based algorithm computes round after
round (tests/slice_reference.py keeps it as the oracle) come out identical, at C speed: what was
seconds per slice on a 47 kLOC program becomes tens of milliseconds.
"""

from __future__ import annotations

import ast
from array import array
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.sparse import csr_matrix, diags
from scipy.sparse.csgraph import breadth_first_order, connected_components

from .batch_reach import WORDS, CondensedReach
from .dataflow import RET
from .sdg import ARGMUT, SDG, Node, ProcKey, callee_keys

PASS1 = frozenset({"control", "data", "summary", "call", "param-in"})
PASS2 = frozenset({"control", "data", "summary", "param-out"})
MASKS_KEPT = 256  # slices (and their facts) remembered per index, oldest dropped first


class SliceIndex:
    """An SDG compiled for slicing: build with :meth:`of` (cached on the SDG), slice with :meth:`slice`."""

    def __init__(self, sdg: SDG) -> None:
        self.sdg = sdg
        self.nodes: list[Node] = list(sdg.graph.nodes)
        self.ids: dict[Node, int] = {node: i for i, node in enumerate(self.nodes)}
        for key, proc in sdg.procs.items():  # vertices without edges can still be criteria or rule targets
            for vid in proc.cfg.vertices:
                self._id(sdg.vertex(key, vid))
        facts = _function_facts(sdg)
        self.n = len(self.nodes)
        n = self.n
        sources = array("q")  # compact: a large SDG has tens of millions of product edges
        targets = array("q")

        def edge(a: int, b: int) -> None:
            sources.append(a)
            targets.append(b)

        ids = self.ids
        for a, b, kind, label in sdg.graph.labelled():  # the summary edges, numbered already, follow below
            ia, ib = ids[a], ids[b]
            if kind in PASS1:
                edge(ib, ia)
            if kind in PASS2:
                edge(n + ib, n + ia)
            if kind == "global":  # constant writers: context-free, expanded by both passes (see below)
                edge(n + ib, ia + (n if import_time_given(sdg, a, b, label) else 0))
        for i in range(n):
            edge(i, n + i)
        for trigger, header in self._header_rules():
            edge(n + trigger, header)
        for class_entry, statement in _class_body_rules(sdg):
            edge(self._id(class_entry), self._id(statement))
            edge(n + self._id(class_entry), n + self._id(statement))
        for f, (entry, creators, implicit, class_entry, uncalled, body) in enumerate(facts):
            if not (implicit or uncalled):
                continue
            hub_f = 2 * self.n + f
            for creator in creators:
                edge(n + self._id(creator), hub_f)
                # ascend: the creators are expanded by both passes (a method's class body need not be)
                edge(hub_f, self._id(creator) + (n if in_class_body(sdg, creator) else 0))
            if implicit and class_entry is not None:
                edge(n + self._id(class_entry), hub_f)
            for vertex in (entry, *body):
                edge(hub_f, self._id(vertex) + (0 if uncalled else n))
        raising = raise_facts(sdg)
        first_raise_hub = 2 * self.n + len(facts)
        raise_hub = {key: first_raise_hub + i for i, key in enumerate(raising.procedures)}
        for call, callee in raising.catching_calls:
            if callee in raise_hub:
                edge(n + self._id(call), raise_hub[callee])
        for key, hub in raise_hub.items():
            for statement in raising.raises.get(key, ()):
                edge(hub, n + self._id(statement))
            for other in raising.passes.get(key, ()):
                if other in raise_hub:
                    edge(hub, raise_hub[other])
        self.size = first_raise_hub + len(raise_hub) + 1  # the last vertex is the criteria hub of a search
        self._first_raise_hub = first_raise_hub
        summary_in, summary_out = self._summary_edges(sdg)  # both passes follow them
        src = np.concatenate([np.frombuffer(sources, dtype=np.int64), summary_out, n + summary_out])
        dst = np.concatenate([np.frombuffer(targets, dtype=np.int64), summary_in, n + summary_in])
        # canonical CSR (sorted, no duplicate edges): scipy's strong components go wrong on duplicates
        base = csr_matrix((np.ones(len(src)), (src, dst)), shape=(self.size, self.size))
        base.sum_duplicates()
        self._indices = base.indices.astype(np.int32)
        self._indptr = base.indptr.astype(np.int32)
        self._nnz = len(self._indices)
        self._data = np.ones(self._nnz + self.n, dtype=np.float64)
        self._components = connected_components(base, directed=True, connection="strong")[1]
        self._masks: dict[tuple[int, ...], np.ndarray] = {}
        self._facts: dict[tuple[int, ...], dict[str, Any]] = {}
        self._condensed: CondensedReach | None = None
        self._actuals: dict[Node, list[int]] | None = None  # statement -> its calls' actuals (slice_without)
        if len(self.nodes) != n:
            raise AssertionError("a slicing rule names a vertex outside the SDG's procedures")
        self._describe()

    def _summary_edges(self, sdg: SDG) -> tuple[np.ndarray, np.ndarray]:
        """The SDG's summary edges (actual-in, actual-out) as arrays of this index's node ids; a large
        package has ten million, so they are translated as arrays, not one by one."""
        numbered = sdg.summary_nodes
        if self.nodes[:len(numbered)] == numbered:
            same = np.arange(len(numbered), dtype=np.int64)
        else:
            same = np.fromiter((self.ids[node] for node in numbered), dtype=np.int64, count=len(numbered))
        sources = np.frombuffer(sdg.summary_sources, dtype=np.int64) if len(sdg.summary_sources) else np.zeros(0, np.int64)
        targets = np.frombuffer(sdg.summary_targets, dtype=np.int64) if len(sdg.summary_targets) else np.zeros(0, np.int64)
        return same[sources], same[targets]

    @classmethod
    def of(cls, sdg: SDG) -> SliceIndex:
        """The index of ``sdg``, built on first use and kept on it."""
        return sdg.cached("_slice_index", cls)

    def _id(self, node: Node) -> int:
        found = self.ids.get(node)
        if found is None:
            found = self.ids[node] = len(self.nodes)
            self.nodes.append(node)
        return found

    # ------------------------------------------------------------------ slicing
    def slice(self, criteria: Iterable[Node]) -> np.ndarray:
        """A read-only boolean mask over :attr:`nodes`: the backward slice of ``criteria`` (HRB
        two-pass, closed under the rules of the module docstring)."""
        return self.keyed_slice(criteria)[1]

    def keyed_slice(self, criteria: Iterable[Node]) -> tuple[tuple[int, ...], np.ndarray]:
        """(key, mask): criteria in the same strongly connected components of the product graph reach
        the same vertices, so their slice is searched once and shared; ``key`` names those components."""
        starts = np.unique(np.fromiter((self.ids[c] for c in criteria), dtype=np.int32))
        key = tuple(np.unique(self._components[starts]).tolist())
        mask = self._masks.get(key)
        if mask is None:
            reached = breadth_first_order(self._search_graph(starts), self.size - 1, directed=True,
                                          return_predecessors=False)
            full = np.zeros(self.size, dtype=bool)
            full[reached] = True
            mask = full[self.n: 2 * self.n].copy()
            mask.flags.writeable = False
            if len(self._masks) >= MASKS_KEPT:
                self._masks.pop(next(iter(self._masks)))
            self._masks[key] = mask
        return key, mask

    def slice_without(self, criteria: Iterable[Node], removed: Iterable[Node]) -> np.ndarray:
        """The slice of ``criteria`` in the SDG less the statement vertices ``removed`` and the actual-in
        and actual-out vertices of the calls they make: no dependence runs through them, and they are not
        in the mask. What a truncated slice is (a statement cut out on purpose, such as the call into an
        expensive phase of the program); it is not a sound slice of the program, so whatever it is used
        for must be checked (benchmarks/bench_truncated.py measures it)."""
        starts = np.unique(np.fromiter((self.ids[c] for c in criteria), dtype=np.int32))
        actuals = self._actuals_by_statement()
        gone_ids = [i for v in removed if v in self.ids for i in (self.ids[v], *actuals.get(v, ()))]
        gone = np.unique(np.array(gone_ids, dtype=np.int64))
        graph = self._search_graph(starts)
        if len(gone):
            keep = np.ones(self.size)
            keep[gone] = 0.0
            keep[gone + self.n] = 0.0
            graph = (diags(keep) @ graph).tocsr()  # the removed vertices' rows emptied: nothing leaves them
            graph.eliminate_zeros()
        reached = breadth_first_order(graph, self.size - 1, directed=True, return_predecessors=False)
        full = np.zeros(self.size, dtype=bool)
        full[reached] = True
        mask = full[self.n: 2 * self.n].copy()
        mask[gone] = False
        return mask

    def _actuals_by_statement(self) -> dict[Node, list[int]]:
        if self._actuals is None:
            found: dict[Node, list[int]] = defaultdict(list)
            for i, node in enumerate(self.nodes[: self.n]):
                if node[0] in ("ain", "aout"):
                    caller, vertex, _ = node[1]
                    found[("v", caller, vertex)].append(i)
            self._actuals = found
        return self._actuals

    def _search_graph(self, starts: np.ndarray) -> csr_matrix:
        """The product graph with its last vertex (the criteria hub) pointing at ``starts``."""
        indices = np.concatenate([self._indices, starts.astype(np.int32)])
        indptr = self._indptr.copy()
        indptr[-1] = len(indices)
        return csr_matrix((self._data[: len(indices)], indices, indptr), shape=(self.size, self.size))

    def chain(self, criteria: Iterable[Node], targets: Iterable[Node]) -> list[tuple[Node, int]] | None:
        """The shortest chain of dependences by which the slice of ``criteria`` reaches one of ``targets``
        (the slice's own search, with predecessors): ``(node, pass)`` steps from a criterion to the target,
        ``pass`` 1 or 2 as in the module docstring; a rule's hub vertex is ``("hub", "runtime-call")`` or
        ``("hub", "raise")``. None when no target is in the slice."""
        starts = np.unique(np.fromiter((self.ids[c] for c in criteria), dtype=np.int32))
        order, predecessors = breadth_first_order(self._search_graph(starts), self.size - 1, directed=True,
                                                  return_predecessors=True)
        wanted = {self.n + self.ids[t] for t in targets if t in self.ids}
        found = next((i for i in order if i in wanted), None)
        if found is None:
            return None
        steps: list[tuple[Node, int]] = []
        i = int(found)
        while i != self.size - 1 and i >= 0:
            if i < 2 * self.n:
                steps.append((self.nodes[i % self.n], 1 if i < self.n else 2))
            else:
                steps.append((("hub", "runtime-call" if i < self._first_raise_hub else "raise"), 0))
            i = int(predecessors[i])
        return steps[::-1]

    def slices_of_many(self, criteria_sets: list[Iterable[Node]]) -> Iterator[tuple[list[int], tuple[int, ...], np.ndarray]]:
        """The slices of many criteria sets, each distinct slice once: (positions in ``criteria_sets`` of
        the sets with that slice, their key, the mask). Identical to :meth:`keyed_slice` set by set,
        but computed ``64 * WORDS`` keys per sweep of the condensed graph (batch_reach.py), which is
        what slicing every feature of a large program needs."""
        by_key: dict[tuple[int, ...], list[int]] = {}
        for position, criteria in enumerate(criteria_sets):
            starts = np.unique(np.fromiter((self.ids[c] for c in criteria), dtype=np.int64))
            by_key.setdefault(tuple(np.unique(self._components[starts]).tolist()), []).append(position)
        if self._condensed is None:
            base_indptr = self._indptr.astype(np.int64)
            self._condensed = CondensedReach(base_indptr, self._indices, self._components)
        keys = list(by_key)
        slice_copy = self._components[self.n: 2 * self.n]
        for first in range(0, len(keys), 64 * WORDS):
            batch = keys[first: first + 64 * WORDS]
            bits = self._condensed.reach(batch, WORDS)[slice_copy]
            for word in range(0, len(batch), 64):
                masks = CondensedReach.columns(bits, word // 64)
                for j, key in enumerate(batch[word: word + 64]):
                    mask = masks[j].copy()  # not a view that would keep the whole word's masks alive
                    mask.flags.writeable = False
                    yield by_key[key], key, mask

    def statement_vertices(self, file: str, spans: Iterable[tuple]) -> set[Node]:
        """The vertices of ``file`` (any procedure) that lie within any of ``spans`` (ast-style, byte
        columns): the statements the emitter keeps for the names they bind (see emit.planning.FilePlan.added:
        top-level statements, and the bindings of closure cells inside functions)."""
        wanted = [(tuple(sp[:2]), tuple(sp[2:])) for sp in spans]
        found = set()
        for key, proc in self.sdg.procs.items():
            if key[0] != file:
                continue
            for v in proc.cfg.vertices.values():
                if v.span is None:
                    continue
                start, end = tuple(v.span[:2]), tuple(v.span[2:])
                if any(first <= start and end <= last for first, last in wanted):
                    found.add(self.sdg.vertex(proc.key, v.id))
        return found

    def nodes_of(self, mask: np.ndarray) -> set[Node]:
        """The SDG vertices of a slice mask."""
        return {self.nodes[i] for i in np.flatnonzero(mask)}

    # ------------------------------------------------------------------ rules
    def _header_rules(self) -> list[tuple[int, int]]:
        """(vertex, header): a kept statement in an ``except`` or ``with`` body needs the clause's header
        (its exception type, its context manager) in the emitted program."""
        sdg = self.sdg
        rules = []
        for key, proc in sdg.procs.items():
            cfg = proc.cfg
            containers = clause_headers(cfg)
            if not containers:
                continue
            for v in cfg.vertices.values():
                span = v.span
                if span is None:
                    continue
                for outer, ids in containers:
                    if v.id not in ids and (outer[0], outer[1]) <= span[:2] and span[2:] <= (outer[2], outer[3]):
                        trigger = self._id(sdg.vertex(key, v.id))
                        rules.extend((trigger, self._id(sdg.vertex(key, i))) for i in ids)
        return rules

    # ------------------------------------------------------------------ the slice artefact's facts
    def _describe(self) -> None:
        """Per vertex: its source span, the code unit it keeps, whether it is a statement; per call site
        and unresolved site, what a slice reports about it."""
        sdg = self.sdg
        spans: dict[tuple, int] = {}
        self.span_id = np.full(self.n, -1, dtype=np.int32)
        self.unit_id = np.full(self.n, -1, dtype=np.int32)
        self.statement = np.zeros(self.n, dtype=bool)
        units: dict[tuple, int] = {}
        for i, node in enumerate(self.nodes[: self.n]):
            where = sdg.span_of(node)
            if where is not None:
                self.span_id[i] = spans.setdefault((where[0], tuple(where[1])), len(spans))
            if node[0] == "v":
                proc = sdg.procs[node[1]]
                kind = proc.cfg.vertices[node[2]].kind
                self.statement[i] = kind not in ("entry", "exit", "raise-exit")
                if node[2] == proc.cfg.entry.id and proc.unit.kind != "module":
                    self.unit_id[i] = units.setdefault(node[1], len(units))
        self.spans = list(spans)
        self.units = list(units)
        self.calls = []
        for proc in sdg.procs.values():
            for call in proc.calls:
                vertex = self.ids.get(sdg.vertex(proc.key, call.vertex))
                if vertex is None:
                    continue
                span = proc.cfg.vertices[call.vertex].span
                self.calls.append((vertex, call, f"{proc.key[0]}:{span[0]}:{span[1]}" if span else proc.key[0],
                                   [(c, self.ids[sdg.entry(c)]) for c in call.callees]))
        self.stores = _result_stores(sdg, self.ids)
        self.statements_total = sum(len(p.cfg.statements()) for p in sdg.procs.values())
        self.unresolved = self._unresolved_sites()
        self._prepare_facts()

    def _prepare_facts(self) -> None:
        """Arrays that let :meth:`facts` select a slice's spans, units and calls without a Python loop
        over the whole program: spans and units in report order, call sites with their callees flat."""
        def in_order(items: list[tuple]) -> tuple[np.ndarray, np.ndarray, list[str], np.ndarray]:
            order = np.array(sorted(range(len(items)), key=items.__getitem__), dtype=np.int64)
            files = sorted({file for file, _ in items})
            file_of = np.array([files.index(items[i][0]) for i in order] if files else [], dtype=np.int64)
            values = np.empty(len(items), dtype=object)
            values[:] = [items[i][1] for i in order]
            return order, values, files, np.searchsorted(file_of, np.arange(len(files) + 1))

        self._span_order, self._span_values, self._span_files, self._span_bounds = in_order(self.spans)
        self._unit_order, self._unit_values, self._unit_files, self._unit_bounds = in_order(self.units)
        self._unresolved_span = np.array([sid for _, sids in self.unresolved for sid in sids.tolist()], dtype=np.int64)
        self._unresolved_owner = np.array([i for i, (_, sids) in enumerate(self.unresolved) for _ in range(len(sids))],
                                          dtype=np.int64)
        self._call_vertex = np.array([c[0] for c in self.calls], dtype=np.int64)
        self._callee_entry = np.array([e for c in self.calls for _, e in c[3]], dtype=np.int64)
        self._callee_call = np.array([i for i, c in enumerate(self.calls) for _ in c[3]], dtype=np.int64)
        self._callee_count = np.bincount(self._callee_call, minlength=len(self.calls))
        self._call_static = []
        for _, call, site, callees in self.calls:
            names = [f"{f}:{q}" for f, q in call.callees]
            every = ("it runs code the criterion depends on: " + ", ".join(f"{f}:{q}" for (f, q), _ in callees))
            self._call_static.append((site, names, every, call.implicit, call.resolved, callees))

    def _unresolved_sites(self) -> list[tuple[str, np.ndarray]]:
        """(site, ids of the spans containing it) for each unresolved call site no observation resolved:
        a slice reports those inside its kept statements."""
        by_file: dict[str, list[int]] = {}
        for sid, (file, _) in enumerate(self.spans):
            by_file.setdefault(file, []).append(sid)
        arrays = {}
        for file, sids in by_file.items():
            starts = np.array([self.spans[s][1][:2] for s in sids], dtype=np.int64)
            ends = np.array([self.spans[s][1][2:] for s in sids], dtype=np.int64)
            arrays[file] = (np.array(sids), starts, ends)
        found = []
        for u in self.sdg.callgraph.unresolved:
            if (u.file, u.line, u.col) in self.sdg.observed_sites or u.file not in arrays:
                continue
            sids, starts, ends = arrays[u.file]
            after = (starts[:, 0] < u.line) | ((starts[:, 0] == u.line) & (starts[:, 1] <= u.col))
            before = (u.line < ends[:, 0]) | ((ends[:, 0] == u.line) & (u.col <= ends[:, 1]))
            found.append((str(u), sids[after & before]))
        return found

    def facts(self, mask: np.ndarray, key: tuple[int, ...] | None = None) -> dict[str, Any]:
        """What a slice artefact says about the slice ``mask``: kept spans per file, kept units, the kept
        call sites and why, unresolved sites inside the slice, statements kept / total. With the
        ``key`` of :meth:`keyed_slice`, remembered for the next feature with the same slice (callers
        must not change the result)."""
        if key is not None:
            found = self._facts.get(key)
            if found is None:
                if len(self._facts) >= MASKS_KEPT // 2:
                    self._facts.pop(next(iter(self._facts)))
                found = self._facts[key] = self.facts(mask)
            return found
        span_ids = self.span_id[mask]
        is_kept = np.zeros(len(self.spans) + 1, dtype=bool)  # the extra last entry takes span id -1
        is_kept[span_ids] = True
        is_kept[-1] = False
        unit_ids = self.unit_id[mask]
        unit_kept = np.zeros(len(self.units) + 1, dtype=bool)
        unit_kept[unit_ids] = True
        kept = _grouped(is_kept[self._span_order], self._span_values, self._span_files, self._span_bounds, tuple)
        keep_units = _grouped(unit_kept[self._unit_order], self._unit_values, self._unit_files, self._unit_bounds, list)
        reached_count = np.bincount(self._callee_call, weights=mask[self._callee_entry], minlength=len(self.calls))
        calls = []
        for i in np.flatnonzero(mask[self._call_vertex]).tolist():
            site, names, every, implicit, resolved, callees = self._call_static[i]
            reached = reached_count[i]
            if reached == self._callee_count[i] and reached:
                why = every
            elif reached:
                why = "it runs code the criterion depends on: " + ", ".join(
                    f"{f}:{q}" for (f, q), entry in callees if mask[entry])
            else:
                why = "its result or effects reach the criterion (through summary edges)"
            calls.append({"site": site, "callees": list(names), "why": why, "implicit": implicit,
                          "resolved": resolved})  # resolved: "static", "name-fallback" or "observed"
        hit = np.unique(self._unresolved_owner[is_kept[self._unresolved_span]]).tolist()
        unresolved = [self.unresolved[i][0] for i in hit]
        calls_only: dict[str, list[tuple]] = {}
        for vertex, returned, file, span in self.stores:
            if mask[vertex] and not mask[returned]:
                calls_only.setdefault(file, []).append(span)
        return {"kept": kept, "keep_units": keep_units,  # spans: tuples
                "calls": calls, "unresolved": unresolved, "calls_only": calls_only,
                "statements_total": self.statements_total,
                "statements_kept": int(np.count_nonzero(mask & self.statement))}


def _result_stores(sdg: SDG, ids: dict[Node, int]) -> list[tuple[int, int, str, tuple]]:
    """(statement id, id of its call's returned value, file, span) of each statement that stores one
    program call's whole result where storing can fail on a value the slice no longer computes: an
    unpacking (``n, d = f(x)``) or an augmented assignment (``total += f(x)``). The SDG lets such a
    statement keep its call without the result (see sdg._result_only_calls); when the result is not in
    a slice, its emitted callee returns None, so the emitter writes the bare call instead."""
    found = []
    for proc in sdg.procs.values():
        at: dict[int, list] = {}
        for call in proc.calls:
            at.setdefault(call.vertex, []).append(call)
        for vid, calls in at.items():
            if len(calls) != 1 or calls[0].implicit:
                continue
            vertex = proc.cfg.vertices[vid]
            stmt = vertex.node
            if isinstance(stmt, ast.Assign):
                fragile = any(not isinstance(t, (ast.Name, ast.Attribute, ast.Subscript)) for t in stmt.targets)
            else:
                fragile = isinstance(stmt, ast.AugAssign)
            if not fragile or not isinstance(stmt.value, ast.Call) or \
                    sum(isinstance(n, ast.Call) for n in ast.walk(stmt.value)) != 1 or vertex.span is None:
                continue
            statement, returned = ids.get(sdg.vertex(proc.key, vid)), ids.get(sdg.actual("aout", calls[0], RET))
            if statement is not None and returned is not None:
                found.append((statement, returned, proc.key[0], tuple(vertex.span)))
    return found


def _grouped(selected: np.ndarray, values: np.ndarray, files: list[str], bounds: np.ndarray, kind) -> dict[str, Any]:
    """{file: kind(its selected values)} from values sorted by (file, value), files in order."""
    chosen = np.flatnonzero(selected)
    cuts = np.searchsorted(chosen, bounds).tolist()
    picked = values[chosen].tolist()
    return {file: kind(picked[cuts[f]: cuts[f + 1]]) for f, file in enumerate(files) if cuts[f] < cuts[f + 1]}


def clause_headers(cfg) -> list[tuple[tuple, list[int]]]:
    """(span, header vertex ids) of each ``except`` clause and ``with`` statement of a procedure: a
    kept vertex inside the span needs those headers."""
    containers = []
    for v in cfg.vertices.values():
        if v.kind == "handler" and v.span:
            containers.append((v.span, [v.id]))
        elif v.kind == "with-exit" and v.span:
            enters = [u.id for u in cfg.vertices.values() if u.kind == "with-enter"
                      and any(u.node is item for item in v.node.items)]
            containers.append((v.span, [v.id, *enters]))
    return containers


def in_class_body(sdg: SDG, node: Node) -> bool:
    """The node is a statement of a class body."""
    return node[0] == "v" and sdg.procs[node[1]].unit.kind == "class"


def import_time_given(sdg: SDG, writer: Node, reader: Node, loc: Any) -> bool:
    """Whether a ``global`` edge's writer needs only pass 2 (no ascent to the imports that run its body).

    An attribute a class body defines (a method, a class constant) can be read only through the class or
    one of its instances, so whatever created them ran the class statement and the slice keeps that
    creation through the object's own dependences; and a constant one import-time statement reads from an
    earlier one of the same module was written in the same run of that module's body. Ascending from such
    a writer adds nothing but the sites that import its module, which, for a module imported lazily (in
    Whoosh, ``whoosh.searching`` by ``Index.searcher``), drags in all the work before them: a workload's
    ``args.docs`` may be ``Results.docs`` for a field-name heap, and was climbing into the whole index."""
    if writer[0] != "v":
        return False
    if in_class_body(sdg, writer) and isinstance(loc, tuple) and loc[:1] == ("attr",):
        return True
    import_time = ("module", "class")
    return (reader[0] == "v" and writer[1][0] == reader[1][0] and sdg.procs[writer[1]].unit.kind in import_time
            and sdg.procs[reader[1]].unit.kind in import_time)


def _class_body_rules(sdg: SDG) -> list[tuple[Node, Node]]:
    """(class entry, statement): the attribute statements of a class whose body runs in the slice
    (``x: int`` of a dataclass, enum members, ``__slots__``, class constants) are read implicitly (by
    decorators, metaclasses, ``getattr``); methods are decided one by one. They are expanded by the
    passes that found the class body's entry."""
    rules = []
    for key, proc in sdg.procs.items():
        if proc.unit.kind == "class":
            entry = sdg.entry(key)
            rules.extend((entry, sdg.vertex(key, v.id)) for v in proc.cfg.statements()
                         if not (v.kind == "def" and isinstance(v.node, (ast.FunctionDef, ast.AsyncFunctionDef))))
    return rules


def _steers_after_raise(sdg: SDG, node: Node) -> bool:
    """Whether a vertex that depends on a call raising makes the program do something else: a statement
    of the handler or of the rest of the ``try`` body, a loop going on or stopping (``break``,
    ``continue``, the loop's next step). Not the call's own parameter vertices, not an ``except`` header
    (kept for the statements inside it) and not a ``return``: either way the function ends, and only the
    value returned differs (not followed: a handler returning another value than the ``try`` body is a
    known gap)."""
    if node[0] != "v":
        return False
    vertex = sdg.procs[node[1]].cfg.vertices[node[2]]
    return vertex.kind != "handler" and not isinstance(vertex.node, ast.Return)


@dataclass(frozen=True)
class RaiseFacts:
    """Where exceptions steer the program (see :func:`raise_facts`)."""

    # (a vertex control dependent on a call that may raise into a handler of its unit, a callee of that call)
    catching_calls: list[tuple[Node, ProcKey]]
    raises: dict[ProcKey, list[Node]]  # procedure -> its ``raise`` statements that no handler of its own catches
    passes: dict[ProcKey, set[ProcKey]]  # procedure -> callees of its calls that no handler of its own catches
    procedures: list[ProcKey]  # the procedures an uncaught ``raise`` can leave, directly or through calls


def raise_facts(sdg: SDG) -> RaiseFacts:
    """Exceptions as control flow: what runs after a call that may raise into a handler of its own unit
    (its handlers, the rest of its ``try`` body) depends on whether its callees' uncaught ``raise``
    statements run (pyparsing backtracks by raising ``ParseException`` from ``parseImpl`` through
    ``_parseNoCache`` to ``MatchFirst.parseImpl``'s ``except``, which tries the next alternative). Once a
    vertex control dependent on such a call is in the slice, the slice keeps those statements, with pass 2
    (they run in that call's context), and the uncaught ``raise`` statements of the procedures they call
    where no handler of theirs catches either, transitively. Which exception a handler catches is not
    modelled: every uncaught ``raise`` counts."""
    catching: list[tuple[Node, ProcKey]] = []
    raises: dict[ProcKey, list[Node]] = {}
    passes: dict[ProcKey, set[ProcKey]] = {}
    for key, proc in sdg.procs.items():
        cfg = proc.cfg
        caught = {a for a, b, data in cfg.graph.edges(data=True)
                  if data.get("kind") == "exception" and cfg.vertices[b].kind == "handler"}
        own = [sdg.vertex(key, v.id) for v in cfg.vertices.values()
               if v.kind == "stmt" and isinstance(v.node, ast.Raise) and v.id not in caught]
        if own:
            raises[key] = own
        for call in proc.calls:
            callees = [c for c in call.callees if c in sdg.procs]
            if call.vertex in caught:
                dependents = {b for _, b, data in sdg.graph.out_edges(sdg.vertex(key, call.vertex), data=True)
                              if data["kind"] == "control" and data.get("label") not in ("catch", "rethrow")
                              and _steers_after_raise(sdg, b)}
                catching.extend((dependent, callee) for dependent in dependents for callee in callees)
            elif callees:
                passes.setdefault(key, set()).update(callees)
    raising = set(raises)
    callers_of: dict[ProcKey, set[ProcKey]] = defaultdict(set)
    for key, callees in passes.items():
        for callee in callees:
            callers_of[callee].add(key)
    todo = list(raising)
    while todo:
        for caller in callers_of.get(todo.pop(), ()):
            if caller not in raising:
                raising.add(caller)
                todo.append(caller)
    return RaiseFacts(catching, raises, {k: v & raising for k, v in passes.items() if k in raising}, sorted(raising))


def _function_facts(sdg: SDG) -> list[tuple]:
    """Per function/lambda: (entry, creator vertices, called implicitly?, its class's entry, never called
    explicitly?, its statement vertices).

    A function no resolved call reaches, yet created by a kept statement, has escaped as a value
    (``type=convert``, ``key=lambda ...``, a callback stored away), and a dunder method or property of a
    kept class is called implicitly (``sorted`` calls ``__lt__``, ``for`` calls ``__iter__``), and so is a
    method that overrides one of a base class outside the program (``HTMLParser.__init__`` calls the
    program's ``reset``, ``goahead`` its ``handle_starttag``): whatever
    calls them is invisible to the call graph, so their whole bodies are kept once a creator (or, for
    implicit ones, their class) is in the slice; their creators are then expanded by both passes, their
    bodies by both (never called explicitly) or by pass 2 only (they also have static call sites, which
    matter only if the slice already holds them). The body includes the actual-outs of its calls: a
    body kept whole keeps what its callees write (a plugin's ``md.block.register(...)``)."""
    facts = []
    overrides = _inherited_overrides(sdg, set(callee_keys(sdg, sdg.callgraph.external_overrides)))
    for key, proc in sdg.procs.items():
        if proc.unit.kind not in ("function", "lambda"):
            continue
        entry = sdg.entry(key)
        creators = [pred for pred, _, d in sdg.graph.in_edges(entry, data=True) if d.get("label") == "def"]
        name = proc.unit.qualname.rsplit(".", 1)[-1].split("@")[0]
        implicit = name.startswith("__") and name.endswith("__") or _is_property(proc.unit.node) or key in overrides
        parent = proc.unit.parent
        class_entry = sdg.entry((key[0], parent.qualname)) if parent is not None and parent.kind == "class" else None
        body = [sdg.vertex(key, v.id) for v in proc.cfg.statements()]
        # what the body's calls write: a body kept whole has effects whoever calls it, so the callees'
        # writes must come along (pass 2 descends into them from these actual-outs)
        body += [node for call in proc.calls for callee in call.callees
                 for loc in [*sdg.procs[callee].mod, *([ARGMUT] if sdg.procs[callee].mutates_args else [])]
                 if (node := sdg.actual("aout", call, loc)) in sdg.graph]
        # and what it returns: its callers are invisible, so the value is used
        if (returned := sdg.formal("fout", key, RET)) in sdg.graph:
            body.append(returned)
        facts.append((entry, creators, implicit, class_entry, not sdg.calls_to.get(key), body))
    return facts


def _inherited_overrides(sdg: SDG, overrides: set) -> set:
    """``overrides`` (methods an outside base calls) and, by base name, the same-named methods of program
    subclasses of their classes, transitively: the call graph only sees the modules the entry imports,
    and an extension loaded by computed name (Markdown's ``md_in_html.HTMLExtractorExtra(HTMLExtractor)``)
    overrides ``reset`` all the same."""
    found = set(overrides)
    open_names: dict[str, set[str]] = defaultdict(set)  # class name -> names of its overriding methods
    for file, qualname in overrides:
        if "." in qualname:
            owner, method = qualname.rsplit(".", 1)
            open_names[owner.rsplit(".", 1)[-1]].add(method)
    classes = [(key, proc.unit) for key, proc in sdg.procs.items() if proc.unit.kind == "class"]
    changed = True
    while changed:
        changed = False
        for key, unit in classes:
            inherited: set[str] = set()
            for base in unit.node.bases:
                name = base.id if isinstance(base, ast.Name) else base.attr if isinstance(base, ast.Attribute) else None
                inherited |= open_names.get(name or "", set())
            for child in unit.children:
                method = child.qualname.rsplit(".", 1)[-1].split("@")[0]
                if child.kind == "function" and method in inherited and (key[0], child.qualname) not in found:
                    found.add((key[0], child.qualname))
                    open_names[unit.node.name].add(method)
                    changed = True
            if not inherited <= open_names[unit.node.name]:
                open_names[unit.node.name] |= inherited
                changed = True
    return found


def _is_property(node: ast.AST) -> bool:
    for decorator in getattr(node, "decorator_list", []):
        name = decorator.attr if isinstance(decorator, ast.Attribute) else getattr(decorator, "id", "")
        if name in ("property", "setter", "getter", "deleter", "cached_property"):
            return True
    return False
