"""Per-phase models (phase-aware modeling): each phase's duration and resource use fitted from the input.

For every phase label seen in enough training runs and every metric of :data:`PHASE_METRICS`, a model is
chosen by the same cross-validated selection as ``mantispy fit`` (:mod:`mantispy.modeling.selection`:
a constant, the input descriptors, or the input descriptors with the program's features and the
*meta-inputs*, each in the additive and the multiplicative form). The meta-inputs are the paper's: the
measured duration, CPU time and peak memory of the two phases that ran before this one in the same run
(``meta:P1.wall_s``), so a phase whose cost follows an earlier phase's need not be explained by the input
alone. An estimate reads each meta-input within the range its model's training runs showed
(:func:`estimate`): an earlier phase measured beyond it (more memory because something else was
imported, a phase slowed by an anomaly) must not carry a later phase's estimate along a slope fitted on
a few hundred kilobytes of spread. For the same reason a meta-input is a candidate only where its
training runs span at least :data:`META_MIN_SPREAD` of its median: a Python process's memory is mostly
the interpreter's, and 2 % of it moving from run to run is noise a regression can still lean on. A model
that needs program features is fitted twice, with and without them: a run recorded
outside a campaign (``mantispy record``) has its argv and input files, not its feature counts.

Each model keeps the spread of its out-of-fold log residuals (median and 1.4826 x median absolute
deviation): the scale an anomaly check measures a departure in. A whole-run model of each metric (the
baseline the paper compares with) is fitted the same way from the input descriptors.

Beside the models, the training runs' *own time* (:mod:`.own_time`) is summarised per function: the
share of a run each function spent in its own code, its median, robust spread and largest over the
training runs, and the function's own seconds fitted against the run's (``fit``: a Theil-Sen line
``intercept + slope x run's own time``, the robust spread of its residuals and the largest residual, in
seconds). The fit is what a check compares with: a function with a fixed cost (argument parsing, a
setup) takes a large share of a short run and a small one of a long run, so a share that no training
run exceeded can hide seconds of extra work in a long run. Functions that never reached
:data:`OWN_TIME_LISTED` of a run are left out (their largest share is below it).

The artefact is JSON (:func:`save` / :func:`load`)::

    {"format": "mantispy-phase-model", "version": 1, "program": {...}, "options": {PhaseOptions},
     "known": [[label, {function: share}], ...], "phases": {label: {"name", "runs", "order",
     "metrics": {metric: {"model": MODEL, "portable": MODEL or absent, "residuals": {...}}}}},
     "rare": {label: {"name", "runs", "max_wall_s", "max_share"}},
     "folded": {label: {"into": label, "t_sim", "runs"}},
     "whole_run": {metric: {"model": MODEL, "residuals": {...}}},
     "own_time": {"runs": N, "listed": 0.005, "functions": {function: {"median", "spread", "max",
                  "fit": {"intercept", "slope", "spread", "max_residual"}}}},
     "evaluation": {...}, "training": {...}}

(``folded``: rare phases folded into a modelled one before fitting (:mod:`.fold`); their known profiles carry
that phase's label. ``own_time`` is absent from models written before it existed; a check then says it could not judge own time.
A function without ``fit``, from a model written before fits, is judged by its shares.)

where MODEL is a ``mantispy fit`` model polynomial (:mod:`mantispy.modeling.evaluation` evaluates it).
"""

from __future__ import annotations

import math
import random
import statistics
import warnings
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from mantispy.core.types import shown_key

from .detect import Known, PhaseOptions
from .fold import fold_rare_phases
from .observe import PHASE_METRICS, RunPhases
from .own_time import run_seconds

