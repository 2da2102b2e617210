"""Predictor packages: what ``mantispy build`` ships, and its validation.

A predictor package ``predictors/NAME/`` holds:

* the package kit (:mod:`mantispy.package_kit`): ``__init__.py`` (``predict(argv=None, *, cwd=None,
  timeout=None, **kwargs) -> {metric: estimate}`` and ``features(...)``), ``_model.py`` (the stdlib
  evaluation of a model polynomial), ``_warm.py``, ``_descriptors.py`` and the generated ``_build.py``;
  standard library only (never mantispy), so a scheduler can vendor the folder;
* ``models.json``: every metric's model (JSON, never pickle), stamped with the build id;
* ``evaluator/``: the combined feature evaluator (one slice for all selected features, see
  :mod:`mantispy.slicer.emit`), stamped with the same build id;
* ``build.json``: the build record (cost-loop rounds, validation, costs; ``mantispy report`` reads it);
* ``README.md``: the features with their source lines, the measured accuracy and evaluator cost.

Each ``predict`` runs the evaluator in a forked child of a warm server (a fresh interpreter with
``warm=False``): no state survives between calls, any number of threads may call it at once, and the write guard of the evaluator never touches the caller's process.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import statistics
import time
from pathlib import Path
from typing import Any

from mantispy.build_record import BUILD_FILE, BuildRecord, EvaluatorRecord, input_check_choice
from mantispy.errors import BuildError
from mantispy.modeling import artefact, selection
from mantispy.modeling.fitting import measured_metric
from mantispy.package_kit import PackageConstants, write_package_kit
from mantispy.runtime.content import CONTENT_PREFIX, content_values
from mantispy.runtime.descriptors import INPUT_PREFIX, argv_files, describe_input, prefixed_numbers
from mantispy.runtime.sampled_input import SAMPLED_PREFIX, counter_of
from mantispy.sampled.evaluate import evaluate_sampled

MODELS_FORMAT = "mantispy-predictor-models"
MODELS_VERSION = 1


def _relative_errors(pairs: list[tuple[float, float]]) -> dict[str, Any]:
    errors = [abs(p - a) / a for p, a in pairs if a]
    if not errors:
        return {"median_rel_error": None, "mean_rel_error": None, "n": 0}
    return {"median_rel_error": statistics.median(errors), "mean_rel_error": statistics.fmean(errors), "n": len(errors)}


COLD_SAMPLES = 5  # held-out inputs also evaluated in a fresh interpreter, to report that cost too


def validate(builder, session, models: dict[str, dict[str, Any]], frame, test_ids: list[str],
             record: BuildRecord, out: Path) -> None:
    """Emit the combined evaluator, run it on the held-out inputs, and fill ``record`` with the
    validation of every metric (model vs actual vs black box), the evaluator's cost and its fidelity."""
    from mantispy.slicer.evaluators import EvaluatorError, evaluator_confinement, run_evaluator
    from mantispy.slicer.warm_client import WarmError, WarmEvaluator

    log = builder.log
    staging = builder.work / "package"
    if staging.exists():
        shutil.rmtree(staging)
    staging.mkdir(parents=True)
    used = sorted({f for m in models.values() for f in m["scaling"]})
    # the evaluator's; descriptors are read and content features counted by the predictor itself
    selected = [f for f in used if not f.startswith((INPUT_PREFIX, CONTENT_PREFIX, SAMPLED_PREFIX))]
    content = content_specs(builder, used)
    sampled = [f for f in used if f.startswith(SAMPLED_PREFIX)]  # their counters, on samples: sampled_evaluator/
    fraction = float(builder.options.sample_fraction)
    input_check = None
    if not selected:  # no model needs the program: an evaluator still checks that the program accepts the input
        input_check = input_check_feature(record)
        selected = [input_check] if input_check else []
    k = int(builder.spec.instrument.get("k", 5))
    evaluator_dir = staging / "evaluator"
    if selected:
        result, report = session.emit_combined(selected, evaluator_dir, k)
        kept, total, files = result.statements_kept, result.statements_total, len(report.files)
    else:  # nothing was ever sliced with the program's values: no evaluator at all
        evaluator_dir.mkdir()
        kept, total, files = 0, 0, 0
    log(f"combined evaluator: {len(selected)} feature(s), {kept} of {total} statements"
        + (f" (no model uses the program's features: {input_check} only checks each input)" if input_check else ""))
    sampled_dir = staging / "sampled_evaluator"
    if sampled:
        sampled_result, _ = session.emit_combined([counter_of(f) for f in sampled], sampled_dir, k,
                                                  counts_on_failure=True)
        log(f"sampled evaluator: {len(sampled)} counter(s) on {fraction:.1%} samples of the input files, "
            f"{sampled_result.statements_kept} of {sampled_result.statements_total} statements")

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
    sampled_warm = WarmEvaluator(sampled_dir) if sampled else None
    if sampled_warm is not None:
        try:
            sampled_warm.start()
        except WarmError as exc:
            raise BuildError(f"the sampled evaluator does not start: {exc}") from None
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
        if content:  # the predictor's way, checked against what the build counted (same files, same value)
            input_paths = list(rec.files) or argv_files(list(rec.argv), str(builder.spec.workdir))
            started = time.perf_counter()
            try:
                values.update(content_values(content, input_paths, str(builder.spec.workdir)))
            except OSError as exc:
                failures.append({"input_id": iid, "error": f"content features: {exc}"})
                continue
            seconds += time.perf_counter() - started  # a prediction pays both
        if sampled_warm is not None:  # the predictor's way: cut the files, count on the sample, scale
            try:
                counted, sampled_s = evaluate_sampled(sampled_warm, sampled, list(rec.argv), rec.kwargs, list(rec.files),
                                                      fraction, str(builder.spec.workdir))
            except (OSError, WarmError) as exc:
                failures.append({"input_id": iid, "error": f"sampled features: {exc}"})
                continue
            values.update(counted)
            seconds += sampled_s
        for fid in selected + [c["id"] for c in content] + sampled:
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
        validation["interval_nominal"] = (model.get("interval") or {}).get("nominal")
        validation["interval_train_n"] = (model.get("interval") or {}).get("n")
        validation["interval_n"] = sum(1 for p in pts if p["low"] is not None)
        if bb.get("available"):
            bb_pairs = [(p["blackbox"], p["actual"]) for p in pts if p["blackbox"] is not None]
            validation["blackbox"] = {"available": True, **_relative_errors(bb_pairs)}
        else:
            validation["blackbox"] = {"available": False, "reason": bb.get("reason", "not fitted")}
        validation["points"] = pts
        record.metrics[metric].validation = validation
    if warm is not None:
        warm.close()
    if sampled_warm is not None:
        sampled_warm.close()
    fractions = [c["fraction"] for c in costs]
    median_wall = statistics.median(c["actual_s"] for c in costs) if costs else None
    record.evaluator = EvaluatorRecord(
        features=selected, input_check=input_check, statements_kept=kept, statements_total=total, files=files,
        cost=costs,
        median_fraction=statistics.median(fractions) if fractions else None,
        max_fraction=max(fractions) if fractions else None,
        median_s=statistics.median(c["evaluator_s"] for c in costs) if costs else None,
        warm_startup_s=startup_s,
        cold_median_s=statistics.median(cold) if cold else None,
        cold_median_fraction=statistics.median(cold) / median_wall if cold and median_wall else None,
        fidelity={"inputs": len(ids) - len(failures), "features": len(selected) + len(content) + len(sampled),
                  "mismatches": mismatches[:50], "mismatch_count": len(mismatches),
                  "agreed": (len(ids) - len(failures)) * (len(selected) + len(content) + len(sampled)) - len(mismatches),
                  "content_features": [c["id"] for c in content], "sampled_features": sampled},
        sampled_features=sampled, sample_fraction=fraction if sampled else None,
        failures=failures,
        slicing="hybrid" if getattr(session, "observed_calls", None) is not None else "static",
        calls_resolved_dynamically=len(getattr(session.sdg, "observed_sites", {}) or {}),
    )
    if selected:
        record.evaluator.confinement = evaluator_confinement(evaluator_dir)
    if (mismatches or failures) and getattr(session, "observed_calls", None) is not None:
        # Hybrid slices are trusted only once validated on held-out inputs: this one was not.
        from mantispy.slicer.evaluators import SliceSession

        log(f"the hybrid evaluator disagrees with the program on {len(mismatches)} value(s) / fails on "
            f"{len(failures)} held-out input(s): validating the static slice instead")
        rejected = {"mismatch_count": len(mismatches), "failures": len(failures),
                    "first": (mismatches or failures)[0]}
        static = SliceSession(builder.slicing_root, session.entry, reuse=session)
        validate(builder, static, models, frame, test_ids, record, out)
        record.evaluator.hybrid_rejected = rejected


