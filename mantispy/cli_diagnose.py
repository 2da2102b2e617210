"""``mantispy diagnose``: did a new version of a program regress, in which function and which counter
(AutoPerf; issue 22). The work is :mod:`mantispy.diagnosis`'s; this module reads the options, checks
the inputs and writes the outputs."""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import click

from mantispy.errors import FailureError, UserError


def _choose_inputs(records: list, count: int, seed: int) -> list:
    if count <= 0 or count >= len(records):
        return list(records)
    chosen = set(random.Random(seed).sample(range(len(records)), count))
    return [r for i, r in enumerate(records) if i in chosen]


def _check_version(spec, source: Path, option: str) -> None:
    from mantispy.campaign import SpecError, check_entry

    if not source.exists():
        raise UserError(f"{source}: no such folder ({option}); give the version's source folder, laid out as the "
                        f"campaign's source {spec.source}")
    if spec.source.is_dir() and not source.is_dir():
        raise UserError(f"{source}: not a folder ({option}); the campaign's source {spec.source} is a folder, so "
                        "each version must be one")
    try:
        check_entry(spec.path, spec.entry, source if source.is_dir() else source.parent)
    except SpecError as exc:
        raise UserError(f"{source} ({option}): {exc}") from None


def _refuse_existing(path: Path | None, option: str) -> None:
    """Refuse, before anything runs, an output file that exists or whose folder does not."""
    if path is None:
        return
    if path.exists():
        raise UserError(f"{path}: exists; mantispy will not write over it (give another {option})")
    if not path.parent.is_dir():
        raise UserError(f"{path}: no folder {path.parent} to write it in (give {option} a file in an existing folder)")


@click.command()
@click.option("--baseline", type=click.Path(path_type=Path), help="The good version's source folder (laid out as "
              "the campaign's source).")
@click.option("--candidate", type=click.Path(path_type=Path), help="The new version's source folder.")
@click.option("--inputs", "input_count", type=click.IntRange(0), default=10, show_default=True,
              help="How many of the campaign's inputs to run (a seeded choice; 0: all).")
@click.option("--repeats", type=click.IntRange(2), default=3, show_default=True,
              help="Runs of the baseline per input (what the autoencoders learn from).")
@click.option("--candidate-repeats", type=click.IntRange(1), default=2, show_default=True,
              help="Runs of the candidate per input.")
@click.option("--k", "k", type=click.FloatRange(0), default=2.0, show_default=True,
              help="Threshold: mean + k standard deviations of the baseline's reconstruction errors.")
@click.option("--min-effect", type=click.FloatRange(0), default=0.05, show_default=True,
              help="Least change of a counter on the median input that counts (0.05: 5 %).")
@click.option("--counts/--no-counts", "with_counts", default=True, show_default=True,
              help="Also compare mantispy's program counts (loop iterations, calls, exception handlers entered) "
              "from one run of an instrumented copy of each version per input.")
@click.option("--seed", type=click.IntRange(0), default=0, show_default=True,
              help="Seeds the choice of inputs, the run order and the models.")
@click.option("-o", "--out", type=click.Path(path_type=Path), help="Write the diagnosis as JSON here (not over an "
              "existing file).")
@click.option("--html", "html_out", type=click.Path(path_type=Path), help="Write the diagnosis as an HTML page here.")
@click.option("--json", "as_json", is_flag=True, help="Print the diagnosis as JSON instead of text.")
@click.option("--fail-on-regression", is_flag=True, help="Exit with status 1 when the verdict is a regression "
              "(or the candidate fails on an input where no baseline run failed), for CI.")
@click.option("--show", "show", type=click.Path(path_type=Path), help="Show a diagnosis written earlier with -o "
              "(no profiling).")
