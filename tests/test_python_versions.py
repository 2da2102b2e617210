"""Instrumented programs run, and count the same, under CPython 3.12 and 3.13 (the sys.monitoring era).

The interpreters come from pyenv when present; mantispy itself is not installed in them, so
``mantispy run --python`` puts a standalone copy of the runtime on their path.
"""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path

import pytest

from tests.helpers import MANTISPY, interpreter

PROGRAM = """
import asyncio, threading

def classify(v):
    match v:
        case int(n) if n > 10:
            return "big"
        case int():
            return "small"
        case _:
            return "other"

async def agen(n):
    for i in range(n):
        yield i

async def main():
    return [x async for x in agen(5) if x % 2]

def work(n):
    total = 0
    for i in range(n):
        total += i if i % 3 else -i
    return total

threads = [threading.Thread(target=work, args=(1000,)) for _ in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
try:
    raise ExceptionGroup("g", [ValueError(1)])
except* ValueError:
    pass
print([classify(v) for v in [1, 50, "x", 3]], asyncio.run(main()), work(10))
"""


def run_with(out: Path, features: Path, python: str | None) -> tuple[str, dict]:
    extra = ["--python", python] if python else []
    proc = subprocess.run(
        [*MANTISPY, "run", str(out), "--features-out", str(features), *extra, "--", "prog.py"],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout, json.loads(features.read_text())


@pytest.mark.parametrize("version", ["3.12", "3.13"])
def test_instrumented_program_counts_the_same_on_newer_pythons(tmp_path, version):
    python = interpreter(version)
    if python is None:
        pytest.skip(f"no CPython {version} under pyenv on this machine")
    src = tmp_path / "src"
    src.mkdir()
    (src / "prog.py").write_text(textwrap.dedent(PROGRAM))
    out = tmp_path / "out"
    assert subprocess.run([*MANTISPY, "instrument", str(src), "-o", str(out)], capture_output=True, timeout=120).returncode == 0
    reference_out, reference = run_with(out, tmp_path / "f311.json", None)
    newer_out, newer = run_with(out, tmp_path / f"f{version}.json", python)
    assert newer_out == reference_out
    counters = {k: v for k, v in reference.items() if ":value:" not in k}
    assert {k: v for k, v in newer.items() if ":value:" not in k} == counters
    assert counters["prog.py:work:loop:1"] == 4 * 1000 + 10
    assert counters["prog.py:<module>:except:1"] == 1
