"""Honest verdicts on a build's accuracy, in words: shared by ``mantispy build``'s table, the predictor
package's README and the HTML report, so all three say the same.

A verdict says when the model is a constant, when it uses only what the black box sees, when the black
box is as good or better, when the error is at the campaign's noise floor (so no model can be judged
more finely on this machine), and how often the prediction intervals held the actual value.
"""

from __future__ import annotations

from mantispy.build_record import BuildRecord
from mantispy.modeling.evaluation import predict
from mantispy.modeling.selection import coverage_range
from mantispy.modeling.work import work_fallback

NOISE_FACTOR = 1.5
"""An error within this factor of the noise floor is "at the noise floor"."""


def _constant_value(model: dict) -> str:
    """`` (VALUE)``: what a constant model predicts for every input (a log form's or an average's intercept
    is not that number), or "" when the model cannot be evaluated."""
    try:
        return f" ({predict(model, {}):.4g})"
    except (KeyError, TypeError, ValueError, ZeroDivisionError):
        return ""


def metric_verdicts(record: BuildRecord, metric: str) -> list[str]:
    """Sentences about one metric's held-out accuracy."""
    data = record.metrics[metric]
    model = data.model
    validation = data.validation
    error = validation.get("median_rel_error")
    said: list[str] = []
    fallback = work_fallback(model)
    if isinstance(fallback, dict) and isinstance(fallback.get("reason"), str):
        said.append(f"{metric}: {fallback['reason']} (on this machine: mantispy calibrate does not apply)")
    if data.is_constant:  # a constant, or an average of members that use no feature
        value = _constant_value(model)
        said.append(f"{metric}: the model is a constant{value}: nothing it may use beat a constant on "
                    "cross-validation, so it says nothing about a particular input")
    elif model.get("scaling") and all(f.startswith("input:") for f in model["scaling"]):
        said.append(f"{metric}: the model uses only the input descriptors (what the black box sees), because "
                    + (_view_rule_words(model) or "they did as well as the program's cheap features on cross-validation"))
    box = validation.get("blackbox") or {}
    if error is not None and box.get("available") and box.get("median_rel_error") is not None:
        bb = box["median_rel_error"]
        fitted_box = (model.get("evaluation") or {}).get("blackbox") or {}
        name = ("the black box (a constant too: no input descriptor helped it)"
                if fitted_box.get("available") and fitted_box.get("inputs_used") == [] else "the black box")
        if bb <= error * 1.02:  # within 2 %: level (the same inputs, or noise between equal models)
            said.append(f"{metric}: {name} is as good or better ({bb:.1%} against the model's {error:.1%})")
        elif bb < 2 * error:
            said.append(f"{metric}: better than {name} ({error:.1%} against {bb:.1%}), but not twice as good")
        else:
            said.append(f"{metric}: {bb / max(error, 1e-12):.1f}x better than {name} ({error:.1%} against {bb:.1%})")
    ceiling = (record.ceiling.get(metric) or {}).get("median_rel_error")
    if error is not None and isinstance(ceiling, (int, float)):
        gives_up = ceiling < 0.8 * error
        said.append(f"{metric}: a model allowed every feature, cheap or not, reaches {ceiling:.1%}"
                    + (": the cost budget gives up accuracy" if gives_up else ": the cheap features lose little"))
        if gives_up:
            said.extend(sampling_verdict(record, metric))
    floor = record.noise_floor(metric)
    if error is not None and floor is not None:
        if error <= NOISE_FACTOR * floor:
            said.append(f"{metric}: the error ({error:.1%}) is at the noise floor ({floor:.1%}, the spread of repeated "
                        "runs of one input): no model can be judged more finely on this machine")
        else:
            said.append(f"{metric}: the error ({error:.1%}) is {error / max(floor, 1e-12):.1f}x the noise floor "
                        f"({floor:.1%})")
    elif error is not None:
        from mantispy.measurement import NOISE_METRICS
        from mantispy.modeling.work import measured_metric

        why = ("one uninstrumented run per input (--repeats 1, or original_repeats = 1): give 3 to measure it"
               if measured_metric(metric) in NOISE_METRICS else
               "it is measured for wall time, CPU time and peak RSS, not for counters")
        said.append(f"{metric}: no noise floor to judge the error ({error:.1%}) against: {why}")
    coverage = validation.get("interval_coverage")
    level = validation.get("interval_level")
    if coverage is not None and level:
        said.append(coverage_verdict(metric, coverage, level, validation.get("interval_n") or validation.get("n"),
                                     validation.get("interval_nominal"), validation.get("interval_train_n")))
    return said


