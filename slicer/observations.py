"""Observed calls (issue 6): what profiling saw each call site reach, in the source's coordinates.

:class:`Observations` reads the records :mod:`mantispy.runtime.observed_calls` writes (once per
site/callee pair) and tells the SDG builder, for each call site the static call graph left unresolved,
which program callees to use instead of the name-based fallback (see :mod:`mantispy.slicer.hybrid`
for the rules and the validation of hybrid slices).

Observations recorded on an instrumented build (``mantispy run OUT --observed-calls FILE``) are in the
build's coordinates; :func:`build_to_source` maps them to the source's (instrumentation only adds probe
calls, so the program's own calls keep their order: the i-th non-probe ``ast.Call`` of the build is the
i-th ``ast.Call`` of the source).
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mantispy.runtime import observed_calls as recorder

SiteKey = tuple[str, int, int, int, int]  # file, line, col, end line, end col (ast coordinates)
CodeKey = tuple[str, str, int]  # file, co_qualname, co_firstlineno


class ObservationsError(Exception):
    """An observations file cannot be read or does not fit the program."""


# ---------------------------------------------------------------------- observations
@dataclass
class Observations:
    """Observed (call site, callee) pairs of a program, as :mod:`mantispy.runtime.observed_calls`
    writes them (in the source's coordinates)."""

    calls: dict[SiteKey, set[CodeKey]] = field(default_factory=dict)
    reached: set[SiteKey] = field(default_factory=set)
    started: set[CodeKey] = field(default_factory=set)
    uncreated: set[CodeKey] = field(default_factory=set)
    files: dict[str, str] = field(default_factory=dict)
    runs: list[dict[str, Any]] = field(default_factory=list)
    inputs: list[str] = field(default_factory=list)  # input ids of a profiling campaign, if any
    origin: str = ""
    # An unresolved site that never ran a call while its code unit ran: "keep" its name fallback
    # (default), or "drop" it (no program callee: smaller slices, more often wrong on new inputs).
    unreached: str = "keep"

    @classmethod
    def load(cls, path: str | Path) -> Observations:
        """Read an observations JSON file."""
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ObservationsError(f"{path}: cannot read observed calls ({exc}); record them with "
                                    "mantispy run ... --observed-calls FILE or mantispy profile --observe-calls") from None
        return cls.from_dict(data, str(path))

    @classmethod
    def from_dict(cls, data: dict[str, Any], origin: str = "") -> Observations:
        """Read an observed-calls document; a field of the wrong shape is an ObservationsError naming it."""
        where = origin or "observations"
        if not isinstance(data, dict) or data.get("format") != recorder.FORMAT or data.get("version") != recorder.VERSION:
            raise ObservationsError(f"{where}: not a {recorder.FORMAT} version {recorder.VERSION} file")

        def rows(key: str, width: int, shape) -> list:
            value = data.get(key, [])
            if not isinstance(value, list):
                raise ObservationsError(f"{where}: field {key}: expected a list; record them again with mantispy profile "
                                        "--observe-calls")
            converted = []
            for n, row in enumerate(value):
                try:
                    if not isinstance(row, list) or len(row) != width:
                        raise ValueError
                    converted.append(shape(row))
                except (TypeError, ValueError):
                    raise ObservationsError(f"{where}: field {key}[{n}]: expected {width} values (file, line and column "
                                            "numbers, names); record them again with mantispy profile --observe-calls") from None
            return converted

        def text(value: Any) -> str:
            if not isinstance(value, str):
                raise TypeError
            return value

        def number(value: Any) -> int:
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError
            return value

        site = lambda r: (text(r[0]), number(r[1]), number(r[2]), number(r[3]), number(r[4]))  # noqa: E731
        code = lambda r: (text(r[0]), text(r[1]), number(r[2]))  # noqa: E731
        calls: dict[SiteKey, set[CodeKey]] = defaultdict(set)
        for key, callee in rows("calls", 8, lambda r: (site(r[:5]), code(r[5:]))):
            calls[key].add(callee)
        files, runs, inputs = data.get("files", {}), data.get("runs", []), data.get("inputs", [])
        if not isinstance(files, dict) or not isinstance(runs, list) or not isinstance(inputs, list):
            raise ObservationsError(f"{where}: fields files, runs and inputs: expected an object and two lists")
        return cls(dict(calls), set(rows("reached", 5, site)), set(rows("started", 3, code)),
                   set(rows("uncreated", 3, code)), dict(files), [r for r in runs if isinstance(r, dict)],
                   [str(i) for i in inputs], origin)

    @classmethod
    def coerce(cls, value: Any, unreached: str | None = None) -> Observations:
        """An Observations from itself, a path, or a JSON document (``unreached``: see the field)."""
        if isinstance(value, Observations):
            found = value
        elif isinstance(value, dict):
            found = cls.from_dict(value)
        else:
            found = cls.load(value)
        if unreached is not None and unreached != found.unreached:
            if unreached not in ("keep", "drop"):
                raise ObservationsError(f"unreached={unreached!r}: choose keep or drop")
            from dataclasses import replace

            found = replace(found, unreached=unreached)
        return found

    def files_run(self) -> set[str]:
        """The program files whose code ran in the observed runs (relative to the program root)."""
        return {code[0] for code in self.started} | {code[0] for callees in self.calls.values() for code in callees}

    def observed_argv(self) -> list[list[str]]:
        """The program arguments of every run that contributed observations."""
        return [list(r.get("argv", [])) for r in self.runs]

    def contributed(self, args: list[str]) -> bool:
        """Did a run with these program arguments contribute observations (then it is not held out)?"""
        return any(list(args) == argv for argv in self.observed_argv())

    # ------------------------------------------------------------------ used by sdg._resolve_calls
    def callees_for(self, sdg, proc_key: tuple[str, str], site) -> list[tuple[str, str]] | None:
        """Program callees of an unresolved call site according to the observations (procedure keys),
        or None when no observation covers the site (it never ran a call, or its file changed)."""
        bound = _bind(self, sdg)
        key = (site.file, site.line, site.col, site.end_line, site.end_col)
        if proc_key[0] in bound.stale:
            return None
        if key not in bound.calls and key not in bound.reached:  # the site never ran a call
            if self.unreached != "drop" or not _ran(sdg, bound, proc_key):
                return None  # nothing is known about it
        found = list(bound.calls.get(key, ()))
        if bound.uncreated:  # generator functions that ran, created by calls nobody saw (3.11)
            name = _called_name(sdg, bound, site)
            found += [c for c in sorted(bound.uncreated) if c not in found and short_name(c[1]) == name]
        return found

    def calls_by_file(self, sdg) -> dict[str, list[tuple[SiteKey, list[tuple[str, str]]]]]:
        """Every observed site of each file with the SDG procedures it was seen to call (files whose source
        changed since the observations are left out), sites in source order."""
        bound = _bind(self, sdg)
        found: dict[str, list[tuple[SiteKey, list[tuple[str, str]]]]] = {}
        for site in sorted(bound.calls):
            if bound.calls[site]:
                found.setdefault(site[0], []).append((site, bound.calls[site]))
        return found

    def protocol_callees_for(self, sdg, proc_key: tuple[str, str], site,
                             statement: tuple[int, int, int, int]) -> list[tuple[str, str]] | None:
        """Program callees of an unresolved protocol site (``for x in y``, ``a in b``, whose class inference
        could not name) according to the observations: the ``__iter__`` / ``__contains__`` methods seen
        called from it or from its ``statement`` (the enclosing statement's span: the recorder puts a
        ``for``'s implicit call there), none if the statement ran without one (a call inside it ran: the
        iterable was a list), or None when nothing is known (the statement never ran, the file changed)."""
        bound = _bind(self, sdg)
        if proc_key[0] in bound.stale:
            return None
        keys = [(site.file, site.line, site.col, site.end_line, site.end_col), (site.file, *statement)]
        found = sorted({c for key in keys for c in bound.calls.get(key, ())})
        if found:
            return found
        start, end = statement[:2], statement[2:]
        ran = any(start <= key[1:3] and key[3:5] <= end for key in bound.by_file.get(site.file, ()))
        return [] if ran else None


@dataclass
class _Bound:
    calls: dict[SiteKey, list[tuple[str, str]]]
    reached: set[SiteKey]
    ran: set[tuple[str, str]]
    uncreated: set[tuple[str, str]]
    stale: set[str]
    call_nodes: dict[str, dict[tuple[int, int, int, int], ast.Call]] = field(default_factory=dict)
    by_file: dict[str, list[SiteKey]] = field(default_factory=dict)  # sites that ran a call, per file


def _ran(sdg, bound: _Bound, key: tuple[str, str]) -> bool:
    """Did the unit run? A comprehension counts as run when its enclosing unit ran (3.12+ inlines list,
    set and dict comprehensions into it: they have no code object of their own)."""
    unit = sdg.procs[key].unit
    while True:
        if (key[0], unit.qualname) in bound.ran:
            return True
        if unit.kind != "comprehension" or unit.parent is None:
            return False
        unit = unit.parent


def short_name(qualname: str) -> str:
    """A code unit's own name: ``"Parser.parse@12"`` -> ``"parse"``."""
    return qualname.rsplit(".", 1)[-1].split("@")[0]


def _called_name(sdg, bound: _Bound, site) -> str | None:
    """The name a call site calls: ``f`` in ``f(...)`` and in ``a.b().f(...)``; None for other callees."""
    nodes = bound.call_nodes.get(site.file)
    if nodes is None:
        source = sdg.program.by_path.get(site.file)
        nodes = {} if source is None else {(n.lineno, n.col_offset, n.end_lineno, n.end_col_offset): n
                                           for n in ast.walk(source.tree) if isinstance(n, ast.Call)}
        bound.call_nodes[site.file] = nodes
    call = nodes.get((site.line, site.col, site.end_line, site.end_col))
    if call is None:
        return None
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None


def _bind(obs: Observations, sdg) -> _Bound:
    """The observations in terms of one SDG's procedure keys (computed once per SDG)."""
    cached = sdg.__dict__.get("_observed_bound")
    if cached is not None and cached[0] is obs:
        return cached[1]
    hashes = {f.path: f.sha256 for f in sdg.program.files}
    stale = {f for f, digest in obs.files.items() if f in hashes and digest and digest != hashes[f]}
    index: dict[tuple[str, str], list[tuple[str, str]]] = defaultdict(list)
    for key in sdg.procs:
        index[(key[0], re.sub(r"@\d+", "", key[1]))].append(key)

    def keys(code: CodeKey) -> list[tuple[str, str]]:
        file, qualname, line = code
        if file in stale:
            return []
        found = index.get((file, qualname.replace(".<locals>", "")), [])
        if len(found) > 1:
            at_line = [k for k in found if line in _unit_lines(sdg.procs[k].unit)]
            found = at_line or found
        return found

    calls: dict[SiteKey, list[tuple[str, str]]] = {}
    for site, callees in obs.calls.items():
        if site[0] not in stale:
            calls[site] = sorted({k for c in callees for k in keys(c)})
    reached = {site for site in obs.reached if site[0] not in stale}
    ran = {k for c in obs.started for k in keys(c)}
    uncreated = {k for c in obs.uncreated for k in keys(c)}
    bound = _Bound(calls, reached, ran, uncreated, stale)
    for site in reached | set(calls):
        bound.by_file.setdefault(site[0], []).append(site)
    sdg.__dict__["_observed_bound"] = (obs, bound)
    return bound


def _unit_lines(unit) -> set[int]:
    node = unit.node
    if unit.kind == "module":
        return {0, 1}
    lines = {node.lineno}
    lines.update(d.lineno for d in getattr(node, "decorator_list", []))
    return lines


# ---------------------------------------------------------------------- build -> source coordinates
def _is_probe(call: ast.Call) -> bool:
    func = call.func
    if isinstance(func, ast.Attribute):
        func = func.value
    return isinstance(func, ast.Name) and func.id.startswith("_mantis_")


def _calls_in_order(tree: ast.AST, skip_probes: bool) -> list[ast.Call]:
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and not (skip_probes and _is_probe(n))]
    return sorted(calls, key=lambda n: (n.lineno, n.col_offset, -n.end_lineno, -n.end_col_offset))


