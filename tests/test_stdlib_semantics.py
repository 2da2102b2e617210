"""The instrumented program behaves exactly like the original: CPython's own test suites, run against
instrumented copies of pure-Python standard-library modules, give the same per-test outcomes as
against the originals.

For each module: copy its ``.py`` file out of the running interpreter's stdlib, instrument it with the
real CLI (``mantispy instrument``), then run ``test.test_<module>`` twice in fresh interpreters, once
plain and once with the instrumented folder first on ``sys.path`` (features written to a file). Both
interpreters run with ``-S``: the venv's editable-install hook (a ``.pth`` file) imports ``pathlib`` and
through it ``urllib.parse`` and ``ipaddress`` at start-up, so with ``site`` the stdlib ``ipaddress``
would always be loaded before the copy under test. Without ``site``, the instrumented run finds
``mantispy.runtime`` through the standalone run-time copy (the one ``mantispy run --python`` uses). A small
driver imports the module under test *before* ``unittest`` (which itself imports ``difflib``), checks
that it came from where it should, runs the test module with a recording ``TestResult`` and prints
``{test id: outcome}`` as JSON. The two maps must be identical.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

MODULES = ["difflib", "textwrap", "fractions", "shlex", "statistics", "ipaddress", "configparser"]

# The driver runs in a fresh interpreter: argv = MODULE EXPECTED_DIR [INSTRUMENTED_DIR]
DRIVER = textwrap.dedent(
    '''
    import os, sys

    name, expected_dir = sys.argv[1], os.path.realpath(sys.argv[2])
    instrumented = sys.argv[3] if len(sys.argv) > 3 else None
    if name in sys.modules:
        sys.stderr.write(f"DRIVER: {name} was already imported at interpreter start "
                         f"(from {getattr(sys.modules[name], '__file__', '?')}); cannot test a copy of it\\n")
        sys.exit(3)
    if instrumented is not None:
        sys.path.insert(0, instrumented)
    import importlib
    module = importlib.import_module(name)  # before unittest, which imports difflib itself
    where = os.path.realpath(os.path.dirname(module.__file__))
    if where != expected_dir:
        sys.stderr.write(f"DRIVER: {name} was imported from {module.__file__}, expected a file in {expected_dir}\\n")
        sys.exit(4)
    if instrumented is not None and not hasattr(module, "_mantis_rt"):
        sys.stderr.write(f"DRIVER: {module.__file__} is not instrumented (no _mantis_rt)\\n")
        sys.exit(5)

    import io, json, traceback, unittest

    class Recorder(unittest.TestResult):
        def __init__(self):
            super().__init__()
            self.outcomes = {}
            self.details = {}

        def _put(self, test, outcome, err=None):
            key, n = test.id(), 1
            while key in self.outcomes:  # the same id reported twice (e.g. a class-level error holder)
                n += 1
                key = f"{test.id()} #{n}"
            self.outcomes[key] = outcome
            if err is not None:
                self.details[key] = "".join(traceback.format_exception(*err))[-3000:]

        def addSuccess(self, test):
            super().addSuccess(test)
            self._put(test, "pass")

        def addFailure(self, test, err):
            super().addFailure(test, err)
            self._put(test, "fail", err)

        def addError(self, test, err):
            super().addError(test, err)
            self._put(test, "error", err)

        def addSkip(self, test, reason):
            super().addSkip(test, reason)
            self._put(test, "skip")

        def addExpectedFailure(self, test, err):
            super().addExpectedFailure(test, err)
            self._put(test, "expected-failure")

        def addUnexpectedSuccess(self, test):
            super().addUnexpectedSuccess(test)
            self._put(test, "unexpected-success")

        def addSubTest(self, test, subtest, err):
            super().addSubTest(test, subtest, err)
            if err is not None:
                kind = "fail" if issubclass(err[0], test.failureException) else "error"
                self._put(subtest, kind, err)

    suite = unittest.defaultTestLoader.loadTestsFromName(f"test.test_{name}")
    result = Recorder()
    # Tests print to stdout/stderr now and then; keep stdout clean for the JSON.
    real_stdout = sys.stdout
    sys.stdout = io.StringIO()
    try:
        suite.run(result)
    finally:
        sys.stdout = real_stdout
    print("MANTIS-OUTCOMES " + json.dumps({"file": module.__file__, "testsRun": result.testsRun,
                                           "outcomes": result.outcomes, "details": result.details}))
    '''
)


def _mantispy_cli() -> list[str]:
    script = Path(sys.executable).with_name("mantispy")
    return [str(script)] if script.exists() else [sys.executable, "-m", "mantispy"]


def _clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MANTIS_") and k != "PYTHONPATH"}
    env.update(extra)
    return env


def _run_driver(driver: Path, name: str, expected_dir: Path, env: dict[str, str], instrumented: Path | None, cwd: Path) -> dict:
    argv = [sys.executable, "-S", str(driver), name, str(expected_dir)]
    if instrumented is not None:
        argv.append(str(instrumented))
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=cwd, timeout=300)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("MANTIS-OUTCOMES ")]
    assert proc.returncode == 0 and lines, (
        f"driver for {name} ({'instrumented' if instrumented else 'plain'}) failed with status {proc.returncode}\n"
        f"stdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-5000:]}"
    )
    return json.loads(lines[-1][len("MANTIS-OUTCOMES "):])


@pytest.mark.parametrize("name", MODULES)
def test_stdlib_suite_unchanged_by_instrumentation(name: str, tmp_path: Path) -> None:
    if importlib.util.find_spec(f"test.test_{name}") is None:
        pytest.skip(f"this interpreter ships without CPython's test package (test.test_{name})")
    module = importlib.import_module(name)
    source_file = Path(inspect.getsourcefile(module))
    stdlib_dir = source_file.parent
    src, out = tmp_path / "src", tmp_path / "out"
    src.mkdir()
    shutil.copy2(source_file, src / source_file.name)

    proc = subprocess.run(
        [*_mantispy_cli(), "instrument", str(src), "-o", str(out)],
        capture_output=True, text=True, env=_clean_env(), timeout=300,
    )
    assert proc.returncode == 0, f"mantispy instrument failed:\n{proc.stdout}\n{proc.stderr}"
    instrumented_file = out / source_file.name
    assert "_mantis_rt" in instrumented_file.read_text(), "the output file carries no instrumentation"

    manifest = json.loads((out / ".mantis" / "manifest.json").read_text())
    record = next(f for f in manifest["files"] if f["path"] == source_file.name)
    assert record["status"] == "instrumented", record
    print(f"{name}: {record['lines']} lines, shifted_lines={record['shifted_lines']}, "
          f"{len(manifest['features'])} features")

    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER)
    run_dir = tmp_path / "cwd"  # tests may write scratch files into the current folder
    run_dir.mkdir()
    plain = _run_driver(driver, name, stdlib_dir, _clean_env(), None, run_dir)

    from mantispy.standalone_runtime import standalone_runtime_dir

    runtime_dir = standalone_runtime_dir(tmp_path / "runtime")
    features_out = tmp_path / "features.json"
    env = _clean_env(MANTIS_FEATURES_OUT=str(features_out), PYTHONPATH=os.pathsep.join([str(out), str(runtime_dir)]))
    instrumented = _run_driver(driver, name, out, env, out, run_dir)

    assert plain["testsRun"] > 0 and plain["outcomes"], f"test.test_{name} ran no tests"
    if plain["outcomes"] != instrumented["outcomes"]:
        a, b = plain["outcomes"], instrumented["outcomes"]
        lines = []
        for key in sorted(set(a) | set(b)):
            if a.get(key) != b.get(key):
                lines.append(f"{key}: plain={a.get(key)} instrumented={b.get(key)}")
                for label, run in (("plain", plain), ("instrumented", instrumented)):
                    if key in run["details"]:
                        lines.append(textwrap.indent(f"[{label}]\n{run['details'][key]}", "    "))
        pytest.fail(f"test.test_{name}: {len(lines)} outcome difference(s) under instrumentation:\n" + "\n".join(lines))
    assert plain["testsRun"] == instrumented["testsRun"]

    assert features_out.exists(), "the instrumented run wrote no features file (instrumentation silently off?)"
    features = json.loads(features_out.read_text())
    assert isinstance(features, dict) and features, "the features file is empty"
    own = [fid for fid in features if fid.startswith(f"{source_file.name}:")]
    assert own, f"no feature of {source_file.name} in the features file"
    print(f"{name}: {plain['testsRun']} tests, identical outcomes; {len(own)} non-zero features")
