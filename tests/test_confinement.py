"""Kernel confinement of feature evaluators (issue 19, item 6): what the Python-level write guard cannot
see (io.FileIO, sqlite3, signals, ctypes' system and fork, sockets it does not patch) the kernel refuses
to every evaluation mantispy or a predictor package runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mantispy.slicer import confine
from mantispy.slicer.emit import emit_slice
from mantispy.slicer.evaluators import SliceSession
from mantispy.slicer.warm_client import WarmEvaluator

ESCAPE = Path(__file__).parent / "programs" / "escape"
PROBE = confine.probe() if sys.platform.startswith("linux") else {}
FULL = bool(PROBE.get("files") and PROBE.get("seccomp") and PROBE.get("signals"))
needs_full = pytest.mark.skipif(not FULL, reason=f"this machine cannot confine fully: {PROBE.get('why')}")


@pytest.fixture(scope="module")
def escape_evaluator(tmp_path_factory):
    """The evaluator of escape.py's loop: N plus a bit per escape that got through."""
    session = SliceSession(ESCAPE, "escape.py")
    loop = next(fid for fid, feature in session.features.items() if feature["kind"] == "loop")
    out = tmp_path_factory.mktemp("escape") / "evaluator"
    emit_slice(session.program, session.slice(loop), out)
    return out, loop


def _evaluate(evaluator: Path, out: Path, tmp: Path, mode: str) -> tuple[subprocess.CompletedProcess, float | None]:
    env = {**os.environ, "MANTISPY_CONFINE": mode, "TMPDIR": str(tmp)}
    proc = subprocess.run([sys.executable, str(evaluator / "evaluate.py"), "--mantis-json", "5", str(out), str(os.getpid())],
                          capture_output=True, text=True, env=env, timeout=120)
    text = proc.stdout.strip()  # unconfined, the program's ctypes fork may print a second object
    return proc, (next(iter(json.JSONDecoder().raw_decode(text)[0].values())) if text else None)


@pytest.fixture
def folders(tmp_path):
    """(a folder outside the evaluation, the temporary folder the evaluation is given), both empty."""
    out, tmp = tmp_path / "outside", tmp_path / "tmp"
    out.mkdir()
    tmp.mkdir()
    return out, tmp


@needs_full
def test_a_confined_evaluation_escapes_nothing_and_leaves_nothing(escape_evaluator, folders):
    evaluator, _ = escape_evaluator
    out, tmp = folders
    proc, value = _evaluate(evaluator, out, tmp, "auto")
    assert proc.returncode == 0, proc.stderr
    assert value == 5.0  # no bit: no file, database, signal, shell, socket or process got through
    assert list(out.iterdir()) == []
    assert list(tmp.iterdir()) == []  # the jail (and the guard's scratch in it) is gone


def test_without_confinement_the_same_evaluation_writes_through_the_guard(escape_evaluator, folders):
    """What the test above guards against really happens under the guard alone (MANTISPY_CONFINE=off)."""
    evaluator, _ = escape_evaluator
    out, tmp = folders
    proc, value = _evaluate(evaluator, out, tmp, "off")
    assert proc.returncode == 0, proc.stderr
    assert value is not None and int(value - 5) & 3 == 3  # io.FileIO and sqlite3 wrote outside
    assert (out / "fileio.txt").exists() and (out / "escaped.db").exists()


@needs_full
def test_the_warm_server_is_confined_and_removes_its_folder(escape_evaluator, folders, tmp_path, monkeypatch):
    evaluator, loop = escape_evaluator
    out, tmp = folders
    monkeypatch.setenv("TMPDIR", str(tmp))
    monkeypatch.setenv("MANTISPY_CONFINE", "auto")
    warm = WarmEvaluator(str(evaluator))
    try:
        values = [warm.evaluate(["5", str(out), str(os.getpid())], None, cwd=str(tmp_path), timeout=60)[0][loop] for _ in range(2)]
    finally:
        warm.close()
    assert values == [5.0, 5.0]
    assert list(out.iterdir()) == []
    assert list(tmp.iterdir()) == []


