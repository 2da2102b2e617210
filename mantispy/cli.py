"""The ``mantispy`` command line.

Every verb has ``--help``. Bad usage or bad input ends with one line ``mantispy: error: ...`` on stderr
that names the file and the fix, and exit status 2; a program or build that failed, with exit status 1
(:mod:`mantispy.errors`). No traceback unless ``--debug`` or MANTISPY_DEBUG=1 asks for one.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import sys
from collections import Counter
from pathlib import Path

import click

from mantispy.cli_build import interval_levels
from mantispy.cli_build import register as _register_product_verbs
from mantispy.cli_counters import register as _register_counter_verbs
from mantispy.cli_dataflow import register as _register_dataflow_verbs
from mantispy.cli_diagnose import register as _register_diagnosis_verbs
from mantispy.cli_phases import register as _register_phase_verbs
from mantispy.cli_sampling import register as _register_sampling_verbs
from mantispy.core.version import VERSION as __version__
from mantispy.core.watchdog import WATCHDOG
from mantispy.errors import DEBUG_ENV, EXIT_FAILED, FailureError, UserError
from mantispy.modeling.defaults import VIEW_CONFIDENCE


def _output_file(out: Path, is_ours, what: str, force: bool | None = None, **protected: Path | None) -> None:
    """Refuse (exit 2) a file output that would overwrite a protected path or a file mantispy did not write
    (``force``: the verb's --force, None where it has none), and make its folder, before the work."""
    from mantispy.outputs import OutputError, check_file, refuse_overlap

    try:
        refuse_overlap(out, {k.replace("_", " "): v for k, v in protected.items()})
        check_file(out, is_ours, what, force=bool(force), can_force=force is not None)
        out.parent.mkdir(parents=True, exist_ok=True)
    except OutputError as exc:
        raise UserError(str(exc)) from None
    except OSError as exc:
        raise UserError(f"{out.parent}: cannot make the output's folder ({exc.strerror or exc}); choose another -o") from None


def _json_of(path: Path):
    """The JSON document in ``path``, or None."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _json_format(path: Path) -> str | None:
    """The ``format`` field of the JSON object in ``path`` (None for anything else)."""
    data = _json_of(path)
    return data.get("format") if isinstance(data, dict) else None


def _families(value: str | None) -> frozenset[str]:
    from mantispy.instrument.manifest import FAMILIES

    if not value:
        return frozenset(FAMILIES)
    chosen = {v.strip() for v in value.split(",") if v.strip()}
    unknown = chosen - set(FAMILIES)
    if unknown:
        raise click.BadParameter(f"unknown famil{'ies' if len(unknown) > 1 else 'y'} {', '.join(sorted(unknown))}; choose from {','.join(FAMILIES)}")
    return frozenset(chosen)


SECTIONS = (
    ("Build and use a predictor", ("build", "predict", "report", "calibrate")),
    ("The pipeline step by step", ("instrument", "run", "features", "profile", "runs", "export", "coverage", "fit",
                                   "show")),
    ("Program analysis", ("callgraph", "cfg", "pdg", "slice", "fidelity")),
    ("Where and when the cost goes", ("record", "recordings", "flame", "series", "phases", "counters",
                                      "diagnose")),
)
"""The verbs as ``mantispy --help`` lists them: in pipeline order, grouped."""


def summary(command: click.Command) -> str:
    """A verb's one-line summary: its help's first sentence, never cut off."""
    text = command.short_help or " ".join((command.help or "").split("\n\n")[0].split())
    first = text.split(". ")[0].rstrip(".")
    return first + "."


class PipelineGroup(click.Group):
    """The ``mantispy`` group: verbs listed in pipeline order, in sections, with whole summaries."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        ordered = [name for _, names in SECTIONS for name in names if name in self.commands]
        return ordered + sorted(set(self.commands) - set(ordered))

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        listed = set()
        for title, names in SECTIONS:
            rows = [(name, summary(self.commands[name])) for name in names if name in self.commands]
            listed.update(names)
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)
        rest = [(name, summary(self.commands[name])) for name in sorted(set(self.commands) - listed)]
        if rest:
            with formatter.section("Other commands"):
                formatter.write_dl(rest)


