"""The kits: the modules every evaluator and predictor package carries are real modules, copied verbatim,
with the run-time's value rules; the one generated file of each holds literals only."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
import threading
import types
from pathlib import Path

import pytest

from mantispy import package_kit
from mantispy.modeling import evaluation
from mantispy.runtime import values
from mantispy.slicer import kit
from mantispy.slicer.emit import emit_slice
from mantispy.slicer.evaluators import EvaluatorError, SliceSession, run_evaluator

PROGRAM = '''"""Sums the squares below N."""
import sys


def main(argv):
    n = int(argv[0])
    total = 0
    for i in range(n):
        total += i * i
    print(total)


if __name__ == "__main__":
    main(sys.argv[1:])
'''


@pytest.fixture
def counters(monkeypatch):
    """The kit's counters module imported from mantispy's source, with a build of two counters and one
    variable (k=2) standing in for ``_mantis_build`` and the run-time's values module for ``_mantis_values``."""
    build = types.ModuleType("_mantis_build")
    build.FEATURES = (("f.py:main:loop:1", 0, None), ("f.py:main:value:n#1", 1, 1), ("f.py:main:value:n#2", 1, 2))
    build.SLOTS, build.K = 2, 2
    monkeypatch.setitem(sys.modules, "_mantis_build", build)
    monkeypatch.setitem(sys.modules, "_mantis_values", values)
    monkeypatch.delitem(sys.modules, "mantispy.slicer.kit.counters", raising=False)
    module = importlib.import_module("mantispy.slicer.kit.counters")
    yield module
    module.uninstall()
    sys.modules.pop("mantispy.slicer.kit.counters", None)


def test_counters_tick_record_and_reset(counters):
    ticks, step, guards, record = counters.register()
    for _ in range(3):
        step(ticks[0])
    for value in ("abc", 7, 9, 11):  # a str is recorded as its length; only the first K=2 per thread
        guards[1] and record(1, value)
    assert counters.values() == {"f.py:main:loop:1": 3, "f.py:main:value:n#1": 3, "f.py:main:value:n#2": 7}
    assert guards[1] is False  # the only thread has its K values: the probe stops calling
    counters.reset()
    assert counters.values() == {"f.py:main:loop:1": 0, "f.py:main:value:n#1": 0, "f.py:main:value:n#2": 0}


def test_a_deducted_counter_is_its_count_less_the_taken_slots(monkeypatch):
    """An else arm the profile derives: its chain's entries (slot 0) less its arms taken (slot 1); an
    evaluator written before deductions existed (no DEDUCTIONS) counts every slot plainly."""
    build = types.ModuleType("_mantis_build")
    build.FEATURES = (("f.py:g:branch:3", 0, None),)
    build.SLOTS, build.K, build.DEDUCTIONS = 2, 2, {0: 1}
    monkeypatch.setitem(sys.modules, "_mantis_build", build)
    monkeypatch.setitem(sys.modules, "_mantis_values", values)
    monkeypatch.delitem(sys.modules, "mantispy.slicer.kit.counters", raising=False)
    module = importlib.import_module("mantispy.slicer.kit.counters")
    try:
        ticks, step, _, _ = module.register()
        for _ in range(5):
            step(ticks[0])
        for _ in range(2):
            step(ticks[1])
        assert module.values() == {"f.py:g:branch:3": 3}
    finally:
        sys.modules.pop("mantispy.slicer.kit.counters", None)
    del build.DEDUCTIONS
    module = importlib.import_module("mantispy.slicer.kit.counters")
    try:
        ticks, step, _, _ = module.register()
        step(ticks[0])
        step(ticks[1])
        assert module.values() == {"f.py:g:branch:3": 1}
    finally:
        sys.modules.pop("mantispy.slicer.kit.counters", None)


def test_counters_average_a_version_over_threads_without_overflow(counters):
    """The evaluator's mean is the run-time's: two threads that each saw the largest float average to it
    (the old template's own mean overflowed here)."""
    counters.install()
    _, _, _, record = counters.register()
    big = sys.float_info.max

    def run():
        record(1, big)

    workers = [threading.Thread(target=run) for _ in range(2)]
    for worker in workers:
        worker.start()
        worker.join()
    assert counters.values()["f.py:main:value:n#1"] == big


def test_counters_give_a_variable_up_after_4k_unrecordable_values(counters):
    _, _, guards, record = counters.register()
    for _ in range(4 * 2 - 1):
        record(1, object())
    assert guards[1] is True
    record(1, object())
    assert guards[1] is False
    assert counters.values()["f.py:main:value:n#1"] == 0


def test_mean_is_one_rule_for_runtime_and_evaluators():
    assert values.mean([]) is None
    assert values.mean([2, 4]) == 3 and type(values.mean([2, 4])) is int
    assert values.mean([1, 2]) == 1.5
    assert values.mean([float("nan"), 3.0]) == 3.0
    assert values.mean([sys.float_info.max] * 3) == sys.float_info.max


