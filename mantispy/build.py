"""``mantispy build``: from a campaign spec to a predictor package (paper Fig. 1 and 2, §6.3 Table 1).

instrument -> profile -> fit -> slice the selected features -> time each evaluator on training inputs ->
reject the features whose evaluator costs more than ``max_cost`` of the program's run time, or that
cannot be sliced faithfully -> refit without them -> repeat until every selected feature is cheap; then
emit one combined evaluator for all selected features, validate the predictor on the held-out inputs and
write the package (:mod:`mantispy.predictor`).

Work that is already done is reused: the campaign's runs live in a store in the work folder (a rerun
profiles only what is missing; a changed program source or spec starts the campaign over), and every
feature's evaluator verdict is cached there under the source hash.

Costs are measured, never guessed: an evaluator runs in a fresh interpreter, exactly as the predictor
runs it, and its cost is its wall time minus that of an interpreter that does nothing (the start-up every
evaluation pays once, reported separately), over the *uninstrumented* program's wall time on the same
input. The models learn the uninstrumented program's metrics: the build profiles every input both
instrumented (features) and uninstrumented (metrics), i.e. ``calibration_runs = "all"``.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import math
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mantispy.build_record import (
    BUILD_FILE,
    BuildRecord,
    BuildRecordError,
    CampaignRecord,
    FeatureRecord,
    MachineRecord,
    MetricRecord,
    OptionsRecord,
    input_check_choice,
)
from mantispy.campaign import CALIBRATE_ALL, CampaignSpec, SpecError, load_spec
from mantispy.content.stage import chosen_columns
from mantispy.content.stage import cost as content_cost
from mantispy.content.stage import describe as describe_content
from mantispy.content.types import ContentTable
from mantispy.errors import BuildError
from mantispy.instrument.tree import InstrumentError
from mantispy.modeling import artefact
from mantispy.modeling.averaging import ENSEMBLE_SIZE
from mantispy.modeling.defaults import INTERVAL_LEVELS, VIEW_CONFIDENCE
from mantispy.modeling.fitting import (
    FitRequest,
    as_work_model,
    few_training_inputs,
    fit_campaign,
    measured_metric,
    resolve_metric,
    split_inputs,
    split_problem,
    with_extra_features,
)
from mantispy.modeling.spore import ModelingError
from mantispy.modeling.work import MEASURED as WORK_MEASURED
from mantispy.modeling.work import WORK_METRIC, work_fallback
from mantispy.outputs import OutputError, check_folder, is_predictor, refuse_overlap
from mantispy.profiler import environment_fingerprint, profile
from mantispy.runtime.content import CONTENT_PREFIX
from mantispy.runtime.descriptors import INPUT_PREFIX, argv_files, describe_input, prefixed_numbers
from mantispy.runtime.sampled_input import SAMPLED_PREFIX, counter_of
from mantispy.sampled.evaluate import evaluate_sampled
from mantispy.sampled.gate import SamplingGate, sampling_gate
from mantispy.slicer.warm_client import WarmEvaluator
from mantispy.store import RunStore, StoreError

DEFAULT_METRICS = ("wall_s", "cpu_s", "work_s", "max_rss_kb")
UNITS = {"wall_s": "s", "cpu_s": "s", "work_s": "s", "max_rss_kb": "KiB"}

Log = Callable[[str], None]


@dataclass
class BuildOptions:
    """What ``mantispy build`` was asked for."""

    spec: Path
    out: Path
    work: Path | None = None  # default: <spec workdir>/.mantis/build-work/<campaign name>
    metrics: tuple[str, ...] = DEFAULT_METRICS
    max_cost: float = 0.05
    train_fraction: float = 0.1
    degree: int = 3
    method: str = "lasso"
    seed: int = 0
    jobs: int = 1
    max_rounds: int = 10
    lookahead: int = 30  # features judged ahead per round with rejections (most correlated with the metric)
    cost_inputs: int = 3
    validate_inputs: int | None = None  # held-out inputs to validate on (None: all)
    observed_calls: bool = True  # hybrid slicing: resolve what inference cannot with calls seen in training runs
    force: bool = False
    form: str = "auto"  # the models' form: "auto" (cross-validated), "polynomial" or "log"
    repeats: int | None = None  # uninstrumented runs per input (default: the spec's original_repeats)
    inputs: bool = True  # the input descriptors (argv numbers, file sizes) are candidate features too
    solver: str = "sklearn"  # the final LASSO stage's solver: "sklearn" or "glmnet"
    penalty: str = "adaptive"  # the LASSO stages' penalty: "adaptive" or "plain" (see FitRequest)
    average: int = ENSEMBLE_SIZE  # each model: the geometric mean of this many best-ranked candidates (1: the best)
    content: bool = True  # content features: matches of the program's own regexes in the input files
    sample_fraction: float = 0.0  # sampled features: counters counted on this share of each input file (0: none)
    view_confidence: float = VIEW_CONFIDENCE  # a view richer than the descriptors needs this share of resamples
    levels: tuple[float, float] = INTERVAL_LEVELS  # the prediction intervals' quantile levels


# ====================================================================== evaluator verdicts
@dataclass
class Verdict:
    """One feature's evaluator, measured on the cost inputs."""

    feature: str
    status: str  # "cheap", "too expensive", "unsliceable", "evaluator disagrees"
    cost_s: float | None = None  # median extra seconds over an idle interpreter
    cost_fraction: float | None = None  # median of cost_s / the program's wall time, per input
    detail: str = ""
    statements_kept: int = 0
    sample_fraction: float | None = None  # a sampled feature's: the share of each input file it was judged on
    input_check: str | None = None  # a content or sampled feature's: the evaluator a package runs beside it
    input_check_fraction: float | None = None  # ... and that evaluator's cost_fraction, judged with its own

    @property
    def cheap(self) -> bool:
        return self.status == "cheap"


def _failing_inputs(runs: list[dict]) -> dict[str, str]:
    """Inputs with a run that did not end well (failed, timed out, could not start), in run order, each with
    the last line of its first such run's stderr (or its status)."""
    failing: dict[str, str] = {}
    for run in runs:
        if run["status"] != "ok" and run["input_id"] not in failing:
            lines = (run.get("stderr_tail") or "").strip().splitlines()
            failing[run["input_id"]] = lines[-1] if lines else run["status"]
    return failing


