"""From the run store to an evaluated model, as the paper's §6 reports it.

:func:`fit_campaign` splits the campaign's inputs (not runs: repeats of an input stay on one side) into
a training part (``train_fraction``, the paper's 10 %) and a held-out part, fits SPORE on the training
part and reports on the held-out part: median and mean relative error |predicted - actual| / actual,
the error and size of the model along the final stage's lambda path (paper Fig. 6a/9a), the error when
training on 5/10/20/40 % of the inputs (Fig. 6b/9b), and the same SPORE fitted on input descriptors only
(numbers in argv/kwargs, input file sizes): the black-box baseline.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from mantispy.store import RunStore, StoreError

from . import artefact
from .spore import ModelingError, SporeRegressor

METRIC_ALIASES = {"wall": "wall_s", "cpu": "cpu_s", "rss": "max_rss_kb", "memory": "max_rss_kb"}
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
    metrics_from: str = "instrumented"  # "original": metrics of the uninstrumented runs (calibration_runs = "all")
    constant_fallback: bool = False  # no usable feature: a constant model instead of an error (mantispy build)


def resolve_metric(name: str) -> str:
    """``wall`` -> ``wall_s`` etc.; other names are taken as stored metric names."""
    return METRIC_ALIASES.get(name, name)


def split_inputs(input_ids: list[str], fraction: float, seed: int) -> tuple[list[str], list[str]]:
    """Deterministic split of distinct input ids into (train, test)."""
    ids = sorted(set(input_ids))
    rng = np.random.default_rng(seed)
    order = [ids[i] for i in rng.permutation(len(ids))]
    n_train = max(int(round(fraction * len(ids))), 1)
    return sorted(order[:n_train]), sorted(order[n_train:])


def relative_errors(predicted: np.ndarray, actual: np.ndarray) -> dict[str, float]:
    """Median and mean of |predicted - actual| / actual."""
    errors = np.abs(np.asarray(predicted) - np.asarray(actual)) / np.asarray(actual)
    return {"median_rel_error": float(np.median(errors)), "mean_rel_error": float(np.mean(errors)), "n": int(len(errors))}


def _load(store: RunStore, campaign_name: str | None, metric: str, metrics_from: str = "instrumented"):
    campaigns = store.campaigns()
    if not campaigns:
        raise ModelingError(f"{store.path}: no campaign in the store; run mantispy profile first")
    if campaign_name is None:
        if len(campaigns) > 1:
            raise ModelingError(f"{store.path}: several campaigns ({', '.join(c.name for c in campaigns)}); pick one with --campaign")
        campaign = campaigns[0]
    else:
        campaign = store.campaign(campaign_name)
        if campaign is None:
            raise ModelingError(f"{store.path}: no campaign {campaign_name!r}")
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


def _feature_columns(frame) -> list[str]:
    return [c for c in frame.columns if not c.startswith(("metric:", "input:")) and c not in ("input_id", "repeat", "status")]


def _fit_eval(frame, columns, metric_col, train_ids, test_ids, request: FitRequest, **params):
    train = frame[frame["input_id"].isin(train_ids)]
    test = frame[frame["input_id"].isin(test_ids)]
    est = SporeRegressor(degree=request.degree, method=request.method, random_state=request.seed,
                         exclude=request.exclude, **params)
    est.fit(train[columns], train[metric_col].to_numpy(), groups=train["input_id"].to_numpy())
    return est, train, test


def fit_campaign(store: RunStore, campaign_name: str | None, request: FitRequest, log=lambda _m: None) -> dict[str, Any]:
    """Fit, evaluate and describe a model; returns the model JSON (see :mod:`artefact`)."""
    metric = resolve_metric(request.metric)
    campaign, frame = _load(store, campaign_name, metric, request.metrics_from)
    metric_col = f"metric:{metric}"
    columns = _feature_columns(frame)
    if not columns:
        raise ModelingError("the runs recorded no features; was the program instrumented? (mantispy profile does that)")
    inputs = frame["input_id"].tolist()
    train_ids, test_ids = split_inputs(inputs, request.train_fraction, request.seed)
    n_inputs = len(set(inputs))
    if len(train_ids) < 4 or not test_ids:
        need = int(np.ceil(4 / max(request.train_fraction, 1e-9)))
        raise ModelingError(
            f"{n_inputs} inputs give {len(train_ids)} for training at --train-fraction {request.train_fraction:g}; "
            f"need at least 4 training inputs and 1 held out: profile ~{need}+ inputs or raise --train-fraction"
        )
    try:
        est, train, test = _fit_eval(frame, columns, metric_col, train_ids, test_ids, request)
    except ModelingError:
        if not request.constant_fallback:
            raise
        return _constant_model(campaign, frame, metric, metric_col, train_ids, test_ids, request, store)
    model = artefact.from_estimator(est, metric)
    y_test = test[metric_col].to_numpy()
    model["features"] = artefact.describe_features(model, campaign.manifest)
    model["training"] = {
        "store": str(store.path),
        "campaign": campaign.name,
        "source_hash": campaign.source_hash,
        "metric": metric,
        "metrics_from": request.metrics_from,
        "seed": request.seed,
        "train_fraction": request.train_fraction,
        "train_inputs": train_ids,
        "test_inputs": test_ids,
        "n_train_runs": int(len(train)),
        "n_test_runs": int(len(test)),
        "raw_features": len(columns),
        "kept_features": len(est.prep_.columns),
        "constant_features": len(est.prep_.constant),
        "collapsed_duplicates": sum(len(v) for v in est.prep_.aliases.values()),
        "screened": est.screened_,
        "excluded": list(request.exclude),
        "lambda": getattr(est, "alpha_", None),
        "lambda_rule": est.lambda_rule,
        "weighting": est.weighting,
        "refit": est.refit,
        "solver": "scikit-learn coordinate descent (LassoCV / lasso_path)",
    }
    evaluation: dict[str, Any] = {
        "test": relative_errors(est.predict(test[columns]), y_test),
        "train": relative_errors(est.predict(train[columns]), train[metric_col].to_numpy()),
        "test_predictions": [
            {"input_id": i, "actual": float(a), "predicted": float(p)}
            for i, a, p in zip(test["input_id"], y_test, est.predict(test[columns]))
        ],
    }
    log(f"fitted {len(model['terms'])} term(s) over {len(model['scaling'])} feature(s); "
        f"held-out median relative error {evaluation['test']['median_rel_error']:.1%}")
    baseline = _blackbox(frame, metric_col, train_ids, test_ids, request)
    evaluation["blackbox"] = baseline
    if request.sensitivity:
        if request.method == "lasso":
            evaluation["lambda_path"] = _lambda_path(est, train, test, columns, metric_col)
        evaluation["training_sizes"] = _training_sizes(frame, columns, metric_col, request)
    model["evaluation"] = evaluation
    return model


def _constant_model(campaign, frame, metric, metric_col, train_ids, test_ids, request: FitRequest,
                    store: RunStore) -> dict[str, Any]:
    """No usable feature is left (the cost loop rejected them all): the constant that minimises the
    training runs' squared relative error, sum(1/y) / sum(1/y^2), evaluated like any model."""
    train = frame[frame["input_id"].isin(train_ids)]
    test = frame[frame["input_id"].isin(test_ids)]
    y = train[metric_col].to_numpy(dtype=float)
    constant = float(np.sum(1 / y) / np.sum(1 / y ** 2))
    y_test = test[metric_col].to_numpy()
    predicted = np.full(len(y_test), constant)
    model = {"format": artefact.MODEL_FORMAT, "version": artefact.MODEL_VERSION, "metric": metric,
             "method": "constant", "degree": 0, "intercept": constant, "terms": [], "scaling": {}, "aliases": {},
             "features": {}}
    model["training"] = {"store": str(store.path), "campaign": campaign.name, "source_hash": campaign.source_hash,
                         "metric": metric, "metrics_from": request.metrics_from, "seed": request.seed,
                         "train_fraction": request.train_fraction, "train_inputs": train_ids, "test_inputs": test_ids,
                         "n_train_runs": int(len(train)), "n_test_runs": int(len(test)),
                         "excluded": list(request.exclude), "constant": "no usable feature left"}
    model["evaluation"] = {
        "test": relative_errors(predicted, y_test),
        "train": relative_errors(np.full(len(y), constant), y),
        "test_predictions": [{"input_id": i, "actual": float(a), "predicted": constant}
                             for i, a in zip(test["input_id"], y_test)],
        "blackbox": _blackbox(frame, metric_col, train_ids, test_ids, request),
    }
    return model


