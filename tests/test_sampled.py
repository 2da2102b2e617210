"""Sampled features (issue 18): cutting an input's files, scaling the sample's counts, the sampled table
and its reader, and the measurement on a real instrumented program."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mantispy.campaign import load_spec
from mantispy.instrument.transformer import Options
from mantispy.instrument.tree import instrument_tree
from mantispy.runtime.sampled_input import MIN_BYTES, counter_of, cut, sample_input, sampled_id, scaled_counts
from mantispy.sampled.measure import is_counter, measure
from mantispy.sampled.types import FORMAT, VERSION, SampledError, SampledRun, SampledTable, read_table
from tests.helpers import read_mutated


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=3000), fraction=st.floats(0.001, 1.0), min_bytes=st.integers(0, 600))
def test_a_cut_is_a_prefix_that_ends_at_a_line_end_or_the_file_end(data, fraction, min_bytes):
    part = cut(data, fraction, min_bytes)
    assert data.startswith(part)
    assert len(part) >= min(len(data), max(int(len(data) * fraction), min_bytes))
    assert part == data or part.endswith(b"\n")
    assert b"\n" not in part[max(int(len(data) * fraction), min_bytes):-1]  # no whole line beyond the cut


def test_a_cut_keeps_whole_lines_and_at_least_the_floor():
    text = b"".join(b"line %03d\n" % i for i in range(200))  # 1,800 bytes
    assert cut(text, 0.5, 0) == text[:900]
    assert cut(text, 0.01, MIN_BYTES) == text[:261]  # 256 bytes, then to the end of that line
    assert cut(text, 1.0) == text
    assert cut(b"no line end at all" * 40, 0.1, 10) == b"no line end at all" * 40
    with pytest.raises(ValueError):
        cut(text, 0.0)


def test_a_sampled_input_names_its_samples_in_the_arguments_and_scales_by_size(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "doc.md").write_bytes(b"# title\n" + b"a paragraph line\n" * 500)
    (data / "other.txt").write_bytes(b"x\n" * 1000)
    sampled = sample_input(["--repeat", "2", "doc.md", "other.txt", "doc.md"], ["doc.md", "other.txt"],
                           str(tmp_path / "samples"), 0.1, cwd=str(data))
    assert sampled.argv[:2] == ["--repeat", "2"] and sampled.argv[2] == sampled.argv[4]
    assert [Path(p).name for p in sampled.argv[2:4]] == ["doc.md", "other.txt"]  # extensions kept
    assert sampled.full_bytes == 8 + 17 * 500 + 2000
    assert sampled.sampled_bytes == sum(Path(p).stat().st_size for p in sampled.samples.values())
    assert sampled.scale == pytest.approx(sampled.full_bytes / sampled.sampled_bytes)
    assert (data / "doc.md").stat().st_size == 8 + 17 * 500  # the input is never written
    assert scaled_counts({"a.py:f:loop:1": 10, "a.py:f:call": 2}, ["a.py:f:loop:1", "a.py:g:call"], 3.0) == {
        "sampled:a.py:f:loop:1": 30.0, "sampled:a.py:g:call": 0.0}
    assert counter_of(sampled_id("a.py:f:loop:1")) == "a.py:f:loop:1"
    with pytest.raises(ValueError):
        counter_of("content:x")


def test_values_are_not_counters():
    assert is_counter("app.py:run:loop:1") and is_counter("app.py:run:branch:2") and is_counter("app.py:run:call")
    assert not is_counter("app.py:run:value:n#1")


TABLE = SampledTable(fraction=0.05, program="/build/sampled-inst",
                     runs={"in-1": SampledRun(scale=20.5, cpu_s=0.12, returncode=0, counts={"app.py:run:loop:1": 40.0}),
                           "in-2": SampledRun(scale=1.0, cpu_s=0.08, returncode=1, counts={})},
                     failed={"in-3": "no input file to sample"})


def test_the_table_round_trips_and_scales(tmp_path):
    TABLE.save(tmp_path / "sampled.json")
    back = read_table(tmp_path / "sampled.json")
    assert back.to_json() == TABLE.to_json()
    assert back.values(["app.py:run:loop:1"]) == {"in-1": {"sampled:app.py:run:loop:1": 820.0},
                                                  "in-2": {"sampled:app.py:run:loop:1": 0.0}}
    assert json.loads((tmp_path / "sampled.json").read_text())["format"] == FORMAT


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_the_table_reader_refuses_bad_fields_in_one_line(tmp_path_factory, data):
    table = read_mutated(TABLE.to_json(), data, tmp_path_factory.mktemp("sampled"), read_table, SampledError)
    if table is not None:
        assert 0 < table.fraction <= 1
        assert all(run.scale >= 1 and run.cpu_s >= 0 for run in table.runs.values())


def test_the_table_reader_names_the_file_and_the_field(tmp_path):
    path = tmp_path / "sampled.json"
    path.write_text(json.dumps({**TABLE.to_json(), "version": VERSION + 1}))
    with pytest.raises(SampledError, match="field version"):
        read_table(path)
    path.write_text("{")
    with pytest.raises(SampledError, match="unreadable"):
        read_table(path)


PARSER = textwrap.dedent("""\
    import sys


    def parse(text):
        words = 0
        for line in text.splitlines():
            if line.startswith("#"):
                continue
            for word in line.split():
                words += 1
        return words


    print(parse(open(sys.argv[1]).read()))