class CostMeter:
    """Slices, emits and times single-feature evaluators, caching verdicts under the source hash."""

    def __init__(self, session, spec: CampaignSpec, cost_inputs: list[dict[str, Any]], max_cost: float,
                 median_wall_s: float, work: Path, source_hash: str, k: int, log: Log,
                 check_inputs: list[dict[str, Any]] | None = None, sample_fraction: float = 0.0) -> None:
        """``cost_inputs`` time each evaluator and check it; a feature found cheap is then also checked
        on ``check_inputs`` (the other training inputs). Each is {"id", "argv", "kwargs", "files", "wall_s",
        "features"}. A sampled feature's evaluator runs on samples of ``sample_fraction`` of the input files."""
        self.session = session
        self.spec = spec
        self.inputs = cost_inputs  # {"id", "argv", "kwargs", "wall_s", "features"}
        self.check_inputs = check_inputs or []
        self.max_cost = max_cost
        self.median_wall_s = median_wall_s
        self.budget_s = max_cost * median_wall_s  # what one feature's evaluator may cost
        self.work = work
        self.k = k
        self.log = log
        self.cache_path = work / "verdicts.json"
        self.cache_key = (f"{source_hash}:{_slicer_fingerprint()}:{max_cost}:{median_wall_s:.6g}:"
                          f"{','.join(i['id'] for i in cost_inputs)}:{','.join(i['id'] for i in self.check_inputs)}")
        self.sample_fraction = sample_fraction
        self.verdicts: dict[str, Verdict] = {}
        try:
            cached = json.loads(self.cache_path.read_text())
            if cached.get("key") == self.cache_key:
                self.verdicts = {f: Verdict(**v) for f, v in cached["verdicts"].items()}
                self.verdicts = {f: v for f, v in self.verdicts.items()  # a sampled verdict holds for its fraction only
                                 if not f.startswith(SAMPLED_PREFIX) or v.sample_fraction == sample_fraction}
        except (OSError, ValueError, TypeError, KeyError):
            pass
        self.verdicts = {f: self.beside_input_check(v) if f.startswith(SAMPLED_PREFIX) else v
                         for f, v in self.verdicts.items()}
        self.idle_s = idle_interpreter_seconds(spec.workdir)
        self.content_costs: dict[str, tuple[float | None, float | None]] = {}
        """Content feature id -> (median CPU seconds, median fraction of the run) on the training inputs."""

    def verdict(self, feature: str) -> Verdict:
        """The (cached) verdict of one feature. An input descriptor (``input:...``, a number on the
        command line or an input file's size) is cheap by construction: the predictor reads it."""
        if feature.startswith(INPUT_PREFIX):
            return self.verdicts.setdefault(feature, Verdict(feature, "cheap", 0.0, 0.0,
                                                             "read from the input's arguments and file sizes"))
        if feature.startswith(CONTENT_PREFIX):  # chosen within the budget by the content stage
            self.verdicts[feature] = self.beside_input_check(self.content_verdict(feature))
            return self.verdicts[feature]
        found = self.verdicts.get(feature)
        if found is None:
            found = self._measure(feature)
            if feature.startswith(SAMPLED_PREFIX):
                found = dataclasses.replace(found, sample_fraction=self.sample_fraction)
            self.verdicts[feature] = found
            self._save()
        if feature.startswith(SAMPLED_PREFIX):
            found = self.verdicts[feature] = self.beside_input_check(found)
        return found

    def input_check(self) -> tuple[str, float] | None:
        """The evaluator a package runs beside its content and sampled features at the least, and its cost
        as a share of the run: the input check of the verdicts so far
        (:func:`~mantispy.build_record.input_check_choice`), which a package runs when no model uses a
        program feature; one that does runs that feature's evaluator, which costs at least as much. None
        while no program feature's evaluator has been measured."""
        chosen = input_check_choice((f, v.status, v.cost_fraction) for f, v in self.verdicts.items())
        if chosen is None:
            return None
        fraction = self.verdicts[chosen].cost_fraction
        return (chosen, float(fraction)) if fraction is not None else None

    def beside_input_check(self, verdict: Verdict) -> Verdict:
        """A content or sampled feature's verdict judged with what a package must run beside it: cheap when
        its own cost and the input check's (:meth:`input_check`) together keep within ``max_cost``. Its
        ``cost_fraction`` stays its own; the verdict names the input check and its cost. The same verdict
        judged again with a cheaper input check may become cheap again (the status follows from the two
        costs alone). An input check over the budget by itself leaves the feature judged alone: the package
        runs that check whatever its models use, so leaving the feature out would keep nothing within it."""
        own = verdict.cost_fraction
        check = self.input_check()
        if (verdict.status not in ("cheap", "too expensive") or own is None or own > self.max_cost or check is None
                or check[1] > self.max_cost):
            return verdict
        name, fraction = check
        judged = dataclasses.replace(verdict, input_check=name, input_check_fraction=fraction)
        if own + fraction <= self.max_cost:
            detail = verdict.detail if verdict.status == "cheap" else ""
            return dataclasses.replace(judged, status="cheap", detail=detail)
        return dataclasses.replace(judged, status="too expensive",
                                   detail=f"{own:.1%} of the run time, and {fraction:.1%} for the evaluator a "
                                          f"package runs beside it to check each input ({name}): "
                                          f"{own + fraction:.1%} (limit {self.max_cost:.1%})")

    def content_verdict(self, feature: str) -> Verdict:
        """A content feature's verdict: its measured cost (the content stage offers only cheap ones)."""
        cost_s, fraction = self.content_costs.get(feature, (None, None))
        if fraction is None or fraction > self.max_cost:
            return Verdict(feature, "too expensive", cost_s, fraction, "content feature not measured within the budget")
        return Verdict(feature, "cheap", cost_s, fraction,
                       "regex matches in the input files, counted by the predictor (CPU time measured in the build)")

    def _estimate(self, result) -> float | None:
        """The share of the program's loop iterations and calls (on the median cost input) that happen
        in loops and functions the slice keeps (:func:`slice_work_share`); None if the run recorded none."""
        item = self.inputs[len(self.inputs) // 2]
        return slice_work_share(result, self.session.features, item["features"])

    def _save(self) -> None:
        data = {"key": self.cache_key, "verdicts": {f: dataclasses.asdict(v) for f, v in self.verdicts.items()}}
        tmp = self.cache_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=1))
        tmp.replace(self.cache_path)

    def _measure(self, feature: str) -> Verdict:
        from mantispy.slicer.evaluators import EvaluatorError
        from mantispy.slicer.warm_client import WarmError

        out = self.work / "evaluators" / _safe_name(feature)
        if out.exists():
            shutil.rmtree(out)
        sampled = feature.startswith(SAMPLED_PREFIX)
        criterion = counter_of(feature) if sampled else feature
        try:  # a sampled feature's slice is the counter's, large by nature: the sample keeps its cost down
            estimate = None if sampled else self._estimate(self.session.slice(criterion))
        except EvaluatorError as exc:
            return Verdict(feature, "unsliceable", detail=str(exc)[:500])
        limit = estimate_limit(self.max_cost)
        if estimate is not None and estimate >= limit:
            return Verdict(feature, "too expensive", None, None,
                           f"estimated: the slice keeps loops and functions that make {estimate:.0%} of the "
                           f"program's iterations and calls (not emitted at >= {limit:.0%})")
        try:
            result, _ = self.session.emit(criterion, out, self.k, counts_on_failure=sampled)
        except EvaluatorError as exc:
            return Verdict(feature, "unsliceable", detail=str(exc)[:500])
        except RecursionError:
            return Verdict(feature, "unsliceable", detail="the slicer ran out of recursion depth")
        kept = result.statements_kept
        costs = []
        budget = self.budget_s
        timeout = max(3 * budget, 0.15)
        warm = WarmEvaluator(out)
        try:
            warm.start()
            for position, item in enumerate(self.inputs):
                try:
                    if position == 0:  # untimed: what a predictor's warm server pays once, at its first
                        self._evaluate(warm, feature, item, timeout)  # prediction (imports, patterns)
                    values, cost = self._evaluate(warm, feature, item, timeout)
                    if cost <= 3 * budget:  # near the budget: once more, the quicker counts (shared machines)
                        cost = min(cost, self._evaluate(warm, feature, item, timeout)[1])
                except WarmError as exc:
                    if exc.timed_out:
                        return Verdict(feature, "too expensive", None, None,
                                       f"still running after {timeout:.2f} s on input {item['id']} (budget "
                                       f"{budget * 1000:.1f} ms)", kept)
                    return Verdict(feature, "unsliceable", detail=f"input {item['id']}: evaluator fails: {exc}",
                                   statements_kept=kept)
                disagreement = _disagreement(feature, item, values)
                if disagreement is not None:
                    return Verdict(feature, "evaluator disagrees", detail=disagreement, statements_kept=kept)
                costs.append(cost)
                if cost > 3 * budget:  # clearly over: the other inputs cannot save it
                    break
        except WarmError as exc:
            return Verdict(feature, "unsliceable", detail=f"evaluator does not start: {exc}", statements_kept=kept)
        finally:
            warm.close()
        cost_s = statistics.median(costs)
        fraction = cost_s / self.median_wall_s
        status = "cheap" if fraction <= self.max_cost else "too expensive"
        detail = "" if status == "cheap" else f"{fraction:.1%} of the run time (limit {self.max_cost:.1%})"
        if status == "cheap":
            disagreement = self._check_training_inputs(feature, out, timeout)
            if disagreement is not None:
                return Verdict(feature, "evaluator disagrees", detail=disagreement, statements_kept=kept)
        shutil.rmtree(out, ignore_errors=True)
        return Verdict(feature, status, cost_s, fraction, detail, kept)

    def _evaluate(self, warm: WarmEvaluator, feature: str, item: dict[str, Any],
                  timeout: float) -> tuple[dict[str, float], float]:
        """One evaluation for ``feature`` on input ``item``: the values and the cost in seconds. A sampled
        feature's evaluator runs on the input's sample (cutting it is part of the cost) and its counter is
        scaled to the whole input."""
        cwd = str(self.spec.workdir)
        if not feature.startswith(SAMPLED_PREFIX):
            return warm.evaluate(item["argv"], item.get("kwargs"), cwd=cwd, timeout=timeout)
        return evaluate_sampled(warm, [feature], list(item["argv"]), item.get("kwargs"), list(item.get("files") or ()),
                                self.sample_fraction, cwd, timeout=timeout)

    def _check_training_inputs(self, feature: str, out: Path, timeout: float) -> str | None:
        """Fidelity on every other training input, for a feature found cheap on the cost inputs (a
        feature that is zero on those three would otherwise go unchecked until held-out validation);
        the first disagreement or failure, or None."""
        from mantispy.slicer.warm_client import WarmError

        if not self.check_inputs:
            return None
        warm = WarmEvaluator(out)
        try:
            warm.start()
            for item in self.check_inputs:
                try:
                    values, _ = self._evaluate(warm, feature, item, max(timeout, 10 * self.budget_s))
                except WarmError as exc:
                    return f"input {item['id']}: evaluator fails: {exc}"
                disagreement = _disagreement(feature, item, values)
                if disagreement is not None:
                    return disagreement
        except WarmError as exc:
            return f"evaluator does not start: {exc}"
        finally:
            warm.close()
        return None


