"""SPORE model generation: preprocessing, both selection methods, the JSON artefact, fit from a store."""

from __future__ import annotations

import json
import subprocess
import textwrap

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone

from mantispy.modeling import artefact
from mantispy.modeling.fitting import FitRequest, fit_campaign, split_inputs
from mantispy.modeling.preprocess import preprocess
from mantispy.modeling.spore import ModelingError, SporeRegressor
from mantispy.store import RunRecord, RunStore
from tests.helpers import MANTISPY

A, B, C = "app.py:work:loop:1", "app.py:work:loop:2", "app.py:work:call"


def planted(n: int, seed: int = 0, noise: float = 0.01) -> tuple[pd.DataFrame, np.ndarray]:
    """y = 0.1 + 2e-6 * a * b + 1e-3 * c, plus 40 distractor columns, a duplicate and a constant."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({
        A: rng.integers(10, 1000, n).astype(float),
        B: rng.integers(1, 300, n).astype(float),
        C: rng.integers(0, 500, n).astype(float),
        **{f"app.py:noise:value:v{i}#1": rng.normal(0, 1, n) for i in range(40)},
    })
    frame["app.py:work:branch:1"] = frame[A] * 3 + 7  # perfectly correlated with A
    frame["app.py:work:branch:2"] = 1000 - frame[A]  # perfectly anti-correlated with A
    frame["app.py:cfg:value:k#1"] = 5.0  # constant
    y = 0.1 + 2e-6 * frame[A] * frame[B] + 1e-3 * frame[C]
    return frame, (y * (1 + rng.normal(0, noise, n))).to_numpy()


def test_preprocess_drops_constants_collapses_duplicates_and_scales():
    frame, _ = planted(50)
    prep = preprocess(frame, list(frame.columns), np.arange(50))
    assert prep.constant == ["app.py:cfg:value:k#1"]
    assert A in prep.columns  # a loop counter stands for its branch twins
    assert sorted(prep.aliases[A]) == [("app.py:work:branch:1", 1), ("app.py:work:branch:2", -1)]
    scaled = prep.scale(frame[prep.columns].to_numpy())
    assert np.allclose(scaled.min(axis=0), 0) and np.allclose(scaled.max(axis=0), 1)


@pytest.mark.parametrize("method", ["lasso", "foba"])
def test_spore_recovers_a_planted_polynomial(method):
    frame, y = planted(400)
    est = SporeRegressor(method=method, random_state=1).fit(frame.iloc[:80], y[:80])
    used = {f for term in est.term_features_ for f, _ in term}
    assert {A, B, C} <= used
    assert not any(f.startswith("app.py:noise") for f in used), used
    assert any(sorted(f for f, _ in term) == sorted([A, B]) for term in est.term_features_)  # the interaction
    errors = np.abs(est.predict(frame.iloc[80:]) - y[80:]) / y[80:]
    assert np.median(errors) < 0.03
    assert clone(est).get_params() == est.get_params()


def test_artefact_predict_needs_no_numpy_and_matches_the_estimator(tmp_path):
    frame, y = planted(200)
    est = SporeRegressor(random_state=0).fit(frame.iloc[:60], y[:60])
    model = artefact.from_estimator(est, "wall_s")
    path = tmp_path / "model.json"
    artefact.save(model, path)
    loaded = artefact.load(path)
    rows = frame.iloc[60:70]
    expected = est.predict(rows)
    got = [artefact.predict(loaded, {k: float(v) for k, v in row.items()}) for _, row in rows.iterrows()]
    assert np.allclose(got, expected)
    assert json.loads(path.read_text())["format"] == "mantispy-model"


def test_excluding_a_feature_lets_its_perfect_alias_stand_in():
    frame, y = planted(300)
    est = SporeRegressor(exclude=(A,), random_state=0).fit(frame.iloc[:90], y[:90])
    used = {f for term in est.term_features_ for f, _ in term}
    assert A not in used
    assert used & {"app.py:work:branch:1", "app.py:work:branch:2"}


def synthetic_store(path, n_inputs: int, constant: bool = False) -> None:
    frame, y = planted(n_inputs, seed=3)
    with RunStore(path) as store:
        campaign = store.open_campaign("synthetic", {"s": 1}, "hash", None, {})
        store.add_inputs(campaign, [(f"i{n}", {"argv": [str(int(frame[A][n])), "fixed"]}) for n in range(n_inputs)])
        for n in range(n_inputs):
            features = {k: (1.0 if constant else float(v)) for k, v in frame.iloc[n].items()}
            store.add_run(campaign, RunRecord(f"i{n}", 0, "instrumented", "ok", 0,
                                              {"wall_s": float(y[n]), "cpu_s": float(y[n]) * 0.9}, features))


def test_fit_campaign_reports_errors_sensitivity_and_blackbox(tmp_path):
    db = tmp_path / "s.db"
    synthetic_store(db, 300)
    with RunStore(db) as store:
        model = fit_campaign(store, None, FitRequest(metric="wall", train_fraction=0.1, seed=4))
    training, evaluation = model["training"], model["evaluation"]
    assert len(training["train_inputs"]) == 30 and len(training["test_inputs"]) == 270
    assert not set(training["train_inputs"]) & set(training["test_inputs"])
    assert evaluation["test"]["median_rel_error"] < 0.05
    assert evaluation["blackbox"]["available"]
    assert evaluation["blackbox"]["median_rel_error"] > 2 * evaluation["test"]["median_rel_error"]
    assert [row["fraction"] for row in evaluation["training_sizes"]] == [0.05, 0.1, 0.2, 0.4]
    path = evaluation["lambda_path"]
    assert sum(row["chosen"] for row in path) == 1
    assert path[0]["terms"] <= path[-1]["terms"]  # larger lambda, fewer terms
    # A's branch twin and mirror, and the input descriptor argv[0] (which is A): aliases of A
    assert training["collapsed_duplicates"] == 3 and training["constant_features"] == 1


def test_split_is_by_input_and_deterministic():
    ids = [f"i{n}" for n in range(50)] * 3  # three repeats each
    train, test = split_inputs(ids, 0.2, 7)
    assert len(train) == 10 and len(test) == 40 and not set(train) & set(test)
    assert split_inputs(ids, 0.2, 7) == (train, test)


@pytest.mark.parametrize(
    "inputs,constant,request_kwargs,message",
    [
        (20, False, {"train_fraction": 0.1}, "need at least 4 training inputs"),
        (60, False, {"metric": "energy"}, "metric 'energy' is not in the store"),
    ],
)
def test_bad_requests_explain_what_to_do(tmp_path, inputs, constant, request_kwargs, message):
    db = tmp_path / "s.db"
    synthetic_store(db, inputs, constant)
    with RunStore(db) as store, pytest.raises(ModelingError, match=message):
        fit_campaign(store, None, FitRequest(**request_kwargs))


def test_when_nothing_explains_the_metric_the_model_is_an_announced_constant(tmp_path):
    db = tmp_path / "s.db"
    synthetic_store(db, 60, constant=True)  # every program feature constant
    with RunStore(db) as store:
        model = fit_campaign(store, None, FitRequest(train_fraction=0.2, inputs=False, sensitivity=False))
    assert model["method"] == "constant" and model["terms"] == []
    assert model["selection"]["chosen"] == "constant"
    assert model["training"]["constant"] == model["selection"]["reason"]


MEMORY_HOG = """
import sys

