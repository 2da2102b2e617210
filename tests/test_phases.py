"""Phase detection (issue 21, first part): epochs, the paper's similarity metrics, the confidence rule,
recurring phases labelled alike, and ``mantispy phases`` on a recorded run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mantispy.phases.detect import PhaseOptions, detect
from mantispy.phases.epochs import Epoch
from mantispy.phases.similarity import f_sim, matches, t_sim
from mantispy.sampling.recorder import RecordOptions, record
from mantispy.sampling.store import RecordingError, RecordingStore
from mantispy.sampling.types import Frame

PROGRAMS = Path(__file__).parent / "programs" / "sampled"
CLI = [sys.executable, "-m", "mantispy"]


def test_similarity_metrics():
    assert f_sim({"a": 0.5, "b": 0.5}, {"a": 0.5, "b": 0.5}) == 1.0
    assert f_sim({"a": 0.5, "b": 0.5}, {"a": 1.0}) == 0.5
    assert t_sim({"a": 0.5, "b": 0.5}, {"a": 0.5, "b": 0.5}) == pytest.approx(1.0)
    assert t_sim({"a": 1.0}, {"b": 1.0}) == pytest.approx(0.0)
    assert 0.9 < t_sim({"a": 0.6, "b": 0.4}, {"a": 0.5, "b": 0.5}) < 1.0
    assert matches({"a": 1.0}, {"a": 1.0}, 0.95, 0.95) and not matches({"a": 1.0}, {"a": 0.5, "b": 0.5}, 0.95, 0.95)


def _epoch(n: int, *functions: str) -> Epoch:
    frames = {name: Frame(name, "/app/x.py", i + 1) for i, name in enumerate(functions)}
    return Epoch(n * 0.1, (n + 1) * 0.1, 0.1, dict.fromkeys(functions, 0.1), frames)


def test_phases_recur_under_their_label_and_one_odd_epoch_is_not_a_phase():
    plan = ["load"] * 6 + ["parse"] * 5 + ["gc"] + ["parse"] * 4 + ["load"] * 5
    found = detect([_epoch(n, "main", step) for n, step in enumerate(plan)], PhaseOptions(confidence=3))
    assert [p.label for p in found] == ["P1", "P2", "P1"]
    assert [p.name().split(" ")[0] for p in found] == ["load", "parse", "load"]
    assert found[1].epochs == 10  # the odd "gc" epoch is absorbed into the parse phase around it
    assert found[0].start == 0 and found[1].start == pytest.approx(0.6) and found[2].start == pytest.approx(1.6)
    one = detect([_epoch(n, "main", step) for n, step in enumerate(plan)], PhaseOptions(confidence=1))
    assert "gc" in [p.name().split(" ")[0] for p in one]  # with confidence 1, the odd epoch is a phase


def test_a_short_start_belongs_to_the_phase_after_it():
    plan = ["import"] * 2 + ["load"] * 6 + ["parse"] * 5
    found = detect([_epoch(n, "main", step) for n, step in enumerate(plan)], PhaseOptions(confidence=3))
    assert [p.label for p in found] == ["P1", "P2"] and found[0].start == 0 and found[0].epochs == 8
    assert found[0].name().startswith("load")  # named by what it confirmed, not by the start-up


def test_a_heavy_sample_is_spread_over_the_time_it_stands_for():
    from mantispy.phases.epochs import _spread

    assert _spread(0.55, 0.01, 0.1) == [(5, 0.01)]
    spread = _spread(1.0, 0.4, 0.1)  # a long C call kept the sampler out for 0.4 s
    assert [index for index, _ in spread] == [6, 7, 8, 9]
    assert sum(share for _, share in spread) == pytest.approx(0.4)
    assert all(share == pytest.approx(0.1) for _, share in spread)


@pytest.fixture(scope="module")
def shares_recording(tmp_path_factory):
    store = tmp_path_factory.mktemp("phases") / "rec.db"
    result = record(RecordOptions(["shares.py", "2", "4"], store=store, cwd=PROGRAMS))  # a 2.4 s, b 1.2 s, c 0.4 s, twice
    return store, result.recording.id


def test_mantispy_phases_finds_the_program_s_phases_and_stores_them(shares_recording):
    store, rid = shares_recording
    proc = subprocess.run([*CLI, "phases", str(rid), "--store", str(store), "--json", "--epoch", "0.05"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    found = json.loads(proc.stdout)[0]["phases"]
    assert [p["label"] for p in found] == ["P1", "P2", "P3", "P1", "P2", "P3"]
    assert [p["dominant"][0]["function"] for p in found] == ["a", "b", "c", "a", "b", "c"]
    for phase, expected in zip(found, (2.4, 1.2, 0.4, 2.4, 1.2, 0.4)):
        assert abs((phase["end"] - phase["start"]) - expected) <= 0.25, found
    with RecordingStore(store, create=False) as db:
        options, stored = db.phases(rid)
    assert stored == found and options["f_threshold"] == 0.95 and options["epoch_s"] == 0.05
    text = subprocess.run([*CLI, "phases", str(rid), "--store", str(store), "--epoch", "0.05"], capture_output=True,
                          text=True).stdout
    assert "6 phase(s)" in text and "(3 distinct)" in text and "a (shares.py:" in text and "CPU " in text


def test_phases_are_matched_across_runs(tmp_path):
    store = tmp_path / "runs.db"
    for argv in (["shares.py", "1", "4"], ["-m", "shares", "2", "4"]):
        record(RecordOptions(argv, store=store, cwd=PROGRAMS))
    proc = subprocess.run([*CLI, "phases", "--all", "--store", str(store), "--json", "--epoch", "0.05"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    runs = json.loads(proc.stdout)
    assert [[p["label"] for p in run["phases"]] for run in runs] == [["P1", "P2", "P3"], ["P1", "P2", "P3"] * 2]
    text = subprocess.run([*CLI, "phases", "1", "2", "--store", str(store), "--epoch", "0.05"], capture_output=True,
                          text=True).stdout
    assert "across 2 runs: 3 distinct phase(s)" in text and "P1   in 2 run(s)" in text


def test_runs_without_phases_are_one_line(shares_recording, tmp_path):
    store, _ = shares_recording
    empty = tmp_path / "idle.py"
    empty.write_text("pass\n", encoding="utf-8")
    subprocess.run([*CLI, "record", "--store", str(store), "--", str(empty)], capture_output=True, text=True)
    proc = subprocess.run([*CLI, "phases", "last", "--store", str(store)], capture_output=True, text=True)
    assert proc.returncode == 2 and "has no sample" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    short = subprocess.run([*CLI, "phases", "1", "--store", str(store), "--epoch", "100"], capture_output=True,
                           text=True)
    assert short.returncode == 2 and "too short for phases" in short.stderr
    unknown = subprocess.run([*CLI, "phases", "99", "--store", str(store)], capture_output=True, text=True)
    assert unknown.returncode == 2 and "no recording 99" in unknown.stderr
    nothing = subprocess.run([*CLI, "phases", "--store", str(store)], capture_output=True, text=True)
    assert nothing.returncode == 2 and "name a recording" in nothing.stderr


@pytest.mark.slow
def test_the_html_view_shows_the_phases_above_the_series(shares_recording, tmp_path):
    from tests.helpers import find_browser, run_chromium

    store, rid = shares_recording
    assert subprocess.run([*CLI, "phases", str(rid), "--store", str(store), "--epoch", "0.05"],
                          capture_output=True, text=True).returncode == 0
    page = tmp_path / "view.html"
    proc = subprocess.run([*CLI, "flame", str(rid), "--store", str(store), "--format", "html", "-o", str(page)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    browser = find_browser()
    if browser is None:
        pytest.skip("no chromium on PATH: install Debian's chromium (.ci/run does) to run the browser check")
    dom = run_chromium(browser, page.as_uri(), tmp_path, "--dump-dom").stdout
    import re

    assert re.findall(r'data-phase="(P\d)"', dom) == ["P1", "P2", "P3", "P1", "P2", "P3"]
    assert 'data-rendered="ok"' in re.search(r"<html\b[^>]*>", dom).group(0)


def test_own_time_is_the_innermost_program_frame_per_phase_and_one_sample_counts_three_periods_at_most(tmp_path):
    """Own time (what anomaly checks compare beneath the phases): library and ``<...>`` frames are skipped,
    samples go to the phase they fall in, a sample that stands for a stretch the sampler could not sample
    (0.4 s at 100 Hz) counts 30 ms to the function it found, and the sampler's garbage-collection frame
    is its own entry."""
    from mantispy.phases.epochs import library_prefixes
    from mantispy.phases.own_time import innermost_program_frame, own_time, run_shares, where
    from mantispy.sampling.types import Recording

    app, lib = "/app/work.py", library_prefixes()[0] + "/json/encoder.py"
    stacks = {0: [f"<module>\t{app}\t1", f"main\t{app}\t5"],
              1: [f"<module>\t{app}\t1", f"main\t{app}\t5", f"parse\t{app}\t20", f"encode\t{lib}\t3"],
              2: [f"<module>\t{app}\t1", f"main\t{app}\t5", "wrapper\t<injected delay>\t1"],
              3: [f"<module>\t{app}\t1", f"main\t{app}\t5", "(garbage collection)\t<gc>\t0"]}
    assert innermost_program_frame(tuple(Frame.parse(t) for t in stacks[2]), False, library_prefixes()).name == "main"
    with RecordingStore(tmp_path / "own.db") as store:
        rid = store.begin(Recording(0, ["work.py"], 1000.0, None, "recording", rate=100.0), 1)
        samples = [(1000.0 + 0.01 * n, 1, 1, 1, 0.01) for n in range(50)]  # parse (with the json it calls) 0.5 s
        samples += [(1000.5 + 0.01 * n, 1, 1, 2, 0.01) for n in range(20)]  # main's own code, hidden wrapper 0.2 s
        samples += [(1001.2, 1, 1, 0, 0.4)]  # one sample after 0.4 s unsampled
        samples += [(1001.25, 1, 1, 3, 0.05)]  # a collection the sampler timed
        store.add_batch(rid, stacks, samples, [])
        recording = store.recording(rid)
        rows = [{"label": "P1", "start": 0.0, "end": 0.5}, {"label": "P2", "start": 0.5, "end": 1.3}]
        own = own_time(store, recording, rows, include_library=False)
    assert own["P1"] == {"parse (work.py:20)": pytest.approx(0.5)}
    assert own["P2"] == {"main (work.py:5)": pytest.approx(0.2 + 0.03), "(garbage collection)": pytest.approx(0.03)}
    assert where(own, "main (work.py:5)") == "P2" and where(own, "gone (work.py:9)") is None
    assert run_shares(own)["parse (work.py:20)"] == pytest.approx(0.5 / 0.76)


def test_library_frames_are_those_of_the_interpreter_that_ran_the_program(tmp_path):
    """A recording keeps where its interpreter's standard library and packages lie, and phases and own time
    leave those frames out whichever Python analyses it (analysed under 3.11, a 3.12 recording's stdlib frames
    were counted as the program's: its phases and verdicts changed with the analysing interpreter)."""
    from mantispy.phases.epochs import epochs, library_prefixes
    from mantispy.phases.own_time import own_time
    from mantispy.sampling.types import Recording

    other = "/opt/another-python/lib/python3.12"
    app, theirs, ours = "/app/work.py", other + "/json/encoder.py", library_prefixes()[0] + "/json/decoder.py"
    stacks = {0: [f"<module>\t{app}\t1", f"main\t{app}\t5", f"encode\t{theirs}\t3"],
              1: [f"<module>\t{app}\t1", f"main\t{app}\t5", f"decode\t{ours}\t7"]}
    with RecordingStore(tmp_path / "lib.db") as store:
        rid = store.begin(Recording(0, ["work.py"], 1000.0, None, "recording", rate=100.0, library=[other]), 1)
        store.add_batch(rid, stacks, [(1000.0 + 0.01 * n, 1, 1, n % 2, 0.01) for n in range(40)], [])
        recording = store.recording(rid)
        assert recording.library == [other]
        names = {name for epoch in epochs(store, recording, 0.1) for name in epoch.weights}
        own = own_time(store, recording, [{"label": "P1", "start": 0.0, "end": 0.4}], include_library=False)
    assert names == {"<module> (work.py:1)", "main (work.py:5)", "decode (decoder.py:7)"}
    assert set(own["P1"]) == {"main (work.py:5)", "decode (decoder.py:7)"}


def test_a_store_written_before_recordings_kept_their_library_still_reads(tmp_path):
    """Recordings of an older store have no library paths: analyses use their own interpreter's, as before."""
    import sqlite3

    from mantispy.sampling.types import Recording

    path = tmp_path / "old.db"
    with RecordingStore(path) as store:
        store.begin(Recording(0, ["work.py"], 1000.0, None, "recording", rate=100.0), 1)
    with sqlite3.connect(path) as db:
        db.execute("ALTER TABLE recordings DROP COLUMN library_json")
    with RecordingStore(path, create=False) as store:
        assert store.recording(1).library == []
        store.begin(Recording(0, ["work.py"], 1001.0, None, "recording", library=["/x/lib"]), 1)
        assert store.recording(2).library == ["/x/lib"]
    with sqlite3.connect(path) as db:
        db.execute("UPDATE recordings SET library_json = '{\"x\": 1}' WHERE id = 2")
    with RecordingStore(path, create=False) as store, pytest.raises(RecordingError, match="recording 2 is damaged"):
        store.recording(2)


def test_an_interpreter_s_library_folders_come_from_python_m_sysconfig():
    from mantispy.sampling.interpreter import library_paths, library_paths_of, parse_sysconfig_paths

    said = ('Platform: "linux-x86_64"\nPython version: "3.12"\nCurrent installation scheme: "venv"\n\nPaths: \n'
            '\tdata = "/v"\n\tplatlib = "/v/lib/python3.12/site-packages"\n\tplatstdlib = "/v/lib/python3.12"\n'
            '\tpurelib = "/v/lib/python3.12/site-packages"\n\tscripts = "/v/bin"\n'
            '\tstdlib = "/usr/lib/python3.12"\n\nVariables: \n\tstdlib = "/not/this"\n')
    assert parse_sysconfig_paths(said) == ("/usr/lib/python3.12", "/v/lib/python3.12", "/v/lib/python3.12/site-packages")
    assert library_paths_of(sys.executable) == library_paths()
    assert library_paths_of("/no/such/python") == ()
