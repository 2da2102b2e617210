"""The build record (``build.json``): what ``mantispy build`` writes beside a predictor package, as a typed
record with to/from JSON (the way :class:`mantispy.slicer.slice_result.SliceResult` is).

``mantispy build`` fills it (:meth:`mantispy.build.Builder.record`, then
:func:`mantispy.predictor.validate`), the package's README, the build's closing table and the verdicts
read it typed; the HTML report renders its JSON form (docs/report.md: the report renders any dict,
missing or odd parts as "not available"). The fields are listed in docs/report.md and docs/contracts.md.

Reading is checked: a field of the wrong type, a non-finite number or an unknown format or version
raises :class:`BuildRecordError` with one line naming the file, the field and the fix. Parts a
version-1 record may lack (no evaluator, no rounds, no machine) read as their empty defaults.
The nested documents whose shape belongs to another stage stay JSON objects: a metric's ``model`` (the
model JSON, :mod:`mantispy.modeling.artefact`), its ``validation`` (held-out errors and points), the
rounds, verdicts and cost rows.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from mantispy.runtime.content import CONTENT_PREFIX
from mantispy.runtime.descriptors import INPUT_PREFIX
from mantispy.runtime.sampled_input import SAMPLED_PREFIX

BUILD_FORMAT = "mantispy-build"
BUILD_VERSION = 1
BUILD_FILE = "build.json"
_FIX = "run mantispy build again"


class BuildRecordError(Exception):
    """build.json cannot be read as a build record (a one-line message naming the field and the fix)."""


class _Reader:
    """Typed field reads from one JSON object, with the path of each field for the message."""

    def __init__(self, data: Any, where: str, origin: str) -> None:
        self.origin = origin
        self.where = where
        if not isinstance(data, dict):
            self.fail(where or "the record", "an object", data)
        self.data: dict[str, Any] = data

    def fail(self, name: str, wanted: str, found: Any) -> None:
        shown = json.dumps(found)[:60] if _jsonable(found) else type(found).__name__
        raise BuildRecordError(f"{self.origin}: field {name}: expected {wanted}, found {shown}; {_FIX}")

    def path(self, key: str) -> str:
        return f"{self.where}.{key}" if self.where else key

    def text(self, key: str, default: str | None = "") -> Any:
        value = self.data.get(key, default)
        if value is None and default is None:
            return None
        if not isinstance(value, str):
            self.fail(self.path(key), "a string", value)
        return value

    def optional_text(self, key: str) -> str | None:
        return self.text(key, None)

    def number(self, key: str, default: float | None = None) -> float | None:
        value = self.data.get(key, default)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            self.fail(self.path(key), "a finite number or null", value)
        return float(value) if isinstance(value, float) else value

    def integer(self, key: str, default: int | None = None) -> int | None:
        value = self.data.get(key, default)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(self.path(key), "an integer or null", value)
        return value

    def mapping(self, key: str) -> dict[str, Any]:
        value = self.data.get(key)
        if value is None:
            return {}
        if not isinstance(value, dict):
            self.fail(self.path(key), "an object", value)
        return value

    def objects(self, key: str) -> list[dict[str, Any]]:
        value = self.data.get(key)
        if value is None:
            return []
        if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
            self.fail(self.path(key), "a list of objects", value)
        return value

    def texts(self, key: str) -> list[str]:
        value = self.data.get(key)
        if value is None:
            return []
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            self.fail(self.path(key), "a list of strings", value)
        return value

    def child(self, key: str) -> _Reader | None:
        value = self.data.get(key)
        return None if value is None else _Reader(value, self.path(key), self.origin)


def _jsonable(value: Any) -> bool:
    try:
        json.dumps(value, allow_nan=True)
    except (TypeError, ValueError):
        return False
    return True


def _finite_everywhere(value: Any, where: str, origin: str) -> None:
    """No NaN or infinity anywhere inside (JSON has none; Python's json module writes and reads them)."""
    if isinstance(value, float) and not math.isfinite(value):
        raise BuildRecordError(f"{origin}: field {where}: {value} is not a finite number; {_FIX}")
    if isinstance(value, dict):
        for key, item in value.items():
            _finite_everywhere(item, f"{where}.{key}", origin)
    elif isinstance(value, list):
        for n, item in enumerate(value):
            _finite_everywhere(item, f"{where}[{n}]", origin)


@dataclass
class MachineRecord:
    """The machine the build ran on."""

    cpu: str | None = None
    cores: int | None = None
    python: str | None = None
    platform: str | None = None

    @classmethod
    def read(cls, r: _Reader) -> MachineRecord:
        """From ``machine``."""
        return cls(cpu=r.optional_text("cpu"), cores=r.integer("cores"), python=r.optional_text("python"),
                   platform=r.optional_text("platform"))


@dataclass
class OptionsRecord:
    """What ``mantispy build`` was asked for."""

    max_cost: float | None = None
    train_fraction: float | None = None
    metrics: list[str] = field(default_factory=list)
    degree: int | None = None
    seed: int | None = None
    method: str | None = None
    max_rounds: int | None = None
    form: str | None = None
    solver: str | None = None
    penalty: str | None = None
    sample_fraction: float | None = None  # sampled features' share of each input file (0: none offered)
    view_confidence: float | None = None  # the model selection's view-confidence rule (0: off; None: before it)
    original_repeats: int | None = None
    estimate_limit: float | None = None
    cost_inputs: list[str] = field(default_factory=list)

    @classmethod
    def read(cls, r: _Reader) -> OptionsRecord:
        """From ``options``."""
        return cls(max_cost=r.number("max_cost"), train_fraction=r.number("train_fraction"), metrics=r.texts("metrics"),
                   degree=r.integer("degree"), seed=r.integer("seed"), method=r.optional_text("method"),
                   max_rounds=r.integer("max_rounds"), form=r.optional_text("form"), solver=r.optional_text("solver"),
                   penalty=r.optional_text("penalty"), sample_fraction=r.number("sample_fraction"),
                   view_confidence=r.number("view_confidence"),
                   original_repeats=r.integer("original_repeats"), estimate_limit=r.number("estimate_limit"),
                   cost_inputs=r.texts("cost_inputs"))


@dataclass
class CampaignRecord:
    """The profiling campaign the models were fitted on."""

    name: str | None = None
    inputs: int | None = None
    runs: int | None = None
    raw_features: int | None = None
    median_wall_s: float | None = None
    overhead: dict[str, Any] | None = None  # the instrumentation's calibration (profiler)
    noise: dict[str, Any] = field(default_factory=dict)  # metric -> {"floor": relative spread of repeats, ...}
    unusable_inputs: list[str] = field(default_factory=list)

    @classmethod
    def read(cls, r: _Reader) -> CampaignRecord:
        """From ``campaign``."""
        return cls(name=r.optional_text("name"), inputs=r.integer("inputs"), runs=r.integer("runs"),
                   raw_features=r.integer("raw_features"), median_wall_s=r.number("median_wall_s"),
                   overhead=r.mapping("overhead") or None, noise=r.mapping("noise"),
                   unusable_inputs=r.texts("unusable_inputs"))


@dataclass
class MetricRecord:
    """One modelled metric: its unit, its model JSON and its held-out validation."""

    unit: str = ""
    model: dict[str, Any] = field(default_factory=dict)
    validation: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def read(cls, r: _Reader) -> MetricRecord:
        """From ``metrics.NAME``."""
        return cls(unit=r.text("unit"), model=r.mapping("model"), validation=r.mapping("validation"))

    @property
    def is_constant(self) -> bool:
        """The model predicts one number whatever the input."""
        return self.model.get("method") == "constant" or not self.model.get("scaling")


@dataclass
class FeatureRecord:
    """A feature some model uses: where it is, which metrics use it, what its evaluator costs."""

    id: str = ""
    kind: str | None = None
    file: str | None = None
    line: int | None = None
    qualname: str | None = None
    snippet: str | None = None
    detail: str | None = None
    metrics: list[str] = field(default_factory=list)
    cost_s: float | None = None
    cost_fraction: float | None = None
    source: dict[str, Any] | None = None  # {"first_line", "highlight", "lines"} for the report

    @classmethod
    def read(cls, r: _Reader) -> FeatureRecord:
        """From one entry of ``features``."""
        return cls(id=r.text("id"), kind=r.optional_text("kind"), file=r.optional_text("file"), line=r.integer("line"),
                   qualname=r.optional_text("qualname"), snippet=r.optional_text("snippet"),
                   detail=r.optional_text("detail"), metrics=r.texts("metrics"), cost_s=r.number("cost_s"),
                   cost_fraction=r.number("cost_fraction"), source=r.mapping("source") or None)


@dataclass
class EvaluatorRecord:
    """The combined feature evaluator the package ships, and how it did on the held-out inputs."""

    features: list[str] = field(default_factory=list)
    input_check: str | None = None  # no model uses the program: this feature's evaluator only checks each input
    statements_kept: int = 0
    statements_total: int = 0
    files: int = 0
    cost: list[dict[str, Any]] = field(default_factory=list)  # {"input_id", "evaluator_s", "actual_s", "fraction"}
    median_fraction: float | None = None
    max_fraction: float | None = None
    median_s: float | None = None
    warm_startup_s: float | None = None
    cold_median_s: float | None = None
    cold_median_fraction: float | None = None
    fidelity: dict[str, Any] = field(default_factory=dict)  # {"inputs", "features", "agreed", "mismatches", ...}
    failures: list[dict[str, Any]] = field(default_factory=list)
    slicing: str = "static"
    calls_resolved_dynamically: int = 0
    hybrid_rejected: dict[str, Any] | None = None
    confinement: str | None = None  # what confines an evaluation on the build machine (evaluate.py --mantis-confinement)
    sampled_features: list[str] = field(default_factory=list)  # computed by sampled_evaluator/ on input samples
    sample_fraction: float | None = None  # the share of each input file a sampled feature's evaluator reads

    @classmethod
    def read(cls, r: _Reader) -> EvaluatorRecord:
        """From ``evaluator``."""
        return cls(features=r.texts("features"), input_check=r.optional_text("input_check"), statements_kept=r.integer("statements_kept", 0) or 0,
                   statements_total=r.integer("statements_total", 0) or 0, files=r.integer("files", 0) or 0,
                   cost=r.objects("cost"), median_fraction=r.number("median_fraction"),
                   max_fraction=r.number("max_fraction"), median_s=r.number("median_s"),
                   warm_startup_s=r.number("warm_startup_s"), cold_median_s=r.number("cold_median_s"),
                   cold_median_fraction=r.number("cold_median_fraction"), fidelity=r.mapping("fidelity"),
                   failures=r.objects("failures"), slicing=r.text("slicing", "static"),
                   calls_resolved_dynamically=r.integer("calls_resolved_dynamically", 0) or 0,
                   hybrid_rejected=r.mapping("hybrid_rejected") or None,
                   confinement=r.optional_text("confinement"), sampled_features=r.texts("sampled_features"),
                   sample_fraction=r.number("sample_fraction"))


@dataclass
class BuildRecord:
    """``build.json``: everything one ``mantispy build`` decided and measured."""

    name: str = ""
    entry: str = ""
    entry_kind: str = "script"  # script, module or callable (the campaign spec's entry)
    source: str = ""
    source_hash: str = ""
    created: str = ""  # ISO 8601, UTC
    machine: MachineRecord | None = None
    options: OptionsRecord = field(default_factory=OptionsRecord)
    campaign: CampaignRecord = field(default_factory=CampaignRecord)
    idle_interpreter_s: float | None = None
    calibration_inputs: list[dict[str, Any]] = field(default_factory=list)  # {"id", "argv", "kwargs", ...}
    metrics: dict[str, MetricRecord] = field(default_factory=dict)
    rounds: list[dict[str, Any]] = field(default_factory=list)  # the cost loop's log (docs/report.md)
    features: list[FeatureRecord] = field(default_factory=list)
    verdicts: dict[str, dict[str, Any]] = field(default_factory=dict)  # feature -> the cost loop's verdict
    ceiling: dict[str, dict[str, Any]] = field(default_factory=dict)  # metric -> a model on every feature
    evaluator: EvaluatorRecord | None = None
    build_id: str | None = None
    build_seconds: float | None = None

    # -------------------------------------------------------------- JSON
    def to_dict(self) -> dict[str, Any]:
        """The JSON object of build.json (format and version first)."""
        data: dict[str, Any] = {"format": BUILD_FORMAT, "version": BUILD_VERSION}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "metrics":
                value = {m: asdict(record) for m, record in value.items()}
            elif f.name == "features":
                value = [asdict(record) for record in value]
            elif value is not None and hasattr(value, "__dataclass_fields__"):
                value = asdict(value)
            data[f.name] = value
        return data

    def to_json(self) -> str:
        """build.json's text (strict JSON: a non-finite number is an error, not ``NaN``)."""
        return json.dumps(self.to_dict(), indent=1, allow_nan=False) + "\n"

    @classmethod
    def from_dict(cls, data: Any, origin: str = BUILD_FILE) -> BuildRecord:
        """Read a build.json object (raises :class:`BuildRecordError`; ``origin`` names it in messages)."""
        if not isinstance(data, dict) or data.get("format") != BUILD_FORMAT:
            found = data.get("format") if isinstance(data, dict) else type(data).__name__
            raise BuildRecordError(f"{origin}: not a mantispy build (format {found!r}, expected {BUILD_FORMAT!r}); "
                                   "give the folder `mantispy build` wrote (it holds build.json), or " + _FIX)
        version = data.get("version")
        if version != BUILD_VERSION:
            newer = isinstance(version, int) and not isinstance(version, bool) and version > BUILD_VERSION
            hint = "upgrade mantispy to read it" if newer else _FIX
            raise BuildRecordError(f"{origin}: build format version {version!r} is not supported "
                                   f"(this mantispy reads version {BUILD_VERSION}); {hint}")
        _finite_everywhere(data, "build", origin)
        r = _Reader(data, "", origin)
        metrics_reader = r.child("metrics")
        metrics = {}
        if metrics_reader is not None:
            for name in metrics_reader.data:
                child = metrics_reader.child(name)
                metrics[name] = MetricRecord.read(child) if child is not None else MetricRecord()
        features = [FeatureRecord.read(_Reader(item, f"features[{n}]", origin)) for n, item in enumerate(r.objects("features"))]
        machine = r.child("machine")
        options = r.child("options")
        campaign = r.child("campaign")
        evaluator = r.child("evaluator")
        verdicts = r.mapping("verdicts")
        ceiling = r.mapping("ceiling")
        for name, table in (("verdicts", verdicts), ("ceiling", ceiling)):
            for key, value in table.items():
                if not isinstance(value, dict):
                    r.fail(f"{name}.{key}", "an object", value)
        return cls(
            name=r.text("name"), entry=r.text("entry"), entry_kind=r.text("entry_kind", "script"),
            source=r.text("source"), source_hash=r.text("source_hash"), created=r.text("created"),
            machine=MachineRecord.read(machine) if machine is not None else None,
            options=OptionsRecord.read(options) if options is not None else OptionsRecord(),
            campaign=CampaignRecord.read(campaign) if campaign is not None else CampaignRecord(),
            idle_interpreter_s=r.number("idle_interpreter_s"), calibration_inputs=r.objects("calibration_inputs"),
            metrics=metrics, rounds=r.objects("rounds"), features=features, verdicts=verdicts, ceiling=ceiling,
            evaluator=EvaluatorRecord.read(evaluator) if evaluator is not None else None,
            build_id=r.optional_text("build_id"), build_seconds=r.number("build_seconds"))

    @classmethod
    def load(cls, path: Path) -> BuildRecord:
        """Read ``path`` (build.json, or the folder holding it); raises :class:`BuildRecordError`."""
        path = Path(path)
        if path.is_dir():
            path = path / BUILD_FILE
        fix = "give the folder `mantispy build` wrote (it holds build.json), or " + _FIX
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise BuildRecordError(f"{path}: no such file; {fix}") from None
        except (OSError, UnicodeDecodeError) as exc:
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise BuildRecordError(f"{path}: cannot read ({why}); {fix}") from None
        try:
            data = json.loads(text)
        except ValueError as exc:
            where = f"line {exc.lineno}: " if isinstance(exc, json.JSONDecodeError) else ""
            raise BuildRecordError(f"{path}: not JSON ({where}{getattr(exc, 'msg', exc)}); {fix}") from None
        return cls.from_dict(data, str(path))

    def save(self, path: Path) -> None:
        """Write build.json (``path``: the file)."""
        Path(path).write_text(self.to_json(), encoding="utf-8")

    # -------------------------------------------------------------- questions the renderers ask
    def noise_floor(self, metric: str) -> float | None:
        """The campaign's noise floor for the stored metric ``metric``'s model is judged against."""
        from mantispy.modeling.work import measured_metric

        found = self.campaign.noise.get(measured_metric(metric)) or {}
        floor = found.get("floor") if isinstance(found, dict) else None
        return float(floor) if isinstance(floor, (int, float)) and not isinstance(floor, bool) else None


def input_check_choice(measured: Iterable[tuple[str, Any, Any]]) -> str | None:
    """The feature whose evaluator a package runs to check each input when no model uses a program feature
    (its slice runs the program's argument handling, so an input the program rejects is rejected): of the
    program features whose evaluator the cost loop measured and found to agree with the program
    (``measured``: feature, verdict status, cost in seconds or as a share of the run), the cheap one that
    costs least, else the least costly one. Input descriptors, content and sampled features are no
    evaluator of the whole input. None when none was measured."""
    found = [(status != "cheap", float(cost), feature) for feature, status, cost in measured
             if status in ("cheap", "too expensive") and isinstance(cost, (int, float)) and not isinstance(cost, bool)
             and not feature.startswith((INPUT_PREFIX, CONTENT_PREFIX, SAMPLED_PREFIX))]
    return min(found)[2] if found else None
