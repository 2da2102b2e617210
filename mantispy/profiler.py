"""The profiler (paper §2.2, §3.2): run the instrumented program over a campaign's inputs and store,
per run, its metrics and the features measured in the same run.

Every run is a fresh subprocess. Runs execute through joblib (``--jobs``; threads are enough, the work
happens in the subprocesses) or on a Dask distributed cluster (``--cluster``); either way results come
back to this process, the store's only writer, which commits each finished run in its own transaction.
A resumed campaign skips every (input, repeat, variant) already stored.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mantispy.campaign import CALIBRATE_ALL, CampaignSpec
from mantispy.core.launch import FEATURES_ENV, ROOT_PID_ENV, PeakRssSampler, program_argv
from mantispy.core.watchdog import WATCHDOG
from mantispy.instrument.manifest import Manifest, ManifestError, manifest_path
from mantispy.measurement import CONTEXT_METRICS, MachineSnapshot, inputs_to_rerun, noise_floor, repeats_by_input, run_context
from mantispy.runtime import perf_counters
from mantispy.store import Campaign, RunRecord, RunStore, StoreError

STDERR_TAIL = 4000
_open_counters: Callable[[int], tuple[perf_counters.CounterSource | None, dict[str, str]]] | None = None
"""None (the default): a run's performance counters are opened on the thread that starts it, disabled,
inherited by the program and enabled at its exec (perf_event_open's enable_on_exec), so that they count the
whole program and nothing of mantispy's (opened on its pid once Popen returned, they missed what it did
first: 1 to 99 % of a short run's page faults). Tests set a function of the started program's pid
(-> (CounterSource or None, refusals)) returning recorded values (perf_counters.ReplayCounters), to exercise
the hardware path on a machine without a PMU."""
PEAK_ENV = "MANTIS_PEAK_OUT"
INSTRUMENTED, ORIGINAL = "instrumented", "original"


@dataclass
class RunTask:
    """Everything one run needs; plain data, so it travels to joblib threads and Dask workers."""

    input_id: str
    repeat: int
    variant: str
    argv: list[str]
    env: dict[str, str]  # overrides on top of the worker's environment
    cwd: str
    timeout: float
    collect_features: bool
    sampling: dict[str, Any] | None = None  # profile --sample: {"rate", "mode", "interval", "sampler"}


def execute(task: RunTask) -> RunRecord:
    """Run one task to completion (or its timeout) and measure it."""
    env = dict(os.environ)
    env.pop(ROOT_PID_ENV, None)
    env.pop(FEATURES_ENV, None)
    env.pop(PEAK_ENV, None)
    env.update(task.env)
    with tempfile.TemporaryDirectory(prefix="mantis-run-") as tmp:
        features_file = Path(tmp) / "features.json"
        peak_file = Path(tmp) / "peak.json"
        if task.collect_features:
            env[FEATURES_ENV] = str(features_file)
            env[PEAK_ENV] = str(peak_file)
        stderr_path = Path(tmp) / "stderr"
        spool = Path(tmp) / "samples"
        if task.sampling:
            from mantispy.sampling.recorder import sampler_env

            spool.mkdir()
            env.update(sampler_env(env.get("PYTHONPATH"), spool, task.sampling["rate"], task.sampling["mode"],
                                   task.sampling.get("sampler", "builtin")))
        started = time.time()
        before = MachineSnapshot.now()
        timed_out = threading.Event()
        with open(stderr_path, "wb") as stderr:
            # inherited by the program and by what it starts; they count from its exec on, and would count
            # any other program this thread started meanwhile: the watchdog's first start comes before them
            WATCHDOG.start()
            opener = _open_counters
            own = perf_counters.open_counters(0, on_exec=True) if opener is None else None
            try:
                proc = subprocess.Popen(task.argv, cwd=task.cwd, env=env, stdin=subprocess.DEVNULL,
                                        stdout=subprocess.DEVNULL, stderr=stderr, start_new_session=True)
            except OSError as exc:
                if own is not None and own[0] is not None:
                    own[0].close()
                return RunRecord(task.input_id, task.repeat, task.variant, "error", None, {},
                                 stderr_tail=f"cannot start {task.argv[0]}: {exc}", host=socket.gethostname(),
                                 started=started, finished=time.time())

            WATCHDOG.watch_group(proc.pid)
            counters: perf_counters.CounterSource | None
            counters, _refused = own if opener is None else opener(proc.pid)
            series = _SeriesThread(proc.pid, task) if task.sampling else None

            def kill() -> None:
                timed_out.set()
                _kill_group(proc.pid)

            timer = threading.Timer(task.timeout, kill)
            timer.start()
            t0 = time.perf_counter()
            sampler = PeakRssSampler(proc.pid)
            try:
                os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)  # exited, not reaped yet
                wall = time.perf_counter() - t0
                peak_kb = sampler.stop()
                counted = counters.read() if counters is not None else {}
                counted.update(perf_counters.proc_io_metrics(proc.pid))
                _, status, usage = os.wait4(proc.pid, 0)
                after = MachineSnapshot.now()
            finally:
                timer.cancel()
                sampler.stop()
                if counters is not None:
                    counters.close()
            proc.returncode = os.waitstatus_to_exitcode(status)
            points = series.stop() if series is not None else []
            _kill_group(proc.pid)  # leftovers the program started in its session
            WATCHDOG.forget_group(proc.pid)
        tail = stderr_path.read_bytes()[-STDERR_TAIL:].decode("utf-8", "replace")
        if peak_file.exists():  # the instrumented program's own VmHWM at exit: catches a late peak
            try:
                peak_kb = max(peak_kb, int(json.loads(peak_file.read_text())["vm_hwm_kb"]))
            except (ValueError, KeyError, TypeError):
                pass
        sampled = None
        if task.sampling:
            from mantispy.sampling.interpreter import library_paths_of
            from mantispy.sampling.spool import SpoolReader

            reader = SpoolReader(spool)
            stacks, samples = reader.read()
            sampled = {**task.sampling, "started": started, "stacks": stacks, "samples": samples,
                       "points": [(p.metric, p.t, p.value, p.tags) for p in points],
                       "notes": reader.collisions() + reader.trigger_notes(),
                       "returncode": proc.returncode, "library": list(library_paths_of(task.argv[0]))}
        features: dict[str, float] = {}
        if task.collect_features and features_file.exists():
            try:
                features = json.loads(features_file.read_text())
            except ValueError:
                tail += "\nmantispy: the features file was unreadable"
    if timed_out.is_set():
        state = "timeout"
        tail += f"\nmantispy: killed after the {task.timeout:g} s timeout"
    else:
        state = "ok" if proc.returncode == 0 else "failed"
    cpu = usage.ru_utime + usage.ru_stime
    metrics = {"wall_s": wall, "cpu_s": cpu, "max_rss_kb": float(peak_kb), **run_context(before, after, cpu),
               **counted, **perf_counters.rusage_metrics(usage)}
    return RunRecord(task.input_id, task.repeat, task.variant, state, proc.returncode, metrics, features,
                     stderr_tail=tail, host=socket.gethostname(), started=started, finished=time.time(), sampled=sampled)


class _SeriesThread:
    """Polls a sampled run's resources every ``interval`` seconds while it runs (profile --sample)."""

    def __init__(self, pid: int, task: RunTask) -> None:
        from mantispy.sampling.resources import ResourcePoller

        assert task.sampling is not None
        self.poller = ResourcePoller(pid, run=f"{task.input_id}/{task.variant}/{task.repeat}")
        self.interval = float(task.sampling.get("interval", 1.0))
        self.points: list = []
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, name="mantispy-series", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while True:
            self.points += self.poller.poll()
            if self.done.wait(self.interval):
                return

    def stop(self) -> list:
        """Stop polling; the points gathered."""
        self.done.set()
        self.thread.join(timeout=10)
        self.poller.close()
        return self.points


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def environment_fingerprint() -> dict[str, Any]:
    """Where the campaign ran: timings are only comparable on the same machine and software."""
    from mantispy.core.version import VERSION as __version__

    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "python": sys.version.split()[0],
        "implementation": sys.implementation.name,
        "cpu_model": cpu,
        "cpu_count": os.cpu_count(),
        "mantispy": __version__,
        "hostname": socket.gethostname(),
        "platform": sys.platform,
    }


