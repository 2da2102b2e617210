"""The ``mantispy dataflow`` verbs: record a Dask job, show its operations, predict it on another cluster."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import click

from mantispy.errors import FailureError, UserError

DEFAULT_STORE = Path(".mantis") / "record.db"


def _store_option(fn):
    return click.option("--store", "store_path", default=DEFAULT_STORE, show_default=True, type=click.Path(path_type=Path),
                        help="The store holding the dataflow profiles (the recordings' store).")(fn)


def _need_dask() -> None:
    """One line, not a traceback, where Dask is not installed."""
    import importlib.util

    if importlib.util.find_spec("distributed") is None or importlib.util.find_spec("dask") is None:
        raise UserError("mantispy dataflow needs Dask: pip install 'mantispy[cluster]' (dask[distributed])")


def _bytes(value: str | None, option: str) -> int | None:
    if value is None:
        return None
    _need_dask()
    from dask.utils import parse_bytes

    try:
        parsed = parse_bytes(value) if value.strip() else None  # Dask reads an empty size as one byte
    except (ValueError, TypeError):
        parsed = None
    if parsed is None:
        raise UserError(f"{option} {value!r}: not a size; write it as bytes or with a unit (4GB, 512MiB)")
    if parsed <= 0:
        raise UserError(f"{option} {value}: must be positive")
    return int(parsed)


def _refuse_taken(path: Path, store_path: Path, option: str) -> None:
    """An output file must be new and must not be the store."""
    from mantispy.outputs import OutputError, refuse_overlap

    try:
        refuse_overlap(path, {"store": store_path})
    except OutputError as exc:
        raise UserError(str(exc)) from None
    if path.exists():
        raise UserError(f"{path}: exists; choose another {option} (mantispy does not write over files)")


def _load(profile: str, store_path: Path):
    """A profile from a JSON file, or from the store by id or 'last'."""
    from mantispy.dataflow.store import DataflowStore, DataflowStoreError
    from mantispy.dataflow.types import ProfileError, read_profile

    path = Path(profile)
    if path.is_file() or not (profile == "last" or profile.isdigit()):
        try:
            return read_profile(path)
        except ProfileError as exc:
            raise UserError(str(exc)) from None
    try:
        with DataflowStore(store_path, create=False) as store:
            return store.get(profile)[1]
    except DataflowStoreError as exc:
        raise UserError(str(exc)) from None


def _refuse_cluster_shape(ctx: click.Context) -> None:
    """On a running scheduler the cluster is what it is: options that shape a LocalCluster would be dropped."""
    from click.core import ParameterSource

    given = [f"--{name.replace('_', '-')}" for name in ("workers", "threads", "memory_limit")
             if ctx.get_parameter_source(name) not in (ParameterSource.DEFAULT, None)]
    if given:
        raise UserError(f"{', '.join(given)}: shape the LocalCluster mantispy starts, not a running scheduler's workers; "
                        "leave them out with --scheduler (the profile records the workers it finds)")


@click.group()
def dataflow() -> None:
    """Dask jobs: record one's task graph and timing, show its operations, predict it on another cluster."""


@dataflow.command(context_settings={"ignore_unknown_options": True})
@click.option("--scheduler", default=None, help="Record on this running Dask scheduler (tcp://HOST:PORT) instead of a "
              "LocalCluster; mantispy must be installed where the scheduler runs.")
@click.option("--workers", type=click.IntRange(1, 256), default=2, show_default=True, help="LocalCluster workers.")
@click.option("--threads", type=click.IntRange(1, 256), default=1, show_default=True, help="Threads per worker.")
@click.option("--memory-limit", default=None, help="Memory per worker (4GB, 512MiB; default: Dask's share).")
@click.option("-o", "--out", type=click.Path(path_type=Path), default=None, help="Also write the profile as JSON here.")
@click.option("--python", "python", default=None, help="Interpreter to run the job with (default: this one).")
@click.option("--interval", type=click.FloatRange(0.05, 10.0), default=0.25, show_default=True,
              help="Seconds between reads of the workers' metrics.")