def build(n, width):
    blocks = []
    for i in range(n):
        blocks.append(bytearray(width))
    return blocks

def checksum(blocks):
    total = 0
    for block in blocks[:50]:
        total += len(block)
    return total

n, noise = int(sys.argv[1]), int(sys.argv[2])
print(checksum(build(n * 40, 2048)), noise)
"""


def test_fit_and_show_through_the_cli_on_a_real_campaign(tmp_path):
    (tmp_path / "prog").mkdir()
    (tmp_path / "prog" / "hog.py").write_text(textwrap.dedent(MEMORY_HOG))
    (tmp_path / "inputs.py").write_text(textwrap.dedent("""
        import random
        def generate(count):
            rng = random.Random(5)
            for i in range(count):
                yield {"id": f"in{i}", "argv": [str(rng.randint(50, 1500)), str(rng.randint(0, 9))]}
    """))
    (tmp_path / "spec.toml").write_text(textwrap.dedent("""
        name = "hog"
        source = "prog"
        entry = "hog.py"
        calibration_runs = 0
        [inputs]
        generator = "inputs.py:generate"
        generator_args = { count = 30 }
    """))
    db = tmp_path / "m.db"
    run = lambda *a: subprocess.run([*MANTISPY, *map(str, a)], capture_output=True, text=True, timeout=600)  # noqa: E731
    assert run("profile", tmp_path / "spec.toml", "--store", db).returncode == 0
    fitted = run("fit", "--store", db, "--metric", "rss", "--train-fraction", "0.5", "--no-input-features",
                 "-o", tmp_path / "model.json")
    assert fitted.returncode == 0, fitted.stderr
    model = json.loads((tmp_path / "model.json").read_text())
    assert model["metric"] == "max_rss_kb" and model["training"]["penalty"] == "adaptive"
    used = set(model["scaling"]) | {a for group in model["aliases"].values() for a, _ in group}
    assert used & {"hog.py:build:loop:1", "hog.py:build:value:n#1", "hog.py:<module>:value:n#1", "hog.py:build:value:i#5"}
    assert model["evaluation"]["test"]["median_rel_error"] < 0.05
    shown = run("show", tmp_path / "model.json")
    assert shown.returncode == 0 and "hog.py:" in shown.stdout and "held-out relative error" in shown.stdout
    bad = run("show", tmp_path / "spec.toml")
    assert bad.returncode == 2 and bad.stderr.startswith("mantispy: error: ") and "not JSON" in bad.stderr
    plain = run("fit", "--store", db, "--metric", "rss", "--train-fraction", "0.5", "--no-input-features",
                "--penalty", "plain", "--average", "1", "--no-sensitivity", "-o", tmp_path / "plain.json")
    assert plain.returncode == 0, plain.stderr
    assert json.loads((tmp_path / "plain.json").read_text())["training"]["penalty"] == "plain"
    few = run("fit", "--store", db, "--train-fraction", "0.05")
    assert few.returncode == 2 and "--train-fraction" in few.stderr
    wide = run("fit", "--store", db, "--metric", "rss", "--train-fraction", "0.5", "--no-input-features", "--average", "1",
               "--no-sensitivity", "--interval", "0.05,0.95", "-o", tmp_path / "wide.json")  # p10-p90 was fixed
    assert wide.returncode == 0, wide.stderr
    assert json.loads((tmp_path / "wide.json").read_text())["interval"]["level"] == [0.05, 0.95]
    for bad_levels in ("0.9,0.1", "0.1", "low,high"):
        refused = run("fit", "--store", db, "--interval", bad_levels, "-o", tmp_path / "never.json")
        assert refused.returncode == 2 and "--interval" in refused.stderr and refused.stderr.count("\n") == 1
        assert not (tmp_path / "never.json").exists()
