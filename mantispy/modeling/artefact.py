"""The model artefact: JSON, never pickle.

A model is a polynomial over scaled features::

    metric ~= intercept + sum_t coefficient_t * prod_f ((x_f - min_f) / (max_f - min_f)) ** power_tf

or, in the multiplicative ``"form": "log"``, the exponential of that polynomial taken over
g(x_f) = sign(x_f) * log(1 + |x_f|) (min and max are then those of g(x_f)). An estimate is never below
``floor`` (a tenth of the smallest training value): a negative time or size is no estimate.

An ``"form": "ensemble"`` model is the geometric mean of its ``members``, each a model of the two forms
above with its own ``label``, ``floor``, ``terms`` and ``scaling`` (:func:`ensemble`); its own ``scaling``
is then the range of each feature's raw value over the members (for range checks and the list of
features), and its ``terms`` are empty.

``predict`` below needs nothing but the standard library, so a predictor module can evaluate the JSON
without importing mantispy, numpy or scikit-learn. Layout::

    {"format": "mantispy-model", "version": 2, "metric": "wall_s", "method": "lasso", "degree": 3,
     "form": "polynomial" or "log", "floor": 0.001, "intercept": 0.1, "terms": [{"coefficient": 1.8, "factors": [{"feature": ID, "power": 1}, ...]}],
     "scaling": {ID: {"min": 0.0, "max": 100.0}},          # every feature the terms use
     "aliases": {ID: [[OTHER_ID, 1 or -1], ...]},          # perfectly correlated stand-ins
     "features": {ID: {"kind", "file", "line", "qualname", "snippet", "detail"}},
     "interval": {"level": [0.1, 0.9], "low": 0.8, "high": 1.3, ...},   # estimate x low .. estimate x high
     "training": {...},                                    # data, split and fit settings
     "evaluation": {...}}                                  # held-out errors, lambda path, sizes, baseline
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from .evaluation import ENSEMBLE, interval, model_problem, predict

__all__ = ["interval", "model_problem", "predict"]  # re-exported: a model's evaluation lives in evaluation.py

MODEL_FORMAT = "mantispy-model"
MODEL_VERSION = 2


class ModelFileError(Exception):
    """The file is not a model this mantispy can use."""


def from_estimator(est, metric: str) -> dict[str, Any]:
    """The JSON-ready polynomial of a fitted :class:`SporeRegressor`."""
    used = sorted({f for term in est.term_features_ for f, _ in term})
    index = {c: i for i, c in enumerate(est.prep_.columns)}
    return {
        "format": MODEL_FORMAT,
        "version": MODEL_VERSION,
        "metric": metric,
        "method": est.method,
        "degree": est.degree,
        "form": est.form,
        "intercept": est.intercept_,
        "terms": [
            {"coefficient": float(c), "factors": [{"feature": f, "power": p} for f, p in term]}
            for c, term in zip(est.coef_, est.term_features_)
        ],
        "scaling": {
            f: {"min": float(est.prep_.minimum[index[f]]), "max": float(est.prep_.maximum[index[f]])} for f in used
        },
        "aliases": {f: [[a, s] for a, s in est.prep_.aliases.get(f, [])] for f in used if f in est.prep_.aliases},
    }


def _raw(bound: float, log_form: bool) -> float:
    return math.copysign(math.expm1(abs(bound)), bound) if log_form else bound


def ensemble(members: list[tuple[str, dict[str, Any]]], metric: str, floor: float) -> dict[str, Any]:
    """One model JSON whose estimate is the geometric mean of ``members`` ((label, model JSON) pairs, each a
    polynomial or log-form model fitted on the same training runs)."""
    scaling: dict[str, dict[str, float]] = {}
    aliases: dict[str, list[list[Any]]] = {}
    parts = []
    for label, member in members:
        log_form = member.get("form") == "log"
        for feature, bounds in member["scaling"].items():
            low, high = _raw(bounds["min"], log_form), _raw(bounds["max"], log_form)
            known = scaling.setdefault(feature, {"min": low, "max": high})
            known["min"], known["max"] = min(known["min"], low), max(known["max"], high)
        for feature, group in member.get("aliases", {}).items():
            kept = aliases.setdefault(feature, [])
            kept.extend(pair for pair in group if pair not in kept)
        part: dict[str, Any] = {"label": label}
        part.update({k: member[k] for k in ("method", "degree", "form", "intercept", "terms", "scaling", "aliases")
                     if k in member})
        part["floor"] = float(member.get("floor", floor))
        parts.append(part)
    return {"format": MODEL_FORMAT, "version": MODEL_VERSION, "metric": metric, "method": "geometric mean",
            "degree": max(int(m.get("degree", 0)) for _, m in members), "form": ENSEMBLE,
            "combine": "geometric mean of the members' estimates", "intercept": 0.0, "terms": [], "floor": floor,
            "scaling": scaling, "aliases": aliases, "members": parts}


def model_terms(model: dict[str, Any]) -> list[dict[str, Any]]:
    """Every term of the model: an average's are its members'."""
    parts = model.get("members", []) if model.get("form") == ENSEMBLE else [model]
    return [term for part in parts for term in part.get("terms", [])]


def model_features(model: dict[str, Any]) -> list[str]:
    """Feature ids the model needs, in a stable order."""
    return sorted(model["scaling"])


def save(model: dict[str, Any], path: Path) -> None:
    """Write the model JSON (atomically)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(model, indent=1) + "\n", encoding="utf-8")
    tmp.replace(path)


