"""Tests of mantispy.runtime: real programs that call ``register`` the way instrumented code does.

Every test writes a small program into ``tmp_path`` and runs it in a fresh interpreter (the run-time
installs process-wide hooks, so it is never registered inside the pytest process itself).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from mantispy.standalone_runtime import standalone_runtime_dir

REPO = Path(__file__).resolve().parents[1]
VENV_PYTHON = REPO / ".venv" / "bin" / "python"
PYTHON = str(VENV_PYTHON) if VENV_PYTHON.exists() else sys.executable
OTHER_PYTHONS = {
    "3.12": Path("/root/.pyenv/versions/3.12.1/bin/python3"),
    "3.13": Path("/root/.pyenv/versions/3.13.0/bin/python3"),
}
TIMEOUT = 120  # a safety net against hangs, never an assertion on speed


def header(file: str, counters: tuple[str, ...], variables: tuple[str, ...], k: int) -> str:
    """The line the instrumentor puts at the top of a module."""
    return ("import mantispy.runtime.counters as _mantis_rt; _mantis_k, _mantis_n, _mantis_vg, "
            f"_mantis_rec = _mantis_rt.register({file!r}, {counters!r}, {variables!r}, {k})\n")


def stub_header(counters: tuple[str, ...], variables: tuple[str, ...]) -> str:
    """Same names as ``header`` without mantispy (the uninstrumented reference run)."""
    return (f"import itertools; _mantis_k = tuple(itertools.count(1) for _ in {counters!r}); "
            f"_mantis_n = next; _mantis_vg = [True] * {len(variables)}; "
            "_mantis_rec = lambda j, v: v\n")


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MANTIS_")}
    env.update(extra)
    return env


def write_program(tmp_path: Path, body: str, name: str = "prog.py", *,
                  counters: tuple[str, ...] = ("c0",), variables: tuple[str, ...] = (),
                  k: int = 3, stub: bool = False) -> Path:
    path = tmp_path / name
    first = stub_header(counters, variables) if stub else header(name, counters, variables, k)
    path.write_text(first + textwrap.dedent(body), encoding="utf-8")
    return path


def run(tmp_path: Path, program: Path, *args: str, out: bool = True, python: str = PYTHON,
        **env_extra: str) -> tuple[subprocess.CompletedProcess, dict | None]:
    """Run ``program``; return the completed process and the features file (None if absent)."""
    features = tmp_path / "features.json"
    env = clean_env(**env_extra)
    if out:
        env["MANTIS_FEATURES_OUT"] = str(features)
    proc = subprocess.run([python, str(program), *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=TIMEOUT)
    data = json.loads(features.read_text()) if features.exists() else None
    if out:
        assert not Path(str(features) + ".parts").exists(), "parts directory left behind"
    return proc, data


# ------------------------------------------------------------------------------------------------
# Counts and values
# ------------------------------------------------------------------------------------------------

def test_counts_exact_with_many_threads(tmp_path):
    prog = write_program(tmp_path, """
        import threading
        def work():
            for _ in range(20000):
                _mantis_n(_mantis_k[0])
            for _ in range(3):
                _mantis_n(_mantis_k[1])
        threads = [threading.Thread(target=work) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if True and _mantis_n(_mantis_k[2]):
            print("tick is truthy")
    """, counters=("c0", "c1", "c2", "never"))
    proc, data = run(tmp_path, prog)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "tick is truthy\n"
    assert proc.stderr == ""
    assert data == {"c0": 160000, "c1": 24, "c2": 1}   # zero counts omitted


def test_values_averaged_over_threads(tmp_path):
    prog = write_program(tmp_path, """
        import threading
        def work(t):
            for i in range(5):
                _mantis_vg[0] and _mantis_rec(0, 100 * t + i)
            if t % 2 == 0:
                _mantis_vg[1] and _mantis_rec(1, float(t))
        threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    """, variables=("x", "y"), k=3)
    proc, data = run(tmp_path, prog)
    assert proc.returncode == 0, proc.stderr
    # thread t keeps its first 3 values 100t, 100t+1, 100t+2; mean over t of 100t is 350
    assert data == {"x#1": 350, "x#2": 351, "x#3": 352, "y#1": 3.0}


def test_first_k_values_and_unrecordable_values(tmp_path):
    prog = write_program(tmp_path, """
        values = [object(), None, "abcd", float("nan"), float("inf"), 10 ** 400, 2.5,
                  [1, 2], True, 7, 8]
        for v in values:
            if _mantis_vg[0]:
                assert _mantis_rec(0, v) is v      # returned unchanged
        print(_mantis_vg)
        _mantis_vg[1] and _mantis_rec(1, False)
        _mantis_vg[1] and _mantis_rec(1, -3)
        _mantis_vg[2] and _mantis_rec(2, print)
    """, variables=("v", "w", "nothing"), k=4)
    proc, data = run(tmp_path, prog)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "[False, True, True]\n"   # v saturated in a single-threaded process
    assert data == {"v#1": 4, "v#2": 2.5, "v#3": 2, "v#4": 1, "w#1": 0, "w#2": -3}


def test_len_of_builtin_sized_types(tmp_path):
    prog = write_program(tmp_path, """
        samples = ["abc", b"ab", bytearray(b"abcd"), [1], (1, 2, 3, 4, 5), {1: 2, 3: 4},
                   {1, 2, 3}, frozenset({1}), range(10), memoryview(b"abcdef"),
                   {1: 2, 3: 4, 5: 6}.keys(), "", []]
        for j, v in enumerate(samples):
            _mantis_vg[j] and _mantis_rec(j, v)
    """, variables=tuple(f"s{j}" for j in range(13)), k=1)
    proc, data = run(tmp_path, prog)
    assert proc.returncode == 0, proc.stderr
    expected = [3, 2, 4, 1, 5, 2, 3, 1, 10, 6, 3, 0, 0]
    assert data == {f"s{j}#1": n for j, n in enumerate(expected)}


def test_no_len_on_user_types(tmp_path):
    prog = write_program(tmp_path, """
        import enum
        class Sized:
            def __len__(self):
                raise AssertionError("len() called on a user type")
        class MyStr(str):
            def __len__(self):
                raise AssertionError("len() called on a str subclass")
        class MyList(list):
            __module__ = "builtins"
            def __len__(self):
                raise AssertionError("len() called on a list subclass")
        class MyInt(int):
            def __index__(self):
                raise AssertionError("user __index__ called")
            def __int__(self):
                raise AssertionError("user __int__ called")
        class Color(enum.IntEnum):
            RED = 5
        for v in (Sized(), MyStr("abc"), MyList([1, 2]), MyInt(41), Color.RED):
            _mantis_vg[0] and _mantis_rec(0, v)
    """, variables=("u",), k=5)
    proc, data = run(tmp_path, prog)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert data == {"u#1": 41, "u#2": 5}   # int subclasses by value; sized user types skipped


def test_saturation_and_thread_start_reenables_guards(tmp_path):
    prog = write_program(tmp_path, """
        import threading
        _mantis_vg[0] and _mantis_rec(0, 1)
        _mantis_vg[0] and _mantis_rec(0, 2)
        assert _mantis_vg[0] is False, "single thread holding k values: guard off"
        def work():
            for v in (10, 20, 30):
                _mantis_vg[0] and _mantis_rec(0, v)
        t = threading.Thread(target=work)
        t.start()
        t.join()
        assert _mantis_vg[0] is True, "thread start re-enabled the guard"
        _mantis_vg[0] and _mantis_rec(0, 99)
        assert _mantis_vg[0] is False, "alone again: guard off"

        # while another thread is alive, a saturated thread keeps the guard on
        release = threading.Event()
        other = threading.Thread(target=release.wait)
        other.start()
        _mantis_vg[1] and _mantis_rec(1, 5)
        _mantis_vg[1] and _mantis_rec(1, 6)
        _mantis_vg[1] and _mantis_rec(1, 7)
        assert _mantis_vg[1] is True
        release.set()
        other.join()
        print("ok")
    """, variables=("v", "w"), k=2)
    proc, data = run(tmp_path, prog)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "ok\n"
    assert data == {"v#1": 5.5, "v#2": 11, "w#1": 5, "w#2": 6}


# ------------------------------------------------------------------------------------------------
# Exit paths
# ------------------------------------------------------------------------------------------------

def test_sys_exit_code_preserved(tmp_path):
    prog = write_program(tmp_path, """
        import sys
        for _ in range(4):
            _mantis_n(_mantis_k[0])
        print("bye")
        sys.exit(3)
    """)
    proc, data = run(tmp_path, prog)
    assert proc.returncode == 3
    assert proc.stdout == "bye\n" and proc.stderr == ""
    assert data == {"c0": 4}


def test_uncaught_exception_traceback_unchanged(tmp_path):
    body = """
        def fail(n):
            for _ in range(n):
                _mantis_n(_mantis_k[0])
            _mantis_vg[0] and _mantis_rec(0, n)
            raise ValueError(f"bad {n}")
        print("start")
        fail(6)
    """
    reference = write_program(tmp_path, body, variables=("n",), stub=True)
    ref, _ = run(tmp_path, reference, out=False)
    prog = write_program(tmp_path, body, variables=("n",))
    proc, data = run(tmp_path, prog)
    assert ref.returncode == proc.returncode == 1
    assert "ValueError: bad 6" in ref.stderr
    assert proc.stderr == ref.stderr
    assert proc.stdout == ref.stdout == "start\n"
    assert data == {"c0": 6, "n#1": 6}


def test_sigterm_sent_to_itself(tmp_path):
    prog = write_program(tmp_path, """
        import os, signal, time
        for _ in range(11):
            _mantis_n(_mantis_k[0])
        _mantis_vg[0] and _mantis_rec(0, "hello")
        print("before", flush=True)
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(30)
        print("not reached")
    """, variables=("s",))
    proc, data = run(tmp_path, prog)
    assert proc.returncode == -signal.SIGTERM
    assert proc.stdout == "before\n" and proc.stderr == ""
    assert data == {"c0": 11, "s#1": 5}


def test_sigterm_from_parent(tmp_path):
    prog = write_program(tmp_path, """
        import time
        for _ in range(500):
            _mantis_n(_mantis_k[0])
        print("ready", flush=True)
        while True:
            time.sleep(0.05)
    """)
    features = tmp_path / "features.json"
    env = clean_env(MANTIS_FEATURES_OUT=str(features))
    proc = subprocess.Popen([PYTHON, str(prog)], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline() == "ready\n"
        proc.terminate()
        _, err = proc.communicate(timeout=TIMEOUT)
    finally:
        proc.kill()
    assert proc.returncode == -signal.SIGTERM
    assert err == ""
    assert json.loads(features.read_text()) == {"c0": 500}


def test_program_sigterm_handler_is_left_alone(tmp_path):
    prog = tmp_path / "prog.py"
    prog.write_text(textwrap.dedent("""
        import signal, sys
        def mine(signum, frame):
            sys.exit(7)
        signal.signal(signal.SIGTERM, mine)
    """) + header("prog.py", ("c0",), (), 3) + textwrap.dedent("""
        assert signal.getsignal(signal.SIGTERM) is mine
        _mantis_n(_mantis_k[0])
        signal.raise_signal(signal.SIGTERM)
    """))
    proc, data = run(tmp_path, prog)
    assert proc.returncode == 7, proc.stderr
    assert data == {"c0": 1}


def test_without_features_out_nothing_is_written(tmp_path):
    prog = write_program(tmp_path, """
        import os, sys
        for _ in range(3):
            _mantis_n(_mantis_k[0])
        _mantis_vg[0] and _mantis_rec(0, 1)
        pid = os.fork()
        if pid == 0:
            _mantis_n(_mantis_k[0])
            sys.exit(0)
        os.waitpid(pid, 0)
        print(sorted(_mantis_rt.snapshot().items()))
    """, variables=("v",))
    before = sorted(p.name for p in tmp_path.iterdir())
    proc, data = run(tmp_path, prog, out=False)
    assert proc.returncode == 0 and proc.stderr == ""
    assert proc.stdout == "[('c0', 3), ('v#1', 1)]\n"
    assert data is None
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_relative_output_path_and_chdir(tmp_path):
    (tmp_path / "elsewhere").mkdir()
    prog = write_program(tmp_path, """
        import os
        os.chdir("elsewhere")
        _mantis_n(_mantis_k[0])
    """)
    proc = subprocess.run([PYTHON, str(prog)], cwd=tmp_path, timeout=TIMEOUT,
                          env=clean_env(MANTIS_FEATURES_OUT="rel.json"), capture_output=True)
    assert proc.returncode == 0, proc.stderr
    assert json.loads((tmp_path / "rel.json").read_text()) == {"c0": 1}
    assert not (tmp_path / "elsewhere" / "rel.json").exists()


# ------------------------------------------------------------------------------------------------
# API
# ------------------------------------------------------------------------------------------------

def test_register_twice_returns_same_objects(tmp_path):
    prog = write_program(tmp_path, """
        import importlib, sys
        sys.path.insert(0, ".")
        again = _mantis_rt.register("prog.py", ("c0",), ("v",), 3)
        assert again[0] is _mantis_k and again[2] is _mantis_vg and again[3] is _mantis_rec
        assert again[1] is next is _mantis_n
        other = _mantis_rt.register("other.py", ("c0",), ("v",), 3)
        assert other[0] is not _mantis_k
        _mantis_n(_mantis_k[0])
        if __name__ == "__main__":
            mod = importlib.import_module("prog")     # the script imported again as a module
            assert mod._mantis_k is _mantis_k and mod._mantis_rec is _mantis_rec
            print("ok")
    """, variables=("v",))
    proc, data = run(tmp_path, prog)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "ok\n"
    assert data == {"c0": 2}


def test_snapshot_reset_write(tmp_path):
    prog = write_program(tmp_path, """
        import json, sys
        for _ in range(5):
            _mantis_n(_mantis_k[0])
        _mantis_vg[0] and _mantis_rec(0, 2)
        _mantis_vg[0] and _mantis_rec(0, 4)
        assert _mantis_vg[0] is False
        assert _mantis_rt.snapshot() == {"c0": 5, "v#1": 2, "v#2": 4}
        _mantis_rt.write("copy.json")
        _mantis_rt.reset()
        assert _mantis_rt.snapshot() == {}
        assert _mantis_vg[0] is True
        _mantis_n(_mantis_k[0])
        _mantis_vg[0] and _mantis_rec(0, 9)
        assert "multiprocessing" not in sys.modules
        print("ok")
    """, variables=("v",), k=2)
    proc, data = run(tmp_path, prog)
    assert proc.returncode == 0, proc.stderr
    assert json.loads((tmp_path / "copy.json").read_text()) == {"c0": 5, "v#1": 2, "v#2": 4}
    assert data == {"c0": 1, "v#1": 9}


def test_stale_parts_of_an_earlier_run_are_ignored(tmp_path):
    parts = tmp_path / "features.json.parts"
    parts.mkdir()
    (parts / "12345.json").write_text(json.dumps({"pid": 12345, "counts": {"c0": 1000},
                                                  "values": {}}))
    prog = write_program(tmp_path, "_mantis_n(_mantis_k[0])\n")
    proc, data = run(tmp_path, prog)
    assert proc.returncode == 0, proc.stderr
    assert data == {"c0": 1}


# ------------------------------------------------------------------------------------------------
# Child processes
# ------------------------------------------------------------------------------------------------

def test_os_fork_children_merged(tmp_path):
    prog = write_program(tmp_path, """
        import os, sys
        for _ in range(4):
            _mantis_n(_mantis_k[0])
        _mantis_vg[0] and _mantis_rec(0, 10)
        pid = os.fork()
        if pid == 0:
            for _ in range(5):
                _mantis_n(_mantis_k[0])
            _mantis_vg[0] and _mantis_rec(0, 20)
            grandchild = os.fork()
            if grandchild == 0:
                _mantis_n(_mantis_k[1])
                _mantis_vg[0] and _mantis_rec(0, 60)
                sys.exit(0)
            os.waitpid(grandchild, 0)
            sys.exit(0)
        os.waitpid(pid, 0)
        for _ in range(3):
            _mantis_n(_mantis_k[0])
        print("parent done")
    """, counters=("c0", "c1"), variables=("v",), k=1)
    proc, data = run(tmp_path, prog)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "parent done\n"
    assert data == {"c0": 12, "c1": 1, "v#1": 30}


MP_PROGRAM = """
    import multiprocessing as mp
    import sys
    import time


    def work(n):
        for i in range(n):
            _mantis_n(_mantis_k[0])
        for x in (n, n + 1, n + 2, n + 3):
            _mantis_vg[0] and _mantis_rec(0, x)


    def square(x):
        for i in range(x):
            _mantis_n(_mantis_k[1])
        _mantis_vg[1] and _mantis_rec(1, 7)
        return x * x


    def fail(n):
        for i in range(n):
            _mantis_n(_mantis_k[2])
        raise RuntimeError("boom")


    def wait_forever(n, ev):
        for i in range(n):
            _mantis_n(_mantis_k[3])
        ev.set()
        while True:
            time.sleep(0.05)


    def unjoined(n):
        for i in range(n):
            _mantis_n(_mantis_k[4])


    if __name__ == "__main__":
        ctx = mp.get_context(sys.argv[1])
        for x in (1, 2, 3):
            _mantis_vg[0] and _mantis_rec(0, x)
        p = ctx.Process(target=work, args=(100,))
        p.start()
        p.join()
        assert p.exitcode == 0, p.exitcode
        with ctx.Pool(2) as pool:              # __exit__ terminates the workers (SIGTERM)
            assert pool.map(square, range(10)) == [x * x for x in range(10)]
        pool = ctx.Pool(2)                     # close + join: the workers exit normally
        assert pool.map(square, range(5)) == [x * x for x in range(5)]
        pool.close()
        pool.join()
        p = ctx.Process(target=fail, args=(5,))
        p.start()
        p.join()
        assert p.exitcode == 1, p.exitcode
        ev = ctx.Event()
        p = ctx.Process(target=wait_forever, args=(9, ev))
        p.start()
        ev.wait()
        p.terminate()
        p.join()
        assert p.exitcode == -15, p.exitcode
        ctx.Process(target=unjoined, args=(13,)).start()   # joined by multiprocessing at exit
        print("done")
"""
MP_COUNTERS = ("c0", "c1", "c2", "c3", "c4")


def check_mp_result(proc: subprocess.CompletedProcess, data: dict | None) -> None:
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "done\n"
    assert "RuntimeError: boom" in proc.stderr
    assert data is not None
    pool_values = {k: v for k, v in data.items() if k.startswith("v1#")}
    rest = {k: v for k, v in data.items() if not k.startswith("v1#")}
    # root records 1, 2, 3 and the Process 100, 101, 102: averaged per version
    assert rest == {"c0": 100, "c1": 45 + 10, "c2": 5, "c3": 9, "c4": 13,
                    "v0#1": 50.5, "v0#2": 51.5, "v0#3": 52.5}
    assert pool_values.get("v1#1") == 7 and set(pool_values.values()) == {7}


@pytest.mark.parametrize("method", ["fork", "spawn", "forkserver"])
def test_multiprocessing_merged(tmp_path, method):
    prog = write_program(tmp_path, MP_PROGRAM, counters=MP_COUNTERS, variables=("v0", "v1"))
    proc, data = run(tmp_path, prog, method)
    check_mp_result(proc, data)


@pytest.mark.parametrize("version", sorted(OTHER_PYTHONS))
@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_multiprocessing_other_interpreters(tmp_path, version, method):
    python = OTHER_PYTHONS[version]
    if not python.exists():
        pytest.skip(f"Python {version} not installed at {python}")
    site = standalone_runtime_dir(tmp_path / "standalone")
    prog = write_program(tmp_path, MP_PROGRAM, counters=MP_COUNTERS, variables=("v0", "v1"))
    proc, data = run(tmp_path, prog, method, python=str(python), PYTHONPATH=str(site))
    check_mp_result(proc, data)


POOL_POLL_PROGRAM = """
    import multiprocessing as mp
    import multiprocessing.process
    import sys


    def poller_installed(x):
        _mantis_n(_mantis_k[0])
        inqueue = multiprocessing.process.current_process()._args[0]
        return "get" in vars(inqueue)


    if __name__ == "__main__":
        with mp.get_context(sys.argv[1]).Pool(2) as pool:
            print(sorted(set(pool.map(poller_installed, range(8)))))
"""


@pytest.mark.parametrize("version", ["3.11", *sorted(OTHER_PYTHONS)])
@pytest.mark.parametrize("method", ["fork", "spawn", "forkserver"])
def test_pool_workers_wait_for_tasks_in_a_way_sigterm_can_interrupt(tmp_path, version, method):
    """A pool worker blocked in ``SimpleQueue.get`` never runs a SIGTERM handler whose signal arrived just
    before it blocked, so ``Pool.terminate`` hung (CI, Python 3.13, spawn: 1 run in about 150 of the
    multiprocessing program above). The runtime gives every pool worker a polling ``get``; spawned workers
    never run the after-forkers that installed it, and went without."""
    python = OTHER_PYTHONS.get(version)
    if python is not None and not python.exists():
        pytest.skip(f"Python {version} not installed at {python}")
    env = {} if python is None else {"PYTHONPATH": str(standalone_runtime_dir(tmp_path / "standalone"))}
    prog = write_program(tmp_path, POOL_POLL_PROGRAM, counters=("c0",))
    proc, data = run(tmp_path, prog, method, python=str(python or PYTHON), **env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "[True]\n"
    assert data == {"c0": 8}


def test_multiprocessing_imported_before_register(tmp_path):
    prog = tmp_path / "prog.py"
    prog.write_text("import multiprocessing.util\n" + header("prog.py", ("c0",), (), 3)
                    + textwrap.dedent("""
        import multiprocessing as mp
        def work(n):
            for _ in range(n):
                _mantis_n(_mantis_k[0])
        if __name__ == "__main__":
            mp.get_context("fork").Process(target=work, args=(17,)).start()
    """))
    proc, data = run(tmp_path, prog)
    assert proc.returncode == 0, proc.stderr
    assert data == {"c0": 17}


def test_standalone_runtime_dir(tmp_path):
    site = standalone_runtime_dir(tmp_path / "sa")
    assert site == tmp_path / "sa"
    names = sorted(p.name for p in (site / "mantispy" / "runtime").glob("*.py"))
    assert {"__init__.py", "counters.py", "collector.py"} <= set(names)
    proc = subprocess.run(
        [PYTHON, "-I", "-c", "import sys; sys.path.insert(0, sys.argv[1]); "
         "import mantispy, mantispy.runtime.counters as c; print(mantispy.__file__, c.__name__)",
         str(site)], capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(str(site / "mantispy" / "__init__.py"))


def test_variable_holding_unrecordable_values_is_given_up_after_4k(tmp_path):
    prog = write_program(tmp_path, """
        calls = 0
        for i in range(100):
            if _mantis_vg[0]:
                calls += 1
                _mantis_rec(0, object())
        for v in [None, None, None, 5, 6]:       # a few unrecordable values, then numbers
            _mantis_vg[1] and _mantis_rec(1, v)
        print(calls, _mantis_vg[0])
    """, variables=("objects", "late"), k=3)
    proc, data = run(tmp_path, prog)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "12 False\n"  # 4 * k unrecordable values, then the guard is off
    assert data == {"late#1": 5, "late#2": 6}
