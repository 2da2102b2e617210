"""The built-in sampler's signal trigger (``--sampler signal``): the main thread sampled on SIGPROF from a
timer on its own CPU clock, so that a program which releases the GIL in short C calls is not charged to
the callers of those calls (README, Limits)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mantispy.runtime import sampler as sampler_module
from mantispy.sampling import flame as flames
from mantispy.sampling.recorder import RecordOptions
from mantispy.sampling.store import RecordingError, RecordingStore
from mantispy.sampling.types import WHOLE
from tests.test_sampling import CLI, PROGRAMS, _record


def _own_shares(store: Path, recording_id: int, names: tuple[str, ...]) -> dict[str, float]:
    """Each named function's share of the sampled CPU time, counted where it is the innermost frame."""
    weights = dict.fromkeys(names, 0.0)
    total = 0.0
    with RecordingStore(store, create=False) as db:
        rec = db.recording(recording_id)
        frames = db.frames(rec.id)
        for sample in db.samples(rec):
            total += sample.weight
            top = frames[sample.stack][-1].name
            if top in weights:
                weights[top] += sample.weight
    return {name: weight / total for name, weight in weights.items()}


@pytest.mark.parametrize("version", ["3.11", "3.12", "3.13"])
def test_time_between_short_gil_releases_goes_where_it_is_spent(tmp_path, version):
    """gil_releases.py spends ~95 % of its CPU in add() and calls hashlib (which drops the GIL) from work()
    every ~60 us; the thread trigger charged 99-100 % to work() there (README, Limits)."""
    from tests.test_python_versions import interpreter

    python = None if version == f"{sys.version_info[0]}.{sys.version_info[1]}" else interpreter(version)
    if python is None and version != f"{sys.version_info[0]}.{sys.version_info[1]}":
        pytest.skip(f"no CPython {version} under pyenv on this machine")
    truth = tmp_path / "truth.json"
    store, result = _record(tmp_path, "gil_releases.py", "2", str(truth), sampler="signal", python=python)
    assert result.recording.returncode == 0 and result.recording.sampler == "signal"
    assert not any("SIGPROF" in note for note in result.recording.notes), result.recording.notes
    shares = _own_shares(store, result.recording.id, ("add", "work"))
    expected = json.loads(truth.read_text())["add_share"]
    assert abs(shares["add"] - expected) < 0.08, (shares, expected)
    assert result.samples > 100  # 2 s of CPU at 100 Hz: one sample per 10 ms of the main thread's CPU


def test_shares_of_cpu_time_are_kept(tmp_path):
    store, result = _record(tmp_path, "shares.py", "2", interval=0.2, sampler="signal")
    assert result.recording.status == "complete" and result.recording.returncode == 0
    with RecordingStore(store, create=False) as db:
        tree = flames.flame_tree(db, db.recording(result.recording.id), WHOLE)
    shares = flames.totals_by_function(tree, ("a", "b", "c"))
    for name, expected in (("a", 0.6), ("b", 0.3), ("c", 0.1)):
        assert abs(shares[name] - expected) <= 0.03, shares


def test_threads_and_fork_and_spawn_children_are_still_sampled(tmp_path):
    store, result = _record(tmp_path, "family.py", sampler="signal")
    assert result.recording.returncode == 0
    with RecordingStore(store, create=False) as db:
        rec = db.recording(result.recording.id)
        frames = db.frames(rec.id)
        names = {frame.name for sample in db.samples(rec) for frame in frames[sample.stack]}
    for name in ("in_thread", "in_fork_child", "in_spawn_child", "main"):
        assert name in names, (name, sorted(names))
    assert result.processes >= 4


def test_a_program_with_its_own_sigprof_handler_runs_as_it_would_unrecorded(tmp_path):
    """own_profiler.py installs its handler and ITIMER_PROF after the sampler armed its timer: the sampler's
    thread sees the handler, deletes its own timer and samples the main thread itself."""
    plain = subprocess.run([sys.executable, "own_profiler.py"], cwd=PROGRAMS, capture_output=True, text=True)
    recorded = subprocess.run([*CLI, "record", "--sampler", "signal", "--store", str(tmp_path / "rec.db"), "--",
                               "own_profiler.py"], cwd=PROGRAMS, capture_output=True, text=True)
    assert (recorded.returncode, recorded.stdout) == (plain.returncode, plain.stdout) == (3, "ticked True\n")
    assert "installed a SIGPROF handler of its own while it ran" in recorded.stderr, recorded.stderr
    assert "did not collide" not in recorded.stderr  # it did: the sampler gave SIGPROF up to it
    assert "installed a SIGPROF handler: the sampler's signal trigger gave SIGPROF up to it" in recorded.stderr
    assert "Traceback" not in recorded.stderr
    with RecordingStore(tmp_path / "rec.db", create=False) as db:
        rec = db.recording(1)
        cpu = sum(sample.weight for sample in db.samples(rec))
    assert 0.3 < cpu < 0.8  # its 0.5 s of CPU, sampled on SIGPROF and then by the thread


