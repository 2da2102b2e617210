"""Anomaly checks: does a run depart from its phase model, and in which phase and resource?

The run's phases are found with the model's options and labelled against the model's known phases.
For every phase the model has, and every metric it models, the measured value is compared with the
model's estimate for the run's input (and meta-inputs: the run's own earlier phases) on the scale of
the model's out-of-fold residuals: ``z = (log(actual / estimate) - center) / spread``. A metric departs
when |z| exceeds ``k`` *and* the difference is larger than the metric's floor (a share of the estimate,
and an absolute amount: two epochs of time, some MiB, some CPU points), so that a model whose
training runs agreed to the millisecond does not flag a millisecond. A phase the model never saw,
lasting a noticeable share of the run while the program waited (its samples stand for little CPU:
a stall), departs too; a phase too rare in training to have models is judged through the run's totals
(outlasting the longest of the one to seven training runs that had it, the rule this replaced, flagged
six normal runs in bench_phases' seeds 28, 29 and 32 on Python 3.11; the three anomalous runs of seed 31
that it alone flagged depart in the run's totals). A phase's duration or CPU time over its estimate departs
only when the run's total went over its whole-run estimate too, by at least ``excess_cover`` of the
phase's excess: labels move between runs of one program, and a phase that grew while the run did not took
its time from the phases around it (bench_phases on Python 3.11, seeds 30 and 31: each of the four false
positives was a phase 30-115 % over its estimate in a run 0.4 s under to 0.05 s over its own; every injected
anomaly adds time to the run, or starves it, or takes memory). A run that used less than expected (a
phase shorter, with less CPU time, a lower peak of memory or less IO than its estimate) is no anomaly:
such a value is noted, not judged, unless ``shortfalls`` asks for it (CPU use is judged both ways: less of it is a starved program, the sign of a CPU hog or a
stall). Measured on bench_phases' stored runs (seeds 22-27, Python 3.11 and 3.12): most false positives
that were left were runs of inputs the models knew less well, faster or leaner than estimated, and no
injected anomaly (all of them take more) was found by a shortfall alone. With ``shortfalls``, a phase whose
duration or CPU time falls short of its estimate departs only when the run's total fell short too, by at
least ``shortfall_cover`` of the phase's shortfall against the whole-run model: otherwise its epochs went
to stretches labelled otherwise (labels move between runs of one program) and nothing was lost. When the
phases no model can judge (unseen ones in which the program computed, rare ones, and phases whose models
read an earlier phase's measurements that this run did not have before them) hold a noticeable share of
the run, the run's totals are judged by the whole-run models as well.
Beneath the phases, each function's *own time* (:mod:`.own_time`: its own code and the library and C
code it calls) is compared with what the training runs' fit gives it for a run this long (its own seconds
against the run's own time, :func:`~.model.own_time_fit`): a function departs when it exceeds the fitted
line by ``k`` robust spreads of the training residuals *and* the line plus the largest training residual
by ``own_margin`` of the run and by an epoch's worth of samples; the departure is named by the function
and by the phase that holds most of its own time. This is where a phase slowed by redundant work shows,
however its epochs are labelled. (Comparing shares of the run instead, as models written before the
fit still are, misses seconds of extra work in a function with a fixed cost in long runs: measured on
sqlparse, 3 to 5 of 25 slowed runs of 2.3-3.2 s, none with the fit.)
The run is anomalous when anything departs; the verdict names the departure with the largest |z| first,
the phases' resources before own time.

The whole-run baseline (the paper's comparison) applies the same rule to the run's totals only.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from .model import estimate, meta_inputs, missing_meta, needs_features, whole_run
from .observe import METRIC_WORDS, RunPhases
from .own_time import run_shares, where

MIB = 2.0**20
IDLE_CPU_SHARE = 0.2  # a phase whose samples stand for less than this share of its time was waiting
# ... unless the process's own CPU use there (the resource series, polled from outside) says it was busy: then the
# sampler could not run (on Python 3.11 its thread can wait for the GIL through a long C call) and no phase is known
BUSY_CPU_PERCENT = 100.0 * (1.0 - IDLE_CPU_SHARE)
ADDITIVE = ("wall_s", "cpu_s")  # what the phases of a run add up to: time one phase loses another can have
# what a run uses: less of it than expected is no anomaly unless asked (CPU use is the exception: less of it
# is a starved program, the sign of a CPU hog or a stall)
CONSUMED = ("wall_s", "cpu_s", "peak_rss_bytes", "io_bytes")


@dataclass(frozen=True)
class CheckOptions:
    """When a measured value departs from its estimate."""

    k: float = 4.0  # robust z-score beyond which a metric departs
    min_relative: float = 0.10  # and at least this share of the estimate
    min_epochs: float = 2.0  # durations and CPU time: and at least this many epochs
    min_rss_mib: float = 16.0  # peak memory: and at least this many MiB
    min_cpu_points: float = 10.0  # CPU use: and at least this many percentage points
    min_io_mib: float = 1.0  # IO: and at least this many MiB
    new_phase_share: float = 0.10  # a phase the model never saw departs when it lasts this share of the run
    min_spread: float = 0.02  # a residual spread below this (2 %) counts as this
    own_margin: float = 0.05  # own time: a function departs by at least this share of the run beyond what training allows
    min_own_spread: float = 0.01  # own time: a spread below this share of the run (1 point) counts as this
    min_own_spread_s: float = 0.02  # own time: and a spread below this many seconds counts as this
    min_own_epochs: float = 1.0  # own time: and at least this many epochs' worth of samples beyond what training allows
    shortfalls: bool = False  # judge values below their estimates too (a phase shorter, leaner, with less IO)
    shortfall_cover: float = 0.5  # with shortfalls: a phase short of its estimate departs only when the run fell short by this share of it too
    excess_cover: float = 0.5  # a phase over its estimate departs only when the run went over by this share of it too

    def floor(self, metric: str, epoch_s: float) -> float:
        """The smallest absolute difference that can count as a departure for ``metric``."""
        return {"wall_s": self.min_epochs * epoch_s, "cpu_s": self.min_epochs * epoch_s,
                "peak_rss_bytes": self.min_rss_mib * MIB, "cpu_percent": self.min_cpu_points,
                "io_bytes": self.min_io_mib * MIB}.get(metric, 0.0)


@dataclass
class Comparison:
    """One measured value beside its estimate."""

    phase: str  # a label, or "run" for the whole-run baseline
    name: str
    metric: str
    actual: float
    expected: float
    z: float
    departs: bool
    model: str = "phase"  # the estimate's source: phase, portable (no program features), whole-run, none (a phase
    #                       never seen), own-time
    function: str = ""  # own-time comparisons: the function whose own code it measures
    total: float = 0.0  # own-time comparisons: the run's own time in seconds (actual and expected are parts of it)
    run_change: float | None = None  # a phase's duration or CPU time: the run's total minus its whole-run estimate

    def covered(self, options: CheckOptions) -> bool:
        """Whether this phase's duration or CPU time moved from its estimate while the run's total did not move
        with it: short by ``d`` while the run fell short by less than ``shortfall_cover`` x ``d`` (its time went
        to other phases' labels, not away), or over by ``d`` while the run went over by less than
        ``excess_cover`` x ``d`` (its time came from other phases' labels: nothing was added). A cover of 0
        judges every such value."""
        if self.run_change is None or self.metric not in ADDITIVE or self.actual == self.expected:
            return False
        if self.actual < self.expected:
            cover, change = options.shortfall_cover, -self.run_change
        else:
            cover, change = options.excess_cover, self.run_change
        return cover > 0 and change < cover * abs(self.actual - self.expected)

    def shortfall(self) -> bool:
        """Whether this is a measured use (duration, CPU time, peak memory, IO) below its estimate."""
        return self.metric in CONSUMED and self.actual < self.expected and self.model in ("phase", "portable", "whole-run")

    def departs_at(self, options: CheckOptions, epoch_s: float) -> bool:
        """Whether this comparison departs under ``options`` (the check's rule, applied again: a benchmark
        judges stored comparisons at other thresholds with it)."""
        if not math.isfinite(self.z):  # a phase never seen: k does not enter
            return self.departs
        if self.shortfall() and not options.shortfalls:
            return False
        difference = abs(self.actual - self.expected)
        if self.model == "own-time":
            return (self.z > options.k and self.actual - self.expected > options.own_margin * self.total
                    and self.actual - self.expected > options.min_own_epochs * epoch_s)
        return (abs(self.z) > options.k and difference > options.min_relative * self.expected
                and difference > options.floor(self.metric, epoch_s) and not self.covered(options))

    def describe(self) -> str:
        """One line: the phase, the resource, and how far it is from its estimate."""
        word = METRIC_WORDS.get(self.metric, self.metric)
        if self.model == "none":
            return f"{self.phase} ({self.name}): a phase the model never saw, {_fmt(self.metric, self.actual)}"
        if self.model == "own-time":
            share = self.actual / max(self.total, 1e-12)
            return (f"{self.phase} ({self.name}): {self.function} ran its own code {_fmt('cpu_s', self.actual)} "
                    f"({share:.0%} of the run) against at most {_fmt('cpu_s', self.expected)} in training runs of "
                    f"this length (z {self.z:+.1f})")
        ratio = self.actual / self.expected if self.expected > 0 else math.inf
        return (f"{self.phase} ({self.name}): {word} {_fmt(self.metric, self.actual)} against "
                f"{_fmt(self.metric, self.expected)} expected ({ratio:.2f}x, z {self.z:+.1f})")


@dataclass
class Verdict:
    """The outcome of a check."""

    anomalous: bool
    departures: list[Comparison]
    comparisons: list[Comparison]
    baseline_anomalous: bool
    baseline: list[Comparison]
    inputs_from: str = ""
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """As JSON (strict: the infinite z of a phase never seen is null)."""
        def row(comparison: Comparison) -> dict[str, Any]:
            return {**asdict(comparison), "z": comparison.z if math.isfinite(comparison.z) else None}

        return {"anomalous": self.anomalous, "departures": [row(c) for c in self.departures],
                "comparisons": [row(c) for c in self.comparisons], "inputs_from": self.inputs_from,
                "baseline": {"anomalous": self.baseline_anomalous, "comparisons": [row(c) for c in self.baseline]},
                "notes": self.notes}


def _fmt(metric: str, value: float) -> str:
    if metric in ("wall_s", "cpu_s"):
        return f"{value:.2f} s"
    if metric == "cpu_percent":
        return f"{value:.0f} %"
    return f"{value / MIB:.1f} MiB"


def _chosen(fitted: dict[str, Any], features_known: bool) -> tuple[dict[str, Any], Any, str] | None:
    """The model a metric is judged by (the one without program features where the run has none), its
    residual scale and its kind; None when there is none."""
    model, residuals, which = fitted["model"], fitted.get("residuals"), "phase"
    if needs_features(model) and not features_known:
        if "portable" not in fitted:
            return None
        model, residuals, which = fitted["portable"], fitted.get("portable_residuals"), "portable"
    return model, residuals, which


def _compare(phase: str, name: str, metric: str, actual: float, fitted: dict[str, Any], values: dict[str, float],
             epoch_s: float, options: CheckOptions, features_known: bool) -> Comparison | None:
    chosen = _chosen(fitted, features_known)
    if chosen is None:
        return None
    model, residuals, which = chosen
    if residuals is None or missing_meta(model, values):
        return None
    expected = estimate(model, values)
    if not (expected > 0 and math.isfinite(expected)) or actual <= 0:
        return None
    spread = max(float(residuals["spread"]), options.min_spread)
    z = (math.log(actual / expected) - float(residuals["center"])) / spread
    centred = expected * math.exp(float(residuals["center"]))
    if not math.isfinite(centred):  # an estimate at the edge of the floats (a damaged model's floor): none
        return None
    comparison = Comparison(phase, name, metric, actual, centred, z, False, which)
    comparison.departs = comparison.departs_at(options, epoch_s)
    return comparison


def check(model: dict[str, Any], run: RunPhases, inputs: dict[str, float], features: dict[str, float] | None,
          options: CheckOptions = CheckOptions(), inputs_from: str = "") -> Verdict:  # noqa: B008 - frozen
    """Compare a run's phases (labelled against ``model['known']``) with the model's estimates."""
    epoch_s = float(model.get("epoch_s", run.epoch_s))
    measured = run.by_label()
    names = run.names()
    total = sum(values["wall_s"] for values in measured.values()) or 1.0
    comparisons: list[Comparison] = []
    notes: list[str] = []
    unjudged: list[str] = []
    baseline = check_whole_run(model, run, inputs, options)
    run_changes = {c.metric: c.actual - c.expected for c in baseline if c.metric in ADDITIVE}
    for label, values in measured.items():
        fitted_phase = model["phases"].get(label)
        if fitted_phase is None:
            share = values["wall_s"] / total
            rare = model.get("rare", {}).get(label)
            if rare is None:
                unsampled = values.get("cpu_s", 0.0) < IDLE_CPU_SHARE * values["wall_s"]
                busy = values.get("cpu_percent", 0.0) >= BUSY_CPU_PERCENT
                if share >= options.new_phase_share and unsampled and not busy:
                    comparisons.append(Comparison(label, names[label], "wall_s", values["wall_s"], 0.0, math.inf, True,
                                                  "none"))
                else:
                    unjudged.append(label)
                    if share >= options.new_phase_share and unsampled:
                        notes.append(f"{label} ({values['wall_s']:.2f} s) has almost no samples while the program used "
                                     f"{values['cpu_percent']:.0f} % CPU: the sampler could not run there, so its phase "
                                     "is unknown (not judged as a new waiting phase)")
                continue
            longest = float(rare.get("max_wall_s", 0.0)) if isinstance(rare, dict) else 0.0
            runs = int(rare.get("runs", 0)) if isinstance(rare, dict) else 0
            unjudged.append(label)
            notes.append(f"{label} ran {values['wall_s']:.2f} s; it was too rare in training to have a model "
                         f"({runs} run(s), longest {longest:.2f} s)")
            continue
        given = {**inputs, **(features or {}), **meta_inputs(run, label)}
        lacking: set[str] = set()
        for metric, actual in values.items():
            fitted = fitted_phase["metrics"].get(metric)
            if fitted is None:
                continue
            chosen = _chosen(fitted, features is not None)
            missing = missing_meta(chosen[0], given) if chosen is not None else []
            if missing:
                lacking.update(missing)
                continue
            found = _compare(label, names[label], metric, actual, fitted, given, epoch_s, options, features is not None)
            if found is not None:
                comparisons.append(found)
        if lacking:
            unjudged.append(label)
            notes.append(f"{label}'s models read the phase(s) before it in training ({', '.join(lacking)}), which this "
                         f"run did not have before {label}: it was not judged by them")
    _cover_moved_time(comparisons, run_changes, options, epoch_s, notes)
    if not options.shortfalls:
        _note_shortfalls(comparisons, options, epoch_s, notes)
    own = model.get("own_time")
    if own is None:
        notes.append("the model has no own-time summary (fitted before mantispy had one): functions' own time "
                     "was not judged; fit the model again")
    else:
        comparisons += own_time_comparisons(own, run, epoch_s, options)
    uncovered = sum(measured[label]["wall_s"] for label in unjudged)
    if uncovered >= options.new_phase_share * total:  # time no phase model can judge is judged with the whole run
        notes.append(f"{', '.join(unjudged)} ({uncovered:.2f} s) had no phase model: the run's totals were judged "
                     "by the whole-run models too")
        comparisons += baseline
    # a phase's resources first: a CPU hog moves own time too (seen on sqlparse: under contention the in-process
    # sampler's samples gathered in the workload's main), and the resource says what happened; own time says
    # where beneath
    departures = sorted((c for c in comparisons if c.departs), key=lambda c: (c.model == "own-time", -abs(c.z)))
    if features is None and any(c.model == "portable" for c in comparisons):
        notes.append("no program features for this run: phases whose best model needs them used the model fitted "
                     "without them")
    return Verdict(bool(departures), departures, comparisons, any(c.departs for c in baseline), baseline,
                   inputs_from, notes)


def _cover_moved_time(comparisons: list[Comparison], run_changes: dict[str, float], options: CheckOptions,
                      epoch_s: float, notes: list[str]) -> None:
    """Give each phase's duration and CPU time the run's change against its whole-run estimate (``run_changes``),
    and judge it again (:meth:`Comparison.covered`): a phase that ran short while the run did not lost its
    epochs to other labels (seen on sqlparse: the formatting phase at 0.3 s against 1.0 s, its time in a
    stretch labelled otherwise, in runs as long as expected); a phase that ran over while the run did not
    took them from other labels (sqlparse on 3.11: the formatting phase at 1.06 s of CPU against 0.81 s, in
    a run no longer than its estimate)."""
    for comparison in comparisons:
        if comparison.metric not in run_changes or comparison.model not in ("phase", "portable"):
            continue
        comparison.run_change = run_changes[comparison.metric]
        would = comparison.departs
        comparison.departs = comparison.departs_at(options, epoch_s)
        if would and not comparison.departs:
            short = comparison.actual < comparison.expected
            notes.append(f"{comparison.phase} ran {'short' if short else 'over'} ({METRIC_WORDS[comparison.metric]} "
                         f"{_fmt(comparison.metric, comparison.actual)} against {_fmt(comparison.metric, comparison.expected)}"
                         f" expected) while the run did not ({_fmt(comparison.metric, comparison.run_change)} against "
                         f"its whole-run estimate): its time {'went to' if short else 'came from'} phases labelled "
                         "otherwise, not judged a departure")


def _note_shortfalls(comparisons: list[Comparison], options: CheckOptions, epoch_s: float, notes: list[str]) -> None:
    """Say which phases used less than expected by as much as would depart if shortfalls were judged."""
    judged = replace(options, shortfalls=True)
    short: dict[str, list[Comparison]] = {}
    for comparison in comparisons:
        if comparison.shortfall() and comparison.departs_at(judged, epoch_s):
            short.setdefault(comparison.phase, []).append(comparison)
    for phase, found in short.items():
        values = ", ".join(f"{METRIC_WORDS.get(c.metric, c.metric)} {_fmt(c.metric, c.actual)} against "
                           f"{_fmt(c.metric, c.expected)}" for c in found)
        notes.append(f"{phase} used less than its estimates ({values}): less is no anomaly (--shortfalls judges it); "
                     "the model may not know inputs like this one")


def own_time_comparisons(own: dict[str, Any], run: RunPhases, epoch_s: float,
                         options: CheckOptions = CheckOptions()) -> list[Comparison]:  # noqa: B008 - frozen
    """Each function's own time in ``run`` against the training runs' fit for a run of this length
    (``own``: the model's ``own_time``; a function without a fit, from an older model, against the
    training runs' shares); functions below the model's listing share in this run too are left out."""
    shares = run_shares(run.own)
    total = sum(seconds for functions in run.own.values() for seconds in functions.values())
    if total <= 0 or not own.get("runs"):
        return []
    listed = float(own.get("listed", 0.0))
    names = run.names()
    out = []
    for function, share in sorted(shares.items(), key=lambda item: -item[1]):
        stats = own["functions"].get(function)
        if stats is None:
            if share < listed:
                continue
            # no training run gave it the listing share: a line at zero that allows that share
            stats = {"fit": {"intercept": 0.0, "slope": 0.0, "spread": 0.0, "max_residual": listed * total}}
        fit = stats.get("fit")
        if fit is not None:
            line = float(fit["intercept"]) + float(fit["slope"]) * total
            spread = max(float(fit["spread"]), options.min_own_spread_s, options.min_own_spread * total)
            z, expected = (share * total - line) / spread, line + max(float(fit["max_residual"]), 0.0)
        else:
            z = (share - float(stats["median"])) / max(float(stats["spread"]), options.min_own_spread)
            expected = float(stats["max"]) * total
        if not (math.isfinite(expected) and math.isfinite(z)):  # a damaged model's fit at the edge of the floats
            continue
        label = where(run.own, function) or "run"
        comparison = Comparison(label, names.get(label, "the whole run"), "cpu_s", share * total, expected, z, False,
                                "own-time", function, total)
        comparison.departs = comparison.departs_at(options, epoch_s)
        out.append(comparison)
    return out


def check_whole_run(model: dict[str, Any], run: RunPhases, inputs: dict[str, float],
                    options: CheckOptions = CheckOptions()) -> list[Comparison]:  # noqa: B008 - frozen
    """The whole-run baseline: the run's totals against the whole-run models (input descriptors only)."""
    epoch_s = float(model.get("epoch_s", run.epoch_s))
    out = []
    for metric, actual in whole_run(run).items():
        fitted = model["whole_run"].get(metric)
        if fitted is None:
            continue
        found = _compare("run", "the whole run", metric, actual, fitted, inputs, epoch_s, options, True)
        if found is not None:
            found.model = "whole-run"
            out.append(found)
    return out


def foreign_share(model: dict[str, Any], run: RunPhases) -> float:
    """The share of the run's sampled program time spent in functions no training run ran (a run of
    another program is near 1)."""
    seen = set(model["program"].get("functions", []))
    if not seen:
        return 0.0
    total = foreign = 0.0
    for row in run.phases:
        for function, share in row["profile"].items():
            weight = share * row["seconds"]
            total += weight
            if function not in seen:
                foreign += weight
    return foreign / total if total > 0 else 0.0