def _view_rule_words(model: dict) -> str | None:
    """Why the view-confidence rule (``--view-confidence``) kept the model to the descriptors, or None."""
    rule = (model.get("selection") or {}).get("view_confidence")
    if not isinstance(rule, dict) or rule.get("kept") != "inputs":
        return None
    lost = [c for c in rule.get("compared") or () if isinstance(c, dict) and isinstance(c.get("share"), (int, float))]
    if not lost or not isinstance(rule.get("required"), (int, float)):
        return None
    best = max(lost, key=lambda c: c["share"])
    return (f"the program's cheap features ({best.get('candidate')}) were better on cross-validation in only "
            f"{best['share']:.0%} of the resamples of the training inputs, where --view-confidence asks "
            f"{rule['required']:.0%}")


def sampling_verdict(record: BuildRecord, metric: str) -> list[str]:
    """Where the cost budget gives up accuracy: what the build did about it with sampled stand-ins."""
    gate = (record.ceiling.get(metric) or {}).get("sampling")
    if not record.options.sample_fraction:
        return [f"{metric}: sampled stand-ins for the expensive features were not tried (mantispy build "
                "--sample-fraction 0.025 counts them on 2.5 % of each input file)"]
    if not isinstance(gate, dict):
        return []
    if gate.get("offered"):
        return [f"{metric}: sampled stand-ins for the expensive counters were offered to its models "
                f"(cross-validated error with every feature {_share(gate.get('program_cv_error'))} against "
                f"{_share(gate.get('cheap_cv_error'))} with the cheap ones)"]
    return [f"{metric}: sampled stand-ins were not offered: on cross-validation the cheap features "
            f"({_share(gate.get('cheap_cv_error'))}) came within {gate.get('ratio', 2):g}x of every feature "
            f"({_share(gate.get('program_cv_error'))})"]


def _share(value) -> str:
    return f"{value:.1%}" if isinstance(value, (int, float)) else "none"


def coverage_verdict(metric: str, coverage: float, level: list[float], n: int | None,
                     supported: float | None = None, train_n: int | None = None) -> str:
    """How often the interval held the actual value, and whether that share is what a calibrated interval
    gives on so few inputs (the binomial's 95 % range, :func:`mantispy.modeling.selection.coverage_range`).
    ``supported``: the share the interval's own training residuals can bound (its ``nominal``), judged
    against instead of the levels' width where it is smaller (too few training inputs for the levels)."""
    nominal = level[1] - level[0]
    name = f"p{level[0] * 100:.0f}-p{level[1] * 100:.0f}"
    short = ""
    if isinstance(supported, (int, float)) and supported < nominal - 0.005:
        short = (f"; its {train_n or 'few'} training inputs bound at most a {supported:.0%} interval, the smallest "
                 "to largest of their errors, judged as such")
        nominal = float(supported)
    if not n:
        return (f"{metric}: the {name} interval held the actual value on {coverage:.0%} of held-out inputs (nominal "
                f"{nominal:.0%}{short})")
    low, high = coverage_range(int(n), nominal)
    judged = ("as a calibrated interval would" if low <= coverage <= high else
              "fewer than a calibrated interval would: it is too narrow" if coverage < low else
              "more than a calibrated interval would: it is too wide")
    return (f"{metric}: the {name} interval held the actual value on {coverage:.0%} of {n} held-out inputs (nominal "
            f"{nominal:.0%}{short}; a calibrated one holds {low:.0%}-{high:.0%} of {n} inputs 19 times in 20), {judged}")


def build_verdicts(record: BuildRecord) -> list[str]:
    """Every metric's sentences, then what a prediction costs against the budget."""
    return [line for metric in record.metrics for line in metric_verdicts(record, metric)] + cost_verdict(record)


def cost_verdict(record: BuildRecord) -> list[str]:
    """Whether the package's evaluators, run together per prediction, kept to ``--max-cost``: the cost loop
    judges each feature's evaluator on its own, on three training inputs, and the held-out validation
    measures what the package runs (the combined evaluator, and the sampled one beside it)."""
    ev = record.evaluator
    budget = record.options.max_cost
    if ev is None or not budget:
        return []
    said = []
    if ev.median_fraction is not None and ev.median_fraction > budget:
        parts = "the combined and the sampled evaluator together" if ev.sampled_features and ev.features else "its evaluator"
        said.append(f"evaluators: a prediction costs {ev.median_fraction:.1%} of the run time on held-out inputs (median; "
                    f"{parts}), over the --max-cost budget of {budget:.0%}: each feature was judged against the budget "
                    "alone, on three training inputs")
    if ev.cold_median_fraction is not None and ev.cold_median_fraction > budget:
        said.append(f"evaluators: a prediction through `mantispy predict` (a fresh interpreter each time) costs "
                    f"{ev.cold_median_fraction:.1%} of a run (median), over the --max-cost budget of {budget:.0%}, which "
                    "holds for the package imported and kept (its warm evaluator), as a scheduler uses it")
    return said
