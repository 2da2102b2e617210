"""Predictor packages: what ``mantispy build`` ships, and its validation.

A predictor package ``predictors/NAME/`` holds:

* ``__init__.py``: ``predict(argv=None, *, cwd=None, timeout=None, **kwargs) -> {metric: estimate}`` and
  ``features(...)``; standard library only (never mantispy), so a scheduler can vendor the folder;
* ``_model.py``: the stdlib evaluation of a model polynomial (a copy of
  :func:`mantispy.modeling.artefact.predict`);
* ``models.json``: every metric's model (JSON, never pickle), stamped with the build id;
* ``evaluator/``: the combined feature evaluator (one slice for all selected features, see
  :mod:`mantispy.slicer.emit`), stamped with the same build id;
* ``build.json``: the build record (cost-loop rounds, validation, costs; ``mantispy report`` reads it);
* ``README.md``: the features with their source lines, the measured accuracy and evaluator cost.

Each ``predict`` runs the evaluator in a fresh interpreter: no state survives between calls, any number
of threads may call it at once, and the write guard of the evaluator never touches the caller's process.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import shutil
import statistics
import time
from pathlib import Path
from typing import Any

from mantispy.errors import BuildError
from mantispy.modeling import artefact, selection
from mantispy.modeling.fitting import measured_metric
from mantispy.runtime import descriptors
from mantispy.runtime.descriptors import INPUT_PREFIX, describe_input, prefixed_numbers

MODELS_FORMAT = "mantispy-predictor-models"
MODELS_VERSION = 1


def _relative_errors(pairs: list[tuple[float, float]]) -> dict[str, Any]:
    errors = [abs(p - a) / a for p, a in pairs if a]
    if not errors:
        return {"median_rel_error": None, "mean_rel_error": None, "n": 0}
    return {"median_rel_error": statistics.median(errors), "mean_rel_error": statistics.fmean(errors), "n": len(errors)}


COLD_SAMPLES = 5  # held-out inputs also evaluated in a fresh interpreter, to report that cost too


def validate(builder, session, models: dict[str, dict[str, Any]], frame, test_ids: list[str],
             record: dict[str, Any], out: Path) -> None:
    """Emit the combined evaluator, run it on the held-out inputs, and fill ``record`` with the
    validation of every metric (model vs actual vs black box), the evaluator's cost and its fidelity."""
    from mantispy.slicer.evaluators import EvaluatorError, run_evaluator
    from mantispy.slicer.warm_client import WarmError, WarmEvaluator

    log = builder.log
    staging = builder.work / "package"
    if staging.exists():
        shutil.rmtree(staging)
    staging.mkdir(parents=True)
    used = sorted({f for m in models.values() for f in m["scaling"]})
    selected = [f for f in used if not f.startswith(INPUT_PREFIX)]  # the evaluator's; descriptors are read
    k = int(builder.spec.instrument.get("k", 5))
    evaluator_dir = staging / "evaluator"
    if selected:
        result, report = session.emit_combined(selected, evaluator_dir, k)
        kept, total, files = result.statements_kept, result.statements_total, len(report.files)
    else:  # every model is a constant: nothing to evaluate
        evaluator_dir.mkdir()
        kept, total, files = 0, 0, 0
    log(f"combined evaluator: {len(selected)} feature(s), {kept} of {total} statements")

    ids = test_ids if builder.options.validate_inputs is None else test_ids[: builder.options.validate_inputs]
    records = {r.id: r for r in builder.spec.inputs}
    rows = frame[frame["input_id"].isin(ids)]
    actual = {m: rows.groupby("input_id")[f"metric:{measured_metric(m)}"].mean().to_dict() for m in models}
    first = rows[rows["repeat"] == rows.groupby("input_id")["repeat"].transform("min")].set_index("input_id")
    blackbox = {m: _blackbox_by_input(model) for m, model in models.items()}
    points: dict[str, list[dict[str, Any]]] = {m: [] for m in models}
    costs: list[dict[str, Any]] = []
    mismatches: list[dict[str, Any]] = []
    failures: list[dict[str, Any]] = []
    log(f"validating on {len(ids)} held-out input(s)")
    warm = WarmEvaluator(evaluator_dir) if selected else None
    startup_s = None
    if warm is not None:
        started = time.perf_counter()
        try:
            warm.start()
        except WarmError as exc:
            raise BuildError(f"the combined evaluator does not start: {exc}") from None
        startup_s = time.perf_counter() - started
    cold: list[float] = []
    for n, iid in enumerate(ids):
        rec = records[iid]
        if warm is not None:
            try:
                values, seconds = warm.evaluate(list(rec.argv), rec.kwargs, cwd=str(builder.spec.workdir))
            except WarmError as exc:
                failures.append({"input_id": iid, "error": str(exc)})
                continue
            if n < COLD_SAMPLES:  # the fresh-interpreter way (predict(warm=False)), on a few inputs
                try:
                    cold.append(run_evaluator(evaluator_dir, list(rec.argv), cwd=builder.spec.workdir,
                                              kwargs=rec.kwargs)[1])
                except EvaluatorError:
                    pass
        else:
            values, seconds = {}, 0.0
        values = {**values, **prefixed_numbers(describe_input(list(rec.argv), rec.kwargs, cwd=str(builder.spec.workdir)))}
        stored = first.loc[iid]
        for fid in selected:
            expected = float(stored.get(fid, 0.0)) if fid in first.columns else 0.0
            if abs(values.get(fid, 0.0) - expected) > 1e-9 * max(1.0, abs(expected)):
                mismatches.append({"input_id": iid, "feature": fid, "evaluator": values.get(fid), "program": expected})
        wall = actual["wall_s"][iid] if "wall_s" in actual else float(stored["metric:wall_s"])
        costs.append({"input_id": iid, "evaluator_s": seconds, "actual_s": wall, "fraction": seconds / wall})
        for metric, model in models.items():
            estimate = artefact.predict(model, values)
            band = artefact.interval(model, estimate)
            points[metric].append({"input_id": iid, "actual": actual[metric][iid], "predicted": estimate,
                                   "low": band[0] if band else None, "high": band[1] if band else None,
                                   "blackbox": blackbox[metric].get(iid)})
    for metric, model in models.items():
        pts = points[metric]
        bb = model.get("evaluation", {}).get("blackbox", {})
        validation = _relative_errors([(p["predicted"], p["actual"]) for p in pts])
        validation["interval_coverage"] = selection.coverage(
            [(p["actual"], p["low"], p["high"]) for p in pts if p["low"] is not None])
        validation["interval_level"] = (model.get("interval") or {}).get("level")
        if bb.get("available"):
            bb_pairs = [(p["blackbox"], p["actual"]) for p in pts if p["blackbox"] is not None]
            validation["blackbox"] = {"available": True, **_relative_errors(bb_pairs)}
        else:
            validation["blackbox"] = {"available": False, "reason": bb.get("reason", "not fitted")}
        validation["points"] = pts
        record["metrics"][metric]["validation"] = validation
    if warm is not None:
        warm.close()
    fractions = [c["fraction"] for c in costs]
    median_wall = statistics.median(c["actual_s"] for c in costs) if costs else None
    record["evaluator"] = {
        "features": selected, "statements_kept": kept, "statements_total": total, "files": files,
        "cost": costs,
        "median_fraction": statistics.median(fractions) if fractions else None,
        "max_fraction": max(fractions) if fractions else None,
        "median_s": statistics.median(c["evaluator_s"] for c in costs) if costs else None,
        "warm_startup_s": startup_s,
        "cold_median_s": statistics.median(cold) if cold else None,
        "cold_median_fraction": statistics.median(cold) / median_wall if cold and median_wall else None,
        "fidelity": {"inputs": len(ids) - len(failures), "features": len(selected),
                     "mismatches": mismatches[:50], "mismatch_count": len(mismatches),
                     "agreed": (len(ids) - len(failures)) * len(selected) - len(mismatches)},
        "failures": failures,
        "slicing": "hybrid" if getattr(session, "observed_calls", None) is not None else "static",
        "calls_resolved_dynamically": len(getattr(session.sdg, "observed_sites", {}) or {}),
    }
    if (mismatches or failures) and getattr(session, "observed_calls", None) is not None:
        # Hybrid slices are trusted only once validated on held-out inputs: this one was not.
        from mantispy.slicer.evaluators import SliceSession

        log(f"the hybrid evaluator disagrees with the program on {len(mismatches)} value(s) / fails on "
            f"{len(failures)} held-out input(s): validating the static slice instead")
        rejected = {"mismatch_count": len(mismatches), "failures": len(failures),
                    "first": (mismatches or failures)[0]}
        static = SliceSession(builder.spec.source_root, session.entry, reuse=session)
        validate(builder, static, models, frame, test_ids, record, out)
        record["evaluator"]["hybrid_rejected"] = rejected


