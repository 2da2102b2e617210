"""``mantispy phases`` (phase detection, per-phase models) and ``mantispy check`` (anomalous runs)."""

from __future__ import annotations

import json
import statistics
import sys
from dataclasses import asdict
from pathlib import Path

import click

from mantispy.errors import UserError
from mantispy.phases.model import PhaseModelError
from mantispy.phases.observe import PhaseDataError, observe
from mantispy.sampling.recorder import DEFAULT_STORE
from mantispy.sampling.store import RecordingError, RecordingStore


@click.command()
@click.argument("runs", nargs=-1)
@click.option("--all", "every", is_flag=True, help="Every recording of the store with samples (a campaign recorded "
              "with profile --sample): phases matched across runs.")
@click.option("--store", "store_path", default=DEFAULT_STORE, show_default=True, type=click.Path(path_type=Path),
              help="The store holding the recordings.")
@click.option("--epoch", "epoch_s", type=click.FloatRange(0.001, 3600), default=None,
              help="Seconds per epoch (default: 10 sampling periods, 0.1 s at 100 Hz).")
@click.option("--min-share", type=click.FloatRange(0, 1), default=0.05, show_default=True,
              help="A function on the stack less than this share of an epoch is left out of its profile.")
@click.option("--similarity", "thresholds", type=(click.FloatRange(0, 1), click.FloatRange(0, 1)), default=(0.95, 0.95),
              show_default=True, help="f_sim and t_sim an epoch must reach to match a phase (the paper's 0.95).")
@click.option("--confidence", type=click.IntRange(1, 1000), default=3, show_default=True,
              help="Consecutive matching epochs that make a new phase (fewer are absorbed).")
@click.option("--library", "include_library", is_flag=True,
              help="Count standard-library and installed packages' frames as the program's own.")
@click.option("--depth", type=click.IntRange(0, 1000), default=4, show_default=True,
              help="Only the outermost program frames of each sample count (0: every frame): a phase is what the "
                   "program does at the top of its stack, while inner helpers change from one epoch to the next.")
@click.option("--exact-repeats", is_flag=True,
              help="First cut each run's sample trace where the same stack (or the same few in turn) repeats for at "
                   "least --confidence epochs' worth of samples: each such stretch is a phase with boundaries at its "
                   "samples (the paper's exact repeats); phases between them are found by similarity.")
@click.option("--fit", "fit_path", type=click.Path(path_type=Path), default=None,
              help="Fit per-phase models on the campaign's sampled uninstrumented runs (the store of mantispy profile "
                   "SPEC --sample) and write them to this JSON file, for mantispy check.")
@click.option("--campaign", "campaign_name", default=None,
              help="A campaign of the store (its name, or its spec file): the phases of its sampled runs (and with "
                   "--fit, the one to model when the store has several).")