""")


def test_measure_counts_a_real_program_on_samples_and_scales_to_the_whole(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text(PARSER)
    instrument_tree(tmp_path / "src", tmp_path / "inst", Options(families=frozenset({"loops", "branches", "calls"})))
    (tmp_path / "big.txt").write_text("# header\n" + "one two three four\n" * 4000)
    (tmp_path / "small.txt").write_text("# header\n" + "one two\n" * 400)
    (tmp_path / "campaign.toml").write_text(textwrap.dedent("""\
        name = "words"
        source = "src"
        entry = "app.py"

        [inputs]
        list = [{ id = "big", argv = ["big.txt"] }, { id = "small", argv = ["small.txt"] },
                { id = "none", argv = ["--no-file"] }]
    """))
    spec = load_spec(tmp_path / "campaign.toml")
    table = measure(spec, tmp_path / "inst", 0.05)
    assert set(table.runs) == {"big", "small"} and table.failed == {"none": "no input file to sample"}
    loop = next(c for c in table.runs["big"].counts if c.endswith(":loop:2"))  # the words of a line
    estimate = table.values([loop])
    assert estimate["big"][sampled_id(loop)] == pytest.approx(16000, rel=0.02)  # 4 words x 4,000 lines
    assert estimate["small"][sampled_id(loop)] == pytest.approx(800, rel=0.05)
    assert table.runs["big"].counts[loop] < 16000 / 10  # counted on the sample, not on the file
    assert (tmp_path / "big.txt").read_text().count("\n") == 4001


STEPPER = textwrap.dedent("""\
    \"\"\"Reads moduli, one per line; for each, steps a generator until its state is a multiple of it.\"\"\"
    import sys


    def steps(modulus, state):
        state = (state * 6364136223846793005 + 1442695040888963407) % 18446744073709551616
        while (state >> 33) % modulus:
            state = (state * 6364136223846793005 + 1442695040888963407) % 18446744073709551616
        return state


    def main(path):
        state, lines = 12345, 0
        with open(path) as handle:
            for line in handle:
                state = steps(int(line), state)
                lines += 1
        print(lines, state)


    main(sys.argv[1])
""")

STEPPER_INPUTS = textwrap.dedent("""\
    \"\"\"Files of moduli whose range differs from file to file: their cost follows the moduli, which a file's
    size hardly shows (two or three digits a line).\"\"\"
    import random
    from pathlib import Path


    def generate(count=20, seed=3):
        rng = random.Random(seed)
        folder = Path(__file__).resolve().parent / "data"
        folder.mkdir(exist_ok=True)
        for n in range(count):
            low = rng.choice([100, 200, 1000])
            lines = rng.randint(3000, 8000)
            text = "".join(f"{rng.randint(low, 2 * low)}\\n" for _ in range(lines))
            path = folder / f"m{n:02d}.txt"
            if not path.exists() or path.read_text() != text:
                path.write_text(text)
            yield {"id": f"m{n:02d}", "argv": [f"data/m{n:02d}.txt"]}