PHASE_MODEL_FORMAT = "mantispy-phase-model"
PHASE_MODEL_VERSION = 1
META_PREFIX = "meta:"
META_METRICS = ("wall_s", "cpu_s", "peak_rss_bytes")
WHOLE_RUN_METRICS = ("wall_s", "cpu_s", "cpu_percent", "peak_rss_bytes")
META_MIN_SPREAD = 0.10  # a meta-input whose training runs span less than this share of its median is noise
IO_FLOOR_BYTES = 2.0**20  # a phase's IO is modelled when its training runs' median moves at least this much
OWN_TIME_LISTED = 0.005  # a function is listed in the own-time model when some training run gave it this share
OWN_TIME_FIT = ("intercept", "slope", "spread", "max_residual")  # the fields of a function's own-time fit


class PhaseModelError(Exception):
    """Training data or a model file that cannot be used; one line naming it and the fix."""


@dataclass
class TrainingRun:
    """One recorded run of the training set: its input, what it measured, phase by phase."""

    input_id: str
    inputs: dict[str, float]  # the input descriptor's numbers (``input:`` ids)
    features: dict[str, float]  # the program's feature counts for this input (empty outside a campaign)
    phases: RunPhases
    whole: dict[str, float]  # whole-run metrics (see :func:`whole_run`)
    recording_id: int | None = None  # the recording its phases came from, where there is one


@dataclass(frozen=True)
class ModelOptions:
    """How per-phase models are fitted."""

    min_runs: int = 8  # a phase seen in fewer training runs gets no model (a check calls it rare)
    holdout: float = 0.25  # share of the inputs held out to report errors (then everything is refitted)
    folds: int = 3  # cross-validation folds of the form selection (and of the LASSO's lambda inside each fit)
    seed: int = 0
    forms: tuple[tuple[str, int], ...] = (("polynomial", 1), ("log", 1))


@dataclass
class Program:
    """What the model was trained on, so that a check on another program's run is refused."""

    entry: str
    campaign: str | None = None
    functions: list[str] = field(default_factory=list)  # function labels seen in training (their union)
    sampling: dict[str, Any] = field(default_factory=dict)  # rate, interval and mode of the training recordings


def whole_run(phases: RunPhases) -> dict[str, float]:
    """A run's totals from its recording: duration, CPU seconds of the samples, mean CPU use, peak RSS."""
    totals: dict[str, float] = {"wall_s": sum(row["end"] - row["start"] for row in phases.phases),
                                "cpu_s": sum(row["seconds"] for row in phases.phases)}
    timed = [(row["cpu_percent"], row["end"] - row["start"]) for row in phases.phases if row.get("cpu_percent") is not None]
    if timed and totals["wall_s"] > 0:
        totals["cpu_percent"] = sum(v * s for v, s in timed) / sum(s for _, s in timed)
    rss = [row["peak_rss_bytes"] for row in phases.phases if row.get("peak_rss_bytes") is not None]
    if rss:
        totals["peak_rss_bytes"] = max(rss)
    return totals


def meta_inputs(run: RunPhases, label: str) -> dict[str, float]:
    """The meta-inputs of ``label`` in ``run``: the measured metrics of the two phases that first ran
    before it (by label, so the same column means the same phase in every run)."""
    order = run.order()
    if label not in order:
        return {}
    measured = run.by_label()
    before = order[: order.index(label)][-2:]
    return {f"{META_PREFIX}{prior}.{metric}": measured[prior][metric]
            for prior in before for metric in META_METRICS if metric in measured[prior]}


def _estimator(candidate, options: ModelOptions):
    from mantispy.modeling.spore import SporeRegressor

    # the plain penalty: the anomaly rules' spreads were settled on (and benchmarked with) its fits
    return SporeRegressor(degree=candidate.degree, form=candidate.form, cv=options.folds, random_state=options.seed,
                          penalty="plain")


def _constant(value: float, metric: str) -> dict[str, Any]:
    from mantispy.modeling.artefact import MODEL_FORMAT, MODEL_VERSION

    return {"format": MODEL_FORMAT, "version": MODEL_VERSION, "metric": metric, "method": "constant", "degree": 0,
            "form": "polynomial", "intercept": float(value), "terms": [], "scaling": {}, "aliases": {}}


