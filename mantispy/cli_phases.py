"""``mantispy phases``: the phases of a recorded run (issue 21, phase detection)."""

from __future__ import annotations

import json
import statistics
from dataclasses import asdict
from pathlib import Path

import click

from mantispy.errors import UserError
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
@click.option("--json", "as_json", is_flag=True, help="Print the phases as JSON.")
def phases(runs: tuple[str, ...], every: bool, store_path: Path, epoch_s: float | None, min_share: float,
           thresholds: tuple[float, float], confidence: int, include_library: bool, as_json: bool) -> None:
    """The phases of recorded runs (RUN: a number or 'last'; several, or --all, match phases across runs).

    A phase is a time slice running a stable set of functions. Each is named by the functions that set it
    apart, with their source lines, and shown with its CPU and peak RSS from the resource series; the same
    phase keeps its label in every run that has it (P1 P2 P1 ...). The phases are stored with each recording.
    """
    from mantispy.phases.detect import Known, PhaseOptions, detect
    from mantispy.phases.epochs import epochs

    if not runs and not every:
        raise UserError("name a recording (a number or 'last'), several, or --all")
    options = PhaseOptions(epoch_s=epoch_s, min_share=min_share, f_threshold=thresholds[0],
                           t_threshold=thresholds[1], confidence=confidence, include_library=include_library)
    known: Known = []
    report = []
    try:
        with RecordingStore(store_path, create=False) as store:
            if every:
                chosen = [rec for rec in store.recordings() if store.counts(rec.id)[0] > 0]
                if not chosen:
                    raise UserError(f"{store_path}: no recording with samples; record runs first")
            else:
                chosen = [store.resolve(run) for run in runs]
            for recording in chosen:
                epoch = options.epoch_for(recording.rate)
                found = epochs(store, recording, epoch, include_library=include_library)
                if not found:
                    raise UserError(f"recording {recording.id} has no sample: there is nothing to find phases in "
                                    "(record a run that uses CPU, or use --mode wall)")
                if len(found) < 2:
                    raise UserError(f"recording {recording.id} is one epoch long ({epoch:g} s): too short for "
                                    "phases; pass a shorter --epoch")
                result = detect(found, options, known)
                rows = [{**phase.to_dict(min_share), **_resources(store, recording, phase.start, phase.end)}
                        for phase in result]
                store.save_phases(recording.id, {**asdict(options), "epoch_s": epoch}, rows)
                report.append((recording, epoch, len(found), rows))
    except RecordingError as exc:
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


def _resources(store: RecordingStore, recording, start: float, end: float) -> dict:
    """Mean CPU percent (summed over the processes) and peak RSS (largest process) inside a phase."""
    from mantispy.sampling.types import Window

    window = Window(start, end)
    cpu: dict[float, float] = {}
    for point in store.points(recording, "proc.cpu.percent", window):
        cpu[point.t] = cpu.get(point.t, 0.0) + point.value
    rss = [point.value for point in store.points(recording, "proc.rss_bytes", window)]
    return {"cpu_percent": statistics.mean(cpu.values()) if cpu else None, "peak_rss_bytes": max(rss) if rss else None}


def _cpu(row: dict) -> str:
    return f"CPU {row['cpu_percent']:.0f} %" if row.get("cpu_percent") is not None else ""


def _rss(row: dict) -> str:
    return f"RSS {row['peak_rss_bytes'] / 2**20:.0f} MiB" if row.get("peak_rss_bytes") is not None else ""


def register(group: click.Group) -> None:
    """Add the verb to the ``mantispy`` group."""
    group.add_command(phases)