def read_json(path: Path, fix: str, error: type[Exception]) -> Any:
    """The JSON document in ``path``; ``error`` with one line naming the file and ``fix`` when it cannot be
    read or is not JSON."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise error(f"{path}: cannot read ({exc.strerror}); {fix}") from None
    except ValueError:
        raise error(f"{path}: not JSON; {fix}") from None


def load(path: Path) -> dict[str, Any]:
    """Read and check a model JSON."""
    path = Path(path)
    model = read_json(path, "give a model written by mantispy fit", ModelFileError)
    if not isinstance(model, dict) or model.get("format") != MODEL_FORMAT:
        raise ModelFileError(f"{path}: not a mantispy model; give a model written by mantispy fit")
    if model.get("form", "polynomial") not in ("polynomial", "log", ENSEMBLE):
        raise ModelFileError(f"{path}: unknown model form {model.get('form')!r}; upgrade mantispy or refit")
    version = model.get("version", 0)
    if isinstance(version, bool) or not isinstance(version, int):
        raise ModelFileError(f"{path}: field version: expected a whole number, not {version!r}; refit with mantispy fit")
    if version > MODEL_VERSION:
        raise ModelFileError(f"{path}: model format {version} is newer than this mantispy; upgrade it")
    problem = model_problem(model) or shown_fields_problem(model)
    if problem is not None:
        raise ModelFileError(f"{path}: {problem}; refit with mantispy fit")
    return model


def shown_fields_problem(model: dict[str, Any]) -> str | None:
    """What makes the fields ``mantispy show`` prints beside the polynomial unreadable, or None."""
    if not isinstance(model.get("metric", ""), str):
        return "field metric: expected the metric's name"
    for name in ("features", "aliases", "evaluation", "training", "selection"):
        if name in model and not isinstance(model[name], dict):
            return f"field {name}: expected an object"
    for feature, described in (model.get("features") or {}).items():
        if not isinstance(described, dict):
            return f"field features.{feature}: expected an object (kind, file, line, ...)"
    for feature, group in (model.get("aliases") or {}).items():
        if not isinstance(group, list) or not all(isinstance(a, list) and len(a) == 2 for a in group):
            return f"field aliases.{feature}: expected a list of [feature, correlation] pairs"
    return None


def describe_features(model: dict[str, Any], manifest: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    """Source locations of the model's features (and aliases) from the campaign's manifest."""
    if not manifest:
        return {}
    wanted = set(model_features(model)) | {a for group in model.get("aliases", {}).values() for a, _ in group}
    found = {}
    for feature in manifest.get("features", []):
        if feature["id"] in wanted:
            found[feature["id"]] = {
                "kind": feature["kind"],
                "file": feature["file"],
                "line": feature["span"][0],
                "end_line": feature["span"][2],
                "qualname": feature["qualname"],
                "snippet": feature["snippet"],
                "detail": feature["detail"],
            }
    return found


def variable_names(model: dict[str, Any]) -> dict[str, str]:
    """{feature id: its name in :func:`polynomial_text`}: x1, x2 ... (g1, g2 ... in the log form)."""
    letter = "g" if model.get("form") == "log" else "x"
    return {f: f"{letter}{n}" for n, f in enumerate(model_features(model), 1)}


def polynomial_text(model: dict[str, Any]) -> list[str]:
    """The model as lines of text: the formula with x1, x2 ... (an ensemble: each member's, indented)."""
    if model.get("form") == ENSEMBLE:
        members = model["members"]
        lines = [f"{model['metric']} ~= geometric mean of {len(members)} models' estimates"]
        for n, member in enumerate(members, 1):
            lines.append(f"  [{n}] {member.get('label', '')}:")
            lines += ["    " + line for line in polynomial_text({**member, "metric": model["metric"]})]
        return lines
    names = variable_names(model)
    log_form = model.get("form") == "log"
    lines = [f"{'log ' if log_form else ''}{model['metric']} ~= {model['intercept']:.6g}"]
    for term in sorted(model["terms"], key=lambda t: -abs(t["coefficient"])):
        product = " * ".join(names[f["feature"]] + (f"^{f['power']}" if f["power"] > 1 else "") for f in term["factors"])
        sign = "-" if term["coefficient"] < 0 else "+"
        lines.append(f"    {sign} {abs(term['coefficient']):.6g} * {product}")
    return lines
