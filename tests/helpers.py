"""Shared helpers: instrument a snippet, run original and instrumented copies, read features back."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

from mantispy.instrument.transformer import ModuleResult, Options, instrument_source

REPO = Path(__file__).resolve().parent.parent
MANTISPY = [sys.executable, "-m", "mantispy"]


@dataclass
class Outcome:
    """What one run of a program did."""

    returncode: int
    stdout: str
    stderr: str
    features: dict[str, float]


def run_file(path: Path, features_out: Path | None = None, args: list[str] | None = None, cwd: Path | None = None) -> Outcome:
    """Run a Python file in a fresh interpreter and collect its output and features."""
    env = dict(os.environ)
    env.pop("MANTIS_ROOT_PID", None)
    env.pop("MANTIS_FEATURES_OUT", None)
    if features_out is not None:
        env["MANTIS_FEATURES_OUT"] = str(features_out)
    proc = subprocess.run(
        [sys.executable, str(path), *(args or [])], capture_output=True, text=True, env=env, cwd=cwd or path.parent, timeout=120
    )
    features = json.loads(features_out.read_text()) if features_out is not None and features_out.exists() else {}
    return Outcome(proc.returncode, proc.stdout, proc.stderr, features)


COUNTING_FLAG = """
class Flag:
    calls = 0
    def __init__(self, v):
        self.v = v
    def __bool__(self):
        Flag.calls += 1
        return self.v
"""
"""A program prefix: a class whose truth value counts how often it is taken (``Flag.calls``)."""


def instrument_and_run(source: str, tmp: Path, options: Options | None = None, name: str = "prog.py") -> tuple[Outcome, Outcome, ModuleResult]:
    """Run ``source`` as is and instrumented; returns (original, instrumented, instrumentation result)."""
    source = textwrap.dedent(source)
    orig_dir, inst_dir = tmp / "orig", tmp / "inst"
    orig_dir.mkdir(exist_ok=True)
    inst_dir.mkdir(exist_ok=True)
    (orig_dir / name).write_text(source)
    result = instrument_source(source, name, options)
    compile(result.code, name, "exec")
    (inst_dir / name).write_text(result.code)
    original = run_file(orig_dir / name)
    instrumented = run_file(inst_dir / name, tmp / "features.json")
    return original, instrumented, result


def traceback_skeleton(stderr: str, folder: Path) -> list[str]:
    """stderr without the echoed source lines and caret marks of tracebacks: frames (file, line,
    function) and messages stay. Tracebacks echo the instrumented file's text, probes included."""
    kept = []
    for line in stderr.replace(str(folder), "DIR").splitlines():
        stripped = line.strip()
        if line.startswith("    ") and not stripped.startswith("File "):
            continue  # echoed source or ^^^^ marks
        kept.append(line)
    return kept


def same_behaviour(original: Outcome, instrumented: Outcome, tmp: Path) -> None:
    """Assert identical stdout and exit status, and stderr identical up to echoed source lines."""
    assert instrumented.returncode == original.returncode, instrumented.stderr
    assert instrumented.stdout == original.stdout
    assert traceback_skeleton(instrumented.stderr, tmp / "inst") == traceback_skeleton(original.stderr, tmp / "orig")


def by_suffix(features: dict[str, float], suffix: str) -> float:
    """The value of the one feature whose id ends with ``suffix`` (0 if absent: zeros are omitted)."""
    hits = [v for k, v in features.items() if k.endswith(suffix)]
    assert len(hits) <= 1, f"ambiguous suffix {suffix}: {hits}"
    return hits[0] if hits else 0


def odd_json_values():
    """Hypothesis strategy: JSON values of every type (NaN and infinities included), for mutating artefacts."""
    from hypothesis import strategies as st

    return st.one_of(st.none(), st.booleans(), st.integers(-10**20, 10**20),
                     st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=5),
                     st.lists(st.integers(0, 5), max_size=3), st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))


def json_paths(value, prefix=(), items=None):
    """Every path (a tuple of keys and indexes) to a value inside a JSON document (lists: their first
    ``items`` elements, all when None)."""
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from json_paths(item, (*prefix, key), items)
    elif isinstance(value, list):
        for n, item in enumerate(value if items is None else value[:items]):
            yield from json_paths(item, (*prefix, n), items)


def mutated(document, path, value):
    """A deep copy of ``document`` with the value at ``path`` replaced by ``value``."""
    import copy

    if not path:
        return value
    document = copy.deepcopy(document)
    target = document
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return document


def read_mutated(document, data, tmp_path: Path, load, error: type[Exception], items: int = 2):
    """Draw a path in ``document`` and an odd JSON value (Hypothesis ``data``), write the mutated document
    and read it with ``load``: the object read, or None when ``load`` refused it with ``error`` in one
    line naming the file (asserted)."""
    import json

    path = data.draw(st_sampled_paths(document, items))
    target = tmp_path / "mutated.json"
    target.write_text(json.dumps(mutated(document, path, data.draw(odd_json_values()))), encoding="utf-8")
    try:
        return load(target)
    except error as exc:
        assert str(target) in str(exc) and "\n" not in str(exc), exc
        return None


def st_sampled_paths(document, items: int):
    """Hypothesis strategy: one of ``document``'s JSON paths."""
    from hypothesis import strategies as st

    return st.sampled_from(list(json_paths(document, items=items)))


def find_browser() -> str | None:
    """Chromium (or Chrome) on PATH, or None."""
    import shutil

    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        if shutil.which(name):
            return shutil.which(name)
    return None


def run_chromium(browser: str, url: str, tmp_path: Path, *extra: str) -> subprocess.CompletedProcess:
    """Headless Chromium on ``url`` with a private profile under ``tmp_path`` (``--dump-dom``, ``--screenshot=F``...)."""
    home = tmp_path / "browser-home"
    home.mkdir(exist_ok=True)
    env = dict(os.environ, HOME=str(home), XDG_CONFIG_HOME=str(home / "config"), XDG_CACHE_HOME=str(home / "cache"))
    command = [browser, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
               "--disable-extensions", "--disable-background-networking", "--disable-sync", "--mute-audio",
               f"--user-data-dir={home / 'profile'}", "--window-size=1200,900", *extra, url]
    return subprocess.run(command, capture_output=True, text=True, timeout=90, env=env)


def interpreter(version: str) -> str | None:
    """The newest CPython ``version`` ("3.12") under pyenv, or None."""
    root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    found = sorted(root.glob(f"{version}.*/bin/python3")) if root.is_dir() else []
    return str(found[-1]) if found else None
