"""From the two versions' profiled runs to a verdict (AutoPerf's analysis, made to answer a CI gate):

1. per touched function, an autoencoder (:mod:`.autoencoder`) learns the baseline's runs: each run's
   features (calls, each counter per call) beside their difference from the baseline's other runs of
   the same input. The second half is the context AutoPerf's vectors lack: a function called three times
   as often on every input stays on the manifold its calls trace across inputs (measured: 1 of 16 runs
   flagged without it), but no repeat of an input ever differed by that much;
2. each candidate run of the function (its difference taken from the baseline's runs of its input) is
   flagged when its reconstruction error exceeds the threshold;
3. each feature's inclusive total (calls, then each counter) is compared per input, candidate against
   baseline: its median ratio over inputs and a one-sided p-value from a permutation test stratified by
   input (:mod:`.significance`; every repeat counts). Among the features that grew significantly, the counter named is the one
   whose flagged runs departed furthest from the baseline's runs of the same input, in units of the
   baseline's repeat noise; a change may make one counter better and another worse (a full collection
   after every conversion: fewer page faults, more CPU time), and more of one is a regression however
   much less of another there is. Not the reconstruction error's split, as AutoPerf does:
   an autoencoder whose training vectors vary along one direction (CPU time growing with the input)
   reconstructs a departure along that direction and blames the counters that never varied (measured
   on a list search made quadratic: the error named context switches, the departure CPU time);
4. a function regressed when at least ``min_share`` of its candidate runs are flagged and one of its
   features grew by at least ``min_effect`` on the median input at ``alpha`` (improved: shrank, and none
   grew). With fewer runs flagged, growth of CPU time or a hardware event (not shrinking, not the rare
   software events) counts at the Bonferroni level over every feature of every function judged: the
   autoencoder's threshold follows the spread it learns across inputs, and a shift of a sampled
   function's per-call CPU time smaller than that but present on every input is what the paired test
   sees (measured: 9 % more CPU per call of Markdown's ``__applyPattern``, 1 of 12 runs flagged,
   p = 0.0025); a rename touching 40 callers must not turn one p of 0.01 among 160 into a verdict;
5. the root cause is the regressed function whose own code changed (before those that only call one: a
   caller's inclusive counts carry its callee's regression) with the highest score, its counter's median
   departure times its share of flagged runs. When only callers regressed (the changed function's own
   counters, read at a sample of its calls, stayed within their noise) and the program counts put more
   work down to a changed function, that function is the root cause, named with its count; without such
   a count, a changed function whose counter (the caller's) grew at ``alpha``, below the least effect, is;
6. flagged samples are clustered (k-means over their departure profiles) to show the separate anomalies;
7. beside the counters, mantispy's own program counts (:mod:`.count_changes`): when no touched function's
   counters regressed or improved, a program count that grew (more loop iterations, calls or handlers
   entered on most inputs, the program's total growing with it) makes the verdict a regression, put down to
   the changed function that caused it: exact counts see an algorithmic regression whose time the
   counters' noise hides. Counters that say the candidate is faster win over counts that say it does more;
8. last, the whole process: when neither the counters nor the counts decided, a whole-process CPU time that
   grew significantly (the comparison below, which a diagnosis must never do worse than) makes the verdict a
   regression of ``process CPU``, the changed function that departed most named beside it: the extra work
   may sit where no function-level count or counter sees it (C code called from a loop, a thread, code
   outside functions).

Beside it, the comparison a diagnosis must beat: the whole process's CPU time per input, candidate
against baseline, with the same effect and significance rule.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from dataclasses import asdict

import numpy as np

from mantispy.diagnosis.autoencoder import FLOOR, CounterAutoencoder, counting_noise, sample_vector
from mantispy.diagnosis.changes import ChangeSet
from mantispy.diagnosis.count_changes import count_changes
from mantispy.diagnosis.counting import CountRun
from mantispy.diagnosis.profiling import BASELINE, CANDIDATE, VersionRun
from mantispy.diagnosis.significance import stratified_p
from mantispy.diagnosis.types import CALLS, COUNT_KINDS, PROCESS_CPU, Cluster, CpuTotal, Diagnosis, Finding, Settings


def _grouped(runs: list[VersionRun], value) -> dict[str, list[float]]:
    grouped: dict[str, list[float]] = defaultdict(list)
    for run in runs:
        got = value(run)
        if got is not None:
            grouped[run.input_id].append(got)
    return grouped


def _test(old_runs: list[VersionRun], new_runs: list[VersionRun], old_value, new_value, smooth: float,
          seed: int) -> tuple[float | None, float | None]:
    """Candidate against baseline on one measure: the median over inputs of the ratio of their medians,
    and the one-sided p-value in that ratio's direction (:func:`.significance.stratified_p` on the log of
    value + ``smooth``)."""
    old, new = _grouped(old_runs, old_value), _grouped(new_runs, new_value)
    effect, _logs = _paired_effect({k: statistics.median(v) for k, v in old.items()},
                                   {k: statistics.median(v) for k, v in new.items()}, smooth)
    if effect is None:
        return None, None
    groups = [([math.log(v + smooth) for v in old[key]], [math.log(v + smooth) for v in new[key]])
              for key in sorted(set(old) & set(new))
              if all(v + smooth > 0 for v in [*old[key], *new[key]])]
    return effect, stratified_p(groups, greater=effect >= 1, seed=seed)


def _total(run: VersionRun, function: str, feature: str) -> float | None:
    counts = run.functions.get(function)
    if counts is None or counts.calls <= 0:
        return None
    return float(counts.calls) if feature == CALLS else counts.totals.get(feature)


def _paired_effect(old: dict[str, float], new: dict[str, float], smooth: float = 1.0) -> tuple[float | None, list[float]]:
    """Median ratio over the inputs both have, and the per-input log ratios (of value + ``smooth``: a count
    that was zero still compares; for nanoseconds of CPU time one is nothing; seconds take 0)."""
    logs = [math.log((new[key] + smooth) / (old[key] + smooth)) for key in sorted(set(old) & set(new))
            if old[key] + smooth > 0 and new[key] + smooth > 0]
    if not logs:
        return None, []
    return math.exp(statistics.median(logs)), logs


def noise_floor(runs: list[VersionRun]) -> float | None:
    """Median absolute relative deviation of the baseline's repeated CPU times from their input's median."""
    grouped: dict[str, list[float]] = defaultdict(list)
    for run in runs:
        if run.version == BASELINE and run.status == "ok" and run.cpu_s > 0:
            grouped[run.input_id].append(run.cpu_s)
    deviations = [abs(v - statistics.median(values)) / statistics.median(values)
                  for values in grouped.values() if len(values) >= 2 for v in values]
    return statistics.median(deviations) if deviations else None


def cpu_total(runs: list[VersionRun], settings: Settings) -> CpuTotal:
    """The total-CPU comparison (per input medians, paired)."""
    ok = [r for r in runs if r.status == "ok" and r.cpu_s > 0]
    ratio, p = _test([r for r in ok if r.version == BASELINE], [r for r in ok if r.version == CANDIDATE],
                     lambda r: r.cpu_s, lambda r: r.cpu_s, 0.0, settings.seed)
    if ratio is None:
        return CpuTotal(None, None, "no regression")
    slower = ratio >= 1 + settings.min_effect
    faster = ratio <= 1 / (1 + settings.min_effect)
    verdict = "no regression"
    if p is not None and p <= settings.alpha:
        verdict = "regression" if slower else "improvement" if faster else "no regression"
    return CpuTotal(ratio, p, verdict)


def _feature_test(train_runs: list[VersionRun], test_runs: list[VersionRun], baseline_name: str, name: str,
                  feature: str, seed: int) -> tuple[float | None, float | None]:
    """A feature's inclusive total, candidate against baseline: effect on the median input and p-value."""
    return _test(train_runs, test_runs, lambda r: _total(r, baseline_name, feature), lambda r: _total(r, name, feature),
                 1.0, seed)


