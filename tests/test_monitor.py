"""The bytecode backend (issue 24): the same counts under the same feature ids as the source backend,
with the program left as it is: tricky constructs, standard-library modules under their own CPython
tests, a PyPI package; on 3.11 (sys.settrace), 3.12 and 3.13 (sys.monitoring) where pyenv has them."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mantispy.monitoring.plan import build_plan
from tests.helpers import MANTISPY, read_mutated
from tests.test_python_versions import PROGRAM as VERSIONS_PROGRAM
from tests.test_python_versions import interpreter

VERSIONS = ["3.11", "3.12", "3.13"]

CONSTRUCTS = '''
import functools, contextlib


def deco(f):
    @functools.wraps(f)
    def inner(*a, **k):
        return f(*a, **k)
    return inner


@deco
def decorated(n):
    return n if n < 2 else decorated(n - 1) + 1


class Box:
    sizes = [n * 2 for n in range(4) if n]

    @property
    def size(self):
        return 3

    def last(self, items):
        if items:
            return items[-1]


def finally_paths(n):
    out = 0
    for i in range(n):
        try:
            if i == 3:
                continue
            if i == 7:
                break
            out += i
        finally:
            if i % 2:
                out += 1
    else:
        out -= 1
    return out


def spin(n):
    if n > 0:
        while True:
            n -= 1
            if n < 3:
                break
    k = 0
    while k < n:
        k += 1
    else:
        k = -k
    return k


def choose(x):
    match x:
        case [a, b] if a > b:
            return "pair-desc"
        case [a, b]:
            return "pair"
        case {"k": v}:
            return v
        case _:
            return None


def lambdas(items):
    key = lambda v: -v if v % 2 else v
    pick = (lambda a: a + 1, lambda b: b * 2)
    return sorted(items, key=key), [pick[i % 2](i) for i in items]


def gen(n):
    for i in range(n):
        received = yield i
        if received:
            yield -i


@contextlib.contextmanager
def managed(log):
    log.append("in")
    try:
        yield log
    except KeyError:
        log.append("handled")
    finally:
        log.append("out")


def handlers(values):
    total = 0
    for v in values:
        try:
            total += 10 // v
        except ZeroDivisionError:
            total -= 1
        except TypeError as exc:
            total -= len(str(exc)) > 0
        else:
            total += 1
    return total


def nested(n):
    def helper(k):
        return [j for j in range(k) if j % 3 == 0 or j % 5 == 0]
    return sum(len(helper(i)) for i in range(n))


def in_a_raw_thread(n, out, done):
    total = 0
    for i in range(n):
        total += i if i % 2 else 1
    out.append(total)
    done.release()


if False:
    never = 1
import os
for key in os.environ:  # the same environment under both backends (networkx counts it)
    pass
g = gen(5)
print(next(g), g.send(True), next(g), list(g))
with managed([]) as log:
    pass
try:
    with managed(log):
        raise KeyError("k")
except KeyError:
    pass
print(decorated(6), Box().size, Box().last([]), Box().last([1, 2]), Box.sizes)
print(finally_paths(10), spin(8), spin(0), [choose(x) for x in ([2, 1], [1, 2], {"k": 5}, 7)])
print(lambdas([3, 1, 2]), handlers([1, 0, "x", 5]), nested(12), log)
import _thread  # a thread threading does not start (3.11's fallback left it uncounted)
raw, finished = [], _thread.allocate_lock()
finished.acquire()
_thread.start_new_thread(in_a_raw_thread, (7, raw, finished))
finished.acquire()  # no polling loop: its count would be the scheduler's
print(raw)
'''


def _run(args: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*MANTISPY, *args], capture_output=True, text=True, timeout=600, cwd=cwd)


def _counts(path: Path) -> dict[str, int]:
    return {k: v for k, v in json.loads(path.read_text()).items() if ":value:" not in k}


def both_backends(src: Path, invocation: list[str], tmp_path: Path, python: str | None) -> tuple[dict, dict, str, str]:
    """Counts and output of the instrumented copy (source backend) and of ``src`` left as it is."""
    out = tmp_path / "instrumented"
    if not out.exists():
        made = _run(["instrument", str(src), "-o", str(out), "--only", "loops,branches,calls,exceptions", "--skip-errors"])
        assert made.returncode == 0, made.stderr
    extra = ["--python", python] if python else []
    source = _run(["run", str(out), "--features-out", str(tmp_path / "source.json"), *extra, "--", *invocation])
    assert source.returncode == 0, source.stderr[-2000:]
    monitored = _run(["run", str(src), "--backend", "monitor", "--features-out", str(tmp_path / "monitor.json"), *extra,
                      "--", *invocation])
    assert monitored.returncode == 0, monitored.stderr[-2000:]
    return _counts(tmp_path / "source.json"), _counts(tmp_path / "monitor.json"), source.stdout, monitored.stdout


def _python(version: str) -> str | None:
    """None: the running interpreter (3.11); else a pyenv one (the test skips when absent)."""
    if version == f"{sys.version_info.major}.{sys.version_info.minor}":
        return None
    found = interpreter(version)
    if found is None:
        pytest.skip(f"no CPython {version} under pyenv on this machine")
    return found


def _differences(source: dict, monitored: dict) -> dict:
    return {k: (source.get(k), monitored.get(k)) for k in sorted(set(source) | set(monitored)) if source.get(k) != monitored.get(k)}


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("program", ["constructs", "versions"])
def test_both_backends_count_the_same_on_tricky_constructs(tmp_path, version, program):
    python = _python(version)
    src = tmp_path / "src"
    src.mkdir()
    (src / "prog.py").write_text(textwrap.dedent(CONSTRUCTS if program == "constructs" else VERSIONS_PROGRAM))
    source, monitored, out_source, out_monitored = both_backends(src, ["prog.py"], tmp_path, python)
    assert out_monitored == out_source
    assert len(source) > 10 and _differences(source, monitored) == {}


def test_both_backends_count_the_same_on_the_test_programs(tmp_path):
    batch = Path(__file__).parent / "programs" / "batchjob" / "app"
    source, monitored, _, _ = both_backends(batch, ["job.py", "--size", "40", "--queries", "6", "--mode", "scan"],
                                            tmp_path, None)
    assert source and _differences(source, monitored) == {}


STDLIB = ["textwrap", "shlex", "difflib"]
STDLIB_DRIVER = '''
import os, sys, unittest
import {name}
assert os.path.dirname(os.path.realpath({name}.__file__)) == os.path.dirname(os.path.realpath(__file__)), {name}.__file__
suite = unittest.defaultTestLoader.loadTestsFromName("test.test_{name}")
result = unittest.TextTestRunner(stream=open(os.devnull, "w"), verbosity=0).run(suite)
print("{name}", result.testsRun, len(result.failures), len(result.errors))
'''


@pytest.mark.parametrize("version", VERSIONS)
def test_both_backends_count_the_same_on_standard_library_modules_under_their_tests(tmp_path, version):
    """Copies of pure-Python stdlib modules, each driven by CPython's own test module for it."""
    python = _python(version)
    executable = python or sys.executable
    stdlib = subprocess.run([executable, "-c", "import sysconfig; print(sysconfig.get_paths()['stdlib'])"],
                            capture_output=True, text=True, check=True).stdout.strip()
    src = tmp_path / "src"
    src.mkdir()
    for name in STDLIB:
        shutil.copy(Path(stdlib) / f"{name}.py", src / f"{name}.py")
        (src / f"drive_{name}.py").write_text(STDLIB_DRIVER.format(name=name))
    for name in STDLIB:
        work = tmp_path / name
        work.mkdir()
        source, monitored, out_source, out_monitored = both_backends(src, [f"drive_{name}.py"], work, python)
        assert out_monitored == out_source and f"{name} " in out_source
        assert len([k for k in source if k.startswith(f"{name}.py")]) > 30, name
        assert _differences(source, monitored) == {}, name


