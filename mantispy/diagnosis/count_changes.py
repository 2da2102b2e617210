"""Which functions' program counts moved between the versions (issue 22: program counts "can name
algorithmic regressions that hardware counters cannot").

For every function in both versions (renames followed) and every count kind (loop iterations, calls,
exception handlers entered), per input: the candidate's count against the baseline's. A count *grew* on
an input when it rose by at least ``min_effect`` (counts + 1, so a handler never entered before still
compares), by at least ``min_program_share`` of the program's baseline total of that kind (one more call of
a setup function is not a regression), and when the program's total of the kind rose by at least half as
much (work that only moved — a loop extracted into a new helper, a helper inlined into its caller — is not
more work). A function regressed on a kind when its count grew on at least ``min_share`` of the inputs and
its median ratio is at least 1 + ``min_effect``; improved, symmetrically.

Each moved count is put down to a changed function: itself when its code changed; else the changed (or
added, or renamed) function whose code names it; else the only changed function; else itself.

Regressions come first, and among them the counts nearest the changed code: the cause's own counts (its
loops, its handlers), then the calls of functions the cause's code names (more calls made by the changed
code), then the rest (a callee's loops run more because it is called more: a consequence, not the
mechanism); within a tier, the larger share of the program's total first.
"""

from __future__ import annotations

import statistics
from collections import defaultdict

from mantispy.diagnosis.changes import ChangeSet
from mantispy.diagnosis.counting import CountRun, manifest_name
from mantispy.diagnosis.profiling import BASELINE, CANDIDATE
from mantispy.diagnosis.types import COUNT_KINDS, CountChange, Settings

_MOVED_SHARE = 0.5
"""How much of a function's growth the program's total must show for it to be more work, not moved work."""


def _bare(name: str) -> str:
    return name.rsplit(":", 1)[-1].rsplit(".", 1)[-1]


def _cause_finder(changes: ChangeSet):
    """The rule of the module docstring, as a function of a candidate-side (manifest) name."""
    changed = {manifest_name(n): n for n in [*changes.changed, *changes.renamed.values(), *changes.added]}
    users: dict[str, list[str]] = defaultdict(list)
    for name, used in changes.calls_from.items():
        for bare in used:
            users[bare].append(name)

    def cause(function: str) -> str:
        if function in changed:
            return changed[function]
        naming = sorted(n for n in users.get(_bare(function), []) if manifest_name(n) != function)
        if naming:
            return naming[0]
        if len(changed) == 1:
            return next(iter(changed.values()))
        return function

    return cause


def _nearness(change: CountChange, changes: ChangeSet) -> int:
    """0: a count of the cause itself; 1: calls of a function the cause's code names; 2: anything else."""
    if manifest_name(change.cause) == change.function:
        return 0
    if change.kind == "call" and _bare(change.function) in changes.calls_from.get(change.cause, ()):
        return 1
    return 2


def count_changes(changes: ChangeSet, runs: list[CountRun], settings: Settings) -> list[CountChange]:
    """Every function count that regressed or improved (see the module docstring), regressions first."""
    ok = [r for r in runs if r.status == "ok"]
    old = {r.input_id: r for r in ok if r.version == BASELINE}
    new = {r.input_id: r for r in ok if r.version == CANDIDATE}
    inputs = sorted(set(old) & set(new))
    if not inputs:
        return []
    renamed = {manifest_name(n): manifest_name(o) for o, n in changes.renamed.items()}
    back_renamed = {b: n for n, b in renamed.items()}
    old_functions, new_functions = old[inputs[0]].functions, new[inputs[0]].functions
    names = {n for key in inputs for n in new[key].counts}
    names |= {back_renamed.get(n, n) for key in inputs for n in old[key].counts}
    totals = {key: {version: {kind: sum(c.get(kind, 0.0) for c in run.counts.values()) for kind in COUNT_KINDS}
                    for version, run in ((BASELINE, old[key]), (CANDIDATE, new[key]))} for key in inputs}
    cause = _cause_finder(changes)
    found = []
    for name in sorted(names):
        baseline_name = renamed.get(name, name)
        if name not in new_functions or baseline_name not in old_functions:
            continue  # added or removed: no count to compare with
        for kind in COUNT_KINDS:
            change = _judged(name, baseline_name, kind, inputs, old, new, totals, settings)
            if change is not None:
                before, after, effect, moved, judged, share = change
                found.append(CountChange(name, baseline_name, kind, before, after, effect, moved, judged, share,
                                         cause(name), regressed=effect >= 1 + settings.min_effect,
                                         improved=effect <= 1 / (1 + settings.min_effect)))
    return sorted(found, key=lambda c: (not c.regressed, _nearness(c, changes), -abs(c.program_share), c.function,
                                        c.kind))


def _judged(name: str, baseline_name: str, kind: str, inputs: list[str], old: dict[str, CountRun],
            new: dict[str, CountRun], totals: dict,
            settings: Settings) -> tuple[float, float, float, int, int, float] | None:
    """(baseline, candidate, effect, moved, inputs, program_share) when the count moved enough, else None."""
    rows = []
    for key in inputs:
        b = old[key].counts.get(baseline_name, {}).get(kind, 0.0)
        c = new[key].counts.get(name, {}).get(kind, 0.0)
        before, after = totals[key][BASELINE][kind], totals[key][CANDIDATE][kind]
        least = max(1.0, settings.min_program_share * before)
        ratio = (c + 1) / (b + 1)
        up = ratio >= 1 + settings.min_effect and c - b >= least and after - before >= _MOVED_SHARE * (c - b)
        down = ratio <= 1 / (1 + settings.min_effect) and b - c >= least and before - after >= _MOVED_SHARE * (b - c)
        rows.append((ratio, b, c, up, down, (c - b) / max(before, 1.0)))
    if not any(r[3] or r[4] for r in rows):
        return None
    ordered = sorted(rows)
    median = ordered[(len(ordered) - 1) // 2]
    effect = statistics.median(r[0] for r in rows)
    share = statistics.median(r[5] for r in rows)
    grew, shrank = sum(r[3] for r in rows), sum(r[4] for r in rows)
    least_inputs = settings.min_share * len(rows)
    if grew >= least_inputs and effect >= 1 + settings.min_effect:
        return median[1], median[2], effect, grew, len(rows), share
    if shrank >= least_inputs and effect <= 1 / (1 + settings.min_effect):
        return median[1], median[2], effect, shrank, len(rows), share
    return None
