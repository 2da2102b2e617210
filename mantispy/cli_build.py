"""The product verbs of the command line: ``build``, ``predict`` and ``report`` (registered on the
``mantispy`` group by :mod:`mantispy.cli`)."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import click

from mantispy.build_record import BuildRecord, BuildRecordError, EvaluatorRecord
from mantispy.errors import BuildError, FailureError, UserError
from mantispy.modeling.defaults import VIEW_CONFIDENCE
from mantispy.outputs import OutputError, check_folder, refuse_overlap


def interval_levels(_ctx: click.Context, _param: click.Parameter, value: str) -> tuple[float, float]:
    """Click callback of ``--interval LOW,HIGH`` (fit and build): the two levels, or the usage error."""
    from mantispy.modeling.defaults import parse_levels

    try:
        return parse_levels(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def _check_metrics(metrics: tuple[str, ...]) -> None:
    """Refuse, before anything runs, a metric no profiled run stores (it was refused after the whole campaign ran)."""
    from mantispy.modeling.fitting import METRIC_ALIASES, resolve_metric
    from mantispy.runtime.perf_counters import EVENTS, PROC_IO_METRICS, RUSAGE_METRICS, probe

    known = {*METRIC_ALIASES.values(), *EVENTS, *RUSAGE_METRICS, *PROC_IO_METRICS}
    for metric in metrics:
        if resolve_metric(metric) not in known:
            raise UserError(f"--metric {metric}: not a metric a run stores; give wall, cpu, work, rss, a counter "
                            f"(mantispy counters lists them: {next(iter(EVENTS))}, ...) or one of "
                            f"{', '.join(RUSAGE_METRICS + PROC_IO_METRICS)}")
    wanted = sorted({resolve_metric(m) for m in metrics} & set(EVENTS))
    closed = [status for status in probe(wanted) if not status.available] if wanted else []
    if closed:
        raise UserError(f"--metric {closed[0].name}: this machine cannot count it ({closed[0].reason}), so no run "
                        f"would store it; choose a counter mantispy counters lists as available, or one of "
                        f"{', '.join(RUSAGE_METRICS)}")


@click.command()
@click.argument("spec_file", metavar="SPEC", type=click.Path(path_type=Path))
@click.option("-o", "--out", "out", required=True, type=click.Path(path_type=Path), help="The predictor package folder, e.g. predictors/NAME.")
@click.option("--work", type=click.Path(path_type=Path), default=None, help="Where the store, evaluators and caches live (default: <workdir>/.mantis/build-work/<name>).")
@click.option("--metric", "metrics", multiple=True, default=("wall", "cpu", "work", "rss"), show_default=True,
              help="Metrics to model (wall, cpu, work: CPU seconds from the program's own work, rss, or a counter: hw.*, sw.*, ru.*). Repeatable.")
@click.option("--max-cost", default=0.05, show_default=True, type=click.FloatRange(0, 10, min_open=True), help="Largest evaluator cost accepted, as a fraction of the program's run time.")
@click.option("--train-fraction", default=0.1, show_default=True, type=click.FloatRange(0, 1, min_open=True, max_open=True), help="Inputs used for training; the rest validate.")
@click.option("--degree", default=3, show_default=True, type=click.IntRange(1, 5), help="Polynomial degree.")
@click.option("--method", type=click.Choice(["lasso", "foba"]), default="lasso", show_default=True,
              help="Term selection: LASSO path (cross-validated lambda) or forward-backward greedy (FoBa).")
@click.option("--seed", default=0, show_default=True, help="Seed of the train/test split and the CV folds.")
@click.option("--jobs", default=1, show_default=True, type=click.IntRange(1, 256), help="Profiling runs at once.")
@click.option("--max-rounds", default=10, show_default=True, type=click.IntRange(1, 100), help="Cost-loop rounds before refitting on known-cheap features only.")
@click.option("--lookahead", default=30, show_default=True, type=click.IntRange(0, 10000), help="Features judged ahead of each fit (those most correlated with the metric).")
@click.option("--cost-inputs", default=3, show_default=True, type=click.IntRange(1, 50), help="Training inputs each evaluator is timed on.")
@click.option("--validate", "validate_inputs", default=None, type=click.IntRange(1), help="Validate on at most this many held-out inputs (default: all).")
@click.option("--static", "static_only", is_flag=True, help="Slice statically only (no calls observed on training inputs).")
@click.option("--force", is_flag=True, help="Replace OUT even if it holds the predictor of another program (a folder mantispy did not write is never replaced).")
@click.option("--form", type=click.Choice(["auto", "polynomial", "log"]), default="auto", show_default=True,
              help="Model form: additive polynomial, multiplicative (log), or chosen by cross-validation.")
@click.option("--average", type=click.IntRange(1, 10), default=3, show_default=True,
              help="Each model is the geometric mean of this many candidates cross-validation ranks best (1: the best alone).")
@click.option("--repeats", type=click.IntRange(1, 100), default=None,
              help="Uninstrumented runs per input, whose median is modelled (default: the spec's original_repeats, 3).")
@click.option("--no-input-features", "no_inputs", is_flag=True,
              help="Models use program features only, not the numbers on the command line and input file sizes.")
@click.option("--no-content-features", "no_content", is_flag=True,
              help="Models do not use content features (matches of the program's own regexes in the input files).")
@click.option("--sample-fraction", type=click.FloatRange(0.0, 1.0), default=0.0, show_default=True,
              help="Sampled features: the all-feature models' counters counted on this share of each input file "
                   "(e.g. 0.025) and scaled to the whole, offered as stand-ins the cost loop judges (0: none).")
@click.option("--solver", type=click.Choice(["sklearn", "glmnet"]), default="sklearn", show_default=True,
              help="Final LASSO stage: scikit-learn's coordinate descent or glmnet (pip install 'mantispy[glmnet]').")
@click.option("--penalty", type=click.Choice(["adaptive", "plain"]), default="adaptive", show_default=True,
              help="LASSO penalty: adaptive (terms scaled by their ridge coefficients first; keeps small noisy terms out) or plain (the paper's).")
@click.option("--view-confidence", type=click.FloatRange(0.0, 1.0), default=VIEW_CONFIDENCE, show_default=True,
              help="A model view richer than the input descriptors (content, sampled or program features) is chosen only "
                   "where it beats the simpler views on cross-validation in this share of paired resamples of the "
                   "training inputs (0: the smallest cross-validated error alone decides).")
@click.option("--interval", "levels", default="0.1,0.9", show_default=True, metavar="LOW,HIGH", callback=interval_levels,
              help="The prediction intervals' quantile levels (0.05,0.95 for p5-p95), judged on the held-out inputs.")
@click.option("--frontier", default=None, metavar="B1,B2,...",
              help="One predictor per --max-cost budget (OUT/max-cost-B), profiled once; writes OUT/frontier.md/.json/.svg.")
@click.option("-q", "--quiet", is_flag=True, help="No progress lines; only errors and the closing table.")
@click.option("-v", "--verbose", is_flag=True, help="Progress lines with the seconds since the build started.")
def build(spec_file: Path, out: Path, work: Path | None, metrics: tuple[str, ...], max_cost: float, train_fraction: float,
          degree: int, method: str, seed: int, jobs: int, max_rounds: int, lookahead: int, cost_inputs: int,
          validate_inputs: int | None, static_only: bool, force: bool, form: str, average: int, repeats: int | None,
          no_inputs: bool, no_content: bool, sample_fraction: float, solver: str, penalty: str, view_confidence: float,
          levels: tuple[float, float], frontier: str | None,
          quiet: bool = False, verbose: bool = False) -> None:
    """Build a predictor package from campaign SPEC: instrument, profile, fit, slice, cost loop, validate."""
    from mantispy.build import BuildOptions
    from mantispy.build import build as run_build
    from mantispy.campaign import SpecError
    from mantispy.store import StoreError

    if quiet and verbose:
        raise UserError("-q and -v: give one (-q prints only errors and the closing table, -v every step with its time)")
    _check_metrics(metrics)
    options = BuildOptions(spec=spec_file, out=out, work=work, metrics=metrics, max_cost=max_cost,
                           train_fraction=train_fraction, degree=degree, method=method, seed=seed, jobs=jobs,
                           max_rounds=max_rounds, lookahead=lookahead, cost_inputs=cost_inputs, validate_inputs=validate_inputs, force=force,
                           observed_calls=not static_only, form=form, average=average, repeats=repeats,
                           inputs=not no_inputs, content=not no_content, sample_fraction=sample_fraction,
                           solver=solver, penalty=penalty, view_confidence=view_confidence, levels=levels)
    log = progress_log(quiet, verbose)
    if frontier is not None:
        from click.core import ParameterSource

        if click.get_current_context().get_parameter_source("max_cost") not in (ParameterSource.DEFAULT, None):
            raise UserError(f"--max-cost {max_cost:g} with --frontier: the frontier's budgets are its --max-cost values; "
                            "give the budget among them (--frontier 0.01,0.05,...) and leave --max-cost out")
        _build_frontier(options, frontier, log)
        return
    try:
        record = run_build(options, log=log)
    except BuildError as exc:
        raise FailureError(str(exc)) from None
    except (SpecError, StoreError, OutputError) as exc:
        raise UserError(str(exc)) from None
    print_validation(record)
    click.echo(f"predictor written to {out}: mantispy predict {out} -- ARGS...  |  mantispy report {out} -o report.html")


def progress_log(quiet: bool, verbose: bool):
    """Where a long verb's progress lines go: nowhere (-q), stderr, or stderr with elapsed seconds (-v)."""
    import time

    started = time.perf_counter()
    if quiet:
        return lambda _m: None
    if verbose:
        return lambda m: click.echo(f"[{time.perf_counter() - started:7.1f} s] {m}", err=True)
    return lambda m: click.echo(m, err=True)


