"""The typed build record (build.json): to and from JSON, and a reader that refuses what it cannot trust
with one line naming the field, whatever the mutation."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mantispy.build_record import (
    BuildRecord,
    BuildRecordError,
    CampaignRecord,
    EvaluatorRecord,
    FeatureRecord,
    MachineRecord,
    MetricRecord,
    OptionsRecord,
)
from tests.helpers import json_paths, mutated, odd_json_values


def sample() -> BuildRecord:
    """A record with every part filled, as mantispy build writes one."""
    model = {"format": "mantispy-model", "version": 2, "method": "lasso", "intercept": 0.1,
             "terms": [{"coefficient": 1.5, "factors": [{"feature": "app.py:run:loop:1", "power": 1}]}],
             "scaling": {"app.py:run:loop:1": {"min": 0.0, "max": 40.0}}}
    return BuildRecord(
        name="app", entry="app.py", entry_kind="script", source="/src/app", source_hash="ab" * 16,
        created="2026-11-24T02:00:00Z", machine=MachineRecord(cpu="Test CPU", cores=2, python="3.11.7", platform="Linux"),
        options=OptionsRecord(max_cost=0.05, train_fraction=0.5, metrics=["cpu_s"], degree=3, seed=0, method="lasso",
                              max_rounds=10, form="auto", solver="sklearn", penalty="adaptive", original_repeats=3,
                              estimate_limit=0.25,
                              cost_inputs=["i1"]),
        campaign=CampaignRecord(name="app", inputs=12, runs=48, raw_features=30, median_wall_s=0.2,
                                overhead={"factor": 1.3}, noise={"cpu_s": {"floor": 0.02}}, unusable_inputs=[]),
        idle_interpreter_s=0.02, calibration_inputs=[{"id": "i1", "argv": ["3"]}],
        metrics={"cpu_s": MetricRecord(unit="s", model=model, validation={
            "n": 6, "median_rel_error": 0.04, "mean_rel_error": 0.05,
            "blackbox": {"available": True, "median_rel_error": 0.2, "mean_rel_error": 0.3},
            "points": [{"input_id": "i2", "actual": 1.0, "predicted": 1.1, "blackbox": None}]})},
        rounds=[{"round": 1, "metric": "cpu_s", "selected": ["app.py:run:loop:1"], "accepted": [], "rejected": []}],
        features=[FeatureRecord(id="app.py:run:loop:1", kind="loop", file="app.py", line=7, qualname="run",
                                snippet="for i in range(n):", detail="for", metrics=["cpu_s"], cost_s=0.001,
                                cost_fraction=0.005, source={"first_line": 5, "highlight": [7, 7], "lines": ["x"]})],
        verdicts={"app.py:run:loop:1": {"status": "cheap", "cost_s": 0.001}}, ceiling={"cpu_s": {"median_rel_error": 0.03}},
        evaluator=EvaluatorRecord(features=["app.py:run:loop:1"], statements_kept=4, statements_total=20, files=1,
                                  cost=[{"input_id": "i2", "evaluator_s": 0.001, "actual_s": 0.2, "fraction": 0.005}],
                                  median_fraction=0.005, max_fraction=0.006, median_s=0.001, warm_startup_s=0.1,
                                  fidelity={"inputs": 6, "features": 1, "agreed": 6}),
        build_id="0123456789abcdef", build_seconds=12.5)


def test_round_trip_through_json(tmp_path):
    record = sample()
    assert BuildRecord.from_dict(json.loads(record.to_json())) == record
    record.save(tmp_path / "build.json")
    assert BuildRecord.load(tmp_path) == record == BuildRecord.load(tmp_path / "build.json")
    assert record.noise_floor("cpu_s") == 0.02 and record.noise_floor("wall_s") is None


def test_a_bare_version_1_record_reads_with_empty_parts():
    record = BuildRecord.from_dict({"format": "mantispy-build", "version": 1})
    assert record.metrics == {} and record.evaluator is None and record.machine is None and record.rounds == []


@pytest.mark.parametrize("change, field", [
    (lambda d: d.update(name=5), "name"),
    (lambda d: d["options"].update(train_fraction="half"), "options.train_fraction"),
    (lambda d: d["campaign"].update(inputs=2.5), "campaign.inputs"),
    (lambda d: d["metrics"]["cpu_s"].update(model=[1]), "metrics.cpu_s.model"),
    (lambda d: d["features"][0].update(line="7"), "features[0].line"),
    (lambda d: d["evaluator"].update(features="app.py:run:loop:1"), "evaluator.features"),
    (lambda d: d["metrics"]["cpu_s"]["validation"].update(median_rel_error=math.nan), "build.metrics.cpu_s.validation.median_rel_error"),
    (lambda d: d["evaluator"]["cost"][0].update(fraction=math.inf), "build.evaluator.cost[0].fraction"),
    (lambda d: d.update(verdicts={"f": 3}), "verdicts.f"),
])
def test_a_wrong_field_is_named_in_one_line(change, field):
    data = sample().to_dict()
    change(data)
    with pytest.raises(BuildRecordError) as info:
        BuildRecord.from_dict(data, "out/build.json")
    message = str(info.value)
    assert message.startswith("out/build.json: ") and f"field {field}" in message, message
    assert "\n" not in message and "mantispy build" in message


def test_unknown_versions_and_formats_are_refused():
    with pytest.raises(BuildRecordError, match="version 2 is not supported .* upgrade mantispy"):
        BuildRecord.from_dict({"format": "mantispy-build", "version": 2})
    with pytest.raises(BuildRecordError, match="not a mantispy build"):
        BuildRecord.from_dict({"format": "mantispy-model", "version": 1})


def test_writing_a_non_finite_number_fails_instead_of_writing_nan():
    record = sample()
    record.metrics["cpu_s"].validation["median_rel_error"] = math.nan
    with pytest.raises(ValueError):
        record.to_json()


PATHS = [p for p in json_paths(sample().to_dict()) if p]


@settings(max_examples=300, deadline=None)
@given(path=st.sampled_from(PATHS), value=odd_json_values())
def test_any_mutation_reads_back_or_fails_in_one_line(path, value):
    data = mutated(sample().to_dict(), path, value)
    try:
        record = BuildRecord.from_dict(data)
    except BuildRecordError as exc:
        assert "\n" not in str(exc) and str(exc).startswith("build.json: ")
        return
    assert BuildRecord.from_dict(record.to_dict()) == record  # what was accepted is a record like any other


def test_the_fidelity_line_says_what_each_kind_of_feature_was_checked_against():
    """A build whose only features were content features printed "evaluator: none" and then "evaluator
    fidelity: 56 of 56 feature values agree with the instrumented program": content counts are checked
    against the build's own counts, and there was no evaluator."""
    from mantispy.build_record import EvaluatorRecord
    from mantispy.cli_build import fidelity_line

    content_only = EvaluatorRecord(fidelity={"inputs": 56, "features": 1, "mismatches": [], "mismatch_count": 0,
                                             "agreed": 56, "content_features": ["content:a.py:3:regex#1"],
                                             "sampled_features": []})
    assert fidelity_line(content_only) == ("fidelity on 56 held-out input(s): 56 of 56 content-feature counts agree "
                                           "with the build's")
    mixed = EvaluatorRecord(fidelity={"inputs": 10, "features": 3, "mismatch_count": 2, "agreed": 28,
                                      "mismatches": [{"feature": "a.py:f:loop:1"}, {"feature": "sampled:a.py:f:loop:2"}],
                                      "content_features": ["content:a.py:3:regex#1"],
                                      "sampled_features": ["sampled:a.py:f:loop:2"]},
                            failures=[{"input_id": "x"}])
    assert fidelity_line(mixed) == ("fidelity on 10 held-out input(s): 9 of 10 evaluator values agree with the "
                                    "instrumented program; 10 of 10 content-feature counts agree with the build's; "
                                    "9 of 10 sampled-feature values agree with the build's; 1 input(s) failed")
    truncated = EvaluatorRecord(fidelity={"inputs": 10, "features": 10, "mismatch_count": 60, "agreed": 40,
                                          "mismatches": [{"feature": "a.py:f:loop:1"}] * 50})
    assert fidelity_line(truncated) == "fidelity: 40 of 100 feature values agree on 10 held-out input(s)"
    assert fidelity_line(EvaluatorRecord()) == "fidelity on 0 held-out input(s): no feature to check"