def prepare_build(spec: CampaignSpec, log: Callable[[str], None] = lambda _m: None) -> Manifest:
    """Instrument the campaign's source into its build folder, reusing an up-to-date build; a monitored
    campaign's plan is written beside the build's manifest."""
    manifest = _instrumented_build(spec, log)
    if monitored(spec):
        from mantispy.monitoring.launch import boot_is_current, make_boot
        from mantispy.monitoring.plan import build_plan, plan_key
        from mantispy.monitoring.view import package_locations

        exclude, packages = list(spec.instrument.get("exclude", [])), package_locations(spec)
        key = plan_key(spec.source, exclude, packages)
        if boot_is_current(monitor_boot_path(spec), key):  # the plan places the features of every included file
            log(f"reusing the bytecode backend's plan in {monitor_boot_path(spec)}")
        else:
            make_boot(monitor_boot_path(spec), build_plan(spec.source, exclude, packages), key)
    return manifest


def _instrumented_build(spec: CampaignSpec, log: Callable[[str], None]) -> Manifest:
    from mantispy.instrument.manifest import FAMILIES
    from mantispy.instrument.transformer import Options
    from mantispy.instrument.tree import instrument_tree

    families = frozenset(spec.instrument.get("only", FAMILIES))
    exclude = list(spec.instrument.get("exclude", []))
    source = spec.source
    if monitored(spec):  # the build is only the manifest's: the runs start the original program
        from mantispy.monitoring.view import program_view

        if "values" in families:
            log("the bytecode backend counts no values: the build's manifest leaves them out")
        families = families - {"values"}
        source = program_view(spec)  # the source with the included packages beside it
    options = Options(families=families, k=int(spec.instrument.get("k", 5)),
                      derive_arms=bool(spec.instrument.get("derive_arms", True)))
    wanted = {"families": sorted(options.families), "k": options.k, "exclude": exclude, "disabled": [],
              "derive_arms": options.derive_arms}
    if manifest_path(spec.build).exists():
        try:
            existing = Manifest.load(spec.build)
        except (OSError, ManifestError) as exc:  # our own cache, damaged: instrument again
            log(f"the instrumented build in {spec.build} is unreadable ({exc}); instrumenting again")
            existing = None
        fresh = instrument_tree_hash(source)
        if existing is not None and existing.source_hash == fresh and existing.options == wanted:
            log(f"reusing the instrumented build in {spec.build}")
            return existing
    result = instrument_tree(source, spec.build, options, exclude)
    for error in result.errors:
        log(f"warning: {error} (left uninstrumented)")
    return result.manifest