def test_require_fails_in_one_line_where_the_kernel_cannot_confine(escape_evaluator, tmp_path, monkeypatch):
    """MANTISPY_CONFINE=require on a platform without Landlock: the evaluation fails (exit 3, one line)
    rather than running unconfined. The missing kernel feature is simulated in a forked child."""
    jail = tmp_path / "jail"
    jail.mkdir()
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - runs in the child
        os.close(read)
        confine.landlock_abi = lambda: 0
        try:
            confine.confine(str(jail), strict=True)
            said = "confined"
        except confine.ConfinementError as exc:
            said = str(exc)
        os.write(write, said.encode())
        os._exit(0)
    os.close(write)
    said = os.read(read, 4096).decode()
    os.close(read)
    os.waitpid(child, 0)
    assert said.startswith("cannot confine the evaluation (MANTISPY_CONFINE=require): ")
    assert "Landlock" in said and "\n" not in said


def test_a_misspelt_mode_asks_for_more_confinement_not_less(monkeypatch):
    monkeypatch.setenv("MANTISPY_CONFINE", "of")
    assert confine.mode() == "require"
    monkeypatch.setenv("MANTISPY_CONFINE", "OFF")
    assert confine.mode() == "off"
    monkeypatch.delenv("MANTISPY_CONFINE")
    assert confine.mode() == "auto"


def test_the_evaluator_says_what_confines_it(escape_evaluator):
    evaluator, _ = escape_evaluator
    proc = subprocess.run([sys.executable, str(evaluator / "evaluate.py"), "--mantis-confinement"],
                          capture_output=True, text=True, timeout=60)
    report, line = proc.stdout.splitlines()
    assert set(json.loads(report)) >= {"mode", "landlock", "files", "tcp", "signals", "seccomp", "processes", "why"}
    assert line.startswith("evaluators ")
    if FULL:
        assert line.startswith("evaluators confined by Landlock ABI") and "seccomp" in line


def test_a_jail_whose_evaluator_was_killed_is_removed_by_the_next(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True).stdout.strip()
    stale = tmp_path / f"{confine.JAIL_PREFIX}{dead}-0badc0de"
    (stale / "scratch").mkdir(parents=True)
    (stale / "scratch" / "left.txt").write_text("x")
    alive = tmp_path / f"{confine.JAIL_PREFIX}{os.getpid()}-0badc0de"
    alive.mkdir()
    fresh = confine.make_jail()
    assert not stale.exists() and alive.exists() and Path(fresh).is_dir()


COUNTING = '''import sys

count = 0
for _ in range(int(sys.argv[1])):
    count += 1
print(count)
'''


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG and /proc are Linux's")
def test_the_confined_child_dies_with_its_evaluator(tmp_path):
    """A timeout kills the evaluator with SIGKILL (run_watched); its confined child must not run on."""
    import signal
    import time

    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "count.py").write_text(COUNTING, encoding="utf-8")
    session = SliceSession(tmp_path / "app", "count.py")
    loop = next(fid for fid, feature in session.features.items() if feature["kind"] == "loop")
    emit_slice(session.program, session.slice(loop), tmp_path / "evaluator")
    proc = subprocess.Popen([sys.executable, str(tmp_path / "evaluator" / "evaluate.py"), "--mantis-json", str(10**12)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    children: list[int] = []
    deadline = time.monotonic() + 30
    while not children and time.monotonic() < deadline:
        time.sleep(0.1)
        children = [int(pid) for pid in Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()]
    assert children, "the evaluator did not fork its confined child"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 10
    while Path(f"/proc/{children[0]}").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not Path(f"/proc/{children[0]}").exists() or "Z" in Path(f"/proc/{children[0]}/stat").read_text().split()[2]
