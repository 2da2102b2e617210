"""Hardening (issue 19): exit statuses (0 success, 1 failed, 2 bad usage or input), one line and no
traceback unless --debug, and no writer that destroys the program, its spec or a file mantispy did not write.
Each test failed on the main before the fix it checks."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mantispy import cli as cli_module
from mantispy.outputs import REPORT_MARK

HERE = Path(__file__).resolve().parent
BATCHJOB = HERE / "programs" / "batchjob"
CLI = [sys.executable, "-m", "mantispy"]


def run(*args, cwd=None, timeout=300):
    return subprocess.run([*CLI, *map(str, args)], capture_output=True, text=True, cwd=cwd, timeout=timeout)


def campaign(folder: Path, program: str, spec: str, name: str = "a.py") -> Path:
    """``folder/prog/NAME`` holding ``program`` and ``folder/s.toml`` holding ``spec``; returns the spec."""
    (folder / "prog").mkdir()
    (folder / "prog" / name).write_text(program)
    (folder / "s.toml").write_text(spec)
    return folder / "s.toml"


def one_line(proc) -> str:
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    return lines[0]


@pytest.fixture
def batchjob(tmp_path):
    shutil.copytree(BATCHJOB, tmp_path / "batchjob")
    return tmp_path / "batchjob"


# ----------------------------------------------------------------------------------------------------
# exit statuses and tracebacks


def test_bad_input_exits_2_in_one_line(tmp_path):
    proc = run("runs", "--store", tmp_path / "absent.db")
    assert proc.returncode == 2 and one_line(proc).startswith("mantispy: error: ")
    usage = run("build")  # click's own usage error: also 2, and one line too (it was four: usage, hint, blank, error)
    assert usage.returncode == 2 and one_line(usage).startswith("mantispy: error: ") and "mantispy build --help" in usage.stderr
    out_of_range = run("check", "1", "--model", tmp_path / "m.json", "--shortfall-cover", "2")
    assert out_of_range.returncode == 2 and "'--shortfall-cover': 2.0 is not in the range" in one_line(out_of_range)
    negative = run("check", "1", "--model", tmp_path / "m.json", "--excess-cover", "-1")
    assert negative.returncode == 2 and "'--excess-cover': -1.0 is not in the range" in one_line(negative)
    unknown = run("runs", "--no-such-option")
    assert unknown.returncode == 2 and "--no-such-option" in one_line(unknown) and unknown.stdout == ""


def test_an_internal_error_is_one_line_unless_debug(monkeypatch, capsys, tmp_path):
    def broken(*_args, **_kwargs):
        raise RuntimeError("boom\nsecond line")

    monkeypatch.setattr("mantispy.report.write_report", broken)
    monkeypatch.setenv("MANTISPY_DEBUG", "0")  # and restored after the test: --debug sets it in this process
    monkeypatch.setattr(sys, "argv", ["mantispy", "report", str(tmp_path)])
    with pytest.raises(SystemExit) as info:
        cli_module.main()
    assert info.value.code == 1
    err = capsys.readouterr().err
    assert err.strip().splitlines() == ["mantispy: internal error: RuntimeError: boom second line (run again with "
                                        "--debug for the traceback)"]
    monkeypatch.setattr(sys, "argv", ["mantispy", "--debug", "report", str(tmp_path)])
    with pytest.raises(RuntimeError, match="boom"):
        cli_module.main()


def test_a_program_nested_too_deep_for_the_slicer_is_named_in_one_line(tmp_path):
    src = tmp_path / "deep"
    src.mkdir()
    (src / "deep.py").write_text("X = " + "+".join(["1"] * 1000) + "\n\n\ndef f(n):\n    total = 0\n"
                                 "    for i in range(n):\n        total += i\n    return total\n")
    (src / "main.py").write_text("import sys\n\nimport deep\n\nprint(deep.f(int(sys.argv[1])))\n")
    proc = run("slice", src, "--entry", "main.py", "--feature", "deep.py:f:loop:1")
    assert proc.returncode == 2
    assert "deep.py: nested 1002 levels deep, deeper than the slicer can follow" in one_line(proc)


# ----------------------------------------------------------------------------------------------------
# writers never destroy what they did not write


@pytest.mark.parametrize("where", ["source", "ancestor", "inside", "spec-folder-parent"])
def test_build_never_writes_over_the_program(batchjob, where):
    before = sorted(p.relative_to(batchjob) for p in batchjob.rglob("*"))
    out = {"source": batchjob / "app", "ancestor": batchjob, "inside": batchjob / "app" / "predictor",
           "spec-folder-parent": batchjob.parent}[where]
    proc = run("build", batchjob / "campaign.toml", "-o", out, "--force")
    assert proc.returncode == 2, proc.stderr
    assert "never writes over it" in one_line(proc) or "writes nothing there" in one_line(proc)
    assert sorted(p.relative_to(batchjob) for p in batchjob.rglob("*")) == before


def test_build_refuses_a_folder_it_did_not_write_even_with_force(batchjob, tmp_path):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("user data")
    proc = run("build", batchjob / "campaign.toml", "-o", out, "--force")
    assert proc.returncode == 2 and "not empty and not an earlier predictor" in one_line(proc)
    assert (out / "notes.txt").read_text() == "user data"


def test_report_replaces_only_an_earlier_report(tmp_path):
    build = tmp_path / "pred"
    build.mkdir()
    (build / "build.json").write_text('{"format": "mantispy-build", "version": 1, "name": "x"}')
    mine = tmp_path / "notes.html"
    mine.write_text("<html>my notes</html>")
    proc = run("report", build, "-o", mine)
    assert proc.returncode == 2 and "exists and is not an earlier mantispy report" in one_line(proc)
    assert mine.read_text() == "<html>my notes</html>"
    fresh = tmp_path / "report.html"
    assert run("report", build, "-o", fresh).returncode == 0 and REPORT_MARK in fresh.read_text()
    again = run("report", build, "-o", fresh)
    assert again.returncode == 0, again.stderr


def test_export_refuses_existing_files_and_the_store(tmp_path):
    store = tmp_path / "m.db"
    proc = run("export", "--store", store, "-o", store)
    assert proc.returncode == 2 and "is the run store" in one_line(proc)
    existing = tmp_path / "data.csv"
    existing.write_text("precious\n")
    proc = run("export", "--store", store, "-o", existing)
    assert proc.returncode == 2 and "pass --force" in one_line(proc)
    assert existing.read_text() == "precious\n"


def test_fit_does_not_write_over_a_file_that_is_not_a_model(tmp_path):
    target = tmp_path / "model.json"
    target.write_text('{"mine": true}')
    proc = run("fit", "--store", tmp_path / "m.db", "-o", target)
    assert proc.returncode == 2 and "not an earlier model" in one_line(proc)
    assert target.read_text() == '{"mine": true}'


def test_slice_does_not_write_an_evaluator_into_the_program(tmp_path):
    src = tmp_path / "app"
    src.mkdir()
    (src / "main.py").write_text("for i in range(3):\n    pass\n")
    proc = run("slice", src, "--entry", "main.py", "--feature", "main.py:<module>:loop:1", "-o", src / "evaluator")
    assert proc.returncode == 2 and "lies inside the program's source" in one_line(proc)
    assert sorted(p.name for p in src.iterdir()) == ["main.py"]


# ----------------------------------------------------------------------------------------------------
# children never outlive mantispy

HANGING = '''"""Writes its pid, then sleeps (a program that hangs)."""
import os
import sys
import time

with open(sys.argv[1], "w") as handle:
    handle.write(str(os.getpid()))
time.sleep(600)
'''


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie waiting for its reaper is gone for our purpose
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL], ids=["TERM", "INT", "KILL"])
def test_an_interrupted_profile_leaves_no_program_running(tmp_path, signum):
    (tmp_path / "prog").mkdir()
    (tmp_path / "prog" / "hang.py").write_text(HANGING)
    pid_file = tmp_path / "pid"
    (tmp_path / "spec.toml").write_text(
        f'name = "hang"\nsource = "prog"\nentry = "hang.py"\ntimeout = 600\ncalibration_runs = 0\n'
        f'[[inputs.list]]\nid = "a"\nargv = ["{pid_file}"]\n')
    proc = subprocess.Popen([*CLI, "profile", str(tmp_path / "spec.toml"), "--store", str(tmp_path / "m.db")],
                            cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while not (pid_file.exists() and pid_file.read_text()) and time.monotonic() < deadline:
        time.sleep(0.1)
    program = int(pid_file.read_text())
    assert _alive(program)
    proc.send_signal(signum)
    proc.wait(timeout=30)
    deadline = time.monotonic() + 10
    while _alive(program) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(program), f"the program (pid {program}) outlived mantispy ({signum!r})"


# ----------------------------------------------------------------------------------------------------
# silent success on failure


def test_profile_where_every_run_fails_exits_1(tmp_path):
    spec = campaign(tmp_path, "import sys\nfor i in range(3):\n    pass\nsys.exit(3)\n",
                    'name = "crash"\nsource = "prog"\nentry = "crash.py"\ncalibration_runs = 0\n'
                    '[[inputs.list]]\nid = "a"\nargv = []\n[[inputs.list]]\nid = "b"\nargv = ["x"]\n', "crash.py")
    proc = run("profile", spec, "--store", tmp_path / "m.db", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert "every run of campaign 'crash' failed" in proc.stderr.strip().splitlines()[-1]


def test_slice_with_an_entry_function_that_does_not_exist_exits_2(tmp_path):
    src = tmp_path / "app"
    src.mkdir()
    (src / "main.py").write_text("def run():\n    for i in range(3):\n        pass\n")
    proc = run("slice", src, "--entry", "main:nosuchfunc", "--feature", "main.py:run:loop:1")
    assert proc.returncode == 2 and "main.py defines no nosuchfunc" in one_line(proc)
    assert run("slice", src, "--entry", "main:run", "--feature", "main.py:run:loop:1").returncode == 0


LATIN1 = b'# -*- coding: latin-1 -*-\n"""A program in Latin-1 (PEP 263)."""\nimport sys\n\nNAME = "caf\xe9"\n' \
         b'for i in range(int(sys.argv[1])):\n    pass\nprint(NAME)\n'


def test_a_latin1_program_is_instrumented_profiled_and_sliced(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "app.py").write_bytes(LATIN1)
    out = tmp_path / "out"
    proc = run("instrument", src, "-o", out)
    assert proc.returncode == 0 and "1 loop" in proc.stdout, proc.stderr
    features = tmp_path / "f.json"
    ran = run("run", out, "--features-out", features, "--", "app.py", "4")
    assert ran.returncode == 0 and ran.stdout.strip() == "café"
    assert json.loads(features.read_text())["app.py:<module>:loop:1"] == 4
    evaluator = tmp_path / "ev"
    assert run("slice", src, "--entry", "app.py", "--feature", "app.py:<module>:loop:1", "-o", evaluator).returncode == 0
    value = subprocess.run([sys.executable, str(evaluator / "evaluate.py"), "6"], capture_output=True, text=True)
    assert value.stdout.strip() == "6", value.stderr


# ----------------------------------------------------------------------------------------------------
# spec values of the wrong type: one line, exit 2, nothing stored


@pytest.mark.parametrize("line, said", [
    ('timeout = "ten"', "timeout must be a number of seconds"),
    ("timeout = 1e400", "timeout must be a number of seconds"),
    ("metrics = 5", "metrics must be a list of names"),
    ("repeats = 2.5", "repeats must be a whole number"),
    ('name = "../evil"', "names a folder of the work area"),
    ('name = "a/b"', "names a folder of the work area"),
], ids=["timeout-text", "timeout-inf", "metrics-int", "repeats-float", "name-dotdot", "name-slash"])
def test_spec_values_of_the_wrong_type(tmp_path, line, said):
    (tmp_path / "prog").mkdir()
    (tmp_path / "prog" / "a.py").write_text("for i in range(3):\n    pass\n")
    head = "" if line.startswith("name") else 'name = "t"\n'
    (tmp_path / "s.toml").write_text(f'{head}source = "prog"\nentry = "a.py"\n{line}\n[[inputs.list]]\nid = "x"\nargv = []\n')
    proc = run("profile", tmp_path / "s.toml", "--store", tmp_path / "m.db", cwd=tmp_path)
    assert proc.returncode == 2 and said in one_line(proc)
    assert not (tmp_path / "m.db").exists() and not (tmp_path.parent / "evil").exists()


def test_a_spec_that_is_not_utf8_is_one_line(tmp_path):
    (tmp_path / "s.toml").write_bytes(b'name = "caf\xe9"\nsource = "prog"\n')
    proc = run("profile", tmp_path / "s.toml", "--store", tmp_path / "m.db")
    assert proc.returncode == 2 and "not UTF-8" in one_line(proc)


def test_fidelity_with_a_module_function_entry(tmp_path):
    src = tmp_path / "app"
    src.mkdir()
    (src / "main.py").write_text("def run(n=3):\n    for i in range(n):\n        pass\n    return n\n")
    proc = run("fidelity", src, "--entry", "main:run", "--input", '{"n": 4}', "--input", "{}")
    assert proc.returncode == 0, proc.stderr
    assert "main.py:run:loop:1" in proc.stdout and "2 of 2 features sliceable" in proc.stdout
    bad = run("fidelity", src, "--entry", "main:run", "--input", "n=4")
    assert bad.returncode == 2 and "takes its keyword arguments as one JSON object" in one_line(bad)


# ----------------------------------------------------------------------------------------------------
# errors said early, and a program in the spec's own folder


def test_too_few_inputs_for_the_split_is_said_before_anything_runs(tmp_path):
    spec = campaign(tmp_path, "import sys\nfor i in range(int(sys.argv[1])):\n    pass\n",
                    'name = "few"\nsource = "prog"\nentry = "a.py"\n[inputs]\n'
                    'list = [{id = "a", argv = ["1"]}, {id = "b", argv = ["2"]}]\n')
    proc = run("build", spec, "-o", tmp_path / "pred", cwd=tmp_path)
    assert proc.returncode == 2 and "need at least 4 training inputs" in one_line(proc)
    assert not (tmp_path / ".mantis").exists() and not (tmp_path / "pred").exists()  # nothing profiled


def test_a_metric_no_run_stores_is_refused_before_anything_runs(tmp_path):
    """--metric bogus was refused after the whole campaign had been profiled, exit 1."""
    inputs = ", ".join(f'{{id = "i{n}", argv = ["{n}"]}}' for n in range(1, 11))
    spec = campaign(tmp_path, "import sys\nfor i in range(int(sys.argv[1])):\n    pass\n",
                    f'name = "bogus"\nsource = "prog"\nentry = "a.py"\n[inputs]\nlist = [{inputs}]\n')
    proc = run("build", spec, "-o", tmp_path / "pred", "--metric", "cpu", "--metric", "bogus", cwd=tmp_path)
    assert proc.returncode == 2 and "--metric bogus" in one_line(proc)
    assert not (tmp_path / ".mantis").exists() and not (tmp_path / "pred").exists()  # nothing profiled


def test_a_build_says_which_inputs_the_program_failed_on(tmp_path):
    """Two of twelve inputs crash the program: the build went on without them and said nothing."""
    inputs = ", ".join(f'{{id = "i{n}", argv = ["{n * 20000}"]}}' for n in range(1, 11))
    spec = campaign(tmp_path, "import sys\nn = int(sys.argv[1])\nif n < 0:\n    raise RuntimeError('negative size')\n"
                              "total = 0\nfor i in range(n):\n    total += i\nprint(total)\n",
                    f'name = "crashy"\nsource = "prog"\nentry = "a.py"\n[inputs]\nlist = [{inputs}, '
                    '{id = "bad1", argv = ["-1"]}, {id = "bad2", argv = ["-2"]}]\n')
    proc = run("build", spec, "-o", tmp_path / "pred", "--train-fraction", "0.5", "--metric", "cpu_s", cwd=tmp_path,
               timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    said = [line for line in (proc.stdout + proc.stderr).splitlines() if "failed on" in line]
    assert len(said) == 1 and "2 of 12 input(s) (bad1, bad2" in said[0] and "RuntimeError: negative size" in said[0], said


def test_a_program_in_the_specs_own_folder_is_profiled(tmp_path):
    (tmp_path / "a.py").write_text("import sys\nfor i in range(int(sys.argv[1])):\n    pass\n")
    (tmp_path / "s.toml").write_text('name = "dot"\nsource = "."\nentry = "a.py"\ncalibration_runs = 0\n[inputs]\n'
                                     'list = [{id = "a", argv = ["1"]}, {id = "b", argv = ["2"]}]\n')
    proc = run("profile", tmp_path / "s.toml", "--store", tmp_path / "m.db", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == [".mantis", "a.py", "m.db", "s.toml"]


# ----------------------------------------------------------------------------------------------------
# consistency and CLI habits


def test_help_lists_the_verbs_in_pipeline_order_with_whole_summaries():
    text = run("--help").stdout
    verbs = text[text.index("Build and use a predictor:"):]
    order = re.findall(r"^  ([a-z]+) ", verbs, re.M)
    assert order[:4] == ["build", "predict", "report", "calibrate"] and order.index("instrument") < order.index("profile")
    assert order.index("fit") < order.index("slice") and "..." not in verbs  # summaries are whole sentences
    for title in ("Build and use a predictor:", "The pipeline step by step:", "Program analysis:"):
        assert title in text


def test_every_option_of_every_verb_has_help():
    import click

    missing = [f"{name} {param.opts[0]}" for name, command in cli_module.cli.commands.items()
               for param in command.params if isinstance(param, click.Option) and not param.help]
    assert not missing


def test_runs_without_store_finds_the_store_build_wrote(tmp_path):
    from mantispy.store import RunStore

    folder = tmp_path / ".mantis" / "build-work" / "app"
    folder.mkdir(parents=True)
    RunStore(folder / "mantis.db", create=True).close()
    proc = run("runs", cwd=tmp_path)
    assert "using the store mantispy build wrote" in proc.stderr and "no campaign" in proc.stderr
    assert proc.returncode == 2


def test_show_reads_a_predictors_models(tmp_path):
    model = {"format": "mantispy-model", "version": 2, "metric": "cpu_s", "intercept": 0.5,
             "terms": [{"coefficient": 1.0, "factors": [{"feature": "input:arg1", "power": 1}]}],
             "scaling": {"input:arg1": {"min": 1.0, "max": 9.0}}}
    (tmp_path / "models.json").write_text(json.dumps({"format": "mantispy-predictor-models", "version": 1,
                                                      "build_id": "x", "name": "n", "metrics": {"cpu_s": model}}))
    proc = run("show", tmp_path)
    assert proc.returncode == 0 and "== cpu_s" in proc.stdout and "input:arg1" in proc.stdout, proc.stderr


def test_quiet_and_verbose_profile(tmp_path):
    (tmp_path / "prog").mkdir()
    (tmp_path / "prog" / "a.py").write_text("for i in range(3):\n    pass\n")
    (tmp_path / "s.toml").write_text('name = "t"\nsource = "prog"\nentry = "a.py"\ncalibration_runs = 0\n'
                                     '[[inputs.list]]\nid = "x"\nargv = []\n')
    loud = run("profile", tmp_path / "s.toml", "--store", tmp_path / "a.db", "-v", cwd=tmp_path)
    assert loud.returncode == 0 and "mantispy: x #0 instrumented: ok" in loud.stderr
    quiet = run("profile", tmp_path / "s.toml", "--store", tmp_path / "b.db", "-q", cwd=tmp_path)
    assert quiet.returncode == 0 and quiet.stderr == "" and "this call: 1 run(s) executed" in quiet.stdout


def test_a_damaged_store_row_is_one_line(tmp_path):
    import sqlite3

    (tmp_path / "prog").mkdir()
    (tmp_path / "prog" / "a.py").write_text("for i in range(3):\n    pass\n")
    (tmp_path / "s.toml").write_text('name = "t"\nsource = "prog"\nentry = "a.py"\ncalibration_runs = 0\n'
                                     '[[inputs.list]]\nid = "x"\nargv = []\n')
    assert run("profile", tmp_path / "s.toml", "--store", tmp_path / "m.db", "-q", cwd=tmp_path).returncode == 0
    db = sqlite3.connect(tmp_path / "m.db")
    db.execute("UPDATE metrics SET value = 'fast' WHERE name = 'wall_s'")
    db.commit()
    db.close()
    for verb in (["runs"], ["export", "-o", tmp_path / "out.csv"]):
        proc = run(*verb, "--store", tmp_path / "m.db")
        assert proc.returncode == 2 and "a stored row cannot be read" in one_line(proc)


def test_a_watched_run_ends_with_its_parent_even_on_sigkill(tmp_path):
    """Evaluator runs of the cost loop and fidelity go through run_watched: after SIGKILL of the mantispy
    process that started them, the watchdog ends them."""
    (tmp_path / "hang.py").write_text(HANGING)
    pid_file = tmp_path / "pid"
    parent = subprocess.Popen([sys.executable, "-c", "import sys; from mantispy.core.watchdog import run_watched; "
                               "run_watched([sys.executable, sys.argv[1], sys.argv[2]], timeout=600)",
                               str(tmp_path / "hang.py"), str(pid_file)])
    deadline = time.monotonic() + 60
    while not (pid_file.exists() and pid_file.read_text()) and time.monotonic() < deadline:
        time.sleep(0.1)
    child = int(pid_file.read_text())
    parent.kill()
    parent.wait(timeout=30)
    deadline = time.monotonic() + 10
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(child)


# ----------------------------------------------------------------------------------------------------
# an audit's cases (session 51): outputs that replaced the user's files, and internal errors for bad input


@pytest.fixture
def instrumented(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("import sys\nfor i in range(int(sys.argv[1])):\n    pass\nprint('ok')\n")
    assert run("instrument", tmp_path / "src", "-o", tmp_path / "inst").returncode == 0
    return tmp_path / "inst"


def test_run_never_writes_its_features_over_a_file_that_is_not_features(tmp_path, instrumented):
    notes = tmp_path / "notes.txt"
    notes.write_text("precious")
    for backend, target in (("source", instrumented), ("monitor", tmp_path / "src")):
        proc = run("run", target, "--backend", backend, "--features-out", notes, "--", "app.py", "3")
        assert proc.returncode == 2 and "notes.txt" in one_line(proc) and notes.read_text() == "precious", proc.stderr
    earlier = tmp_path / "f.json"
    assert run("run", instrumented, "--features-out", earlier, "--", "app.py", "3").returncode == 0
    again = run("run", instrumented, "--features-out", earlier, "--", "app.py", "5")  # its own earlier output: replaced
    assert again.returncode == 0 and json.loads(earlier.read_text())["app.py:<module>:loop:1"] == 5
    folder = run("run", instrumented, "--features-out", tmp_path, "--", "app.py", "3")
    assert folder.returncode == 2 and "a folder" in one_line(folder)
    python = run("run", instrumented, "--features-out", tmp_path / "g.json", "--python", tmp_path / "nopython", "--",
                 "app.py", "3")
    assert python.returncode == 2 and "nopython" in one_line(python)


def test_run_refuses_an_observed_calls_file_it_cannot_read_and_leaves_no_lock(tmp_path, instrumented):
    notes = tmp_path / "notes.txt"
    notes.write_text("precious")
    proc = run("run", instrumented, "--features-out", tmp_path / "f.json", "--observed-calls", notes, "--", "app.py", "2")
    assert proc.returncode == 2 and "notes.txt" in one_line(proc) and notes.read_text() == "precious"
    calls = tmp_path / "calls.json"
    ok = run("run", instrumented, "--features-out", tmp_path / "f.json", "--observed-calls", calls, "--", "app.py", "2")
    assert ok.returncode == 0 and calls.is_file(), ok.stderr
    assert not list(tmp_path.glob("*.lock")), list(tmp_path.glob("*.lock"))


def test_a_command_that_reads_a_store_leaves_a_file_that_is_not_one_as_it_was(tmp_path):
    empty = tmp_path / "e.json"
    empty.write_bytes(b"")
    for verb in (["runs"], ["export", "-o", tmp_path / "x.csv"], ["recordings"]):
        proc = run(*verb, "--store", empty)
        assert proc.returncode == 2 and "e.json" in one_line(proc), proc.stderr
        assert empty.read_bytes() == b"", verb


def test_outputs_in_a_folder_not_made_yet_and_bad_options_are_said_in_one_line(tmp_path, batchjob):
    app = batchjob / "app"
    cg = run("callgraph", app, "--entry", "job.py", "-o", tmp_path / "new" / "cg.json")
    assert cg.returncode == 0 and (tmp_path / "new" / "cg.json").is_file(), cg.stderr
    nosuch = run("fidelity", app, "--entry", "job.py", "--input", "--size 1", "--feature", "nosuch")
    assert nosuch.returncode == 2 and "nosuch" in one_line(nosuch)
    quote = run("fidelity", app, "--entry", "job.py", "--input", '"unterminated', "--sample", "1")
    assert quote.returncode == 2 and "--input" in one_line(quote)
    (tmp_path / "mine.csv").write_text("mine")
    work = run("build", batchjob / "campaign.toml", "-o", tmp_path / "p", "--train-fraction", "0.8", "--work",
               tmp_path / "mine.csv")
    assert work.returncode == 2 and "mine.csv" in one_line(work) and (tmp_path / "mine.csv").read_text() == "mine"


def test_readers_of_features_models_and_code_say_what_is_wrong_in_one_line(tmp_path, instrumented):
    wrong = tmp_path / "wrong.json"
    for document in ({"app.py:<module>:loop:1": "ten"}, [1, 2]):
        wrong.write_text(json.dumps(document))
        proc = run("features", wrong, "--manifest", instrumented)
        assert proc.returncode == 2 and "wrong.json" in one_line(proc) and "mantispy run" in one_line(proc), proc.stderr
    manifest = run("features", instrumented / ".mantis" / "manifest.json", "--manifest", instrumented)
    assert manifest.returncode == 2 and "not a features file" in one_line(manifest)  # was an empty table, exit 0
    store = tmp_path / "m.db"
    (tmp_path / "prog").mkdir()
    (tmp_path / "prog" / "a.py").write_text("import sys\nfor i in range(int(sys.argv[1]) * 1000):\n    pass\n")
    (tmp_path / "s.toml").write_text('name = "t"\nsource = "prog"\nentry = "a.py"\n[inputs]\nlist = ['
                                     + ", ".join(f'{{ id = "i{n}", argv = ["{n}"] }}' for n in range(1, 13)) + "]\n")
    assert run("profile", tmp_path / "s.toml", "--store", store, "-q").returncode == 0
    assert run("fit", "--store", store, "--train-fraction", "0.5", "--no-sensitivity", "-o", tmp_path / "m.json").returncode == 0
    model = json.loads((tmp_path / "m.json").read_text())
    for field, value in (("features", 5), ("metric", 7), ("aliases", {"x": 3})):
        (tmp_path / "bad.json").write_text(json.dumps({**model, field: value}))
        shown = run("show", tmp_path / "bad.json")  # printed the polynomial, then an internal error
        assert shown.returncode == 2 and f"field {field}" in one_line(shown) and not shown.stdout, shown.stdout
    (tmp_path / "bad.py").write_text("def f(:\n")
    for verb in ("cfg", "pdg"):
        proc = run(verb, tmp_path / "bad.py", "--function", "<module>")
        assert proc.returncode == 2 and "syntax error" in one_line(proc), proc.stderr  # said in two lines
    taken = tmp_path / "taken.json"
    taken.write_text("mine")
    proc = run("fit", "--store", store, "-o", taken)
    assert proc.returncode == 2 and "--force" not in one_line(proc) and taken.read_text() == "mine"  # fit has none


def test_options_that_contradict_each_other_are_refused_before_anything_runs(tmp_path, batchjob):
    spec = batchjob / "campaign.toml"
    for verb in (["profile", spec, "--store", tmp_path / "m.db", "--resume", "--replace"],
                 ["profile", spec, "--store", tmp_path / "m.db", "-q", "-v"],
                 ["build", spec, "-o", tmp_path / "p", "-q", "-v"]):
        proc = run(*verb)
        assert proc.returncode == 2 and "give one" in one_line(proc), (verb, proc.stderr)
    assert not (tmp_path / "m.db").exists() and not (tmp_path / "p").exists()
