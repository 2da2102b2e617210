"""Per-phase models and anomaly checks (issue 21): fitting, the departure rule, the model file's reader,
and the real CLI on a campaign profiled with --sample."""

from __future__ import annotations

import json
import math
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mantispy.phases import model as phase_model
from mantispy.phases.anomaly import CheckOptions, check
from mantispy.phases.detect import PhaseOptions
from mantispy.phases.model import ModelOptions, Program, TrainingRun, meta_inputs, whole_run
from mantispy.phases.observe import RunPhases
from mantispy.sampling.types import Recording
from tests.helpers import json_paths, mutated, odd_json_values

PROGRAMS = Path(__file__).parent / "programs"
INJECT = Path(__file__).resolve().parents[1] / "benchmarks" / "anomaly_boot"
CLI = [sys.executable, "-m", "mantispy"]
KNOWN = [("P1", {"parse": 0.9, "main": 0.1}), ("P2", {"mix": 0.9, "main": 0.1})]
PARSE, MIX, MAIN = "parse (phased.py:3)", "mix (phased.py:9)", "main (phased.py:20)"  # own-time labels


def _phases(records: int, passes: int, rng: random.Random, slow: float = 1.0, cpu: float = 99.0,
            extra: list[dict] | None = None) -> RunPhases:
    """A run of two phases: P1 lasts 0.03 s per record, P2 0.03 s per record and pass (3 % noise)."""
    load = 0.03 * records * rng.gauss(1, 0.03)
    mix = 0.03 * records * passes * rng.gauss(1, 0.03) * slow
    rows = [{"label": "P1", "start": 0.0, "end": load, "seconds": load, "name": "parse", "profile": KNOWN[0][1],
             "cpu_percent": 99.0, "peak_rss_bytes": 30e6, "io_bytes": None},
            {"label": "P2", "start": load, "end": load + mix, "seconds": mix * cpu / 99.0 / slow, "name": "mix",
             "profile": KNOWN[1][1], "cpu_percent": cpu, "peak_rss_bytes": 30e6 + records * 1e5, "io_bytes": None}]
    rows += extra or []
    own = {"P1": {PARSE: load * 0.9, MAIN: load * 0.1}, "P2": {MIX: mix * 0.95, MAIN: mix * 0.05}}
    return RunPhases(Recording(0, ["phased.py"], 0.0, 1.0, "complete"), 0.1, int((load + mix) / 0.1), rows, own)


def _inputs(records: int, passes: int) -> dict[str, float]:
    return {"input:argv[--records]": float(records), "input:argv[--passes]": float(passes)}


@pytest.fixture(scope="module")
def fitted():
    rng = random.Random(1)
    runs = []
    for n in range(32):
        records, passes = 10 + (n * 7) % 21, 1 + (n * 5) % 4
        phases = _phases(records, passes, rng)
        runs.append(TrainingRun(f"i{n}", _inputs(records, passes), {}, phases, whole_run(phases)))
    return phase_model.fit(runs, [tuple(k) for k in KNOWN], PhaseOptions(), Program("phased.py", functions=["parse", "mix", "main"]),
                           ModelOptions(min_runs=8))


def test_each_phase_is_modelled_from_its_inputs_with_held_out_errors(fitted, tmp_path):
    assert set(fitted["phases"]) == {"P1", "P2"} and fitted["rare"] == {}
    errors = fitted["evaluation"]["phases"]
    assert errors["P1"]["wall_s"]["median_rel_error"] < 0.08 and errors["P2"]["wall_s"]["median_rel_error"] < 0.08
    total = fitted["evaluation"]["total_wall_s"]
    assert total["n"] == 8 and total["sum_of_phases"] < 0.08 and total["whole_run"] >= 0  # both reported
    assert "inputs" in fitted["phases"]["P2"]["metrics"]["wall_s"]["model"]["selection"]["uses"]
    path = tmp_path / "phases.json"
    phase_model.save(fitted, path)
    assert phase_model.load(path) == json.loads(path.read_text())


def test_meta_inputs_are_the_two_phases_before():
    run = _phases(10, 1, random.Random(0), extra=[
        {"label": "P3", "start": 9, "end": 10, "seconds": 1, "name": "x", "profile": {}, "cpu_percent": None,
         "peak_rss_bytes": None, "io_bytes": None}])
    assert meta_inputs(run, "P1") == {}
    assert set(meta_inputs(run, "P3")) == {f"meta:{p}.{m}" for p in ("P1", "P2") for m in ("wall_s", "cpu_s", "peak_rss_bytes")}
    assert meta_inputs(run, "P9") == {}


def test_the_check_names_the_phase_and_the_resource_that_departs(fitted):
    rng = random.Random(7)
    normal = check(fitted, _phases(18, 2, rng), _inputs(18, 2), None)
    assert not normal.anomalous and not normal.departures
    slowed = check(fitted, _phases(18, 2, rng, slow=1.6, cpu=60.0), _inputs(18, 2), None)
    assert slowed.anomalous
    assert {(d.phase, d.metric) for d in slowed.departures} >= {("P2", "wall_s"), ("P2", "cpu_percent")}
    assert all(d.phase == "P2" for d in slowed.departures) and "P2 (mix): " in slowed.departures[0].describe()