def _build_frontier(options, text: str, log) -> None:
    """``build --frontier``: one predictor per budget, then the trade-off table."""
    from mantispy.build import build as run_build
    from mantispy.campaign import SpecError
    from mantispy.frontier import parse_budgets, run_frontier, table_lines
    from mantispy.store import StoreError

    try:
        budgets = parse_budgets(text)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    root = Path(options.out)
    from mantispy.campaign import load_spec

    try:
        spec = load_spec(options.spec)
    except (SpecError, FileNotFoundError) as exc:
        raise UserError(str(exc)) from None
    if options.work is None:  # one work folder for every budget: the campaign is profiled once
        options = dataclasses.replace(options, work=spec.workdir / ".mantis" / "build-work" / spec.name)
    try:
        refuse_overlap(root, {"program's source": spec.source_root, "campaign spec": Path(options.spec),
                              "build's work folder": options.work})
        check_folder(root, lambda p: (p / "frontier.json").is_file(), "frontier")
    except OutputError as exc:
        raise UserError(str(exc)) from None
    try:
        rows = run_frontier(options, budgets, run_build, log=log)
    except BuildError as exc:
        raise FailureError(str(exc)) from None
    except (SpecError, StoreError, OutputError) as exc:
        raise UserError(str(exc)) from None
    for line in table_lines(rows):
        click.echo(line)
    click.echo(f"frontier written to {root}/frontier.md, frontier.json and frontier.svg; predictors in {root}/max-cost-*")


