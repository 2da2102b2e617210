"""Truncated slices (issue 18): how much of a counter's slice is left when the calls into the program's
expensive phases that cannot reach the counter are cut out, and what the cut evaluators give.

    python benchmarks/bench_truncated.py --spec examples/campaigns/minisearch-demo.toml --work demo-out/work
    python benchmarks/bench_truncated.py --spec benchmarks/work/suite/sqlparse/campaign.toml \\
        --work benchmarks/work/suite/sqlparse/build-work --emit 12 --json records.json
    python benchmarks/bench_truncated.py --render records.json --write     # the table into RESULTS.md

``--work`` is a finished ``mantispy build``'s work folder (its store, ``mantis.db``, and the calls the
build observed for hybrid slicing). For every loop and call counter that ran on the store's median input
(by wall time):

* **full**: the share of that run's loop iterations and calls its slice keeps (the build's own
  estimate, :func:`mantispy.build.slice_work_share`; the build measures no evaluator at 30 % or more);
* **cut sites**: each call in the slice that is a statement's whole value (``f(x)``, ``y = f(x)``: not a
  ``yield``, ``return`` or compound statement) whose observed callees, with everything they were seen
  to call, never reach the counter's own function, and hold at least ``--threshold`` of the run's loop
  iterations and calls: an expensive phase the counter is not part of;
* **value-kept**: the slice without the cut sites (:meth:`SliceIndex.slice_without`), a cut site put
  back while the truncated slice reads a value its statement binds, until none is read: the truncated
  program computes what the original computes, but for the cut phases' effects on the heap;
* **blind**: every cut site stays cut, whatever reads its value (the evaluator may then fail on a name
  nothing binds, or count something else);
* ``--emit N``: under each rule, up to N of the counters the cut brings under 30 % (spread over them in
  the order of their ids) are emitted as evaluators and run warm on eight stored inputs spread over
  their run times: does the evaluator run, does it give the counter's stored value on all eight, and
  what it costs (seconds of the warm evaluation over the original run's wall time, median).
"""

from __future__ import annotations

import argparse
import ast
import json
import shutil
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from results import publish  # noqa: E402

from mantispy.build import entry_string, slice_work_share, slicing_root  # noqa: E402
from mantispy.campaign import load_spec  # noqa: E402
from mantispy.observe import calls_file  # noqa: E402
from mantispy.slicer.evaluators import EvaluatorError, SliceSession  # noqa: E402
from mantispy.slicer.slice_index import SliceIndex  # noqa: E402
from mantispy.slicer.slicing import criterion_nodes  # noqa: E402
from mantispy.slicer.warm_client import WarmError, WarmEvaluator  # noqa: E402
from mantispy.store import RunStore  # noqa: E402

ESTIMATE_LIMIT = 0.30  # the build emits no evaluator whose slice keeps this much of the work
EMIT_INPUTS = 8


def log(message: str) -> None:
    print(f"[truncated {time.strftime('%H:%M:%S')}] {message}", flush=True)