@click.group(cls=PipelineGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
@click.version_option(__version__, prog_name="mantispy")
@click.option("--debug", is_flag=True, help=f"Show the traceback of an internal error (or set {DEBUG_ENV}=1).")
def cli(debug: bool) -> None:
    """Predict a Python program's run time and resources from its input, before running it.

    Exit status: 0 success, 1 the program or the build failed, 2 bad usage or bad input.
    """
    if debug:
        os.environ[DEBUG_ENV] = "1"


@cli.command()
@click.argument("src", type=click.Path(path_type=Path))
@click.option("-o", "--out", "out", required=True, type=click.Path(path_type=Path), help="Folder for the instrumented mirror (never inside SRC).")
@click.option("--only", "only", metavar="FAMILIES", help="Comma list of loops,branches,calls,exceptions,values (default: all).")
@click.option("--k", "k", default=5, show_default=True, type=click.IntRange(1, 1000), help="Value versions kept per variable.")
@click.option("--exclude", "exclude", multiple=True, metavar="GLOB", help="Copy matching files unchanged (relative path or file name). Repeatable.")
@click.option("--skip-errors", is_flag=True, help="Exit 0 even if some files could not be instrumented (they are copied unchanged).")
@click.option("--force", is_flag=True, help="Replace OUT even if it is not an earlier mantispy output.")
@click.option("--budget", type=float, default=None, metavar="FRACTION", help="Max overhead, e.g. 0.05 for 5%; needs --calibrate.")
@click.option("--calibrate", "calibrate", multiple=True, metavar="ARGS", help='A program invocation to measure, e.g. "app.py data/in.txt" or "-m pkg --n 3". Repeatable.')
@click.option("--calibrate-repeats", default=5, show_default=True, type=click.IntRange(1, 50), help="Runs per calibration input (best CPU time kept).")
@click.option("--probe-every-arm", is_flag=True,
              help="Give every else arm its own probe, even where its count follows from others (slower; counts a "
                   "test that raises as no arm rather than as the else arm).")
def instrument(src: Path, out: Path, only: str | None, k: int, exclude: tuple[str, ...], skip_errors: bool,
               force: bool, budget: float | None, calibrate: tuple[str, ...], calibrate_repeats: int,
               probe_every_arm: bool = False) -> None:
    """Rewrite SRC (a .py file or a source folder) into OUT so that it counts its own features.

    OUT mirrors SRC: every .py instrumented, every other file copied, and OUT/.mantis/manifest.json
    describes each feature. Files with syntax errors are reported as FILE:LINE: MESSAGE and copied
    unchanged; the exit status is then 1 unless --skip-errors.
    """
    from mantispy.instrument.transformer import Options
    from mantispy.instrument.tree import InstrumentError, instrument_tree

    options = Options(families=_families(only), k=k, derive_arms=not probe_every_arm)
    if calibrate and budget is None:
        raise click.UsageError("--calibrate is only used with --budget")
    try:
        if budget is not None:
            from mantispy.instrument.budget import instrument_within_budget

            invocations = [shlex.split(c) for c in calibrate]
            outcome = instrument_within_budget(
                src, out, options, budget, invocations, list(exclude), force, calibrate_repeats,
                log=lambda msg: click.echo(f"mantispy: budget {msg}", err=True),
            )
            result = outcome.tree
            if not outcome.met:
                click.echo(
                    f"mantispy: warning: overhead {outcome.rounds[-1].overhead:+.1%} is still above the budget "
                    f"{budget:.1%} after {len(outcome.rounds)} rounds",
                    err=True,
                )
        else:
            result = instrument_tree(src, out, options, list(exclude), force)
    except InstrumentError as exc:
        raise UserError(str(exc)) from None
    except Exception as exc:  # launching calibration runs
        from mantispy.core.launch import LaunchError

        if isinstance(exc, LaunchError):
            raise UserError(str(exc)) from None
        raise
    for error in result.errors:
        click.echo(str(error), err=True)
    manifest = result.manifest
    kinds = Counter(f.kind for f in manifest.features)
    files = Counter(f.status for f in manifest.files)
    click.echo(
        f"instrumented {files['instrumented']} file(s) into {out} "
        f"({files['copied']} copied, {files['excluded']} excluded, {files['error']} with errors): "
        + ", ".join(f"{kinds[kind]} {kind}" for kind in ("loop", "branch", "call", "exception", "value"))
        + " features"
    )
    if manifest.removed:
        click.echo(f"budget: removed {len(manifest.removed)} hot site(s); see {out}/.mantis/manifest.json")
    if result.errors and not skip_errors:
        sys.exit(1)


@cli.command(context_settings={"ignore_unknown_options": True})
@click.argument("out", type=click.Path(path_type=Path))
@click.option("--features-out", required=True, type=click.Path(path_type=Path), help="Where to write {feature_id: value} JSON.")
@click.option("--python", "python", default=None, help="Interpreter to run with (default: this one).")
@click.option("--observed-calls", "observed_calls", default=None, type=click.Path(path_type=Path),
              help="Also record which callee each call site reached (hybrid slicing); merged into this JSON file.")
@click.option("--backend", type=click.Choice(["source", "monitor"]), default="source", show_default=True,
              help="source: OUT is an instrumented folder; monitor: OUT is the original source, counted from its "
                   "bytecode (sys.monitoring on 3.12+, sys.settrace on 3.11), nothing rewritten.")
@click.option("--exclude", multiple=True, help="With --backend monitor: glob of files not to count (repeatable).")
@click.option("--include", multiple=True, metavar="PACKAGE",
              help="With --backend monitor: also count this installed package (repeatable); its features are "
                   "named PACKAGE/module.py:..., as in a copy of it at the top of OUT.")
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def run(out: Path, features_out: Path, python: str | None, args: tuple[str, ...], observed_calls: Path | None = None,
        backend: str = "source", exclude: tuple[str, ...] = (), include: tuple[str, ...] = ()) -> None:
    """Run the instrumented program in OUT: mantispy run OUT --features-out F -- SCRIPT|-m MODULE ARGS...

    The program's output and exit status are its own; the features land in F when it ends (normal
    exit, sys.exit, uncaught exception or SIGTERM; os._exit loses them). With --backend monitor, OUT is
    the program's own source folder (or file), run unchanged: the same loop, branch, call and handler
    counts under the same feature ids, no values.
    """
    from mantispy.core.launch import LaunchError, program_argv, program_env, run_measured
    from mantispy.instrument.manifest import manifest_path

    if backend == "monitor" and observed_calls is not None:
        raise UserError("--observed-calls: recorded by the source backend's instrumented copy only; run an "
                        "instrumented folder without --backend monitor to record them")
    if backend == "source" and (include or exclude):
        option = "--include" if include else "--exclude"
        raise UserError(f"{option}: chooses what --backend monitor counts; an instrumented folder counts what "
                        "mantispy instrument put in it (choose files there with mantispy instrument --exclude)")
    if backend == "monitor":
        _run_monitored(out, features_out, python, args, list(exclude), list(include))
        return
    if not manifest_path(out).exists():
        raise UserError(f"{out}: not an instrumented folder (no .mantis/manifest.json); run mantispy instrument first")
    _check_python(python)
    features_out = _features_target(features_out)
    if observed_calls is not None:
        _check_observed_calls(observed_calls)
    extra: list[Path] = []
    if python is not None:
        from mantispy.standalone_runtime import standalone_runtime_dir

        extra.append(standalone_runtime_dir(out / ".mantis" / "pyroot"))
    try:
        argv = program_argv(out, list(args), python)
    except LaunchError as exc:
        raise UserError(str(exc)) from None
    env = program_env(out.resolve(), features_out, extra)
    if observed_calls is not None:  # the recorder wraps the program; see mantispy/observe.py
        import tempfile

        from mantispy.observe import recording_argv, recording_env

        calls_tmp = tempfile.TemporaryDirectory(prefix="mantis-calls-")
        argv, raw_calls = recording_argv(argv), Path(calls_tmp.name) / "calls.json"
        env.update(recording_env(out, raw_calls))
    measurement = run_measured(argv, env)
    if observed_calls is not None:
        from mantispy.slicer.observations import record_build_run

        merged = record_build_run(raw_calls, out, observed_calls, log=lambda m: click.echo(f"mantispy: warning: {m}", err=True))
        calls_tmp.cleanup()
        click.echo(f"mantispy: observed calls merged into {observed_calls}" if merged is not None else
                   "mantispy: warning: no observed calls written (the program ended through os._exit or a signal)", err=True)
    if not features_out.exists():
        click.echo(
            f"mantispy: warning: no features written to {features_out} (the program ended through os._exit "
            "or a signal other than SIGTERM)",
            err=True,
        )
    code = measurement.returncode
    sys.exit(code if code >= 0 else 128 - code)


def _features_target(path: Path) -> Path:
    """Where ``run`` writes its features: a new file, or an earlier features file (replaced), never a file
    of the user's; its folder is made."""
    path = path.resolve()
    if path.is_dir():
        raise UserError(f"{path}: a folder; give --features-out a file's path (e.g. {path / 'features.json'})")
    if path.exists():
        earlier = _json_of(path)
        if not (isinstance(earlier, dict) and all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                                  for v in earlier.values())):
            raise UserError(f"{path}: exists and is not a features file; choose another --features-out (mantispy "
                            "does not write over files)")
        path.unlink()
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def _check_python(python: str | None) -> None:
    """``--python``: an interpreter that exists (a path, or a name on PATH)."""
    import shutil

    if python is not None and shutil.which(python) is None:
        raise UserError(f"--python {python}: no such interpreter (not an executable file, nor a command on PATH)")


def _check_observed_calls(path: Path) -> None:
    """``--observed-calls``: a new file, or an observations file to merge into; never a file of the user's."""
    if path.is_dir():
        raise UserError(f"{path}: a folder; give --observed-calls a file's path (e.g. {path / 'calls.json'})")
    from mantispy.runtime.observed_calls import FORMAT

    if path.exists() and _json_format(path) != FORMAT:
        raise UserError(f"{path}: exists and is not an observed-calls file; choose another --observed-calls "
                        "(mantispy does not write over files)")


def _run_monitored(src: Path, features_out: Path, python: str | None, args: tuple[str, ...], exclude: list[str],
                   include: list[str]) -> None:
    """``mantispy run --backend monitor``: the original program, counted from its bytecode."""
    from mantispy.core.launch import LaunchError, program_argv, run_measured
    from mantispy.monitoring.launch import MonitoredLaunch
    from mantispy.monitoring.plan import PlanError

    if not src.exists():
        raise UserError(f"{src}: no such file or folder; give the program's source folder (or .py file)")
    _check_python(python)
    if features_out.resolve().is_relative_to(src.resolve()) if src.is_dir() else False:
        raise UserError(f"{features_out.resolve()}: inside the source folder {src}; write the features elsewhere")
    features_out = _features_target(features_out)
    root = src.resolve() if src.is_dir() else src.resolve().parent
    try:
        argv = program_argv(root, list(args), python)
    except LaunchError as exc:
        raise UserError(str(exc)) from None
    try:
        launch = MonitoredLaunch(src, features_out, python, exclude, include)
    except PlanError as exc:
        raise UserError(str(exc)) from None
    with launch:
        summary = launch.summary
        if summary["unplaced"]:
            click.echo(f"mantispy: warning: {summary['unplaced']} of {summary['counters']} counter(s) have no construct "
                       "the bytecode backend can find; they count 0", err=True)
        measurement = run_measured(argv, launch.env)
    if not features_out.exists():
        click.echo(f"mantispy: warning: no features written to {features_out} (the program ended through os._exit "
                   "or a signal other than SIGTERM, or counted nothing: see any line of mantispy's above)", err=True)
    code = measurement.returncode
    sys.exit(code if code >= 0 else 128 - code)


