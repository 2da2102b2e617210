"""From the run store to an evaluated model, as the paper's §6 reports it.

:func:`fit_campaign` splits the campaign's inputs (not runs: repeats of an input stay on one side) into
a training part (``train_fraction``, the paper's 10 %) and a held-out part, fits SPORE on the training
part and reports on the held-out part: median and mean relative error |predicted - actual| / actual,
the error and size of the model along the final stage's lambda path (paper Fig. 6a/9a), the error when
training on 5/10/20/40 % of the inputs (Fig. 6b/9b), and the same SPORE fitted on input descriptors only
(numbers in argv/kwargs, input file sizes): the black-box baseline.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mantispy.measurement import noise_floor
from mantispy.runtime.sampled_input import SAMPLED_PREFIX
from mantispy.store import RunStore, StoreError

from . import artefact, averaging, selection, work
from .defaults import VIEW_CONFIDENCE
from .spore import FORMS, ModelingError, SporeRegressor

METRIC_ALIASES = {"wall": "wall_s", "cpu": "cpu_s", "rss": "max_rss_kb", "memory": "max_rss_kb", "work": "work_s"}
TRAINING_SIZES = (0.05, 0.1, 0.2, 0.4)


@dataclass
class FitRequest:
    """What to fit (the CLI's options)."""

    metric: str = "wall_s"
    degree: int = 3
    train_fraction: float = 0.1
    method: str = "lasso"
    seed: int = 0
    exclude: tuple[str, ...] = ()
    sensitivity: bool = True
    # "original": metrics of the uninstrumented runs (calibration_runs = "all"); "auto": those when every input
    # has them (as mantispy build models), else the instrumented runs' (see metrics_source)
    metrics_from: str = "instrumented"
    constant_fallback: bool = False  # kept for callers; a constant now always competes (see selection)
    form: str = "auto"  # "auto" (chosen by cross-validation), "polynomial" or "log"
    inputs: bool = True  # the input descriptors (argv numbers, file sizes) are candidate features too
    unusable_inputs: tuple[str, ...] = ()  # descriptor columns a predictor could not compute
    folds: int = 5  # cross-validation folds of the form selection
    levels: tuple[float, float] = selection.DEFAULT_LEVELS  # the prediction interval's quantile levels
    # the interval's residuals: "leave-one-input-out" (one more fit per training input) or the selection's
    # "out-of-fold" ones (no more fits: for fits whose interval is not kept)
    interval_from: str = "leave-one-input-out"
    solver: str = "sklearn"  # the final LASSO stage's solver: "sklearn" or "glmnet" (python-glmnet)
    # the LASSO stages' penalty: "adaptive" (each term scaled by its ridge coefficient first) or "plain"
    penalty: str = "adaptive"
    # input id -> {feature id: value}: features computed per input outside the runs (content features)
    extra_features: dict[str, dict[str, float]] = field(default_factory=dict)
    # the model is the geometric mean of this many of the candidates cross-validation ranks best (1: the best
    # alone); the black box is averaged the same way (mantispy.modeling.averaging)
    average: int = averaging.ENSEMBLE_SIZE
    # a view richer than the input descriptors is chosen only where it beats the simpler views' best in this
    # share of paired resamples of the training inputs (0: the smallest cross-validated error alone decides;
    # mantispy.modeling.selection.confident_view)
    view_confidence: float = VIEW_CONFIDENCE


def resolve_metric(name: str) -> str:
    """``wall`` -> ``wall_s`` etc.; other names are taken as stored metric names."""
    return METRIC_ALIASES.get(name, name)


measured_metric = work.measured_metric


def split_inputs(input_ids: list[str], fraction: float, seed: int) -> tuple[list[str], list[str]]:
    """Deterministic split of distinct input ids into (train, test)."""
    ids = sorted(set(input_ids))
    rng = np.random.default_rng(seed)
    order = [ids[i] for i in rng.permutation(len(ids))]
    n_train = max(int(round(fraction * len(ids))), 1)
    return sorted(order[:n_train]), sorted(order[n_train:])


MIN_TRAIN_INPUTS = 4
"""The fewest training inputs a model is fitted on (one more is held out)."""


def split_problem(n_inputs: int, fraction: float) -> str | None:
    """Why ``n_inputs`` distinct inputs cannot be split at ``fraction`` (as :func:`split_inputs` splits), or None."""
    n_train = max(int(round(fraction * n_inputs)), 1)
    if n_train >= MIN_TRAIN_INPUTS and n_inputs - n_train >= 1:
        return None
    need = int(np.ceil(MIN_TRAIN_INPUTS / max(fraction, 1e-9)))
    return (f"{n_inputs} inputs give {min(n_train, n_inputs)} for training at --train-fraction {fraction:g}; need at "
            f"least {MIN_TRAIN_INPUTS} training inputs and 1 held out: profile ~{need}+ inputs or raise --train-fraction")


WORK_MARGIN = 1.2
"""A work_s model stays one while its cross-validated error against CPU time is within this factor of the
black box's: what it gives (no machine noise learnt, a calibration to another machine) is worth a fifth,
and the medians of 20-30 cross-validated inputs move that much with the folds (pyflakes over standard-library
files: work 3.2 % against the descriptors' 2.8 %, both near the 1.3 % noise floor; tabulate's report, whose
work runs in C: 15.9 % against 9.1 %)."""


FEW_TRAIN_INPUTS = 20  # fewer training inputs than this: the build says its models and intervals are rough


def few_training_inputs(n_inputs: int, fraction: float) -> str | None:
    """A warning when ``n_inputs`` split at ``fraction`` leave fewer than :data:`FEW_TRAIN_INPUTS` for training
    (the choice of a model's form and features, and its interval, stand on them), or None."""
    n_train = max(int(round(fraction * n_inputs)), 1)
    if n_train >= FEW_TRAIN_INPUTS:
        return None
    need = int(np.ceil(FEW_TRAIN_INPUTS / max(fraction, 1e-9)))
    return (f"training on {n_train} of {n_inputs} inputs (--train-fraction {fraction:g}): a model's form, its features "
            f"and its p10-p90 interval chosen and measured on so few are rough (the interval's ranks need 9); for "
            f"{FEW_TRAIN_INPUTS} or more raise --train-fraction or profile ~{need}+ inputs")


def relative_errors(predicted: np.ndarray, actual: np.ndarray) -> dict[str, float]:
    """Median and mean of |predicted - actual| / actual."""
    errors = np.abs(np.asarray(predicted) - np.asarray(actual)) / np.asarray(actual)
    return {"median_rel_error": float(np.median(errors)), "mean_rel_error": float(np.mean(errors)), "n": int(len(errors))}


def metrics_source(store: RunStore, campaign_name: str | None) -> str:
    """What ``metrics_from="auto"`` models: ``original`` (as mantispy build does) when the campaign ran
    every input it ran instrumented also uninstrumented (``calibration_runs = "all"``), else
    ``instrumented``."""
    campaign = _campaign(store, campaign_name)
    original = store.dataframe(campaign, metrics_from="original", features=False)
    instrumented = store.dataframe(campaign, features=False)
    if not original.empty and set(original["input_id"]) >= set(instrumented["input_id"]):
        return "original"
    return "instrumented"


def _campaign(store: RunStore, campaign_name: str | None):
    campaigns = store.campaigns()
    if not campaigns:
        raise ModelingError(f"{store.path}: no campaign in the store; run mantispy profile first")
    if campaign_name is None:
        if len(campaigns) > 1:
            raise ModelingError(f"{store.path}: several campaigns ({', '.join(c.name for c in campaigns)}); pick one with --campaign")
        campaign = campaigns[0]
    else:
        named = store.campaign(campaign_name)
        if named is None:
            raise ModelingError(f"{store.path}: no campaign {campaign_name!r}")
        campaign = named
    return campaign


def _load(store: RunStore, campaign_name: str | None, metric: str, metrics_from: str = "instrumented"):
    campaign = _campaign(store, campaign_name)
    frame = store.dataframe(campaign, metrics_from=metrics_from)
    if frame.empty:
        if metrics_from != "instrumented":
            raise ModelingError(f"{store.path}: campaign {campaign.name!r} has no {metrics_from} runs to take metrics "
                                "from; profile with calibration_runs = \"all\"")
        raise ModelingError(f"{store.path}: campaign {campaign.name!r} has no successful runs to fit")
    column = f"metric:{metric}"
    if column not in frame.columns:
        known = sorted(c.split(":", 1)[1] for c in frame.columns if c.startswith("metric:"))
        raise ModelingError(f"metric {metric!r} is not in the store; choose one of {', '.join(known)} (or wall, cpu, rss)")
    frame = frame[frame[column] > 0]
    return campaign, frame


def with_extra_features(frame, extra: dict[str, dict[str, float]]):
    """``frame`` with one column per feature in ``extra`` (input id -> {feature id: value}), 0 where an
    input has no value."""
    if not extra:
        return frame
    names = sorted({f for row in extra.values() for f in row})
    frame = frame.copy()
    for name in names:
        frame[name] = frame["input_id"].map(lambda iid, n=name: extra.get(iid, {}).get(n, 0.0)).astype(float)
    return frame


def _feature_columns(frame) -> list[str]:
    return [c for c in frame.columns if not c.startswith(("metric:", "input:")) and c not in ("input_id", "repeat", "status")]


def _input_columns(frame) -> list[str]:
    return [c for c in frame.columns if c.startswith("input:")]


def _estimator(request: FitRequest, candidate: selection.Candidate) -> SporeRegressor:
    return SporeRegressor(degree=candidate.degree, method=request.method, random_state=request.seed,
                          exclude=request.exclude, form=candidate.form, solver=request.solver,
                          penalty=request.penalty)


def _fit_eval(frame, columns, metric_col, train_ids, test_ids, request: FitRequest,
              candidate: selection.Candidate | None = None):
    train = frame[frame["input_id"].isin(train_ids)]
    test = frame[frame["input_id"].isin(test_ids)]
    candidate = candidate or selection.Candidate("program", "polynomial" if request.form == "auto" else request.form,
                                                 request.degree)
    est = _estimator(request, candidate)
    est.fit(train[columns], train[metric_col].to_numpy(), groups=train["input_id"].to_numpy())
    return est, train, test


def _forms(request: FitRequest) -> list[tuple[str, int]]:
    if request.form != "auto" and request.form not in FORMS:
        raise ModelingError(f"unknown form {request.form!r}; choose auto, {', '.join(FORMS)}")
    return selection.candidate_forms(request.form, request.degree)


def _select(train, program_columns, input_columns, metric_col, request: FitRequest,
            content_columns: Sequence[str] = (), sampled_columns: Sequence[str] = ()) -> selection.Selection:
    y = train[metric_col].to_numpy(dtype=float)
    return selection.select(train, program_columns, input_columns, y, train["input_id"].to_numpy(),
                            _forms(request), lambda c: _estimator(request, c), folds=request.folds, seed=request.seed,
                            content_columns=content_columns, sampled_columns=sampled_columns,
                            view_confidence=request.view_confidence)


def fit_campaign(store: RunStore, campaign_name: str | None, request: FitRequest, log=lambda _m: None) -> dict[str, Any]:
    """Fit, evaluate and describe a model; returns the model JSON (see :mod:`artefact`).

    The model's form (and whether it uses the program's features, only the input descriptors, or is a
    constant) is chosen by cross-validation on the training inputs (:mod:`selection`)."""
    metric = resolve_metric(request.metric)
    measured = measured_metric(metric)
    if request.metrics_from == "auto":
        request = dataclasses.replace(request, metrics_from=metrics_source(store, campaign_name))
    campaign, frame = _load(store, campaign_name, measured, request.metrics_from)
    frame = with_extra_features(frame, request.extra_features)
    metric_col, measured_col = f"metric:{metric}", f"metric:{measured}"
    if not _feature_columns(frame):
        raise ModelingError("the runs recorded no features; was the program instrumented? (mantispy profile does that)")
    excluded = set(request.exclude)
    program_columns = [c for c in _feature_columns(frame) if c not in excluded]
    all_inputs = _input_columns(frame)
    inputs = [c for c in all_inputs if c not in excluded and c not in set(request.unusable_inputs)] if request.inputs else []
    input_ids = frame["input_id"].tolist()
    train_ids, test_ids = split_inputs(input_ids, request.train_fraction, request.seed)
    problem = split_problem(len(set(input_ids)), request.train_fraction)
    if problem is not None:
        raise ModelingError(problem)
    weights = None
    if metric == work.WORK_METRIC:
        frame, weights = work.add_work(frame, campaign.manifest, train_ids)
        if not (frame[metric_col] > 0).all():
            raise ModelingError("the runs counted no loop iterations or calls to weigh; instrument loops and calls")
    train = frame[frame["input_id"].isin(train_ids)]
    test = frame[frame["input_id"].isin(test_ids)]
    y_train = train[measured_col].to_numpy(dtype=float)  # what estimates are judged against
    y_test = test[measured_col].to_numpy(dtype=float)
    extra = {f for row in request.extra_features.values() for f in row}
    in_view = [c for c in program_columns if c in extra]
    content = [c for c in in_view if not c.startswith(SAMPLED_PREFIX)]  # what a predictor computes by itself
    sampled = [c for c in in_view if c.startswith(SAMPLED_PREFIX)]  # counted on input samples by an evaluator
    chosen_selection = _select(train, program_columns + inputs if program_columns else [], inputs, metric_col, request,
                               content_columns=content, sampled_columns=sampled)
    chosen = chosen_selection.chosen
    assert chosen is not None
    floor = float(y_train.min()) / 10
    averaged = (averaging.members(chosen_selection, views=chosen_selection.views, size=request.average)
                if request.average > 1 else [chosen])
    if len(averaged) < 2:
        averaged = [chosen]
    box_members = _blackbox_members(frame, measured_col, train_ids, request,
                                    chosen_selection if sorted(inputs) == sorted(all_inputs) and measured == metric
                                    else None)
    if metric == work.WORK_METRIC and not isinstance(box_members, str):
        work_cv = _cv_error(averaged, y_train, floor)
        box_cv = _cv_error(box_members, y_train, floor)
        if box_cv * WORK_MARGIN < work_cv:  # decided before the work model's fits, intervals and sensitivity
            return _measured_instead_of_work(store, campaign_name, request, work_cv, box_cv, log)
    fitted = [_fit_member(frame, scored, metric, metric_col, train_ids, test_ids, request, floor) for scored in averaged]
    est = fitted[0][1]  # the best-ranked member's estimator: its fit details and sensitivity are reported
    if len(fitted) == 1:
        model = fitted[0][0]
        predicted = fitted[0][2]
    else:
        model = artefact.ensemble([(s.candidate.label, f[0]) for s, f in zip(averaged, fitted)], metric, floor)
        predicted = averaging.geometric_mean([f[2] for f in fitted], floor)
    model["selection"] = chosen_selection.to_json()
    if len(averaged) > 1:
        model["selection"].update({"chosen": averaging.label(averaged),
                                   "members": [s.candidate.label for s in averaged],
                                   "combine": "geometric mean of the members' estimates"})
    if weights is not None:
        model["work"] = weights.to_json()
    band = _interval(averaged, train, metric_col, y_train, floor, request)
    if band is not None:
        model["interval"] = band
    model["features"] = artefact.describe_features(model, campaign.manifest)
    model["training"] = {
        "store": str(store.path),
        "campaign": campaign.name,
        "source_hash": campaign.source_hash,
        "metric": metric,
        "measured": measured,
        "metrics_from": request.metrics_from,
        "seed": request.seed,
        "train_fraction": request.train_fraction,
        "train_inputs": train_ids,
        "test_inputs": test_ids,
        "n_train_runs": int(len(train)),
        "n_test_runs": int(len(test)),
        "raw_features": len(_feature_columns(frame)),
        "input_descriptors": inputs,
        "excluded": list(request.exclude),
        "form": (model["form"] if len(averaged) > 1 else chosen.candidate.form if est is not None else "constant"),
        "penalty": request.penalty,
        "solver": ("glmnet (python-glmnet) for the final LASSO stage" if request.solver == "glmnet"
                   else "scikit-learn coordinate descent (LassoCV / lasso_path)"),
    }
    if est is not None:
        model["training"].update({
            "kept_features": len(est.prep_.columns),
            "constant_features": len(est.prep_.constant),
            "collapsed_duplicates": sum(len(v) for v in est.prep_.aliases.values()),
            "screened": est.screened_,
            "lambda": getattr(est, "alpha_", None),
            "lambda_rule": est.lambda_rule,
            "weighting": "none (log residuals are relative errors)" if est.form == "log" else est.weighting,
            "refit": est.refit,
        })
    elif len(averaged) == 1:
        model["training"]["constant"] = chosen_selection.reason
    train_predicted = averaging.geometric_mean([_member_predict(s, m, e, train, floor) for s, (m, e, _)
                                                in zip(averaged, fitted)], floor)
    cv_predicted = averaging.geometric_mean([s.predictions for s in averaged], floor)
    evaluation: dict[str, Any] = {
        "test": relative_errors(predicted, y_test),
        "train": relative_errors(train_predicted, y_train),
        "cv": {"median_rel_error": float(np.median(selection.relative_error(cv_predicted, y_train)))},
        "test_predictions": [
            {"input_id": i, "actual": float(a), "predicted": float(p)}
            for i, a, p in zip(test["input_id"], y_test, predicted)
        ],
    }
    if band is not None:
        evaluation["test"]["interval_coverage"] = selection.coverage(
            [(a, p * band["low"], p * band["high"]) for a, p in zip(y_test, predicted)])
    noise = noise_floor(store.runs(campaign), variant=request.metrics_from, metrics=[measured]).get(measured)
    if noise is not None:
        evaluation["noise"] = noise
    log(f"{averaging.label(averaged)}: {len(artefact.model_terms(model))} term(s) over "
        f"{len(model['scaling'])} feature(s); "
        f"held-out median relative error {evaluation['test']['median_rel_error']:.1%}")
    evaluation["blackbox"] = _blackbox(frame, measured_col, train_ids, test_ids, request, box_members)
    if request.sensitivity and est is not None:
        if request.method == "lasso":
            evaluation["lambda_path"] = _lambda_path(est, train, test, metric_col, measured_col)
        evaluation["training_sizes"] = _training_sizes(frame, chosen.columns, metric_col, request, chosen.candidate,
                                                       measured_col, campaign.manifest)
    model["evaluation"] = evaluation
    return model


def _measured_instead_of_work(store: RunStore, campaign_name: str | None, request: FitRequest, work_cv: float,
                              box_cv: float, log) -> dict[str, Any]:
    """A ``work_s`` model worse on cross-validation than the black box (the input descriptors fitted to CPU
    time) by more than :data:`WORK_MARGIN`: the program's counted work (loop iterations and calls,
    Python-level) does not track its CPU time, as when the work is done in C (parsing a CSV file, regular
    expressions, string methods). The work_s model is then a model of the measured CPU time itself, fitted
    with the same features allowed, so it is never worse than the black box on cross-validation; it has no
    ``work`` block, so ``mantispy calibrate`` has nothing to re-measure, and ``training.work_fallback``
    says why."""
    reason = (f"the program's counted work (loop iterations and calls) tracked CPU time worse on cross-validation "
              f"({work_cv:.1%}) than the input descriptors did ({box_cv:.1%}): work_s is a model of CPU time")
    log(f"{work.WORK_METRIC}: {reason}")
    model = fit_campaign(store, campaign_name, dataclasses.replace(request, metric=work.MEASURED), log)
    return as_work_model(model, {"work_cv_median_rel_error": work_cv, "blackbox_cv_median_rel_error": box_cv,
                                 "reason": reason})


def as_work_model(cpu_model: dict[str, Any], fallback: dict[str, Any]) -> dict[str, Any]:
    """A model of CPU time standing in for ``work_s`` (a copy; ``fallback``: why, as
    :func:`_measured_instead_of_work` records it)."""
    model = copy.deepcopy(cpu_model)
    model["metric"] = work.WORK_METRIC
    model["training"]["metric"] = work.WORK_METRIC
    model["training"]["work_fallback"] = dict(fallback)
    return model


INTERVAL_SOURCES = ("leave-one-input-out", "out-of-fold")


def _fit_member(frame, scored: selection.Scored, metric: str, metric_col: str, train_ids, test_ids,
                request: FitRequest, floor: float) -> tuple[dict[str, Any], SporeRegressor | None, np.ndarray]:
    """One candidate fitted on the training inputs: (its model JSON, its estimator or None for the constant,
    its estimates of the held-out runs)."""
    test = frame[frame["input_id"].isin(test_ids)]
    if scored.candidate.view == "constant":
        train = frame[frame["input_id"].isin(train_ids)]
        model = _constant_model(metric, train[metric_col].to_numpy(dtype=float))
        return model, None, np.full(len(test), model["intercept"])
    est, _, _ = _fit_eval(frame, scored.columns, metric_col, train_ids, test_ids, request, scored.candidate)
    model = artefact.from_estimator(est, metric)
    model["floor"] = floor
    return model, est, np.maximum(est.predict(test[scored.columns]), floor)


def _member_predict(scored: selection.Scored, model: dict[str, Any], est: SporeRegressor | None, rows,
                    floor: float) -> np.ndarray:
    if est is None:
        return np.full(len(rows), float(model["intercept"]))
    return np.maximum(est.predict(rows[scored.columns]), floor)


def _interval(averaged: list[selection.Scored], train, metric_col: str, y_train: np.ndarray, floor: float,
              request: FitRequest) -> dict[str, Any] | None:
    """The model's prediction interval, from its leave-one-input-out predictions on the training inputs (an
    average's: the geometric mean of its members'; the selection's out-of-fold ones where a fit left out
    fails, or where the request asks)."""
    if request.interval_from not in INTERVAL_SOURCES:
        raise ModelingError(f"unknown interval source {request.interval_from!r}; choose {' or '.join(INTERVAL_SOURCES)}")
    out_of_fold = averaging.geometric_mean([s.predictions for s in averaged], floor)
    if request.interval_from == "out-of-fold":
        return selection.interval(out_of_fold, y_train, request.levels)
    left_out = []
    for scored in averaged:
        again = selection.leave_one_input_out(scored, train, train[metric_col].to_numpy(dtype=float),
                                              train["input_id"].to_numpy(), lambda c: _estimator(request, c),
                                              request.seed)
        if again.problem is not None or not np.all(np.isfinite(again.predictions)):
            return selection.interval(out_of_fold, y_train, request.levels)
        left_out.append(again.predictions)
    return selection.interval(averaging.geometric_mean(left_out, floor), y_train, request.levels,
                              source="leave-one-input-out predictions")


def _constant_model(metric: str, y_train: np.ndarray) -> dict[str, Any]:
    """The constant that minimises the training runs' squared relative error, as a model."""
    return {"format": artefact.MODEL_FORMAT, "version": artefact.MODEL_VERSION, "metric": metric,
            "method": "constant", "degree": 0, "form": "polynomial", "intercept": selection.constant_value(y_train),
            "terms": [], "scaling": {}, "aliases": {}, "features": {}}


def _blackbox_members(frame, metric_col, train_ids, request: FitRequest,
                      chosen: selection.Selection | None) -> list[selection.Scored] | str:
    """The black box's candidates, as cross-validation ranked them (no fit on the whole training set yet):
    the best form on the input descriptors only, averaged as the model is (the best ``request.average`` of
    the constant and the descriptors' forms); or why there is no black box. ``chosen``: a selection whose
    pool already holds the descriptors' view for ``metric_col`` (None: select it here)."""
    columns = _input_columns(frame)
    if not columns:
        return "the inputs carry no numbers (argv/kwargs) or file sizes"
    pool = chosen
    if pool is None:
        train = frame[frame["input_id"].isin(train_ids)]
        try:
            pool = _select(train, [], columns, metric_col, request)
        except ModelingError as exc:
            return str(exc)
    best = pool.best("inputs")
    if best is None or math.isinf(best.error):
        return (best.problem or "no form fitted the input descriptors") if best is not None else "no input descriptor varies"
    averaged = averaging.members(pool, views=("constant", "inputs"), size=request.average) if request.average > 1 else []
    if len(averaged) < 2 or all(s.candidate.view == "constant" for s in averaged):
        averaged = [best]
    return averaged


def _cv_error(members: Sequence[selection.Scored], y_train: np.ndarray, floor: float) -> float:
    """The median relative error of the members' combined out-of-fold estimates."""
    cv = averaging.geometric_mean([s.predictions for s in members], floor)
    return float(np.median(selection.relative_error(cv, y_train)))


def _blackbox(frame, metric_col, train_ids, test_ids, request: FitRequest,
              averaged: list[selection.Scored] | str) -> dict[str, Any]:
    """The black box (``averaged``: :func:`_blackbox_members`) fitted on the training inputs and judged on the
    held-out ones."""
    if isinstance(averaged, str):
        return {"available": False, "reason": averaged}
    train = frame[frame["input_id"].isin(train_ids)]
    floor = float(train[metric_col].min()) / 10
    estimates, used = [], []
    for scored in averaged:
        try:
            model, est, predicted = _fit_member(frame, scored, "blackbox", metric_col, train_ids, test_ids, request,
                                                floor)
        except ModelingError as exc:
            return {"available": False, "reason": str(exc)}
        estimates.append(predicted)
        used += [f for term in (est.term_features_ if est is not None else []) for f, _ in term if f not in used]
    test = frame[frame["input_id"].isin(test_ids)]
    predicted = averaging.geometric_mean(estimates, floor)
    result: dict[str, Any] = dict(relative_errors(predicted, test[metric_col].to_numpy()))
    result.update({
        "available": True,
        "form": averaging.label(averaged),
        "cv_median_rel_error": _cv_error(averaged, train[metric_col].to_numpy(dtype=float), floor),
        "inputs_used": used,
        "test_predictions": [float(p) for p in predicted],
    })
    return result


def _lambda_path(est, train, test, metric_col, measured_col) -> list[dict[str, Any]]:
    """Held-out error and model size along the final LASSO stage's lambda grid (no refit)."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import Lasso

    A_train, A_test = est.penalised_design(train), est.penalised_design(test)
    y_train, y_test = train[metric_col].to_numpy(), test[measured_col].to_numpy()
    w = est.sample_weights(y_train)
    rows = []
    alphas = est.lasso_alphas_
    chosen = float(alphas[int(np.argmin(np.abs(np.log(alphas) - np.log(est.alpha_))))])
    grid = sorted(set(alphas[:: max(len(alphas) // 15, 1)].tolist()) | {chosen}, reverse=True)
    for alpha in grid:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            lasso = Lasso(alpha=float(alpha), max_iter=5000, tol=1e-5).fit(A_train, est.target(y_train), sample_weight=w)
        errors = relative_errors(est.untarget(lasso.predict(A_test)), y_test)
        rows.append({"lambda": float(alpha), "terms": int(np.count_nonzero(lasso.coef_)), **errors,
                     "chosen": alpha == chosen})
    return rows


def _training_sizes(frame, columns, metric_col, request: FitRequest, candidate: selection.Candidate,
                    measured_col: str, manifest) -> list[dict[str, Any]]:
    rows = []
    for fraction in TRAINING_SIZES:
        train_ids, test_ids = split_inputs(frame["input_id"].tolist(), fraction, request.seed)
        if metric_col.endswith(work.WORK_METRIC) and len(train_ids) >= 4:
            frame, _ = work.add_work(frame, manifest, train_ids)  # weights from this split's training part
        if len(train_ids) < 4 or not test_ids:
            rows.append({"fraction": fraction, "n_train_inputs": len(train_ids), "skipped": "fewer than 4 training inputs"})
            continue
        try:
            est, _, test = _fit_eval(frame, columns, metric_col, train_ids, test_ids, request, candidate)
        except ModelingError as exc:
            rows.append({"fraction": fraction, "n_train_inputs": len(train_ids), "skipped": str(exc)})
            continue
        rows.append({"fraction": fraction, "n_train_inputs": len(train_ids), "terms": len(est.coef_),
                     **relative_errors(est.predict(test[columns]), test[measured_col].to_numpy())})
    return rows


__all__ = ["FitRequest", "fit_campaign", "ModelingError", "StoreError", "resolve_metric", "split_inputs"]
