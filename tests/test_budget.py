"""The overhead budget: hottest sites go first, the manifest says what was removed and why.

The procedure is tested with a deterministic cost model (real runs, real features, a CPU time computed
from the probe executions), so no assertion depends on this machine's timing noise; the CLI test runs
the real timing path and checks only what it records.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from mantispy.core.launch import Measurement, program_argv, program_env, run_measured
from mantispy.instrument.budget import choose_removals, instrument_within_budget, site_counts
from mantispy.instrument.manifest import Manifest
from mantispy.instrument.transformer import Options
from tests.helpers import MANTISPY

PROGRAM = """
import sys

def hot(n):
    total = 0
    for i in range(n):
        if i % 3:
            total += i
    return total

def warm(n):
    return [j * 2 for j in range(n)]

def cold():
    return 1

n = int(sys.argv[1])
print(hot(n), len(warm(n // 10)), cold())
"""

BASE_CPU = 1.0
PER_EVENT = 1e-5


def write_program(tmp: Path) -> Path:
    src = tmp / "src"
    src.mkdir()
    (src / "prog.py").write_text(textwrap.dedent(PROGRAM))
    return src


def modelled_measure(root: Path, invocation, features_out):
    """Runs the program for real; CPU time = base + cost of every probe execution left in it."""
    real = run_measured(program_argv(root, invocation), program_env(root, features_out), quiet=True)
    cpu = BASE_CPU
    if features_out is not None:
        manifest = Manifest.load(root)
        features = json.loads(Path(features_out).read_text())
        cpu += PER_EVENT * sum(site_counts(manifest, features).values())
    return Measurement(real.returncode, real.wall_s, cpu, real.max_rss_kb)


def test_choose_removals_takes_hottest_first_until_the_rest_fits():
    counts = {"a": 1000, "b": 10, "c": 500, "d": 0}
    assert choose_removals(counts, allowed_events=600) == ["a"]
    assert choose_removals(counts, allowed_events=100) == ["a", "c"]
    assert choose_removals(counts, allowed_events=5000) == ["a"]  # called only when over budget: remove one
    assert choose_removals({"x": 0}, allowed_events=0) == []


def test_budget_removes_hot_sites_and_records_why(tmp_path):
    src = write_program(tmp_path)
    out = tmp_path / "out"
    result = instrument_within_budget(
        src, out, Options(), budget=0.05, invocations=[["prog.py", "3000"]], repeats=1, measure=modelled_measure
    )
    assert result.met
    assert result.rounds[0].overhead > 0.05
    assert result.rounds[-1].overhead <= 0.05
    manifest = Manifest.load(out)
    removed = {r.id: r for r in manifest.removed}
    assert "prog.py:hot:loop:1" in removed
    assert removed["prog.py:hot:loop:1"].dynamic_count == 3000
    assert "budget 5.0%" in removed["prog.py:hot:loop:1"].reason
    kept = {f.id for f in manifest.features}
    assert "prog.py:cold:call" in kept and "prog.py:hot:call" in kept  # cheap sites stay
    assert not kept & set(removed)
    first_round = [r for r in manifest.removed if r.round == 0]
    assert [r.dynamic_count for r in first_round] == sorted((r.dynamic_count for r in first_round), reverse=True)
    assert manifest.calibration["met"] is True and manifest.calibration["budget"] == 0.05
    source = (out / "prog.py").read_text()
    assert "for i in range(n):\n" in source  # the hot loop runs without probes now


def test_cli_budget_runs_real_calibration(tmp_path):
    import subprocess

    src = write_program(tmp_path)
    out = tmp_path / "out"
    proc = subprocess.run(
        [*MANTISPY, "instrument", str(src), "-o", str(out), "--budget", "0.05", "--calibrate", "prog.py 20000",
         "--calibrate-repeats", "2"],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    manifest = Manifest.load(out)
    assert manifest.calibration["invocations"] == [["prog.py", "20000"]]
    rounds = manifest.calibration["rounds"]
    assert rounds and all(r["original_cpu_s"] > 0 for r in rounds)
    assert manifest.calibration["met"] == (rounds[-1]["overhead"] <= 0.05)
    bad = subprocess.run(
        [*MANTISPY, "instrument", str(src), "-o", str(out), "--budget", "0.05", "--calibrate", "prog.py notanumber"],
        capture_output=True, text=True, timeout=300,
    )
    assert bad.returncode == 2  # bad input: a calibration input the program refuses
    assert bad.stderr.startswith("mantispy: error: calibration input 'prog.py notanumber' exits with status 1")
    assert Manifest.load(out).calibration is not None  # the earlier good output survives
