"""Profiling both versions over a campaign's inputs: each run is the campaign's entry under the
per-function counter profiler (:mod:`mantispy.runtime.function_counters`), with the version's source
folder first on the path, the functions a change touched chosen, one run per input and repeat.

Baseline and candidate runs are interleaved in one seeded random order, so a burst of machine load
falls on both versions alike (the profiler's protocol, issue 17). Runs go through the profiler's
:func:`mantispy.profiler.execute` (timeout, the process group killed, counters and CPU time of the
whole process).
"""

from __future__ import annotations

import json
import os
import random
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from mantispy.campaign import CampaignSpec
from mantispy.core.launch import program_argv
from mantispy.counters.function_profile import FunctionCounts, FunctionProfileError, load
from mantispy.profiler import RunTask, execute
from mantispy.runtime import function_counters

BASELINE, CANDIDATE = "baseline", "candidate"


@dataclass(frozen=True)
class VersionRun:
    """One profiled run of one version on one input."""

    version: str  # BASELINE or CANDIDATE
    input_id: str
    repeat: int
    status: str  # "ok", "failed", "timeout", "error"
    cpu_s: float  # user + sys of the whole process
    functions: dict[str, FunctionCounts]  # by the function's name in the version's own source
    events: list[str]  # the counters each function carries
    message: str = ""  # why a run that is not ok failed (the tail of its stderr)


def entry_root(spec: CampaignSpec, source: Path) -> Path:
    """The folder a version's imports resolve against (the campaign's source swapped for ``source``)."""
    return source if source.is_dir() else source.parent


def _task(spec: CampaignSpec, source: Path, record, repeat: int, version: str, patterns: list[str],
          out: Path) -> RunTask:
    root = entry_root(spec, source)
    python = sys.executable
    if spec.entry.kind == "callable":
        program = ["-m", "mantispy.runtime.entry", spec.entry.target, json.dumps(record.kwargs or {})]
    else:
        invocation = spec.entry.invocation(record.argv)
        if not source.is_dir() and invocation[0] != "-m":
            invocation = [str(source), *invocation[1:]]
        program = program_argv(root, invocation, python)[1:]
    pythonpath = os.pathsep.join([str(root), *([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])])
    env = {**spec.env, "PYTHONPATH": pythonpath, function_counters.ENV_PATTERNS: ",".join(patterns),
           function_counters.ENV_OUT: str(out), function_counters.ENV_ROOT: str(root)}
    return RunTask(record.id, repeat, version, [python, "-m", "mantispy.runtime.function_counters", *program], env,
                   str(spec.workdir), spec.timeout, collect_features=False)


def profile_versions(spec: CampaignSpec, sources: dict[str, Path], patterns: dict[str, list[str]], records: list,
                     repeats: dict[str, int], seed: int,
                     progress: Callable[[int, int, VersionRun], None] | None = None) -> list[VersionRun]:
    """Run every (version, input, repeat) once, interleaved in a random order seeded by ``seed``."""
    plan = [(version, record, repeat) for version in (BASELINE, CANDIDATE) for record in records
            for repeat in range(repeats[version])]
    random.Random(seed).shuffle(plan)
    runs: list[VersionRun] = []
    with tempfile.TemporaryDirectory(prefix="mantis-diagnose-") as tmp:
        for number, (version, record, repeat) in enumerate(plan, 1):
            out = Path(tmp) / f"{version}-{number}.json"
            task = _task(spec, sources[version], record, repeat, version, patterns[version], out)
            result = execute(task)
            functions: dict[str, FunctionCounts] = {}
            events: list[str] = []
            status, message = result.status, result.stderr_tail.strip().splitlines()[-1:] or [""]
            if status == "ok":
                try:
                    profile = load(out)
                    functions, events = profile.functions, [*profile.events]
                except FunctionProfileError as exc:
                    status, message = "failed", [str(exc)]
            run = VersionRun(version, record.id, repeat, status, float(result.metrics.get("cpu_s", 0.0)), functions,
                             events, message[0])
            runs.append(run)
            if progress is not None:
                progress(number, len(plan), run)
    return runs