def print_validation(record: BuildRecord) -> None:
    """The build's closing table: accuracy per metric beside the black box and the noise floor, the
    evaluator's cost, and the verdicts in words (mantispy.verdicts)."""
    from rich.console import Console
    from rich.table import Table

    from mantispy.verdicts import build_verdicts

    console = Console(width=None if sys.stdout.isatty() else 120)
    if not record.metrics:
        console.print(f"{record.name or 'this build'}: no metric was modelled, so there is no validation to show")
        return
    first = next(iter(record.metrics))
    table = Table(title=f"{record.name}: held-out validation ({record.metrics[first].validation.get('n', 0)} inputs)")
    for column in ("metric", "median error", "mean error", "black-box median", "black-box mean", "noise floor",
                   "p10-p90 coverage", "model"):
        table.add_column(column, justify="right" if column not in ("metric", "model") else "left")
    pct = lambda x: "n/a" if x is None else f"{x:.1%}"  # noqa: E731
    for metric, data in record.metrics.items():
        v = data.validation
        bb = v.get("blackbox") or {}
        model = data.model
        if data.is_constant:
            what = "constant"
        else:
            what = f"{model.get('form', 'polynomial')}, {len(model['scaling'])} feature(s)"
        table.add_row(metric, pct(v.get("median_rel_error")), pct(v.get("mean_rel_error")),
                      pct(bb.get("median_rel_error")) if bb.get("available") else "n/a",
                      pct(bb.get("mean_rel_error")) if bb.get("available") else "n/a",
                      pct(record.noise_floor(metric)), pct(v.get("interval_coverage")), what)
    console.print(table)
    for line in build_verdicts(record):
        console.print(f"  {line}", highlight=False)
    ev = record.evaluator or EvaluatorRecord()
    if ev.median_fraction is not None and ev.warm_startup_s is not None:
        cold = ev.cold_median_fraction
        console.print(f"evaluator cost: median {ev.median_fraction:.1%} of the run time (max {pct(ev.max_fraction)}) "
                      f"with a warm evaluator (started once, in {ev.warm_startup_s:.2f} s); "
                      + (f"{cold:.1%} in a fresh interpreter each time; " if cold is not None else "")
                      + f"{ev.statements_kept} of {ev.statements_total} statements kept")
    elif not ev.features:
        console.print("evaluator: none (no model uses a program feature, and no evaluator was measured that could check "
                      "the input: any input gets the models' estimate, even one the program rejects)")
    if ev.confinement:
        console.print(f"confinement: {ev.confinement}")
    if ev.input_check:
        console.print(f"input check: no model uses a program feature; the package runs the evaluator of {ev.input_check} "
                      "only to check that the program accepts each input")
    console.print(fidelity_line(ev), highlight=False)
    fits = [r for r in record.rounds if not r.get("lookahead")]
    judged = len(record.verdicts)
    console.print(f"cost loop: {len(fits)} fit round(s) (" + ", ".join(
        f"{m}: {sum(1 for r in fits if r['metric'] == m)}" for m in record.metrics) + f"); {judged} evaluator(s) judged, "
        f"{sum(1 for v in record.verdicts.values() if v.get('status') == 'cheap')} cheap")