def fit_one(rows: list[dict[str, float]], y: np.ndarray, groups: np.ndarray, input_columns: list[str],
            program_columns: list[str], metric: str, options: ModelOptions) -> tuple[dict[str, Any], np.ndarray]:
    """Choose and fit one model; returns its model JSON and its out-of-fold predictions."""
    import pandas as pd

    from mantispy.modeling import selection
    from mantispy.modeling.artefact import from_estimator

    frame = pd.DataFrame(rows).reindex(columns=sorted(set(input_columns) | set(program_columns))).fillna(0.0)
    folds = max(2, min(options.folds, len(set(groups.tolist()))))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        chosen = selection.select(frame, program_columns, input_columns, y, groups, list(options.forms),
                                  lambda c: _estimator(c, options), folds=folds, seed=options.seed)
    assert chosen.chosen is not None
    best = chosen.chosen
    floor = float(np.min(y)) / 10
    if best.candidate.view == "constant":
        model = _constant(selection.constant_value(y), metric)
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est = _estimator(best.candidate, options).fit(frame[best.columns], y, groups=groups)
        model = from_estimator(est, metric)
    model["floor"] = floor
    model["selection"] = {"chosen": best.candidate.label, "uses": uses(model), "cv_median_rel_error": None if math.isinf(best.error) else best.error,
                          "reason": chosen.reason}
    return model, np.maximum(best.predictions, floor)


def uses(model: dict[str, Any]) -> str:
    """What a fitted model reads, in words: a constant, input numbers, earlier phases, program features."""
    names = list(model.get("scaling", {}))
    parts = [word for word, found in (("inputs", any(n.startswith("input:") for n in names)),
                                      ("earlier phases", any(n.startswith(META_PREFIX) for n in names)),
                                      ("program features", needs_features(model))) if found]
    return " + ".join(parts) if parts else "a constant"


def residual_scale(predictions: np.ndarray, actual: np.ndarray) -> dict[str, float] | None:
    """Median and robust spread (1.4826 x MAD) of log(actual / predicted): the scale anomalies are measured in."""
    usable = (predictions > 0) & np.isfinite(predictions) & (actual > 0)
    ratios = np.log(actual[usable] / predictions[usable])
    if len(ratios) < 4:
        return None
    center = float(np.median(ratios))
    spread = float(1.4826 * np.median(np.abs(ratios - center)))
    return {"center": center, "spread": spread, "n": int(len(ratios)),
            "median_rel_error": float(np.median(np.abs(np.expm1(ratios))))}


def _phase_rows(runs: list[TrainingRun], label: str, metric: str, with_features: bool
                ) -> tuple[list[dict[str, float]], np.ndarray, np.ndarray]:
    rows, ys, groups = [], [], []
    for run in runs:
        measured = run.phases.by_label().get(label, {})
        value = measured.get(metric)
        if value is None or value <= 0:
            continue
        row = {**run.inputs, **meta_inputs(run.phases, label)}
        if with_features:
            row.update(run.features)
        rows.append(row)
        ys.append(value)
        groups.append(run.input_id)
    noise = _flat_meta_inputs(rows)
    rows = [{name: value for name, value in row.items() if name not in noise} for row in rows]
    return rows, np.asarray(ys, dtype=float), np.asarray(groups)


def _flat_meta_inputs(rows: list[dict[str, float]]) -> set[str]:
    """Meta-inputs whose training values span less than :data:`META_MIN_SPREAD` of their median."""
    flat = set()
    for name in {n for row in rows for n in row if n.startswith(META_PREFIX)}:
        values = [row[name] for row in rows if name in row]
        middle = statistics.median(values)
        if middle <= 0 or (max(values) - min(values)) < META_MIN_SPREAD * middle:
            flat.add(name)
    return flat


def _columns(rows: list[dict[str, float]]) -> tuple[list[str], list[str]]:
    names = sorted({name for row in rows for name in row})
    inputs = [n for n in names if n.startswith("input:")]
    return inputs, names