@click.argument("spec", type=click.Path(path_type=Path), required=False)
def diagnose(baseline: Path | None, candidate: Path | None, input_count: int, repeats: int, candidate_repeats: int,
             k: float, min_effect: float, with_counts: bool, seed: int, out: Path | None, html_out: Path | None, as_json: bool,
             fail_on_regression: bool, show: Path | None, spec: Path | None) -> None:
    """Compare two versions of a program over a campaign's inputs and say whether the candidate regressed.

    mantispy diagnose --baseline OLD_SRC --candidate NEW_SRC SPEC finds the functions whose code changed
    (syntax trees compared; comments, docstrings and renames are no change) and their callers, runs both
    versions over the campaign's inputs with those functions' counters read at every call (interleaved,
    shuffled), trains an autoencoder per function on the baseline's runs, flags the candidate's runs it
    cannot reconstruct (error over mean + k sigma), and names the function and the counter (calls, CPU
    time, page faults, context switches, hardware events where the machine has them) that regressed, with
    its effect on the median input and a confidence. Beside it: the whole process's CPU time compared
    the same way. Beside the counters (--no-counts to skip them), exact program counts from one run of an
    instrumented copy of each version per input: a loop, a call or an exception handler that runs more
    often on most inputs names an algorithmic regression whose time the counters' noise may hide."""
    from mantispy.diagnosis.document import DiagnosisError, load
    from mantispy.diagnosis.render_html import render as render_html
    from mantispy.diagnosis.render_text import render as render_text

    if show is not None:
        if baseline or candidate or spec:
            raise UserError("--show reads a diagnosis written earlier; give it alone: mantispy diagnose --show FILE")
        try:
            diagnosis = load(show)
        except DiagnosisError as exc:
            raise UserError(str(exc)) from None
        click.echo(json.dumps(diagnosis.to_json(), indent=2) if as_json else render_text(diagnosis))
        return
    if spec is None or baseline is None or candidate is None:
        raise UserError("give both versions and the campaign: mantispy diagnose --baseline OLD_SRC --candidate "
                        "NEW_SRC SPEC")
    _refuse_existing(out, "-o")
    _refuse_existing(html_out, "--html")
    # The runs start in the campaign's folder and the diff reads from here: both must read the same folders.
    baseline, candidate = baseline.absolute(), candidate.absolute()
    diagnosis = _run(baseline, candidate, spec, input_count, repeats, candidate_repeats, k, min_effect, seed,
                     quiet=as_json, with_counts=with_counts)
    document = diagnosis.to_json()
    if out is not None:
        out.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    if html_out is not None:
        html_out.write_text(render_html(diagnosis), encoding="utf-8")
    click.echo(json.dumps(document, indent=2) if as_json else render_text(diagnosis))
    if fail_on_regression and (diagnosis.verdict == "regression" or diagnosis.candidate_failures()):
        raise SystemExit(1)


def _run(baseline: Path, candidate: Path, spec_path: Path, input_count: int, repeats: int, candidate_repeats: int,
         k: float, min_effect: float, seed: int, quiet: bool, with_counts: bool = True):
    from mantispy.campaign import SpecError, load_spec
    from mantispy.diagnosis.analysis import diagnose as analyse
    from mantispy.diagnosis.changes import ChangeError, diff_trees
    from mantispy.diagnosis.counting import count_versions
    from mantispy.diagnosis.profiling import BASELINE, CANDIDATE, profile_versions
    from mantispy.diagnosis.types import Settings
    from mantispy.instrument.tree import InstrumentError

    try:
        spec = load_spec(spec_path)
    except SpecError as exc:
        raise UserError(str(exc)) from None
    _check_version(spec, baseline, "--baseline")
    _check_version(spec, candidate, "--candidate")
    try:
        changes = diff_trees(baseline, candidate)
    except ChangeError as exc:
        raise UserError(str(exc)) from None
    settings = Settings(k=k, min_effect=min_effect, seed=seed)
    records = _choose_inputs(spec.inputs, input_count, seed)
    patterns = {BASELINE: sorted({changes.baseline_name(n) for n in changes.touched}), CANDIDATE: changes.touched}
    if not quiet:
        count = len(changes.touched)
        click.echo(f"{len(changes.changed)} changed, {len(changes.added)} added, {len(changes.removed)} removed, "
                   f"{len(changes.renamed)} renamed functions; profiling {count} function{'' if count == 1 else 's'} "
                   f"over {len(records)} input{'' if len(records) == 1 else 's'}", err=True)
    from mantispy.runtime import perf_counters

    refused = perf_counters.refused_note(perf_counters.probe())
    if refused is not None:
        click.echo(f"mantispy: {refused}", err=True)

    live = not quiet and sys.stderr.isatty()

    def progress(number: int, total: int, run) -> None:
        if live:
            state = "" if run.status == "ok" else f" ({run.status})"
            click.echo(f"\r[{number}/{total}] {run.version} {run.input_id}{state}".ljust(60), err=True,
                       nl=number == total)

    runs = profile_versions(spec, {BASELINE: baseline, CANDIDATE: candidate}, patterns, records,
                            {BASELINE: repeats, CANDIDATE: candidate_repeats}, seed, progress)
    for version in (BASELINE, CANDIDATE):
        mine = [r for r in runs if r.version == version]
        if mine and not any(r.status == "ok" for r in mine):
            first = next(r for r in mine if r.status != "ok")
            raise FailureError(f"the {version} ({baseline if version == BASELINE else candidate}) failed on every "
                               f"input; first, {first.input_id}: {first.message or first.status}")
    counts = None
    if with_counts and not changes.empty:
        if not quiet:
            click.echo("counting: one run of an instrumented copy of each version per input", err=True)
        try:
            counts = count_versions(spec, {BASELINE: baseline, CANDIDATE: candidate}, records, seed, progress,
                                    log=lambda message: None if quiet else click.echo(message, err=True))
        except InstrumentError as exc:
            raise UserError(f"cannot instrument a version for its program counts: {exc}; or give --no-counts") \
                from None
        failed = [r for r in counts if r.status != "ok"]
        if failed and not quiet:
            click.echo(f"{len(failed)} counting run(s) failed (first: {failed[0].version} on {failed[0].input_id}: "
                       f"{failed[0].message or failed[0].status}); their inputs are left out of the counts", err=True)
    return analyse(changes, runs, settings, counts)


def register(group: click.Group) -> None:
    """Add ``diagnose`` to the ``mantispy`` command group."""
    group.add_command(diagnose)
