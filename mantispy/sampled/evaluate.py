"""Evaluating sampled features through a warm evaluator: cut the input's files, count on the sample,
scale to the whole. The build's cost loop and its validation both do it this way; the predictor package
does the same with its standard-library copy (``_sampled.py``)."""

from __future__ import annotations

import tempfile
import time
from typing import Any, Protocol

from mantispy.runtime.descriptors import argv_files
from mantispy.runtime.sampled_input import counter_of, sample_input, scaled_counts


class Evaluator(Protocol):
    """What is asked of an evaluator here (:class:`mantispy.slicer.warm_client.WarmEvaluator`)."""

    def evaluate(self, argv: list[str], kwargs: dict[str, Any] | None = None, cwd: str | None = None,
                 timeout: float | None = None) -> tuple[dict[str, float], float]: ...


def evaluate_sampled(evaluator: Evaluator, features: list[str], argv: list[str], kwargs: dict[str, Any] | None,
                     files: list[str], fraction: float, cwd: str,
                     timeout: float | None = None) -> tuple[dict[str, float], float]:
    """``{sampled feature: scaled count}`` for ``features`` on one input, and the seconds it took, cutting
    the ``fraction`` samples included (no files named: those ``argv`` names that exist under ``cwd``).
    The samples live in a temporary folder; the input's files are only read. Raises OSError when a file
    cannot be read and whatever the evaluator raises."""
    names = list(files) or argv_files(list(argv), cwd)
    with tempfile.TemporaryDirectory(prefix="mantis-sample-") as folder:
        started = time.perf_counter()
        sample = sample_input(list(argv), names, folder, fraction, cwd=cwd)
        cutting = time.perf_counter() - started
        counts, seconds = evaluator.evaluate(sample.argv, kwargs, cwd=cwd, timeout=timeout)
    return scaled_counts(counts, [counter_of(f) for f in features], sample.scale), cutting + seconds