@click.option("--json", "as_json", is_flag=True, help="Print the phases (with --fit: the held-out errors) as JSON.")
def phases(runs: tuple[str, ...], every: bool, store_path: Path, epoch_s: float | None, min_share: float,
           thresholds: tuple[float, float], confidence: int, include_library: bool, depth: int, exact_repeats: bool,
           fit_path: Path | None, campaign_name: str | None, as_json: bool) -> None:
    """The phases of recorded runs (RUN: a number or 'last'; several, or --all, match phases across runs).

    A phase is a time slice running a stable set of functions. Each is named by the functions that set it
    apart, with their source lines, and shown with its CPU and peak RSS from the resource series; the same
    phase keeps its label in every run that has it (P1 P2 P1 ...). The phases are stored with each recording.

    With --fit, each phase's duration, CPU time, CPU use, peak memory and IO are modelled from the input
    (its descriptor numbers, the program's features and the earlier phases' measurements), beside a
    whole-run model, with errors on held-out inputs; mantispy check RUN --model FILE uses the file.
    """
    from mantispy.phases.detect import Known, PhaseOptions

    options = PhaseOptions(epoch_s=epoch_s, min_share=min_share, f_threshold=thresholds[0],
                           t_threshold=thresholds[1], confidence=confidence, include_library=include_library,
                           depth=depth, exact_repeats=exact_repeats)
    campaign_name = _campaign_name(campaign_name)
    if fit_path is not None:
        if runs or every:
            raise UserError("--fit uses every sampled uninstrumented run of the campaign; name no recording and no --all")
        _fit(store_path, campaign_name, options, fit_path, as_json)
        return
    if not runs and not every and campaign_name is None:
        raise UserError("name a recording (a number or 'last'), several, --all, or --campaign")
    known: Known = []
    report = []
    try:
        with RecordingStore(store_path, create=False) as store:
            if every or (campaign_name is not None and not runs):
                chosen = [rec for rec in store.recordings() if store.counts(rec.id)[0] > 0]
                if campaign_name is not None:
                    from mantispy.phases.training import CampaignLink

                    link = CampaignLink(store_path, campaign_name)
                    chosen = [rec for rec in chosen if rec.run_id in link.run_input]
                if not chosen:
                    raise UserError(f"{store_path}: no recording with samples; record runs first (mantispy profile "
                                    "SPEC --sample records a campaign's)")
            else:
                chosen = [store.resolve(run) for run in runs]
            for recording in chosen:
                found = observe(store, recording, options, known)
                store.save_phases(recording.id, {**asdict(options), "epoch_s": found.epoch_s}, found.phases)
                report.append((recording, found.epoch_s, found.epochs, found.phases))
    except (RecordingError, PhaseDataError, PhaseModelError) as exc:
        raise UserError(str(exc)) from None
    if as_json:
        click.echo(json.dumps([{"recording": rec.id, "run_id": rec.run_id, "epoch_s": epoch, "phases": rows}
                               for rec, epoch, _, rows in report], indent=1))
        return
    for recording, epoch, count, rows in report:
        click.echo(f"recording {recording.id}{f' (run {recording.run_id})' if recording.run_id else ''}: "
                   f"{len(rows)} phase(s) in {count} epochs of {epoch:g} s ({len({r['label'] for r in rows})} distinct)")
        for row in rows:
            extra = "".join(f", {text}" for text in (_cpu(row), _rss(row)) if text)
            click.echo(f"  {row['label']:<4} {row['start']:8.2f} - {row['end']:8.2f} s  {row['seconds']:7.2f} s of samples"
                       f"{extra}  {row['name']}")
    if len(report) > 1:
        click.echo(f"across {len(report)} runs: {len(known)} distinct phase(s)")
        for label, _ in known:
            spans = [row["end"] - row["start"] for _, _, _, rows in report for row in rows if row["label"] == label]
            having = sum(any(row["label"] == label for row in rows) for _, _, _, rows in report)
            name = next(row["name"] for _, _, _, rows in report for row in rows if row["label"] == label)
            click.echo(f"  {label:<4} in {having} run(s), median {statistics.median(spans):.2f} s: {name}")


def _campaign_name(text: str | None) -> str | None:
    """A campaign named by its name or by its spec file (whose name it takes)."""
    if text is None or not text.endswith(".toml"):
        return text
    from mantispy.campaign import SpecError, load_spec

    try:
        return load_spec(Path(text)).name
    except SpecError as exc:
        raise UserError(str(exc)) from None


def _fit(store_path: Path, campaign_name: str | None, options, fit_path: Path, as_json: bool) -> None:
    """phases --fit: per-phase models of a campaign's sampled runs."""
    from mantispy.phases import model as phase_model
    from mantispy.phases.training import campaign_training

    if not store_path.exists():
        raise UserError(f"{store_path}: no such store; profile the campaign with mantispy profile SPEC --sample "
                        "and pass its store with --store")
    if fit_path.exists() and not _is_phase_model(fit_path):
        raise UserError(f"{fit_path}: exists and is not a phase model; mantispy will not write over it, choose "
                        "another file")
    known: list = []
    try:
        training, program = campaign_training(store_path, campaign_name, options, known, log=click.echo)
        fitted = phase_model.fit(training, known, options, program, log=click.echo)
    except (RecordingError, PhaseDataError, phase_model.PhaseModelError) as exc:
        raise UserError(str(exc)) from None
    phase_model.save(fitted, fit_path)
    with RecordingStore(store_path, create=False) as store:  # the runs' phases under the model's labels, as check keeps
        for run in training:
            if run.recording_id is not None:
                store.save_phases(run.recording_id, {**asdict(options), "epoch_s": run.phases.epoch_s,
                                                     "model": str(fit_path)}, run.phases.phases)
    if as_json:
        click.echo(json.dumps(fitted["evaluation"], indent=1))
        return
    rare = f", {len(fitted['rare'])} too rare to model" if fitted["rare"] else ""
    click.echo(f"{len(training)} run(s), {len(fitted['phases'])} modelled phase(s){rare}; written to {fit_path}")
    evaluation = fitted["evaluation"]
    for label, phase in fitted["phases"].items():
        errors = evaluation.get("phases", {}).get(label, {})
        cells = ", ".join(f"{metric} {errors[metric]['median_rel_error']:.1%}" for metric in phase["metrics"] if metric in errors)
        chosen = phase["metrics"].get("wall_s", {}).get("model", {}).get("selection", {})
        form = f"{chosen.get('chosen', '-').split(' ')[-1]} of {chosen.get('uses', '-')}"
        click.echo(f"  {label:<4} in {phase['runs']} run(s), duration: {form}; held-out error: {cells or 'n/a'}"
                   f"  {phase['name']}")
    total = evaluation.get("total_wall_s")
    if total:
        click.echo(f"run duration, held-out median error over {total['n']} run(s): sum of phases "
                   f"{total['sum_of_phases']:.1%}, whole-run model {total['whole_run']:.1%}")
    elif not evaluation:
        click.echo("no held-out evaluation: fewer than 8 inputs")
    elif evaluation.get("incomplete_runs"):
        click.echo(f"run duration: no held-out total: {evaluation['incomplete_runs']} of {evaluation['runs']} held-out "
                   "run(s) had a phase too rare to model, whose time no model estimates")
    own = fitted["own_time"]["functions"]
    if own:
        largest = max(own, key=lambda name: own[name]["median"])
        click.echo(f"own time: {len(own)} function(s) with {fitted['own_time']['listed']:.1%} of a run or more; the "
                   f"largest, {largest}, {own[largest]['median']:.0%} of a run (median; at most {own[largest]['max']:.0%})")


