"""The diagnosis artefact (``mantispy diagnose -o FILE``): what was compared, what each touched function
did, the verdict, and the total-CPU comparison beside it. One vocabulary for the analysis, the renderers
and the reader.

JSON (format ``mantispy-diagnosis``, version 1)::

    {"format": "mantispy-diagnosis", "version": 1,
     "verdict": "regression" | "no regression" | "improvement" | "no change",
     "function": NAME | null, "counter": FEATURE | null, "effect": x | null, "confidence": p | null,
     "settings": {"k": 2.0, "min_effect": 0.05, "min_share": 0.5, "alpha": 0.05, "seed": 0,
                  "min_program_share": 0.01},
     "changes": {"changed": [...], "added": [...], "removed": [...], "renamed": {OLD: NEW},
                 "callers": [...], "files_changed": [...], "module_code_changed": [...]},
     "runs": {"baseline": n, "candidate": n, "inputs": n, "failed": [{"version", "input", "message"}]},
     "noise_floor": x | null,
     "findings": [{"function", "baseline_function", "code_changed", "samples", "flagged", "threshold",
                   "counter", "counter_shares": {FEATURE: share}, "effect", "p_value", "regressed",
                   "improved", "score", "fit_seconds", "note"}],
     "clusters": [{"size", "function", "counter"}],
     "cpu_total": {"ratio": x, "p_value": p, "verdict": "regression" | "no regression" | "improvement"},
     "count_changes": [{"function", "baseline_function", "kind", "baseline", "candidate", "effect", "moved",
                        "inputs", "program_share", "cause", "regressed", "improved"}]}

``count_changes`` (optional: absent in documents written before program counts, empty with
``--no-counts``) are mantispy's own program counts (loop iterations, calls, exception handlers entered),
counted once per version and input in an instrumented copy: a function whose count of one kind grew on
most inputs, the program's total of that kind growing with it, did more work in the candidate however
little CPU time it shows. When only program counts regressed, the verdict's ``counter`` is the count's
kind (``loop iterations``, ``calls``, ``handlers entered``), ``effect`` its median ratio and
``confidence`` the share of inputs it grew on. When only the whole process's CPU time regressed, the
verdict is a regression with ``counter`` ``process CPU``, ``effect`` and ``confidence`` from that
comparison, and ``function`` the changed function that departed most (or null).

``effect`` is the median over inputs of the candidate's over the baseline's inclusive total of the
counter (for ``calls``: the number of calls); ``confidence`` is 1 - the one-sided p-value of that
difference (a permutation test stratified by input, :mod:`mantispy.diagnosis.significance`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

FORMAT = "mantispy-diagnosis"
VERSION = 1
VERDICTS = ("regression", "no regression", "improvement", "no change")
CPU_VERDICTS = ("regression", "no regression", "improvement")
CALLS = "calls"
"""The feature that counts a function's calls (the program count beside the counters)."""
PROCESS_CPU = "process CPU"
"""The verdict's counter when only the whole process's CPU time regressed (no function crossed its gate)."""
COUNT_KINDS = {"loop": "loop iterations", "call": CALLS, "exception": "handlers entered"}
"""The program counts a diagnosis compares (manifest feature kind -> the name a verdict gives it)."""


@dataclass(frozen=True)
class Settings:
    """The diagnosis's knobs: threshold (mean + k sigma), least effect, least share of inputs flagged,
    significance level, and the seed of the run order and the models."""

    k: float = 2.0
    min_effect: float = 0.05
    min_share: float = 0.5
    alpha: float = 0.05
    seed: int = 0
    min_program_share: float = 0.01
    """Least growth of a program count, as a share of the program's total of its kind, that counts."""


@dataclass(frozen=True)
class Finding:
    """One profiled function of the candidate, judged against its baseline model."""

    function: str  # candidate-side FILE:QUALNAME
    baseline_function: str
    code_changed: bool  # changed, added or renamed (not only a caller of one)
    samples: int  # candidate runs in which it ran
    flagged: int  # of those, over the threshold
    threshold: float | None
    counter: str | None  # the feature carrying most of its flagged error
    counter_shares: dict[str, float]
    effect: float | None  # median candidate/baseline ratio of the counter's inclusive total
    p_value: float | None
    regressed: bool
    improved: bool
    score: float  # flagged error over the threshold, summed (its rank among findings)
    fit_seconds: float | None
    note: str = ""


@dataclass(frozen=True)
class Cluster:
    """A group of flagged samples (k-means over their error profiles) and what dominates it."""

    size: int
    function: str
    counter: str


@dataclass(frozen=True)
class CpuTotal:
    """The comparison a diagnosis is measured against: the whole process's CPU time per input
    (pyperf compare_to's style: ratio and significance, nothing about where)."""

    ratio: float | None
    p_value: float | None
    verdict: str


@dataclass(frozen=True)
class CountChange:
    """One function's program count of one kind, candidate against baseline (exact counts, one run of each
    version per input)."""

    function: str  # candidate-side FILE:QUALNAME (as the manifest writes it: no ``<locals>``)
    baseline_function: str
    kind: str  # a key of COUNT_KINDS
    baseline: float  # on the median input (the input whose ratio is the median)
    candidate: float
    effect: float  # median over inputs of (candidate + 1) / (baseline + 1)
    moved: int  # inputs on which it grew (shrank, for an improvement) by min_effect and min_program_share
    inputs: int  # inputs both versions ran
    program_share: float  # median growth over the program's baseline total of the kind
    cause: str  # the changed function it is put down to (itself when it changed)
    regressed: bool
    improved: bool


@dataclass
class Diagnosis:
    """The whole diagnosis."""

    verdict: str
    function: str | None
    counter: str | None
    effect: float | None
    confidence: float | None
    settings: Settings
    changes: dict[str, Any]
    runs: dict[str, Any]
    noise_floor: float | None
    findings: list[Finding] = field(default_factory=list)
    clusters: list[Cluster] = field(default_factory=list)
    cpu_total: CpuTotal = field(default_factory=lambda: CpuTotal(None, None, "no regression"))
    count_changes: list[CountChange] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """The JSON document."""
        return {"format": FORMAT, "version": VERSION, **asdict(self)}

    def candidate_failures(self) -> list[dict[str, Any]]:
        """The candidate's failed runs on inputs where no baseline run failed (the candidate broke them),
        one per input, in input order."""
        failed = [f for f in self.runs.get("failed", []) if isinstance(f, dict)]
        baseline = {f.get("input") for f in failed if f.get("version") == "baseline"}
        first: dict[Any, dict[str, Any]] = {}
        for f in failed:
            if f.get("version") == "candidate" and f.get("input") not in baseline:
                first.setdefault(f.get("input"), f)
        return [first[key] for key in sorted(first, key=str)]