def _sampler_in_child(tmp_path: Path, before: str, body: str) -> subprocess.CompletedProcess:
    """Run a Python child that does ``before``, starts a signal-trigger sampler into ``tmp_path``, runs
    ``body`` and stops the sampler."""
    code = "\n".join([
        "import signal, sys, time, threading",
        f"sys.path.insert(0, {str(Path(sampler_module.__file__).parent.parent.parent)!r})",
        "from mantispy.runtime import sampler",
        before,
        f"s = sampler.Sampler({str(tmp_path)!r}, 100, 'cpu', trigger='signal')",
        "s.start()",
        body,
        "s.stop()",
    ])
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


def _batches(tmp_path: Path) -> list[dict]:
    return [json.loads(line) for path in tmp_path.glob("samples-*.jsonl") for line in path.read_text().splitlines()]


def test_a_handler_the_program_already_has_keeps_the_thread_trigger_and_says_why(tmp_path):
    done = _sampler_in_child(tmp_path, "signal.signal(signal.SIGPROF, lambda *a: None)",
                             "end = time.process_time() + 0.3\nwhile time.process_time() < end: pass\n"
                             "assert signal.getsignal(signal.SIGPROF) is not signal.SIG_DFL")
    assert done.returncode == 0, done.stderr
    batches = _batches(tmp_path)
    assert batches and {b["trigger"] for b in batches} == {"thread"}
    assert {b.get("trigger_note") for b in batches} == {"the program has a SIGPROF handler of its own"}


def test_stopping_gives_sigprof_back_and_sleep_is_not_cut_short(tmp_path):
    done = _sampler_in_child(tmp_path, "", "\n".join([
        "end = time.process_time() + 0.3",
        "while time.process_time() < end: pass",
        "t = time.monotonic(); time.sleep(0.3); slept = time.monotonic() - t",
        "assert slept >= 0.3, slept",
        "assert signal.getsignal(signal.SIGPROF) is not signal.SIG_DFL",
    ]) + "\ns.stop()\nassert signal.getsignal(signal.SIGPROF) is signal.SIG_DFL\n"
        "assert signal.getitimer(signal.ITIMER_PROF) == (0.0, 0.0)\nprint(sampler.collisions())")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"  # nothing of the sampler's is left for the collisions check to find
    batches = _batches(tmp_path)
    assert {b["trigger"] for b in batches} == {"signal"}
    weight = sum(row[3] for b in batches for row in b["samples"])
    assert 0.25 < weight < 0.5  # the 0.3 s of CPU, not the sleep


def test_signal_sampling_refuses_wall_mode_in_one_line(tmp_path):
    with pytest.raises(RecordingError, match="--sampler signal .* --mode cpu"):
        RecordOptions(["x.py"], sampler="signal", mode="wall").check()
    proc = subprocess.run([*CLI, "record", "--sampler", "signal", "--mode", "wall", "--store", str(tmp_path / "r.db"),
                           "--", "shares.py", "1"], cwd=PROGRAMS, capture_output=True, text=True)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert not (tmp_path / "r.db").exists() or "Traceback" not in proc.stderr


def test_profile_sample_with_the_signal_sampler_stores_it_with_each_run(tmp_path):
    import shutil

    shutil.copytree(Path(__file__).parent / "programs" / "batchjob", tmp_path / "batchjob")
    spec = tmp_path / "batchjob" / "campaign.toml"
    spec.write_text(spec.read_text().replace("count = 24", "count = 2"), encoding="utf-8")
    proc = subprocess.run([*CLI, "profile", str(spec), "--store", str(tmp_path / "s.db"), "--sample", "--sampler",
                           "signal", "-q"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    with RecordingStore(tmp_path / "s.db", create=False) as db:
        recordings = db.recordings()
        assert recordings and {rec.sampler for rec in recordings} == {"signal"}
        assert any(db.counts(rec.id)[0] > 0 for rec in recordings)


def test_a_sampler_started_outside_the_main_thread_keeps_the_thread_trigger(tmp_path):
    code = "\n".join([
        "import sys, threading, time",
        f"sys.path.insert(0, {str(Path(sampler_module.__file__).parent.parent.parent)!r})",
        "from mantispy.runtime import sampler",
        f"s = sampler.Sampler({str(tmp_path)!r}, 100, 'cpu', trigger='signal')",
        "t = threading.Thread(target=s.start); t.start(); t.join()",
        "end = time.process_time() + 0.2",
        "while time.process_time() < end: pass",
        "s.stop()",
        "print(s.trigger, '|', s.trigger_note)",
    ])
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.strip() == "thread | the sampler did not start in the main thread"
