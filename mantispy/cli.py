"""The ``mantispy`` command line.

Every verb has ``--help``. Bad input ends with one line ``mantispy: error: ...`` on stderr that names
the file and the fix, and a non-zero exit status (1 for bad input, 2 for bad usage).
"""

from __future__ import annotations

import json
import shlex
import sys
from collections import Counter
from pathlib import Path

import click

from mantispy import __version__


class UserError(click.ClickException):
    """A one-line error for the user; exit status 1."""

    def show(self, file=None) -> None:  # noqa: D102 - click API
        click.echo(f"mantispy: error: {self.format_message()}", err=True)


def _families(value: str | None) -> frozenset[str]:
    from mantispy.instrument.manifest import FAMILIES

    if not value:
        return frozenset(FAMILIES)
    chosen = {v.strip() for v in value.split(",") if v.strip()}
    unknown = chosen - set(FAMILIES)
    if unknown:
        raise click.BadParameter(f"unknown famil{'ies' if len(unknown) > 1 else 'y'} {', '.join(sorted(unknown))}; choose from {','.join(FAMILIES)}")
    return frozenset(chosen)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="mantispy")
def cli() -> None:
    """Predict a Python program's run time and resources from its input, before running it."""


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
@click.option("--calibrate-repeats", default=3, show_default=True, type=click.IntRange(1, 50), help="Runs per calibration input (best CPU time kept).")
def instrument(src: Path, out: Path, only: str | None, k: int, exclude: tuple[str, ...], skip_errors: bool,
               force: bool, budget: float | None, calibrate: tuple[str, ...], calibrate_repeats: int) -> None:
    """Rewrite SRC (a .py file or a source folder) into OUT so that it counts its own features.

    OUT mirrors SRC: every .py instrumented, every other file copied, and OUT/.mantis/manifest.json
    describes each feature. Files with syntax errors are reported as FILE:LINE: MESSAGE and copied
    unchanged; the exit status is then 1 unless --skip-errors.
    """
    from mantispy.instrument.transformer import Options
    from mantispy.instrument.tree import InstrumentError, instrument_tree

    options = Options(families=_families(only), k=k)
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
        from mantispy.launch import LaunchError

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
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def run(out: Path, features_out: Path, python: str | None, args: tuple[str, ...]) -> None:
    """Run the instrumented program in OUT: mantispy run OUT --features-out F -- SCRIPT|-m MODULE ARGS...

    The program's output and exit status are its own; the features land in F when it ends (normal
    exit, sys.exit, uncaught exception or SIGTERM; os._exit loses them).
    """
    from mantispy.instrument.manifest import manifest_path
    from mantispy.launch import LaunchError, program_argv, program_env, run_measured

    if not manifest_path(out).exists():
        raise UserError(f"{out}: not an instrumented folder (no .mantis/manifest.json); run mantispy instrument first")
    extra: list[Path] = []
    if python is not None:
        from mantispy.runtime.standalone import standalone_runtime_dir

        extra.append(standalone_runtime_dir(out / ".mantis" / "pyroot"))
    features_out = features_out.resolve()
    features_out.parent.mkdir(parents=True, exist_ok=True)
    if features_out.exists():
        features_out.unlink()
    try:
        argv = program_argv(out, list(args), python)
    except LaunchError as exc:
        raise UserError(str(exc)) from None
    measurement = run_measured(argv, program_env(out.resolve(), features_out, extra))
    if not features_out.exists():
        click.echo(
            f"mantispy: warning: no features written to {features_out} (the program ended through os._exit "
            "or a signal other than SIGTERM)",
            err=True,
        )
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


def main() -> None:
    """Console-script entry point."""
    cli(prog_name="mantispy")


if __name__ == "__main__":
    main()