def _fit_all(runs: list[TrainingRun], labels: list[str], options: ModelOptions, with_features: bool
             ) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """Models of every (label, metric) and of every whole-run metric, on ``runs``."""
    phases: dict[str, dict[str, Any]] = {}
    for label in labels:
        metrics: dict[str, Any] = {}
        for metric in PHASE_METRICS:
            fitted = _fit_metric(runs, label, metric, options, with_features)
            if fitted is not None:
                metrics[metric] = fitted
        phases[label] = metrics
    whole: dict[str, Any] = {}
    for metric in WHOLE_RUN_METRICS:
        rows = [run.inputs for run in runs if run.whole.get(metric, 0) > 0]
        y = np.asarray([run.whole[metric] for run in runs if run.whole.get(metric, 0) > 0], dtype=float)
        groups = np.asarray([run.input_id for run in runs if run.whole.get(metric, 0) > 0])
        if len(y) < options.min_runs:
            continue
        inputs, _ = _columns(rows)
        model, oof = fit_one(rows, y, groups, inputs, [], metric, options)
        whole[metric] = {"model": model, "residuals": residual_scale(oof, y)}
    return phases, whole


def _fit_metric(runs: list[TrainingRun], label: str, metric: str, options: ModelOptions, with_features: bool
                ) -> dict[str, Any] | None:
    rows, y, groups = _phase_rows(runs, label, metric, with_features=False)
    if metric == "io_bytes" and (len(y) == 0 or float(np.median(y)) < IO_FLOOR_BYTES):
        return None  # a phase that barely reads or writes (the sampler's own spool writes are counted too)
    if len(y) < options.min_runs or len(y) < 0.8 * sum(label in run.phases.order() for run in runs):
        return None  # a metric most runs of the phase cannot measure (IO that never happens, a phase too short to poll)
    inputs, columns = _columns(rows)
    portable, oof = fit_one(rows, y, groups, inputs, columns if columns != inputs else [], metric, options)
    entry: dict[str, Any] = {"model": portable, "residuals": residual_scale(oof, y)}
    if with_features:
        rows_f, y_f, groups_f = _phase_rows(runs, label, metric, with_features=True)
        inputs_f, columns_f = _columns(rows_f)
        full, oof_f = fit_one(rows_f, y_f, groups_f, inputs_f, columns_f, metric, options)
        if full["selection"]["chosen"].startswith("program") and not _uses_only(full, inputs_f, META_PREFIX):
            entry = {"model": full, "residuals": residual_scale(oof_f, y_f), "portable": portable,
                     "portable_residuals": entry["residuals"]}
    return entry


def estimate(model: dict[str, Any], values: dict[str, float]) -> float:
    """A phase model's estimate for one run, each meta-input held within the range its training runs
    showed. Input numbers and program features are not bounded: a larger input is the extrapolation a
    model exists for; an earlier phase measured outside its training range is not (CI found a phase
    predicted at its floor because the phase before it used 1.5 MB more memory than in training)."""
    from mantispy.modeling.evaluation import predict

    log_form = model.get("form", "polynomial") == "log"
    bounded = dict(values)
    for name, bounds in model.get("scaling", {}).items():
        if not name.startswith(META_PREFIX) or name not in bounded:
            continue
        low, high = float(bounds["min"]), float(bounds["max"])
        if log_form:  # the model's bounds are of log1p(value); meta-inputs are never negative
            low, high = math.expm1(low), math.expm1(high)
        bounded[name] = min(max(float(bounded[name]), low), high)
    return predict(model, bounded)


def _uses_only(model: dict[str, Any], inputs: list[str], prefix: str) -> bool:
    return all(name in inputs or name.startswith(prefix) for name in model["scaling"])


def missing_meta(model: dict[str, Any], values: dict[str, float]) -> list[str]:
    """The earlier phases whose measurements ``model`` reads and ``values`` lacks (a run in which that phase
    did not run before this one): without them its estimate means nothing."""
    lacking = {name[len(META_PREFIX):].split(".", 1)[0] for name in model.get("scaling", {})
               if name.startswith(META_PREFIX) and name not in values}
    return sorted(lacking)


