"""The diagnosis in the terminal: the verdict in one line, then the touched functions, the clusters of
flagged runs, the total-CPU comparison beside it, and what could not be compared."""

from __future__ import annotations

from mantispy.diagnosis.types import COUNT_KINDS, PROCESS_CPU, CountChange, Diagnosis, Finding


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{(value - 1) * 100:+.1f} %"


def _p(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def headline(diagnosis: Diagnosis) -> str:
    """The verdict in one line, after the inputs the candidate broke, if it broke any."""
    broken = diagnosis.candidate_failures()
    if not broken:
        return _verdict_line(diagnosis)
    first = broken[0]
    message = str(first.get("message") or "failed").strip().splitlines()
    return (f"the candidate FAILED on {len(broken)} of {diagnosis.runs.get('inputs', '?')} inputs where the baseline "
            f"ran ({first.get('input')}: {message[-1] if message else 'failed'}); the runs that ran: "
            + _verdict_line(diagnosis))


def _verdict_line(diagnosis: Diagnosis) -> str:
    count = _deciding_count(diagnosis)
    if count is not None:
        return (f"regression: {count.cause}, {COUNT_KINDS[count.kind]} of {count.function} {count_effect(count)} "
                f"on the median input ({count.baseline:.0f} -> {count.candidate:.0f}; grew on {count.moved} of "
                f"{count.inputs} inputs; an exact program count)")
    if diagnosis.verdict == "regression" and diagnosis.counter == PROCESS_CPU:
        confidence = "" if diagnosis.confidence is None else f", confidence {diagnosis.confidence:.1%}"
        beside = f"; the changed function that departed most: {diagnosis.function}" if diagnosis.function else ""
        return (f"regression: the whole process's CPU time {_ratio(diagnosis.effect)} on the median input"
                f"{confidence}; no function's counters or counts crossed their gate{beside}")
    if diagnosis.verdict in ("regression", "improvement"):
        confidence = "" if diagnosis.confidence is None else f", confidence {diagnosis.confidence:.1%}"
        return (f"{diagnosis.verdict}: {diagnosis.function}, counter {diagnosis.counter} "
                f"{_ratio(diagnosis.effect)} on the median input{confidence}")
    if diagnosis.verdict == "no change":
        return "no change: the versions' code is the same (comments, docstrings and formatting aside)"
    return "no regression: no touched function departs from what the baseline's runs taught"


def count_effect(change: CountChange) -> str:
    """A count's change in words that stay readable when the baseline's count was 0 or tiny."""
    if change.baseline == 0 and change.candidate > 0:
        return "from none"
    return f"x{change.effect:.3g}" if change.effect >= 10 else _ratio(change.effect)


def _deciding_count(diagnosis: Diagnosis) -> CountChange | None:
    """The program count a verdict rests on, when no counter finding decided it."""
    if diagnosis.verdict != "regression" or any(f.regressed for f in diagnosis.findings):
        return None
    return next((c for c in diagnosis.count_changes if c.regressed), None)


def count_row(change: CountChange) -> str:
    """One moved program count in a line."""
    mark = "MORE" if change.regressed else "less"
    cause = "" if change.cause.replace(".<locals>", "") == change.function else f"  (from {change.cause})"
    return (f"  {mark:<4} {COUNT_KINDS[change.kind]:<17} {count_effect(change):>9}  {change.baseline:>10.0f} -> "
            f"{change.candidate:<10.0f} {change.moved}/{change.inputs} inputs  {change.function}{cause}")


def _finding_row(finding: Finding) -> str:
    mark = "REGRESSED" if finding.regressed else "improved" if finding.improved else ""
    role = "changed" if finding.code_changed else "caller"
    share = f"{finding.flagged}/{finding.samples}"
    counter = finding.counter or "-"
    note = f"  ({finding.note})" if finding.note else ""
    return (f"  {mark:<9} {role:<7} {share:>5}  {counter:<22} {_ratio(finding.effect):>9}  p {_p(finding.p_value):>5}  "
            f"{finding.function}{note}")


def render(diagnosis: Diagnosis) -> str:
    """The whole diagnosis as text."""
    lines = [headline(diagnosis)]
    changes = diagnosis.changes
    renamed = changes.get("renamed", {})
    lines.append(f"changes: {len(changes.get('changed', []))} functions changed, {len(changes.get('added', []))} added, "
                 f"{len(changes.get('removed', []))} removed, {len(renamed)} renamed, {len(changes.get('callers', []))} "
                 f"callers profiled" + (f"; code outside functions changed in {', '.join(changes['module_code_changed'])}"
                                        if changes.get("module_code_changed") else ""))
    runs = diagnosis.runs
    floor = "-" if diagnosis.noise_floor is None else f"{diagnosis.noise_floor:.1%}"
    lines.append(f"runs: {runs.get('baseline', 0)} baseline, {runs.get('candidate', 0)} candidate over "
                 f"{runs.get('inputs', 0)} inputs; CPU noise floor {floor}")
    if diagnosis.findings:
        lines.append("functions (flagged runs / candidate runs, the counter carrying the error, its change on the "
                     "median input, one-sided p):")
        lines += [_finding_row(f) for f in diagnosis.findings]
    if diagnosis.count_changes:
        lines.append("program counts that moved (exact; candidate against baseline on the median input, inputs "
                     "moved / inputs):")
        lines += [count_row(c) for c in diagnosis.count_changes]
    if diagnosis.clusters:
        lines.append("flagged runs clustered: " + "; ".join(f"{c.size} x {c.function} ({c.counter})"
                                                            for c in diagnosis.clusters))
    cpu = diagnosis.cpu_total
    lines.append(f"whole-process CPU (the comparison without functions): {_ratio(cpu.ratio)}, p {_p(cpu.p_value)}: "
                 f"{cpu.verdict}")
    for failure in runs.get("failed", []):
        lines.append(f"failed: {failure['version']} on input {failure['input']}: {failure['message']}")
    return "\n".join(lines)