def _disagreement(feature: str, item: dict[str, Any], values: dict[str, float]) -> str | None:
    """How the evaluator's value of ``feature`` differs from the profiled one on input ``item``, or None."""
    expected = float(item["features"].get(feature, 0.0))
    got = values.get(feature, math.nan)
    if math.isclose(got, expected, rel_tol=1e-9, abs_tol=1e-9):
        return None
    return f"input {item['id']}: evaluator {got:g}, program {expected:g}"


class Substitutes:
    """Features that move together over the training runs (|Pearson r| >= ``threshold``): when one is
    rejected, the next fit tends to pick another, so the cost loop judges them in the same round."""

    def __init__(self, train, threshold: float = 0.95, limit: int = 8) -> None:

        columns = [c for c in train.columns if not c.startswith(("metric:", "input:"))
                   and c not in ("input_id", "repeat", "status")]
        values = train[columns].to_numpy(dtype=float)
        spread = values.std(axis=0)
        keep = spread > 0
        self.columns = [c for c, k in zip(columns, keep) if k]
        self.index = {c: n for n, c in enumerate(self.columns)}
        self.z = (values[:, keep] - values[:, keep].mean(axis=0)) / spread[keep]
        self.threshold = threshold
        self.limit = limit
        self.all_columns = columns

    def most_correlated(self, target, count: int, skip: set[str], prefix: str | None = None) -> list[str]:
        """The ``count`` unjudged features whose |Pearson r| with ``target`` (one value per training
        row) is largest; with ``prefix``, only features whose id starts with it."""
        import numpy as np

        y = np.asarray(target, dtype=float)
        if count <= 0 or not len(self.z) or y.std() == 0:
            return []
        r = np.abs(self.z.T @ ((y - y.mean()) / y.std())) / len(y)
        found = []
        for m in np.argsort(-r):
            name = self.columns[m]
            if name not in skip and (prefix is None or name.startswith(prefix)):
                found.append(name)
                if len(found) >= count:
                    break
        return found

    def of(self, feature: str, skip: set[str]) -> list[str]:
        """Up to ``limit`` unjudged features most correlated with ``feature``."""
        import numpy as np

        n = self.index.get(feature)
        if n is None or not len(self.z):
            return []
        r = np.abs(self.z.T @ self.z[:, n]) / len(self.z)
        order = np.argsort(-r)
        found = []
        for m in order:
            if r[m] < self.threshold or len(found) >= self.limit:
                break
            name = self.columns[m]
            if name != feature and name not in skip:
                found.append(name)
        return found


ESTIMATE_FACTOR = 6.0
"""A slice whose loops and functions make ``ESTIMATE_FACTOR x max_cost`` of the program's loop
iterations and calls (on the median cost input; 30 % at the default 5 % budget) is rejected without
being emitted and timed: far over the budget, and emitting is most of a verdict's time. Everything
below it is measured. At ``max_cost >= 1/6`` nothing is rejected unmeasured."""


def estimate_limit(max_cost: float) -> float:
    """The share of the program's work above which a slice is rejected unmeasured (see ESTIMATE_FACTOR)."""
    return ESTIMATE_FACTOR * max_cost if ESTIMATE_FACTOR * max_cost < 1.0 else math.inf


