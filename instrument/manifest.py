"""The feature manifest: the artefact the instrumentor hands to every later stage.

``OUT/.mantis/manifest.json`` lists every feature of an instrumented build. The profiler stores it with
each campaign, the model generator maps its columns back to it, ``mantispy show`` prints its source
locations, and the slicer finds a feature's construct in the original source through ``file`` and
``span``.

Feature ids are stable: they are built from the file, the enclosing qualified name and the ordinal of the
site among sites of the same kind in that scope, never from line numbers, so the same source always
gives the same ids and an edit elsewhere in a file leaves them alone.

Id grammar (``:`` separated)::

    FILE:QUALNAME:loop:N        N-th loop (for, async for, while, comprehension for-clause) in QUALNAME
    FILE:QUALNAME:branch:N      N-th branch arm (if/elif/else/implicit else, if-expression arms,
                                match cases, loop else, try else)
    FILE:QUALNAME:call          invocations of the function / method / lambda QUALNAME
    FILE:QUALNAME:except:N      N-th exception handler entered
    FILE:SCOPE:value:NAME#V     V-th value assigned to variable NAME of SCOPE (function, class for
                                ``self.x`` fields, ``<module>`` for globals)

``derived`` lists the counters that have no probe of their own (else arms whose count follows from
others, see :mod:`mantispy.instrument.derivation`): ``{id: {counted id: coefficient}}``; the run-time
writes their counts beside the others, so a features file does not tell them apart.

QUALNAME is ``<module>`` at module level, otherwise dotted like ``__qualname__`` without ``<locals>``;
a second definition with the same name in one file gets ``@2``.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from mantispy.core.types import Span

MANIFEST_FORMAT = "mantispy-manifest"
MANIFEST_VERSION = 1
FEATURE_KINDS = ("loop", "branch", "call", "exception", "value")
FAMILIES = ("loops", "branches", "calls", "exceptions", "values")
FAMILY_OF_KIND = dict(zip(FEATURE_KINDS, FAMILIES))



@dataclass
class Feature:
    """One column of the feature vector: a counter, or one version of a recorded variable."""

    id: str
    kind: str  # one of FEATURE_KINDS
    file: str  # path relative to the instrumented root, POSIX separators
    module: str  # dotted module name derived from ``file``
    qualname: str  # enclosing scope of the construct (for values: the variable's scope)
    span: Span
    snippet: str  # the construct's first source line, stripped (one line)
    detail: str  # construct flavour: "for", "while", "elif", "implicit-else", "param", ...
    variable: str | None = None  # values: the variable's base id (``...:value:NAME``)
    version: int | None = None  # values: 1..k


@dataclass
class ValueSite:
    """One place where a recorded variable is assigned; a variable may have several."""

    id: str  # FILE:QUALNAME:assign:N
    variable: str  # base id of the variable it feeds
    file: str
    qualname: str  # the code scope the statement sits in
    span: Span
    detail: str
    region: str | None  # counter id whose count equals this site's executions (None: once per import)


@dataclass
class FileRecord:
    """What happened to one file of the source tree."""

    path: str
    status: str  # "instrumented", "copied" (not Python), "excluded", "error"
    sha256: str
    lines: int = 0
    shifted_lines: int = 0  # lines the instrumentor had to add (0 keeps every line number exact)
    error: str | None = None


@dataclass
class Removal:
    """A site whose instrumentation was removed to meet the overhead budget."""

    id: str
    site: str  # "counter" or "value-site"
    dynamic_count: int
    round: int
    reason: str


@dataclass
class Manifest:
    """The whole instrumented build: options, files, features, value sites and budget removals."""

    mantispy_version: str
    source_root: str
    source_hash: str
    options: dict[str, Any]
    files: list[FileRecord] = field(default_factory=list)
    features: list[Feature] = field(default_factory=list)
    value_sites: list[ValueSite] = field(default_factory=list)
    removed: list[Removal] = field(default_factory=list)
    calibration: dict[str, Any] | None = None
    derived: dict[str, dict[str, int]] = field(default_factory=dict)  # probe-less counts: {id: {counted id: coefficient}}
    format: str = MANIFEST_FORMAT
    version: int = MANIFEST_VERSION

    def feature(self, feature_id: str) -> Feature:
        """Return the feature with this id (KeyError if there is none)."""
        for feat in self.features:
            if feat.id == feature_id:
                return feat
        raise KeyError(feature_id)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict."""
        data = asdict(self)
        for key in ("features", "value_sites"):
            for item in data[key]:
                item["span"] = list(item["span"])
        return data

    def save(self, path: Path) -> None:
        """Write as JSON (pretty, stable key order)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(self.to_dict(), indent=1) + "\n", encoding="utf-8")
        tmp.replace(path)

    @classmethod
    def from_dict(cls, data: Any) -> Manifest:
        """Inverse of :meth:`to_dict`; refuses other formats, newer versions and ill-typed fields with a
        :class:`ManifestError` naming the field."""
        if not isinstance(data, dict) or data.get("format") != MANIFEST_FORMAT:
            raise ManifestError("not a mantispy manifest")
        version = data.get("version", 0)
        if isinstance(version, bool) or not isinstance(version, int):
            raise ManifestError(f"field version: expected a whole number, not {version!r}")
        if version > MANIFEST_VERSION:
            raise ManifestError(
                f"manifest version {version} is newer than this mantispy understands ({MANIFEST_VERSION}); upgrade mantispy"
            )
        for key in ("mantispy_version", "source_root", "source_hash"):
            if not isinstance(data.get(key), str):
                raise ManifestError(f"field {key}: expected a string")
        if not isinstance(data.get("options"), dict):
            raise ManifestError("field options: expected an object")
        _check_options(data["options"])
        calibration = data.get("calibration")
        if calibration is not None and not isinstance(calibration, dict):
            raise ManifestError("field calibration: expected an object or null")
        derived = data.get("derived", {})
        if not isinstance(derived, dict) or not all(
                isinstance(fid, str) and isinstance(terms, dict) and all(
                    isinstance(cid, str) and isinstance(c, int) and not isinstance(c, bool) for cid, c in terms.items())
                for fid, terms in derived.items()):
            raise ManifestError("field derived: expected an object of {feature id: {feature id: whole number}}")
        return cls(
            mantispy_version=data["mantispy_version"],
            source_root=data["source_root"],
            source_hash=data["source_hash"],
            options=data["options"],
            files=_items(data, "files", lambda f: _typed(FileRecord(**f))),
            features=_items(data, "features", lambda f: _checked_feature(_typed(Feature(**{**f, "span": _span(f["span"])})))),
            value_sites=_items(data, "value_sites", lambda s: _typed(ValueSite(**{**s, "span": _span(s["span"])}))),
            removed=_items(data, "removed", lambda r: _typed(Removal(**r)), required=False),
            calibration=calibration,
            derived=derived,
        )

    @classmethod
    def load(cls, path: Path) -> Manifest:
        """Read ``path`` (a manifest.json or an instrumented OUT directory); raises OSError when it cannot
        be read and :class:`ManifestError` (naming the file) when it is not a usable manifest."""
        path = Path(path)
        if path.is_dir():
            path = path / ".mantis" / "manifest.json"
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError) as exc:
            raise ManifestError(f"{path}: not JSON ({exc})") from None
        try:
            return cls.from_dict(data)
        except ManifestError as exc:
            raise ManifestError(f"{path}: {exc}") from None


class ManifestError(ValueError):
    """A manifest mantispy cannot use (the message names the field)."""


def _items(data: dict[str, Any], key: str, build: Any, required: bool = True) -> list:
    """The list ``data[key]``, each item built by ``build``; a bad item is a ManifestError naming it."""
    if key not in data and not required:
        return []
    value = data.get(key)
    if not isinstance(value, list):
        raise ManifestError(f"field {key}: expected a list")
    built = []
    for n, item in enumerate(value):
        if not isinstance(item, dict):
            raise ManifestError(f"field {key}[{n}]: expected an object")
        try:
            built.append(build(item))
        except (KeyError, TypeError, ValueError) as exc:
            raise ManifestError(f"field {key}[{n}]: {exc}") from None
    return built


def _span(value: Any) -> Span:
    """Four whole numbers (start line, start column, end line, end column)."""
    if (not isinstance(value, (list, tuple)) or len(value) != 4
            or not all(isinstance(v, int) and not isinstance(v, bool) for v in value)):
        raise ValueError(f"span must be 4 whole numbers, not {value!r}")
    return value[0], value[1], value[2], value[3]


_SIMPLE: dict[str, type | tuple[type, ...]] = {"str": str, "int": int, "float": (int, float), "bool": bool}


def _typed(record: Any) -> Any:
    """``record`` (a dataclass) when each field declared str, int, float or bool (or ``X | None``) holds one."""
    for f in fields(record):
        declared = str(f.type).replace(" ", "")
        optional = declared.endswith("|None")
        wanted = _SIMPLE.get(declared.removesuffix("|None"))
        value = getattr(record, f.name)
        if wanted is None or (optional and value is None):
            continue
        if isinstance(value, bool) and wanted is not bool or not isinstance(value, wanted):
            raise ValueError(f"{f.name} must be {declared.removesuffix('|None')}, not {value!r}")
        if isinstance(value, float) and value != value:
            raise ValueError(f"{f.name} must be a number, not NaN")
    return record


def _checked_feature(feature: Feature) -> Feature:
    if not isinstance(feature.id, str) or feature.kind not in FEATURE_KINDS or not isinstance(feature.file, str):
        raise ValueError(f"a feature needs a string id and file and a kind among {', '.join(FEATURE_KINDS)}")
    return feature


def manifest_path(out_dir: Path) -> Path:
    """Where the manifest of an instrumented tree lives."""
    return Path(out_dir) / ".mantis" / "manifest.json"


_OPTION_TYPES = {"families": "a list of strings", "exclude": "a list of strings", "disabled": "a list of strings",
                 "k": "a whole number", "derive_arms": "true or false"}


def _check_options(options: dict[str, Any]) -> None:
    """The options this version writes must have their types (others are kept as they are); a
    :class:`ManifestError` names the first that does not."""
    for key, expected in _OPTION_TYPES.items():
        if key not in options:
            continue
        value = options[key]
        if expected == "a list of strings":
            good = isinstance(value, list) and all(isinstance(v, str) for v in value)
        elif expected == "a whole number":
            good = isinstance(value, int) and not isinstance(value, bool)
        else:
            good = isinstance(value, bool)
        if not good:
            raise ManifestError(f"field options.{key}: expected {expected}, not {value!r}")
