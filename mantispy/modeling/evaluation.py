"""A model polynomial evaluated with the standard library only: what ``mantispy fit`` models predict,
and what predictor packages carry verbatim as ``_model.py`` (so this module imports nothing else)."""

from __future__ import annotations

import math
from typing import Any


def predict(model: dict[str, Any], features: dict[str, float]) -> float:
    """Evaluate a model on one run's features (absent features count as 0)."""
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