class Study:
    """One built program: its SDG, its median run's work per function, and the observed call graph."""

    def __init__(self, spec_path: Path, work: Path) -> None:
        self.spec = load_spec(spec_path)
        store = RunStore(work / "mantis.db", create=False)
        campaign = store.campaign(self.spec.name)
        if campaign is None:
            raise SystemExit(f"{work / 'mantis.db'}: no campaign named {self.spec.name!r}; build the spec first")
        observed = calls_file(store.path, self.spec.name)
        self.session = SliceSession(slicing_root(self.spec), entry_string(self.spec),
                                    observed_calls=observed if observed.exists() else None)
        self.sdg = self.session.sdg
        self.index = SliceIndex.of(self.sdg)
        self.features = self.session.features
        self.walls = {r["input_id"]: r["metrics"]["wall_s"] for r in store.runs(campaign, "original")
                      if r["status"] == "ok"}
        run_inputs = {r["run_id"]: r["input_id"] for r in store.runs(campaign, "instrumented")
                      if r["status"] == "ok" and r["input_id"] in self.walls}
        self.counts: dict[str, dict[str, float]] = {}
        for run_id, feature, value in store.features_of(campaign):
            if run_id in run_inputs:
                self.counts.setdefault(run_inputs[run_id], {})[feature] = value
        by_wall = sorted(self.counts, key=self.walls.get)
        self.by_wall = by_wall
        self.median_counts = self.counts[by_wall[len(by_wall) // 2]]
        self.argv = {i: d["argv"] for i, d in store.inputs(campaign).items()}
        self.unit_work: dict[tuple[str, str], float] = defaultdict(float)
        for fid, count in self.median_counts.items():
            info = self.features.get(fid)
            if info is not None and info["kind"] in ("loop", "call") and count > 0:
                self.unit_work[(info["file"], info["qualname"])] += count
        self.total = sum(self.unit_work.values())
        self.callees: dict[tuple, list] = {}  # call site (file, line, col, end line, end col) -> SDG procedures
        self.calls_from: dict[tuple[str, str], set] = defaultdict(set)
        if self.session.observed_calls is not None:
            spans: dict[str, list[tuple[int, int, tuple[str, str]]]] = defaultdict(list)
            for key, proc in self.sdg.procs.items():
                node = proc.unit.node
                spans[key[0]].append((getattr(node, "lineno", 1), getattr(node, "end_lineno", 10**9), key))
            for file, sites in self.session.observed_calls.calls_by_file(self.sdg).items():
                for site, callees in sites:
                    self.callees[site] = callees
                    # every site counts, a ``for`` over a generator (recorded at its statement) included
                    holders = [(end - start, key) for start, end, key in spans.get(file, ()) if start <= site[1] <= end]
                    if holders:
                        self.calls_from[min(holders)[1]].update(callees)
            for key, proc in self.sdg.procs.items():  # comprehensions and class bodies run where they stand
                for record in proc.calls:
                    if record.implicit in ("comprehension", "class-body"):
                        self.calls_from[key].update(record.callees)
        self._closures: dict[frozenset, set] = {}

    def counters(self) -> list[str]:
        """The loop and call counters that ran on the median input."""
        return sorted(f for f, v in self.median_counts.items()
                      if v > 0 and f in self.features and self.features[f]["kind"] in ("loop", "call"))

    def closure(self, callees: list) -> set:
        key = frozenset(callees)
        found = self._closures.get(key)
        if found is None:
            found, todo = set(), list(callees)
            while todo:
                unit = todo.pop()
                if unit not in found:
                    found.add(unit)
                    todo.extend(self.calls_from.get(unit, ()))
            self._closures[key] = found
        return found

    def cut_sites(self, feature: str, mask, threshold: float) -> list:
        """The call records of the slice ``mask`` that enter an expensive phase the counter is not part of."""
        info = self.features[feature]
        own = (info["file"], info["qualname"])
        found = []
        for key, proc in self.sdg.procs.items():
            for record in proc.calls:
                if record.implicit or record.node is None:
                    continue
                vertex = self.sdg.vertex(record.caller, record.vertex)
                position = self.index.ids.get(vertex)
                if position is None or not mask[position]:
                    continue
                statement = proc.cfg.vertices[record.vertex].node
                if not (isinstance(statement, (ast.Expr, ast.Assign, ast.AnnAssign, ast.AugAssign))
                        and statement.value is record.node):
                    continue
                callees = self.callees.get(_site(key[0], record.node))
                if not callees:
                    continue
                reached = self.closure(callees)
                if own in reached:
                    continue
                if sum(self.unit_work.get(u, 0.0) for u in reached) >= threshold * self.total:
                    found.append(record)
        return found

    def truncated(self, feature: str, criteria: set, cut: list, keep_values: bool):
        """(mask, statement vertices removed) of the slice without the cut sites."""
        removed = {self.sdg.vertex(r.caller, r.vertex) for r in cut}
        while True:
            mask = self.index.slice_without(criteria, removed)
            if not keep_values:
                return mask, removed
            read = {v for v in removed
                    if any(d["kind"] == "data" and b in self.index.ids and mask[self.index.ids[b]]
                           for _, b, d in self.sdg.graph.out_edges(v, data=True))}
            if not read:
                return mask, removed
            removed -= read

    def share(self, mask) -> float:
        facts = self.index.facts(mask)
        result = _Kept(facts["kept"], facts["calls"])
        return slice_work_share(result, self.features, self.median_counts) or 0.0


class _Kept:
    """The two fields of a slice artefact the work estimate reads."""

    def __init__(self, kept: dict, calls: list) -> None:
        self.kept = kept
        self.calls = calls


def _site(file: str, node: ast.Call) -> tuple:
    return (file, node.lineno, node.col_offset, node.end_lineno, node.end_col_offset)


def emit_and_run(study: Study, feature: str, removed: set, out: Path) -> dict[str, Any]:
    """The blind truncated evaluator of ``feature`` on EMIT_INPUTS stored inputs."""
    try:
        result, _ = study.session.emit_combined([feature], out, removed=removed)
    except EvaluatorError as exc:
        return {"feature": feature, "emitted": False, "error": str(exc)[:200]}
    picks = [study.by_wall[round(i * (len(study.by_wall) - 1) / (EMIT_INPUTS - 1))] for i in range(EMIT_INPUTS)]
    row: dict[str, Any] = {"feature": feature, "emitted": True, "kept": result.statements_kept,
                           "total": result.statements_total, "runs": 0, "equal": 0, "costs": [], "error": None}
    warm = WarmEvaluator(str(out))
    try:
        warm.start()
        for input_id in picks:
            try:
                values, seconds = warm.evaluate(study.argv[input_id], None, cwd=str(study.spec.workdir), timeout=60)
            except WarmError as exc:
                row["error"] = f"{input_id}: {str(exc)[:200]}"
                break
            row["runs"] += 1
            row["equal"] += values.get(feature) == study.counts[input_id].get(feature, 0.0)
            row["costs"].append(seconds / study.walls[input_id])
    except WarmError as exc:
        row["error"] = f"does not start: {str(exc)[:200]}"
    finally:
        warm.close()
    return row


def study_program(spec: Path, work: Path, threshold: float, emit: int) -> dict[str, Any]:
    started = time.perf_counter()
    study = Study(spec, work)
    log(f"{study.spec.name}: SDG in {time.perf_counter() - started:.1f} s, "
        f"{len(study.callees)} observed call sites")
    rows = []
    for feature in study.counters():
        criteria = criterion_nodes(study.sdg, study.features[feature])
        mask = study.index.slice(criteria)
        full = study.share(mask)
        cut = study.cut_sites(feature, mask, threshold) if full >= ESTIMATE_LIMIT else []
        if not cut:
            rows.append({"feature": feature, "full": full, "kept_values": full, "blind": full, "cut": 0, "removed": None})
            continue
        kept_mask, kept_removed = study.truncated(feature, criteria, cut, keep_values=True)
        blind_mask, blind_removed = study.truncated(feature, criteria, cut, keep_values=False)
        rows.append({"feature": feature, "full": full, "kept_values": study.share(kept_mask),
                     "blind": study.share(blind_mask), "cut": len(cut),
                     "removed": {"kept_values": kept_removed, "blind": blind_removed}})
    emitted: dict[str, list] = {"kept_values": [], "blind": []}
    if emit:
        scratch = Path(tempfile.mkdtemp(prefix="mantispy-truncated-"))
        try:
            for rule, found in emitted.items():
                gained = [r for r in rows if r["removed"] and r["removed"][rule] and r[rule] < ESTIMATE_LIMIT]
                picks = gained if len(gained) <= emit else [gained[round(i * (len(gained) - 1) / (emit - 1))]
                                                            for i in range(emit)]
                for n, row in enumerate(picks):
                    ran = emit_and_run(study, row["feature"], row["removed"][rule], scratch / f"{rule}-{n}")
                    ran.update(full=row["full"], share=row[rule])
                    log(f"  {rule} {row['feature']}: share {row['full']:.1%} -> {row[rule]:.1%}, runs {ran.get('runs')}, "
                        f"equal {ran.get('equal')}, costs {[round(c, 3) for c in ran.get('costs', [])]} {ran.get('error') or ''}")
                    found.append(ran)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    under = {k: sum(r[k] < ESTIMATE_LIMIT for r in rows) for k in ("full", "kept_values", "blind")}
    for row in rows:
        row.pop("removed")
    return {
        "program": study.spec.name, "counters": len(rows), "threshold": threshold,
        "median": {k: statistics.median(r[k] for r in rows) if rows else None for k in ("full", "kept_values", "blind")},
        "under": under, "with_cuts": sum(1 for r in rows if r["cut"]), "emitted": emitted,
        "seconds": time.perf_counter() - started,
    }


def render(records: list[dict[str, Any]]) -> list[str]:
    lines = [
        f"Command: `python benchmarks/bench_truncated.py --spec SPEC --work WORK ... --emit 12` (`--threshold "
        f"{records[0]['threshold'] if records else ''}`), rendered {time.strftime('%Y-%m-%d')}. Work share: of the "
        "median input's loop iterations and calls, made in what the slice keeps (the build's estimate).",
        "",
        "| program | counters | with a cut site | median work share: full / value-kept / blind | under 30 %: full / value-kept / blind | value-kept evaluators of counters brought under 30 %: run on all 8 inputs / equal to the counter on all 8 / median cost | blind evaluators: the same |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in records:
        m, u = r["median"], r["under"]
        lines.append(f"| {r['program']} | {r['counters']} | {r['with_cuts']} | {m['full']:.1%} / {m['kept_values']:.1%} / "
                     f"{m['blind']:.1%} | {u['full']} / {u['kept_values']} / {u['blind']} | "
                     f"{_emitted(r['emitted']['kept_values'])} | {_emitted(r['emitted']['blind'])} |")
    return lines


def _emitted(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "-"
    whole = [x for x in rows if x.get("emitted") and x["runs"] == EMIT_INPUTS]
    costs = [statistics.median(x["costs"]) for x in whole]
    equal = sum(x["equal"] == EMIT_INPUTS for x in whole)
    return f"{len(whole)} of {len(rows)} / {equal} / " + (f"{statistics.median(costs):.0%}" if costs else "-")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", type=Path, action="append", default=[], help="campaign spec (repeatable)")
    parser.add_argument("--work", type=Path, action="append", default=[], help="its build's work folder")
    parser.add_argument("--render", type=Path, help="only render the records a --json run wrote")
    parser.add_argument("--threshold", type=float, default=0.05, help="least share of the run a cut phase holds")
    parser.add_argument("--emit", type=int, default=0, help="blind truncated evaluators to emit and run")
    parser.add_argument("--write", action="store_true", help="write the table to RESULTS.md")
    parser.add_argument("--json", type=Path, help="also write the records here")
    args = parser.parse_args()
    if args.render is not None:
        records = json.loads(args.render.read_text())
    else:
        if not args.spec or len(args.spec) != len(args.work):
            parser.error("give --spec and its --work folder (one each per program), or --render RECORDS")
        records = [study_program(s, w, args.threshold, args.emit) for s, w in zip(args.spec, args.work)]
    if args.json:
        args.json.write_text(json.dumps(records, indent=1, default=str) + "\n")
    publish("truncated", "Truncated slices: cutting the expensive phases out of a counter's slice (issue 18)",
            render(records), args.write)


if __name__ == "__main__":
    main()