def _blackbox_by_input(model: dict[str, Any]) -> dict[str, float]:
    evaluation = model.get("evaluation", {})
    bb = evaluation.get("blackbox", {})
    if not bb.get("available"):
        return {}
    found: dict[str, float] = {}
    for row, value in zip(evaluation.get("test_predictions", []), bb.get("test_predictions", [])):
        found.setdefault(row["input_id"], float(value))
    return found


def build_id(record: dict[str, Any], models: dict[str, dict[str, Any]], evaluator_dir: Path) -> str:
    """A digest of the program source, the models and the evaluator's files."""
    digest = hashlib.sha256(record["source_hash"].encode())
    digest.update(json.dumps(models, sort_keys=True).encode())
    for path in sorted(p for p in evaluator_dir.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        digest.update(path.relative_to(evaluator_dir).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def write_package(staging: Path, out: Path, record: dict[str, Any], models: dict[str, dict[str, Any]]) -> Path:
    """Write the predictor package into ``staging`` (which holds ``evaluator/``), then move it to ``out``
    (an earlier predictor there is replaced only once the new one is complete)."""
    staging, out = Path(staging), Path(out)
    bid = build_id(record, models, staging / "evaluator")
    record["build_id"] = bid
    (staging / "evaluator" / "BUILD_ID").write_text(bid + "\n", encoding="utf-8")
    (staging / "models.json").write_text(json.dumps(
        {"format": MODELS_FORMAT, "version": MODELS_VERSION, "build_id": bid, "name": record["name"],
         "metrics": models}, indent=1) + "\n", encoding="utf-8")
    (staging / "build.json").write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    (staging / "_model.py").write_text(_MODEL_HEADER + inspect.getsource(artefact.predict) + "\n\n"
                                       + inspect.getsource(artefact.interval), encoding="utf-8")
    from mantispy.slicer import warm_client

    (staging / "_warm.py").write_text(Path(warm_client.__file__).read_text(encoding="utf-8"), encoding="utf-8")
    (staging / "_descriptors.py").write_text(Path(descriptors.__file__).read_text(encoding="utf-8"), encoding="utf-8")
    features = record["evaluator"]["features"]
    inputs = sorted({f for m in models.values() for f in m["scaling"] if f.startswith(INPUT_PREFIX)})
    init = (_INIT_TEMPLATE.replace("@NAME@", record["name"]).replace("@METRICS@", repr(tuple(models)))
            .replace("@CREATED@", record["created"]).replace("@BUILD_ID@", repr(bid))
            .replace("@ENTRY@", repr(record["entry"])).replace("@ENTRY_KIND@", repr(record["entry_kind"]))
            .replace("@FEATURES@", repr(tuple(features))).replace("@INPUTS@", repr(tuple(inputs))))
    (staging / "__init__.py").write_text(init, encoding="utf-8")
    (staging / "README.md").write_text(package_readme(record), encoding="utf-8")
    for name in ("__init__.py", "_model.py", "_warm.py", "_descriptors.py"):
        compile((staging / name).read_text(encoding="utf-8"), name, "exec")
    if out.exists():
        old = out.with_name(out.name + ".old")
        if old.exists():
            shutil.rmtree(old)
        out.rename(old)
        shutil.move(str(staging), str(out))
        shutil.rmtree(old)
    else:
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(staging), str(out))
    return out


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1%}"


