"""Rare phases folded into the modelled phase they are a variant of.

Phase labels are matched on two metrics (:mod:`.similarity`): the shares of time (t_sim) and the fraction
of functions in common (f_sim). With a handful of functions on a phase's stacks, one function more or
less (a helper at 5 % of one stretch) drops f_sim to 0.8, so a stretch of a known phase can get a label of
its own in a few training runs (pycparser's parse, with ``CParser.parse`` at 82 % of one stretch: t_sim
0.97-0.99 to the modelled parse phase, seen in 1-7 of 40 runs). Such a label is too rare to model, and a
check cannot judge its stretch by the phase it was cut from (bench_phases, seed 23: 5 of pycparser's 100
normal runs flagged when it was judged against the longest it lasted in training, 1 with the fold).

Before fitting, each phase seen in fewer than ``min_runs`` training runs is folded into the modelled phase
whose time shares it matches best, when that t_sim reaches the detector's threshold: its occurrences take
that label (durations, CPU time and own time added to the phase's), and so does its entry in the known
phases, so a check labels such a stretch as the phase it belongs to. A rare phase like no modelled one
(an idle wait, a phase of a few runs' own) stays rare.
"""

from __future__ import annotations

from collections import defaultdict

from .detect import Known
from .observe import RunPhases
from .similarity import t_sim


def fold_rare_phases(runs: list[RunPhases], known: Known, min_runs: int, t_threshold: float) -> dict[str, dict]:
    """Fold rare phases into modelled ones (see the module docstring), in place: the runs' phase rows and
    own time, and ``known``. Returns ``{rare label: {"into": label, "t_sim": value, "runs": n}}``."""
    counts: dict[str, int] = defaultdict(int)
    for run in runs:
        for label in run.order():
            counts[label] += 1
    profiles: dict[str, dict[str, float]] = {}
    for label, profile in known:
        profiles.setdefault(label, profile)
    modelled = [label for label in profiles if counts[label] >= min_runs]
    folded: dict[str, dict] = {}
    for label, profile in profiles.items():
        if counts[label] >= min_runs or not modelled:
            continue
        nearest = max(modelled, key=lambda other: t_sim(profile, profiles[other]))
        similarity = t_sim(profile, profiles[nearest])
        if similarity >= t_threshold:
            folded[label] = {"into": nearest, "t_sim": round(similarity, 4), "runs": counts[label]}
    if not folded:
        return folded
    into = {label: entry["into"] for label, entry in folded.items()}
    for run in runs:
        for row in run.phases:
            row["label"] = into.get(row["label"], row["label"])
        own: dict[str, dict[str, float]] = {}
        for label, functions in run.own.items():
            target = own.setdefault(into.get(label, label), {})
            for function, seconds in functions.items():
                target[function] = target.get(function, 0.0) + seconds
        run.own = own
    known[:] = [(into.get(label, label), profile) for label, profile in known]
    return folded