def _blackbox(frame, metric_col, train_ids, test_ids, request: FitRequest) -> dict[str, Any]:
    columns = [c for c in frame.columns if c.startswith("input:")]
    if not columns:
        return {"available": False, "reason": "the inputs carry no numbers (argv/kwargs) or file sizes"}
    try:
        est, train, test = _fit_eval(frame, columns, metric_col, train_ids, test_ids, request)
    except ModelingError as exc:
        return {"available": False, "reason": str(exc)}
    result = relative_errors(est.predict(test[columns]), test[metric_col].to_numpy())
    result.update({
        "available": True,
        "inputs_used": [f for term in est.term_features_ for f, _ in term],
        "test_predictions": [float(p) for p in est.predict(test[columns])],
    })
    return result


def _lambda_path(est, train, test, columns, metric_col) -> list[dict[str, Any]]:
    """Held-out error and model size along the final LASSO stage's lambda grid (no refit)."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import Lasso

    def terms(frame):
        idx = {c: i for i, c in enumerate(est.prep_.columns)}
        cols = [idx[c] for c in est.screened_]
        raw = frame[est.screened_].to_numpy(dtype=float)
        Z = (raw - est.prep_.minimum[cols]) / (est.prep_.maximum[cols] - est.prep_.minimum[cols])
        return est.poly_.transform(Z)

    A_train, A_test = terms(train), terms(test)
    y_train, y_test = train[metric_col].to_numpy(), test[metric_col].to_numpy()
    w = est._weights(y_train)
    rows = []
    alphas = est.lasso_alphas_
    chosen = float(alphas[int(np.argmin(np.abs(np.log(alphas) - np.log(est.alpha_))))])
    grid = sorted(set(alphas[:: max(len(alphas) // 15, 1)].tolist()) | {chosen}, reverse=True)
    for alpha in grid:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            lasso = Lasso(alpha=float(alpha), max_iter=5000, tol=1e-5).fit(A_train, y_train, sample_weight=w)
        errors = relative_errors(lasso.predict(A_test), y_test)
        rows.append({"lambda": float(alpha), "terms": int(np.count_nonzero(lasso.coef_)), **errors,
                     "chosen": alpha == chosen})
    return rows


def _training_sizes(frame, columns, metric_col, request: FitRequest) -> list[dict[str, Any]]:
    rows = []
    for fraction in TRAINING_SIZES:
        train_ids, test_ids = split_inputs(frame["input_id"].tolist(), fraction, request.seed)
        if len(train_ids) < 4 or not test_ids:
            rows.append({"fraction": fraction, "n_train_inputs": len(train_ids), "skipped": "fewer than 4 training inputs"})
            continue
        try:
            est, _, test = _fit_eval(frame, columns, metric_col, train_ids, test_ids, request)
        except ModelingError as exc:
            rows.append({"fraction": fraction, "n_train_inputs": len(train_ids), "skipped": str(exc)})
            continue
        rows.append({"fraction": fraction, "n_train_inputs": len(train_ids), "terms": len(est.coef_),
                     **relative_errors(est.predict(test[columns]), test[metric_col].to_numpy())})
    return rows


__all__ = ["FitRequest", "fit_campaign", "ModelingError", "StoreError", "resolve_metric", "split_inputs"]