def needs_features(model: dict[str, Any]) -> bool:
    """Whether a model polynomial reads program feature counts (not only input numbers and meta-inputs)."""
    return any(not (name.startswith("input:") or name.startswith(META_PREFIX)) for name in model.get("scaling", {}))


def fit(runs: list[TrainingRun], known: Known, phase_options: PhaseOptions, program: Program,
        options: ModelOptions = ModelOptions(), log=lambda _m: None) -> dict[str, Any]:  # noqa: B008 - frozen
    """The phase model of a training set (see the module docstring); held-out errors in ``evaluation``.
    Rare phases that are variants of a modelled one are folded into it first, in ``runs`` and ``known``
    (:mod:`.fold`)."""
    from mantispy.modeling.evaluation import predict

    if len(runs) < options.min_runs:
        raise PhaseModelError(f"{len(runs)} recorded run(s) with phases: per-phase models need at least "
                              f"{options.min_runs} uninstrumented ones (the runs whose time is the program's own); "
                              "set calibration_runs = \"all\" in the campaign's spec to make one per input, or "
                              "profile more inputs with --sample")
    folded = fold_rare_phases([run.phases for run in runs], known, options.min_runs, phase_options.t_threshold)
    for label, entry in folded.items():
        log(f"{label} (in {entry['runs']} run(s)) folded into {entry['into']} (time shares alike: t_sim {entry['t_sim']:.2f})")
    distinct = list(dict.fromkeys(label for label, _ in known))
    counts = {label: sum(label in run.phases.order() for run in runs) for label in distinct}
    labels = [label for label in distinct if counts[label] >= options.min_runs]
    if not labels:
        raise PhaseModelError(f"no phase is seen in {options.min_runs} or more of the {len(runs)} runs; profile "
                              "more inputs, or find phases with a longer --epoch or a lower --similarity")
    with_features = any(run.features for run in runs)
    inputs_ids = sorted({run.input_id for run in runs})
    rng = random.Random(options.seed)
    held = set(rng.sample(inputs_ids, max(1, int(round(len(inputs_ids) * options.holdout))))) if len(inputs_ids) >= 8 else set()
    evaluation: dict[str, Any] = {}
    if held:
        train = [run for run in runs if run.input_id not in held]
        test = [run for run in runs if run.input_id in held]
        log(f"held-out evaluation: fitting on {len(train)} run(s), testing on {len(test)}")
        # the training share keeps the final fit's rule in proportion: a phase seen in min_runs of all the
        # runs is seen in fewer of the training ones, and would otherwise go unevaluated (CI saw that)
        share = replace(options, min_runs=max(3, math.ceil(options.min_runs * len(train) / len(runs))))
        trained_phases, trained_whole = _fit_all(train, labels, share, with_features)
        evaluation = _evaluate(test, trained_phases, trained_whole, predict)
    log(f"fitting {len(labels)} phase(s) on {len(runs)} run(s)")
    phases, whole = _fit_all(runs, labels, options, with_features)
    names: dict[str, str] = {}
    order: dict[str, list[int]] = {}
    for run in runs:
        for position, label in enumerate(run.phases.order()):
            order.setdefault(label, []).append(position)
        for label, name in run.phases.names().items():
            names.setdefault(label, name)
    return {
        "format": PHASE_MODEL_FORMAT, "version": PHASE_MODEL_VERSION,
        "program": asdict(program), "options": asdict(phase_options),
        "epoch_s": statistics.median(run.phases.epoch_s for run in runs),
        "known": [[label, profile] for label, profile in known],
        "phases": {label: {"name": names.get(label, label), "runs": counts[label],
                           "position": statistics.median(order.get(label, [0])), "metrics": phases[label]}
                   for label in labels},
        "rare": {label: {"name": names.get(label, label), "runs": counts[label], **_longest(runs, label)}
                 for label in distinct if label not in labels},
        "folded": folded,
        "whole_run": whole,
        "own_time": own_time_summary(runs),
        "evaluation": evaluation,
        "training": {"runs": len(runs), "inputs": len(inputs_ids), "held_out_inputs": len(held),
                     "program_features": with_features, "options": {**asdict(options), "forms": [list(f) for f in options.forms]}},
    }