def reached_units(calls: list[dict[str, Any]], features: dict[str, dict[str, Any]]) -> set[tuple[str, str]]:
    """(file, qualname) of the functions a slice's kept call sites (``SliceResult.calls``) reach from module
    bodies, transitively: a site inside a function counts only once that function is reached. A site is
    placed in the innermost function (a ``call`` feature's span) holding its line; one outside every
    function is module code, which runs when its module is imported."""
    functions: dict[str, list[tuple[int, int, str]]] = {}
    for info in features.values():
        if info["kind"] == "call":
            functions.setdefault(info["file"], []).append((info["span"][0], info["span"][2], info["qualname"]))
    callees_of: dict[tuple[str, str] | None, set[tuple[str, str]]] = {}
    for call in calls:
        file, line, _ = call["site"].rsplit(":", 2)
        line = int(line)
        holders = [(end - start, name) for start, end, name in functions.get(file, ()) if start <= line <= end]
        unit = (file, min(holders)[1]) if holders else None
        callees_of.setdefault(unit, set()).update(tuple(c.split(":", 1)) for c in call.get("callees", []))
    reached: set[tuple[str, str]] = set()
    todo = list(callees_of.get(None, ()))
    while todo:
        unit = todo.pop()
        if unit not in reached:
            reached.add(unit)
            todo.extend(callees_of.get(unit, ()))
    return reached


def slice_work_share(result, features: dict[str, dict[str, Any]], counts: dict[str, float]) -> float | None:
    """The share of one run's loop iterations and calls (``counts``: feature id -> count) made in the
    loops and functions a slice (:class:`~mantispy.slicer.slice_result.SliceResult`) keeps; None if the
    run recorded none. Units the slice runs are those its module bodies reach through kept call sites (a
    kept body nothing in the slice calls, such as an escaping callback or the ``__init__`` of a class the
    slice only names, is not counted, nor what its own calls reach: the estimate errs low)."""
    work = _dynamic_work(features, counts)
    total = sum(work.values())
    if not total:
        return None
    kept_lines = {(f, span[0]) for f, spans in result.kept.items() for span in spans}
    called = reached_units(result.calls, features)
    kept = 0.0
    for fid, count in work.items():
        info = features[fid]
        unit = (info["file"], info["qualname"])
        runs = info["qualname"] == "<module>" or unit in called
        if info["kind"] == "call":
            kept += count if unit in called else 0.0
        elif runs and (info["file"], info["span"][0]) in kept_lines:
            kept += count
    return kept / total


def _dynamic_work(features: dict[str, dict[str, Any]], counts: dict[str, float]) -> dict[str, float]:
    """{loop/call feature id: its count in one run}: the dynamic work the cost estimate weighs."""
    return {f: v for f, v in counts.items() if f in features and features[f]["kind"] in ("loop", "call") and v > 0}


def _slicer_fingerprint() -> str:
    """A digest of the slicer's and instrumentor's code: verdicts of another slicer are not reused."""
    import hashlib

    digest = hashlib.sha256()
    for path in fingerprinted_files():
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def fingerprinted_files() -> list[Path]:
    """The files whose code decides a verdict: the slicer's and the instrumentor's, their subpackages
    included (the emitter, and the kit every evaluator runs: a change there changes what an evaluator
    costs and computes)."""
    import mantispy.instrument
    import mantispy.slicer

    return [path for package in (mantispy.slicer, mantispy.instrument)
            for path in sorted(Path(package.__file__).parent.rglob("*.py"))]


def idle_interpreter_seconds(cwd: Path, tries: int = 9) -> float:
    """Wall time of a fresh interpreter that imports json and exits (what every evaluation pays)."""
    best = math.inf
    for _ in range(tries):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import json, sys"], cwd=cwd, check=True)
        best = min(best, time.perf_counter() - started)
    return best


def slicing_root(spec: CampaignSpec) -> Path:
    """The folder the slicer reads the program from: the campaign's source folder, or, for a campaign that
    counts installed packages with the bytecode backend, its view (the source with those packages beside
    it, so their features can be sliced and their evaluators emitted like the program's own)."""
    from mantispy.monitoring.view import included_packages, program_view

    return program_view(spec) if included_packages(spec) else spec.source_root


def _safe_name(feature: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in feature)[-120:]