""")


@pytest.fixture(scope="module")
def stepper_build(tmp_path_factory):
    """``mantispy build`` (the CLI) on a program whose cost is a loop that only the whole computation can
    count, with neither input descriptors nor content features to fall back on."""
    import subprocess

    from tests.helpers import MANTISPY

    root = tmp_path_factory.mktemp("sampled-build")
    (root / "app").mkdir()
    (root / "app" / "stepper.py").write_text(STEPPER)
    (root / "inputs.py").write_text(STEPPER_INPUTS)
    (root / "campaign.toml").write_text(textwrap.dedent("""\
        name = "stepper"
        source = "app"
        entry = "stepper.py"
        timeout = 120
        [inputs]
        generator = "inputs.py:generate"
        generator_args = { count = 20, seed = 3 }
    """))
    out = root / "predictor"
    proc = subprocess.run([*MANTISPY, "build", str(root / "campaign.toml"), "-o", str(out), "--work", str(root / "work"),
                           "--train-fraction", "0.5", "--metric", "cpu", "--repeats", "3", "--max-cost", "0.2", "--sample-fraction", "0.025",
                           "--static", "--jobs", "2", "--no-input-features", "--no-content-features"],
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return root, out, proc.stdout + proc.stderr


def test_a_build_offers_and_ships_a_sampled_stand_in_for_an_expensive_counter(stepper_build):
    import subprocess
    import sys

    root, out, said = stepper_build
    counter = "stepper.py:steps:loop:1"
    assert re.search(r"sampled features: \d+ counter\(s\) of the all-feature models", said), said[-3000:]
    table = read_table(root / "work" / "sampled.json")
    assert len(table.runs) == 20 and not table.failed and table.fraction == 0.025
    record = json.loads((out / "build.json").read_text())
    assert record["verdicts"][counter]["status"] == "too expensive"  # the counter itself: its slice is the run
    stand_in = sampled_id(counter)
    assert record["verdicts"][stand_in]["status"] == "cheap"
    model = record["metrics"]["cpu_s"]["model"]
    assert stand_in in model["scaling"], model["scaling"]
    assert model["features"][stand_in]["kind"] == "sampled" and "2.5% sample" in model["features"][stand_in]["detail"]
    assert record["ceiling"]["cpu_s"]["sampling"]["offered"] and record["ceiling"]["cpu_s"]["sampling"]["cheap_cv_error"] is None
    evaluator = record["evaluator"]
    assert evaluator["sampled_features"] == [stand_in] and evaluator["sample_fraction"] == 0.025
    assert evaluator["fidelity"]["mismatch_count"] == 0 and evaluator["fidelity"]["inputs"] == 10
    assert (out / "sampled_evaluator" / "BUILD_ID").read_text().strip() == record["build_id"]
    code = ("import sys, json; sys.path.insert(0, sys.argv[1]); import predictor as p; "
            "print(json.dumps([p.predict([sys.argv[2]], cwd=sys.argv[3]), p.sampled_numbers([sys.argv[2]], cwd=sys.argv[3]),"
            " p.sampled_numbers([sys.argv[2]], cwd=sys.argv[3], warm=False)]))")
    proc = subprocess.run([sys.executable, "-c", code, str(out.parent), "data/m05.txt", str(root)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    estimate, warm, cold = json.loads(proc.stdout)
    assert estimate["cpu_s"] > 0
    expected = table.values([counter])["m05"][stand_in]
    assert warm == cold == {stand_in: pytest.approx(expected, rel=1e-12)}
    whole = sum(1 for _ in open(root / "data" / "m05.txt"))
    assert expected > whole  # steps per line, scaled from the sample to the whole file


def test_a_cached_sampled_verdict_holds_for_its_fraction_only(tmp_path):
    import dataclasses
    from types import SimpleNamespace

    from mantispy.build import CostMeter, Verdict

    spec = SimpleNamespace(workdir=tmp_path)
    items = [{"id": "a", "argv": ["a.txt"], "kwargs": None, "files": [], "wall_s": 1.0, "features": {}}]

    def meter(fraction: float) -> CostMeter:
        return CostMeter(None, spec, items, 0.05, 1.0, tmp_path, "hash", 5, lambda _m: None, sample_fraction=fraction)

    first = meter(0.05)
    first.verdicts = {"app.py:f:loop:1": Verdict("app.py:f:loop:1", "too expensive", 1.0, 1.0),
                      "sampled:app.py:f:loop:1": Verdict("sampled:app.py:f:loop:1", "cheap", 0.01, 0.01,
                                                         sample_fraction=0.05)}
    first._save()
    assert set(meter(0.05).verdicts) == set(first.verdicts)
    kept = meter(0.025).verdicts  # judged on other samples: measured again, the program's own verdicts kept
    assert set(kept) == {"app.py:f:loop:1"} and kept["app.py:f:loop:1"] == first.verdicts["app.py:f:loop:1"]
    assert dataclasses.asdict(first.verdicts["sampled:app.py:f:loop:1"])["sample_fraction"] == 0.05


def test_a_stand_in_is_judged_with_the_input_check_a_package_runs_beside_it(tmp_path):
    """PyYAML with --sample-fraction 0.025 (session 30): a stand-in judged at 4.0-4.6 % of a run and the input
    check at 3.6 %, each under the 5 % budget alone, made a package costing 7.5-10 % per prediction."""
    import dataclasses
    from types import SimpleNamespace

    from mantispy.build import CostMeter, Verdict
    from mantispy.build_record import BuildRecord
    from mantispy.predictor import input_check_feature

    spec = SimpleNamespace(workdir=tmp_path)
    items = [{"id": "a", "argv": ["a.txt"], "kwargs": None, "files": [], "wall_s": 1.0, "features": {}}]
    meter = CostMeter(None, spec, items, 0.05, 1.0, tmp_path, "hash", 5, lambda _m: None, sample_fraction=0.025)
    stand_in, content = "sampled:app.py:f:loop:1", "content:app.py:3:0"
    meter.verdicts = {
        "app.py:f:loop:1": Verdict("app.py:f:loop:1", "too expensive", 0.5, 0.5),
        "app.py:main:branch:1": Verdict("app.py:main:branch:1", "cheap", 0.036, 0.036),
        "app.py:main:branch:2": Verdict("app.py:main:branch:2", "evaluator disagrees", 0.001, 0.001),
        stand_in: Verdict(stand_in, "cheap", 0.04, 0.04, sample_fraction=0.025)}
    meter.content_costs = {content: (0.02, 0.02)}
    judged = meter.verdict(stand_in)
    assert judged.status == "too expensive" and judged.cost_fraction == 0.04
    assert judged.input_check == "app.py:main:branch:1" and judged.input_check_fraction == 0.036
    assert "app.py:main:branch:1" in judged.detail and "7.6%" in judged.detail and "limit 5.0%" in judged.detail
    assert meter.verdict(content).status == "too expensive"
    # the package's input check is the one the stand-in was judged with
    record = BuildRecord(verdicts={f: dataclasses.asdict(v) for f, v in meter.verdicts.items()})
    assert input_check_feature(record) == "app.py:main:branch:1"
    meter._save()
    cached = CostMeter(None, spec, items, 0.05, 1.0, tmp_path, "hash", 5, lambda _m: None, sample_fraction=0.025)
    assert cached.verdicts[stand_in] == judged
    # a cheaper input check measured later (or a rebuild that finds one): the same stand-in is cheap again
    meter.verdicts["app.py:main:loop:1"] = Verdict("app.py:main:loop:1", "cheap", 0.005, 0.005)
    again = meter.verdict(stand_in)
    assert again.status == "cheap" and again.detail == "" and again.input_check == "app.py:main:loop:1"
    assert meter.verdict(content).status == "cheap"
    meter._save()
    reread = CostMeter(None, spec, items, 0.05, 1.0, tmp_path, "hash", 5, lambda _m: None, sample_fraction=0.025)
    assert reread.verdicts[stand_in].status == "cheap"
    assert CostMeter(None, spec, items, 0.04, 1.0, tmp_path, "hash", 5, lambda _m: None,  # another budget: not reused
                     sample_fraction=0.025).verdicts == {}
    # an input check over the budget by itself runs whatever the models use: the stand-in is judged alone
    alone = CostMeter(None, spec, items, 0.05, 1.0, tmp_path / "alone", "hash", 5, lambda _m: None,
                      sample_fraction=0.025)
    alone.verdicts = {"app.py:main:branch:1": Verdict("app.py:main:branch:1", "too expensive", 0.08, 0.08),
                      stand_in: Verdict(stand_in, "cheap", 0.04, 0.04, sample_fraction=0.025)}
    assert alone.verdict(stand_in).status == "cheap" and alone.verdict(stand_in).input_check is None


def _ceiling(cheap: float | None, program: float | None) -> dict:
    """A model JSON's selection table with one candidate per view given."""
    rows = [{"view": "constant", "cv_median_rel_error": 0.5}]
    if cheap is not None:
        rows += [{"view": "inputs", "cv_median_rel_error": cheap * 1.5}, {"view": "content", "cv_median_rel_error": cheap}]
    if program is not None:
        rows += [{"view": "program", "cv_median_rel_error": program * 1.2}, {"view": "program", "cv_median_rel_error": program}]
    return {"selection": {"candidates": rows}, "scaling": {}}