def _loops_in_order(tree: ast.AST) -> list[ast.AST]:
    loops = [n for n in ast.walk(tree) if isinstance(n, (ast.For, ast.AsyncFor))]
    return sorted(loops, key=lambda n: (n.lineno, n.col_offset))


def _span(node: ast.AST) -> tuple[int, int, int, int]:
    return (node.lineno, node.col_offset, node.end_lineno, node.end_col_offset)


def _units_in_order(tree: ast.AST) -> list[ast.AST]:
    kinds = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda, ast.ListComp, ast.SetComp,
             ast.DictComp, ast.GeneratorExp)
    units = [n for n in ast.walk(tree) if isinstance(n, kinds)]
    return sorted(units, key=lambda n: (n.lineno, n.col_offset))


def _first_line(node: ast.AST) -> int:
    return min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])


_SAME: dict = {}  # a file copied unchanged into the build: same coordinates


def build_to_source(raw: dict[str, Any], build: Path, log=lambda _m: None) -> dict[str, Any]:
    """Observations recorded on an instrumented build (``mantispy instrument`` output) in the source's
    coordinates. Files whose source changed since the build (sha256 in the manifest) are dropped."""
    from mantispy.instrument.manifest import Manifest

    manifest = Manifest.load(build)
    source_root = Path(manifest.source_root)
    records = {f.path: f for f in manifest.files}
    site_maps: dict[str, dict[tuple, tuple] | None] = {}
    line_maps: dict[str, dict[int, int] | None] = {}
    hashes: dict[str, str] = {}
    for rel in raw.get("files", {}):
        record = records.get(rel)
        original = source_root / rel if source_root.is_dir() else source_root
        try:
            data = original.read_bytes()
        except OSError:
            data = None
        if record is None or data is None or hashlib.sha256(data).hexdigest() != record.sha256:
            log(f"{rel}: the source changed since {build} was instrumented (or is missing); its observations are dropped")
            site_maps[rel] = line_maps[rel] = None
            continue
        hashes[rel] = record.sha256
        if record.status != "instrumented":  # copied unchanged: same coordinates
            site_maps[rel] = line_maps[rel] = _SAME
            continue
        try:
            built = ast.parse((Path(build) / rel).read_bytes())
            source = ast.parse(data)
        except (OSError, SyntaxError) as exc:
            log(f"{rel}: cannot parse ({exc}); its observations are dropped")
            site_maps[rel] = line_maps[rel] = None
            continue
        ours, theirs = _calls_in_order(built, True), _calls_in_order(source, False)
        if len(ours) != len(theirs):
            log(f"{rel}: the build has {len(ours)} calls of the program, the source {len(theirs)}; its call sites are dropped")
            site_maps[rel] = None
        else:
            site_maps[rel] = {_span(a): _span(b) for a, b in zip(ours, theirs)}
            loops, their_loops = _loops_in_order(built), _loops_in_order(source)
            if len(loops) == len(their_loops):  # a ``for`` statement stepping a generator (3.11, 3.12)
                site_maps[rel].update({_span(a): _span(b) for a, b in zip(loops, their_loops)})
        ours_u, theirs_u = _units_in_order(built), _units_in_order(source)
        line_maps[rel] = ({_first_line(a): _first_line(b) for a, b in zip(ours_u, theirs_u)} | {1: 1}
                          if len(ours_u) == len(theirs_u) else None)

    def site(s: list) -> list | None:
        mapping = site_maps.get(s[0])
        if mapping is None or mapping is _SAME:
            return None if mapping is None else list(s[:5])
        target = mapping.get(tuple(s[1:5]))
        return [s[0], *target] if target else None

    def code(c: list) -> list | None:
        mapping = line_maps.get(c[0])
        if mapping is None or mapping is _SAME:
            return None if mapping is None else list(c)
        return [c[0], c[1], mapping.get(int(c[2]), int(c[2]))]

    out = recorder.empty(str(source_root))
    out["files"] = hashes
    out["runs"] = list(raw.get("runs", []))
    calls = set()
    for c in raw.get("calls", []):
        s, callee = site(c[:5]), code(c[5:])
        if s is not None and callee is not None:
            calls.add((*s, *callee))
    out["calls"] = [list(c) for c in sorted(calls)]
    out["reached"] = [list(r) for r in sorted({tuple(m) for m in map(site, raw.get("reached", [])) if m is not None})]
    for key in ("started", "uncreated"):
        out[key] = [list(x) for x in sorted({tuple(m) for m in map(code, raw.get(key, [])) if m is not None})]
    return out


def record_build_run(raw_path: Path, build: Path, dest: Path, log=lambda _m: None) -> dict[str, Any] | None:
    """After ``mantispy run BUILD --observed-calls DEST``: map the run's raw observations to source
    coordinates and merge them into DEST. Returns what DEST now holds (None if the run wrote nothing)."""
    if not Path(raw_path).exists():
        return None
    raw = json.loads(Path(raw_path).read_text(encoding="utf-8"))
    return recorder.merge_into(str(dest), build_to_source(raw, Path(build), log))