def instrument_tree_hash(source: Path) -> str:
    """The manifest's source hash of ``source`` as it is now (same recipe as instrument_tree)."""
    import hashlib

    from mantispy.instrument.tree import walk_sources

    root = source if source.is_dir() else source.parent
    files = list(walk_sources(source)) if source.is_dir() else [source]
    digest = hashlib.sha256()
    for path in files:
        if path.suffix == ".py":
            rel = path.relative_to(root).as_posix()
            digest.update(f"{rel}\0{hashlib.sha256(path.read_bytes()).hexdigest()}\n".encode())
    return digest.hexdigest()


def monitored(spec: CampaignSpec) -> bool:
    """Whether the campaign counts features with the bytecode backend (``[instrument] backend``)."""
    return spec.instrument.get("backend", "source") == "monitor"


def monitor_boot_path(spec: CampaignSpec) -> Path:
    """Where a monitored campaign's boot folder (its plan and sitecustomize) lives, beside the build's manifest."""
    return spec.build / ".mantis" / "monitor-boot"


def make_task(spec: CampaignSpec, record, repeat: int, variant: str, root: Path) -> RunTask:
    """The task for one (input, repeat, variant); a monitored campaign's instrumented runs start the
    original program with the bytecode backend's boot folder first on its path."""
    python = sys.executable
    boot: list[str] = []
    if variant == INSTRUMENTED and monitored(spec):
        root, boot = spec.source_root, [str(monitor_boot_path(spec))]
    if spec.entry.kind == "callable":
        argv = [python, "-m", "mantispy.runtime.entry", spec.entry.target, json.dumps(record.kwargs or {})]
    else:
        argv = program_argv(root, spec.entry.invocation(record.argv), python)
    pythonpath = os.pathsep.join([*boot, str(root), *([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])])
    return RunTask(record.id, repeat, variant, argv, {**spec.env, "PYTHONPATH": pythonpath},
                   str(spec.workdir), spec.timeout, collect_features=variant == INSTRUMENTED)