def fidelity_line(ev: EvaluatorRecord) -> str:
    """The validation's fidelity in one line, by what each value was checked against: an evaluator's program
    features against the instrumented program, content and sampled features against the build's own counts."""
    fid = ev.fidelity
    inputs = fid.get("inputs", 0)
    content = set(fid.get("content_features") or [])
    sampled = set(fid.get("sampled_features") or [])
    mismatches = fid.get("mismatches") or []
    if fid.get("mismatch_count", len(mismatches)) != len(mismatches):  # not every mismatch listed: the total only
        line = (f"fidelity: {fid.get('agreed', 0)} of {inputs * fid.get('features', 0)} feature values agree on "
                f"{inputs} held-out input(s)")
    else:
        wrong = [m.get("feature") for m in mismatches]
        program = fid.get("features", 0) - len(content) - len(sampled)
        parts = []
        for count, ids, what in ((program, None, "evaluator values agree with the instrumented program"),
                                 (len(content), content, "content-feature counts agree with the build's"),
                                 (len(sampled), sampled, "sampled-feature values agree with the build's")):
            if count > 0:
                bad = sum(1 for f in wrong if (f in ids if ids is not None else f not in content | sampled))
                parts.append(f"{inputs * count - bad} of {inputs * count} {what}")
        line = f"fidelity on {inputs} held-out input(s): " + ("; ".join(parts) if parts else "no feature to check")
    return line + (f"; {len(ev.failures)} input(s) failed" if ev.failures else "")


@click.command(context_settings={"ignore_unknown_options": True})
@click.argument("predictor", type=click.Path(path_type=Path))
@click.option("--kwargs", "kwargs_json", default=None, metavar="JSON", help="Keyword arguments of a module:function entry, as a JSON object.")
@click.option("--cwd", type=click.Path(path_type=Path), default=None, help="Folder the program would run in (relative input paths).")
@click.option("--timeout", type=float, default=None, help="Seconds the evaluator may run.")
@click.option("--json", "as_json", is_flag=True, help="Print the estimates as JSON.")
@click.option("--extrapolate", is_flag=True, help="Estimate even when a feature lies far outside its training range.")
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def predict(predictor: Path, kwargs_json: str | None, cwd: Path | None, timeout: float | None, as_json: bool,
            extrapolate: bool, args: tuple[str, ...]) -> None:
    """Estimate the program's metrics for one input: mantispy predict predictors/NAME -- ARGS..."""
    module = load_predictor(predictor)
    kwargs = {}
    if kwargs_json is not None:
        try:
            kwargs = json.loads(kwargs_json)
        except ValueError as exc:
            raise UserError(f"--kwargs: not JSON ({exc}); give an object like '{{\"n\": 3}}'") from None
        if not isinstance(kwargs, dict):
            raise UserError("--kwargs: give a JSON object like '{\"n\": 3}'")
    argv = list(args[1:] if args and args[0] == "--" else args)
    try:
        # One prediction: a fresh interpreter costs less than starting a warm evaluator.
        estimates = module.predict(None if module.ENTRY_KIND == "callable" else argv, cwd=cwd, timeout=timeout,
                                   extrapolate=extrapolate, warm=False, interval=True, **kwargs)
    except module.PredictionError as exc:
        rejected = isinstance(exc, getattr(module, "InputRejected", ()))  # packages built before it: all 1
        said = str(exc).replace("pass extrapolate=True to estimate anyway", "give --extrapolate to estimate anyway")
        raise (UserError if rejected else FailureError)(f"{predictor}: {said}") from None
    if as_json:
        click.echo(json.dumps(estimates))
        return
    units = {"wall_s": "s", "cpu_s": "s", "work_s": "s", "max_rss_kb": "KiB"}
    for metric, found in estimates.items():
        unit = units.get(metric, "")
        line = f"{metric:12} {found['estimate']:.6g} {unit}".rstrip()
        if found.get("low") is not None:
            level = found.get("level") or [0.1, 0.9]
            nominal = found.get("nominal")
            name = (f"p{level[0] * 100:.0f}-p{level[1] * 100:.0f}"
                    if not isinstance(nominal, (int, float)) or nominal >= level[1] - level[0] - 0.005
                    else f"{nominal:.0%} interval (too few training inputs for p{level[0] * 100:.0f}-p{level[1] * 100:.0f})")
            line += f"   ({name}: {found['low']:.6g} .. {found['high']:.6g}{' ' + unit if unit else ''})"
        click.echo(line)