def own_time_summary(runs: list[TrainingRun]) -> dict[str, Any]:
    """Each function's share of a run in its own code over the training runs: median, robust spread
    (1.4826 x MAD, a run without it counting 0) and largest, and its own seconds fitted against the run's
    (:func:`own_time_fit`), for functions some run gave at least :data:`OWN_TIME_LISTED` of its time."""
    seconds = [run_seconds(run.phases.own) for run in runs if run.phases.own]
    totals = np.asarray([sum(one.values()) for one in seconds], dtype=float)
    shares = [{name: value / total for name, value in one.items()} for one, total in zip(seconds, totals) if total > 0]
    listed = sorted({name for one in shares for name, share in one.items() if share >= OWN_TIME_LISTED})
    functions: dict[str, dict[str, Any]] = {}
    for name in listed:
        values = np.asarray([one.get(name, 0.0) for one in shares], dtype=float)
        middle = float(np.median(values))
        functions[name] = {"median": middle, "spread": float(1.4826 * np.median(np.abs(values - middle))),
                           "max": float(values.max()),
                           "fit": own_time_fit(totals, np.asarray([one.get(name, 0.0) for one in seconds], dtype=float))}
    return {"runs": len(shares), "listed": OWN_TIME_LISTED, "functions": functions}


def own_time_fit(totals: np.ndarray, seconds: np.ndarray) -> dict[str, float]:
    """A function's own seconds against its runs' own time: the Theil-Sen line (the median of pairwise
    slopes, robust to a run or two whose samples went astray), the robust spread of its residuals
    (1.4826 x MAD) and the largest residual, in seconds. Runs all of one length (or fewer than three)
    give a flat line at the median (at least one run)."""
    if len(totals) < 3 or float(np.ptp(totals)) <= 0:
        slope, intercept = 0.0, float(np.median(seconds))
    else:
        from scipy.stats import theilslopes

        fitted = theilslopes(seconds, totals)
        slope, intercept = float(fitted[0]), float(fitted[1])
    residuals = seconds - (intercept + slope * totals)
    return {"intercept": intercept, "slope": slope,
            "spread": float(1.4826 * np.median(np.abs(residuals - np.median(residuals)))),
            "max_residual": float(residuals.max())}


def _longest(runs: list[TrainingRun], label: str) -> dict[str, float]:
    """The longest a phase lasted in the training runs, in seconds and as a share of its run."""
    spans = [(run.phases.by_label()[label]["wall_s"], run.whole.get("wall_s", 0.0)) for run in runs
             if label in run.phases.order()]
    return {"max_wall_s": max((wall for wall, _ in spans), default=0.0),
            "max_share": max((wall / total for wall, total in spans if total > 0), default=0.0)}