@cli.command()
@click.argument("features_file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--manifest", "manifest_from", required=True, type=click.Path(path_type=Path), help="The instrumented folder (or its manifest.json).")
@click.option("--top", default=20, show_default=True, type=click.IntRange(1, 100000), help="How many features to show.")
@click.option("--kind", "kinds", multiple=True, type=click.Choice(["loop", "branch", "call", "exception", "value"]), help="Only these kinds.")
def features(features_file: Path, manifest_from: Path, top: int, kinds: tuple[str, ...]) -> None:
    """Show one run's largest counters, then its recorded values, with their source locations."""
    from rich.console import Console
    from rich.table import Table

    from mantispy.instrument.manifest import Manifest

    try:
        manifest = Manifest.load(manifest_from)
    except (OSError, ValueError, KeyError) as exc:
        raise UserError(f"{manifest_from}: cannot read the manifest ({exc}); point --manifest at an instrumented folder") from None
    try:
        values = json.loads(features_file.read_text())
    except (OSError, ValueError) as exc:
        raise UserError(f"{features_file}: not a features file ({exc}); produce one with mantispy run") from None
    if not isinstance(values, dict) or "format" in values:
        raise UserError(f"{features_file}: not a features file (a JSON object of feature ids and numbers); produce one "
                        "with mantispy run --features-out")
    wrong = next(((k, v) for k, v in values.items() if not isinstance(v, (int, float)) or isinstance(v, bool)), None)
    if wrong is not None:
        raise UserError(f"{features_file}: feature {wrong[0]} holds {wrong[1]!r}, not a number; produce the file with "
                        "mantispy run --features-out")
    by_id = {f.id: f for f in manifest.features}
    rows = [(fid, v) for fid, v in values.items() if fid in by_id and (not kinds or by_id[fid].kind in kinds)]
    # Counters first (largest count first), then recorded values: they answer different questions.
    rows.sort(key=lambda item: (by_id[item[0]].kind == "value", -abs(item[1]), item[0]))
    table = Table(title=f"{len(values)} non-zero features of {len(manifest.features)} ({features_file.name})")
    for column in ("value", "kind", "where", "scope", "source"):
        table.add_column(column, overflow="fold", justify="right" if column == "value" else "left")
    for fid, value in rows[:top]:
        feat = by_id[fid]
        label = feat.kind + (f" #{feat.version}" if feat.version else "")
        shown = f"{value:g}" if isinstance(value, float) else str(value)
        table.add_row(shown, label, f"{feat.file}:{feat.span[0]}", feat.qualname, feat.snippet)
    Console(width=None if sys.stdout.isatty() else 150).print(table)


DEFAULT_STORE = Path("mantis.db")


def _store_option(fn):
    return click.option("--store", "store_path", default=str(DEFAULT_STORE), show_default=True, type=click.Path(path_type=Path),
                        help="The run store (SQLite); without it, also the one store mantispy build wrote here.")(fn)


def _open_store(path: Path, create: bool = False):
    """The run store at ``path``. Without --store (``mantis.db`` here, missing), the one store mantispy
    build wrote under ``.mantis/build-work/`` here, when there is exactly one."""
    from mantispy.store import RunStore, StoreError

    if not create and path == DEFAULT_STORE and not path.exists():
        built = sorted(Path(".mantis", "build-work").glob("*/mantis.db"))
        if len(built) == 1:
            click.echo(f"mantispy: using the store mantispy build wrote: {built[0]} (give --store to choose)", err=True)
            path = built[0]
        elif built:
            raise UserError(f"{path}: no such store here; mantispy build wrote several, choose one with --store: "
                            + ", ".join(str(b) for b in built))
    try:
        return RunStore(path, create=create)
    except StoreError as exc:
        raise UserError(str(exc)) from None


def _pick_campaign(store, name: str | None):
    campaigns = store.campaigns()
    if not campaigns:
        raise UserError(f"{store.path}: the store holds no campaign yet; run mantispy profile first")
    if name is None:
        if len(campaigns) > 1:
            names = ", ".join(c.name for c in campaigns)
            raise UserError(f"{store.path}: several campaigns ({names}); choose one with --campaign")
        return campaigns[0]
    found = store.campaign(name)
    if found is None:
        raise UserError(f"{store.path}: no campaign {name!r}; known: {', '.join(c.name for c in campaigns)}")
    return found


@cli.command()
@click.argument("spec_file", metavar="SPEC", type=click.Path(path_type=Path))
@_store_option
@click.option("--jobs", default=1, show_default=True, type=click.IntRange(1, 256), help="Runs at once (local joblib workers).")
@click.option("--resume", is_flag=True, help="Continue a stopped campaign: stored runs are kept and not run again.")
@click.option("--replace", is_flag=True, help="Discard the campaign's stored runs and start over.")
@click.option("--cluster", metavar="ADDRESS", default=None, help="Run on a Dask distributed scheduler, e.g. tcp://host:8786.")
@click.option("--coverage", "with_coverage", is_flag=True, help="Also measure which lines/branches the inputs reach (coverage.py).")
@click.option("--observe-calls", "observe_calls", is_flag=True,
              help="Afterwards re-run some inputs untimed, recording which callee each call site reached (hybrid slicing).")
@click.option("--observe-inputs", default=10, show_default=True, type=click.IntRange(1),
              help="How many inputs --observe-calls re-runs (spread over the campaign's inputs).")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar or progress lines; only errors and the summary.")
@click.option("-v", "--verbose", is_flag=True, help="Also one line per finished run: input, variant, status, seconds.")
@click.option("--sample", is_flag=True, help="Also stack-sample every run and poll its resources, stored as a recording "
              "of the run (mantispy recordings / flame / series --store STORE); adds the sampler's 1-3 % to the runs.")
@click.option("--sample-rate", type=click.FloatRange(1, 1000), default=100.0, show_default=True,
              help="Samples per second with --sample.")
@click.option("--sample-interval", type=click.FloatRange(0.1, 3600), default=1.0, show_default=True,
              help="Seconds between resource points with --sample.")
@click.option("--sampler", "sampler_name", type=click.Choice(["builtin", "signal"]), default="builtin", show_default=True,
              help="With --sample: builtin samples from its own thread; signal samples the main thread on SIGPROF "
              "(unbiased where the program often releases the GIL in short C calls; see mantispy record).")
