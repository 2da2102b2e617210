"""``mantispy calibrate``: re-measure a predictor's seconds per unit of work on this machine.

A ``work_s`` model predicts CPU seconds *of the build machine* from the program's own work (see
:mod:`mantispy.modeling.work`). On another machine the same work takes a different time. ``calibrate``
runs the original program on a few inputs the build recorded (spread over the cost range, or inputs
given on the command line), measures each one's CPU time (median of ``repeats`` runs), and stores the
median ratio of measured CPU time to the predicted work in the package's ``calibration.json``, which
the package's ``predict`` multiplies ``work_s`` estimates by.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mantispy.build_record import BuildRecord, BuildRecordError
from mantispy.core.launch import program_argv
from mantispy.modeling.work import work_fallback
from mantispy.profiler import RunTask, environment_fingerprint, execute


class CalibrationError(Exception):
    """Calibration cannot be done; the message says why and what to do."""


def _task(record: BuildRecord, item: dict[str, Any], repeat: int) -> RunTask:
    root = Path(record.source)
    root = root if root.is_dir() else root.parent
    python = sys.executable
    if record.entry_kind == "callable":
        argv = [python, "-m", "mantispy.runtime.entry", record.entry, json.dumps(item.get("kwargs") or {})]
    elif record.entry_kind == "module":
        argv = program_argv(root, ["-m", record.entry.removeprefix("-m ").strip(), *item["argv"]], python)
    else:
        argv = program_argv(root, [record.entry, *item["argv"]], python)
    pythonpath = os.pathsep.join([str(root), *([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])])
    return RunTask(item["id"], repeat, "original", argv, {"PYTHONPATH": pythonpath}, item.get("cwd") or os.getcwd(),
                   600.0, collect_features=False)


def calibrate(folder: Path, module, repeats: int = 3, log: Callable[[str], None] = lambda _m: None) -> dict[str, Any]:
    """Measure and write ``calibration.json`` for the predictor package in ``folder`` (imported as
    ``module``); returns what was written."""
    folder = Path(folder)
    try:
        record = BuildRecord.load(folder)
    except BuildRecordError as exc:
        raise CalibrationError(str(exc)) from None
    models = json.loads((folder / "models.json").read_text(encoding="utf-8"))["metrics"]
    work_metrics = [m for m, model in models.items() if model.get("work")]
    if not work_metrics:
        fallback = work_fallback(models.get("work_s") or {})
        if fallback is not None:
            raise CalibrationError(f"{folder}: nothing to calibrate: {fallback.get('reason')}, so it is in this "
                                   "build machine's seconds")
        raise CalibrationError(f"{folder}: no work_s model to calibrate; build with --metric work")
    model = models[work_metrics[0]]
    if model.get("method") == "constant" or not model.get("scaling"):
        raise CalibrationError(f"{folder}: nothing to calibrate: its {work_metrics[0]} model is a constant (no feature "
                               "beat a constant on cross-validation), so CPU time over it would measure which inputs "
                               "were run, not this machine")
    items = record.calibration_inputs
    if not items:
        raise CalibrationError(f"{folder}/build.json: records no calibration inputs; rebuild with this mantispy")
    factor_now = module.seconds_per_unit()
    ratios, measured = [], []
    for item in items:
        runs = [execute(_task(record, item, r)) for r in range(repeats)]
        failed = [r for r in runs if r.status != "ok"]
        if failed:
            tail = (failed[0].stderr_tail or "").strip().splitlines()[-1:] or [failed[0].status]
            raise CalibrationError(f"input {item['id']}: the program failed here ({tail[0][:200]}); check that "
                                   f"{record.source} and its inputs exist on this machine")
        cpu = statistics.median(r.metrics["cpu_s"] for r in runs)
        argv = None if record.entry_kind == "callable" else item["argv"]
        estimate = module.predict(argv, cwd=item.get("cwd"), extrapolate=True, **(item.get("kwargs") or {}))
        work = estimate[work_metrics[0]] / factor_now  # the build machine's seconds
        ratios.append(cpu / work)
        measured.append({"input_id": item["id"], "cpu_s": cpu, "work_s": work})
        log(f"input {item['id']}: CPU {cpu:.3f} s, work {work:.3f} s of the build machine")
    data = {"seconds_per_unit": statistics.median(ratios), "inputs": measured, "repeats": repeats,
            "machine": environment_fingerprint(),
            "created": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")}
    tmp = folder / "calibration.json.tmp"
    tmp.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    tmp.replace(folder / "calibration.json")
    return data
