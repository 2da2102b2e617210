"""Every artefact reader refuses what it cannot use with its own error and one line, whatever the mutation
(Hypothesis), and reads back what it accepts (issue 19). The build record's reader has its own test
(test_build_record.py); the run store's rows are read through SQLite (test_profile.py)."""

from __future__ import annotations

import copy
import functools
import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from mantispy.campaign import SpecError, load_spec
from mantispy.instrument.manifest import Manifest, ManifestError
from mantispy.instrument.tree import instrument_tree
from mantispy.modeling import artefact
from mantispy.runtime import observed_calls
from mantispy.slicer.observations import Observations, ObservationsError
from tests.helpers import json_paths, mutated, odd_json_values

PROGRAM = "import sys\n\n\ndef run(n):\n    total = 0\n    for i in range(n):\n        if i % 2:\n            total += i\n    return total\n\n\nprint(run(int(sys.argv[1])))\n"

ODD = odd_json_values()
_paths = functools.partial(json_paths, items=3)


def _manifest() -> dict:
    root = Path(tempfile.mkdtemp(prefix="mantis-readers-"))
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text(PROGRAM)
    return instrument_tree(root / "src", root / "out").manifest.to_dict()


MANIFEST = _manifest()
MODEL = {"format": "mantispy-model", "version": 2, "metric": "wall_s", "method": "lasso", "degree": 2, "form": "log",
         "floor": 0.001, "intercept": 0.5,
         "terms": [{"coefficient": 1.5, "factors": [{"feature": "app.py:run:loop:1", "power": 2}]},
                   {"coefficient": -0.25, "factors": [{"feature": "input:arg1", "power": 1}]}],
         "scaling": {"app.py:run:loop:1": {"min": 0.0, "max": 4.0}, "input:arg1": {"min": 1.0, "max": 9.0}},
         "interval": {"low": 0.8, "high": 1.3, "level": [0.1, 0.9]}}
ENSEMBLE = {"format": "mantispy-model", "version": 2, "metric": "wall_s", "method": "geometric mean", "degree": 2,
            "form": "ensemble", "floor": 0.001, "intercept": 0.0, "terms": [],
            "scaling": {"app.py:run:loop:1": {"min": 0.0, "max": 53.6}, "input:arg1": {"min": 1.0, "max": 8102.0}},
            "members": [{k: v for k, v in MODEL.items() if k not in ("format", "version", "metric", "interval")},
                        {"label": "inputs polynomial-1", "form": "polynomial", "method": "lasso", "degree": 1,
                         "floor": 0.001, "intercept": 0.2,
                         "terms": [{"coefficient": 0.3, "factors": [{"feature": "input:arg1", "power": 1}]}],
                         "scaling": {"input:arg1": {"min": 1.0, "max": 9.0}}}],
            "interval": {"low": 0.8, "high": 1.3, "level": [0.1, 0.9]}}
OBSERVED = {"format": observed_calls.FORMAT, "version": observed_calls.VERSION, "root": "/src",
            "files": {"app.py": "ab12"}, "runs": [{"argv": ["3"]}], "inputs": ["a"],
            "calls": [["app.py", 12, 6, 12, 29, "app.py", "run", 4]], "reached": [["app.py", 12, 6, 12, 29]],
            "started": [["app.py", "run", 4]], "uncreated": []}


def test_the_valid_documents_read():
    assert Manifest.from_dict(copy.deepcopy(MANIFEST)).to_dict() == MANIFEST
    assert artefact.predict(MODEL, {"app.py:run:loop:1": 2, "input:arg1": 3}) > 0
    assert artefact.predict(ENSEMBLE, {"app.py:run:loop:1": 2, "input:arg1": 3}) > 0
    assert Observations.from_dict(copy.deepcopy(OBSERVED)).calls


@settings(max_examples=300, deadline=None)
@given(path=st.sampled_from(list(_paths(MANIFEST))), value=ODD)
@example(path=("options", "families"), value=float("nan"))  # was read back as it was: NaN != NaN, unchecked
def test_manifest_reader(path, value):
    try:
        manifest = Manifest.from_dict(mutated(MANIFEST, path, value))
    except ManifestError as exc:
        assert "\n" not in str(exc)
        return
    assert Manifest.from_dict(json.loads(json.dumps(manifest.to_dict()))) == manifest


@settings(max_examples=300, deadline=None)
@given(path=st.sampled_from(list(_paths(MODEL))), value=ODD)
def test_model_reader(tmp_path_factory, path, value):
    _read_mutated_model(tmp_path_factory, MODEL, path, value)


@settings(max_examples=300, deadline=None)
@given(path=st.sampled_from(list(_paths(ENSEMBLE))), value=ODD)
def test_averaged_model_reader(tmp_path_factory, path, value):
    _read_mutated_model(tmp_path_factory, ENSEMBLE, path, value)


def _read_mutated_model(tmp_path_factory, document, path, value):
    target = tmp_path_factory.mktemp("model") / "model.json"
    target.write_text(json.dumps(mutated(document, path, value)))
    try:
        model = artefact.load(target)
    except artefact.ModelFileError as exc:
        assert "\n" not in str(exc) and str(exc).startswith(str(target))
        return
    estimate = artefact.predict(model, {"app.py:run:loop:1": 2, "input:arg1": 3})  # what it accepts, it evaluates
    assert isinstance(estimate, float)


@settings(max_examples=300, deadline=None)
@given(path=st.sampled_from(list(_paths(OBSERVED))), value=ODD)
def test_observed_calls_reader(path, value):
    try:
        Observations.from_dict(mutated(OBSERVED, path, value), "calls.json")
    except ObservationsError as exc:
        assert "\n" not in str(exc) and str(exc).startswith("calls.json: ")