def profile(spec_file: Path, store_path: Path, jobs: int, resume: bool, replace: bool, cluster: str | None,
            with_coverage: bool, observe_calls: bool = False, observe_inputs: int = 10, quiet: bool = False,
            verbose: bool = False, sample: bool = False, sample_rate: float = 100.0, sample_interval: float = 1.0,
            sampler_name: str = "builtin") -> None:
    """Run the instrumented program over a campaign's inputs; store metrics and features per run.

    SPEC is a TOML campaign file (see the README). Each run is a fresh subprocess; a crash or timeout is
    stored with its status and stderr tail and the campaign goes on.
    """
    import os

    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    from mantispy.campaign import SpecError, load_spec
    from mantispy.profiler import profile as run_profile
    from mantispy.store import StoreError

    err = Console(stderr=True)
    if resume and replace:
        raise UserError("--resume and --replace: give one (--resume keeps the stored runs, --replace discards them)")
    if quiet and verbose:
        raise UserError("-q and -v: give one (-q prints no progress, -v every run)")
    try:
        spec = load_spec(spec_file)
    except SpecError as exc:
        raise UserError(str(exc)) from None
    if jobs > 1 and not cluster:
        err.print(f"mantispy: warning: {jobs} concurrent runs on {os.cpu_count()} cores disturb each other's timings; "
                  "use --jobs 1 for the runs you model")
    store = _open_store(store_path, create=True)
    failures = 0
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TextColumn("{task.fields[failed]} failed"), TimeElapsedColumn(), TimeRemainingColumn(),
                  console=err, transient=False, disable=quiet) as progress:
        bar = progress.add_task(f"profiling {spec.name}", total=None, failed=0)

        def on_result(record) -> None:
            nonlocal failures
            failures += record.status != "ok"
            progress.update(bar, advance=1, failed=failures)
            if verbose:
                progress.console.print(f"mantispy: {record.input_id} #{record.repeat} {record.variant}: {record.status} "
                                       f"{record.metrics.get('wall_s', float('nan')):.3f} s", highlight=False)

        try:
            summary = run_profile(spec, store, jobs, resume, replace, cluster,
                                  on_start=lambda n: progress.update(bar, total=n), on_result=on_result,
                                  log=(lambda _m: None) if quiet else (lambda m: err.print(f"mantispy: {m}", soft_wrap=True, highlight=False)),
                                  sample={"rate": sample_rate, "mode": "cpu", "interval": sample_interval,
                                          "sampler": sampler_name}
                                  if sample else None)
        except StoreError as exc:
            raise UserError(str(exc)) from None
    if with_coverage:
        from mantispy.coverage_pass import measure_coverage

        err.print("mantispy: measuring input coverage (one more run per input, under coverage.py)")
        campaign = store.campaign(spec.name)
        store.set_campaign_json(campaign, "coverage_json", measure_coverage(spec, jobs))
    if observe_calls:
        from mantispy.observe import observe_campaign, summary_line

        err.print(f"mantispy: recording observed calls (up to {observe_inputs} untimed runs of the original source)")
        calls_path, calls = observe_campaign(spec, store_path, observe_inputs, jobs, log=lambda m: err.print(f"mantispy: {m}"))
        err.print(f"mantispy: {summary_line(calls, calls_path)}")
    campaign = store.campaign(spec.name)
    _print_summary(store, campaign, summary)
    try:
        _check_campaign_outcome(store, campaign)
    finally:
        store.close()


def _check_campaign_outcome(store, campaign) -> None:
    """A campaign whose every run failed, or whose runs recorded no feature, is a failure (exit 1)."""
    frame = store.dataframe(campaign, variant="instrumented", status="ok")
    if frame.empty:
        raise FailureError(f"{store.path}: every run of campaign {campaign.name!r} failed; see why with mantispy runs "
                           f"--store {store.path} --list (each run keeps its stderr tail)")
    features = [c for c in frame.columns if not c.startswith(("metric:", "input:")) and c not in ("input_id", "repeat", "status")]
    if not features:
        raise FailureError(f"{store.path}: campaign {campaign.name!r} recorded no feature in any run (no instrumented "
                           "construct ran: the program has none, or its files could not be instrumented, see above), "
                           "so there is nothing to model")


def noise_lines(noise: dict) -> list[str]:
    """The campaign's noise floor, one line per metric (see mantispy.measurement)."""
    names = {"wall_s": "wall time", "cpu_s": "CPU time", "max_rss_kb": "peak RSS"}
    return [f"noise floor of {names.get(metric, metric)}: {data['floor']:.1%} median deviation of one run from its "
            f"input's median ({data['inputs']} inputs run at least twice); no model can be judged below it"
            for metric, data in noise.items()]


def _print_summary(store, campaign, summary=None) -> None:
    import statistics

    from rich.console import Console
    from rich.table import Table

    runs = store.runs(campaign)
    table = Table(title=f"campaign {campaign.name} in {store.path}")
    for column in ("variant", "runs", "ok", "failed", "timeout", "error", "median wall s", "median cpu s", "median peak RSS MiB"):
        table.add_column(column, justify="left" if column == "variant" else "right")
    for variant in ("instrumented", "original"):
        rows = [r for r in runs if r["variant"] == variant]
        if not rows:
            continue
        ok = [r for r in rows if r["status"] == "ok"]
        med = lambda key, scale=1.0: f"{statistics.median(r['metrics'][key] for r in ok) * scale:.3f}" if ok and key in ok[0]["metrics"] else "-"  # noqa: E731
        counts = {s: sum(r["status"] == s for r in rows) for s in ("ok", "failed", "timeout", "error")}
        table.add_row(variant, str(len(rows)), *(str(counts[s]) for s in ("ok", "failed", "timeout", "error")),
                      med("wall_s"), med("cpu_s"), med("max_rss_kb", 1 / 1024))
    console = Console(width=None if sys.stdout.isatty() else 150)
    console.print(table)
    if summary is not None:
        console.print(f"this call: {summary.executed} run(s) executed, {summary.skipped} already stored")
    calibration = campaign.calibration or (summary.overhead if summary else None)
    if calibration and calibration.get("median_overhead") is not None:
        console.print(f"instrumentation overhead (CPU time, median over {len(calibration['per_input'])} calibration "
                      f"input(s)): {calibration['median_overhead']:+.1%}")
    for line in noise_lines((calibration or {}).get("noise") or {}):
        console.print(line)
    failed = [r for r in runs if r["status"] != "ok"]
    for r in failed[:5]:
        last = (r["stderr_tail"] or "").strip().splitlines()[-1:] or [""]
        console.print(f"  {r['status']}: input {r['input_id']} (repeat {r['repeat']}, {r['variant']}): {last[0][:120]}")


@cli.command()
@_store_option
@click.option("--campaign", "campaign_name", default=None, help="Campaign name (default: the only one).")
@click.option("--list", "list_runs", is_flag=True, help="List every run, not only the summary.")
def runs(store_path: Path, campaign_name: str | None, list_runs: bool) -> None:
    """Summarise (or list) the runs of a campaign in the store."""
    from rich.console import Console
    from rich.table import Table

    store = _open_store(store_path)
    campaign = _pick_campaign(store, campaign_name)
    _print_summary(store, campaign)
    if list_runs:
        table = Table()
        for column in ("run", "input", "repeat", "variant", "status", "exit", "wall s", "cpu s", "peak RSS KiB"):
            table.add_column(column)
        for r in store.runs(campaign):
            m = r["metrics"]
            table.add_row(str(r["run_id"]), r["input_id"], str(r["repeat"]), r["variant"], r["status"], str(r["returncode"]),
                          *(f"{m[k]:.4g}" if k in m else "-" for k in ("wall_s", "cpu_s", "max_rss_kb")))
        Console(width=None if sys.stdout.isatty() else 150).print(table)


@cli.command()
@_store_option
@click.option("--campaign", "campaign_name", default=None, help="Campaign name (default: the only one).")
@click.option("--format", "fmt", type=click.Choice(["csv", "parquet"]), default="csv", show_default=True,
              help="File format (parquet needs pyarrow).")
@click.option("-o", "--out", "out", required=True, type=click.Path(path_type=Path), help="File to write.")
@click.option("--all-runs", is_flag=True, help="Include failed runs and uninstrumented calibration runs.")
@click.option("--force", is_flag=True, help="Replace OUT if it exists (never the store itself).")
def export(store_path: Path, campaign_name: str | None, fmt: str, out: Path, all_runs: bool, force: bool) -> None:
    """Export one row per run (metrics, input numbers, features) as CSV or Parquet."""
    _output_file(out, lambda _p: False, "export", force=force, run_store=store_path)
    store = _open_store(store_path)
    campaign = _pick_campaign(store, campaign_name)
    frames = [store.dataframe(campaign, variant=v, status=None if all_runs else "ok")
              for v in (("instrumented", "original") if all_runs else ("instrumented",))]
    import pandas as pd

    parts = [f.assign(variant=v) for f, v in zip(frames, ("instrumented", "original")) if not f.empty]
    if not parts:
        raise UserError(f"{store.path}: campaign {campaign.name!r} has no successful run to export; see mantispy runs "
                        "--list, or pass --all-runs to export the failed ones too")
    frame = pd.concat(parts)
    if fmt == "parquet":
        try:
            frame.to_parquet(out)
        except ImportError:
            raise UserError("parquet export needs pyarrow: pip install pyarrow (or use --format csv)") from None
    else:
        frame.to_csv(out)
    click.echo(f"wrote {len(frame)} runs x {frame.shape[1]} columns to {out}")