def test_a_function_whose_own_code_takes_a_larger_share_of_the_run_departs(fitted):
    """A slowed phase whose epochs no longer look like any phase (redundant work in main before P1's
    parsing starts) is found beneath the phases: main's own code took a share of the run no training
    run gave it. Normal runs' shares stay inside the training runs'."""
    assert fitted["own_time"]["runs"] == 32 and fitted["own_time"]["functions"][MAIN]["max"] < 0.1
    rng = random.Random(11)
    for _ in range(10):
        normal = check(fitted, _phases(10 + rng.randrange(21), 1 + rng.randrange(4), rng), _inputs(18, 2), None)
        assert not any(c.departs for c in normal.comparisons if c.model == "own-time")
    slowed = _phases(18, 2, rng)
    slowed.own["P1"][MAIN] += 0.4  # on a run of about 1.6 s
    verdict = check(fitted, slowed, _inputs(18, 2), None)
    assert verdict.anomalous and not verdict.baseline_anomalous  # 0.4 s more is within the whole-run model's noise
    own = [d for d in verdict.departures if d.model == "own-time"]
    assert [(d.function, d.phase) for d in own] == [(MAIN, "P1")]
    assert own[0].describe().startswith("P1 (parse): main (phased.py:20) ran its own code 0.")
    assert "% of the run) against at most 0.1" in own[0].describe() and "s in training runs of this length" in own[0].describe()
    assert json.loads(json.dumps(verdict.to_dict(), allow_nan=False))["departures"][0]["function"] == MAIN
    brief = _phases(18, 2, rng)
    brief.own["P1"][MAIN] += 0.1  # one epoch: below the time floor of two
    assert not any(c.departs for c in check(fitted, brief, _inputs(18, 2), None).comparisons if c.model == "own-time")
    stranger = _phases(18, 2, rng)
    stranger.own["P2"]["spin (helper.py:1)"] = 0.5  # a function no training run ran
    found = check(fitted, stranger, _inputs(18, 2), None)
    assert any(d.function == "spin (helper.py:1)" and d.phase == "P2" for d in found.departures)


def _fixed_cost_run(records: int, rng: random.Random, extra_main: float = 0.0) -> RunPhases:
    """A run whose main has a fixed cost (0.12 s of setup, 3 % noise) and whose parse grows with the input
    (0.05 s per record): main takes a large share of a short run and a small one of a long run."""
    setup = 0.12 * rng.gauss(1, 0.03) + extra_main
    parse = 0.05 * records * rng.gauss(1, 0.03)
    rows = [{"label": "P1", "start": 0.0, "end": setup + parse, "seconds": setup + parse, "name": "parse",
             "profile": KNOWN[0][1], "cpu_percent": 99.0, "peak_rss_bytes": 30e6, "io_bytes": None}]
    return RunPhases(Recording(0, ["phased.py"], 0.0, 1.0, "complete"), 0.1, int((setup + parse) / 0.1), rows,
                     {"P1": {MAIN: setup, PARSE: parse}})


def test_extra_work_in_a_function_with_a_fixed_cost_departs_in_a_long_run_too():
    """Training runs of 0.4-4 s give main, a fixed 0.12 s of setup, from 3 % (long runs) to 30 % (short
    ones) of a run. 0.4 s more of main in a 4 s run is 12 % of it: under the largest share a training run
    gave main, so a rule on shares misses it (sqlparse's slowed phase in runs of 2.3-3.2 s); against
    main's own seconds fitted to the run's length it departs. Normal runs of every length do not."""
    rng = random.Random(5)
    runs = []
    for n in range(30):
        phases = _fixed_cost_run(5 + (n * 11) % 76, rng)
        runs.append(TrainingRun(f"i{n}", {"input:argv[--records]": float(5 + (n * 11) % 76)}, {}, phases,
                                whole_run(phases)))
    fitted = phase_model.fit(runs, [KNOWN[0]], PhaseOptions(), Program("phased.py", functions=["parse", "main"]),
                             ModelOptions(min_runs=8))
    stats = fitted["own_time"]["functions"][MAIN]
    assert stats["max"] > 0.2 and abs(stats["fit"]["intercept"] - 0.12) < 0.02 and abs(stats["fit"]["slope"]) < 0.01
    records = {"input:argv[--records]": 78.0}
    for _ in range(10):
        normal = check(fitted, _fixed_cost_run(78, rng), records, None)
        assert not any(c.departs for c in normal.comparisons if c.model == "own-time")
    slowed = check(fitted, _fixed_cost_run(78, rng, extra_main=0.4), records, None)
    own = [d for d in slowed.departures if d.model == "own-time"]
    assert [d.function for d in own] == [MAIN]
    assert own[0].actual / own[0].total < stats["max"]  # its share stays under the training runs' largest
    legacy = json.loads(json.dumps(fitted))
    for function in legacy["own_time"]["functions"].values():
        del function["fit"]  # a model written before the fit: judged by shares, and this run passes
    assert not any(c.departs for c in check(legacy, _fixed_cost_run(78, random.Random(9), extra_main=0.4), records,
                                            None).comparisons if c.model == "own-time")


def test_a_model_without_own_time_checks_the_phases_and_says_so(fitted):
    import copy

    model = copy.deepcopy(fitted)
    del model["own_time"]
    verdict = check(model, _phases(18, 2, random.Random(2)), _inputs(18, 2), None)
    assert not any(c.model == "own-time" for c in verdict.comparisons)
    assert any("no own-time summary" in note for note in verdict.notes)


def test_a_small_difference_is_no_departure_however_sure_the_model_is(fitted):
    run = _phases(18, 2, random.Random(7), slow=1.08)  # 8 %: beyond k spreads of a 3 % noise, below the 10 % floor
    verdict = check(fitted, run, _inputs(18, 2), None, CheckOptions(k=1.0))
    assert not any(d.metric == "wall_s" for d in verdict.departures)
    strict = check(fitted, run, _inputs(18, 2), None, CheckOptions(k=1.0, min_relative=0.0, min_epochs=0.0))
    assert any(d.metric == "wall_s" and d.phase == "P2" for d in strict.departures)


