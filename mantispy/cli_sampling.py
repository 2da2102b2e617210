"""The sampling verbs: ``record``, ``recordings``, ``flame`` and ``series`` (where and when the cost goes)."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import click

from mantispy.errors import UserError
from mantispy.sampling.recorder import DEFAULT_STORE
from mantispy.sampling.store import RecordingError, RecordingStore
from mantispy.sampling.types import Window

FLAME_FORMATS = ("folded", "speedscope", "svg", "html")


def _store_option(fn):
    return click.option("--store", "store_path", default=DEFAULT_STORE, show_default=True, type=click.Path(path_type=Path),
                        help="The store holding the recordings (a campaign's store works too).")(fn)


def _window_options(fn):
    fn = click.option("--thread", "tid", type=int, default=None, help="Only this thread (its id as the samples show it).")(fn)
    fn = click.option("--pid", type=int, default=None, help="Only this process.")(fn)
    fn = click.option("--to", "end", type=float, default=None, help="Window end, seconds from the start (default: the end).")(fn)
    return click.option("--from", "start", type=float, default=0.0, show_default=True,
                        help="Window start, seconds from the recording's start.")(fn)


def _window(start: float, end: float | None, pid: int | None, tid: int | None, recording) -> Window:
    end_value = math.inf if end is None else end
    if not math.isfinite(start) or start < 0 or (end is not None and not math.isfinite(end_value)) or end_value <= start:
        raise UserError(f"--from {start:g} --to {end if end is not None else 'end'}: a window is 0 <= FROM < TO seconds "
                        "from the recording's start")
    duration = recording.duration
    if duration is not None and start > duration + 1:
        raise UserError(f"--from {start:g}: recording {recording.id} lasted {duration:.2f} s; choose a window inside it")
    return Window(start, end_value, pid, tid)


def _open(store_path: Path, create: bool = False) -> RecordingStore:
    try:
        return RecordingStore(store_path, create=create)
    except RecordingError as exc:
        raise UserError(str(exc)) from None


def _emit(text: str, out: Path | None, force: bool, store_path: Path, what: str) -> None:
    if out is None:
        sys.stdout.write(text)
        return
    from mantispy.outputs import OutputError, refuse_overlap

    try:
        refuse_overlap(out, {"store": store_path})
    except OutputError as exc:
        raise UserError(str(exc)) from None
    if out.is_dir():
        raise UserError(f"{out}: is a folder; -o names the {what} file to write")
    if out.exists() and not force:
        raise UserError(f"{out}: exists; pass --force to replace it, or another -o")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(out)
    click.echo(f"mantispy: {what} written to {out}", err=True)


@click.command(context_settings={"ignore_unknown_options": True})
@click.option("--rate", type=float, default=100.0, show_default=True, help="Stack samples per second (1 to 1000).")
@click.option("--interval", type=float, default=1.0, show_default=True,
              help="Seconds between resource points of every process (0.1 to 3600).")
@click.option("--mode", type=click.Choice(["cpu", "wall"]), default="cpu", show_default=True,
              help="cpu: samples weighted by each thread's CPU time; wall: every thread, every tick.")
@click.option("--sampler", type=click.Choice(["builtin", "signal", "py-spy"]), default="builtin", show_default=True,
              help="builtin: inside every Python process, from a thread of its own; signal: the same, with each "
              "main thread sampled on SIGPROF (its CPU clock), unbiased where the program often releases the GIL in "
              "short C calls; py-spy: from outside (ptrace; attaches after start).")
@click.option("--no-perf", "no_perf", is_flag=True, help="Do not read Linux software perf events.")
@_store_option
@click.option("--python", "python", default=None, help="Interpreter to run the program with (default: this one).")
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def record(rate: float, interval: float, mode: str, sampler: str, no_perf: bool, store_path: Path, python: str | None,
           args: tuple[str, ...]) -> None:
    """Run a program and record where and when its time goes.

    mantispy record [OPTIONS] -- SCRIPT|-m MODULE ARGS...

    Every Python process of the program (threads, fork and spawn children, Python programs it starts)
    is stack-sampled, and every process's CPU, memory, IO, threads, context switches and open files are
    polled, into the store, batch by batch. The program's output and exit status are its own. Then:
    mantispy flame last, mantispy series last.
    """
    from mantispy.sampling.recorder import RecordOptions
    from mantispy.sampling.recorder import record as run_recording

    invocation = list(args[1:] if args[:1] == ("--",) else args)
    if not invocation:
        raise UserError("no program given: mantispy record [OPTIONS] -- SCRIPT|-m MODULE ARGS...")
    options = RecordOptions(invocation, store=store_path, rate=rate, interval=interval, mode=mode, sampler=sampler,
                            perf=not no_perf, python=python)
    try:
        result = run_recording(options, log=lambda m: click.echo(f"mantispy: {m}", err=True))
    except RecordingError as exc:
        raise UserError(str(exc)) from None
    rec = result.recording
    click.echo(f"mantispy: recording {rec.id} {rec.status}: {result.samples} samples, {result.points} resource points, "
               f"{result.processes} process(es); exit status {rec.returncode}", err=True)
    for note in rec.notes:
        click.echo(f"mantispy: note: {note}", err=True)
    store = "" if store_path == DEFAULT_STORE else f" --store {store_path}"
    click.echo(f"mantispy: see it with: mantispy flame {rec.id}{store} --format html -o recording-{rec.id}.html", err=True)
    code = rec.returncode if rec.returncode is not None else 1
    sys.exit(code if code >= 0 else 128 - code)


@click.command()
@_store_option
def recordings(store_path: Path) -> None:
    """List the recordings of a store: id, status, length, samples, command."""
    with _open(store_path) as store:
        rows = store.recordings()
        if not rows:
            click.echo(f"{store_path}: no recording yet")
            return
        for rec in rows:
            samples, points, pids = store.counts(rec.id)
            length = f"{rec.duration:.2f} s" if rec.duration is not None else "?"
            click.echo(f"{rec.id:>4}  {rec.status:<10} {length:>10}  {samples:>7} samples  {points:>6} points  "
                       f"{pids} process(es)  exit {rec.returncode}  {' '.join(rec.command)}")


@click.command()
@click.argument("run")
@_store_option
@_window_options
@click.option("--format", "fmt", type=click.Choice(FLAME_FORMATS), default="folded", show_default=True,
              help="folded (Brendan Gregg's), speedscope JSON, a standalone SVG, or the HTML view of the recording.")
@click.option("--diff", "diff", default=None, help="Draw the differential flame graph against this recording (or 'same' "
              "with --diff-from/--diff-to for two windows of RUN); folded and svg.")
@click.option("--diff-from", "diff_start", type=float, default=0.0, show_default=True, help="The baseline window's start.")
@click.option("--diff-to", "diff_end", type=float, default=None, help="The baseline window's end (default: its end).")
@click.option("-o", "--out", type=click.Path(path_type=Path), default=None, help="Write here instead of stdout.")
@click.option("--force", is_flag=True, help="Replace an existing -o file.")
def flame(run: str, store_path: Path, start: float, end: float | None, pid: int | None, tid: int | None, fmt: str,
          diff: str | None, diff_start: float, diff_end: float | None, out: Path | None, force: bool) -> None:
    """The flame graph of a recording (RUN: its number or 'last'), or of a window of it.

    --from/--to choose seconds from the recording's start, --pid/--thread one process or thread. The
    html format is the recording's whole view: every process's resource series, and the flame graph of
    the window brushed on them. An empty window gives an empty, labelled result.
    """
    from mantispy.sampling import flame as flames
    from mantispy.sampling import render_folded, render_html, render_speedscope, render_svg

    with _open(store_path) as store:
        try:
            rec = store.resolve(run)
        except RecordingError as exc:
            raise UserError(str(exc)) from None
        window = _window(start, end, pid, tid, rec)
        if diff is not None:
            if fmt not in ("folded", "svg"):
                raise UserError(f"--diff draws folded or svg, not {fmt}; add --format svg")
            try:
                base = rec if diff == "same" else store.resolve(diff)
            except RecordingError as exc:
                raise UserError(str(exc)) from None
            tree = flames.diff_tree(store, rec, window, store, base, _window(diff_start, diff_end, pid, tid, base))
        else:
            tree = flames.flame_tree(store, rec, window)
        if fmt == "folded":
            text = render_folded.render(tree) if diff is None else _folded_diff(tree)
            if not text:
                click.echo(f"mantispy: no sample in recording {rec.id} ({window.describe()})", err=True)
        elif fmt == "svg":
            text = render_svg.render(tree)
        elif fmt == "speedscope":
            text = render_speedscope.render(store, rec, window)
        else:
            text = render_html.render(store, rec)
    _emit(text, out, force, store_path, f"{fmt} flame graph")


def _folded_diff(tree) -> str:
    """Differential folded stacks (``stack base_us new_us``, as difffolded.pl writes them)."""
    base: dict[tuple[str, ...], float] = {}
    new: dict[tuple[str, ...], float] = {}

    def walk(node, path):
        own_base = node.base_total - sum(c.base_total for c in node.children.values())
        own_new = node.total - sum(c.total for c in node.children.values())
        if own_base > 1e-9:
            base[path] = own_base
        if own_new > 1e-9:
            new[path] = own_new
        for child in node.children.values():
            walk(child, (*path, child.label))

    for child in tree.root.children.values():
        walk(child, (child.label,))
    lines = [";".join(path) + f" {round(base.get(path, 0) * 1e6)} {round(new.get(path, 0) * 1e6)}"
             for path in sorted(set(base) | set(new))]
    return "\n".join(lines) + ("\n" if lines else "")


@click.command()
@click.argument("run")
@_store_option
@click.option("--metric", default=None, help="One metric (default: every one; mantispy series RUN --list names them).")
@click.option("--list", "list_metrics", is_flag=True, help="List the recording's metrics and stop.")
@_window_options
@click.option("--format", "fmt", type=click.Choice(["csv", "json", "opentsdb", "prometheus"]), default="csv",
              show_default=True, help="csv, json, OpenTSDB put lines, or Prometheus text exposition.")
@click.option("-o", "--out", type=click.Path(path_type=Path), default=None, help="Write here instead of stdout.")
@click.option("--force", is_flag=True, help="Replace an existing -o file.")
def series(run: str, store_path: Path, metric: str | None, list_metrics: bool, start: float, end: float | None,
           pid: int | None, tid: int | None, fmt: str, out: Path | None, force: bool) -> None:
    """The resource time series of a recording (RUN: its number or 'last'), or of a window of it."""
    from mantispy.sampling import series_formats

    with _open(store_path) as store:
        try:
            rec = store.resolve(run)
        except RecordingError as exc:
            raise UserError(str(exc)) from None
        known = store.metrics(rec.id)
        if list_metrics:
            click.echo("\n".join(known) if known else f"recording {rec.id} has no resource points")
            return
        if metric is not None and metric not in known:
            raise UserError(f"--metric {metric}: recording {rec.id} has no such series; it has "
                            + (", ".join(known) if known else "none"))
        window = _window(start, end, pid, tid, rec)
        points = store.points(rec, metric, window)
        if not points:
            click.echo(f"mantispy: no point in recording {rec.id} ({window.describe()})", err=True)
        text = series_formats.render(points, rec, fmt)
    _emit(text, out, force, store_path, f"{fmt} series")


def register(group: click.Group) -> None:
    """Add the verbs to the ``mantispy`` group."""
    for command in (record, recordings, flame, series):
        group.add_command(command)