def _evaluate(test: list[TrainingRun], phases: dict[str, dict[str, Any]], whole: dict[str, Any], predict) -> dict[str, Any]:
    """Held-out errors: per phase and metric; the run's duration as the sum of its phases' predicted
    durations beside the whole-run model's."""
    per_phase: dict[str, dict[str, Any]] = {}
    sums, direct, actual_totals = [], [], []
    incomplete = 0  # held-out runs with a phase no model estimates: no sum of phases for them
    for run in test:
        measured = run.phases.by_label()
        total = 0.0
        complete = True
        for label, values in measured.items():
            for metric, value in values.items():
                fitted = phases.get(label, {}).get(metric)
                if fitted is None or value <= 0:
                    if metric == "wall_s":
                        complete = False
                    continue
                expected = estimate(fitted["model"], {**run.inputs, **run.features, **meta_inputs(run.phases, label)})
                per_phase.setdefault(label, {}).setdefault(metric, []).append(abs(expected - value) / value)
                if metric == "wall_s":
                    total += expected
        whole_model = whole.get("wall_s")
        incomplete += not complete
        if complete and whole_model is not None and run.whole.get("wall_s", 0) > 0:
            sums.append(total)
            direct.append(predict(whole_model["model"], run.inputs))
            actual_totals.append(run.whole["wall_s"])
    out: dict[str, Any] = {"runs": len(test), "phases": {
        label: {metric: {"median_rel_error": float(np.median(errors)), "n": len(errors)} for metric, errors in metrics.items()}
        for label, metrics in per_phase.items()}, "incomplete_runs": incomplete}
    if actual_totals:
        actual = np.asarray(actual_totals)
        out["total_wall_s"] = {
            "sum_of_phases": float(np.median(np.abs(np.asarray(sums) - actual) / actual)),
            "whole_run": float(np.median(np.abs(np.asarray(direct) - actual) / actual)),
            "n": len(actual_totals),
            "note": "sum of the predicted durations of the phases each run had (meta-inputs from its earlier phases)",
        }
    return out


def save(model: dict[str, Any], path: Path) -> None:
    """Write the phase model as JSON (atomically, as ``mantispy fit`` writes its models)."""
    from mantispy.modeling import artefact

    artefact.save(model, path)


def load(path: Path) -> dict[str, Any]:
    """Read and check a phase model; raises PhaseModelError with one line naming the file and the fix."""
    from mantispy.modeling.artefact import read_json

    path = Path(path)
    fix = "give a model written by mantispy phases --fit"
    model = read_json(path, fix, PhaseModelError)
    if not isinstance(model, dict) or model.get("format") != PHASE_MODEL_FORMAT:
        raise PhaseModelError(f"{path}: not a mantispy phase model (field format); {fix}")
    version = model.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version > PHASE_MODEL_VERSION:
        raise PhaseModelError(f"{path}: field version: {version!r} is not a phase model version this mantispy "
                              f"reads ({PHASE_MODEL_VERSION}); upgrade mantispy or fit again")
    problem = model_problem_of(model)
    if problem is not None:
        raise PhaseModelError(f"{path}: {problem}; {fix}")
    return model


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _residuals_problem(residuals: Any) -> str | None:
    if residuals is None:
        return None
    if (not isinstance(residuals, dict) or not _finite(residuals.get("center")) or abs(residuals["center"]) > 50
            or not _finite(residuals.get("spread")) or not 0 <= residuals["spread"] <= 50):
        return "expected {\"center\": a log ratio within +-50, \"spread\": from 0 to 50, ...} or null"
    return None


def _fitted_problem(fitted: Any, parts: tuple[str, ...]) -> str | None:
    from mantispy.modeling.evaluation import model_problem

    if not isinstance(fitted, dict) or "model" not in fitted:
        return "expected {\"model\": ..., \"residuals\": ...}"
    for part in parts:
        if part in fitted:
            problem = model_problem(fitted[part])
            if problem is not None:
                return f"{part}: {problem}"
    for part in ("residuals", "portable_residuals"):
        problem = _residuals_problem(fitted.get(part))
        if problem is not None:
            return f"{part}: {problem}"
    return None