def test_a_phase_the_model_never_saw_departs_when_the_program_waited_in_it(fitted):
    rng = random.Random(3)
    idle = {"label": "P3", "start": 2.0, "end": 3.0, "seconds": 0.02, "name": "idle (no sample)", "profile": {},
            "cpu_percent": 2.0, "peak_rss_bytes": 30e6, "io_bytes": None}
    stalled = check(fitted, _phases(18, 2, rng, extra=[idle]), _inputs(18, 2), None)
    assert stalled.anomalous and [d.phase for d in stalled.departures] == ["P3"]
    assert "never saw" in stalled.departures[0].describe()
    assert json.loads(json.dumps(stalled.to_dict(), allow_nan=False))["departures"][0]["z"] is None  # strict JSON
    brief = dict(idle, end=2.1)
    assert not check(fitted, _phases(18, 2, rng, extra=[brief]), _inputs(18, 2), None).anomalous
    computing = dict(idle, seconds=1.0, cpu_percent=99.0, profile={"gc": 1.0}, name="gc")
    judged = check(fitted, _phases(18, 2, rng, extra=[computing]), _inputs(18, 2), None)
    assert any(c.phase == "run" for c in judged.comparisons)  # judged through the whole run, which it lengthened
    assert [d.phase for d in judged.departures] == ["run"] * len(judged.departures) and judged.departures
    assert "judged by the whole-run models too" in " ".join(judged.notes)


def test_a_stretch_the_sampler_missed_while_the_program_was_busy_is_no_waiting_phase(fitted):
    """bench_phases on Python 3.11, sqlparse (seed 29): three normal runs were flagged by a 0.3 s phase the
    model never saw, without a sample (the sampler's thread waited for the GIL through a long C call) while
    the resource series, polled from outside, had the program at 100-103 % CPU; the IO stalls' new phases
    were at 2.5-42 %. Such a stretch is no waiting phase: it is left unjudged (the whole run judges the
    time), and the verdict says why."""
    rng = random.Random(5)
    missed = {"label": "P3", "start": 1.2, "end": 1.5, "seconds": 0.0, "name": "(no sample)", "profile": {},
              "cpu_percent": 101.0, "peak_rss_bytes": 30e6, "io_bytes": None}
    run = _phases(18, 2, rng)
    for row in run.phases:  # the missed stretch took its time from the phases around it
        row["end"] -= 0.15
        row["start"] -= 0.15 if row["label"] == "P2" else 0.0
    run.phases[0]["start"] = 0.0
    verdict = check(fitted, RunPhases(run.recording, run.epoch_s, run.epochs, run.phases + [missed], run.own),
                    _inputs(18, 2), None)
    assert not any(d.phase == "P3" for d in verdict.departures), verdict.departures
    assert any(note.startswith("P3 (0.30 s) has almost no samples while the program used 101 % CPU")
               for note in verdict.notes), verdict.notes
    waiting = dict(missed, cpu_percent=42.0)
    stalled = check(fitted, _phases(18, 2, rng, extra=[waiting]), _inputs(18, 2), None)
    assert [d.phase for d in stalled.departures][:1] == ["P3"]


def test_a_rare_phase_is_judged_through_the_run_it_lengthened(fitted):
    """A phase seen in too few training runs to model has no estimate of its own; its time is judged
    through the run's totals. bench_phases on Python 3.11 (seed 32, sqlparse): judged against the longest
    of the one training run that had it (0.30 s), a normal run's 0.50 s flagged; six normal runs in seeds
    28, 29 and 32 alike."""
    import copy

    model = copy.deepcopy(fitted)
    model["rare"]["P3"] = {"name": "idle (no sample)", "runs": 3, "max_wall_s": 0.4, "max_share": 0.2}
    rng = random.Random(5)

    def idle(seconds: float) -> dict:
        return {"label": "P3", "start": 5.0, "end": 5.0 + seconds, "seconds": 0.0, "name": "idle (no sample)",
                "profile": {}, "cpu_percent": None, "peak_rss_bytes": None, "io_bytes": None}

    usual = check(model, _phases(18, 2, rng, extra=[idle(0.4)]), _inputs(18, 2), None)
    assert not any(d.phase == "P3" for d in usual.departures)
    assert any(c.phase == "run" for c in usual.comparisons)  # a quarter of the run without a phase model
    assert any(note.startswith("P3 ran 0.40 s; it was too rare in training to have a model (3 run(s), longest 0.40 s)")
               for note in usual.notes), usual.notes
    long = check(model, _phases(18, 2, rng, extra=[idle(1.5)]), _inputs(18, 2), None)
    assert long.anomalous and {d.phase for d in long.departures} == {"run"}
    assert any(d.metric == "wall_s" for d in long.departures)
    # seed 32's run: the rare phase (one training run, 0.30 s) lasted 0.50 s in a run 0.32 s over its whole-run
    # estimate, within what the whole-run models allow a program whose runs vary with their input (z +1.0)
    noisy = copy.deepcopy(model)
    noisy["rare"]["P3"] = {"name": "gc", "runs": 1, "max_wall_s": 0.3, "max_share": 0.2}
    for fitted_metric in noisy["whole_run"].values():
        fitted_metric["residuals"]["spread"] = 0.2
    longer = _phases(18, 2, rng, extra=[dict(idle(0.55), seconds=0.55, cpu_percent=99.0, profile={"gc": 1.0},
                                             name="gc")])
    verdict = check(noisy, longer, _inputs(18, 2), None)
    assert not verdict.anomalous, verdict.departures
    assert [c.z < 4 for c in verdict.comparisons if c.phase == "run" and c.metric == "wall_s"] == [True]


def test_a_meta_input_that_barely_moves_is_not_a_candidate():
    """P1's peak memory moving 0.5 % with P2's noise explains that noise in training and nothing after
    it: the selection must not be offered it (P1's duration, which spans 2x, stays a candidate)."""
    rng = random.Random(3)
    runs = []
    for n in range(32):
        records, passes = 10 + (n * 7) % 21, 1 + (n * 5) % 4
        phases = _phases(records, passes, rng)
        mix = phases.phases[1]
        drift = mix["seconds"] / (0.03 * records * passes) - 1  # this run's noise in P2
        phases.phases[0]["peak_rss_bytes"] = 30e6 * (1 + 0.1 * drift)
        runs.append(TrainingRun(f"i{n}", _inputs(records, passes), {}, phases, whole_run(phases)))
    model = phase_model.fit(runs, [tuple(k) for k in KNOWN], PhaseOptions(), Program("phased.py"), ModelOptions(min_runs=8))
    for metric, fitted in model["phases"]["P2"]["metrics"].items():
        assert "meta:P1.peak_rss_bytes" not in fitted["model"]["scaling"], metric
    rows, _, _ = phase_model._phase_rows(runs, "P2", "wall_s", with_features=False)
    assert "meta:P1.wall_s" in rows[0] and "meta:P1.peak_rss_bytes" not in rows[0]