def _same_input_medians(train_runs: list[VersionRun], test_runs: list[VersionRun],
                        train: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The context each sample is judged in: the median of the baseline's runs of the same input (for a
    baseline run, of the other runs of its input, so that its departure is what repeats differ by; its
    own vector when it is its input's only run); NaN rows for inputs the baseline never ran."""
    rows_by_input: dict[str, list[int]] = defaultdict(list)
    for index, run in enumerate(train_runs):
        rows_by_input[run.input_id].append(index)
    train_context = np.empty_like(train)
    for index, run in enumerate(train_runs):
        others = [i for i in rows_by_input[run.input_id] if i != index]
        train_context[index] = np.median(train[others], axis=0) if others else train[index]
    test_context = np.array([np.median(train[rows_by_input[run.input_id]], axis=0) if run.input_id in rows_by_input
                             else np.full(train.shape[1], np.nan) for run in test_runs])
    return train_context, test_context


def _paired_departures(train_runs: list[VersionRun], test_runs: list[VersionRun], baseline_name: str,
                       test: np.ndarray, vector, events: list[str], settings: Settings) -> np.ndarray:
    """Each candidate run's features minus the median of the baseline's runs of the same input, in units of
    the baseline's repeat noise (the spread between repeats of one input, never below the counting noise
    or ``FLOOR``); NaN rows for inputs the baseline never ran."""
    by_input: dict[str, list[list[float]]] = defaultdict(list)
    noise = []
    for run in train_runs:
        by_input[run.input_id].append(vector(run, baseline_name))
        counts = run.functions[baseline_name]
        noise.append(counting_noise(counts.calls, counts.totals, events, counts.measured))
    medians = {key: np.median(np.array(rows), axis=0) for key, rows in by_input.items()}
    spread = [np.abs(np.array(rows) - medians[key]) for key, rows in by_input.items() if len(rows) >= 2]
    repeat_noise = 1.4826 * np.median(np.vstack(spread), axis=0) if spread else np.zeros(test.shape[1])
    scale = np.maximum(np.maximum(repeat_noise, np.median(np.array(noise), axis=0)), FLOOR)
    rows = [medians.get(run.input_id) for run in test_runs]
    return np.array([(x - base) / scale if base is not None else np.full(test.shape[1], np.nan)
                     for x, base in zip(test, rows)])


def _judge_function(name: str, baseline_name: str, code_changed: bool, runs: list[VersionRun], events: list[str],
                    settings: Settings, judged_functions: int = 1) -> tuple[Finding, list[tuple[np.ndarray, str]]]:
    features = [CALLS, *events]
    train_runs = [r for r in runs if r.version == BASELINE and baseline_name in r.functions
                  and r.functions[baseline_name].calls > 0]
    test_runs = [r for r in runs if r.version == CANDIDATE and name in r.functions and r.functions[name].calls > 0]

    def empty(note: str) -> tuple[Finding, list]:
        return Finding(name, baseline_name, code_changed, len(test_runs), 0, None, None, {}, None, None, False,
                       False, 0.0, None, note), []

    if not test_runs:
        return empty("not run by the candidate on these inputs")
    if len(train_runs) < 3:
        return empty("new: no baseline runs to learn from" if not train_runs else
                     f"only {len(train_runs)} baseline runs: too few to learn from")

    def vector(run: VersionRun, function: str) -> list[float]:
        counts = run.functions[function]
        return sample_vector(counts.calls, counts.totals, events)

    train = np.array([vector(r, baseline_name) for r in train_runs])
    test = np.array([vector(r, name) for r in test_runs])
    train_context, test_context = _same_input_medians(train_runs, test_runs, train)
    noise = np.array([counting_noise(c.calls, c.totals, events, c.measured)
                      for c in (r.functions[baseline_name] for r in train_runs)])
    keep = ~np.isnan(test_context).any(axis=1)
    model = CounterAutoencoder(k=settings.k, random_state=settings.seed)
    model.fit(np.hstack([train, train - train_context]), np.hstack([noise, noise]))
    errors = np.full(len(test), np.inf)  # (a candidate input the baseline never ran cannot be judged)
    if keep.any():
        errors[keep] = model.score_samples(np.hstack([test[keep], test[keep] - test_context[keep]]))
    flagged = keep & (errors > model.threshold_)
    departures = _paired_departures(train_runs, test_runs, baseline_name, test, vector, events, settings)
    shares: dict[str, float] = {}
    counter = None
    judged = ~np.isnan(departures).any(axis=1)
    usable = flagged & judged
    regressed = improved = False
    effect = p = None
    score = 0.0
    if judged.any():
        moved = departures[usable] if usable.any() else departures[judged]
        total = (moved ** 2).sum()
        shares = {f: float((moved[:, i] ** 2).sum() / total) for i, f in enumerate(features)} if total else {}
        tests = {feature: _feature_test(train_runs, test_runs, baseline_name, name, feature, settings.seed)
                 for feature in features}
        median_departure = {f: float(np.median(moved[:, i])) for i, f in enumerate(features)}
        enough = bool(flagged.mean() >= settings.min_share)
        # without the autoencoder's flags, growth its threshold is too coarse for counts only at the Bonferroni
        # level over every feature of every function judged (a rename touches dozens of callers), and only for
        # steady counters; shrinking never does (an improvement is no gate's concern, and two copies of one
        # code differ by ~5 % at times)
        level = settings.alpha if enough else settings.alpha / (len(features) * max(judged_functions, 1))

        def significant(feature: str, worse: bool) -> bool:
            got_effect, got_p = tests[feature]
            if got_effect is None or got_p is None or got_p > level or not (enough or worse and _steady(feature)):
                return False
            return got_effect >= 1 + settings.min_effect if worse else got_effect <= 1 / (1 + settings.min_effect)

        worse = [f for f in features if significant(f, True) and median_departure[f] > 0]
        better = [f for f in features if significant(f, False) and median_departure[f] < 0]
        if worse:
            counter, regressed = max(worse, key=lambda f: median_departure[f]), True
        elif better:
            counter, improved = min(better, key=lambda f: median_departure[f]), True
        else:
            counter = max(features, key=lambda f: abs(median_departure[f]))
        effect, p = tests[counter]
        score = float(abs(median_departure[counter]) * flagged.mean())
    finding = Finding(name, baseline_name, code_changed, len(test_runs), int(flagged.sum()), model.threshold_, counter,
                      shares, effect, p, regressed, improved, score, model.fit_seconds_)
    rows = np.flatnonzero(usable)
    profiles = [(departures[i] ** 2 / max((departures[i] ** 2).sum(), 1e-12), name) for i in rows]
    return finding, profiles


def _clusters(profiles: list[tuple[np.ndarray, str]], features_of: dict[str, list[str]], seed: int) -> list[Cluster]:
    """k-means over the flagged runs' departure profiles (each feature's share), the function one-hot beside
    them, with k the number of distinct (function, dominant feature) pairs (at most 4); each cluster named
    by its commonest function and the feature its mean profile weighs most."""
    if not profiles:
        return []
    functions = sorted({name for _, name in profiles})
    width = max(len(p) for p, _ in profiles)
    x = np.array([np.concatenate([np.pad(p, (0, width - len(p))), np.eye(len(functions))[functions.index(name)]])
                  for p, name in profiles])
    k = min(4, len({(name, int(np.argmax(p))) for p, name in profiles}))
    if k < 2:
        labels = np.zeros(len(x), dtype=int)
    else:
        from sklearn.cluster import KMeans

        labels = KMeans(n_clusters=k, n_init=10, random_state=seed).fit_predict(x)
    found = []
    for label in sorted(set(labels.tolist())):
        members = [i for i in range(len(x)) if labels[i] == label]
        names = [profiles[i][1] for i in members]
        function = max(set(names), key=names.count)
        features = features_of[function]
        mean = x[members, :width].mean(axis=0)[:len(features)]
        found.append(Cluster(len(members), function, features[int(np.argmax(mean))]))
    return sorted(found, key=lambda c: (-c.size, c.function))


def _steady(feature: str) -> bool:
    """CPU time and hardware events: what a change of code moves, where page faults and context switches,
    rare per call, move with the machine's memory and scheduler between runs (measured: +14 % page faults
    and +22 % context switches, p under the Bonferroni level, for two neutral changes)."""
    return feature == "thread.cpu_ns" or feature.startswith("hw.")


def _changed_callee(caller: Finding, findings: list[Finding], settings: Settings) -> Finding | None:
    """When an unchanged caller regressed, the changed function whose same counter grew significantly too
    (below the least effect, or without enough flagged runs, to count as a regression of its own): the
    caller's inclusive counter carries it, and its code is what changed. The most significant one."""
    grew = [f for f in findings if f.code_changed and f.counter == caller.counter and f.effect is not None
            and f.effect > 1 and f.p_value is not None and f.p_value <= settings.alpha]
    return min(grew, key=lambda f: (f.p_value, -f.score)) if grew else None


def diagnose(changes: ChangeSet, runs: list[VersionRun], settings: Settings,
             counts: list[CountRun] | None = None) -> Diagnosis:
    """The verdict on the candidate from both versions' counter runs and, when given, their program counts."""
    ok = [r for r in runs if r.status == "ok"]
    events = next((list(r.events) for r in ok if r.events), [])
    failed = [{"version": r.version, "input": r.input_id, "message": r.message} for r in runs if r.status != "ok"]
    summary = {"baseline": sum(r.version == BASELINE for r in ok), "candidate": sum(r.version == CANDIDATE for r in ok),
               "inputs": len({r.input_id for r in ok}), "failed": failed}
    changed_code = {*changes.changed, *changes.added, *changes.renamed.values()}
    findings: list[Finding] = []
    profiles: list[tuple[np.ndarray, str]] = []
    for name in changes.touched:
        finding, flagged = _judge_function(name, changes.baseline_name(name), name in changed_code, ok, events, settings,
                                           len(changes.touched))
        findings.append(finding)
        profiles += flagged
    findings.sort(key=lambda f: (not f.regressed, not f.code_changed, -f.score, f.function))
    clusters = _clusters(profiles, {f.function: [CALLS, *events] for f in findings}, settings.seed)
    change_summary = asdict(changes)
    change_summary.pop("common_files", None)
    change_summary.pop("calls_from", None)
    moved_counts = count_changes(changes, counts, settings) if counts and not changes.empty else []
    top: Finding | None = None
    verdict = "no change" if changes.empty else "no regression"
    named: tuple[str | None, str | None, float | None, float | None] = (None, None, None, None)
    whole = cpu_total(runs, settings)
    if not changes.empty:
        regressed = [f for f in findings if f.regressed]
        improved = sorted((f for f in findings if f.improved), key=lambda f: (not f.code_changed, -f.score))
        more_work = [c for c in moved_counts if c.regressed]
        carried = next((c for c in more_work if c.cause in changed_code), None)
        callee = _changed_callee(regressed[0], findings, settings) if regressed and not regressed[0].code_changed else None
        if regressed and not regressed[0].code_changed and carried is not None:
            verdict = "regression"  # a caller's inclusive counters carry the extra work counted in a changed callee
            named = (carried.cause, COUNT_KINDS[carried.kind], carried.effect, carried.moved / carried.inputs)
        elif callee is not None:
            verdict, top = "regression", callee
        elif regressed:
            verdict, top = "regression", regressed[0]
        elif improved:
            verdict, top = "improvement", improved[0]
        elif more_work:
            first = more_work[0]
            verdict = "regression"
            named = (first.cause, COUNT_KINDS[first.kind], first.effect, first.moved / first.inputs)
        elif whole.verdict == "regression":
            verdict = "regression"
            departed = sorted((f for f in findings if f.samples), key=lambda f: (not f.code_changed, -f.score))
            named = (departed[0].function if departed else None, PROCESS_CPU, whole.ratio,
                     None if whole.p_value is None else 1 - whole.p_value)
    if top is not None:
        named = (top.function, top.counter, top.effect, None if top.p_value is None else 1 - top.p_value)
    return Diagnosis(verdict, *named, settings=settings, changes=change_summary, runs=summary,
                     noise_floor=noise_floor(runs), findings=findings, clusters=clusters,
                     cpu_total=whole, count_changes=moved_counts)