def _is_phase_model(path: Path) -> bool:
    try:
        return json.loads(path.read_text(encoding="utf-8")).get("format") == "mantispy-phase-model"
    except (OSError, ValueError, AttributeError):
        return False


@click.command(context_settings={"ignore_unknown_options": True})
@click.argument("target", nargs=-1, type=click.UNPROCESSED)
@click.option("--model", "model_path", required=True, type=click.Path(path_type=Path),
              help="The phase model (mantispy phases --fit FILE).")
@click.option("--store", "store_path", default=None, type=click.Path(path_type=Path),
              help="The store holding RUN, or where a new recording goes (default: .mantis/record.db).")
@click.option("--k", "k", type=click.FloatRange(1, 100), default=4.0, show_default=True,
              help="Robust z-score (in units of the model's out-of-fold residual spread) beyond which a value departs.")
@click.option("--min-relative", type=click.FloatRange(0, 10), default=0.10, show_default=True,
              help="A departure must also be at least this share of the estimate.")
@click.option("--own-margin", type=click.FloatRange(0, 1), default=0.05, show_default=True,
              help="A function's own time departs when it exceeds the most the training runs' fit allows for a run "
                   "this long by this share of the run (and the fitted line by --k spreads).")
@click.option("--shortfalls", is_flag=True,
              help="Judge values below their estimates too (a phase shorter, with less CPU time, memory or IO than "
                   "expected); by default a run that used less is no anomaly, and only less CPU use departs.")
@click.option("--shortfall-cover", type=click.FloatRange(0, 1), default=0.5, show_default=True,
              help="With --shortfalls: a phase short of its estimate departs only when the run's total fell short by "
                   "this share of the phase's shortfall too (else its time went to phases labelled otherwise); 0 "
                   "judges every shortfall.")
@click.option("--excess-cover", type=click.FloatRange(0, 1), default=0.5, show_default=True,
              help="A phase over its estimate departs only when the run's total went over its whole-run estimate "
                   "by this share of the phase's excess too (else its time came from phases labelled otherwise); 0 "
                   "judges every excess.")
