"""Performance counters (issue 22, the counter backend): the probe says what this machine offers and why
the rest is missing; software events count a process tree; every profiled run stores the counters that
open and wait4's fallback; the hardware path is exercised with replayed values (this machine has no PMU)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time

import pytest

from mantispy import profiler
from mantispy.campaign import load_spec
from mantispy.runtime import perf_counters
from mantispy.store import RunStore
from tests.helpers import MANTISPY


def test_the_probe_names_every_event_and_why_a_missing_one_is_missing():
    statuses = perf_counters.probe()
    assert [s.name for s in statuses] == list(perf_counters.EVENTS)
    for status in statuses:
        assert status.kind == ("hardware" if status.name.startswith("hw.") else "software")
        if status.available:
            assert status.reason == ""
        else:  # the errno's name and what it means here
            assert status.reason.endswith(")") and "(E" in status.reason, status
            assert any(word in status.reason for word in ("PMU", "perf_event_paranoid", "seccomp", "kernel")), status


def test_counters_cli_lists_the_events_in_words_and_as_json():
    text = subprocess.run([*MANTISPY, "counters"], capture_output=True, text=True, timeout=60)
    assert text.returncode == 0, text.stderr
    assert "perf_event_paranoid" in text.stdout and "hw.instructions" in text.stdout and "ru.minor_faults" in text.stdout
    data = json.loads(subprocess.run([*MANTISPY, "counters", "--json"], capture_output=True, text=True,
                                     timeout=60).stdout)
    assert [e["name"] for e in data["events"]] == list(perf_counters.EVENTS)
    assert data["fallback"] == list(perf_counters.RUSAGE_METRICS)


def _software_events_or_skip():
    refused = {s.name: s.reason for s in perf_counters.probe(list(perf_counters.SOFTWARE_EVENTS)) if not s.available}
    if refused:
        pytest.skip(f"software perf events refused here: {next(iter(refused.values()))}")


def test_software_counters_follow_the_programs_children():
    """``inherit``: a child the program starts after the counters opened is counted too (task-clock
    within 25 % of wait4's CPU time for parent and child together)."""
    _software_events_or_skip()
    code = ("import subprocess, sys; sum(range(3_000_000)); "
            "subprocess.run([sys.executable, '-c', 'sum(range(8_000_000))'])")
    proc = subprocess.Popen([sys.executable, "-c", code])
    counters, refused = perf_counters.open_counters(proc.pid, list(perf_counters.SOFTWARE_EVENTS))
    assert counters is not None, refused
    try:
        os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)
        values = counters.read()
        _, _, usage = os.wait4(proc.pid, 0)
    finally:
        counters.close()
    cpu = usage.ru_utime + usage.ru_stime
    assert values["sw.task_clock_ns"] / 1e9 == pytest.approx(cpu, rel=0.25), (values, cpu)
    assert values["sw.page_faults"] > 0


def test_a_multiplexed_counter_is_scaled_to_the_whole_time():
    """``value * enabled / running``: read from the kernel's three numbers."""
    read_fd, write_fd = os.pipe()
    os.write(write_fd, (1000).to_bytes(8, sys.byteorder) + (10).to_bytes(8, sys.byteorder)
             + (4).to_bytes(8, sys.byteorder))
    os.close(write_fd)
    counters = perf_counters.Counters(0, {"hw.instructions": read_fd})
    assert counters.read() == {"hw.instructions": 2500.0}
    counters.close()


def _argv_of(pid: int) -> list[bytes]:
    """A just-started process's arguments (empty for a moment, while its exec completes)."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            raw = handle.read()
        if raw:
            return raw.rstrip(b"\0").split(b"\0")
        time.sleep(0.005)
    raise AssertionError(f"process {pid} never showed its arguments")


PROGRAM = """
import sys
import time

time.sleep(0.3)  # long enough for the test's replay to read the run's argument from /proc

def work(n):
    return sum(i * i for i in range(n))

print(work(int(sys.argv[1]) * 20000))
"""


def test_profiled_runs_store_the_counters_and_fit_targets_a_replayed_hardware_counter(tmp_path, monkeypatch):
    """Every run stores wait4's fallback (ru.*); the counters that open are stored as hw.* / sw.*; with
    recorded hardware values in place of a PMU, ``mantispy fit --metric hw.instructions`` models them."""
    (tmp_path / "prog").mkdir()
    (tmp_path / "prog" / "main.py").write_text(textwrap.dedent(PROGRAM))
    spec_path = tmp_path / "spec.toml"
    spec_path.write_text(textwrap.dedent("""
        name = "counted"
        source = "prog"
        entry = "main.py"
        calibration_runs = "all"
        original_repeats = 1
        [inputs]
        list = [""" + ", ".join(f'{{ id = "n{n}", argv = ["{n}"] }}' for n in range(1, 11)) + "]\n"))
    replayed = []

    def replay(pid):
        n = int(_argv_of(pid)[-1])
        counters = perf_counters.ReplayCounters({"hw.instructions": 5e6 * n + 1e6, "hw.cycles": 4e6 * n})
        replayed.append(counters)
        return counters, {}

    monkeypatch.setattr(profiler, "_open_counters", replay)
    store = RunStore(tmp_path / "m.db")
    profiler.profile(load_spec(spec_path), store)
    runs = store.runs(store.campaign("counted"))
    assert len(runs) == 20 and all(c.closed for c in replayed) and len(replayed) == 20
    for run in runs:
        metrics = run["metrics"]
        assert set(perf_counters.RUSAGE_METRICS) <= set(metrics) and metrics["ru.minor_faults"] > 0
        assert metrics["hw.instructions"] > metrics["hw.cycles"] > 0
    store.close()
    fitted = subprocess.run([*MANTISPY, "fit", "--store", str(tmp_path / "m.db"), "--metric", "hw.instructions",
                             "--metrics-from", "original", "--train-fraction", "0.7", "-o", str(tmp_path / "model.json")],
                            capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert fitted.returncode == 0, fitted.stderr
    model = json.loads((tmp_path / "model.json").read_text())
    assert model["metric"] == "hw.instructions" and model["terms"]  # it found the input's number
