"""When sampled stand-ins are worth offering to a metric's models.

A sampled feature stands in for a counter whose slice costs the whole run. It can only help where such
counters explain the cost much better than what is cheap anyway: the input descriptors and the content
features. The all-feature fit the build makes first (the ceiling) scores both on cross-validation over the
training inputs (its selection table's "program" and "content"/"inputs" views), so the gate reads that
table: stand-ins are offered only where the program view's cross-validated error is at most
``1 / ratio`` of the cheap views'. Where the two are close, extra columns are noise for a few dozen
training inputs (measured on pycparser: benchmarks/RESULTS.md, "Sampled stand-ins for expensive counters").
Only training inputs enter this choice: the held-out inputs are never read.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

WORTH_RATIO = 2.0  # the cheap views' cross-validated error over the program view's, at least
CHEAP_VIEWS = ("inputs", "content")


@dataclass(frozen=True)
class SamplingGate:
    """One metric's verdict: the cross-validated errors compared and whether stand-ins are offered."""

    metric: str
    cheap_error: float | None  # best of the inputs and content views (None: no such candidate)
    program_error: float | None  # best of the program view (None: no such candidate)
    ratio: float = WORTH_RATIO

    @property
    def open(self) -> bool:
        """Whether the metric's models are offered sampled stand-ins."""
        if self.program_error is None:
            return False
        if self.cheap_error is None:
            return True
        return self.cheap_error >= self.ratio * self.program_error

    def describe(self) -> str:
        """One line for the build log."""
        if self.program_error is None:
            return f"{self.metric}: no model on the program's features could be fitted; no sampled features"
        cheap = "none" if self.cheap_error is None else f"{self.cheap_error:.1%}"
        verdict = ("offered" if self.open else
                   f"not offered (the cheap features come within {self.ratio:g}x of every feature)")
        return (f"{self.metric}: cross-validated error with every feature {self.program_error:.1%}, with the "
                f"input descriptors and content features {cheap}: sampled features {verdict}")

    def to_json(self) -> dict[str, Any]:
        """What the build record keeps (beside the ceiling)."""
        return {"cheap_cv_error": self.cheap_error, "program_cv_error": self.program_error,
                "ratio": self.ratio, "offered": self.open}


def _best(candidates: list[dict[str, Any]], views: tuple[str, ...]) -> float | None:
    errors = [row.get("cv_median_rel_error") for row in candidates if row.get("view") in views]
    finite = [float(e) for e in errors if isinstance(e, (int, float)) and math.isfinite(e)]
    return min(finite) if finite else None


def sampling_gate(metric: str, ceiling: dict[str, Any], ratio: float = WORTH_RATIO) -> SamplingGate:
    """The gate for ``metric`` from its all-feature model (a model JSON with a selection table)."""
    candidates = ceiling.get("selection", {}).get("candidates", [])
    return SamplingGate(metric, _best(candidates, CHEAP_VIEWS), _best(candidates, ("program",)), ratio)
