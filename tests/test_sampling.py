"""Stack sampling, resource time series and flame graphs (issue 20): mantispy record, flame, series."""

from __future__ import annotations

import csv
import io
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from mantispy.phases.epochs import library_prefixes
from mantispy.sampling import flame as flames
from mantispy.sampling.recorder import RecordOptions, record
from mantispy.sampling.store import RecordingError, RecordingStore
from mantispy.sampling.types import WHOLE, Window
from tests.helpers import find_browser, run_chromium

PROGRAMS = Path(__file__).parent / "programs" / "sampled"
CLI = [sys.executable, "-m", "mantispy"]


def _record(tmp_path: Path, *invocation: str, **options):
    store = tmp_path / "rec.db"
    result = record(RecordOptions(list(invocation), store=store, cwd=PROGRAMS, **options))
    return store, result


def _shares(store: Path, recording_id: int, names=("a", "b", "c"), window: Window = WHOLE) -> dict[str, float]:
    with RecordingStore(store, create=False) as db:
        tree = flames.flame_tree(db, db.recording(recording_id), window)
    return flames.totals_by_function(tree, names)


def test_cpu_time_is_attributed_within_two_points(tmp_path):
    # 4 s of CPU at 100 Hz: ~400 samples (2 rounds, ~200, left 0.577 for a 0.6 share in a fresh clone's
    # suite on 2 busy cores: the few samples that land off a function's block weigh double with half as many)
    store, result = _record(tmp_path, "shares.py", "4", interval=0.2)
    assert result.recording.status == "complete" and result.recording.returncode == 0
    shares = _shares(store, result.recording.id)
    for name, expected in (("a", 0.6), ("b", 0.3), ("c", 0.1)):
        assert abs(shares[name] - expected) <= 0.02, shares
    assert result.points > 0


def test_wall_mode_sees_a_waiting_thread(tmp_path):
    store, result = _record(tmp_path, "family.py", mode="wall", rate=50)
    with RecordingStore(store, create=False) as db:
        rec = db.recording(result.recording.id)
        frames = db.frames(rec.id)
        names = {f.name for s in db.samples(rec) for f in frames[s.stack]}
    assert "Thread.join" in names or "Popen.wait" in names or "Process.join" in names  # waiting, not computing


def test_every_process_and_thread_of_the_family_is_sampled(tmp_path):
    store, result = _record(tmp_path, "family.py")
    assert result.recording.returncode == 0
    with RecordingStore(store, create=False) as db:
        rec = db.recording(result.recording.id)
        frames = db.frames(rec.id)
        where: dict[str, set[int]] = {}
        for s in db.samples(rec):
            for f in frames[s.stack]:
                where.setdefault(f.name, set()).add(s.pid)
        tids = {s.tid for s in db.samples(rec) if any(f.name == "in_thread" for f in frames[s.stack])}
    for name in ("in_thread", "in_fork_child", "in_spawn_child", "main"):
        assert name in where, (name, sorted(where))
    pids = set().union(*(where[n] for n in ("in_fork_child", "in_spawn_child", "main")))
    assert len(pids) >= 4  # the program, the fork child, the spawn child, the subprocess
    assert len(tids) == 1 and result.processes >= 4


def test_the_program_runs_as_it_would_unrecorded(tmp_path):
    """Output, exit status and the program's own SIGPROF timer are untouched; the collision is noted."""
    plain = subprocess.run([sys.executable, "own_profiler.py"], cwd=PROGRAMS, capture_output=True, text=True)
    recorded = subprocess.run([*CLI, "record", "--store", str(tmp_path / "rec.db"), "--", "own_profiler.py"],
                              cwd=PROGRAMS, capture_output=True, text=True)
    assert (recorded.returncode, recorded.stdout) == (plain.returncode, plain.stdout) == (3, "ticked True\n")
    assert "installed a SIGPROF handler, an ITIMER_PROF timer" not in recorded.stderr  # the timer was stopped
    assert "installed a SIGPROF handler" in recorded.stderr and "did not collide" in recorded.stderr
    assert "Traceback" not in recorded.stderr


