"""Profiling campaigns end to end: the real CLI, real subprocess runs, the SQLite store."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import textwrap
import time
from pathlib import Path

import pytest

from mantispy.store import SCHEMA_VERSION, RunStore, StoreError, input_numbers
from tests.helpers import MANTISPY

WORKER = """
import os, sys, time

def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)

def unreached():
    return "no input calls this"

def main(argv):
    n = int(argv[0])
    log = os.environ.get("RUN_LOG")
    if log:
        with open(log, "a") as fh:
            fh.write(f"{n}\\n")
    if len(argv) > 1:
        with open(argv[1]) as fh:
            n += len(fh.read()) % 3
    if n < 0:
        raise ValueError("negative input")
    if n > 100:
        time.sleep(30)
    pause = float(os.environ.get("RUN_PAUSE", "0"))
    if pause:
        time.sleep(pause)
    print(fib(n))

if __name__ == "__main__":
    main(sys.argv[1:])
"""

TASKS = """
def total(items, scale=1):
    acc = 0
    for item in items:
        acc += item * scale
    return acc
"""


def write_campaign(root: Path, body: str, inputs_py: str | None = None) -> Path:
    (root / "prog").mkdir(parents=True, exist_ok=True)
    (root / "prog" / "work.py").write_text(textwrap.dedent(WORKER))
    (root / "prog" / "tasks.py").write_text(textwrap.dedent(TASKS))
    (root / "data.txt").write_text("hello world\n")
    if inputs_py is not None:
        (root / "inputs.py").write_text(textwrap.dedent(inputs_py))
    spec = root / "spec.toml"
    spec.write_text(textwrap.dedent(body))
    return spec


GENERATOR = """
def generate(count, start=5):
    for i in range(count):
        yield {"id": f"n{start + i}", "argv": [str(start + i)]}