def input_check_feature(record: BuildRecord) -> str | None:
    """When no model uses a program feature, the feature whose evaluator checks each input instead
    (:func:`~mantispy.build_record.input_check_choice` over the build's verdicts)."""
    return input_check_choice((feature, v.get("status"), v.get("cost_s")) for feature, v in record.verdicts.items())


def content_specs(builder, used: list[str]) -> list[dict[str, Any]]:
    """The content features the models use, as :mod:`mantispy.runtime.content` takes them."""
    table = getattr(builder, "content", None)
    wanted = [f for f in used if f.startswith(CONTENT_PREFIX)]
    if not wanted:
        return []
    if table is None:
        raise BuildError(f"the models use {wanted[0]} but the build has no content table")
    found = []
    for fid in wanted:
        cand = table.feature(fid)
        if cand is None:
            raise BuildError(f"the models use {fid}, which is not among the content table's candidates")
        found.append(cand.runtime())
    return found


def _blackbox_by_input(model: dict[str, Any]) -> dict[str, float]:
    evaluation = model.get("evaluation", {})
    bb = evaluation.get("blackbox", {})
    if not bb.get("available"):
        return {}
    found: dict[str, float] = {}
    for row, value in zip(evaluation.get("test_predictions", []), bb.get("test_predictions", [])):
        found.setdefault(row["input_id"], float(value))
    return found