def load_predictor(folder: Path):
    """Import a predictor package from its folder (under a private module name)."""
    import importlib.util

    init = Path(folder) / "__init__.py"
    if not init.is_file() or not (Path(folder) / "models.json").is_file():
        raise UserError(f"{folder}: not a predictor package (no __init__.py / models.json); make one with mantispy build")
    name = "_mantispy_predictor_" + "".join(c if c.isalnum() else "_" for c in str(Path(folder).resolve()))
    spec = importlib.util.spec_from_file_location(name, init, submodule_search_locations=[str(folder)])
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@click.command()
@click.argument("predictor", type=click.Path(path_type=Path))
@click.option("-o", "--out", "out", default=Path("report.html"), show_default=True, type=click.Path(path_type=Path), help="HTML file to write.")
@click.option("--phases", "phases_path", default=None, type=click.Path(path_type=Path),
              help="A phase model (mantispy phases --fit) of the campaign: the report shows its phases across runs.")
def report(predictor: Path, out: Path, phases_path: Path | None) -> None:
    """Write a static HTML report of a predictor build (scatter plots, λ path, features, rounds, costs)."""
    from mantispy.report import ReportError, write_report

    phase_model = None
    if phases_path is not None:
        from mantispy.phases.model import PhaseModelError, load

        try:
            phase_model = load(phases_path)
        except PhaseModelError as exc:
            raise UserError(str(exc)) from None
    try:
        path = write_report(predictor, out, phase_model)
    except ReportError as exc:
        raise UserError(str(exc)) from None
    try:
        record = BuildRecord.load(Path(predictor))
    except BuildRecordError as exc:
        raise UserError(str(exc)) from None
    print_validation(record)
    click.echo(f"report: {path}  (open it in a browser; no server needed)")
    click.echo(f"predictor package: {predictor}  (README.md inside; import it, or mantispy predict {predictor} -- ARGS...)")


@click.command()
@click.argument("predictor", type=click.Path(path_type=Path))
@click.option("--repeats", default=3, show_default=True, type=click.IntRange(1, 50), help="Runs per input (median CPU time).")
@click.option("--source", type=click.Path(path_type=Path), default=None,
              help="The program's folder on this machine (default: where the build ran it).")
@click.option("--workdir", type=click.Path(path_type=Path), default=None,
              help="The folder the inputs' paths are relative to on this machine (default: the build's).")
def calibrate(predictor: Path, repeats: int, source: Path | None, workdir: Path | None) -> None:
    """Re-measure a predictor's seconds per unit of work (work_s) on this machine, from a few runs of the program.

    It runs the original program on the inputs the build chose for it (spread over the cost range), with the
    campaign's environment; on a machine where the program or its inputs live elsewhere, say where with
    --source and --workdir."""
    from mantispy.calibrate import CalibrationError, CalibrationRefused
    from mantispy.calibrate import calibrate as run_calibration

    module = load_predictor(predictor)
    try:
        data = run_calibration(predictor, module, repeats=repeats, log=lambda m: click.echo(m, err=True),
                               source=source, workdir=workdir)
    except CalibrationRefused as exc:
        raise UserError(str(exc)) from None
    except (CalibrationError, module.PredictionError) as exc:
        raise FailureError(f"{predictor}: {exc}") from None
    click.echo(f"seconds per unit of work on this machine: {data['seconds_per_unit']:.4g} "
               f"(from {len(data['inputs'])} input(s)); written to {predictor}/calibration.json")


def register(group: click.Group) -> None:
    """Add the verbs to the ``mantispy`` group."""
    for command in (build, predict, report, calibrate):
        group.add_command(command)
