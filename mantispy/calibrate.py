"""``mantispy calibrate``: re-measure a predictor's seconds per unit of work on this machine.

A ``work_s`` model predicts CPU seconds *of the build machine* from the program's own work (see
:mod:`mantispy.modeling.work`). On another machine the same work takes a different time. ``calibrate``
runs the original program on a few inputs the build recorded (spread over the cost range), as the
campaign ran them (its ``[env]``), from the program's folder and the inputs' folder the build recorded or
those given for this machine (``source``, ``workdir``), measures each one's CPU time (median of
``repeats`` runs), and stores the median ratio of measured CPU time to the predicted work in the
package's ``calibration.json``, which the package's ``predict`` multiplies ``work_s`` estimates by.
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
from mantispy.core.launch import LaunchError, program_argv
from mantispy.modeling.work import work_fallback
from mantispy.profiler import RunTask, environment_fingerprint, execute


class CalibrationError(Exception):
    """Calibration failed; the message says why and what to do."""


class CalibrationRefused(CalibrationError):
    """Calibration cannot start: what it was given (the predictor, the folders) does not allow it."""


def _task(record: BuildRecord, item: dict[str, Any], repeat: int, root: Path, cwd: str) -> RunTask:
    python = sys.executable
    try:
        if record.entry_kind == "callable":
            argv = [python, "-m", "mantispy.runtime.entry", record.entry, json.dumps(item.get("kwargs") or {})]
        elif record.entry_kind == "module":
            argv = program_argv(root, ["-m", record.entry.removeprefix("-m ").strip(), *item["argv"]], python)
        else:
            argv = program_argv(root, [record.entry, *item["argv"]], python)
    except LaunchError as exc:
        raise CalibrationRefused(f"{exc}; give the program's folder on this machine with --source") from None
    env = {str(k): str(v) for k, v in (item.get("env") or {}).items()}  # the campaign's [env], as the build ran it
    extra = env.get("PYTHONPATH") or os.environ.get("PYTHONPATH")
    env["PYTHONPATH"] = os.pathsep.join([str(root), *([extra] if extra else [])])
    return RunTask(item["id"], repeat, "original", argv, env, cwd, 600.0, collect_features=False)


def _source_root(record: BuildRecord, source: Path | None) -> Path:
    root = Path(source) if source is not None else Path(record.source)
    root = root if root.is_dir() else root.parent
    if not root.is_dir():
        raise CalibrationRefused(f"{root}: the program's source is not here (the build ran it from {record.source}); "
                                 "give its folder on this machine with --source")
    return root


def _set_aside_unreadable(folder: Path, module, log: Callable[[str], None]) -> float:
    """The package's current seconds per unit; an unreadable calibration.json (predictions refuse it) is kept
    under another name and the build machine's 1.0 used, so that calibrating again repairs it."""
    try:
        return float(module.seconds_per_unit())
    except module.PredictionError:
        path = folder / "calibration.json"
        kept = next(path.with_name(f"calibration.unreadable-{n}.json") for n in range(1, 10**6)
                    if not path.with_name(f"calibration.unreadable-{n}.json").exists())
        path.replace(kept)
        log(f"{path}: unreadable; kept as {kept.name}, measured afresh")
        return 1.0


def calibrate(folder: Path, module, repeats: int = 3, log: Callable[[str], None] = lambda _m: None,
              source: Path | None = None, workdir: Path | None = None) -> dict[str, Any]:
    """Measure and write ``calibration.json`` for the predictor package in ``folder`` (imported as
    ``module``); returns what was written. ``source``: the program's folder on this machine (default: where
    the build ran it); ``workdir``: the folder the inputs' paths are relative to (default: the build's).
    Raises :class:`CalibrationRefused` where it cannot start, :class:`CalibrationError` where a run failed."""
    folder = Path(folder)
    try:
        record = BuildRecord.load(folder)
    except BuildRecordError as exc:
        raise CalibrationRefused(str(exc)) from None
    models = json.loads((folder / "models.json").read_text(encoding="utf-8"))["metrics"]
    work_metrics = [m for m, model in models.items() if model.get("work")]
    if not work_metrics:
        fallback = work_fallback(models.get("work_s") or {})
        if fallback is not None:
            raise CalibrationRefused(f"{folder}: nothing to calibrate: {fallback.get('reason')}, so it is in this "
                                   "build machine's seconds")
        raise CalibrationRefused(f"{folder}: no work_s model to calibrate; build with --metric work")
    model = models[work_metrics[0]]
    if model.get("method") == "constant" or not model.get("scaling"):
        raise CalibrationRefused(f"{folder}: nothing to calibrate: its {work_metrics[0]} model is a constant (no feature "
                               "beat a constant on cross-validation), so CPU time over it would measure which inputs "
                               "were run, not this machine")
    items = record.calibration_inputs
    if not items:
        raise CalibrationRefused(f"{folder}/build.json: records no calibration inputs; rebuild with this mantispy")
    root = _source_root(record, source)
    places = {item["id"]: str(workdir) if workdir is not None else (item.get("cwd") or os.getcwd()) for item in items}
    missing = next(((key, place) for key, place in places.items() if not Path(place).is_dir()), None)
    if missing is not None:
        raise CalibrationRefused(f"input {missing[0]}: its folder {missing[1]} is not here; give the folder its paths "
                                 "are relative to on this machine with --workdir")
    factor_now = _set_aside_unreadable(folder, module, log)
    ratios, measured = [], []
    for item in items:
        cwd = places[item["id"]]
        runs = [execute(_task(record, item, r, root, cwd)) for r in range(repeats)]
        failed = [r for r in runs if r.status != "ok"]
        if failed:
            tail = (failed[0].stderr_tail or "").strip().splitlines()[-1:] or [failed[0].status]
            raise CalibrationError(f"input {item['id']}: the program failed here ({tail[0][:200]}); check that "
                                   f"{root} and the input's files under {cwd} are the build's")
        cpu = statistics.median(r.metrics["cpu_s"] for r in runs)
        argv = None if record.entry_kind == "callable" else item["argv"]
        estimate = module.predict(argv, cwd=cwd, extrapolate=True, **(item.get("kwargs") or {}))
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