@_store_option
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def record(scheduler: str | None, workers: int, threads: int, memory_limit: str | None, out: Path | None,
           python: str | None, interval: float, store_path: Path, args: tuple[str, ...]) -> None:
    """Run a Dask job unchanged and record its task graph, task timings and the workers' series.

    mantispy dataflow record [OPTIONS] -- SCRIPT ARGS...

    The job's own Client() connects to the recorded cluster (DASK_SCHEDULER_ADDRESS); a job with no
    client is sent there too. The profile goes into the store (and -o as JSON).
    """
    _need_dask()
    from mantispy.dataflow.record import ClusterRequest, RecordError, python_command, record_job
    from mantispy.dataflow.store import DataflowStore, DataflowStoreError

    invocation = list(args[1:] if args[:1] == ("--",) else args)
    if not invocation:
        raise UserError("no job given: mantispy dataflow record [OPTIONS] -- SCRIPT ARGS...")
    script = Path(invocation[0])
    if not script.is_file():
        raise UserError(f"{script}: no such script; give the Dask job's Python file after --")
    if out is not None:
        _refuse_taken(out, store_path, "-o")
    if scheduler is not None and not scheduler.startswith(("tcp://", "tls://", "inproc://", "ucx://", "ws://", "wss://")):
        raise UserError(f"--scheduler {scheduler}: not a scheduler address; write it as tcp://HOST:PORT")
    if scheduler is not None:
        _refuse_cluster_shape(click.get_current_context())
    request = ClusterRequest(workers, threads, _bytes(memory_limit, "--memory-limit"))
    try:
        store = DataflowStore(store_path)
    except DataflowStoreError as exc:
        raise UserError(str(exc)) from None
    with store:
        try:
            result = record_job(python_command(invocation[0], invocation[1:], python), request, scheduler=scheduler,
                                interval=interval)
        except RecordError as exc:
            raise UserError(str(exc)) from None
        profile = result.profile
        profile_id = store.add(profile)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        profile.write(out)
    ran = sum(1 for t in profile.tasks if t.ran)
    cluster = profile.cluster
    click.echo(f"mantispy: dataflow profile {profile_id}: {ran} tasks ran of {len(profile.tasks)}, "
               f"{profile.wall_s:.2f} s on {cluster.workers} worker(s) x {cluster.threads_per_worker} thread(s); "
               f"exit status {result.returncode}" + ("" if profile.complete else " (incomplete)"), err=True)
    for note in profile.notes:
        click.echo(f"mantispy: note: {note}", err=True)
    if result.interrupted:
        click.echo(f"mantispy: interrupted; the partial profile {profile_id} is kept, marked incomplete", err=True)
        raise SystemExit(130)
    if not profile.tasks:
        raise UserError(f"{script}: ran no Dask task, on the recorded scheduler or on a cluster of its own (does it use "
                        "Dask's distributed or local schedulers through dask.compute, .compute() or a Client?)")
    store_arg = "" if store_path == DEFAULT_STORE else f" --store {store_path}"
    click.echo(f"mantispy: see it with: mantispy dataflow show {profile_id}{store_arg}; "
               f"mantispy dataflow whatif {profile_id}{store_arg} --workers N --threads T", err=True)
    if result.returncode != 0:
        raise FailureError(f"{script}: the job failed (exit status {result.returncode}); its partial profile "
                           f"{profile_id} is kept, marked incomplete")


@dataflow.command(name="list")
@_store_option
def list_profiles(store_path: Path) -> None:
    """List the stored dataflow profiles: id, status, length, tasks, command."""
    from mantispy.dataflow.store import DataflowStore, DataflowStoreError

    try:
        with DataflowStore(store_path, create=False) as store:
            rows = store.list()
    except DataflowStoreError as exc:
        raise UserError(str(exc)) from None
    if not rows:
        click.echo(f"{store_path}: no dataflow profile yet")
    for row in rows:
        status = "complete" if row.complete else "incomplete"
        click.echo(f"{row.id:>4}  {status:<10} {row.wall_s:>8.2f} s  {row.tasks:>6} tasks  {' '.join(row.command)}")