# ====================================================================== the build
class Builder:
    """One build: its spec, store, session and log."""

    def __init__(self, options: BuildOptions, log: Log = lambda _m: None) -> None:
        self.options = options
        self.log = log
        try:
            spec = load_spec(options.spec)
        except FileNotFoundError:
            raise BuildError(f"{options.spec}: no such campaign spec; give the path of a TOML spec") from None
        self.spec = dataclasses.replace(spec, calibration_runs=CALIBRATE_ALL,
                                        original_repeats=options.repeats or spec.original_repeats)
        self.work = Path(options.work or self.spec.workdir / ".mantis" / "build-work" / self.spec.name)
        _check_out(Path(options.out), options.force, self.spec.source_root, Path(options.spec), self.work)
        problem = split_problem(len({record.id for record in self.spec.inputs}), options.train_fraction)
        if problem is not None:  # said before anything runs, not after profiling and slicing
            raise SpecError(f"{options.spec}: {problem}")
        few = few_training_inputs(len({record.id for record in self.spec.inputs}), options.train_fraction)
        if few is not None:
            log(f"note: {few}")
        self.work.mkdir(parents=True, exist_ok=True)
        self.metrics = tuple(resolve_metric(m) for m in options.metrics)
        self.rounds: list[dict[str, Any]] = []
        self.content: ContentTable | None = None
        self.content_columns: dict[str, dict[str, float]] = {}
        self.sampling_gates: dict[str, SamplingGate] = {}  # metric -> whether its models are offered sampled features
        # why work_s is a model of CPU time, once one of its fits found the counted work tracking CPU time worse
        # than the input descriptors: its later fits fit CPU time straight away (decided once per build)
        self.work_fallback: dict[str, Any] | None = None
        self.slicing_root = slicing_root(self.spec)

    # -------------------------------------------------------------- stages
    def run(self) -> BuildRecord:
        """Every stage; returns the build record (build.json) after writing the package."""
        started = time.perf_counter()
        record = self._run()
        record.build_seconds = time.perf_counter() - started
        record.save(Path(self.options.out) / BUILD_FILE)
        return record

    def _run(self) -> BuildRecord:
        from mantispy.predictor import content_specs, validate, write_package
        from mantispy.slicer.evaluators import SliceSession, TooDeepError

        out = Path(self.options.out)
        store = RunStore(self.work / "mantis.db")
        try:
            campaign = self.profile(store)
            frame = store.dataframe(campaign, metrics_from="original")
            if frame.empty:
                raise BuildError(f"{self.options.spec}: no input ran successfully both instrumented and not; "
                                 "see mantispy runs --store " + str(store.path))
            train_ids, test_ids = split_inputs(frame["input_id"].tolist(), self.options.train_fraction, self.options.seed)
            self.content = self.content_stage(campaign, frame, train_ids) if self.options.content else None
            self.content_columns = chosen_columns(self.content) if self.content is not None else {}
            self.extra_columns = self.content_columns
            self.unusable_inputs = self.descriptor_mismatches(frame)
            if self.unusable_inputs:
                self.log("input descriptors a predictor cannot recompute from the arguments alone (the spec lists "
                         f"input files that are not arguments), kept out of the models: {', '.join(self.unusable_inputs)}")
            self.ceilings = {metric: self.fit(store, campaign, metric, set(), sensitivity=False) for metric in self.metrics}
            for metric, model in self.ceilings.items():
                self.log(f"{metric}: a model on every feature, cheap or not, would reach "
                         f"{model['evaluation']['test']['median_rel_error']:.1%} held-out ({model['selection']['chosen']})")
            sampled = self.sampled_stage(frame) if self.options.sample_fraction > 0 else {}
            self.extra_columns = {iid: {**self.content_columns.get(iid, {}), **sampled.get(iid, {})}
                                  for iid in self.content_columns.keys() | sampled.keys()}
            frame = with_extra_features(frame, self.extra_columns)
            observed = self.observe_calls(store, train_ids) if self.options.observed_calls else None
            self.log("analysing the program (call graph, system dependence graph, summary edges)"
                     + (" with the calls observed on training inputs" if observed else ""))
            try:
                session = SliceSession(self.slicing_root, entry_string(self.spec), observed_calls=observed)
            except TooDeepError as exc:
                raise BuildError(f"{self.slicing_root}/{exc}") from None
            if campaign.manifest is not None:  # evaluators count else arms as the profile did
                session.derived_counts = frozenset(campaign.manifest.get("derived") or {})
            self.static_session = session if observed is None else None
            train = frame[frame["input_id"].isin(train_ids)]
            median_wall = float(train["metric:wall_s"].median())
            cost_inputs = self.cost_inputs(frame, train_ids)
            meter = CostMeter(session, self.spec, cost_inputs, self.options.max_cost,
                              median_wall, self.work, campaign.source_hash, int(self.spec.instrument.get("k", 5)),
                              self.log, check_inputs=self.training_inputs(frame, train_ids, {i["id"] for i in cost_inputs}),
                              sample_fraction=self.options.sample_fraction)
            if self.content is not None:
                walls = {i: float(train[train["input_id"] == i]["metric:wall_s"].median()) for i in train_ids}
                meter.content_costs = {f: content_cost(self.content, f, walls) for f in self.content.chosen}
            self.log(f"evaluator budget: {self.options.max_cost:.1%} of the median run time {median_wall:.3f} s "
                     f"= {meter.budget_s * 1000:.1f} ms per feature")
            self.substitutes = Substitutes(train)
            self.train_metric = {m: train[f"metric:{measured_metric(m)}"].to_numpy() for m in self.metrics
                                 if f"metric:{measured_metric(m)}" in train}
            self.log(f"fresh interpreter start-up: {meter.idle_s * 1000:.1f} ms (a warm evaluator pays it once)")
            models: dict[str, dict[str, Any]] = {}
            for metric in self.metrics:
                models[metric] = self.stand_in(metric, models) or self.cost_loop(store, campaign, metric, meter)
            record = self.record(campaign, frame, models, meter)
            record.ceiling = {metric: ceiling_summary(model) for metric, model in self.ceilings.items()}
            for metric, gate in self.sampling_gates.items():
                record.ceiling[metric]["sampling"] = gate.to_json()
            validate(self, session, models, frame, test_ids, record, out)
            write_package(self.work / "package", out, record, models,
                          content_specs(self, sorted({f for m in models.values() for f in m["scaling"]})))
            return record
        finally:
            store.close()

    def profile(self, store: RunStore):
        """Profile (or finish profiling) the campaign into the work store."""
        self.log(f"profiling {len(self.spec.inputs)} input(s) of {self.spec.name} (instrumented and original; "
                 f"store {store.path})")
        done = [0]

        def progress(record) -> None:
            done[0] += 1
            if done[0] % 25 == 0:
                self.log(f"  {done[0]} run(s) done")

        try:
            try:
                summary = profile(self.spec, store, jobs=self.options.jobs, resume=True, replace=True,
                                  on_result=progress, log=self.log)
            except StoreError as exc:
                if "changed since it was profiled" not in str(exc):
                    raise
                # The build owns this store: inputs regenerated differently make its runs stale.
                self.log(f"{exc}: the campaign's inputs changed; profiling it again from scratch")
                store.delete_campaign(self.spec.name)
                summary = profile(self.spec, store, jobs=self.options.jobs, resume=True, replace=True,
                                  on_result=progress, log=self.log)
        except (StoreError, InstrumentError) as exc:
            raise BuildError(str(exc)) from None
        self.log(f"profiling: {summary.executed} run(s) executed, {summary.skipped} reused from the store")
        campaign = store.campaign(self.spec.name)
        assert campaign is not None
        failing = _failing_inputs(store.runs(campaign))
        if failing:
            names = ", ".join(list(failing)[:5]) + (", ..." if len(failing) > 5 else "")
            first, why = next(iter(failing.items()))
            self.log(f"warning: the program failed on {len(failing)} of {len(self.spec.inputs)} input(s) ({names}; "
                     f"{first}: {why}); their failed runs are left out of the models; see them with mantispy runs "
                     f"--store {store.path} --list")
        return campaign

    def content_stage(self, campaign, frame, train_ids: list[str]):
        """The content features (:mod:`mantispy.content`): the program's regexes counted in the input files."""
        from mantispy.content.stage import content_table

        rows = frame[frame["input_id"].isin(train_ids)].groupby("input_id")
        columns = [c for c in ("metric:wall_s", "metric:cpu_s", "metric:max_rss_kb") if c in frame.columns]
        train = {iid: {c.removeprefix("metric:"): float(v) for c, v in row.items()}
                 for iid, row in rows[columns].median().iterrows()}
        ran = set(frame["input_id"])
        spec = dataclasses.replace(self.spec, inputs=[r for r in self.spec.inputs if r.id in ran])
        return content_table(spec, self.work, campaign.source_hash, train, self.options.max_cost,
                             jobs=self.options.jobs, log=self.log)

    def observe_calls(self, store: RunStore, train_ids: list[str]) -> Path | None:
        """Record which callee each call site reaches, on up to 10 training inputs (untimed runs of the
        original source), for hybrid slicing; None when nothing could be recorded."""
        from mantispy.observe import calls_file, observe_campaign

        wanted = set(train_ids)
        spec = dataclasses.replace(self.spec, inputs=[r for r in self.spec.inputs if r.id in wanted])
        path = calls_file(store.path, self.spec.name)
        try:
            cached = json.loads(path.read_text()) if path.exists() else None
        except ValueError:
            cached = None
        if cached is not None and cached.get("source_hash_key") == self._observed_key(spec):
            self.log(f"reusing the observed calls in {path}")
            return path
        self.log(f"recording the calls of {min(len(spec.inputs), 10)} training input(s) for hybrid slicing")
        path, data = observe_campaign(spec, store.path, limit=10, jobs=self.options.jobs, log=self.log)
        if not data.get("inputs"):
            self.log("no call could be recorded: slicing statically")
            return None
        data["source_hash_key"] = self._observed_key(spec)
        path.write_text(json.dumps(data))
        return path

    def _observed_key(self, spec: CampaignSpec) -> str:
        import hashlib

        from mantispy.profiler import instrument_tree_hash
        from mantispy.runtime import observed_calls as recorder

        version = hashlib.sha256(Path(recorder.__file__).read_bytes()).hexdigest()[:12]  # the recorder's format
        # the slicing root: the source, or the view that holds the included packages as well
        return f"{instrument_tree_hash(self.slicing_root)}:{version}:{','.join(sorted(r.id for r in spec.inputs))}"

    def cost_inputs(self, frame, train_ids: list[str]) -> list[dict[str, Any]]:
        """Training inputs to time evaluators on: the fastest, the median and the slowest (by wall time)."""
        train = self._training_rows(frame, train_ids)
        n = min(self.options.cost_inputs, len(train))
        picks = sorted({round(i * (len(train) - 1) / max(n - 1, 1)) for i in range(n)})
        return [self._input_item(frame, train.iloc[pos]) for pos in picks]

    def training_inputs(self, frame, train_ids: list[str], skip: set[str]) -> list[dict[str, Any]]:
        """Every training input but those in ``skip``, with its features (for fidelity checks)."""
        train = self._training_rows(frame, train_ids)
        return [self._input_item(frame, row) for _, row in train.iterrows() if row["input_id"] not in skip]

    @staticmethod
    def _training_rows(frame, train_ids: list[str]):
        return frame[(frame["input_id"].isin(train_ids)) & (frame["repeat"] == 0)].sort_values("metric:wall_s")

    def _input_item(self, frame, row) -> dict[str, Any]:
        rec = next(r for r in self.spec.inputs if r.id == row["input_id"])
        feature_columns = [c for c in frame.columns if not c.startswith(("metric:", "input:"))
                           and c not in ("input_id", "repeat", "status")]
        return {"id": rec.id, "argv": list(rec.argv), "kwargs": rec.kwargs, "files": list(rec.files),
                "wall_s": float(row["metric:wall_s"]),
                "features": {c: float(row[c]) for c in feature_columns if row[c] != 0}}

    def stand_in(self, metric: str, models: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
        """``work_s`` whose fit on every feature fell back to CPU time (the counted work tracked CPU time worse
        than the input descriptors did) is the ``cpu_s`` model already built, relabelled: no cost loop of its
        own. None for any other metric, or when there is no ``cpu_s`` model to stand in."""
        if metric != WORK_METRIC or self.work_fallback is None or WORK_MEASURED not in models:
            return None
        self.log(f"{metric}: the {WORK_MEASURED} model stands in for it (no cost loop of its own)")
        return as_work_model(models[WORK_MEASURED], self.work_fallback)

    def cost_loop(self, store: RunStore, campaign, metric: str, meter: CostMeter) -> dict[str, Any]:
        """Fit, reject the features whose evaluators are too costly or unfaithful, refit; the final model.

        Each round judges the selected features; when some are rejected it also judges, ahead of the next
        fit, their close substitutes and the unjudged features that correlate most with the metric (the
        ones the next fits would reach for), so the loop needs few rounds. When the rounds run out, or a
        refit after rejections selects nothing, the last fit is restricted to the features judged cheap."""
        ahead = self.substitutes.most_correlated(self.train_metric[metric], self.options.lookahead,
                                                 skip=set(meter.verdicts))
        entry_file = self.entry_file(meter)
        if entry_file is not None:  # the driver's own features (arguments, what it reads) are often cheap
            ahead += self.substitutes.most_correlated(self.train_metric[metric], self.options.lookahead,
                                                      skip=set(meter.verdicts) | set(ahead), prefix=f"{entry_file}:")
        for feature in ahead:
            meter.verdict(feature)
        if ahead:
            self.rounds.append(_round(0, metric, {}, [meter.verdicts[f] for f in ahead], lookahead=True))
            self.log(f"{metric}: judged the {len(ahead)} unjudged feature(s) most correlated with it first"
                     + (f" (and the entry script {entry_file}'s)" if entry_file else "") + ": "
                     f"{sum(meter.verdicts[f].cheap for f in ahead)} cheap")
        excluded: set[str] = {f for f, v in meter.verdicts.items() if not v.cheap}
        had_rejections = bool(excluded)  # known-bad features from earlier metrics or builds
        model: dict[str, Any] = {}
        restricted = False
        for number in range(1, self.options.max_rounds + 1):
            model = self.fit(store, campaign, metric, excluded, sensitivity=False)
            selected = sorted(model["scaling"])
            verdicts = [meter.verdict(f) for f in selected]
            rejected = [v for v in verdicts if not v.cheap]
            self.rounds.append(_round(number, metric, model, verdicts))
            self.log(_round_line(self.rounds[-1]))
            if not rejected:
                restricted = not selected and had_rejections
                break
            had_rejections = True
            excluded |= {v.feature for v in rejected}
            ahead = [other for v in rejected for other in self.substitutes.of(v.feature, skip=excluded | set(meter.verdicts))]
            ahead += self.substitutes.most_correlated(self.train_metric[metric], self.options.lookahead,
                                                      skip=excluded | set(meter.verdicts) | set(ahead))
            for other in ahead:
                if not meter.verdict(other).cheap:
                    excluded.add(other)
            self.rounds[-1]["judged_ahead"] = _round(number, metric, {}, [meter.verdicts[f] for f in ahead])
            self.log(f"    judged {len(ahead)} more feature(s) ahead: "
                     f"{sum(meter.verdicts[f].cheap for f in ahead)} cheap")
        else:
            restricted = True
        if restricted:
            cheap = {f for f, v in meter.verdicts.items() if v.cheap}
            excluded = set(self.substitutes.all_columns) - cheap
            self.log(f"{metric}: refitting on the {len(cheap)} feature(s) judged cheap, and nothing else")
            model = self.fit(store, campaign, metric, excluded, sensitivity=False)
            verdicts = [meter.verdict(f) for f in sorted(model["scaling"])]
            self.rounds.append(_round(len([r for r in self.rounds if r["metric"] == metric and not r["lookahead"]]) + 1,
                                      metric, model, verdicts))
            self.log(_round_line(self.rounds[-1]))
        final = self.fit(store, campaign, metric, excluded, sensitivity=True)
        if sorted(final["scaling"]) != sorted(model["scaling"]):  # the same data and settings: must agree
            raise BuildError(f"{metric}: the final fit chose other features than the cost loop's last round")
        return final

    def entry_file(self, meter: CostMeter) -> str | None:
        """The entry's file in the program (feature ids start with it), or None."""
        from mantispy.slicer.evaluators import entry_path

        return entry_path(meter.session.program, entry_string(self.spec))

    def calibration_inputs(self, frame, count: int = 5) -> list[dict[str, Any]]:
        """Inputs spread over the range of CPU time, for ``mantispy calibrate`` to re-run elsewhere."""
        rows = frame.drop_duplicates("input_id").sort_values("metric:cpu_s")
        picks = sorted({round(i * (len(rows) - 1) / max(count - 1, 1)) for i in range(min(count, len(rows)))})
        records = {r.id: r for r in self.spec.inputs}
        chosen = [records[rows.iloc[p]["input_id"]] for p in picks if rows.iloc[p]["input_id"] in records]
        return [{"id": r.id, "argv": list(r.argv), "kwargs": r.kwargs, "cwd": str(self.spec.workdir),
                 "env": dict(self.spec.env)} for r in chosen]

    def sampled_stage(self, frame) -> dict[str, dict[str, float]]:
        """The sampled features (:mod:`mantispy.sampled`): the counters the all-feature models chose,
        counted on samples of every input's files and scaled to the whole input, offered to the models as
        stand-ins whose cost the cost loop judges. Returns {input id: {sampled feature id: value}}."""
        from mantispy.instrument.manifest import FAMILIES
        from mantispy.profiler import instrument_tree_hash, monitored, prepare_build
        from mantispy.sampled.measure import is_counter, measure
        from mantispy.sampled.types import SampledError, read_table

        fraction = self.options.sample_fraction
        self.sampling_gates = {metric: sampling_gate(metric, model) for metric, model in self.ceilings.items()}
        for gate in self.sampling_gates.values():
            self.log(f"sampled features, {gate.describe()}")
        counters = sorted({f for metric, model in self.ceilings.items() if self.sampling_gates[metric].open
                           for f in model["scaling"] if not f.startswith((INPUT_PREFIX, CONTENT_PREFIX)) and is_counter(f)})
        why_not = ("no metric's cheap features are far enough from its all-feature model"
                   if not any(g.open for g in self.sampling_gates.values())
                   else "the all-feature models use no counter of the program" if not counters
                   else "the entry takes keyword arguments, not input files" if self.spec.entry.kind == "callable"
                   else "no input names a file to sample" if not any(
                       list(r.files) or argv_files(list(r.argv), str(self.spec.workdir)) for r in self.spec.inputs)
                   else "the bytecode backend's campaigns are not sampled yet" if monitored(self.spec) else None)
        if why_not is not None:
            self.log(f"sampled features: none ({why_not})")
            return {}
        families = sorted(set(self.spec.instrument.get("only", FAMILIES)) - {"values"})
        spec = dataclasses.replace(self.spec, build=self.work / "sampled-build",
                                   instrument={**self.spec.instrument, "only": families})
        try:
            prepare_build(spec, self.log)
        except InstrumentError as exc:
            raise BuildError(f"sampled features: {exc}") from None
        ran = set(frame["input_id"])
        key = f"{instrument_tree_hash(self.spec.source)}:{fraction:g}:{','.join(sorted(ran))}"
        path = self.work / "sampled.json"
        try:
            table = read_table(path) if path.exists() else None
        except SampledError:
            table = None
        if table is None or table.key != key:
            table = measure(spec, spec.build, fraction, [r for r in self.spec.inputs if r.id in ran],
                            jobs=self.options.jobs, log=self.log)
            table.key = key
            table.save(path)
        else:
            self.log(f"reusing the sampled runs in {path}")
        self.log(f"sampled features: {len(counters)} counter(s) of the all-feature models, counted on "
                 f"{fraction:.1%} samples of {len(table.runs)} input(s)"
                 + (f" ({len(table.failed)} without counts: {next(iter(table.failed.values()))})" if table.failed else ""))
        return table.values(counters)

    def descriptor_mismatches(self, frame) -> list[str]:
        """Input-descriptor columns whose stored value differs, on some input, from what a predictor
        computes from that input's arguments (see mantispy.runtime.descriptors.describe_input)."""
        stored = [c for c in frame.columns if c.startswith(INPUT_PREFIX)]
        rows = frame.drop_duplicates("input_id").set_index("input_id")
        bad: set[str] = set()
        for record in self.spec.inputs:
            if record.id not in rows.index:
                continue
            try:
                computed = prefixed_numbers(describe_input(record.argv, record.kwargs, cwd=str(self.spec.workdir)))
            except OSError:
                return stored
            for column in stored:
                if not math.isclose(float(rows.at[record.id, column]), computed.get(column, 0.0), rel_tol=1e-12):
                    bad.add(column)
        return sorted(bad)

    def fit(self, store: RunStore, campaign, metric: str, excluded: set[str], sensitivity: bool) -> dict[str, Any]:
        """A model of ``metric`` without the ``excluded`` features. ``sensitivity``: the metric's final fit, the
        one kept (with its sensitivity analyses and an interval from leave-one-input-out refits); a cost-loop
        round's interval is not kept, so it takes the selection's out-of-fold residuals."""
        request = FitRequest(metric=metric, degree=self.options.degree, train_fraction=self.options.train_fraction,
                             method=self.options.method, seed=self.options.seed, exclude=tuple(sorted(excluded)),
                             sensitivity=sensitivity, metrics_from="original", constant_fallback=True,
                             form=self.options.form, inputs=self.options.inputs, solver=self.options.solver,
                             penalty=self.options.penalty,
                             unusable_inputs=tuple(getattr(self, "unusable_inputs", ())),
                             extra_features=getattr(self, "extra_columns", self.content_columns),
                             average=self.options.average, view_confidence=self.options.view_confidence,
                             levels=self.options.levels,
                             interval_from="leave-one-input-out" if sensitivity else "out-of-fold")
        gate = self.sampling_gates.get(metric)
        if gate is not None and not gate.open:  # its stand-ins were taken for the other metrics' models
            sampled = {f for values in request.extra_features.values() for f in values if f.startswith(SAMPLED_PREFIX)}
            request = dataclasses.replace(request, exclude=tuple(sorted(excluded | sampled)))
        fell_back = metric == WORK_METRIC and self.work_fallback is not None
        if fell_back:  # no work model to fit and judge again: CPU time, as the earlier fit decided
            request = dataclasses.replace(request, metric=WORK_MEASURED)
        try:
            model = fit_campaign(store, campaign.name, request)
        except ModelingError as exc:
            raise BuildError(f"{metric}: {exc}") from None
        if fell_back:
            model = as_work_model(model, self.work_fallback)
        elif metric == WORK_METRIC and work_fallback(model) is not None:
            self.work_fallback = work_fallback(model)
        for fid in model["scaling"]:
            if fid.startswith(CONTENT_PREFIX) and self.content is not None:
                model.setdefault("features", {})[fid] = describe_content(self.content, fid)
            elif fid.startswith(SAMPLED_PREFIX):
                counted = artefact.describe_features({"scaling": {counter_of(fid): {}}}, campaign.manifest)
                info = dict(next(iter(counted.values()), {}))
                info.update(kind="sampled", detail=f"{info.get('kind', 'counter')} counted on a "
                            f"{self.options.sample_fraction:.1%} sample of the input files, scaled to the whole")
                model.setdefault("features", {})[fid] = info
        return model

    # -------------------------------------------------------------- the record
    def record(self, campaign, frame, models: dict[str, dict[str, Any]], meter: CostMeter) -> BuildRecord:
        """build.json without the validation (filled in by :func:`mantispy.predictor.validate`)."""
        machine = environment_fingerprint()
        features = []
        for fid in sorted({f for m in models.values() for f in m["scaling"]}):
            verdict = meter.verdict(fid)
            info = next((m["features"][fid] for m in models.values() if fid in m.get("features", {})),
                        {"kind": "input", "detail": "a number on the command line or an input file's size",
                         "snippet": fid.removeprefix(INPUT_PREFIX)})
            features.append(FeatureRecord(
                id=fid, kind=info.get("kind"), file=info.get("file"), line=info.get("line"),
                qualname=info.get("qualname"), snippet=info.get("snippet"), detail=info.get("detail"),
                metrics=[m for m, model in models.items() if fid in model["scaling"]],
                cost_s=verdict.cost_s, cost_fraction=verdict.cost_fraction,
                source=_source_context(self.slicing_root, info.get("file"), info.get("line"), info.get("end_line")),
            ))
        limit = estimate_limit(self.options.max_cost)
        return BuildRecord(
            name=self.spec.name, entry=entry_string(self.spec), entry_kind=self.spec.entry.kind,
            source=str(self.spec.source_root), source_hash=campaign.source_hash,
            created=_dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            machine=MachineRecord(cpu=machine.get("cpu_model"), cores=machine.get("cpu_count"),
                                  python=machine.get("python"), platform=machine.get("platform")),
            options=OptionsRecord(max_cost=self.options.max_cost, train_fraction=self.options.train_fraction,
                                  metrics=list(self.metrics), degree=self.options.degree, seed=self.options.seed,
                                  method=self.options.method, max_rounds=self.options.max_rounds,
                                  form=self.options.form, solver=self.options.solver, penalty=self.options.penalty,
                                  sample_fraction=self.options.sample_fraction,
                                  view_confidence=self.options.view_confidence,
                                  original_repeats=self.spec.original_repeats,
                                  estimate_limit=limit if math.isfinite(limit) else None,
                                  cost_inputs=[i["id"] for i in meter.inputs]),
            campaign=CampaignRecord(
                name=campaign.name, inputs=int(frame["input_id"].nunique()), runs=int(len(frame)),
                raw_features=sum(1 for c in frame.columns if not c.startswith(("metric:", "input:"))
                                 and c not in ("input_id", "repeat", "status")),
                median_wall_s=float(frame["metric:wall_s"].median()), overhead=campaign.calibration,
                noise=(campaign.calibration or {}).get("noise", {}),
                unusable_inputs=list(getattr(self, "unusable_inputs", []))),
            idle_interpreter_s=meter.idle_s,
            calibration_inputs=self.calibration_inputs(frame),
            metrics={m: MetricRecord(unit=UNITS.get(m, ""), model=model) for m, model in models.items()},
            rounds=self.rounds,
            features=features,
            verdicts={f: dataclasses.asdict(v) for f, v in sorted(meter.verdicts.items())},
        )


def ceiling_summary(model: dict[str, Any]) -> dict[str, Any]:
    """What the build record keeps of a model allowed every feature, cheap or not (from the instrumented
    runs' values, no evaluator): what the cost budget gives up."""
    test = model["evaluation"]["test"]
    return {"median_rel_error": test["median_rel_error"], "mean_rel_error": test["mean_rel_error"],
            "model": model["selection"]["chosen"], "features": len(model["scaling"])}


def _round(number: int, metric: str, model: dict[str, Any], verdicts: list[Verdict],
           lookahead: bool = False) -> dict[str, Any]:
    """One row of the cost loop's log (paper Table 1). ``lookahead``: features judged before any fit
    (round 0: the unjudged features most correlated with the metric), not selected by a model."""
    test = model.get("evaluation", {}).get("test", {})
    return {
        "lookahead": lookahead,
        "round": number, "metric": metric, "selected": [v.feature for v in verdicts],
        "accepted": [{"feature": v.feature, "cost_s": v.cost_s, "cost_fraction": v.cost_fraction}
                     for v in verdicts if v.cheap],
        "rejected": [{"feature": v.feature, "reason": v.status, "detail": v.detail, "cost_s": v.cost_s,
                      "cost_fraction": v.cost_fraction} for v in verdicts if not v.cheap],
        "median_rel_error": test.get("median_rel_error"),
        "terms": len(artefact.model_terms(model)),
    }


def _round_line(row: dict[str, Any]) -> str:
    error = row["median_rel_error"]
    text = (f"{row['metric']} round {row['round']}: {len(row['selected'])} feature(s) selected, "
            f"{len(row['rejected'])} rejected; held-out median error "
            + (f"{error:.1%}" if error is not None else "n/a"))
    for rej in row["rejected"][:6]:
        text += f"\n    rejected {rej['feature']}: {rej['reason']}" + (f" ({rej['detail']})" if rej["detail"] else "")
    if len(row["rejected"]) > 6:
        text += f"\n    ... and {len(row['rejected']) - 6} more"
    return text


def entry_string(spec: CampaignSpec) -> str:
    """The entry as the slicer takes it: ``main.py``, ``-m pkg.cli`` or ``pkg.mod:function``."""
    if spec.entry.kind == "module":
        return f"-m {spec.entry.target}"
    return spec.entry.target


def _source_context(root: Path, file: str | None, line: int | None, end_line: int | None,
                    around: int = 3) -> dict[str, Any] | None:
    if not file or not line:
        return None
    path = Path(root) / file if Path(root).is_dir() else Path(root)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    end = end_line or line
    first = max(line - around, 1)
    last = min(end + around, len(lines))
    return {"first_line": first, "lines": lines[first - 1:last], "highlight": [line, end]}


def _check_out(out: Path, force: bool, source: Path, spec_file: Path, work: Path) -> None:
    """The package folder may be new, empty, or an earlier predictor (replaced at the end); never the
    program, its spec or the work folder (nor a folder holding or inside the program). An earlier predictor
    of another program is replaced only with ``force``. Raises :class:`OutputError`."""
    refuse_overlap(out, {"program's source": source, "campaign spec": spec_file, "build's work folder": work})
    check_folder(out, lambda p: is_predictor(p) or (p / BUILD_FILE).is_file(), "predictor")
    if Path(work).exists() and not Path(work).is_dir():
        raise OutputError(f"{work}: a file, not a folder; --work names the folder where the build keeps its store, "
                          "evaluators and caches")
    if (out / BUILD_FILE).is_file() and not force:
        try:
            earlier = BuildRecord.load(out).source
        except BuildRecordError:
            earlier = None
        if earlier and Path(earlier).resolve() != Path(source).resolve():
            raise OutputError(f"{out}: holds the predictor of another program ({earlier}); pass --force to "
                              "replace it, or choose another -o")


def build(options: BuildOptions, log: Log = lambda _m: None) -> dict[str, Any]:
    """Run ``mantispy build``; returns the build record also written to ``OUT/build.json``."""
    return Builder(options, log).run()


__all__ = ["BuildError", "BuildOptions", "Builder", "Verdict", "CostMeter", "build", "entry_string",
           "idle_interpreter_seconds", "artefact"]
