"""``mantispy phases``: the phases of a recorded run (issue 21, phase detection)."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import click

from mantispy.errors import UserError
from mantispy.sampling.recorder import DEFAULT_STORE
from mantispy.sampling.store import RecordingError, RecordingStore


@click.command()
@click.argument("run")
@click.option("--store", "store_path", default=DEFAULT_STORE, show_default=True, type=click.Path(path_type=Path),
              help="The store holding the recording.")
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
def phases(run: str, store_path: Path, epoch_s: float | None, min_share: float, thresholds: tuple[float, float],
           confidence: int, include_library: bool, as_json: bool) -> None:
    """The phases of a recording (RUN: its number or 'last'): time slices running a stable set of functions.

    Each phase is named by the functions that set it apart, with their source lines; a phase that recurs
    keeps its label (P1 P2 P1 ...). The phases are stored with the recording.
    """
    from mantispy.phases.detect import PhaseOptions, detect
    from mantispy.phases.epochs import epochs

    options = PhaseOptions(epoch_s=epoch_s, min_share=min_share, f_threshold=thresholds[0],
                           t_threshold=thresholds[1], confidence=confidence, include_library=include_library)
    try:
        with RecordingStore(store_path, create=False) as store:
            recording = store.resolve(run)
            epoch = options.epoch_for(recording.rate)
            found = epochs(store, recording, epoch, include_library=include_library)
            if not found:
                raise UserError(f"recording {recording.id} has no sample: there is nothing to find phases in "
                                "(record a run that uses CPU, or use --mode wall)")
            if len(found) < 2:
                raise UserError(f"recording {recording.id} is one epoch long ({epoch:g} s): too short for phases; "
                                "pass a shorter --epoch")
            result = detect(found, options)
            rows = [phase.to_dict(min_share) for phase in result]
            store.save_phases(recording.id, {**asdict(options), "epoch_s": epoch}, rows)
    except RecordingError as exc:
        raise UserError(str(exc)) from None
    if as_json:
        click.echo(json.dumps({"recording": recording.id, "epoch_s": epoch, "phases": rows}, indent=1))
        return
    click.echo(f"recording {recording.id}: {len(result)} phase(s) in {len(found)} epochs of {epoch:g} s "
               f"({len({p.label for p in result})} distinct)")
    for phase in result:
        click.echo(f"  {phase.label:<4} {phase.start:8.2f} - {phase.end:8.2f} s  {phase.seconds:7.2f} s of samples  "
                   f"{phase.name()}")


def register(group: click.Group) -> None:
    """Add the verb to the ``mantispy`` group."""
    group.add_command(phases)