SPEC = {"name": "t", "source": "prog", "entry": "app.py", "timeout": 30, "repeats": 1, "calibration_runs": 0,
        "metrics": ["wall_s", "cpu_s"], "env": {"A": "1"}, "inputs": {"list": [{"id": "a", "argv": ["3"]}]}}


def _toml(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return {float("inf"): "inf", float("-inf"): "-inf"}.get(value, "nan" if value != value else repr(value))
    if isinstance(value, (int, str)):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)} = {_toml(v)}" for k, v in value.items()) + "}"
    raise TypeError(value)


@pytest.fixture(scope="module")
def spec_folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("spec")
    (folder / "prog").mkdir()
    (folder / "prog" / "app.py").write_text(PROGRAM)
    return folder


@settings(max_examples=150, deadline=None)
@given(key=st.sampled_from(sorted(SPEC)), value=st.one_of(ODD.filter(lambda v: v is not None)))
def test_campaign_spec_reader(spec_folder, key, value):
    spec = dict(SPEC, **{key: value})
    path = spec_folder / "s.toml"
    path.write_text("\n".join(f"{k} = {_toml(v)}" for k, v in spec.items()) + "\n")
    try:
        load_spec(path)
    except SpecError as exc:
        assert "\n" not in str(exc)


# ----------------------------------------------------------------------------------------------------
# the run store: rows SQLite accepts but mantispy cannot read


@pytest.fixture(scope="module")
def profiled_store(tmp_path_factory):
    import subprocess
    import sys

    folder = tmp_path_factory.mktemp("store")
    (folder / "prog").mkdir()
    (folder / "prog" / "app.py").write_text(PROGRAM)
    (folder / "s.toml").write_text('name = "t"\nsource = "prog"\nentry = "app.py"\ncalibration_runs = 1\n'
                                   '[[inputs.list]]\nid = "a"\nargv = ["3"]\n[[inputs.list]]\nid = "b"\nargv = ["5"]\n')
    proc = subprocess.run([sys.executable, "-m", "mantispy", "profile", str(folder / "s.toml"), "--store",
                           str(folder / "m.db"), "-q"], cwd=folder, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return folder / "m.db"


CELLS = [("campaigns", c) for c in ("name", "spec_json", "manifest_json", "environment_json", "calibration_json")] + \
        [("runs", c) for c in ("input_id", "repeat", "variant", "status", "returncode")] + \
        [("metrics", c) for c in ("name", "value")] + [("run_features", c) for c in ("ids", "vals")] + \
        [("inputs", c) for c in ("input_id", "descriptor_json")] + [("feature_names", c) for c in ("id", "name")]
CELL_VALUES = st.one_of(st.none(), st.integers(-2**40, 2**40), st.floats(allow_nan=False), st.text(max_size=6),
                        st.binary(max_size=9), st.sampled_from(["{", "[]", '{"a": 1}', "null", "nan"]))


@settings(max_examples=120, deadline=None)
@given(cell=st.sampled_from(CELLS), value=CELL_VALUES)
def test_store_rows_mantispy_cannot_read(profiled_store, tmp_path_factory, cell, value):
    import shutil
    import sqlite3

    from mantispy.store import RunStore, StoreError

    path = tmp_path_factory.mktemp("damaged") / "m.db"
    shutil.copy(profiled_store, path)
    table, column = cell
    db = sqlite3.connect(path)
    try:
        db.execute(f"UPDATE {table} SET {column} = ? WHERE rowid = (SELECT min(rowid) FROM {table})", (value,))
        db.commit()
    except sqlite3.Error:  # a constraint SQLite itself enforces: nothing stored
        return
    finally:
        db.close()
    try:
        store = RunStore(path)
        for campaign in store.campaigns():
            store.runs(campaign)
            store.dataframe(campaign)
            store.dataframe(campaign, metrics_from="original")
        store.close()
    except StoreError as exc:
        assert "\n" not in str(exc) and str(exc).startswith(str(path))


BATCH = {"pid": 41, "command": "app.py 3", "mode": "cpu", "rate": 100.0, "trigger": "thread",
         "trigger_note": "the program has a SIGPROF handler of its own",
         "stacks": {"0": ["main\tapp.py\t1", "run\tapp.py\t4"], "1": ["main\tapp.py\t1"]},
         "samples": [[1700000000.0, 7, 0, 0.01], [1700000000.01, 7, 1, 0.02]]}
GOOD_BATCH = {**BATCH, "pid": 42, "trigger": "signal", "trigger_note": None}


@settings(max_examples=300, deadline=None)
@given(path=st.sampled_from(list(_paths(BATCH))), value=ODD)
def test_sampler_spool_reader(tmp_path_factory, path, value):
    """A damaged batch line is skipped (or read as far as it is whole); the other process's batch is kept,
    and every note is one line."""
    from mantispy.sampling.spool import SpoolReader

    folder = tmp_path_factory.mktemp("spool")
    (folder / "samples-41.jsonl").write_text(json.dumps(mutated(BATCH, path, value)) + "\n", encoding="utf-8")
    (folder / "samples-42.jsonl").write_text(json.dumps(GOOD_BATCH) + "\n", encoding="utf-8")
    reader = SpoolReader(folder)
    stacks, samples = reader.read()
    kept = [(pid, tid, stacks[stack], weight) for _t, pid, tid, stack, weight in samples if pid == 42]
    assert kept == [(42, 7, GOOD_BATCH["stacks"]["0"], 0.01), (42, 7, GOOD_BATCH["stacks"]["1"], 0.02)]
    assert all(isinstance(frames, list) for frames in stacks.values())
    assert all("\n" not in note for note in reader.trigger_notes())