@cli.command(name="coverage")
@_store_option
@click.option("--campaign", "campaign_name", default=None, help="Campaign name (default: the only one).")
def coverage_cmd(store_path: Path, campaign_name: str | None) -> None:
    """Show the parts of the program that no input of the campaign reached (needs profile --coverage)."""
    from rich.console import Console
    from rich.table import Table

    from mantispy.coverage_pass import line_ranges

    store = _open_store(store_path)
    campaign = _pick_campaign(store, campaign_name)
    data = campaign.coverage
    if not data:
        raise UserError(f"{store.path}: campaign {campaign.name!r} has no coverage data; run mantispy profile SPEC --coverage --resume")
    totals = data["totals"]
    table = Table(title=f"input coverage of campaign {campaign.name}: {totals.get('percent_covered_display', '?')}% "
                        f"of lines+branches over {data['inputs']} input(s)")
    for column in ("file", "lines", "missed lines", "branches", "missed branches", "never reached"):
        table.add_column(column, overflow="fold")
    for name, info in sorted(data["files"].items()):
        summary = info["summary"]
        table.add_row(name, str(summary["num_statements"]), str(summary["missing_lines"]),
                      str(summary.get("num_branches", 0)), str(summary.get("missing_branches", 0)),
                      line_ranges(info["missing_lines"]) or "-")
    Console(width=None if sys.stdout.isatty() else 150).print(table)


@cli.command()
@_store_option
@click.option("--campaign", "campaign_name", default=None, help="Campaign name (default: the only one).")
@click.option("--metric", default="wall", show_default=True,
              help="wall, cpu, rss, work (CPU seconds from the program's own work), or any metric name in the store.")
@click.option("--degree", default=3, show_default=True, type=click.IntRange(1, 5), help="Polynomial degree.")
@click.option("--train-fraction", default=0.1, show_default=True, type=click.FloatRange(0, 1, min_open=True, max_open=True),
              help="Share of the inputs used for training; the rest is held out.")
@click.option("--method", type=click.Choice(["lasso", "foba"]), default="lasso", show_default=True,
              help="Term selection: LASSO path (cross-validated lambda) or forward-backward greedy (FoBa).")
@click.option("--seed", default=0, show_default=True, help="Seed of the train/test split and the CV folds.")
@click.option("--exclude", "exclude", multiple=True, metavar="FEATURE_ID", help="Feature ids the model may not use. Repeatable.")
@click.option("--no-sensitivity", is_flag=True, help="Skip the lambda-path and training-size studies (faster).")
@click.option("--form", type=click.Choice(["auto", "polynomial", "log"]), default="auto", show_default=True,
              help="Model form: additive polynomial, multiplicative (log), or chosen by cross-validation.")
@click.option("--average", type=click.IntRange(1, 10), default=3, show_default=True,
              help="The model is the geometric mean of this many candidates cross-validation ranks best (1: the best alone).")
@click.option("--metrics-from", type=click.Choice(["auto", "instrumented", "original"]), default="auto", show_default=True,
              help="Model the uninstrumented runs' metrics (calibration_runs = \"all\"; what build models) or the instrumented runs'; auto: the first when every input has them.")
@click.option("--no-input-features", "no_inputs", is_flag=True,
              help="Use program features only, not the numbers on the command line and input file sizes.")
@click.option("--solver", type=click.Choice(["sklearn", "glmnet"]), default="sklearn", show_default=True,
              help="Final LASSO stage: scikit-learn's coordinate descent or glmnet (pip install 'mantispy[glmnet]').")
@click.option("--penalty", type=click.Choice(["adaptive", "plain"]), default="adaptive", show_default=True,
              help="LASSO penalty: adaptive (terms scaled by their ridge coefficients first; keeps small noisy terms out) or plain (the paper's).")
@click.option("--view-confidence", type=click.FloatRange(0.0, 1.0), default=VIEW_CONFIDENCE, show_default=True,
              help="A model view richer than the input descriptors (content, sampled or program features) is chosen only "
                   "where it beats the simpler views on cross-validation in this share of paired resamples of the "
                   "training inputs (0: the smallest cross-validated error alone decides).")
@click.option("--interval", "levels", default="0.1,0.9", show_default=True, metavar="LOW,HIGH",
              callback=interval_levels,
              help="The prediction interval's quantile levels (0.05,0.95 for a p5-p95 interval).")
@click.option("-o", "--out", "out", default="model.json", show_default=True, type=click.Path(path_type=Path), help="Model JSON to write.")
def fit(store_path: Path, campaign_name: str | None, metric: str, degree: int, train_fraction: float, method: str,
        seed: int, exclude: tuple[str, ...], no_sensitivity: bool, form: str, average: int, metrics_from: str,
        no_inputs: bool, solver: str, penalty: str, view_confidence: float, levels: tuple[float, float],
        out: Path) -> None:
    """Select the few features that explain a metric and fit a compact polynomial (SPORE)."""
    from mantispy.modeling import artefact
    from mantispy.modeling.fitting import FitRequest, ModelingError, fit_campaign

    _output_file(out, lambda p: _json_format(p) == "mantispy-model", "model", run_store=store_path)
    store = _open_store(store_path)
    request = FitRequest(metric=metric, degree=degree, train_fraction=train_fraction, method=method, seed=seed,
                         exclude=exclude, sensitivity=not no_sensitivity, form=form, metrics_from=metrics_from,
                         inputs=not no_inputs, solver=solver, penalty=penalty, average=average,
                         view_confidence=view_confidence, levels=levels)
    try:
        model = fit_campaign(store, campaign_name, request)
    except ModelingError as exc:
        raise UserError(str(exc)) from None
    artefact.save(model, out)
    _print_model(model)
    _print_evaluation(model)
    source = model["training"]["metrics_from"]
    click.echo(f"model written to {out} (metrics of the {'uninstrumented' if source == 'original' else 'instrumented'} "
               f"runs{', as mantispy build models them' if source == 'original' else ''})")


def _print_model(model) -> None:
    from mantispy.modeling import artefact

    for line in artefact.polynomial_text(model):
        click.echo(line)
    if model.get("form") == "ensemble":
        for n, member in enumerate(model["members"], 1):
            click.echo(f"  in [{n}]:")
            _print_variables({**member, "features": model.get("features", {})})
        return
    _print_variables(model)


def _print_variables(model) -> None:
    from mantispy.modeling import artefact

    names = artefact.variable_names(model)
    value = "log(1 + value)" if model.get("form") == "log" else "value"
    if model.get("method") == "constant":
        click.echo("  a constant: no feature the model may use explains the metric better")
    for feature, name in names.items():
        info = model.get("features", {}).get(feature)
        bounds = model["scaling"][feature]
        scale = f"({value} - {bounds['min']:g}) / {bounds['max'] - bounds['min']:g}"
        where = f"{info['kind']} at {info['file']}:{info['line']} in {info['qualname']}: {info['snippet']}" if info else feature
        click.echo(f"  {name} = {scale} of {where}")
        click.echo(f"       id {feature}")
        for alias, sign in model.get("aliases", {}).get(feature, [])[:3]:
            click.echo(f"       {'same as' if sign > 0 else 'mirror of'} {alias}")