def build_id(record: BuildRecord, models: dict[str, dict[str, Any]], evaluator_dir: Path,
             *more_dirs: Path) -> str:
    """A digest of the program source, the models and the evaluators' files."""
    digest = hashlib.sha256(record.source_hash.encode())
    digest.update(json.dumps(models, sort_keys=True).encode())
    for folder, label in [(evaluator_dir, ""), *((d, d.name + "/") for d in more_dirs)]:
        for path in sorted(p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
            digest.update((label + path.relative_to(folder).as_posix()).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def write_package(staging: Path, out: Path, record: BuildRecord, models: dict[str, dict[str, Any]],
                  content: list[dict[str, Any]] | None = None) -> Path:
    """Write the predictor package into ``staging`` (which holds ``evaluator/``), then move it to ``out``
    (an earlier predictor there is replaced only once the new one is complete). ``content``: the content
    features the models use (see :func:`content_specs`)."""
    staging, out = Path(staging), Path(out)
    content = list(content or [])
    sampled_dir = staging / "sampled_evaluator"
    bid = build_id(record, models, staging / "evaluator", *([sampled_dir] if sampled_dir.is_dir() else []))
    record.build_id = bid
    (staging / "evaluator" / "BUILD_ID").write_text(bid + "\n", encoding="utf-8")
    if sampled_dir.is_dir():
        (sampled_dir / "BUILD_ID").write_text(bid + "\n", encoding="utf-8")
    (staging / "models.json").write_text(json.dumps(
        {"format": MODELS_FORMAT, "version": MODELS_VERSION, "build_id": bid, "name": record.name,
         "metrics": models}, indent=1) + "\n", encoding="utf-8")
    record.save(staging / BUILD_FILE)
    features = record.evaluator.features if record.evaluator is not None else []
    inputs = sorted({f for m in models.values() for f in m["scaling"] if f.startswith(INPUT_PREFIX)})
    write_package_kit(staging, PackageConstants(
        name=record.name, created=record.created, build_id=bid, entry=record.entry,
        entry_kind=record.entry_kind, metrics=tuple(models), features=tuple(features), inputs=tuple(inputs),
        content=tuple(content), sampled=tuple(record.evaluator.sampled_features if record.evaluator else ()),
        sample_fraction=(record.evaluator.sample_fraction or 0.0) if record.evaluator else 0.0))
    (staging / "README.md").write_text(package_readme(record), encoding="utf-8")
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


def package_readme(record: BuildRecord) -> str:
    """The package's README: how to call it, its features, accuracy and cost."""
    lines = [
        f"# Predictor of `{record.name}`",
        "",
        f"Generated by `mantispy build` on {record.created} (build `{record.build_id or '?'}`) from "
        f"`{record.source}`, entry `{record.entry}`. Standard library only; vendor the whole folder.",
        "",
        "```python",
        "from predictors.NAME import predict      # this folder, as an importable package",
        "estimate = predict([\"ARG\", ...])        # " + ", ".join(f"estimate[{m!r}]" for m in record.metrics),
        "```",
        "",
        "or `mantispy predict PATH/TO/THIS/FOLDER -- ARGS...`. `predict` keeps a warm evaluator process (the "
        "program's modules imported once, a forked child per input: no state kept between calls, thread-safe); "
        "`predict(..., warm=False)` uses a fresh interpreter per call. An input the program rejects, a feature "
        "far outside its training range, or an evaluator failure raise `PredictionError`.",
        "",
        *(["`work_s` is CPU seconds of the build machine's, from the program's own work; on another machine "
           "`mantispy calibrate PATH/TO/THIS/FOLDER` re-measures the seconds per unit of work there (a few runs of "
           "the program; `calibration.json` here then scales every `work_s` estimate).", ""]
          if any(data.model.get("work") for data in record.metrics.values()) else []),
        "## Accuracy on held-out inputs",
        "",
        "| metric | median rel. error | mean rel. error | black-box median | black-box mean | inputs |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for metric, data in record.metrics.items():
        v = data.validation
        bb = v.get("blackbox", {})
        lines.append(f"| {metric} | {_pct(v.get('median_rel_error'))} | {_pct(v.get('mean_rel_error'))} | "
                     f"{_pct(bb.get('median_rel_error')) if bb.get('available') else 'n/a'} | "
                     f"{_pct(bb.get('mean_rel_error')) if bb.get('available') else 'n/a'} | {v.get('n', 0)} |")
    ev = record.evaluator or EvaluatorRecord()
    from mantispy.verdicts import build_verdicts

    noise = [f"{m} {_pct(record.noise_floor(m))}" for m in record.metrics if record.noise_floor(m) is not None]
    coverage = [f"{m} {_pct(d.validation.get('interval_coverage'))}" for m, d in record.metrics.items()
                if d.validation.get("interval_coverage") is not None]
    lines += ["", "Noise floor (median deviation of one run from its input's median): " + (", ".join(noise) or "n/a")
              + ". Held-out inputs inside the p10-p90 interval (`predict(..., interval=True)`): "
              + (", ".join(coverage) or "n/a") + ".", "", "### Verdicts", ""]
    lines += [f"- {line}" for line in build_verdicts(record)] or ["- none"]
    lines += [
        "",
        f"Trained on {_pct(record.options.train_fraction)} of {record.campaign.inputs} inputs. The black "
        "box is the same regression on the numbers visible in the input (arguments, file sizes).",
        "",
        "## Evaluator cost",
        "",
        f"One combined slice keeps {ev.statements_kept} of {ev.statements_total} statements. "
        f"Median cost per prediction {_pct(ev.median_fraction)} of the program's run time "
        f"(max {_pct(ev.max_fraction)}) with the warm evaluator `predict` keeps (it imports the program's "
        f"modules once, in {ev.warm_startup_s or 0:.2f} s, then forks per input); "
        f"{_pct(ev.cold_median_fraction)} with `predict(..., warm=False)` (a fresh interpreter per call).",
        "",
        *([f"No model uses a program feature: the evaluator computes `{ev.input_check}` only to check that the "
           "program accepts each input (an input it rejects raises `InputRejected`).", ""] if ev.input_check else []),
        *([f"Confinement: {ev.confinement} (on the build machine; `python evaluator/evaluate.py "
           "--mantis-confinement` says it for the machine you run on; `MANTISPY_CONFINE=require` makes an "
           "evaluation fail rather than run unconfined).", ""] if ev.confinement else []),
        *(["No evaluator: no model uses a program feature and none was measured that could check the input, so any "
           "input gets the models' estimate, even one the program would reject.", ""]
          if not ev.features else []),
        "## Features",
        "",
        "| feature | kind | source | cost (% of run) | metrics |",
        "| --- | --- | --- | --- | --- |",
    ]
    for f in record.features:
        snippet = (f.snippet or "").replace("|", "\\|")
        lines.append(f"| `{f.id}` | {f.kind} | {f.file}:{f.line} `{snippet}` | "
                     f"{_pct(f.cost_fraction)} | {', '.join(f.metrics)} |")
    lines += ["", "## Polynomials", ""]
    for metric, data in record.metrics.items():
        lines += [f"### {metric}", "", "```", *artefact.polynomial_text(data.model), "```", ""]
    lines += ["## Cost-loop rounds", "", "| metric | round | selected | rejected | held-out median error |",
              "| --- | --- | --- | --- | --- |"]
    for row in record.rounds:
        label = "judged ahead" if row.get("lookahead") else row["round"]
        lines.append(f"| {row['metric']} | {label} | {len(row['selected'])} | {len(row['rejected'])} | "
                     f"{_pct(row.get('median_rel_error'))} |")
    return "\n".join(lines) + "\n"