@click.option("--fail-on-anomaly", is_flag=True, help="Exit with status 1 when the run is anomalous (for CI).")
@click.option("--json", "as_json", is_flag=True, help="Print the verdict as JSON.")
def check(target: tuple[str, ...], model_path: Path, store_path: Path | None, k: float, min_relative: float,
          own_margin: float, shortfalls: bool, shortfall_cover: float, excess_cover: float, fail_on_anomaly: bool,
          as_json: bool) -> None:
    """Whether a run departs from its phase model, and in which phase and resource.

    \b
    mantispy check RUN --model FILE [--store STORE]          a recorded run (a number or 'last')
    mantispy check --model FILE -- SCRIPT|-m MODULE ARGS...   record the program now, then check it

    Every phase's duration, CPU time, CPU use, peak memory and IO is compared with the model's estimate for
    the run's input; beneath the phases, each function's own time is compared with what the training runs
    gave it in runs of this length; a whole-run threshold baseline is shown beside. Exit status 0 (1 with
    --fail-on-anomaly when the run is anomalous). A program run by check writes its own output first.
    """
    from mantispy.phases import model as phase_model
    from mantispy.phases.anomaly import CheckOptions
    from mantispy.phases.anomaly import check as check_run
    from mantispy.phases.detect import PhaseOptions
    from mantispy.phases.training import CampaignLink, recording_inputs

    try:
        model = phase_model.load(model_path)
    except phase_model.PhaseModelError as exc:
        raise UserError(str(exc)) from None
    args = list(target[1:] if target[:1] == ("--",) else target)
    if not args:
        raise UserError("name a recording (a number or 'last') or a program after --: mantispy check RUN --model FILE")
    store_file = store_path or DEFAULT_STORE
    try:
        if len(args) == 1 and (args[0].isdigit() or args[0] == "last") and target[:1] != ("--",):
            with RecordingStore(store_file, create=False) as store:
                recording = store.resolve(args[0])
        else:
            recording = _record_now(args, store_file, model)
        options = PhaseOptions(**{**model["options"], "epoch_s": model["epoch_s"]})
        link = None
        if recording.run_id is not None and model["program"].get("campaign"):
            try:
                link = CampaignLink(store_file, model["program"]["campaign"])
            except phase_model.PhaseModelError:
                link = None
        with RecordingStore(store_file, create=False) as store:
            run = observe(store, recording, options, [(label, profile) for label, profile in model["known"]])
        from mantispy.phases.anomaly import foreign_share

        foreign = foreign_share(model, run)
        if foreign > 0.5:
            raise UserError(f"recording {recording.id} ran other code than the model's program ({foreign:.0%} of its "
                            f"sampled time in functions no training run ran): check it against a model of its own program")
        with RecordingStore(store_file, create=False) as store:  # its view then shows the phases the verdict names
            store.save_phases(recording.id, {**asdict(options), "epoch_s": run.epoch_s, "model": str(model_path)},
                              run.phases)
        inputs, features, where = recording_inputs(recording, link)
    except (RecordingError, PhaseDataError) as exc:
        raise UserError(str(exc)) from None
    rule = CheckOptions(k=k, min_relative=min_relative, own_margin=own_margin, shortfalls=shortfalls,
                        shortfall_cover=shortfall_cover, excess_cover=excess_cover)
    verdict = check_run(model, run, inputs, features or None, rule, where)
    if as_json:
        click.echo(json.dumps({"recording": recording.id, **verdict.to_dict()}, indent=1))
    else:
        _print_verdict(recording.id, verdict, run)
    if fail_on_anomaly and verdict.anomalous:
        sys.exit(1)


def _record_now(args: list[str], store_file: Path, model: dict):
    """Record the program the way the model's training runs were recorded."""
    from mantispy.sampling.recorder import RecordOptions, record

    sampling = model["program"].get("sampling") or {}
    options = RecordOptions(args, store=store_file, rate=float(sampling.get("rate", 100.0)),
                            interval=float(sampling.get("interval", 1.0)), mode=str(sampling.get("mode", "cpu")),
                            sampler=str(sampling.get("sampler", "builtin")))
    result = record(options, log=lambda m: click.echo(f"mantispy: {m}", err=True))
    if result.recording.returncode:
        click.echo(f"mantispy: note: the program exited with status {result.recording.returncode}", err=True)
    return result.recording


def _print_verdict(recording_id: int, verdict, run) -> None:
    state = "ANOMALOUS" if verdict.anomalous else "normal"
    click.echo(f"recording {recording_id}: {state}")
    for departure in verdict.departures:
        click.echo(f"  departs: {departure.describe()}")
    for label in run.order():
        rows = [c for c in verdict.comparisons if c.phase == label]
        if not rows:
            continue
        worst = max(rows, key=lambda c: abs(c.z))
        what = f"own time of {worst.function}" if worst.model == "own-time" else worst.metric
        click.echo(f"  {label:<4} {'departs' if any(c.departs for c in rows) else 'ok':<8} largest |z| {abs(worst.z):5.1f} "
                   f"({what})  {rows[0].name}")
    baseline = "anomalous" if verdict.baseline_anomalous else "normal"
    click.echo(f"  whole-run baseline: {baseline}" + "".join(
        f"; {c.metric} {c.actual:.3g} vs {c.expected:.3g} (z {c.z:+.1f})" for c in verdict.baseline))
    click.echo(f"  inputs from {verdict.inputs_from}")
    for note in verdict.notes:
        click.echo(f"  note: {note}")


def _cpu(row: dict) -> str:
    return f"CPU {row['cpu_percent']:.0f} %" if row.get("cpu_percent") is not None else ""


def _rss(row: dict) -> str:
    return f"RSS {row['peak_rss_bytes'] / 2**20:.0f} MiB" if row.get("peak_rss_bytes") is not None else ""


def register(group: click.Group) -> None:
    """Add the verbs to the ``mantispy`` group."""
    group.add_command(phases)
    group.add_command(check)