def _print_evaluation(model) -> None:
    from rich.console import Console
    from rich.table import Table

    from mantispy.modeling import artefact

    evaluation, training = model.get("evaluation", {}), model.get("training", {})
    console = Console(width=None if sys.stdout.isatty() else 150)
    table = Table(title=f"held-out relative error ({training.get('n_test_runs', '?')} runs; trained on "
                        f"{training.get('n_train_runs', '?')} runs = {training.get('train_fraction', 0):.0%} of the inputs)")
    for column in ("model", "median", "mean", "uses"):
        table.add_column(column)
    test = evaluation.get("test", {})
    table.add_row("mantispy (program features)", f"{test.get('median_rel_error', float('nan')):.2%}",
                  f"{test.get('mean_rel_error', float('nan')):.2%}", f"{len(model['scaling'])} feature(s), {len(artefact.model_terms(model))} term(s)")
    box = evaluation.get("blackbox", {})
    if box.get("available"):
        table.add_row("black box (input descriptors)", f"{box['median_rel_error']:.2%}", f"{box['mean_rel_error']:.2%}",
                      ", ".join(sorted(set(box.get("inputs_used", [])))) or "intercept only")
    else:
        table.add_row("black box (input descriptors)", "-", "-", box.get("reason", ""))
    noise = evaluation.get("noise")
    if noise:
        table.add_row("noise floor (repeats of one input)", f"{noise['floor']:.2%}", "", f"{noise['inputs']} inputs run twice or more")
    console.print(table)
    chosen = model.get("selection")
    if chosen:
        console.print(f"model: {chosen['chosen']} ({chosen['reason']}); cross-validated on the training inputs: "
                      + ", ".join(f"{c['candidate']} {c['cv_median_rel_error']:.1%}" for c in chosen["candidates"]
                                  if c.get("cv_median_rel_error") is not None), highlight=False)
    coverage = test.get("interval_coverage")
    if coverage is not None and model.get("interval"):
        band = model["interval"]
        console.print(f"p{band['level'][0] * 100:.0f}-p{band['level'][1] * 100:.0f} interval: estimate x "
                      f"{band['low']:.3g} .. x {band['high']:.3g}; held {coverage:.0%} of held-out runs", highlight=False)
    if evaluation.get("lambda_path"):
        path = Table(title="lambda path (final LASSO stage, no refit)")
        for column in ("lambda", "terms", "median", "mean", ""):
            path.add_column(column)
        for row in evaluation["lambda_path"]:
            path.add_row(f"{row['lambda']:.3g}", str(row["terms"]), f"{row['median_rel_error']:.2%}",
                         f"{row['mean_rel_error']:.2%}", "chosen" if row.get("chosen") else "")
        console.print(path)
    if evaluation.get("training_sizes"):
        sizes = Table(title="training-size sensitivity")
        for column in ("train fraction", "train inputs", "terms", "median", "mean"):
            sizes.add_column(column)
        for row in evaluation["training_sizes"]:
            if "skipped" in row:
                sizes.add_row(f"{row['fraction']:.0%}", str(row["n_train_inputs"]), "-", "-", row["skipped"])
            else:
                sizes.add_row(f"{row['fraction']:.0%}", str(row["n_train_inputs"]), str(row["terms"]),
                              f"{row['median_rel_error']:.2%}", f"{row['mean_rel_error']:.2%}")
        console.print(sizes)


@cli.command()
@click.argument("model_file", metavar="MODEL", type=click.Path(path_type=Path))
def show(model_file: Path) -> None:
    """Print a model's polynomial with each feature's kind, source location and snippet.

    MODEL is a model JSON (mantispy fit), or a predictor package (its folder or its models.json), whose
    every metric's model is shown."""
    from mantispy.core.types import shown_key
    from mantispy.modeling import artefact

    path = model_file / "models.json" if model_file.is_dir() else model_file
    if _json_format(path) == "mantispy-predictor-models":
        metrics = (_json_of(path) or {}).get("metrics")
        if not isinstance(metrics, dict) or not metrics:
            raise UserError(f"{path}: field metrics: expected an object of models; rebuild with mantispy build")
        for metric, model in metrics.items():
            problem = artefact.model_problem(model) or (artefact.shown_fields_problem(model) if isinstance(model, dict)
                                                         else None)
            if problem is not None:
                raise UserError(f"{path}: metrics.{shown_key(metric)}: {problem}; rebuild with mantispy build")
            click.echo(f"== {metric}")
            _print_model(model)
        return
    try:
        model = artefact.load(path)
    except artefact.ModelFileError as exc:
        raise UserError(str(exc)) from None
    _print_model(model)
    _print_evaluation(model)


def _load_program(src: Path, say_problems: bool = True):
    from mantispy.slicer.program import Program, ProgramError

    try:
        program = Program.load(src)
    except ProgramError as exc:
        raise UserError(str(exc)) from None
    if say_problems:
        for problem in program.problems:
            click.echo(str(problem), err=True)
    return program


def _unit_graphs(src: Path, function: str, exceptional: bool = False):
    from mantispy.slicer.lookup import LookupError_, UnitNotFound, find_unit

    program = _load_program(src, say_problems=False)
    try:
        found = find_unit(program, function, exceptional)
    except LookupError_ as exc:
        where = function.rpartition(":")[0]
        unparsed = [p for p in program.problems if not where or p.path == where or Path(p.path).stem == where]
        if isinstance(exc, UnitNotFound) and unparsed:  # the unit may be in a file that does not parse: fix that
            raise UserError(f"{unparsed[0]} (so {function} may not be found); fix it, or name a unit of a file that "
                            "parses") from None
        for problem in program.problems:
            click.echo(str(problem), err=True)
        raise UserError(str(exc)) from None
    for problem in program.problems:
        click.echo(str(problem), err=True)
    for note in found[1].unsupported:
        click.echo(f"mantispy: note: {note}", err=True)
    return found


@cli.command()
@click.argument("src", type=click.Path(path_type=Path))
@click.option("--function", "function", required=True, metavar="[FILE:]QUALNAME",
              help="The code unit: Class.method, outer.inner, <module>, f.<listcomp>...; prefix FILE.py: if ambiguous.")
@click.option("--dot", is_flag=True, help="Print Graphviz dot instead of a listing.")
def cfg(src: Path, function: str, dot: bool) -> None:
    """Print the control-flow graph of one code unit (static: nothing is run)."""
    source, graphs, unit = _unit_graphs(src, function)
    graph = graphs.cfgs[unit.qualname]
    if dot:
        click.echo(graph.to_dot())
        return
    click.echo(f"CFG of {source.path}:{unit.qualname} ({unit.kind}), {len(graph.vertices)} vertices")
    for v in graph.vertices.values():
        succ = ", ".join(f"{s}{'' if graph.graph.edges[v.id, s]['kind'] == 'normal' else '/' + graph.graph.edges[v.id, s]['kind']}"
                         for s in sorted(graph.graph.successors(v.id)))
        line = f"{v.span[0]:>5}" if v.span else "     "
        click.echo(f"{v.id:>4} {line}  {v.kind:<13} {v.label:<50} -> {succ}")


@cli.command()
@click.argument("src", type=click.Path(path_type=Path))
@click.option("--function", "function", required=True, metavar="[FILE:]QUALNAME", help="The code unit (see mantispy cfg).")
@click.option("--dot", is_flag=True, help="Print Graphviz dot instead of a listing.")
@click.option("--exceptional", is_flag=True, help="Let exceptions that leave the unit create control dependences too.")
def pdg(src: Path, function: str, dot: bool, exceptional: bool) -> None:
    """Print the program dependence graph (data + control dependences) of one code unit."""
    source, graphs, unit = _unit_graphs(src, function, exceptional)
    graph = graphs.pdgs[unit.qualname]
    if dot:
        click.echo(graph.to_dot())
        return
    click.echo(f"PDG of {source.path}:{unit.qualname} ({unit.kind})")
    for v in graph.cfg.statements():
        deps = []
        for a, kind, label in sorted(graph.dependences_of(v.id), key=lambda d: (d[0], d[1])):
            if kind == "data":
                deps.append(f"{a}:{label[-1] if label[0] != 'attr' else '.' + label[1]}")
            else:
                deps.append(f"{a}/{label}")
        line = f"{v.span[0]:>5}" if v.span else "     "
        click.echo(f"{v.id:>4} {line}  {v.label:<50} <- {' '.join(deps)}")


