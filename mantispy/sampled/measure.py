"""Run an instrumented program on the sample of every input of a campaign (see
:mod:`mantispy.runtime.sampled_input`) and keep its counters: the sampled table."""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from mantispy.campaign import CampaignSpec, InputRecord
from mantispy.core.launch import program_argv
from mantispy.profiler import RunTask, execute
from mantispy.runtime.descriptors import argv_files
from mantispy.runtime.sampled_input import sample_input

from .types import SampledRun, SampledTable

VARIANT = "sampled"


def is_counter(feature: str) -> bool:
    """Whether a feature id names a counter a sample can be scaled by (not a recorded value)."""
    return ":value:" not in feature


def measure_input(spec: CampaignSpec, root: Path, record: InputRecord, fraction: float) -> SampledRun | str:
    """One input's sampled run of the instrumented program in ``root``; a string says why there is none."""
    if spec.entry.kind == "callable":
        return "the entry takes keyword arguments, not files"
    files = list(record.files) or argv_files(list(record.argv), str(spec.workdir))
    if not files:
        return "no input file to sample"
    with tempfile.TemporaryDirectory(prefix="mantis-sample-") as folder:
        try:
            sampled = sample_input(list(record.argv), files, folder, fraction, cwd=str(spec.workdir))
        except OSError as exc:
            return f"cannot read an input file: {exc}"
        argv = program_argv(root, spec.entry.invocation(sampled.argv), sys.executable)
        task = RunTask(record.id, 0, VARIANT, argv, {**spec.env, "PYTHONPATH": str(root)}, str(spec.workdir),
                       spec.timeout, collect_features=True)
        result = execute(task)
    if result.status == "timeout" or not result.features:
        return f"the sampled run left no counts ({result.status}, exit {result.returncode})"
    counts = {k: float(v) for k, v in result.features.items()
              if is_counter(k) and isinstance(v, (int, float)) and not isinstance(v, bool)}
    return SampledRun(scale=sampled.scale, cpu_s=float(result.metrics["cpu_s"]), returncode=int(result.returncode or 0),
                      counts=counts)


def measure(spec: CampaignSpec, root: Path, fraction: float, inputs: list[InputRecord] | None = None,
            jobs: int = 1, log: Callable[[str], None] = lambda _m: None) -> SampledTable:
    """The sampled table of ``inputs`` (default: the campaign's), ``jobs`` runs at a time."""
    records = list(spec.inputs if inputs is None else inputs)
    table = SampledTable(fraction=fraction, program=str(root))
    log(f"running the instrumented program on {fraction:.1%} samples of {len(records)} input(s)")
    with ThreadPoolExecutor(max(1, jobs)) as pool:
        for record, outcome in zip(records, pool.map(lambda r: measure_input(spec, root, r, fraction), records)):
            if isinstance(outcome, str):
                table.failed[record.id] = outcome
            else:
                table.runs[record.id] = outcome
    return table