def test_an_earlier_phase_beyond_its_training_range_does_not_carry_a_later_estimate(fitted):
    """CI found it: P2's model had a slope on P1's peak memory (250 KB of spread in training); a run
    whose P1 used 1.5 MB more (an injector's imports) put P2's estimate at its floor, and the normal P2
    departed. Meta-inputs are read within their training range; input numbers still extrapolate."""
    import copy

    model = copy.deepcopy(fitted)
    wall = model["phases"]["P2"]["metrics"]["wall_s"]["model"]
    meta = "meta:P1.peak_rss_bytes"
    low, high = 29.9e6, 30.1e6
    if wall["form"] == "log":
        low, high = math.log1p(low), math.log1p(high)
    wall["scaling"][meta] = {"min": low, "max": high}
    wall["terms"].append({"coefficient": -0.05, "factors": [{"feature": meta, "power": 1}]})
    rng = random.Random(7)
    usual = _phases(18, 2, rng)
    assert not check(model, usual, _inputs(18, 2), None).anomalous
    heavier = _phases(18, 2, rng)
    heavier.phases[0]["peak_rss_bytes"] = 31.5e6  # below P1's own memory floor: P1 is not an anomaly either
    verdict = check(model, heavier, _inputs(18, 2), None)
    assert not verdict.anomalous, [d.describe() for d in verdict.departures]
    given = {**_inputs(18, 2), **meta_inputs(heavier, "P2")}
    assert phase_model.estimate(wall, given) == phase_model.estimate(wall, {**given, meta: 30.1e6})
    bigger = _inputs(40, 2)  # twice the largest training input: the estimate follows it
    assert phase_model.estimate(wall, {**bigger, meta: 30e6}) > 1.5 * phase_model.estimate(wall, {**given, meta: 30e6})


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_the_phase_model_reader_refuses_in_one_line_or_checks(fitted, tmp_path, data):
    paths = list(json_paths(fitted, items=2))
    path = data.draw(st.sampled_from(paths))
    document = mutated(fitted, path, data.draw(odd_json_values()))
    target = tmp_path / "m.json"
    target.write_text(json.dumps(document), encoding="utf-8")
    try:
        model = phase_model.load(target)
    except phase_model.PhaseModelError as exc:
        assert str(target) in str(exc) and "\n" not in str(exc)
        return
    verdict = check(model, _phases(18, 2, random.Random(0)), _inputs(18, 2), None)
    assert isinstance(verdict.anomalous, bool)
    assert all(math.isfinite(c.expected) for c in verdict.comparisons if c.model != "none")


def test_a_floor_at_the_edge_of_the_floats_gives_no_infinite_estimate(fitted, tmp_path):
    """CI found it (the reader's property test): a model floor of 1.7976931348620018e+308 is a finite number the
    reader accepts, and the check's estimate, centred on the residuals, overflowed to infinity."""
    document = mutated(fitted, ("phases", "P2", "metrics", "peak_rss_bytes", "model", "floor"), 1.7976931348620018e+308)
    target = tmp_path / "m.json"
    target.write_text(json.dumps(document), encoding="utf-8")
    verdict = check(phase_model.load(target), _phases(18, 2, random.Random(0)), _inputs(18, 2), None)
    assert all(math.isfinite(c.expected) for c in verdict.comparisons if c.model != "none")
    function = next(iter(fitted["own_time"]["functions"]))  # the own-time line's slope, likewise
    document = mutated(fitted, ("own_time", "functions", function, "fit", "slope"), 1.7976931348620018e+308)
    target.write_text(json.dumps(document), encoding="utf-8")
    verdict = check(phase_model.load(target), _phases(18, 2, random.Random(0)), _inputs(18, 2), None)
    assert all(math.isfinite(c.expected) and math.isfinite(c.z) for c in verdict.comparisons if c.model != "none")


def test_a_key_holding_a_newline_is_refused_in_one_line(fitted, tmp_path):
    """CI found it: a scaling feature named "\\n" broke the reader's message onto two lines."""
    import copy

    spoilt = {"scaling": lambda m: m["phases"]["P2"]["metrics"]["cpu_s"]["model"].__setitem__("scaling", {"\n": 0}),
              "option": lambda m: m["options"].__setitem__("a\nb", 1),
              "phase": lambda m: m["phases"].__setitem__("P\n3", 7),
              "metric": lambda m: m["whole_run"].__setitem__("x\ny", 7)}
    for name, spoil in spoilt.items():
        document = copy.deepcopy(fitted)
        spoil(document)
        target = tmp_path / f"{name}.json"
        target.write_text(json.dumps(document), encoding="utf-8")
        with pytest.raises(phase_model.PhaseModelError) as refused:
            phase_model.load(target)
        assert "\n" not in str(refused.value) and str(target) in str(refused.value), name


# ---------------------------------------------------------------------------- the real CLI