def plan(spec: CampaignSpec, done: set[tuple[str, int, str]]) -> list[RunTask]:
    """The runs of the campaign not yet stored, interleaved and shuffled (seeded by ``order_seed``).

    Every (input, repeat) runs instrumented (features). With ``calibration_runs = "all"`` every input
    also runs uninstrumented ``original_repeats`` times (metrics). Instrumented and original runs are
    mixed in one random order, so a burst of machine load spreads over many inputs instead of landing
    on one block of them.
    """
    tasks = [
        make_task(spec, record, repeat, INSTRUMENTED, spec.build)
        for record in spec.inputs
        for repeat in range(spec.repeats)
        if (record.id, repeat, INSTRUMENTED) not in done
    ]
    if spec.calibration_runs == CALIBRATE_ALL:
        tasks += [
            make_task(spec, record, repeat, ORIGINAL, spec.source_root)
            for record in spec.inputs
            for repeat in range(spec.original_repeats)
            if (record.id, repeat, ORIGINAL) not in done
        ]
    return shuffled(tasks, spec.order_seed)


def shuffled(tasks: list[RunTask], seed: int) -> list[RunTask]:
    """``tasks`` in a random order that depends only on ``seed`` and the tasks themselves."""
    import random

    ordered = sorted(tasks, key=lambda t: (t.input_id, t.variant, t.repeat))
    random.Random(seed).shuffle(ordered)
    return ordered


def plan_reruns(spec: CampaignSpec, store: RunStore, campaign: Campaign) -> list[RunTask]:
    """Extra uninstrumented runs (``rerun_repeats`` each, once) of the inputs whose repeats disagree by
    more than ``rerun_threshold`` ((max - min) / median of CPU time), shuffled."""
    if spec.calibration_runs != CALIBRATE_ALL or spec.original_repeats < 2 or spec.rerun_repeats < 1:
        return []
    runs = store.runs(campaign)
    done = {(r["input_id"], r["repeat"], r["variant"]) for r in runs}
    records = {r.id: r for r in spec.inputs}
    tasks = [
        make_task(spec, records[iid], repeat, ORIGINAL, spec.source_root)
        for iid in inputs_to_rerun(runs, spec.rerun_threshold, spec.original_repeats)
        if iid in records
        for repeat in range(spec.original_repeats, spec.original_repeats + spec.rerun_repeats)
        if (iid, repeat, ORIGINAL) not in done
    ]
    return shuffled(tasks, spec.order_seed + 1)