def test_a_program_that_crashes_or_exits_at_once_is_recorded_as_what_it_did(tmp_path):
    crash = tmp_path / "crash.py"
    crash.write_text("raise SystemExit('boom')\n", encoding="utf-8")
    proc = subprocess.run([*CLI, "record", "--store", str(tmp_path / "rec.db"), "--", str(crash)],
                          capture_output=True, text=True)
    assert proc.returncode == 1 and "boom" in proc.stderr and "Traceback" not in proc.stderr.split("boom")[1]
    assert "recording 1 complete: 0 samples" in proc.stderr and "no sample" in proc.stderr
    shown = subprocess.run([*CLI, "flame", "1", "--store", str(tmp_path / "rec.db")], capture_output=True, text=True)
    assert shown.returncode == 0 and shown.stdout == "" and "no sample in recording 1" in shown.stderr


def test_formats_are_well_formed_and_agree(tmp_path):
    store, result = _record(tmp_path, "shares.py", "1", interval=0.2)
    rid = str(result.recording.id)
    base = [*CLI, "--debug"]

    def run(*args):
        proc = subprocess.run([*base, *args, "--store", str(store)], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    folded = run("flame", rid)
    total_us = sum(int(line.rsplit(" ", 1)[1]) for line in folded.splitlines())
    assert all(";" in line or line.startswith("<module>") for line in folded.splitlines())
    speed = json.loads(run("flame", rid, "--format", "speedscope"))
    assert speed["$schema"].endswith("file-format-schema.json")
    frames = speed["shared"]["frames"]
    weights = 0.0
    for profile in speed["profiles"]:
        assert profile["type"] == "sampled" and profile["unit"] == "seconds"
        assert len(profile["samples"]) == len(profile["weights"])
        assert all(0 <= i < len(frames) for stack in profile["samples"] for i in stack)
        weights += sum(profile["weights"])
    assert abs(weights * 1e6 - total_us) < 1e3  # the same seconds in both formats
    svg = ET.fromstring(run("flame", rid, "--format", "svg"))
    assert svg.tag.endswith("svg") and any("a (shares.py" in (t.text or "") for t in svg.iter("{http://www.w3.org/2000/svg}title"))
    rows = list(csv.DictReader(io.StringIO(run("series", rid))))
    assert {"proc.cpu.user_s", "proc.rss_bytes", "proc.threads"} <= {r["metric"] for r in rows}
    assert all(float(r["t_s"]) >= -0.5 for r in rows)
    tsdb = run("series", rid, "--metric", "proc.rss_bytes", "--format", "opentsdb").splitlines()
    assert tsdb and all(line.startswith("put proc.rss_bytes ") and " pid=" in line and " run=" in line for line in tsdb)
    prom = run("series", rid, "--metric", "proc.rss_bytes", "--format", "prometheus").splitlines()
    assert prom[0] == "# TYPE mantispy_proc_rss_bytes gauge" and prom[1].startswith("mantispy_proc_rss_bytes{")
    doc = json.loads(run("series", rid, "--format", "json"))
    assert doc["recording"]["id"] == result.recording.id and doc["points"]


def test_windows_and_differential_flame_graphs(tmp_path):
    store, result = _record(tmp_path, "shares.py", "1", "2")  # a: 0-1.2 s, b: 1.2-1.8 s, c: 1.8-2.0 s
    rid = result.recording.id
    early = _shares(store, rid, window=Window(0.1, 1.0))
    late = _shares(store, rid, window=Window(1.3, 1.7))
    assert early["a"] > 0.95 and late["b"] > 0.95
    with RecordingStore(store, create=False) as db:
        rec = db.recording(rid)
        tree = flames.diff_tree(db, rec, Window(1.3, 1.7), db, rec, Window(0.1, 1.0))
    proc = subprocess.run([*CLI, "flame", str(rid), "--store", str(store), "--from", "1.3", "--to", "1.7",
                           "--diff", "same", "--diff-from", "0.1", "--diff-to", "1.0"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    lines = {line.rsplit(" ", 2)[0].split(";")[-1]: line.rsplit(" ", 2)[1:] for line in proc.stdout.splitlines()}
    grown = [label for label, (old, new) in lines.items() if int(new) > int(old)]
    assert any(label.startswith("spin") for label in grown) or tree.root.total > 0


def test_bad_queries_are_one_line(tmp_path):
    store, result = _record(tmp_path, "shares.py", "1", "0.2")
    cases = [
        (["flame", "7"], "no recording 7"),
        (["flame", "abc"], "a recording is named by its number or 'last'"),
        (["flame", "1", "--from", "50"], "choose a window inside it"),
        (["flame", "1", "--from", "2", "--to", "1"], "0 <= FROM < TO"),
        (["series", "1", "--metric", "nope"], "has no such series"),
        (["flame", "1", "--format", "speedscope", "--diff", "same"], "--diff draws folded or svg"),
    ]
    for args, said in cases:
        proc = subprocess.run([*CLI, *args, "--store", str(store)], capture_output=True, text=True)
        assert proc.returncode == 2 and said in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, (args, proc.stderr)
    missing = subprocess.run([*CLI, "flame", "1", "--store", str(tmp_path / "none.db")], capture_output=True, text=True)
    assert missing.returncode == 2 and "no such store" in missing.stderr
    (tmp_path / "junk.db").write_text("not sqlite at all" * 100)
    junk = subprocess.run([*CLI, "recordings", "--store", str(tmp_path / "junk.db")], capture_output=True, text=True)
    assert junk.returncode == 2 and "not a mantispy store or corrupt" in junk.stderr
    bad_rate = subprocess.run([*CLI, "record", "--rate", "5000", "--store", str(store), "--", "shares.py"],
                              cwd=PROGRAMS, capture_output=True, text=True)
    assert bad_rate.returncode == 2 and "1 to 1000" in bad_rate.stderr
    out = tmp_path / "mine.txt"
    out.write_text("keep me")
    refused = subprocess.run([*CLI, "flame", "1", "--store", str(store), "-o", str(out)], capture_output=True, text=True)
    assert refused.returncode == 2 and out.read_text() == "keep me"


def test_a_killed_recording_keeps_its_batches_and_is_marked_incomplete(tmp_path):
    store = tmp_path / "rec.db"
    proc = subprocess.Popen([*CLI, "record", "--store", str(store), "--", "slow.py", "60"], cwd=PROGRAMS,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    stored = 0
    while time.monotonic() < deadline and stored < 50:
        time.sleep(0.3)
        if store.exists():
            try:
                with sqlite3.connect(store) as db:
                    stored = db.execute("SELECT COUNT(*) FROM rec_samples").fetchone()[0]
            except sqlite3.Error:
                stored = 0
    assert stored >= 50, "no batch was stored while the program ran"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    time.sleep(1)
    with RecordingStore(store, create=False) as db:
        rec = db.recording(1)
        kept = sum(1 for _ in db.samples(rec))
    assert rec.status == "incomplete" and kept >= stored
    listed = subprocess.run([*CLI, "recordings", "--store", str(store)], capture_output=True, text=True)
    assert "incomplete" in listed.stdout
    leftovers = subprocess.run(["pgrep", "-f", "slow.py 60"], capture_output=True, text=True).stdout.split()
    deadline = time.monotonic() + 15
    while leftovers and time.monotonic() < deadline:  # the watchdog ends the program
        time.sleep(0.5)
        leftovers = subprocess.run(["pgrep", "-f", "slow.py 60"], capture_output=True, text=True).stdout.split()
    assert not leftovers


def test_store_refuses_what_it_cannot_read(tmp_path):
    with pytest.raises(RecordingError, match="no such store"):
        RecordingStore(tmp_path / "missing.db", create=False)
    plain = tmp_path / "plain.db"
    sqlite3.connect(plain).execute("CREATE TABLE x (y)").connection.close()
    with pytest.raises(RecordingError, match="holds no recordings"):
        RecordingStore(plain, create=False)


@pytest.mark.slow
def test_the_html_view_redraws_the_flame_graph_for_a_brushed_window(tmp_path):
    browser = find_browser()
    if browser is None:
        pytest.skip("no chromium on PATH: install Debian's chromium (.ci/run does) to run the browser check")
    store, result = _record(tmp_path, "shares.py", "1", "2", interval=0.2)
    page = tmp_path / "view.html"
    proc = subprocess.run([*CLI, "flame", "last", "--store", str(store), "--format", "html", "-o", str(page)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    doms = {}
    for name, fragment in (("whole", ""), ("window", "#window=0.1,1.0")):
        shown = run_chromium(browser, page.as_uri() + fragment, tmp_path, "--dump-dom")
        assert "<html" in shown.stdout, shown.stderr[-2000:]
        doms[name] = shown.stdout
    import re

    for dom in doms.values():
        root = re.search(r"<html\b[^>]*>", dom).group(0)
        assert 'data-rendered="ok"' in root and "data-script-errors" not in root, root

    def labels(dom):
        return {label.split(" (")[0] for label in re.findall(r'data-label="([^"]+)"', dom)}

    assert {"a", "b", "c"} <= labels(doms["whole"])
    assert "a" in labels(doms["window"]) and not {"b", "c"} & labels(doms["window"])  # the brush chose a() only
    assert 'data-window="0.10-1.00"' in re.search(r"<html\b[^>]*>", doms["window"]).group(0)
    shot = tmp_path / "view.png"
    run_chromium(browser, page.as_uri() + "#window=0.1,1.0", tmp_path, f"--screenshot={shot}")
    assert shot.exists() and shot.stat().st_size > 10_000


def test_py_spy_as_the_sampler_keeps_the_program_s_exit_status(tmp_path):
    import shutil

    if not (shutil.which("py-spy") or Path(sys.executable).with_name("py-spy").exists()):
        pytest.skip("py-spy is not installed (pip install py-spy; the test extra installs it)")
    store = tmp_path / "spy.db"
    # 3 rounds (~300 samples at 100 Hz): with 1 round (~100), a fresh clone's suite on 2 busy cores gave
    # b 0.365 and c 0.042 (py-spy attaches after the start and loses the last samples at the exit; both
    # weigh less over more rounds, and a share's binomial spread is 2.6 points instead of 4.6)
    proc = subprocess.run([*CLI, "record", "--sampler", "py-spy", "--store", str(store), "--", "shares.py", "3"],
                          cwd=PROGRAMS, capture_output=True, text=True)
    if proc.returncode == 2 and "ptrace refused" in proc.stderr:
        pytest.skip("this machine refuses ptrace to py-spy: " + proc.stderr.strip())
    assert proc.returncode == 0 and proc.stdout == "done 3\n", proc.stderr
    with RecordingStore(store, create=False) as db:
        assert db.recording(1).sampler == "py-spy"
    shares = _shares(store, 1)
    for name, expected in (("a", 0.6), ("b", 0.3), ("c", 0.1)):  # py-spy's own resolution: whole samples
        assert abs(shares[name] - expected) <= 0.06, shares
    crash = tmp_path / "three.py"
    crash.write_text("import time, sys\ntime.sleep(0.3)\nsys.exit(3)\n", encoding="utf-8")
    three = subprocess.run([*CLI, "record", "--sampler", "py-spy", "--store", str(store), "--", str(crash)],
                           capture_output=True, text=True)
    assert three.returncode == 3, three.stderr


def test_profile_sample_stores_a_recording_of_every_run(tmp_path):
    import shutil

    shutil.copytree(Path(__file__).parent / "programs" / "batchjob", tmp_path / "batchjob")
    spec = tmp_path / "batchjob" / "campaign.toml"
    spec.write_text(spec.read_text().replace("count = 24", "count = 3"), encoding="utf-8")
    store = tmp_path / "runs.db"
    proc = subprocess.run([*CLI, "profile", str(spec), "--store", str(store), "--sample", "-q"], capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stderr
    with sqlite3.connect(store) as db:
        runs = {row[0] for row in db.execute("SELECT id FROM runs")}
    with RecordingStore(store, create=False) as recordings:
        rows = recordings.recordings()
        assert {r.run_id for r in rows} == runs and all(r.status == "complete" for r in rows)
        sampled = [r for r in rows if recordings.counts(r.id)[0] > 0]
        assert sampled, "no run was sampled"
        tree = flames.flame_tree(recordings, sampled[0])
        names = set()
        stack = [tree.root]
        while stack:
            node = stack.pop()
            names.add(node.frame.file.rsplit("/", 1)[-1] if node.frame else "")
            stack.extend(node.children.values())
        assert "job.py" in names
        assert recordings.metrics(rows[0].id)
        assert all(r.library == list(library_prefixes()) for r in rows)  # the campaign's interpreter: this one


def test_a_recording_keeps_the_library_paths_of_the_interpreter_it_ran(tmp_path):
    """``record --python`` stores where that interpreter's standard library lies, not this one's."""
    root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    found = sorted(root.glob("3.12.*/bin/python3")) if root.is_dir() else []
    if not found:
        pytest.skip("no CPython 3.12 under pyenv on this machine")
    store = tmp_path / "other.db"
    proc = subprocess.run([*CLI, "record", "--store", str(store), "--python", str(found[-1]), "--", "shares.py", "1",
                           "0.1"], cwd=PROGRAMS, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    with RecordingStore(store, create=False) as db:
        library = db.recording(1).library
    stdlib = str(found[-1].parent.parent / "lib" / "python3.12")
    assert stdlib in library and not set(library) & set(library_prefixes()), library


def test_hundreds_of_children_and_a_locked_store(tmp_path):
    store = tmp_path / "rec.db"
    proc = subprocess.run([*CLI, "record", "--store", str(store), "--interval", "0.1", "--", "many_children.py"],
                          cwd=PROGRAMS, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and proc.stdout == "children 200 failed 0\n", proc.stderr
    assert "Traceback" not in proc.stderr and "recording 1 complete" in proc.stderr
    locker = sqlite3.connect(store, isolation_level=None)
    locker.execute("BEGIN EXCLUSIVE")
    try:
        locked = subprocess.run([*CLI, "record", "--store", str(store), "--", "shares.py", "1", "0.1"], cwd=PROGRAMS,
                                capture_output=True, text=True, timeout=120)
    finally:
        locker.execute("ROLLBACK")
        locker.close()
    assert locked.returncode == 2 and "locked by another process" in locked.stderr and locked.stdout == ""
    assert len(locked.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("version", ["3.12", "3.13"])
def test_garbage_collection_is_recorded_under_its_own_frame(tmp_path, version):
    """A collection holds the GIL: its time must not go to whatever function the sampler finds next.
    collects.py spends about half its CPU in full collections and half in spin(). From Python 3.12 (a
    pyenv interpreter; skipped where absent): see the next test for 3.11."""
    from tests.test_python_versions import interpreter

    python = interpreter(version)
    if python is None:
        pytest.skip(f"no CPython {version} under pyenv on this machine")
    store, result = _record(tmp_path, "collects.py", "2", str(tmp_path / "truth.json"), python=python)
    assert result.recording.returncode == 0
    with RecordingStore(store, create=False) as db:
        rec = db.recording(result.recording.id)
        frames = db.frames(rec.id)
        weights: dict[str, float] = {}
        for sample in db.samples(rec):
            stack = frames[sample.stack]
            top = "gc" if stack[-1].file == "<gc>" else stack[-1].name
            weights[top] = weights.get(top, 0.0) + sample.weight
            if top == "gc":
                assert stack[-1].name == "(garbage collection)"  # under the program's stack that collected
                # the program's frames (spin is shares.py's); the collecting frame itself may be code the program
                # called (CI on 3.13: a collection inside importlib's get_code while collects.py imported)
                assert any(frame.file.endswith(("collects.py", "shares.py")) for frame in stack[:-1]), stack
                assert not any("sampler" in frame.file for frame in stack)
    truth = json.loads((tmp_path / "truth.json").read_text())
    measured = weights.get("gc", 0.0) / sum(weights.values())
    assert truth["gc_s"] / truth["cpu_s"] > 0.3  # the program does collect that much
    assert abs(measured - truth["gc_s"] / truth["cpu_s"]) < 0.1, (weights, truth)


def test_from_3_12_the_sampler_times_collections_and_lowers_the_switch_interval_and_gives_it_back(tmp_path):
    """With the default 5 ms, the sampler's thread waited up to 0.42 s for the GIL on sqlparse. Both
    changes only from Python 3.12: on 3.11 Python code run inside a collection (the timing callback) while
    the sampler walks the program's frames crashed the interpreter (a segmentation fault in 1 of 200
    recorded pycparser runs; benchmarks/stress_sampler.py crashes it), so there the sampler keeps the
    program's switch interval and adds no callback."""
    import gc

    from mantispy.runtime.sampler import GC_SAFE, SWITCH_S, Sampler

    assert GC_SAFE == (sys.version_info >= (3, 12))
    before, callbacks = sys.getswitchinterval(), list(gc.callbacks)
    sampler = Sampler(str(tmp_path), 100.0)
    sampler.start()
    try:
        assert sys.getswitchinterval() == (SWITCH_S if GC_SAFE else before)
        assert gc.callbacks == ([sampler._on_gc, *callbacks] if GC_SAFE else callbacks)
    finally:
        sampler.stop()
    assert sys.getswitchinterval() == before and gc.callbacks == callbacks




@pytest.mark.parametrize("version", ["3.11", "3.12"])
def test_a_segmentation_fault_on_3_11_says_what_the_sampler_may_have_to_do_with_it(tmp_path, version):
    """On Python 3.11 the built-in sampler can crash a program (README, Limits): a recording whose 3.11
    program died of SIGSEGV says so and how to record it instead; on 3.12 it does not."""
    from mantispy.sampling.recorder import SEGFAULT_NOTE
    from tests.test_python_versions import interpreter

    python = sys.executable if version == f"{sys.version_info.major}.{sys.version_info.minor}" else interpreter(version)
    if python is None:
        pytest.skip(f"no CPython {version} under pyenv on this machine")
    _, result = _record(tmp_path, "crashes.py", python=python)
    assert result.recording.returncode == -signal.SIGSEGV
    assert (SEGFAULT_NOTE in result.recording.notes) == (version == "3.11")


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="what Python 3.11 needs: 3.12+ reads frames safely")
def test_on_3_11_no_collection_starts_while_the_sampler_reads_frames_and_the_programs_thresholds_stay(tmp_path, monkeypatch):
    """On 3.11 a collection running __del__ in the program's thread while the sampler holds its frame
    objects crashed the interpreter (benchmarks/stress_sampler.py at a 20 us switch interval: 4 of 6 runs).
    While the sampler reads frames the first threshold is 0 (no automatic collection); the program's
    thresholds come back after, and a program that sets its own meanwhile keeps them."""
    import gc

    from mantispy.runtime import sampler as module

    seen: list[tuple] = []
    sampler = module.Sampler(str(tmp_path), 100.0)
    monkeypatch.setattr(sys, "_current_frames", lambda: seen.append(gc.get_threshold()) or {})
    before = gc.get_threshold()
    try:
        gc.set_threshold(700, 10, 10)
        sampler.sample(-1, 0.01)
        assert seen == [(0, 10, 10)] and gc.get_threshold() == (700, 10, 10)
        monkeypatch.setattr(sys, "_current_frames", lambda: gc.set_threshold(50, 5, 5) or {})  # the program's own
        sampler.sample(-1, 0.01)
        assert gc.get_threshold() == (50, 5, 5)
        monkeypatch.setattr(sys, "_current_frames", lambda: seen.append(gc.get_threshold()) or {})
        gc.set_threshold(0, 10, 10)  # a program that turned automatic collection off keeps it off
        sampler.sample(-1, 0.01)
        assert gc.get_threshold() == (0, 10, 10)
    finally:
        gc.set_threshold(*before)


def test_stopping_the_sampler_stops_timing_collections_before_it_waits_for_its_thread(tmp_path):
    """A collection while stop() waits for the sampler's thread was recorded, beneath the sampler's own exit
    (`_stop_all`, `Sampler.stop`, threading's join), as the program's garbage collection (seen once in a
    fresh clone's suite on 3.12)."""
    import gc

    from mantispy.runtime.sampler import Sampler

    sampler = Sampler(str(tmp_path), 100.0)
    gc.callbacks.insert(0, sampler._on_gc)  # as start() does from 3.12; no sampling thread runs here
    timed_while_joining: list[bool] = []

    class Thread:
        def is_alive(self):
            return True

        def join(self, timeout=None):
            timed_while_joining.append(sampler._on_gc in gc.callbacks)

    sampler._thread = Thread()
    try:
        sampler.stop()
    finally:
        if sampler._on_gc in gc.callbacks:
            gc.callbacks.remove(sampler._on_gc)
    assert timed_while_joining == [False]


def test_a_collection_counted_while_the_program_stops_the_sampler_goes_to_the_programs_last_stack(tmp_path):
    """CI on 3.12 (stop 43): a collection that ended before stop() was charged to the stack the next sample
    found, inside the sampler's own exit (`_stop_all`, `Sampler.stop`, threading's join). What the stopping
    thread did since its last sample goes to the stack it had then."""
    import json

    from mantispy.runtime.sampler import GC_FRAME, Sampler

    sampler = Sampler(str(tmp_path), 100.0, mode="wall")
    me = threading.get_ident()

    def tick() -> None:  # the sampler's thread takes one sample of the others
        ticker = threading.Thread(target=lambda: sampler.sample(threading.get_ident(), 0.01))
        ticker.start()
        ticker.join()

    def the_programs_work() -> None:
        tick()  # the last tick before the program ends finds it here

    the_programs_work()
    sampler._gc_ns[me] = sampler._gc_ns.get(me, 0) + 5_000_000  # a 5 ms collection ended after that tick

    class Thread:
        def is_alive(self):
            return True

        def join(self, timeout=None):
            tick()  # the sampler's thread ticks once more while stop() waits for it

    sampler._thread = Thread()
    sampler.stop()
    stacks: dict[str, list[str]] = {}
    rows = []
    for line in (tmp_path / f"samples-{os.getpid()}.jsonl").read_text().splitlines():
        batch = json.loads(line)
        stacks.update(batch["stacks"])
        rows.extend(batch["samples"])
    mine = [stacks[str(stack)] for _, tid, stack, _ in rows if tid == me]
    collected = [stack for stack in mine if stack[-1] == GC_FRAME]
    assert len(collected) == 1 and any(frame.startswith("test_a_collection_counted_") for frame in collected[0])
    assert any(".the_programs_work" in frame for frame in collected[0]), collected
    assert not any("sampler.py" in frame for stack in mine for frame in stack), mine