@pytest.fixture(scope="module")
def campaign(tmp_path_factory):
    """The phased program profiled with --sample (12 inputs, each run instrumented and uninstrumented)
    and its phase model."""
    folder = tmp_path_factory.mktemp("phased") / "phased"
    shutil.copytree(PROGRAMS / "phased", folder)
    store = folder / "runs.db"
    proc = subprocess.run([*CLI, "profile", "campaign.toml", "--store", str(store), "--sample", "--sample-interval",
                           "0.1", "-q"], cwd=folder, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    fit = subprocess.run([*CLI, "phases", "--fit", "model.json", "--store", str(store)], cwd=folder,
                         capture_output=True, text=True)
    assert fit.returncode == 0, fit.stderr
    return folder, store, fit.stdout


def _check(folder: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    import os

    return subprocess.run([*CLI, "check", "--model", "model.json", *args], cwd=folder, capture_output=True, text=True,
                          env={**os.environ, **(env or {})})


def _verdict(proc: subprocess.CompletedProcess) -> dict:
    """The JSON verdict (after the checked program's own output, when check ran it)."""
    def strict(constant: str):
        raise AssertionError(f"{constant} is not JSON")

    text = proc.stdout[proc.stdout.index("\n{") + 1:] if not proc.stdout.startswith("{") else proc.stdout
    return json.loads(text, parse_constant=strict)


def test_phases_fit_reports_per_phase_and_total_errors(campaign):
    folder, _, text = campaign
    model = phase_model.load(folder / "model.json")
    assert {"P1", "P2"} <= set(model["phases"])  # load and crunch; report is too short to be seen in every run
    assert "load" in model["phases"]["P1"]["name"] and "crunch" in model["phases"]["P2"]["name"]
    assert model["program"]["sampling"]["interval"] == pytest.approx(0.1)
    assert "held-out error: wall_s" in text and "run duration, held-out median error" in text
    assert "own time: " in text and model["own_time"]["runs"] == model["training"]["runs"]
    assert max(model["own_time"]["functions"], key=lambda f: model["own_time"]["functions"][f]["median"]) \
        .startswith("spin (phased_steps.py:")  # the phases' steps all spin: its own code is most of every run
    listed = subprocess.run([*CLI, "phases", "--campaign", "campaign.toml", "--store", "runs.db", "--json"], cwd=folder,
                            capture_output=True, text=True)
    assert listed.returncode == 0, listed.stderr
    assert len(json.loads(listed.stdout)) == 24  # every sampled run of the campaign, instrumented ones too


def test_phases_fit_stores_each_training_runs_phases_under_the_models_labels(campaign):
    """The run's view and `phases` listing then show the phases the model was fitted on (a --fit stored
    nothing: a run kept the labels of an earlier `phases` call, which need not be the model's)."""
    folder, store, _ = campaign
    from mantispy.sampling.store import RecordingStore

    with RecordingStore(store, create=False) as db:
        for recording in db.recordings():
            db.save_phases(recording.id, {"stale": True}, [])
    fit = subprocess.run([*CLI, "phases", "--fit", "refit.json", "--store", str(store)], cwd=folder,
                         capture_output=True, text=True)
    assert fit.returncode == 0, fit.stderr
    model = phase_model.load(folder / "refit.json")
    with RecordingStore(store, create=False) as db:
        stored = [db.phases(recording.id) for recording in db.recordings()]
    refitted = [entry for entry in stored if entry is not None and entry[0].get("model") == "refit.json"]
    assert len(refitted) == model["training"]["runs"] == 12  # the uninstrumented runs; the instrumented keep theirs
    labels = {label for label, _ in model["known"]}
    assert all(entry[0]["epoch_s"] == model["epoch_s"] and entry[1] and {row["label"] for row in entry[1]} <= labels
               for entry in refitted)
    assert set(model["phases"]) <= {row["label"] for entry in refitted for row in entry[1]}


def test_check_tells_a_normal_run_from_one_with_a_slowed_phase(campaign):
    folder, _, _ = campaign
    program = ["--", "phased.py", "--records", "15", "--passes", "2"]
    normal, recordings = _check(folder, "--json", *program), 1
    if _verdict(normal)["anomalous"]:  # a burst of machine load is an anomaly too: look once more
        normal, recordings = _check(folder, "--json", *program), 2
    assert normal.returncode == 0, normal.stderr
    verdict = _verdict(normal)
    assert verdict["anomalous"] is False, verdict["departures"]
    assert "recorded command" in verdict["inputs_from"]
    slowed = _check(folder, "--fail-on-anomaly", *program, env={"PYTHONPATH": str(INJECT),
                                                               "MANTIS_INJECT_DELAY": "phased_steps:mix:0.01"})
    assert slowed.returncode == 1, slowed.stdout + slowed.stderr
    first = next(line for line in slowed.stdout.splitlines() if line.startswith("  departs: "))
    assert f"recording {recordings + 1}: ANOMALOUS" in slowed.stdout and first.startswith("  departs: P2 (") \
        and "crunch" in first, slowed.stdout
    again = _check(folder, "last", "--store", ".mantis/record.db", "--json")  # the recording, checked again
    assert json.loads(again.stdout)["anomalous"] is True


def test_check_a_campaign_run_uses_its_input_and_features(campaign):
    folder, store, _ = campaign
    from mantispy.sampling.store import RecordingStore

    with RecordingStore(store, create=False) as db:
        rid = db.recordings()[-1].id
    alone = subprocess.run([*CLI, "phases", str(rid), "--store", str(store), "--epoch", "0.2"], cwd=folder,
                           capture_output=True, text=True)
    assert alone.returncode == 0, alone.stderr  # labels of its own: what the run's view showed after a check
    proc = _check(folder, str(rid), "--store", str(store), "--json")
    assert proc.returncode == 0, proc.stderr
    assert "campaign 'phased'" in json.loads(proc.stdout)["inputs_from"]
    with RecordingStore(store, create=False) as db:
        stored = db.phases(rid)
    model = phase_model.load(folder / "model.json")
    assert stored is not None and stored[0]["model"] == "model.json" and stored[0]["epoch_s"] == model["epoch_s"]
    assert {row["label"] for row in stored[1]} <= {label for label, _ in model["known"]}


def test_check_refuses_bad_input_in_one_line(campaign, tmp_path):
    folder, _, _ = campaign
    other = tmp_path / "other.db"
    from mantispy.sampling.recorder import RecordOptions, record

    record(RecordOptions(["shares.py", "1", "3"], store=other, cwd=PROGRAMS / "sampled"))
    foreign = _check(folder, "last", "--store", str(other))
    assert foreign.returncode == 2 and "ran other code than the model's program" in foreign.stderr
    assert len(foreign.stderr.strip().splitlines()) == 1
    idle = tmp_path / "idle.py"
    idle.write_text("pass\n", encoding="utf-8")
    record(RecordOptions([str(idle)], store=other, cwd=tmp_path))
    empty = _check(folder, "last", "--store", str(other))
    assert empty.returncode == 2 and "has no sample" in empty.stderr
    (tmp_path / "bad.json").write_text('{"format": "mantispy-model"}', encoding="utf-8")
    bad = subprocess.run([*CLI, "check", "1", "--model", str(tmp_path / "bad.json")], capture_output=True, text=True)
    assert bad.returncode == 2 and "not a mantispy phase model" in bad.stderr
    few = subprocess.run([*CLI, "phases", "--fit", str(tmp_path / "m.json"), "--store", str(other)], capture_output=True,
                         text=True)
    assert few.returncode == 2 and len(few.stderr.strip().splitlines()) == 1
    keep = tmp_path / "notes.txt"
    keep.write_text("mine", encoding="utf-8")
    refused = subprocess.run([*CLI, "phases", "--fit", str(keep), "--store", str(folder / "runs.db")],
                             capture_output=True, text=True)
    assert refused.returncode == 2 and "will not write over it" in refused.stderr and keep.read_text() == "mine"
    beyond = _check(folder, "last", "--store", str(other), "--shortfall-cover", "2")
    assert beyond.returncode == 2 and "--shortfall-cover" in beyond.stderr and "Traceback" not in beyond.stderr


def test_the_build_report_shows_the_phases_across_runs(fitted):
    import copy

    from mantispy.report import render_report
    from tests.test_report import make_build

    model = copy.deepcopy(fitted)
    model["phases"]["P2"]["name"] = "<script>alert(1)</script> mix"
    page = render_report(make_build(), model)
    assert 'id="phases"' in page and "Phases across runs" in page
    assert page.count('data-phase="P') == 2 and "&lt;script&gt;alert(1)&lt;/script&gt; mix" in page
    assert "<script>alert(1)" not in page and "sum of the phases' models" in page
    assert "Phases across runs" not in render_report(make_build())


def test_a_rare_variant_of_a_modelled_phase_is_folded_into_it_and_a_rare_phase_of_its_own_stays_rare():
    """bench_phases, pycparser (seed 23): stretches of the parse with a function more or less on their
    stacks got labels of their own in 4 and 1 of 40 training runs (t_sim 0.98 to the parse phase), and 5
    normal runs were flagged (1 with the fold). Such a label is folded into the modelled phase before
    fitting, so a check labels its stretch as that phase; an idle wait stays rare."""
    from mantispy.phases.detect import detect
    from mantispy.phases.epochs import Epoch

    variant = {"parse": 0.85, "main": 0.1, "helper": 0.05}
    rng = random.Random(11)
    runs = []
    for n in range(32):
        records, passes = 10 + (n * 7) % 21, 1 + (n * 5) % 4
        phases = _phases(records, passes, rng)
        if n in (4, 17, 25):  # the second half of P1 carries the variant's label
            first = phases.phases[0]
            middle = (first["start"] + first["end"]) / 2
            phases.phases[0:1] = [dict(first, end=middle, seconds=first["seconds"] / 2),
                                  dict(first, label="P3", start=middle, seconds=first["seconds"] / 2, profile=variant)]
            phases.own["P3"] = {PARSE: phases.own["P1"][PARSE] / 2, MAIN: phases.own["P1"][MAIN] / 2}
            phases.own["P1"] = {PARSE: phases.own["P1"][PARSE] / 2, MAIN: phases.own["P1"][MAIN] / 2}
        if n in (6, 9):
            phases.phases.append({"label": "P4", "start": 9.0, "end": 9.5, "seconds": 0.0, "name": "idle (no sample)",
                                  "profile": {}, "cpu_percent": None, "peak_rss_bytes": None, "io_bytes": None})
        runs.append(TrainingRun(f"i{n}", _inputs(records, passes), {}, phases, whole_run(phases)))
    known = [*[tuple(k) for k in KNOWN], ("P3", variant), ("P4", {})]
    model = phase_model.fit(runs, known, PhaseOptions(), Program("phased.py", functions=["parse", "mix", "main"]),
                            ModelOptions(min_runs=8))
    assert set(model["folded"]) == {"P3"} and model["folded"]["P3"]["into"] == "P1" and model["folded"]["P3"]["runs"] == 3
    assert model["phases"]["P1"]["runs"] == 32 and set(model["rare"]) == {"P4"}
    assert ["P1", variant] in model["known"]
    assert phase_model.model_problem_of(json.loads(json.dumps(model))) is None
    whole = runs[4].phases.by_label()["P1"]
    assert math.isclose(whole["wall_s"], runs[4].phases.phases[0]["end"] - runs[4].phases.phases[0]["start"]
                        + runs[4].phases.phases[1]["end"] - runs[4].phases.phases[1]["start"])
    assert math.isclose(sum(runs[4].phases.own["P1"].values()), whole["wall_s"], rel_tol=0.05)

    def epoch(n: int, shares: dict[str, float]) -> Epoch:
        return Epoch(n * 0.1, (n + 1) * 0.1, 0.1, {name: 0.1 * share for name, share in shares.items()})

    stretches = [epoch(n, KNOWN[0][1]) for n in range(4)] + [epoch(n, variant) for n in range(4, 8)] \
        + [epoch(n, KNOWN[1][1]) for n in range(8, 12)]
    labels = [phase.label for phase in detect(stretches, PhaseOptions(), [tuple(k) for k in model["known"]])]
    assert labels == ["P1", "P2"]  # a check labels the variant's stretch as the phase it belongs to
    unfolded = [*[tuple(k) for k in KNOWN], ("P3", variant)]
    assert [phase.label for phase in detect(stretches, PhaseOptions(), unfolded)] == ["P1", "P3", "P2"]


def test_a_phase_that_ran_short_departs_only_when_the_run_fell_short_too(fitted):
    """bench_phases on Python 3.12, sqlparse (seed 26): the formatting phase at 0.3 s against 1.0 s expected
    flagged 8 normal runs, their epochs labelled as a phase no training run had while the runs took as long
    as expected. Time moved to another label is not time lost; a phase that really ends early shortens the
    run."""
    def short_mix(run: RunPhases) -> tuple[float, float]:  # P2 keeps 30 % of its time; the rest as it was
        mix = run.phases[1]
        wall, cpu = mix["end"] - mix["start"], mix["seconds"]
        mix.update(end=mix["start"] + 0.3 * wall, seconds=0.3 * cpu)
        return 0.7 * wall, 0.7 * cpu

    rng = random.Random(13)
    moved = _phases(18, 2, rng)
    start = moved.phases[1]["end"]
    wall, cpu = short_mix(moved)
    moved.phases.append({"label": "P9", "start": moved.phases[1]["end"], "end": start, "seconds": cpu,
                         "name": "mix (phased.py:9) 60%", "profile": {"mix": 0.6, "main": 0.4}, "cpu_percent": 99.0,
                         "peak_rss_bytes": 30e6, "io_bytes": None})
    judged = CheckOptions(shortfalls=True)
    verdict = check(fitted, moved, _inputs(18, 2), None, judged)
    shortfalls = [c for c in verdict.comparisons if c.phase == "P2" and c.metric == "wall_s"]
    assert shortfalls and shortfalls[0].z < -4 and shortfalls[0].run_change is not None
    assert not verdict.anomalous, verdict.departures
    assert any("P2 ran short" in note and "went to phases labelled otherwise" in note for note in verdict.notes)
    assert json.loads(json.dumps(verdict.to_dict(), allow_nan=False))["comparisons"][0]["run_change"] is not None
    strict = check(fitted, moved, _inputs(18, 2), None, CheckOptions(shortfalls=True, shortfall_cover=0))
    assert strict.anomalous and {d.phase for d in strict.departures} == {"P2"}  # the rule off: as before
    early = _phases(18, 2, rng)
    short_mix(early)
    ended_early = check(fitted, early, _inputs(18, 2), None, judged)
    assert ended_early.anomalous and any(d.phase == "P2" and d.metric == "wall_s" for d in ended_early.departures)
    # a phase's peak memory or CPU use is no share of the run's: a phase lower than its estimate is judged as it is
    # (bench_phases, pycparser on 3.11, seed 27: a phase's peak memory was judged by the rule)
    leaner = _phases(18, 2, rng)
    leaner.phases[1]["peak_rss_bytes"] = 10e6
    lower = [c for c in check(fitted, leaner, _inputs(18, 2), None, judged).comparisons
             if c.phase == "P2" and c.metric == "peak_rss_bytes"]
    assert lower and lower[0].run_change is None and lower[0].departs
    assert not lower[0].covered(CheckOptions())


def test_a_phase_that_ran_over_departs_only_when_the_run_went_over_too(fitted):
    """bench_phases on Python 3.11, sqlparse (seed 30): the one normal run flagged had its formatting phase at
    1.06 s of CPU against 0.81 s estimated (z +8.3) in a run no longer than its whole-run estimate: the phase's
    boundary moved, its functions' own time did not. Time taken from another label is no time added; a phase
    that really runs longer lengthens the run."""
    def moved_boundary(run: RunPhases, seconds: float) -> RunPhases:  # P1 ends later, P2 starts later: same total
        for row, change in zip(run.phases, (seconds, -seconds)):
            wall = row["end"] - row["start"]
            row["seconds"] *= (wall + change) / wall
        run.phases[0]["end"] += seconds
        run.phases[1]["start"] += seconds
        return run

    rng = random.Random(19)
    moved = moved_boundary(_phases(18, 2, rng), 0.32)  # P1: 0.86 s against about 0.54 s
    verdict = check(fitted, moved, _inputs(18, 2), None)
    over = [c for c in verdict.comparisons if c.phase == "P1" and c.metric == "wall_s"]
    assert over and over[0].z > 4 and over[0].run_change is not None and abs(over[0].run_change) < 0.1
    assert not verdict.anomalous, verdict.departures
    assert any(note.startswith("P1 ran over (duration 0.8") and "came from phases labelled otherwise" in note
               for note in verdict.notes), verdict.notes
    strict = check(fitted, moved, _inputs(18, 2), None, CheckOptions(excess_cover=0))
    assert strict.anomalous and {d.phase for d in strict.departures} == {"P1"}  # the rule off: as before
    longer = _phases(18, 2, rng)
    longer.phases[0]["end"] += 0.32  # P1 lasts longer and P2 as long as ever: the run is 0.32 s longer
    longer.phases[0]["seconds"] += 0.32
    for key in ("start", "end"):
        longer.phases[1][key] += 0.32
    grown = check(fitted, longer, _inputs(18, 2), None)
    assert grown.anomalous and any(d.phase == "P1" and d.metric == "wall_s" for d in grown.departures)


def test_a_run_that_used_less_than_expected_is_no_anomaly_unless_shortfalls_are_judged(fitted):
    """bench_phases on Python 3.12, sqlparse (seeds 26, 27): five of six normal runs flagged were inputs the
    models knew less well, 25-65 % faster than estimated (z -4 to -11); no injected anomaly (a CPU hog, a
    memory balloon, an IO stall, a slowed phase: each takes more) was found by a shortfall alone. Less CPU
    use is still judged: that is how a starved program shows."""
    rng = random.Random(17)
    early = _phases(18, 2, rng)
    mix = early.phases[1]
    mix.update(end=mix["start"] + 0.3 * (mix["end"] - mix["start"]), seconds=0.3 * mix["seconds"])
    verdict = check(fitted, early, _inputs(18, 2), None)
    short = [c for c in verdict.comparisons if c.phase == "P2" and c.metric in ("wall_s", "cpu_s") and c.model == "phase"]
    assert short and all(c.z < -4 and c.shortfall() and not c.departs for c in short)
    assert not verdict.anomalous and not verdict.baseline_anomalous, verdict.departures
    assert any(note.startswith("P2 used less than its estimates (duration") and "--shortfalls" in note
               for note in verdict.notes), verdict.notes
    assert check(fitted, early, _inputs(18, 2), None, CheckOptions(shortfalls=True)).anomalous
    starved = _phases(18, 2, rng)
    starved.phases[1]["cpu_percent"] = 40.0
    slow = check(fitted, starved, _inputs(18, 2), None)
    assert slow.anomalous and any(d.phase == "P2" and d.metric == "cpu_percent" for d in slow.departures)
    heavier = _phases(18, 2, rng)
    heavier.phases[1]["peak_rss_bytes"] = 200e6
    assert any(d.metric == "peak_rss_bytes" for d in check(fitted, heavier, _inputs(18, 2), None).departures)


def test_a_phase_whose_model_reads_a_phase_the_run_did_not_have_before_it_is_not_judged_by_it(fitted):
    """bench_phases on Python 3.12, sqlparse (seed 28): the parsing phase's models read the formatting phase
    that ran before it in every training run; in two normal runs the parsing stretch came first, the models
    got no formatting phase to read and estimated 0.05 s and 2.5 MB for 0.5 s and 25 MB measured (z +27 to
    +118). Such a phase is left to the whole-run models, and the verdict says why."""
    import copy

    from mantispy.modeling.artefact import MODEL_FORMAT, MODEL_VERSION

    model = copy.deepcopy(fitted)
    reads_p1 = {"format": MODEL_FORMAT, "version": MODEL_VERSION, "metric": "wall_s", "method": "lasso", "degree": 1,
                "form": "polynomial", "intercept": 0.0, "aliases": {},
                "terms": [{"coefficient": 2.0, "factors": [{"feature": "meta:P1.wall_s", "power": 1}]}],
                "scaling": {"meta:P1.wall_s": {"min": 0.0, "max": 1.0}}}
    model["phases"]["P2"]["metrics"]["wall_s"] = {"model": reads_p1,
                                                  **{k: v for k, v in fitted["phases"]["P2"]["metrics"]["wall_s"].items()
                                                     if k == "residuals"}}
    rng = random.Random(23)
    usual = check(model, _phases(18, 2, rng), _inputs(18, 2), None)
    assert any(c.phase == "P2" and c.metric == "wall_s" for c in usual.comparisons)
    swapped = _phases(18, 2, rng)
    first, second = swapped.phases
    second_span = second["end"] - second["start"]
    second.update(start=0.0, end=second_span)
    first.update(start=second_span, end=second_span + first["end"] - first["start"])
    swapped.phases[:] = [second, first]
    verdict = check(model, swapped, _inputs(18, 2), None)
    assert not any(c.phase == "P2" and c.metric == "wall_s" for c in verdict.comparisons)
    assert any(note.startswith("P2's models read the phase(s) before it in training (P1)") for note in verdict.notes)
    assert not verdict.anomalous, verdict.departures
    assert any(c.model == "whole-run" for c in verdict.comparisons)  # what no phase model judged, the run's totals do


def test_too_few_training_runs_say_that_only_uninstrumented_runs_train():
    """A campaign keeping the default calibration_runs (3) has three uninstrumented runs whatever its inputs:
    the refusal said to profile more inputs, which would not have helped."""
    rng = random.Random(2)
    runs = [TrainingRun(f"i{n}", _inputs(10 + n, 1), {}, _phases(10 + n, 1, rng), whole_run(_phases(10 + n, 1, rng)))
            for n in range(3)]
    with pytest.raises(phase_model.PhaseModelError, match='calibration_runs = "all"'):
        phase_model.fit(runs, [tuple(k) for k in KNOWN], PhaseOptions(), Program("phased.py", functions=["parse"]),
                        ModelOptions(min_runs=8))


def test_held_out_runs_with_a_phase_too_rare_to_model_are_counted_where_no_total_is_given(fitted):
    """Each held-out run had a phase no model estimates: the fit printed no total and did not say why."""
    assert fitted["evaluation"]["incomplete_runs"] == 0
    rng = random.Random(4)
    runs, known = [], [tuple(k) for k in KNOWN]
    for n in range(32):
        records, passes = 10 + (n * 7) % 21, 1 + (n * 5) % 4
        odd = {"label": f"R{n}", "start": 9.0, "end": 9.3, "seconds": 0.3, "name": f"odd{n}",
               "profile": {f"odd{n}": 1.0}, "cpu_percent": 99.0, "peak_rss_bytes": 30e6, "io_bytes": None}
        known.append((f"R{n}", {f"odd{n}": 1.0}))
        phases = _phases(records, passes, rng, extra=[odd])
        runs.append(TrainingRun(f"i{n}", _inputs(records, passes), {}, phases, whole_run(phases)))
    model = phase_model.fit(runs, known, PhaseOptions(), Program("phased.py", functions=["parse", "mix", "main"]),
                            ModelOptions(min_runs=8))
    evaluation = model["evaluation"]
    assert "total_wall_s" not in evaluation and evaluation["incomplete_runs"] == evaluation["runs"] > 0


def test_a_store_without_a_campaign_is_refused_as_such(tmp_path):
    """A store of recorded runs only: the line asked to name one of its 0 campaigns."""
    from mantispy.phases.training import CampaignLink
    from mantispy.store import RunStore

    path = tmp_path / "runs.db"
    with RunStore(path):
        pass
    with pytest.raises(phase_model.PhaseModelError, match="holds no campaign"):
        CampaignLink(path)