def plan_calibration(spec: CampaignSpec, store: RunStore, campaign: Campaign) -> list[RunTask]:
    """Uninstrumented runs of up to ``calibration_runs`` inputs that ran fine instrumented, spread over
    the range of their CPU times (cheapest, most expensive and between), skipping those already run."""
    if spec.calibration_runs == CALIBRATE_ALL:  # planned with the instrumented runs (see plan)
        return []
    runs = store.runs(campaign)
    records = {r.id: r for r in spec.inputs}
    have = {r["input_id"] for r in runs if r["variant"] == ORIGINAL}
    ok = sorted(
        ((r["metrics"].get("cpu_s", 0.0), r["input_id"]) for r in runs
         if r["variant"] == INSTRUMENTED and r["repeat"] == 0 and r["status"] == "ok"),
    )
    wanted = spec.calibration_runs - len(have)
    candidates = [iid for _, iid in ok if iid not in have]
    if wanted <= 0 or not candidates:
        return []
    if wanted >= len(candidates):
        chosen = candidates
    else:
        step = (len(candidates) - 1) / max(wanted - 1, 1)
        chosen = sorted({candidates[round(i * step)] for i in range(wanted)})
    return shuffled([make_task(spec, records[iid], 0, ORIGINAL, spec.source_root) for iid in chosen if iid in records],
                    spec.order_seed)


def run_tasks(tasks: list[RunTask], jobs: int = 1, cluster: str | None = None) -> Iterator[RunRecord]:
    """Execute tasks, yielding each record as soon as it finishes (any order)."""
    if cluster:
        yield from _run_on_cluster(tasks, cluster)
        return
    if jobs <= 1:
        for task in tasks:
            yield execute(task)
        return
    from joblib import Parallel, delayed

    # Threads suffice: each run is a subprocess; results come back here, to the one store writer.
    yield from Parallel(n_jobs=jobs, backend="threading", return_as="generator_unordered")(
        delayed(execute)(task) for task in tasks
    )


def _run_on_cluster(tasks: list[RunTask], address: str) -> Iterator[RunRecord]:
    try:
        from distributed import Client, as_completed
    except ImportError:
        raise StoreError("--cluster needs Dask: pip install 'dask[distributed]'") from None
    try:
        client = Client(address, timeout="10s")
    except OSError as exc:
        raise StoreError(f"cannot reach the Dask scheduler at {address} ({exc}); check the address") from None
    try:
        futures = client.map(execute, tasks, pure=False)
        for future in as_completed(futures):
            yield future.result()
    finally:
        client.close()


@dataclass
class Summary:
    """What a profile call did."""

    campaign: str
    planned: int
    executed: int = 0
    skipped: int = 0
    by_status: dict[str, int] = field(default_factory=dict)
    overhead: dict[str, Any] | None = None


def calibration_summary(store: RunStore, campaign: Campaign) -> dict[str, Any] | None:
    """Instrumentation overhead from inputs run both ways (CPU-time ratio of the medians of each
    variant's runs, per input, and the median over inputs) and the campaign's noise floor."""
    runs = store.runs(campaign)
    original = _median_metric(runs, ORIGINAL, "cpu_s")
    instrumented = _median_metric(runs, INSTRUMENTED, "cpu_s")
    per_input = {iid: instrumented[iid] / original[iid] - 1 for iid in original if iid in instrumented and original[iid]}
    noise = noise_floor(runs)
    if not per_input and not noise:
        return None
    summary: dict[str, Any] = {"metric": "cpu_s", "per_input": per_input,
                               "median_overhead": statistics.median(per_input.values()) if per_input else None}
    if noise:
        summary["noise"] = noise
    return summary


def _median_metric(runs: list[dict[str, Any]], variant: str, metric: str) -> dict[str, float]:
    return {iid: statistics.median(v) for iid, v in repeats_by_input(runs, variant, metric).items()}


