"""Feature evaluators for a whole program, and their fidelity.

:class:`SliceSession` loads a program once, builds its call graph and SDG (summary edges included)
once, and then slices and emits any number of features. :func:`check_fidelity` is the property that
matters (issue 6): for each feature, the emitted evaluator must give the value the fully instrumented
program records, on every input; a feature whose evaluator fails or disagrees on any input is
*unsliceable*, with the reason, and must never be offered to the model as cheap.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from mantispy.core.launch import program_argv, program_env
from mantispy.core.watchdog import WATCHDOG, run_watched
from mantispy.instrument.transformer import Options, instrument_source

from . import kit
from .callgraph import build_call_graph
from .emit import EmitError, emit_slice
from .program import Program
from .sdg import Precision, build_sdg
from .slice_result import SliceResult
from .slicing import CriterionError, slice_features


class EvaluatorError(Exception):
    """A feature cannot be sliced or emitted; the message says why."""


class TooDeepError(EvaluatorError):
    """The program nests deeper than the analysis can follow (the message names the deepest file)."""


class SliceSession:
    """One program, analysed once, sliced many times."""

    def __init__(self, src: Path, entry: str, observed_calls=None, reuse: SliceSession | None = None,
                 program: Program | None = None, precision: Precision | None = None) -> None:
        """``observed_calls`` (a path, JSON document or observations.Observations) makes the slices hybrid:
        call sites static inference left unresolved get their observed callees (see observations.py and hybrid.py).
        ``reuse``: another session of the same program whose program and call graph are shared (the call
        graph is built again if the observations saw modules run that it lacks); ``program``:
        the program already loaded from ``src``; ``precision``: what the SDG may assume (sdg.Precision;
        a reused session's SDG is built again with its own)."""
        self.program = reuse.program if reuse is not None else program if program is not None else Program.load(src)
        self.entry = entry
        started = time.perf_counter()
        try:
            self.observed_calls = None
            if observed_calls is not None:
                from .observations import Observations

                self.observed_calls = Observations.coerce(observed_calls)
            # modules that ran although no import names them (plugins imported by a computed name): their
            # call sites are analysed too, or a callee profiling saw run would call nothing in the SDG
            ran = [] if self.observed_calls is None else sorted(
                self.program.by_path[f].modname for f in self.observed_calls.files_run()
                if f in self.program.by_path and self.program.by_path[f].modname)
            covered = set() if reuse is None else {
                f.file for f in reuse.callgraph.functions.values() if f.kind == "module"}
            if reuse is not None and all(self.program.by_module[m].path in covered for m in ran):
                self.callgraph = reuse.callgraph
            else:
                self.callgraph = build_call_graph(self.program, entry_path(self.program, entry), also=ran)
            self.sdg = build_sdg(self.program, self.callgraph, self.observed_calls, precision)
        except RecursionError:
            path, depth = self.program.deepest_file()
            raise TooDeepError(f"{path}: nested {depth} levels deep, deeper than the slicer can follow (Python's "
                               "recursion limit); split that expression or statement into smaller ones") from None
        self.build_seconds = time.perf_counter() - started
        self.features = dict(reuse.features) if reuse is not None else {f["id"]: f for f in features_of(self.program)}
        self.derived_counts: frozenset[str] | None = reuse.derived_counts if reuse is not None else None
        """The counters the profile's instrumentation counted with no probe (its manifest's ``derived``),
        which evaluators count the same way; None: those the default instrumentation derives."""

    def slice(self, feature_id: str, also: dict[str, list] | None = None) -> SliceResult:
        """The slice of one feature (raises EvaluatorError if its construct cannot be found); ``also``:
        statements (file -> spans) to slice for as well (see :meth:`emit_combined`)."""
        return self.slice_combined([feature_id], also)

    def emit(self, feature_id: str, out_dir: Path, k: int = 5, counts_on_failure: bool = False):
        """Slice and write the evaluator of one feature; returns (SliceResult, EmitReport)."""
        return self.emit_combined([feature_id], out_dir, k, counts_on_failure=counts_on_failure)

    def slice_combined(self, feature_ids: list[str], also: dict[str, list] | None = None,
                       removed: set | None = None) -> SliceResult:
        """One slice for several features (shared work kept once); ``removed``: statement vertices cut out
        of the program first, with their calls' actuals (a truncated slice: see SliceIndex.slice_without)."""
        missing = [f for f in feature_ids if f not in self.features]
        if missing:
            raise EvaluatorError(f"{missing[0]}: no such feature in {self.program.root}; see mantispy instrument's manifest")
        try:
            return SliceResult.from_dict(slice_features(self.sdg, [self.features[f] for f in feature_ids], self.entry, also,
                                                        removed))
        except CriterionError as exc:
            raise EvaluatorError(str(exc)) from None

    def emit_combined(self, feature_ids: list[str], out_dir: Path, k: int = 5, rounds: int = 8,
                      counts_on_failure: bool = False, removed: set | None = None):
        """Slice for and write one evaluator computing every feature of ``feature_ids`` in a single run of
        the sliced program; returns (SliceResult, EmitReport). ``evaluate_all`` in its evaluate.py gives
        {feature id: value}.

        The emitter keeps statements the slice lacks when kept code reads the names they bind
        (``Text = Token.Text``, a class a kept import names, the binding of a closure cell a kept
        statement reads); they run in the evaluator, so they are sliced for too (``Token.Text`` needs ``_TokenType.__getattr__``) and the evaluator emitted again,
        until the emitter adds nothing new (at most ``rounds`` times). ``counts_on_failure``: the evaluator
        gives the counts of a run that fails (a sampled evaluator's: the program may fail on a cut file).
        ``removed``: statement vertices left out of every slice (a truncated evaluator, see :meth:`slice_combined`)."""
        also: dict[str, list] = {}
        for _ in range(rounds):
            result = self.slice_combined(feature_ids, also, removed)
            try:
                report = emit_slice(self.program, result, out_dir, k, counts_on_failure=counts_on_failure,
                                    derived=self.derived_counts)
            except EmitError as exc:
                raise EvaluatorError(f"{feature_ids[0] if len(feature_ids) == 1 else 'combined evaluator'}: {exc}") from None
            grown = False
            for file, spans in report.added.items():
                known = also.setdefault(file, [])
                for span in spans:
                    if list(span) not in known:
                        known.append(list(span))
                        grown = True
            if not grown:
                break
        (Path(out_dir) / "slice.json").write_text(json.dumps(result.to_dict(), indent=1) + "\n")
        return result, report


def features_of(program: Program, k: int = 5) -> list[dict[str, Any]]:
    """The manifest entries of every feature, exactly as ``mantispy instrument`` would number them."""
    features = []
    for source in program.files:
        result = instrument_source(source.source, source.path, Options(k=k))
        features.extend(asdict(f) for f in result.features)
    return features


def entry_path(program: Program, entry: str) -> str | None:
    """The entry's file for the call graph: a script's path as given, a ``-m`` module's (or its ``__main__``'s)
    file, a ``module:function`` entry's module file; None when the program has no such module."""
    if entry.startswith("-m "):
        module = entry[3:].strip()
        source = program.by_module.get(module) or program.by_module.get(module + ".__main__")
        return source.path if source else None
    if ":" in entry and not entry.endswith(".py"):
        source = program.by_module.get(entry.partition(":")[0])
        return source.path if source else None
    return entry


@dataclass
class FeatureFidelity:
    """How one feature's evaluator did."""

    feature: str
    kind: str
    status: str  # "sliceable", "unsliceable"
    agreed: int = 0
    inputs: int = 0
    statements_kept: int = 0
    statements_total: int = 0
    reason: str = ""
    mismatches: list[dict[str, Any]] = field(default_factory=list)

    @property
    def fidelity(self) -> float:
        return self.agreed / self.inputs if self.inputs else 0.0


def run_instrumented(src: Path, entry: str, inputs: list[list[str]], work: Path, cwd: Path) -> list[dict[str, float]]:
    """The ground truth: the fully instrumented program's features on every input."""
    from mantispy.instrument.tree import instrument_tree

    build = work / "instrumented"
    instrument_tree(src, build, force=True)
    truths = []
    for n, args in enumerate(inputs):
        out = work / f"truth-{n}.json"
        invocation = _invocation(entry, args)
        proc = run_watched(program_argv(build, invocation), env=program_env(build, out), cwd=cwd,
                              capture_output=True, text=True, timeout=600)
        if proc.returncode != 0:
            raise EvaluatorError(f"input {' '.join(args)!r} fails on the instrumented program: {proc.stderr.strip()[-300:]}")
        truths.append(json.loads(out.read_text()) if out.exists() else {})
    return truths


def run_evaluator(out_dir: Path, args: list[str], cwd: Path, timeout: float = 600,
                  kwargs: dict[str, Any] | None = None) -> tuple[dict[str, float], float]:
    """Run an emitted evaluator in a fresh interpreter on one input (``args``, or ``kwargs`` for a
    module:function entry); returns ({feature: value}, seconds of wall time of the whole subprocess).
    Raises EvaluatorError when it fails or runs past ``timeout``."""
    script = str(Path(out_dir).resolve() / kit.ENTRY_FILE)
    command = ([script, "--mantis-json-kwargs", json.dumps(kwargs)] if kwargs is not None
               else [script, "--mantis-json", *args])
    WATCHDOG.start()  # not inside the timed run
    started = time.perf_counter()
    try:
        proc = run_watched([sys.executable, *command], cwd=cwd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise EvaluatorError(f"evaluator ran longer than {timeout:.3g} s") from None
    seconds = time.perf_counter() - started
    if proc.returncode != 0:
        said = (proc.stderr.strip().splitlines() or ["?"])[-1]
        raise EvaluatorError("evaluator fails: " + said.removeprefix(kit.ERROR_PREFIX)[:300])
    return {k: float(v) for k, v in json.loads(proc.stdout.strip().splitlines()[-1]).items()}, seconds


def evaluator_confinement(out_dir: Path) -> str:
    """One line: what confines an evaluation of the emitted evaluator in ``out_dir`` on this machine
    (``evaluate.py --mantis-confinement``; see :mod:`mantispy.slicer.confine`)."""
    script = str(Path(out_dir).resolve() / kit.ENTRY_FILE)
    try:
        proc = run_watched([sys.executable, script, "--mantis-confinement"], capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        return "unknown (the evaluator did not answer within 60 s)"
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or len(lines) < 2:
        return "unknown (" + ((proc.stderr.strip().splitlines() or ["no answer"])[-1])[:200] + ")"
    return lines[-1]


def _invocation(entry: str, args: list[str]) -> list[str]:
    """How the instrumented program runs one input: a script or ``-m`` module with ``args``; a
    ``module:function`` entry through :mod:`mantispy.runtime.entry` with ``args`` = [its keyword arguments
    as one JSON object]."""
    if entry.startswith("-m "):
        return ["-m", entry[3:].strip(), *args]
    if ":" in entry and not entry.endswith(".py"):
        kwargs = args[0] if args else "{}"
        try:
            ok = isinstance(json.loads(kwargs), dict) and len(args) <= 1
        except ValueError:
            ok = False
        if not ok:
            raise EvaluatorError(f"input {' '.join(args)!r}: entry {entry} takes its keyword arguments as one JSON "
                                 "object, e.g. '{\"n\": 3}'")
        return ["-m", "mantispy.runtime.entry", entry, kwargs]
    return [entry, *args]


def check_fidelity(session: SliceSession, src: Path, inputs: list[list[str]], feature_ids: list[str],
                   cwd: Path | None = None, keep: Path | None = None) -> list[FeatureFidelity]:
    """Compare every feature's evaluator with the instrumented program on every input.

    Features whose slices keep exactly the same statements share one emitted program (their single
    evaluators would differ only in which counter they report), run once per input for all of them."""
    cwd = Path(cwd or os.getcwd())
    with tempfile.TemporaryDirectory(prefix="mantis-fidelity-") as tmp:
        work = Path(tmp)
        truths = run_instrumented(src, session.entry, inputs, work, cwd)
        rows: dict[str, FeatureFidelity] = {}
        groups: dict[str, list[str]] = {}
        for fid in feature_ids:
            row = rows[fid] = FeatureFidelity(fid, session.features[fid]["kind"], "unsliceable", inputs=len(inputs))
            try:
                result = session.slice(fid)
            except EvaluatorError as exc:
                row.reason = f"cannot emit: {exc}"
                continue
            row.statements_kept, row.statements_total = result.statements_kept, result.statements_total
            groups.setdefault(json.dumps([result.kept, result.keep_units, result.calls_only], sort_keys=True), []).append(fid)
        for n, members in enumerate(groups.values()):
            out = (keep or work) / f"evaluator-{n}"
            try:
                session.emit_combined(members, out)
            except EvaluatorError as exc:
                for fid in members:
                    rows[fid].reason = f"cannot emit: {exc}"
                continue
            for args, truth in zip(inputs, truths):
                proc = run_watched([sys.executable, str(out / "evaluate.py"), *args], cwd=cwd,
                                      capture_output=True, text=True, timeout=600)
                if proc.returncode != 0:
                    error = (proc.stderr.strip().splitlines() or ["?"])[-1][:300]
                    for fid in members:
                        rows[fid].mismatches.append({"input": args, "error": error})
                    continue
                last = proc.stdout.strip().splitlines()[-1]
                values = json.loads(last) if len(members) > 1 else {members[0]: float(last)}
                for fid in members:
                    expected, got = float(truth.get(fid, 0)), float(values.get(fid, math.nan))
                    if math.isclose(got, expected, rel_tol=1e-9, abs_tol=1e-9):
                        rows[fid].agreed += 1
                    else:
                        rows[fid].mismatches.append({"input": args, "expected": expected, "got": got})
            if keep is None:
                shutil.rmtree(out, ignore_errors=True)
        for row in rows.values():
            if row.reason:
                continue
            if row.agreed == row.inputs:
                row.status = "sliceable"
            else:
                first = row.mismatches[0]
                row.reason = (f"evaluator fails: {first['error']}" if "error" in first
                              else f"evaluator gives {first['got']:g}, the program {first['expected']:g} on {' '.join(first['input'])!r}")
        return [rows[fid] for fid in feature_ids]
