"""Program counts of both versions (issue 22: "mantispy's own program counts side by side" with the
counters): each version's source instrumented into a temporary folder (loops, calls and exception
handlers only: no values, no branch arms), then run once per input with its features collected, and
the counts summed per function and kind.

The counts are exact, so one run per version and input is enough; both versions run with the same hash
seed (``PYTHONHASHSEED=0`` unless the campaign sets one), so a set's iteration order, and the loops that
stop early over it, are the same in both. Runs are interleaved in a seeded random order like the counter
runs and go through the profiler's :func:`mantispy.profiler.execute` (timeout, process group killed).
Nothing is written outside the temporary folder.
"""

from __future__ import annotations

import json
import os
import random
import sys
import tempfile
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from mantispy.campaign import CampaignSpec
from mantispy.core.launch import program_argv
from mantispy.diagnosis.profiling import BASELINE, CANDIDATE
from mantispy.diagnosis.types import COUNT_KINDS
from mantispy.instrument.manifest import FAMILY_OF_KIND, Manifest
from mantispy.profiler import INSTRUMENTED, RunTask, execute


@dataclass(frozen=True)
class CountRun:
    """One version's program counts on one input: FILE:QUALNAME -> kind -> count."""

    version: str  # BASELINE or CANDIDATE
    input_id: str
    status: str  # "ok", "failed", "timeout", "error"
    counts: dict[str, dict[str, float]]
    functions: frozenset[str]  # every function of the version's manifest (those never run count 0)
    message: str = ""


def function_key(file: str, qualname: str) -> str:
    """How counts name a function: ``FILE:QUALNAME`` as the manifest writes it (no ``<locals>``)."""
    return f"{file}:{qualname}"


def manifest_name(change_name: str) -> str:
    """A change set's ``FILE:QUALNAME`` (``outer.<locals>.inner``) as counts name it (``outer.inner``)."""
    return change_name.replace(".<locals>", "")


def _summed(manifest: Manifest, features: dict[str, float]) -> dict[str, dict[str, float]]:
    owners = {f.id: (function_key(f.file, f.qualname), f.kind) for f in manifest.features if f.kind in COUNT_KINDS}
    counts: dict[str, dict[str, float]] = defaultdict(dict)
    for feature_id, value in features.items():
        owner = owners.get(feature_id)
        if owner is None or not isinstance(value, (int, float)) or isinstance(value, bool):
            continue
        name, kind = owner
        counts[name][kind] = counts[name].get(kind, 0.0) + float(value)
    return dict(counts)


def _instrumented(source: Path, out: Path, exclude: list[str], log: Callable[[str], None]) -> Manifest:
    from mantispy.instrument.transformer import Options
    from mantispy.instrument.tree import instrument_tree

    options = Options(families=frozenset(FAMILY_OF_KIND[kind] for kind in COUNT_KINDS))
    result = instrument_tree(source, out, options, exclude)
    for error in result.errors:
        log(f"warning: {error} (left uncounted)")
    return result.manifest


def _task(spec: CampaignSpec, source: Path, built: Path, record, version: str) -> RunTask:
    root = built  # the instrumented copy of the version's folder (or of its one file)
    python = sys.executable
    if spec.entry.kind == "callable":
        program = [python, "-m", "mantispy.runtime.entry", spec.entry.target, json.dumps(record.kwargs or {})]
    else:
        invocation = spec.entry.invocation(record.argv)
        if not source.is_dir() and invocation[0] != "-m":
            invocation = [str(built / source.name), *invocation[1:]]
        program = program_argv(root, invocation, python)
    pythonpath = os.pathsep.join([str(root), *([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])])
    env = {"PYTHONHASHSEED": "0", **spec.env, "PYTHONPATH": pythonpath}
    return RunTask(record.id, 0, f"{version}-{INSTRUMENTED}", program, env, str(spec.workdir), spec.timeout,
                   collect_features=True)


def count_versions(spec: CampaignSpec, sources: dict[str, Path], records: list, seed: int,
                   progress: Callable[[int, int, CountRun], None] | None = None,
                   log: Callable[[str], None] = lambda _m: None) -> list[CountRun]:
    """Instrument both versions and run each once per input (interleaved, shuffled with ``seed``)."""
    exclude = list(spec.instrument.get("exclude", []))
    runs: list[CountRun] = []
    with tempfile.TemporaryDirectory(prefix="mantis-diagnose-counts-") as tmp:
        built: dict[str, tuple[Path, Manifest]] = {}
        for version in (BASELINE, CANDIDATE):
            source = sources[version]
            out = Path(tmp) / version
            built[version] = (out, _instrumented(source, out, exclude, log))
        functions = {version: frozenset(function_key(f.file, f.qualname) for f in manifest.features)
                     for version, (_, manifest) in built.items()}
        plan = [(version, record) for version in (BASELINE, CANDIDATE) for record in records]
        random.Random(seed).shuffle(plan)
        for number, (version, record) in enumerate(plan, 1):
            out, manifest = built[version]
            result = execute(_task(spec, sources[version], out, record, version))
            message = (result.stderr_tail.strip().splitlines()[-1:] or [""])[0]
            counts = _summed(manifest, result.features) if result.status == "ok" else {}
            run = CountRun(version, record.id, result.status, counts, functions[version],
                           "" if result.status == "ok" else message)
            runs.append(run)
            if progress is not None:
                progress(number, len(plan), run)
    return runs
