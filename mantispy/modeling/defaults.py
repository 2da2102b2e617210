"""Defaults of the model selection that the command line shows, kept apart from the numeric modules so that
reading them imports nothing heavy."""

VIEW_CONFIDENCE = 0.0
"""The view-confidence rule's default (:func:`mantispy.modeling.selection.confident_view`): a view richer than
the input descriptors keeps the choice only where it beats the simpler views in this share of paired resamples
of the training inputs (0: off, the smallest cross-validated error alone decides)."""

INTERVAL_LEVELS = (0.1, 0.9)
"""The prediction interval's quantile levels by default (p10-p90)."""


def parse_levels(text: str) -> tuple[float, float]:
    """``--interval LOW,HIGH`` (e.g. ``0.05,0.95``): two quantile levels, 0 < LOW < HIGH < 1; ValueError
    saying what is wrong otherwise."""
    parts = [p.strip() for p in text.split(",")]
    try:
        low, high = (float(p) for p in parts)
    except ValueError:
        raise ValueError(f"{text!r}: give two quantile levels as LOW,HIGH, e.g. 0.1,0.9") from None
    if not 0 < low < high < 1:
        raise ValueError(f"{text!r}: the levels must satisfy 0 < LOW < HIGH < 1, e.g. 0.1,0.9")
    return low, high