def package_readme(record: dict[str, Any]) -> str:
    """The package's README: how to call it, its features, accuracy and cost."""
    lines = [
        f"# Predictor of `{record['name']}`",
        "",
        f"Generated by `mantispy build` on {record['created']} (build `{record.get('build_id', '?')}`) from "
        f"`{record['source']}`, entry `{record['entry']}`. Standard library only; vendor the whole folder.",
        "",
        "```python",
        "from predictors.NAME import predict      # this folder, as an importable package",
        "estimate = predict([\"ARG\", ...])        # " + ", ".join(f"estimate[{m!r}]" for m in record["metrics"]),
        "```",
        "",
        "or `mantispy predict PATH/TO/THIS/FOLDER -- ARGS...`. `predict` keeps a warm evaluator process (the "
        "program's modules imported once, a forked child per input: no state kept between calls, thread-safe); "
        "`predict(..., warm=False)` uses a fresh interpreter per call. An input the program rejects, a feature "
        "far outside its training range, or an evaluator failure raise `PredictionError`.",
        "",
        "## Accuracy on held-out inputs",
        "",
        "| metric | median rel. error | mean rel. error | black-box median | black-box mean | inputs |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for metric, data in record["metrics"].items():
        v = data.get("validation", {})
        bb = v.get("blackbox", {})
        lines.append(f"| {metric} | {_pct(v.get('median_rel_error'))} | {_pct(v.get('mean_rel_error'))} | "
                     f"{_pct(bb.get('median_rel_error')) if bb.get('available') else 'n/a'} | "
                     f"{_pct(bb.get('mean_rel_error')) if bb.get('available') else 'n/a'} | {v.get('n', 0)} |")
    ev = record.get("evaluator", {})
    from mantispy.verdicts import build_verdicts, noise_of

    noise = [f"{m} {_pct(noise_of(record, m))}" for m in record["metrics"] if noise_of(record, m) is not None]
    coverage = [f"{m} {_pct(d.get('validation', {}).get('interval_coverage'))}" for m, d in record["metrics"].items()
                if d.get("validation", {}).get("interval_coverage") is not None]
    lines += ["", "Noise floor (median deviation of one run from its input's median): " + (", ".join(noise) or "n/a")
              + ". Held-out inputs inside the p10-p90 interval (`predict(..., interval=True)`): "
              + (", ".join(coverage) or "n/a") + ".", "", "### Verdicts", ""]
    lines += [f"- {line}" for line in build_verdicts(record)] or ["- none"]
    lines += [
        "",
        f"Trained on {record['options']['train_fraction']:.0%} of {record['campaign']['inputs']} inputs. The black "
        "box is the same regression on the numbers visible in the input (arguments, file sizes).",
        "",
        "## Evaluator cost",
        "",
        f"One combined slice keeps {ev.get('statements_kept', 0)} of {ev.get('statements_total', 0)} statements. "
        f"Median cost per prediction {_pct(ev.get('median_fraction'))} of the program's run time "
        f"(max {_pct(ev.get('max_fraction'))}) with the warm evaluator `predict` keeps (it imports the program's "
        f"modules once, in {ev.get('warm_startup_s') or 0:.2f} s, then forks per input); "
        f"{_pct(ev.get('cold_median_fraction'))} with `predict(..., warm=False)` (a fresh interpreter per call).",
        "",
        "## Features",
        "",
        "| feature | kind | source | cost (% of run) | metrics |",
        "| --- | --- | --- | --- | --- |",
    ]
    for f in record["features"]:
        snippet = (f.get("snippet") or "").replace("|", "\\|")
        lines.append(f"| `{f['id']}` | {f.get('kind')} | {f.get('file')}:{f.get('line')} `{snippet}` | "
                     f"{_pct(f.get('cost_fraction'))} | {', '.join(f.get('metrics', []))} |")
    lines += ["", "## Polynomials", ""]
    for metric, data in record["metrics"].items():
        lines += [f"### {metric}", "", "```", *artefact.polynomial_text(data["model"]), "```", ""]
    lines += ["## Cost-loop rounds", "", "| metric | round | selected | rejected | held-out median error |",
              "| --- | --- | --- | --- | --- |"]
    for row in record.get("rounds", []):
        label = "judged ahead" if row.get("lookahead") else row["round"]
        lines.append(f"| {row['metric']} | {label} | {len(row['selected'])} | {len(row['rejected'])} | "
                     f"{_pct(row.get('median_rel_error'))} |")
    return "\n".join(lines) + "\n"


_MODEL_HEADER = ('"""A model polynomial, evaluated with the standard library (a copy of mantispy\'s artefact.predict)."""'
                 "\n\nfrom __future__ import annotations\n\n\n")

_INIT_TEMPLATE = '''"""Predictor of @NAME@: @METRICS@ before running it (generated by mantispy build, @CREATED@).

    from <this package> import predict
    predict(["ARG", ...])                  -> {metric: estimate} for the program's argv
    predict(kw=1, other="x")               (a module:function entry: its keyword arguments)
    predict([...], cwd="/where/it/runs")   relative input paths resolve against cwd (default: current)

Standard library only. The combined feature evaluator (evaluator/) runs in a warm server process that
imported the program's modules once and forks a fresh child for every input, so calls share no state
(each child starts from the same just-imported program) and may come from any number of threads (they
take turns). ``warm=False`` runs each call in a fresh interpreter instead; ``close()`` stops the server.
A rejected input, a failing evaluator or a models file from another build raise PredictionError: there
is never a silent default estimate.
"""

import json
import os
import subprocess
import sys
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD_ID = @BUILD_ID@
ENTRY = @ENTRY@
ENTRY_KIND = @ENTRY_KIND@
METRICS = @METRICS@
FEATURES = @FEATURES@
INPUTS = @INPUTS@  # input descriptors the models use (numbers on the command line, input file sizes)

_lock = threading.Lock()
_models = None
_RUNNER = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import evaluate
request = json.loads(sys.argv[2])
try:
    values = evaluate.evaluate_all(request["argv"], **request["kwargs"])
except BaseException as exc:
    sys.stderr.write("mantispy-evaluator-error: " + type(exc).__name__ + ": " + str(exc) + "\\n")
    sys.exit(3)
print(json.dumps(values))
"""


class PredictionError(Exception):
    """No estimate can be given for this input; the message says why."""


def _load_models():
    global _models
    with _lock:
        if _models is None:
            path = os.path.join(HERE, "models.json")
            try:
                with open(path, encoding="utf-8") as handle:
                    data = json.load(handle)
            except (OSError, ValueError) as exc:
                raise PredictionError(f"{path}: cannot read the models ({exc}); rebuild with mantispy build") from None
            if not isinstance(data, dict) or data.get("format") != "mantispy-predictor-models":
                raise PredictionError(f"{path}: not a mantispy predictor's models file; rebuild with mantispy build")
            if data.get("build_id") != BUILD_ID:
                raise PredictionError(f"{path}: models of build {data.get('build_id')}, but this predictor is build "
                                      f"{BUILD_ID}; copy the whole folder of one build")
            _models = data["metrics"]
        return _models


def _check_evaluator():
    path = os.path.join(HERE, "evaluator", "BUILD_ID")
    try:
        with open(path, encoding="utf-8") as handle:
            found = handle.read().strip()
    except OSError:
        raise PredictionError(f"{path}: missing; copy the whole folder of one build") from None
    if found != BUILD_ID:
        raise PredictionError(f"{path}: evaluator of build {found}, but this predictor is build {BUILD_ID}; "
                              "copy the whole folder of one build")


_server = None


def close():
    """Stop the warm evaluator (the next warm call starts a new one)."""
    global _server
    with _lock:
        server, _server = _server, None
    if server is not None:
        server.close()


def _warm_features(argv, kwargs, cwd, timeout):
    global _server
    from ._warm import WarmError, WarmEvaluator

    with _lock:
        if _server is None:
            _server = WarmEvaluator(os.path.join(HERE, "evaluator"))
        server = _server
    try:
        values, _ = server.evaluate(argv, kwargs, cwd=cwd, timeout=timeout)
    except WarmError as exc:
        if exc.timed_out:
            raise PredictionError(f"the feature evaluator ran longer than {timeout} s") from None
        raise PredictionError(f"the feature evaluator failed on this input: {exc}") from None
    return values


def features(argv=None, *, cwd=None, timeout=None, warm=True, **kwargs):
    """The selected features' values for one input, from the evaluator: {feature id: value}."""
    if ENTRY_KIND == "callable":
        if argv:
            raise PredictionError(f"entry {ENTRY} takes keyword arguments, not an argv list")
    else:
        if kwargs:
            raise PredictionError(f"entry {ENTRY} takes an argv list, not keyword arguments: {sorted(kwargs)}")
        if argv is None or isinstance(argv, (str, bytes)) or not all(isinstance(a, str) for a in argv):
            raise PredictionError("argv must be a list of strings, as the program's command line")
    if not FEATURES:
        return {}
    _check_evaluator()
    try:
        request = json.dumps({"argv": list(argv or ()), "kwargs": kwargs})
    except (TypeError, ValueError) as exc:
        raise PredictionError(f"the keyword arguments must be JSON values: {exc}") from None
    if warm:
        values = _warm_features(list(argv or ()), kwargs, cwd, timeout)
        missing = [f for f in FEATURES if f not in values]
        if missing:
            raise PredictionError(f"the feature evaluator gave no value for {missing[0]}")
        return values
    try:
        proc = subprocess.run([sys.executable, "-c", _RUNNER, os.path.join(HERE, "evaluator"), request],
                              cwd=cwd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise PredictionError(f"the feature evaluator ran longer than {timeout} s") from None
    if proc.returncode != 0:
        lines = [line for line in proc.stderr.splitlines() if line.strip()]
        said = next((line.split(": ", 1)[1] for line in reversed(lines) if line.startswith("mantispy-evaluator-error: ")),
                    lines[-1] if lines else f"exit status {proc.returncode}")
        raise PredictionError(f"the feature evaluator failed on this input: {said}")
    try:
        values = json.loads(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise PredictionError("the feature evaluator printed no values") from None
    missing = [f for f in FEATURES if f not in values]
    if missing:
        raise PredictionError(f"the feature evaluator gave no value for {missing[0]}")
    return values


def input_numbers(argv=None, *, cwd=None, input_files=None, **kwargs):
    """The input descriptors the models may use: numbers on the command line (or in the keyword
    arguments) and the sizes of the input files (``input_files``; by default the arguments that name
    existing files, relative to ``cwd``)."""
    from . import _descriptors

    try:
        descriptor = _descriptors.describe_input(list(argv or ()), kwargs if ENTRY_KIND == "callable" else None,
                                                 files=input_files, cwd=cwd)
    except OSError as exc:
        raise PredictionError(f"cannot read an input file: {exc}") from None
    return _descriptors.prefixed_numbers(descriptor)


def predict(argv=None, *, cwd=None, timeout=None, extrapolate=False, warm=True, interval=False,
            input_files=None, **kwargs):
    """Estimates of every modelled metric for one input: {metric: value}.

    With ``interval=True`` each metric maps to {"estimate", "low", "high", "level"}: the estimate and
    the prediction interval (p10-p90 by default) measured from the build's cross-validated errors;
    ``low``/``high`` are None for a model without one.

    A feature value far outside what training saw (below half its minimum, or beyond its maximum by
    more than the training range; see check_range) raises PredictionError unless ``extrapolate`` is
    true: such an input is one the models know nothing about, often one the program would reject."""
    from . import _model

    models = _load_models()
    values = features(argv, cwd=cwd, timeout=timeout, warm=warm, **kwargs)
    if INPUTS:
        values = {**values, **input_numbers(argv, cwd=cwd, input_files=input_files, **kwargs)}
    if not extrapolate:
        for model in models.values():
            check_range(model, values)
    estimates = {metric: _model.predict(model, values) for metric, model in models.items()}
    for metric, model in models.items():
        if model.get("work"):  # CPU seconds of the build machine, scaled to this one (mantispy calibrate)
            estimates[metric] *= seconds_per_unit()
    if not interval:
        return estimates
    result = {}
    for metric, estimate in estimates.items():
        band = _model.interval(models[metric], estimate)
        level = (models[metric].get("interval") or {}).get("level")
        result[metric] = {"estimate": estimate, "low": band[0] if band else None,
                          "high": band[1] if band else None, "level": level}
    return result


def seconds_per_unit():
    """This machine's CPU seconds per second of work_s on the build machine: 1 unless calibration.json
    (written by mantispy calibrate) says otherwise."""
    path = os.path.join(HERE, "calibration.json")
    try:
        with open(path, encoding="utf-8") as handle:
            factor = json.load(handle)["seconds_per_unit"]
    except FileNotFoundError:
        return 1.0
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise PredictionError(f"{path}: unreadable ({exc}); run mantispy calibrate again or delete it") from None
    if not isinstance(factor, (int, float)) or not 0 < factor < 1e6:
        raise PredictionError(f"{path}: seconds_per_unit must be a positive number; run mantispy calibrate again")
    return float(factor)


def check_range(model, values):
    """Raise PredictionError when a feature the model uses lies far outside its training range."""
    import math

    log_form = model.get("form") == "log"
    for feature, bounds in model["scaling"].items():
        low, high = float(bounds["min"]), float(bounds["max"])
        value = float(values.get(feature, 0.0))
        if log_form:  # the bounds are those of log(1 + value)
            low, high = (math.copysign(math.expm1(abs(b)), b) for b in (low, high))
        spread = high - low
        floor = low / 2 if low > 0 else low - spread
        ceiling = high + max(spread, abs(high))
        if not floor <= value <= ceiling:
            raise PredictionError(f"feature {feature} is {value:g} for this input, far outside what training saw "
                                  f"({low:g} .. {high:g}); pass extrapolate=True to estimate anyway")
'''