"""


def mantispy(*args, cwd=None, env=None, timeout=600):
    return subprocess.run([*MANTISPY, *map(str, args)], capture_output=True, text=True, cwd=cwd, env=env, timeout=timeout)


def test_campaign_stores_metrics_features_failures_and_overhead(tmp_path):
    spec = write_campaign(
        tmp_path,
        """
        name = "fib"
        source = "prog"
        entry = "work.py"
        timeout = 3
        calibration_runs = 2
        [env]
        PYTHONHASHSEED = "0"
        [inputs]
        generator = "inputs.py:generate"
        generator_args = { count = 5 }
        [[inputs.list]]
        id = "crash"
        argv = ["-7"]
        [[inputs.list]]
        id = "too-slow"
        argv = ["500"]
        [[inputs.list]]
        id = "with-file"
        argv = ["6", "data.txt"]
        files = ["data.txt"]
        """,
        GENERATOR,
    )
    store_path = tmp_path / "m.db"
    proc = mantispy("profile", spec, "--store", store_path, "--coverage", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "instrumentation overhead" in proc.stdout
    assert "failed: input crash" in proc.stdout and "timeout: input too-slow" in proc.stdout
    with RunStore(store_path, create=False) as store:
        campaign = store.campaign("fib")
        runs = store.runs(campaign)
        by_id = {(r["input_id"], r["variant"]): r for r in runs}
        assert len([r for r in runs if r["variant"] == "instrumented"]) == 8
        assert by_id[("crash", "instrumented")]["status"] == "failed"
        assert "ValueError: negative input" in by_id[("crash", "instrumented")]["stderr_tail"]
        assert by_id[("too-slow", "instrumented")]["status"] == "timeout"
        ok = by_id[("n7", "instrumented")]
        assert ok["status"] == "ok" and ok["returncode"] == 0
        # the metrics, and the run's context (machine load, other processes' CPU, CPU frequency)
        assert {"wall_s", "cpu_s", "max_rss_kb"} <= set(ok["metrics"]) and ok["metrics"]["max_rss_kb"] > 1000
        # and its performance counters (hw.*/sw.* where perf_event_open allows) and wait4's ru.* fallback
        fallback = {"ru.minor_faults", "ru.major_faults", "ru.voluntary_switches", "ru.involuntary_switches",
                    "ru.blocks_in", "ru.blocks_out"}
        io = {"io.read_chars", "io.write_chars", "io.read_syscalls", "io.write_syscalls", "io.read_bytes", "io.write_bytes"}
        others = {m for m in ok["metrics"] if m not in {"wall_s", "cpu_s", "max_rss_kb"} and not m.startswith(("hw.", "sw."))}
        assert fallback | io <= others <= {"load_1m", "other_cpu_s", "cpu_mhz"} | fallback | io
        assert "load_1m" in ok["metrics"]
        originals = [r for r in runs if r["variant"] == "original"]
        assert len(originals) == 2 and all(r["status"] == "ok" for r in originals)
        assert campaign.calibration["median_overhead"] > -1
        assert campaign.environment["python"] and campaign.environment["cpu_count"] == os.cpu_count()
        assert campaign.manifest["format"] == "mantispy-manifest"
        assert store.inputs(campaign)["with-file"]["file_sizes"] == {"data.txt": 12}
        frame = store.dataframe("fib")
        assert len(frame) == 6  # ok instrumented runs only
        row = frame.set_index("input_id").loc["n7"]
        assert row["work.py:fib:call"] == 41  # fib(7) makes 41 calls, counted in the same run
        assert row["input:argv[0]"] == 7
        assert frame.set_index("input_id").loc["with-file", "input:size(files[0])"] == 12
        assert "work.py:unreached:call" not in frame.columns  # sparse: never non-zero
        coverage = campaign.coverage["files"]["work.py"]
        unreached_body = textwrap.dedent(WORKER).splitlines().index('    return "no input calls this"') + 1
        assert unreached_body in coverage["missing_lines"]
    listing = mantispy("runs", "--store", store_path, "--list")
    assert listing.returncode == 0 and "too-slow" in listing.stdout
    cov = mantispy("coverage", "--store", store_path)
    assert cov.returncode == 0 and "work.py" in cov.stdout
    csv = tmp_path / "runs.csv"
    exported = mantispy("export", "--store", store_path, "--format", "csv", "-o", csv)
    assert exported.returncode == 0, exported.stderr
    header = csv.read_text().splitlines()[0].split(",")
    assert "metric:wall_s" in header and "work.py:fib:call" in header


def test_an_input_without_listed_files_is_described_by_the_files_its_arguments_name(tmp_path):
    """A generator yielding only argv (PyYAML's driver, tried as a new user: ``load.py data/y000.yaml``) left
    the stored descriptor without the file's size, so neither the black box nor the models saw it, while the
    predictor computes it from the same arguments."""
    from mantispy.campaign import InputRecord
    from mantispy.runtime.descriptors import describe_input, prefixed_numbers

    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "y000.yaml").write_text("a: 1\n" * 30)
    (tmp_path / "other.txt").write_text("x")
    record = InputRecord("y000", argv=["data/y000.yaml", "--repeat", "2", "missing.yaml"])
    stored = record.descriptor(tmp_path)
    assert stored["file_sizes"] == {"data/y000.yaml": 150}
    assert prefixed_numbers(stored) == prefixed_numbers(describe_input(record.argv, cwd=str(tmp_path)))
    listed = InputRecord("y000", argv=["data/y000.yaml"], files=["other.txt"])  # listed files are what it reads
    assert listed.descriptor(tmp_path)["file_sizes"] == {"other.txt": 1}


def test_the_black_box_sees_the_same_knob_under_the_same_name_in_every_input():
    """Options are named by their flag, not their position (which shifts as options come and go), and
    files by their place in the input's list, not their name (unique per input, so useless to a model)."""
    a = input_numbers({"argv": ["--mode", "parse", "--reindent", "--repeat", "3", "in/a.sql"],
                       "file_sizes": {"in/a.sql": 1200}})
    b = input_numbers({"argv": ["--repeat", "5", "in/b.sql"], "file_sizes": {"in/b.sql": 800}})
    assert a == {"argv[--mode=parse]": 1.0, "argv[--reindent]": 1.0, "argv[--repeat]": 3.0, "size(files[0])": 1200.0}
    assert b == {"argv[--repeat]": 5.0, "size(files[0])": 800.0}
    both = input_numbers({"argv": ["4", "-n", "-2"], "file_sizes": {"x": 1, "y": 2}})
    assert both == {"argv[0]": 4.0, "argv[-n]": -2.0, "size(files[0])": 1.0, "size(files[1])": 2.0, "size(files)": 3.0}


def test_resume_after_sigkill_loses_nothing_and_runs_nothing_twice(tmp_path):
    spec = write_campaign(
        tmp_path,
        """
        name = "slowish"
        source = "prog"
        entry = "work.py"
        calibration_runs = 0
        [inputs]
        generator = "inputs.py:generate"
        generator_args = { count = 14 }
        """,
        GENERATOR,
    )
    store_path = tmp_path / "m.db"
    log = tmp_path / "runs.log"
    env = {**os.environ, "RUN_LOG": str(log), "RUN_PAUSE": "0.25"}
    proc = subprocess.Popen([*MANTISPY, "profile", str(spec), "--store", str(store_path)], cwd=tmp_path, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.time() + 120
    stored = 0
    while time.time() < deadline and stored < 4:
        time.sleep(0.1)
        if store_path.exists():
            try:
                stored = sqlite3.connect(store_path).execute("SELECT count(*) FROM runs").fetchone()[0]
            except sqlite3.OperationalError:
                stored = 0
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert 4 <= stored < 14, "the campaign was not caught in the middle"
    with RunStore(store_path, create=False) as store:
        before = {r["input_id"] for r in store.runs(store.campaign("slowish"))}
    assert len(before) >= 4
    refused = mantispy("profile", spec, "--store", store_path, cwd=tmp_path, env=env)
    assert refused.returncode == 2 and "--resume" in refused.stderr
    time.sleep(0.5)  # let the orphaned in-flight run (if any) finish writing its log line
    resumed = mantispy("profile", spec, "--store", store_path, "--resume", cwd=tmp_path, env=env)
    assert resumed.returncode == 0, resumed.stderr
    with RunStore(store_path, create=False) as store:
        runs = store.runs(store.campaign("slowish"))
    assert sorted(r["input_id"] for r in runs) == sorted(f"n{5 + i}" for i in range(14))
    executions = log.read_text().split()
    for input_id in before:  # a run finished before the kill never ran again
        assert executions.count(input_id[1:]) == 1
    again = mantispy("profile", spec, "--store", store_path, "--resume", cwd=tmp_path, env=env)
    assert "0 run(s) executed, 14 already stored" in again.stdout


def test_callable_entry_with_kwargs_and_parallel_jobs(tmp_path):
    spec = write_campaign(
        tmp_path,
        """
        name = "tasks"
        source = "prog"
        entry = "tasks:total"
        calibration_runs = 1
        [[inputs.list]]
        id = "a"
        kwargs = { items = [1, 2, 3], scale = 2 }
        [[inputs.list]]
        id = "b"
        kwargs = { items = [5, 5, 5, 5, 5, 5] }
        [[inputs.list]]
        id = "c"
        kwargs = { items = [] }
        """,
    )
    store_path = tmp_path / "m.db"
    proc = mantispy("profile", spec, "--store", store_path, "--jobs", "2", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "disturb" in proc.stderr  # the concurrency warning
    with RunStore(store_path, create=False) as store:
        frame = store.dataframe("tasks").set_index("input_id")
    assert frame.loc["a", "tasks.py:total:loop:1"] == 3
    assert frame.loc["b", "tasks.py:total:loop:1"] == 6
    assert frame.loc["b", "input:len(kwargs.items)"] == 6
    assert frame.loc["a", "input:kwargs.scale"] == 2


def test_dask_cluster_runs_land_in_the_one_store(tmp_path):
    distributed = pytest.importorskip("distributed")
    spec = write_campaign(
        tmp_path,
        """
        name = "dask"
        source = "prog"
        entry = "work.py"
        calibration_runs = 0
        [inputs]
        generator = "inputs.py:generate"
        generator_args = { count = 4 }
        """,
        GENERATOR,
    )
    store_path = tmp_path / "m.db"
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        proc = mantispy("profile", spec, "--store", store_path, "--cluster", cluster.scheduler_address, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    with RunStore(store_path, create=False) as store:
        runs = store.runs(store.campaign("dask"))
    assert sorted(r["input_id"] for r in runs) == ["n5", "n6", "n7", "n8"]
    assert all(r["status"] == "ok" for r in runs)


@pytest.mark.parametrize(
    "body,message",
    [
        ('source = "prog"\nentry = "work.py"\nrepeat = 2\n[[inputs.list]]\nid = "a"\n', "unknown key 'repeat' in the spec"),
        ('source = "prog"\nentry = "missing.py"\n[[inputs.list]]\nid = "a"\n', "entry script 'missing.py' not found"),
        ('source = "prog"\nentry = "tasks:nothing"\n[[inputs.list]]\nid = "a"\n', "entry function 'nothing' is not defined"),
        ('source = "prog"\nentry = "-m nowhere"\n[[inputs.list]]\nid = "a"\n', "entry module 'nowhere' not found"),
        ('source = "prog"\nentry = "work.py"\n[[inputs.list]]\nid = "a"\nargv = ["1"]\nfiles = ["absent.txt"]\n', "cannot read file 'absent.txt'"),
        ('source = "prog"\nentry = "work.py"\n[[inputs.list]]\nid = "a"\n[[inputs.list]]\nid = "a"\n', "input id 'a' appears twice"),
        ('source = "prog"\nentry = "work.py"\n[inputs]\ngenerator = "inputs.py:nope"\n', "has no function 'nope'"),
        ('source = "prog"\nentry = "work.py" [inputs\n', "not valid TOML"),
    ],
)
def test_bad_specs_give_one_line_errors_and_keep_the_store(tmp_path, body, message):
    spec = write_campaign(tmp_path, body, GENERATOR)
    good = write_campaign(tmp_path / "good", 'name = "keep"\nsource = "prog"\nentry = "work.py"\ncalibration_runs = 0\n[[inputs.list]]\nid = "x"\nargv = ["3"]\n')
    store_path = tmp_path / "m.db"
    assert mantispy("profile", good, "--store", store_path).returncode == 0
    proc = mantispy("profile", spec, "--store", store_path, cwd=tmp_path)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mantispy: error: ") and message in lines[0], proc.stderr
    assert str(spec) in lines[0] or "spec.toml" in lines[0]
    with RunStore(store_path, create=False) as store:
        assert len(store.runs(store.campaign("keep"))) == 1


def test_corrupt_newer_and_locked_stores_are_refused(tmp_path):
    corrupt = tmp_path / "corrupt.db"
    corrupt.write_bytes(b"this is not sqlite at all" * 100)
    proc = mantispy("runs", "--store", corrupt)
    assert proc.returncode == 2 and "not a mantispy store or corrupt" in proc.stderr
    assert corrupt.read_bytes().startswith(b"this is not sqlite")  # nothing overwritten

    newer = tmp_path / "newer.db"
    RunStore(newer).close()
    db = sqlite3.connect(newer)
    db.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION + 1),))
    db.commit()
    db.close()
    proc = mantispy("runs", "--store", newer)
    assert proc.returncode == 2 and "newer mantispy" in proc.stderr

    locked = tmp_path / "locked.db"
    store = RunStore(locked)
    campaign = store.open_campaign("c", {"a": 1}, "h", None, {})
    holder = sqlite3.connect(locked, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    with pytest.raises(StoreError, match="locked by another process"):
        RunStore(locked, timeout=0.2).open_campaign("d", {"b": 2}, "h", None, {})
    holder.execute("ROLLBACK")
    assert store.campaign("c") is not None and campaign.name == "c"
    missing = mantispy("runs", "--store", tmp_path / "nothing.db")
    assert missing.returncode == 2 and "no such store" in missing.stderr


def test_parquet_export_round_trips(tmp_path):
    pd = pytest.importorskip("pandas")
    spec = write_campaign(tmp_path, 'name = "pq"\nsource = "prog"\nentry = "work.py"\ncalibration_runs = 0\n[[inputs.list]]\nid = "x"\nargv = ["6"]\n')
    store_path = tmp_path / "m.db"
    assert mantispy("profile", spec, "--store", store_path).returncode == 0
    out = tmp_path / "runs.parquet"
    proc = mantispy("export", "--store", store_path, "--format", "parquet", "-o", out)
    assert proc.returncode == 0, proc.stderr
    frame = pd.read_parquet(out)
    assert frame.loc[frame.index[0], "work.py:fib:call"] == 25


def test_peak_rss_is_the_programs_own_not_the_profilers(tmp_path):
    """ru_maxrss of a forked child carries the parent's size; the profiler must not report that."""
    import sys

    from mantispy.profiler import RunTask, execute

    ballast = bytearray(300 * 1024 * 1024)  # make this (parent) process large
    ballast[::4096] = b"\x01" * len(ballast[::4096])

    def peak(mb: int) -> float:
        # Hold the peak a moment: an uninstrumented program is only sampled from outside (an
        # instrumented one also reports its own peak at exit; test_modeling covers that).
        code = f"import time\nx = bytearray({mb} * 2**20)\nx[::4096] = b'\\x01' * len(x[::4096])\ntime.sleep(0.3)"
        record = execute(RunTask("x", 0, "original", [sys.executable, "-c", code], {}, str(tmp_path), 60, False))
        assert record.status == "ok", record.stderr_tail
        return record.metrics["max_rss_kb"] / 1024

    small, large = peak(1), peak(80)
    assert small < 100, f"a tiny program reported {small:.0f} MiB (the profiler holds 300+ MiB)"
    assert 60 < large - small < 120
    del ballast


def test_generators_of_two_specs_import_their_own_helper_modules(tmp_path):
    """Two campaigns whose generators import a helper module of the same name from their own folders,
    loaded in one process (as the benchmark suite does): each gets its own helper."""
    from mantispy.campaign import load_spec

    specs = []
    for name in ("one", "two"):
        folder = tmp_path / name
        (folder / "app").mkdir(parents=True)
        (folder / "app" / "main.py").write_text("print('hi')\n")
        (folder / "helper.py").write_text(f"TAG = {name!r}\n")
        (folder / "inputs.py").write_text("from helper import TAG\n\ndef generate():\n    yield {'id': TAG, 'argv': [TAG]}\n")
        (folder / "campaign.toml").write_text('name = "c"\nsource = "app"\nentry = "main.py"\n\n[inputs]\ngenerator = "inputs.py:generate"\n')
        specs.append(folder / "campaign.toml")
    assert [load_spec(spec).inputs[0].id for spec in specs] == ["one", "two"]
