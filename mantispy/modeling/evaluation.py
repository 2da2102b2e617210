"""A model polynomial evaluated with the standard library only: what ``mantispy fit`` models predict,
and what predictor packages carry verbatim as ``_model.py`` (so this module imports nothing else)."""

from __future__ import annotations

import json
import math
from typing import Any

ENSEMBLE = "ensemble"
"""The form of a model that is the geometric mean of its ``members`` (each a polynomial or log-form model)."""
MAX_MEMBERS = 10


def predict(model: dict[str, Any], features: dict[str, float]) -> float:
    """Evaluate a model on one run's features (absent features count as 0). A term beyond the float range
    (a feature astronomically far outside what training saw) makes the estimate infinite."""
    try:
        return _evaluate(model, features)
    except OverflowError:
        return math.inf


def _evaluate(model: dict[str, Any], features: dict[str, float]) -> float:
    if model.get("form") == ENSEMBLE:
        members = model["members"]
        logs = [math.log(max(_evaluate(member, features), 1e-300)) for member in members]
        total = math.exp(min(sum(logs) / len(logs), 700.0))
        return max(total, float(model.get("floor", -math.inf)))
    log_form = model.get("form", "polynomial") == "log"
    total = float(model["intercept"])
    scaling = model["scaling"]
    for term in model["terms"]:
        value = float(term["coefficient"])
        for factor in term["factors"]:
            bounds = scaling[factor["feature"]]
            raw = float(features.get(factor["feature"], 0.0))
            if log_form:
                raw = math.copysign(math.log1p(abs(raw)), raw)
            x = (raw - bounds["min"]) / (bounds["max"] - bounds["min"])
            value *= x ** factor["power"]
        total += value
    if log_form:
        total = math.exp(min(total, 700.0))
    return max(total, float(model.get("floor", -math.inf)))


def interval(model: dict[str, Any], estimate: float) -> tuple[float, float] | None:
    """The (low, high) prediction interval around ``estimate`` (None if the model has none)."""
    band = model.get("interval")
    if not band:
        return None
    return estimate * float(band["low"]), estimate * float(band["high"])


def _shown(key: str) -> str:
    # A feature name as a one-line message names it (this module is copied into predictor packages: stdlib only).
    return key if key.isprintable() else json.dumps(key)


def model_problem(model: Any) -> str | None:
    """What makes ``model`` unusable by :func:`predict` (the field and what it must be), or None.

    Checks the parts evaluation reads: ``intercept``, ``terms`` (``coefficient``; ``factors``: ``feature``,
    ``power``), ``scaling`` (``min`` < ``max`` per feature), ``form``, ``floor`` and ``interval``; every
    number finite. An ensemble's ``members`` are checked as models of their own (none an ensemble)."""
    return _model_problem(model, allow_members=True)


def _model_problem(model: Any, allow_members: bool) -> str | None:
    if not isinstance(model, dict):
        return f"the model must be an object, not {type(model).__name__}"

    def finite(value: Any) -> bool:
        return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)

    if not finite(model.get("intercept")):
        return "field intercept: expected a finite number"
    forms = ("polynomial", "log", ENSEMBLE) if allow_members else ("polynomial", "log")
    if model.get("form", "polynomial") not in forms:
        return f"field form: expected {' or '.join(repr(f) for f in forms)}, not {model.get('form')!r}"
    if model.get("form") == ENSEMBLE:
        members = model.get("members")
        if not isinstance(members, list) or not 1 <= len(members) <= MAX_MEMBERS:
            return f"field members: expected a list of 1 to {MAX_MEMBERS} models"
        for n, member in enumerate(members):
            problem = _model_problem(member, allow_members=False)
            if problem is not None:
                return f"field members[{n}]: {problem.removeprefix('field ')}"
    if "floor" in model and not finite(model["floor"]):
        return "field floor: expected a finite number"
    scaling = model.get("scaling")
    if not isinstance(scaling, dict):
        return "field scaling: expected an object {feature: {min, max}}"
    for feature, bounds in scaling.items():
        if not isinstance(bounds, dict) or not finite(bounds.get("min")) or not finite(bounds.get("max")):
            return f"field scaling.{_shown(feature)}: expected {{\"min\": number, \"max\": number}}"
        if not bounds["max"] > bounds["min"]:
            return f"field scaling.{_shown(feature)}: max must be above min"
    terms = model.get("terms")
    if not isinstance(terms, list):
        return "field terms: expected a list"
    for n, term in enumerate(terms):
        if not isinstance(term, dict) or not finite(term.get("coefficient")) or not isinstance(term.get("factors"), list):
            return f"field terms[{n}]: expected {{\"coefficient\": number, \"factors\": [...]}}"
        for m, factor in enumerate(term["factors"]):
            power = factor.get("power") if isinstance(factor, dict) else None
            feature = factor.get("feature") if isinstance(factor, dict) else None
            if (not isinstance(feature, str) or feature not in scaling or isinstance(power, bool)
                    or not isinstance(power, int) or not 1 <= power <= 10):
                return (f"field terms[{n}].factors[{m}]: expected {{\"feature\": a feature of scaling, "
                        "\"power\": a whole number from 1 to 10}")
    band = model.get("interval")
    if band:
        if not isinstance(band, dict) or not finite(band.get("low")) or not finite(band.get("high")):
            return "field interval: expected {\"low\": number, \"high\": number, ...}"
    return None