def _entry_path(src: Path, entry: Path) -> Path:
    """ENTRY as given if absolute, else inside SRC's folder, else relative to the current folder."""
    if entry.is_absolute():
        return entry
    inside = (src.parent if src.is_file() else src) / entry
    return inside if inside.exists() or not entry.exists() else entry


@cli.command()
@click.argument("src", type=click.Path(path_type=Path))
@click.option("--entry", "entry", required=True, type=click.Path(path_type=Path),
              help="The program's entry file (relative to SRC, or a path).")
@click.option("--format", "fmt", type=click.Choice(["json", "dot"]), default="json", show_default=True,
              help="PyCG's JSON call graph or Graphviz dot.")
@click.option("-o", "--out", "out", default=None, type=click.Path(path_type=Path), help="File to write (default: stdout).")
def callgraph(src: Path, entry: Path, fmt: str, out: Path | None) -> None:
    """Print the static call graph of SRC (a folder or a .py file) as seen from ENTRY, in PyCG's format.

    Nothing is run. Files that cannot be read or parsed are listed on stderr as FILE:LINE: MESSAGE and
    left out; the rest is analysed.
    """
    from mantispy.slicer.callgraph import CallGraphError, build_call_graph
    from mantispy.slicer.program import Program, ProgramError

    if not src.exists():
        raise UserError(f"{src}: no such file or folder; give the program's source folder or .py file")
    if out is not None:
        _output_file(out, lambda p: isinstance(_json_of(p), dict) or p.read_text(errors="replace").startswith("digraph"),
                     "call graph", program_source=src)
    entry_path = _entry_path(src, entry)
    if not entry_path.is_file():
        raise UserError(f"{entry}: entry file not found (looked for {entry_path}); give a .py file inside {src}")
    try:
        program = Program.load(src)
    except ProgramError as exc:
        raise UserError(str(exc)) from None
    for problem in program.problems:
        click.echo(str(problem), err=True)
    try:
        graph = build_call_graph(program, entry_path.resolve())
    except CallGraphError as exc:
        raise UserError(str(exc)) from None
    text = graph.to_dot() if fmt == "dot" else json.dumps(graph.to_pycg(), indent=2) + "\n"
    if out is None:
        click.echo(text, nl=False)
    else:
        out.write_text(text)
        click.echo(f"call graph of {len(graph.functions)} function(s), {len(graph.sites)} call site(s) "
                   f"({len(graph.unresolved)} unresolved) written to {out}", err=True)


def _slice_session(src: Path, entry: str):
    from mantispy.slicer.callgraph import CallGraphError
    from mantispy.slicer.evaluators import SliceSession, TooDeepError
    from mantispy.slicer.program import Program, ProgramError

    try:
        program = Program.load(src)
    except ProgramError as exc:
        raise UserError(f"{exc}; check SRC and --entry") from None
    problem = program.entry_problem(entry)
    if problem is not None:
        raise UserError(f"{problem}; give SCRIPT.py, '-m module' or module:function of the program")
    try:
        return SliceSession(src, entry, program=program)
    except (ProgramError, CallGraphError) as exc:
        raise UserError(f"{exc}; check SRC and --entry") from None
    except TooDeepError as exc:
        raise UserError(str(exc)) from None


def _hybrid_session(session, observed_calls: Path):
    """A session whose unresolved calls take their observed callees (shares ``session``'s call graph)."""
    from mantispy.slicer.hybrid import hybrid_session
    from mantispy.slicer.observations import ObservationsError

    try:
        return hybrid_session(session, observed_calls)
    except ObservationsError as exc:
        raise UserError(str(exc)) from None


CALLS_SHOWN = 20
"""Kept calls ``mantispy slice`` lists (a package's slice keeps thousands; slice.json has them all)."""


@cli.command(name="slice")
@click.argument("src", type=click.Path(path_type=Path))
@click.option("--entry", required=True, help="How the program starts: SCRIPT.py, '-m module' or module:function.")
@click.option("--feature", "feature_id", required=True, help="The feature id (from OUT/.mantis/manifest.json).")
@click.option("-o", "--out", "out", default=None, type=click.Path(path_type=Path), help="Write the evaluator here.")
@click.option("--observed-calls", "observed_calls", default=None, type=click.Path(path_type=Path),
              help="Observed calls (mantispy run/profile): unresolved call sites take their observed callees.")
@click.option("--why", "why", default=None, metavar="FILE:LINE",
              help="Print the chain of dependences that keeps this statement in the slice (FILE relative to SRC).")
def slice_cmd(src: Path, entry: str, feature_id: str, out: Path | None, observed_calls: Path | None = None,
              why: str | None = None) -> None:
    """Slice SRC down to what one feature counter depends on and emit an executable evaluator."""
    from mantispy.slicer.evaluators import EvaluatorError

    why_at = _file_and_line(why) if why is not None else None

    if out is not None:
        from mantispy.outputs import OutputError, refuse_overlap

        try:
            refuse_overlap(out, {"program's source": src})
        except OutputError as exc:
            raise UserError(str(exc)) from None
    session = _slice_session(src, entry)
    for problem in session.program.problems:
        click.echo(str(problem), err=True)
    if why_at is not None and why_at[0] not in session.program.by_path:
        raise UserError(f"--why {why}: no such file in {session.program.root} (give its path relative to SRC)")
    static = None
    if observed_calls is not None:
        static, session = session, _hybrid_session(session, observed_calls)
    try:
        if static is not None:
            static = static.slice(feature_id)
        if out is not None:
            result, report = session.emit(feature_id, out)
        else:
            result, report = session.slice(feature_id), None
    except EvaluatorError as exc:
        raise UserError(str(exc)) from None
    files = sorted(result.kept)
    click.echo(f"slice of {feature_id}: {result.statements_kept} of {result.statements_total} statements kept, "
               f"{len(files)} file(s) touched: {', '.join(files)}")
    if static is not None:
        from mantispy.observe import echo_observed

        click.echo(f"hybrid slice: {result.statements_kept} statements kept, static slice: {static.statements_kept} "
                   "(validate it with mantispy fidelity --observed-calls before trusting it)")
        echo_observed(result, click.echo)
    for call in result.calls[:CALLS_SHOWN]:
        how = f" ({call['implicit']})" if call.get("implicit") else ""
        how += " (resolved: observed)" if call.get("resolved") == "observed" else ""
        click.echo(f"  call at {call['site']}{how}: {call['why']}")
    if len(result.calls) > CALLS_SHOWN:
        click.echo(f"  ... and {len(result.calls) - CALLS_SHOWN} more calls kept (see slice.json)")
    for site in result.unresolved[:5]:
        click.echo(f"  unresolved call kept conservatively: {site}")
    if len(result.unresolved) > 5:
        click.echo(f"  ... and {len(result.unresolved) - 5} more unresolved calls (see slice.json)")
    if report is not None:
        click.echo(f"evaluator written to {out}: python {out / 'evaluate.py'} ARGS...")
    if why_at is not None:
        _echo_why(session, feature_id, *why_at)


def _file_and_line(text: str) -> tuple[str, int]:
    """``--why FILE:LINE`` read; a UserError naming the option otherwise."""
    file, _, line = text.rpartition(":")
    if not file or not line.isdigit() or int(line) < 1:
        raise UserError(f"--why {text!r}: give a file of the program and a line, like pkg/module.py:120")
    return file.replace("\\", "/").removeprefix("./"), int(line)


