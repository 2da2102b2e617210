"""The criterion: a slice's features found in the instrumentor's own analysis of their files, with the
slots their probes tick or record into."""

from __future__ import annotations

from dataclasses import dataclass

from mantispy.instrument.manifest import FAMILY_OF_KIND, Feature, ValueSite
from mantispy.slicer.program import Program, SourceFile
from mantispy.slicer.slice_result import SliceResult

from .errors import EmitError
from .source import derived_counters, instrumentor_analysis


@dataclass
class Criterion:
    """One feature's construct and probes, as the instrumentor sees the original file.

    ``slot`` indexes the evaluator's counters and value stores: one per counter feature, one per
    variable (every version of a variable wanted reads the same slot's records). ``taken_slot`` is set
    for an else arm the profile counts without a probe (:mod:`mantispy.instrument.derivation`): its count
    is the ``if`` chain's entries (``slot``) less its arms taken (``taken_slot``), so that a test that
    raises counts as the else arm there too."""

    feature: Feature
    sites: list[ValueSite]  # values: every assignment site of the variable
    variable: str | None  # values: the recorded name (``n`` or ``self.total``)
    version: int | None  # values: V
    slot: int = 0
    taken_slot: int | None = None

    @property
    def derived_else(self) -> bool:
        """Whether this is an else arm counted as its chain's entries less its arms taken."""
        return self.taken_slot is not None

    @property
    def kind(self) -> str:
        """loop / branch / call / exception / value."""
        return self.feature.kind


def resolve_criterion(source: SourceFile, result: SliceResult, k: int) -> Criterion:
    """Find ``result.criterion`` in the instrumentor's analysis of its file (raises :class:`EmitError`)."""
    return _resolve(source, result.all_criteria()[0], k)


def _version_of(feature_id: str, kind: str) -> int | None:
    if kind != "value" or "#" not in feature_id:
        return None
    return int(feature_id.rsplit("#", 1)[1])


def _resolve(source: SourceFile, wanted: dict, k: int) -> Criterion:
    """One criterion ({"id", "kind", "file", "span", "detail"}) of a slice, found in its file."""
    kind, fid = wanted["kind"], wanted["id"]
    if kind not in FAMILY_OF_KIND:
        raise EmitError(f"unknown criterion kind {kind!r}")
    version = _version_of(fid, kind)
    if version is not None and not 1 <= version <= k:
        raise EmitError(f"{fid}: version {version} is outside 1..k={k}")
    analysed = instrumentor_analysis(source.source, wanted["file"], FAMILY_OF_KIND[kind], k)
    feature = next((f for f in analysed.features if f.id == fid), None)
    if feature is None:
        raise EmitError(f"{fid}: no such feature in {wanted['file']} (was the source changed?)")
    if tuple(feature.span) != tuple(wanted["span"]):
        raise EmitError(f"{fid}: the slice says span {tuple(wanted['span'])}, the source has "
                        f"{tuple(feature.span)} (was the source changed?)")
    if kind != "value":
        return Criterion(feature, [], None, None)
    sites = [s for s in analysed.value_sites if s.variable == feature.variable]
    variable = (feature.variable or "").rsplit(":value:", 1)[1]
    return Criterion(feature, sites, variable, version)


def resolve_criteria(program: Program, result: SliceResult, k: int,
                     derived: frozenset[str] | None = None) -> list[Criterion]:
    """Every criterion of a (possibly combined) slice, with its slots assigned. ``derived``: the counters
    the profile's instrumentation counted with no probe (its manifest's ``derived``); None: those the
    default instrumentation derives."""
    criteria: list[Criterion] = []
    slots: dict[str, int] = {}
    for wanted in result.all_criteria():
        source = program.by_path.get(wanted["file"])
        if source is None:
            raise EmitError(f"{wanted['file']}: not a file of the program (root {program.root})")
        criterion = _resolve(source, wanted, k)
        key = f"variable:{criterion.feature.variable}" if criterion.kind == "value" else f"feature:{criterion.feature.id}"
        criterion.slot = slots.setdefault(key, len(slots))
        criteria.append(criterion)
    for criterion in criteria:
        fid = criterion.feature.id
        if criterion.feature.detail in ("else", "implicit-else") and fid in (
                derived_counters(program.by_path[criterion.feature.file].source, criterion.feature.file, k)
                if derived is None else derived):
            criterion.taken_slot = slots.setdefault(f"taken:{fid}", len(slots))
    return criteria