def test_build_constants_are_literals_that_read_back():
    constants = kit.BuildConstants(features=(("a.py:f:call", 0, None), ("a.py:f:value:x#2", 1, 2)), k=5,
                                   entry="-m app", root_parts=("src",), modules=("app", "app.core"), preload=("argparse",))
    text = constants.source()
    tree = ast.parse(text)
    assert all(isinstance(node, (ast.Assign, ast.Expr)) for node in tree.body)  # the docstring and assignments
    namespace: dict = {}
    exec(compile(text, "_mantis_build.py", "exec"), namespace)
    assert namespace["FEATURES"] == constants.features and namespace["SLOTS"] == 2 and namespace["K"] == 5
    assert namespace["ENTRY"] == "-m app" and namespace["ROOT_PARTS"] == ("src",)
    assert namespace["MODULES"] == ("app", "app.core") and namespace["PRELOAD"] == ("argparse",)
    assert namespace["DEDUCTIONS"] == {}
    deducting = kit.BuildConstants(features=(("a.py:f:branch:2", 0, None),), k=5, entry="a.py", root_parts=(),
                                   modules=("a",), preload=(), deductions=((0, 1),))
    namespace = {}
    exec(compile(deducting.source(), "_mantis_build.py", "exec"), namespace)
    assert namespace["DEDUCTIONS"] == {0: 1} and namespace["SLOTS"] == 2


def test_package_constants_are_literals_that_read_back():
    constants = package_kit.PackageConstants(name="demo", created="2026-11-24T00:00:00", build_id="abc123",
                                             entry="app.py", entry_kind="argv", metrics=("cpu_s",),
                                             features=("app.py:main:loop:1",), inputs=("input:arg1",))
    namespace: dict = {}
    exec(compile(constants.source(), "_build.py", "exec"), namespace)
    assert (namespace["NAME"], namespace["BUILD_ID"], namespace["ENTRY_KIND"]) == ("demo", "abc123", "argv")
    assert namespace["METRICS"] == ("cpu_s",) and namespace["INPUTS"] == ("input:arg1",)


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            found.add("." if node.level else (node.module or "").split(".")[0])
    return found


@pytest.mark.parametrize("copied", [*kit.COPIED.values(), *package_kit.COPIED.values()], ids=lambda p: p.name)
def test_copied_modules_import_only_the_standard_library_and_their_kit(copied):
    kit_names = {"_mantis_build", "_mantis_values", "_mantis_eval", "_mantis_guard", "_mantis_confine", "."}
    outside = {name for name in _imports(copied) - kit_names if name not in sys.stdlib_module_names}
    assert not outside, f"{copied} imports {outside}"


def test_evaluator_folder_carries_the_kit_verbatim_and_answers_in_json(tmp_path):
    src = tmp_path / "app"
    src.mkdir()
    (src / "squares.py").write_text(PROGRAM, encoding="utf-8")
    session = SliceSession(src, "squares.py")
    loop = next(fid for fid, f in session.features.items() if f["kind"] == "loop")
    out = tmp_path / "evaluator"
    report = emit_slice(session.program, session.slice(loop), out)
    for name, module_file in kit.COPIED.items():
        assert (out / name).read_bytes() == module_file.read_bytes()
    assert set(kit.FILES) <= set(report.files)

    found, _ = run_evaluator(out, ["6"], cwd=tmp_path)
    assert found == {loop: 6.0}
    with pytest.raises(EvaluatorError, match=r"^evaluator fails: ValueError: invalid literal for int"):
        run_evaluator(out, ["abc"], cwd=tmp_path)
    proc = subprocess.run([sys.executable, str(out / "evaluate.py"), "--mantis-json", "abc"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 3
    assert proc.stderr.splitlines() == [kit.ERROR_PREFIX + "ValueError: invalid literal for int() with base 10: 'abc'"]
    plain = subprocess.run([sys.executable, str(out / "evaluate.py"), "4"], cwd=tmp_path, capture_output=True,
                           text=True, timeout=60)
    assert plain.stdout.strip() == "4"


def test_model_module_is_the_modeling_evaluation_verbatim():
    assert package_kit.COPIED["_model.py"].read_bytes() == Path(evaluation.__file__).read_bytes()
    model = {"intercept": 1.0, "scaling": {"x": {"min": 0.0, "max": 2.0}},
             "terms": [{"coefficient": 4.0, "factors": [{"feature": "x", "power": 2}]}], "interval": {"low": 0.5, "high": 2}}
    assert evaluation.predict(model, {"x": 1.0}) == 2.0
    assert evaluation.interval(model, 2.0) == (1.0, 4.0)
