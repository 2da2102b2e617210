"""Reading a diagnosis back (``mantispy diagnose -o FILE``, then ``mantispy diagnose --show FILE`` or a CI
script): the JSON checked field by field into :class:`mantispy.diagnosis.types.Diagnosis`; anything else
is refused in one line that names the file, the field and the fix."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from mantispy.core.types import shown_key
from mantispy.diagnosis.types import (
    COUNT_KINDS,
    CPU_VERDICTS,
    FORMAT,
    VERDICTS,
    VERSION,
    Cluster,
    CountChange,
    CpuTotal,
    Diagnosis,
    Finding,
    Settings,
)

_FIX = "write it again with mantispy diagnose ... -o FILE"


class DiagnosisError(Exception):
    """A diagnosis file that cannot be used (one line)."""


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not a number JSON allows")


class _Checker:
    def __init__(self, path: Path) -> None:
        self.path = path

    def fail(self, where: str, what: str) -> DiagnosisError:
        return DiagnosisError(f"{self.path}: field {where}: {what}; {_FIX}")

    def table(self, value: Any, where: str) -> dict:
        if not isinstance(value, dict):
            raise self.fail(where, "not an object")
        return value

    def field(self, table: dict, key: str, where: str) -> Any:
        if key not in table:
            raise self.fail(f"{where}.{key}" if where else key, "missing")
        return table[key]

    def number(self, value: Any, where: str, optional: bool = False, low: float | None = None) -> float | None:
        if value is None and optional:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise self.fail(where, "not a finite number" + (" or null" if optional else ""))
        if low is not None and value < low:
            raise self.fail(where, f"below {low:g}")
        return float(value)

    def count(self, value: Any, where: str) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise self.fail(where, "not a count (a whole number, 0 or more)")
        return value

    def text(self, value: Any, where: str, optional: bool = False) -> str | None:
        if value is None and optional:
            return None
        if not isinstance(value, str):
            raise self.fail(where, "not a string")
        return value

    def choice(self, value: Any, where: str, allowed: tuple[str, ...]) -> str:
        if value not in allowed:
            raise self.fail(where, f"not one of {', '.join(allowed)}")
        return value

    def texts(self, value: Any, where: str) -> list[str]:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.fail(where, "not a list of strings")
        return list(value)

    def flag(self, value: Any, where: str) -> bool:
        if not isinstance(value, bool):
            raise self.fail(where, "not true or false")
        return value


def _finding(check: _Checker, raw: Any, where: str) -> Finding:
    table = check.table(raw, where)

    def get(key: str) -> Any:
        return check.field(table, key, where)

    shares = check.table(get("counter_shares"), f"{where}.counter_shares")
    return Finding(
        function=check.text(get("function"), f"{where}.function") or "",
        baseline_function=check.text(get("baseline_function"), f"{where}.baseline_function") or "",
        code_changed=check.flag(get("code_changed"), f"{where}.code_changed"),
        samples=check.count(get("samples"), f"{where}.samples"),
        flagged=check.count(get("flagged"), f"{where}.flagged"),
        threshold=check.number(get("threshold"), f"{where}.threshold", optional=True, low=0),
        counter=check.text(get("counter"), f"{where}.counter", optional=True),
        counter_shares={shown_key(k): check.number(v, f"{where}.counter_shares.{shown_key(k)}", low=0) or 0.0
                        for k, v in shares.items()},
        effect=check.number(get("effect"), f"{where}.effect", optional=True, low=0),
        p_value=check.number(get("p_value"), f"{where}.p_value", optional=True, low=0),
        regressed=check.flag(get("regressed"), f"{where}.regressed"),
        improved=check.flag(get("improved"), f"{where}.improved"),
        score=check.number(get("score"), f"{where}.score") or 0.0,
        fit_seconds=check.number(get("fit_seconds"), f"{where}.fit_seconds", optional=True, low=0),
        note=check.text(table.get("note", ""), f"{where}.note") or "",
    )


def _count_change(check: _Checker, raw: Any, where: str) -> CountChange:
    table = check.table(raw, where)

    def get(key: str) -> Any:
        return check.field(table, key, where)

    moved, inputs = check.count(get("moved"), f"{where}.moved"), check.count(get("inputs"), f"{where}.inputs")
    if moved > inputs:
        raise check.fail(f"{where}.moved", "more than inputs")
    return CountChange(
        function=check.text(get("function"), f"{where}.function") or "",
        baseline_function=check.text(get("baseline_function"), f"{where}.baseline_function") or "",
        kind=check.choice(get("kind"), f"{where}.kind", tuple(COUNT_KINDS)),
        baseline=check.number(get("baseline"), f"{where}.baseline", low=0) or 0.0,
        candidate=check.number(get("candidate"), f"{where}.candidate", low=0) or 0.0,
        effect=check.number(get("effect"), f"{where}.effect", low=0) or 0.0,
        moved=moved, inputs=inputs,
        program_share=check.number(get("program_share"), f"{where}.program_share") or 0.0,
        cause=check.text(get("cause"), f"{where}.cause") or "",
        regressed=check.flag(get("regressed"), f"{where}.regressed"),
        improved=check.flag(get("improved"), f"{where}.improved"))


def from_json(data: Any, path: Path) -> Diagnosis:
    """Check a parsed document; raises DiagnosisError."""
    check = _Checker(path)
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise DiagnosisError(f"{path}: not a mantispy diagnosis (field format); {_FIX}")
    if data.get("version") != VERSION:
        raise DiagnosisError(f"{path}: field version: {data.get('version')!r} is not {VERSION}; {_FIX}")

    def get(key: str) -> Any:
        return check.field(data, key, "")

    raw_settings = check.table(get("settings"), "settings")
    settings = Settings(
        k=check.number(check.field(raw_settings, "k", "settings"), "settings.k", low=0) or 0.0,
        min_effect=check.number(check.field(raw_settings, "min_effect", "settings"), "settings.min_effect", low=0) or 0.0,
        min_share=check.number(check.field(raw_settings, "min_share", "settings"), "settings.min_share", low=0) or 0.0,
        alpha=check.number(check.field(raw_settings, "alpha", "settings"), "settings.alpha", low=0) or 0.0,
        seed=check.count(check.field(raw_settings, "seed", "settings"), "settings.seed"),
        min_program_share=check.number(raw_settings.get("min_program_share", Settings.min_program_share),
                                       "settings.min_program_share", low=0) or 0.0)
    changes = check.table(get("changes"), "changes")
    for key in ("changed", "added", "removed", "callers", "files_changed", "module_code_changed"):
        check.texts(check.field(changes, key, "changes"), f"changes.{key}")
    renamed = check.table(check.field(changes, "renamed", "changes"), "changes.renamed")
    for old, new in renamed.items():
        check.text(new, f"changes.renamed.{shown_key(old)}")
    runs = check.table(get("runs"), "runs")
    for key in ("baseline", "candidate", "inputs"):
        check.count(check.field(runs, key, "runs"), f"runs.{key}")
    failed = check.field(runs, "failed", "runs")
    if not isinstance(failed, list):
        raise check.fail("runs.failed", "not a list")
    for i, item in enumerate(failed):
        table = check.table(item, f"runs.failed[{i}]")
        for key in ("version", "input", "message"):
            check.text(check.field(table, key, f"runs.failed[{i}]"), f"runs.failed[{i}].{key}")
    raw_findings = get("findings")
    if not isinstance(raw_findings, list):
        raise check.fail("findings", "not a list")
    findings = [_finding(check, raw, f"findings[{i}]") for i, raw in enumerate(raw_findings)]
    raw_clusters = get("clusters")
    if not isinstance(raw_clusters, list):
        raise check.fail("clusters", "not a list")
    clusters = []
    for i, raw in enumerate(raw_clusters):
        table = check.table(raw, f"clusters[{i}]")
        clusters.append(Cluster(check.count(check.field(table, "size", f"clusters[{i}]"), f"clusters[{i}].size"),
                                check.text(check.field(table, "function", f"clusters[{i}]"), f"clusters[{i}].function") or "",
                                check.text(check.field(table, "counter", f"clusters[{i}]"), f"clusters[{i}].counter") or ""))
    raw_cpu = check.table(get("cpu_total"), "cpu_total")
    cpu = CpuTotal(check.number(check.field(raw_cpu, "ratio", "cpu_total"), "cpu_total.ratio", optional=True, low=0),
                   check.number(check.field(raw_cpu, "p_value", "cpu_total"), "cpu_total.p_value", optional=True, low=0),
                   check.choice(check.field(raw_cpu, "verdict", "cpu_total"), "cpu_total.verdict", CPU_VERDICTS))
    raw_counts = data.get("count_changes", [])  # absent in documents written before program counts
    if not isinstance(raw_counts, list):
        raise check.fail("count_changes", "not a list")
    count_changes = [_count_change(check, raw, f"count_changes[{i}]") for i, raw in enumerate(raw_counts)]
    confidence = check.number(get("confidence"), "confidence", optional=True, low=0)
    if confidence is not None and confidence > 1:
        raise check.fail("confidence", "above 1")
    return Diagnosis(
        verdict=check.choice(get("verdict"), "verdict", VERDICTS),
        function=check.text(get("function"), "function", optional=True),
        counter=check.text(get("counter"), "counter", optional=True),
        effect=check.number(get("effect"), "effect", optional=True, low=0),
        confidence=confidence,
        settings=settings, changes=dict(changes), runs=dict(runs),
        noise_floor=check.number(get("noise_floor"), "noise_floor", optional=True, low=0),
        findings=findings, clusters=clusters, cpu_total=cpu, count_changes=count_changes)


def load(path: Path) -> Diagnosis:
    """Read and check a diagnosis file; raises DiagnosisError (one line)."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"), parse_constant=_refuse_constant)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        message = " ".join(str(exc).split())
        raise DiagnosisError(f"{path}: not readable as JSON ({message}); {_FIX}") from None
    return from_json(data, path)