def profile(
    spec: CampaignSpec,
    store: RunStore,
    jobs: int = 1,
    resume: bool = False,
    replace: bool = False,
    cluster: str | None = None,
    on_start: Callable[[int], None] = lambda _n: None,
    on_result: Callable[[RunRecord], None] = lambda _r: None,
    log: Callable[[str], None] = lambda _m: None,
    sample: dict[str, Any] | None = None,
) -> Summary:
    """Run (or continue) a campaign into ``store``. ``sample`` ({"rate", "mode", "interval", "sampler"}) also
    stack-samples every run and polls its resources, stored as a recording of the run (mantispy flame)."""
    manifest = prepare_build(spec, log)
    refused = perf_counters.refused_note(perf_counters.probe())
    if refused is not None:
        log(refused)
    campaign = store.open_campaign(spec.name, _spec_identity(spec), manifest.source_hash, manifest.to_dict(),
                                   environment_fingerprint(), replace=replace)
    done = store.done(campaign)
    if done and not resume:
        raise StoreError(
            f"{store.path}: campaign {spec.name!r} already has {len(done)} stored runs; "
            "pass --resume to continue it or --replace to start over"
        )
    descriptors = [(r.id, r.descriptor(spec.workdir)) for r in spec.inputs]
    stored = store.inputs(campaign)
    for iid, descriptor in descriptors:
        if iid in stored and json.loads(json.dumps(descriptor)) != stored[iid]:
            raise StoreError(
                f"{store.path}: input {iid!r} of campaign {spec.name!r} changed since it was profiled "
                "(arguments or file sizes); give it a new id or pass --replace"
            )
    store.add_inputs(campaign, descriptors)
    tasks = plan(spec, done)
    summary = Summary(spec.name, planned=len(tasks), skipped=len(done))
    on_start(len(tasks) + (0 if spec.calibration_runs == CALIBRATE_ALL else max(spec.calibration_runs, 0)))

    recordings = None

    def execute_all(batch: list[RunTask]) -> None:
        nonlocal recordings
        for task in batch:
            task.sampling = sample
        for record in run_tasks(batch, jobs, cluster):
            record.metrics = {k: v for k, v in record.metrics.items()
                              if k in spec.metrics or k in CONTEXT_METRICS or perf_counters.is_counter_metric(k)}
            run_id = store.add_run(campaign, record)
            if record.sampled is not None:
                from mantispy.sampling.recorder import store_sampled_run
                from mantispy.sampling.store import RecordingStore

                recordings = recordings or RecordingStore(store.path)
                command = [record.variant, record.input_id, f"repeat {record.repeat}"]
                store_sampled_run(recordings, run_id, command, record.sampled)
            summary.executed += 1
            summary.by_status[record.status] = summary.by_status.get(record.status, 0) + 1
            on_result(record)

    execute_all(tasks)
    calibration = plan_calibration(spec, store, campaign)
    summary.planned += len(calibration)
    on_start(len(tasks) + len(calibration))
    execute_all(calibration)
    reruns = plan_reruns(spec, store, campaign)
    if reruns:
        log(f"{len({t.input_id for t in reruns})} input(s) whose repeats disagree by more than "
            f"{spec.rerun_threshold:.0%}: {len(reruns)} more uninstrumented run(s)")
        summary.planned += len(reruns)
        on_start(len(tasks) + len(calibration) + len(reruns))
        execute_all(reruns)
    if recordings is not None:
        recordings.close()
    overhead = calibration_summary(store, campaign)
    if overhead is not None:
        store.set_campaign_json(campaign, "calibration_json", overhead)
    summary.overhead = overhead
    return summary


def _spec_identity(spec: CampaignSpec) -> dict[str, Any]:
    """The parts of a spec that make runs comparable. Inputs may be added later (checked one by one)."""
    return {
        "entry": {"kind": spec.entry.kind, "target": spec.entry.target},
        "repeats": spec.repeats,
        "timeout": spec.timeout,
        "metrics": spec.metrics,
        "env": spec.env,
        "instrument": spec.instrument,
        "calibration_runs": spec.calibration_runs,
        "workdir": str(spec.workdir),
        "source": str(spec.source),
    }