def test_the_gate_opens_only_where_every_feature_is_far_better_than_the_cheap_ones():
    from mantispy.sampled.gate import sampling_gate

    assert sampling_gate("cpu_s", _ceiling(0.20, 0.05)).open  # 4x: offered
    assert sampling_gate("cpu_s", _ceiling(0.10, 0.05)).open  # exactly 2x
    closed = sampling_gate("cpu_s", _ceiling(0.068, 0.064))  # pycparser's seed 0
    assert not closed.open and "not offered" in closed.describe() and "6.4%" in closed.describe()
    assert sampling_gate("cpu_s", _ceiling(None, 0.05)).open  # nothing cheap to compare: offered
    assert not sampling_gate("cpu_s", _ceiling(0.2, None)).open  # no program model: nothing to stand in for
    failed = _ceiling(0.2, 0.05)
    failed["selection"]["candidates"].append({"view": "program", "cv_median_rel_error": None, "problem": "singular"})
    assert sampling_gate("cpu_s", failed).program_error == 0.05  # a candidate that failed is not a score
    assert sampling_gate("cpu_s", _ceiling(0.2, 0.05)).to_json() == {
        "cheap_cv_error": 0.2, "program_cv_error": 0.05, "ratio": 2.0, "offered": True}


def test_a_closed_gate_measures_nothing_and_keeps_the_stand_ins_out_of_that_metrics_fits(tmp_path, monkeypatch):
    from types import SimpleNamespace

    import mantispy.build as build

    said: list[str] = []
    builder = SimpleNamespace(options=SimpleNamespace(sample_fraction=0.025), log=said.append,
                              ceilings={"cpu_s": {**_ceiling(0.068, 0.064), "scaling": {"app.py:f:loop:1": {}}}})
    assert build.Builder.sampled_stage(builder, frame=None) == {}
    assert any("sampled features: none (no metric's cheap features" in line for line in said), said
    assert not builder.sampling_gates["cpu_s"].open

    said.clear()  # open, but nothing to cut: no instrumented copy is made, no run is made
    builder.ceilings = {"cpu_s": {**_ceiling(0.2, 0.05), "scaling": {"app.py:f:loop:1": {}}}}
    builder.spec = SimpleNamespace(entry=SimpleNamespace(kind="script"), workdir=tmp_path,
                                   inputs=[SimpleNamespace(files=(), argv=["--size", "3", "missing.txt"])])
    assert build.Builder.sampled_stage(builder, frame=None) == {}
    assert any("sampled features: none (no input names a file to sample)" in line for line in said), said

    requests = []
    monkeypatch.setattr(build, "fit_campaign", lambda store, name, request: requests.append(request) or {"scaling": {}})
    stand_in = sampled_id("app.py:f:loop:1")
    builder = build.Builder.__new__(build.Builder)
    builder.options = build.BuildOptions(spec=tmp_path / "c.toml", out=tmp_path / "out", sample_fraction=0.025)
    builder.content, builder.content_columns = None, {}
    builder.extra_columns = {"i1": {stand_in: 10.0, "content:x": 1.0}}
    builder.sampling_gates = {"cpu_s": build.sampling_gate("cpu_s", _ceiling(0.068, 0.064)),
                              "wall_s": build.sampling_gate("wall_s", _ceiling(0.2, 0.05))}
    campaign = SimpleNamespace(name="c", manifest=None)
    builder.fit(None, campaign, "cpu_s", {"app.py:g:call"}, sensitivity=False)
    builder.fit(None, campaign, "wall_s", {"app.py:g:call"}, sensitivity=False)
    assert requests[0].exclude == ("app.py:g:call", stand_in)  # closed: the stand-in is not its model's to use
    assert requests[1].exclude == ("app.py:g:call",)