def model_problem_of(model: dict[str, Any]) -> str | None:
    """What makes a phase model unusable by a check (the field and what it must be), or None."""
    for key, kind in (("program", dict), ("options", dict), ("known", list), ("phases", dict), ("whole_run", dict),
                      ("rare", dict)):
        if not isinstance(model.get(key), kind):
            return f"field {key}: expected a JSON {'object' if kind is dict else 'list'}"
    if not _finite(model.get("epoch_s")) or model["epoch_s"] <= 0:
        return "field epoch_s: expected a number of seconds above 0"
    defaults = asdict(PhaseOptions())
    for name, value in model["options"].items():
        if name not in defaults:
            return f"field options.{shown_key(name)}: not a phase option this mantispy knows"
        expected = defaults[name]
        if name == "epoch_s":
            if value is not None and not (_finite(value) and value > 0):
                return "field options.epoch_s: expected a number above 0 or null"
        elif isinstance(expected, bool):
            if not isinstance(value, bool):
                return f"field options.{shown_key(name)}: expected true or false"
        elif isinstance(expected, int):
            least = 0 if name == "depth" else 1
            if not isinstance(value, int) or isinstance(value, bool) or value < least:
                return f"field options.{shown_key(name)}: expected a whole number >= {least}"
        elif not _finite(value) or value < 0:
            return f"field options.{shown_key(name)}: expected a number >= 0"
    for n, item in enumerate(model["known"]):
        if (not isinstance(item, list) or len(item) != 2 or not isinstance(item[0], str) or not isinstance(item[1], dict)
                or not all(isinstance(k, str) and _finite(v) for k, v in item[1].items())):
            return f"field known[{n}]: expected [label, {{function: share}}]"
    functions = model["program"].get("functions", [])
    if not isinstance(functions, list) or not all(isinstance(f, str) for f in functions):
        return "field program.functions: expected a list of function names"
    sampling = model["program"].get("sampling", {})
    if not isinstance(sampling, dict) or not all(_finite(sampling.get(k, 1.0)) and sampling.get(k, 1.0) > 0
                                                 for k in ("rate", "interval")) \
            or not isinstance(sampling.get("mode", "cpu"), str) or not isinstance(sampling.get("sampler", "builtin"), str):
        return "field program.sampling: expected {\"rate\": number, \"interval\": number, \"mode\": text, \"sampler\": text}"
    for label, phase in model["phases"].items():
        metrics = phase.get("metrics") if isinstance(phase, dict) else None
        if not isinstance(metrics, dict) or not isinstance(phase.get("name", ""), str):
            return f"field phases.{shown_key(label)}: expected {{\"name\": text, \"metrics\": {{...}}}}"
        for metric, fitted in metrics.items():
            problem = _fitted_problem(fitted, ("model", "portable"))
            if problem is not None:
                return f"field phases.{shown_key(label)}.metrics.{shown_key(metric)}: {problem}"
    for label, rare in model["rare"].items():
        if not isinstance(rare, dict) or not _finite(rare.get("max_wall_s", 0.0)):
            return f"field rare.{shown_key(label)}: expected {{\"max_wall_s\": number, ...}}"
    for metric, fitted in model["whole_run"].items():
        problem = _fitted_problem(fitted, ("model",))
        if problem is not None:
            return f"field whole_run.{shown_key(metric)}: {problem}"
    return _own_time_problem(model.get("own_time"))


def _own_time_problem(own: Any) -> str | None:
    if own is None:
        return None
    shape = "expected {\"runs\": count, \"listed\": share, \"functions\": {function: {\"median\", \"spread\", \"max\"}}}"
    if (not isinstance(own, dict) or not isinstance(own.get("functions"), dict) or not _finite(own.get("listed"))
            or not 0 <= own["listed"] <= 1 or not isinstance(own.get("runs"), int) or isinstance(own["runs"], bool)
            or own["runs"] < 0):
        return f"field own_time: {shape}"
    for name, stats in own["functions"].items():
        if not isinstance(stats, dict) or not all(_finite(stats.get(key)) and 0 <= stats[key] <= 1
                                                  for key in ("median", "spread", "max")):
            return f"field own_time.functions.{shown_key(name)}: expected {{\"median\", \"spread\", \"max\"}}, shares from 0 to 1"
        fit = stats.get("fit")
        if fit is not None and (not isinstance(fit, dict) or not all(_finite(fit.get(key)) for key in OWN_TIME_FIT)
                                or fit["spread"] < 0):
            return (f"field own_time.functions.{shown_key(name)}.fit: expected {{\"intercept\", \"slope\", \"spread\", "
                    "\"max_residual\"}, seconds (spread not negative)")
    return None