def _echo_why(session, feature_id: str, file: str, line: int) -> None:
    """The chain of dependences that keeps ``file:line`` in the slice of ``feature_id``, one step a line."""
    from mantispy.slicer.explain import why_kept

    steps = why_kept(session.sdg, session.features[feature_id], file, line)
    if steps is None:
        click.echo(f"why {file}:{line}: not in the slice of {feature_id}")
        return
    click.echo(f"why {file}:{line} is in the slice of {feature_id}: {len(steps)} step(s), each depending on the next")
    for step in steps:
        where = f"{step.file}:{step.line}" if step.line is not None else (step.file or "")
        click.echo(f"  {where:<40} {step.how:<28} {step.what}  [{step.unit}; pass {step.passes}]")


@cli.command()
@click.argument("src", type=click.Path(path_type=Path))
@click.option("--entry", required=True, help="How the program starts: SCRIPT.py, '-m module' or module:function.")
@click.option("--input", "inputs", multiple=True, required=True, metavar="ARGS", help='One input, e.g. "--docs 300" (for a module:function entry, its keyword arguments as one JSON object). Repeatable.')
@click.option("--feature", "feature_ids", multiple=True, help="Features to check (default: every counter, see --kinds).")
@click.option("--kinds", default="loop,branch,call,exception", show_default=True, help="Kinds checked when no --feature is given.")
@click.option("--sample", default=0, type=click.IntRange(0), help="Check only this many features (spread over the list).")
@click.option("-o", "--out", "out", default=None, type=click.Path(path_type=Path), help="Write the per-feature report as JSON.")
@click.option("--observed-calls", "observed_calls", default=None, type=click.Path(path_type=Path),
              help="Validate hybrid slices built with these observed calls on the inputs (held out: not observed).")
def fidelity(src: Path, entry: str, inputs: tuple[str, ...], feature_ids: tuple[str, ...], kinds: str, sample: int,
             out: Path | None, observed_calls: Path | None = None) -> None:
    """Check that each feature's evaluator gives the instrumented program's value on every input."""
    import shlex
    from dataclasses import asdict

    from mantispy.slicer.evaluators import EvaluatorError, check_fidelity

    if out is not None:
        _output_file(out, lambda p: isinstance(_json_of(p), list), "fidelity report", program_source=src)
    callable_entry = ":" in entry and not entry.strip().endswith(".py") and not entry.startswith("-m ")
    try:
        given = [[i] if callable_entry else shlex.split(i) for i in inputs]  # a callable's input is one JSON object
    except ValueError as exc:
        raise UserError(f"--input: {exc} (an input is the program's arguments as a shell would split them)") from None
    session = _slice_session(src, entry)
    unknown = [f for f in feature_ids if f not in session.features]
    if unknown:
        raise UserError(f"--feature {unknown[0]}: no such feature of {src}; mantispy instrument lists them in the "
                        "manifest (.mantis/manifest.json)")
    from mantispy.instrument.manifest import FEATURE_KINDS

    wrong_kinds = [k for k in kinds.split(",") if k not in FEATURE_KINDS]
    if wrong_kinds:
        raise UserError(f"--kinds {kinds}: {wrong_kinds[0]!r} is not a kind of feature; give some of "
                        f"{', '.join(FEATURE_KINDS)}, separated by commas")
    wanted = list(feature_ids) or [f for f, info in session.features.items() if info["kind"] in kinds.split(",")]
    if sample and len(wanted) > sample:
        step = len(wanted) / sample
        wanted = [wanted[int(i * step)] for i in range(sample)]
    if observed_calls is not None:
        from mantispy.observe import echo_verdicts
        from mantispy.slicer.hybrid import describe_inputs, validate_hybrid

        hybrid = _hybrid_session(session, observed_calls)
        seen = [a for a in given if hybrid.observed_calls.contributed(a)]
        if seen:
            click.echo(f"mantispy: note: not held out (they contributed observations): {describe_inputs(seen)}", err=True)
        try:
            verdicts = validate_hybrid(session, hybrid, src, wanted, given)
        except EvaluatorError as exc:
            raise UserError(str(exc)) from None
        echo_verdicts(verdicts, click.echo)
        if out is not None:
            out.write_text(json.dumps([v.to_dict() for v in verdicts], indent=1) + "\n")
        return
    try:
        rows = check_fidelity(session, src, given, wanted)
    except EvaluatorError as exc:
        raise UserError(str(exc)) from None
    sliceable = sum(r.status == "sliceable" for r in rows)
    for row in rows:
        mark = "ok " if row.status == "sliceable" else "NO "
        click.echo(f"{mark} {row.fidelity:6.1%}  {row.statements_kept:>5}/{row.statements_total:<5} {row.feature}  {row.reason}")
    click.echo(f"{sliceable} of {len(rows)} features sliceable with 100 % fidelity on {len(inputs)} input(s)")
    if out is not None:
        out.write_text(json.dumps([{**asdict(r), "fidelity": r.fidelity} for r in rows], indent=1) + "\n")


_register_product_verbs(cli)
_register_sampling_verbs(cli)
_register_phase_verbs(cli)
_register_counter_verbs(cli)
_register_dataflow_verbs(cli)
_register_diagnosis_verbs(cli)


def main() -> None:
    """Console-script entry point: an unexpected exception is one line (exit status 1) unless ``--debug``
    or MANTISPY_DEBUG=1 asks for its traceback."""
    signal.signal(signal.SIGINT, _interrupted)
    try:
        cli.main(prog_name="mantispy", standalone_mode=False)
    except click.exceptions.Exit as exc:  # --help, --version
        sys.exit(exc.exit_code)
    except click.Abort:
        WATCHDOG.end_all()  # runs in worker threads wait for their programs: end them, so the threads end
        click.echo("mantispy: interrupted", err=True)
        sys.exit(130)
    except click.UsageError as exc:  # one line, as every other refusal (click's own form takes four)
        WATCHDOG.end_all()
        where = exc.ctx.command_path if exc.ctx is not None else "mantispy"
        click.echo(f"mantispy: error: {' '.join(exc.format_message().split())} (see {where} --help)", err=True)
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        WATCHDOG.end_all()
        exc.show()
        sys.exit(exc.exit_code)
    except Exception as exc:
        WATCHDOG.end_all()
        if os.environ.get(DEBUG_ENV, "") not in ("", "0"):
            raise
        if isinstance(exc, _bad_input_errors()):  # an artefact reader's refusal that no verb caught itself
            click.echo(f"mantispy: error: {' '.join(str(exc).split())}", err=True)
            sys.exit(UserError.exit_code)
        click.echo(f"mantispy: internal error: {_internal(exc)} (run again with --debug for the traceback)", err=True)
        sys.exit(EXIT_FAILED)


def _interrupted(signum, frame) -> None:
    """SIGINT: end the programs mantispy runs at once (a worker thread may be waiting for one, and cleanup
    code may wait for that thread), then interrupt as Python does."""
    WATCHDOG.end_all()
    signal.default_int_handler(signum, frame)


def _bad_input_errors() -> tuple[type[Exception], ...]:
    """The errors artefact readers raise for input they refuse (each message names the file and field)."""
    from mantispy.build_record import BuildRecordError
    from mantispy.campaign import SpecError
    from mantispy.instrument.manifest import ManifestError
    from mantispy.modeling.artefact import ModelFileError
    from mantispy.outputs import OutputError
    from mantispy.sampling.store import RecordingError
    from mantispy.slicer.observations import ObservationsError
    from mantispy.store import StoreError

    return (BuildRecordError, SpecError, ManifestError, ModelFileError, OutputError, ObservationsError, StoreError,
            RecordingError)


def _internal(exc: BaseException) -> str:
    """One line for an exception mantispy did not expect."""
    if isinstance(exc, RecursionError):
        return ("the program nests deeper than mantispy's analysis can follow (RecursionError: an expression or "
                "statement nested hundreds of levels deep)")
    text = " ".join(str(exc).split())[:300]
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


if __name__ == "__main__":
    main()