def test_both_backends_count_the_same_on_a_pypi_package(tmp_path):
    """sqlparse (a test dependency) copied next to a small driver, as the benchmark suite runs it."""
    spec = importlib.util.find_spec("sqlparse")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("sqlparse is not installed")
    src = tmp_path / "src"
    shutil.copytree(Path(next(iter(spec.submodule_search_locations))), src / "sqlparse",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (src / "drive.py").write_text(textwrap.dedent('''
        import sqlparse
        text = "select a, b from t where x = 1 and y in (select z from u); insert into t values (1, 'x');" * 20
        for statement in sqlparse.parse(text):
            print(len(str(statement)), statement.get_type())
        print(sqlparse.format(text[:300], reindent=True, keyword_case="upper")[:200])
        '''))
    source, monitored, out_source, out_monitored = both_backends(src, ["drive.py"], tmp_path, None)
    assert out_monitored == out_source
    assert len(source) > 200 and _differences(source, monitored) == {}
    # the installed package itself, counted on request: the same ids as the copy's
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copy(src / "drive.py", alone / "drive.py")
    installed = _run(["run", str(alone), "--backend", "monitor", "--include", "sqlparse", "--features-out",
                      str(tmp_path / "installed.json"), "--", "drive.py"])
    assert installed.returncode == 0, installed.stderr
    assert _differences(source, _counts(tmp_path / "installed.json")) == {}
    missing = _run(["run", str(alone), "--backend", "monitor", "--include", "no_such_package_here", "--features-out",
                    str(tmp_path / "x.json"), "--", "drive.py"])
    assert missing.returncode == 2 and "no_such_package_here" in missing.stderr and len(missing.stderr.strip().splitlines()) == 1


def test_the_plan_names_each_counter_by_the_source_instrumentors_id(tmp_path):
    (tmp_path / "m.py").write_text("def f(x):\n    if x:\n        return 1\n\nk = (lambda a: a, lambda b: b)\n"
                                   "if k:\n    pass\n")
    plan = build_plan(tmp_path)
    file = plan["files"]["m.py"]
    assert file["counters"] == ["m.py:f:call", "m.py:f:branch:1", "m.py:f:branch:2",
                                "m.py:<lambda>:call", "m.py:<lambda>@2:call",
                                "m.py:<module>:branch:1", "m.py:<module>:branch:2"]
    # The implicit else of an if that starts f: f's calls minus its arm (the source instrumentor's formula);
    # at module level nothing counts the if's entries, so a hidden counter does: its tests minus its arm.
    assert file["derived"] == [[2, [[0, 1], [1, -1]]], [6, [[7, 1], [5, -1]]]] and file["hidden"] == 1
    assert [call[1:] for call in file["calls"]] == [[1, "f", None], [5, "<lambda>", 5], [5, "<lambda>", 18]]
    assert file["unplaced"] == []


def test_monitor_refuses_bad_input_in_one_line(tmp_path):
    missing = _run(["run", str(tmp_path / "nowhere"), "--backend", "monitor", "--features-out", str(tmp_path / "f.json"),
                    "--", "x.py"])
    assert missing.returncode == 2 and len(missing.stderr.strip().splitlines()) == 1 and "nowhere" in missing.stderr
    src = tmp_path / "src"
    src.mkdir()
    (src / "p.py").write_text("print(1)\n")
    inside = _run(["run", str(src), "--backend", "monitor", "--features-out", str(src / "f.json"), "--", "p.py"])
    assert inside.returncode == 2 and "inside the source folder" in inside.stderr and not (src / "f.json").exists()
    # options of the other backend were dropped without a word (the source backend counted p.py all the same)
    for option, backend in ((["--include", "sqlparse"], "source"), (["--exclude", "p.py"], "source"),
                            (["--observed-calls", str(tmp_path / "calls.json")], "monitor")):
        mixed = _run(["run", str(src), "--backend", backend, *option, "--features-out", str(tmp_path / "f.json"),
                      "--", "p.py"])
        lines = mixed.stderr.strip().splitlines()
        assert mixed.returncode == 2 and len(lines) == 1 and option[0] in lines[0], mixed.stderr
        assert not (tmp_path / "f.json").exists() and not (tmp_path / "calls.json").exists()


@pytest.mark.parametrize("version", ["3.12", "3.13"])
def test_a_program_using_sys_monitoring_itself_keeps_its_tool_and_is_counted(tmp_path, version):
    """The program takes the coverage tool id for itself; mantispy counts beside it on its own id, and
    when every id it may use is taken it says so in one line and the program still runs. (Frames already
    running when another tool changes its events, and code run inside another tool's callbacks, are not
    seen: CPython's own rules; so the program starts its tool in a frame of its own and counts nothing
    after that in frames that were running.)"""
    python = _python(version)
    src = tmp_path / "src"
    src.mkdir()
    (src / "own.py").write_text(textwrap.dedent('''
        import sys
        mon = sys.monitoring
        seen = {}

        def start():
            mon.use_tool_id(mon.COVERAGE_ID, "own")
            mon.register_callback(mon.COVERAGE_ID, mon.events.PY_START, seen.__setitem__)
            mon.set_events(mon.COVERAGE_ID, mon.events.PY_START)

        def work(n):
            return [i for i in range(n) if i % 2]

        def stop():
            mon.set_events(mon.COVERAGE_ID, 0)
            return sorted({code.co_name for code in seen})

        start()
        work(5), work(6)
        print(stop(), list(map(mon.get_tool, range(6))))
        '''))
    source, monitored, out_source, out_monitored = both_backends(src, ["own.py"], tmp_path, python)
    assert out_monitored.startswith("['stop', 'work']") and "'mantispy'" in out_monitored and "'own'" in out_monitored
    assert monitored["own.py:work:call"] == 2 and monitored["own.py:work:loop:1"] == 11
    assert _differences(source, monitored) == {}
    # the boot has taken its id before the program runs: free it, take every id, and install again
    (src / "again.py").write_text(textwrap.dedent('''
        import sys
        from mantispy.runtime import monitor
        sys.monitoring.free_tool_id(monitor._tool_id)
        for i in (1, 3, 4):
            sys.monitoring.use_tool_id(i, f"tool{i}")
        monitor.install(monitor._plan)
        print("ran")
        '''))
    extra = ["--python", python] if python else []
    full = _run(["run", str(src), "--backend", "monitor", "--features-out", str(tmp_path / "f.json"), *extra, "--", "again.py"])
    assert full.returncode == 0 and full.stdout.strip() == "ran"
    lines = [line for line in full.stderr.splitlines() if "tool id" in line]
    assert len(lines) == 1 and "taken: 1 (tool1), 3 (tool3), 4 (tool4)" in lines[0]


@pytest.mark.parametrize("version", ["3.12", "3.13"])
def test_counts_stay_exact_beside_a_tool_that_disables_its_line_events_and_the_tool_is_named(tmp_path, version):
    """coverage.py's sysmon core records each line at its first LINE event and returns DISABLE there. CPython
    then drops another tool's INSTRUCTION event at that instruction once (3.12.1, 3.13.0), so every counted
    line lost its first count beside coverage; and the tool, gone by the time the program exits, was not named."""
    python = _python(version)
    src = tmp_path / "src"
    src.mkdir()
    (src / "cov.py").write_text(textwrap.dedent('''
        import sys
        mon = sys.monitoring
        lines = set()

        def on_line(code, line):
            lines.add((code.co_name, line))
            return mon.DISABLE

        def start():
            mon.use_tool_id(mon.COVERAGE_ID, "linecov")
            mon.register_callback(mon.COVERAGE_ID, mon.events.LINE, on_line)
            mon.set_events(mon.COVERAGE_ID, mon.events.LINE)

        def work(n):
            total = 0
            for i in range(n):
                if i % 3 == 0:
                    total += i
                elif i % 3 == 1:
                    total -= 1
                try:
                    total += 10 // (i % 4)
                except ZeroDivisionError:
                    total += 1
            return total

        def stop():
            mon.set_events(mon.COVERAGE_ID, 0)
            mon.free_tool_id(mon.COVERAGE_ID)
            return len(lines)

        start()
        print(work(10), work(7), stop() > 5)
        '''))
    source, monitored, out_source, out_monitored = both_backends(src, ["cov.py"], tmp_path, python)
    assert out_monitored == out_source
    assert monitored["cov.py:work:loop:1"] == 17
    # the tool's own callback runs inside CPython's event dispatch, which raises no events for anyone
    assert _differences(source, monitored) == {"cov.py:on_line:call": (source["cov.py:on_line:call"], None)}
    extra = ["--python", python] if python else []
    again = _run(["run", str(src), "--backend", "monitor", "--features-out", str(tmp_path / "again.json"), *extra, "--",
                  "cov.py"])
    assert "mantispy: sys.monitoring tools beside mantispy: 1 (linecov)" in again.stderr.splitlines(), again.stderr


def test_a_tracer_that_takes_the_hook_on_3_11_is_said_in_one_line(tmp_path):
    """Python 3.11 has one trace hook per thread: a program (or coverage.py, a debugger) that sets its own
    takes it from the bytecode backend's fallback, and counting stops there; mantispy says so at exit."""
    if sys.version_info >= (3, 12):
        pytest.skip("the sys.settrace fallback runs on Python 3.11 only")
    src = tmp_path / "src"
    src.mkdir()
    (src / "traced.py").write_text(textwrap.dedent('''
        import sys

        def count(n):
            return sum(i for i in range(n) if i % 2)

        def mine(frame, event, arg):
            return None

        count(5)
        sys.settrace(mine)
        count(6)
        print("ran")
        '''))
    result = _run(["run", str(src), "--backend", "monitor", "--features-out", str(tmp_path / "f.json"), "--",
                   "traced.py"])
    assert result.returncode == 0 and result.stdout.strip() == "ran"
    lines = [line for line in result.stderr.splitlines() if "sys.settrace hook" in line]
    assert len(lines) == 1 and "another tracer (__main__.mine)" in lines[0], result.stderr
    assert json.loads((tmp_path / "f.json").read_text())["traced.py:count:call"] == 1


@pytest.mark.parametrize("verb", ["monitor", "record"])
def test_the_programs_own_sitecustomize_still_runs_after_the_boot(tmp_path, verb):
    """Both boot folders (the bytecode backend's and the sampler's) start mantispy, leave sys.path as the
    program would see it, and run the sitecustomize they hide (runtime/site_chain.py)."""
    import os

    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text("import sys\nsys.stderr.write('user sitecustomize ran\\n')\n")
    src = tmp_path / "src"
    src.mkdir()
    (src / "p.py").write_text("import sys\nfor i in range(3):\n    pass\nprint([p for p in sys.path if 'boot' in p])\n")
    env = {**os.environ, "PYTHONPATH": str(site)}
    if verb == "monitor":
        args = ["run", str(src), "--backend", "monitor", "--features-out", str(tmp_path / "f.json"), "--", "p.py"]
    else:
        args = ["record", "--store", str(tmp_path / "r.db"), "--", str(src / "p.py")]
    proc = subprocess.run([*MANTISPY, *args], capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "user sitecustomize ran" in proc.stderr and proc.stdout.strip().endswith("[]")
    if verb == "monitor":
        assert json.loads((tmp_path / "f.json").read_text())["p.py:<module>:loop:1"] == 3


def test_a_campaign_profiled_with_the_bytecode_backend_stores_the_source_backends_counts(tmp_path):
    """``[instrument] backend = "monitor"``: mantispy profile runs the program unchanged; every stored
    run's counters equal those of the same campaign profiled through the instrumented copy."""
    from mantispy.store import RunStore

    rows = {}
    for backend in ("source", "monitor"):
        folder = tmp_path / backend
        shutil.copytree(Path(__file__).parent / "programs" / "batchjob", folder)
        spec = folder / "campaign.toml"
        text = spec.read_text().replace("count = 24", "count = 4")
        spec.write_text(text + f'\n[instrument]\nonly = ["loops", "branches", "calls", "exceptions"]\nbackend = "{backend}"\n')
        proc = _run(["profile", str(spec), "--store", str(folder / "runs.db"), "-q"], cwd=folder)
        assert proc.returncode == 0, proc.stderr
        with RunStore(folder / "runs.db") as store:
            campaign = store.campaign("batchjob")
            by_run = {r["run_id"]: r["input_id"] for r in store.runs(campaign, "instrumented")}
            counts: dict[str, dict[str, float]] = {}
            for run_id, feature, value in store.features_of(campaign):
                counts.setdefault(by_run[run_id], {})[feature] = value
        rows[backend] = counts
    assert len(rows["source"]) == 4 and rows["monitor"] == rows["source"]
    assert not (tmp_path / "monitor" / "app" / ".mantis").exists()  # nothing written into the program's folder
    bad = tmp_path / "monitor" / "campaign.toml"
    bad.write_text(bad.read_text().replace('backend = "monitor"', 'backend = "bytecode"'))
    refused = _run(["profile", str(bad), "--store", str(tmp_path / "other.db"), "-q"])
    assert refused.returncode == 2 and "backend must be" in refused.stderr and len(refused.stderr.strip().splitlines()) == 1


def test_a_plan_with_more_hidden_counters_than_its_entries_count_into_is_refused(tmp_path):
    """A huge ``hidden`` made the run-time allocate that many counters (the property test below drew one
    and the suite's process grew to 24 GB until the kernel killed it)."""
    from mantispy.runtime import monitor

    src = tmp_path / "src"
    src.mkdir()
    (src / "prog.py").write_text(textwrap.dedent(CONSTRUCTS))
    plan = build_plan(src)
    monitor.Plan(plan)  # the real plan is read
    spec = next(iter(plan["files"].values()))
    spec["hidden"] = 10**12
    with pytest.raises(ValueError, match="field hidden: more hidden counters than the entries count into"):
        monitor.Plan(plan)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_the_plan_reader_refuses_in_one_line_or_the_plan_prepares_code(tmp_path, data, monkeypatch):
    """Every field of a real plan, replaced by an odd JSON value: the run-time's reader refuses it in one
    line, or the plan it read prepares the program's code objects without an error (with counters of
    its own, so that the test process's collector is left alone)."""
    import itertools

    from mantispy.runtime import monitor

    monkeypatch.setattr(monitor._File, "counters", lambda self: tuple(
        itertools.count(1) for _ in range(len(self.plan["counters"]) + self.plan["hidden"])))

    src = tmp_path / "src"
    src.mkdir(exist_ok=True)
    program = src / "prog.py"
    program.write_text(textwrap.dedent(CONSTRUCTS))
    plan = build_plan(src)

    def load(path: Path):
        try:
            return monitor.Plan(json.loads(path.read_text()))
        except ValueError as exc:
            raise ValueError(f"{path}: {exc}") from None

    read = read_mutated(plan, data, tmp_path, load, ValueError, items=2)
    if read is not None:
        code = compile(program.read_text(), str(program), "exec")
        stack = [code]
        while stack:
            current = stack.pop()
            read.prepare(current)
            stack.extend(c for c in current.co_consts if hasattr(c, "co_code"))


def test_code_without_column_positions_is_said_in_one_line_and_its_calls_still_count(tmp_path):
    """PYTHONNODEBUGRANGES leaves code objects without columns: no construct can be found in them."""
    import os

    src = tmp_path / "src"
    src.mkdir()
    (src / "p.py").write_text("def f(n):\n    for i in range(n):\n        pass\n\nf(3)\nf(4)\n")
    proc = subprocess.run([*MANTISPY, "run", str(src), "--backend", "monitor", "--features-out", str(tmp_path / "f.json"),
                           "--", "p.py"], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONNODEBUGRANGES": "1"})
    assert proc.returncode == 0, proc.stderr
    said = [line for line in proc.stderr.splitlines() if "column positions" in line]
    assert len(said) == 1 and said[0].startswith("mantispy: p.py: compiled without column positions")
    assert json.loads((tmp_path / "f.json").read_text()) == {"p.py:f:call": 2}