@dataflow.command()
@click.argument("profile")
@click.option("--json", "as_json", is_flag=True, help="The operations as JSON.")
@click.option("--html", "html_out", type=click.Path(path_type=Path), default=None,
              help="Write the profile's page here: the operation DAG, the worker threads' Gantt chart, the sources.")
@_store_option
def show(profile: str, as_json: bool, html_out: Path | None, store_path: Path) -> None:
    """Show a recorded job's operations: tasks, time, parallelism, bytes, resource class, critical path, source.

    PROFILE is a profile JSON file, a stored profile's id, or 'last'.
    """
    from mantispy.dataflow.render_text import operations_json, render_operations

    loaded = _load(profile, store_path)
    if html_out is not None:
        from mantispy.dataflow.render_html import render

        _refuse_taken(html_out, store_path, "--html")
        html_out.parent.mkdir(parents=True, exist_ok=True)
        tmp = html_out.with_name(html_out.name + ".tmp")
        tmp.write_text(render(loaded), encoding="utf-8")
        tmp.replace(html_out)
        click.echo(f"mantispy: page written to {html_out}", err=True)
        return
    if as_json:
        click.echo(json.dumps(operations_json(loaded), indent=1))
    else:
        sys.stdout.write(render_operations(loaded))


@dataflow.command()
@click.argument("profile")
@click.argument("out", type=click.Path(path_type=Path))
@_store_option
def export(profile: str, out: Path, store_path: Path) -> None:
    """Write a profile whole as JSON (what ``record -o`` writes), to share it or read it elsewhere.

    PROFILE is a stored profile's id, 'last', or a profile JSON file; OUT must be a new file.
    """
    loaded = _load(profile, store_path)
    _refuse_taken(out, store_path, "OUT")
    out.parent.mkdir(parents=True, exist_ok=True)
    loaded.write(out)
    click.echo(f"mantispy: profile written to {out}", err=True)


@dataflow.command()
@click.argument("profile")
@click.option("--workers", type=click.IntRange(1, 4096), required=True, help="Workers to predict for.")
@click.option("--threads", type=click.IntRange(1, 1024), required=True, help="Threads per worker.")
@click.option("--memory-limit", default=None, help="Memory per worker (default: as recorded).")
@click.option("--cores", type=click.IntRange(1, 4096), default=None,
              help="Cores the workers share (default: the recording machine's).")
@click.option("--json", "as_json", is_flag=True, help="The prediction as JSON.")
@_store_option
def whatif(profile: str, workers: int, threads: int, memory_limit: str | None, cores: int | None, as_json: bool,
           store_path: Path) -> None:
    """Predict a recorded job's completion time on another cluster configuration, and its bottleneck.

    PROFILE is a profile JSON file, a stored profile's id, or 'last'.
    """
    from mantispy.dataflow.render_text import prediction_json, render_prediction
    from mantispy.dataflow.whatif import Configuration, WhatIfError, predict

    loaded = _load(profile, store_path)
    limit = _bytes(memory_limit, "--memory-limit") if memory_limit is not None else loaded.cluster.memory_limit
    try:
        prediction = predict(loaded, Configuration(workers, threads, limit, cores or loaded.cluster.cores or os.cpu_count() or 1))
    except WhatIfError as exc:
        raise UserError(f"{profile}: {exc}") from None
    if as_json:
        click.echo(json.dumps(prediction_json(prediction), indent=1))
    else:
        sys.stdout.write(render_prediction(loaded, prediction))


def register(group: click.Group) -> None:
    """Add the ``dataflow`` group to the ``mantispy`` group."""
    group.add_command(dataflow)
