"""The benchmark suite's input generators (benchmarks/suite/*/inputs.py) and one end-to-end run.

The generators are checked without running the programs: each yields at least 300 distinct, valid
campaign records, the same ones (files included) for the same seed. The generators do not import the
programs' packages, so these checks run whether or not the ``bench`` extra is installed. One small
whoosh input then runs through the plain interpreter (skipped without Whoosh).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mantispy.campaign import Entry, _record

SUITE = Path(__file__).resolve().parents[1] / "benchmarks" / "suite"
PROGRAMS = ("whoosh", "markdown", "sqlparse", "pycparser", "networkx", "mistune")
PACKAGES = {"whoosh": "whoosh", "markdown": "markdown", "sqlparse": "sqlparse", "pycparser": "pycparser",
            "networkx": "networkx", "mistune": "mistune"}


def load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    # The generators' shared modules (a prepared campaign has copies beside its generator). Only while
    # loading: on sys.path for good, the suite's folders would pass for the packages (``import whoosh``).
    sys.path.insert(0, str(SUITE))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(SUITE))
    return module


def generator(name: str):
    return load(SUITE / name / "inputs.py", f"_suite_inputs_{name}")


def snapshot(records: list[dict], out_dir: Path) -> list[tuple]:
    """Records with their files replaced by (path relative to out_dir, content digest)."""
    rows = []
    for record in records:
        files = tuple((Path(f).relative_to(out_dir).as_posix(), hashlib.sha256(Path(f).read_bytes()).hexdigest())
                      for f in record["files"])
        argv = tuple(Path(a).relative_to(out_dir).as_posix() if a in record["files"] else a for a in record["argv"])
        rows.append((record["id"], argv, files))
    return rows


@pytest.mark.parametrize("name", PROGRAMS)
def test_generator_is_deterministic_and_diverse(name: str, tmp_path: Path) -> None:
    module = generator(name)
    first = list(module.generate(count=300, seed=1, out_dir=str(tmp_path / "a")))
    again = list(module.generate(count=300, seed=1, out_dir=str(tmp_path / "b")))
    assert len(first) == 300
    for n, record in enumerate(first):  # valid campaign records for a script entry
        parsed = _record(tmp_path / "spec.toml", record, Entry("script", "workload.py"), f"record {n}")
        assert parsed.files and all(Path(f).is_file() for f in parsed.files)
    assert len({r["id"] for r in first}) == 300
    snap = snapshot(first, tmp_path / "a")
    assert snap == snapshot(again, tmp_path / "b"), "same seed, different records or files"
    # Distinct inputs: the options and the files' contents, not merely the file names.
    distinct = {(tuple(a for a in argv if not a.endswith(tuple(Path(f).name for f, _ in files))),
                 tuple(h for _, h in files)) for _, argv, files in snap}
    assert len(distinct) == 300
    other = snapshot(list(module.generate(count=20, seed=2, out_dir=str(tmp_path / "c"))), tmp_path / "c")
    assert [row[1:] for row in other] != [row[1:] for row in snap[:20]], "the seed changes nothing"


def test_generator_files_are_relative_to_its_folder(tmp_path: Path) -> None:
    """With the default (relative) out_dir, files land under the generator's folder and the records name
    them relative to it: prepare.py puts inputs.py next to the campaign spec."""
    copy = tmp_path / "inputs.py"
    copy.write_text((SUITE / "networkx" / "inputs.py").read_text(encoding="utf-8"), encoding="utf-8")
    records = list(load(copy, "_suite_inputs_copy").generate(count=3))
    for record in records:
        (name,) = record["files"]
        assert not Path(name).is_absolute() and (tmp_path / name).is_file()


def test_whoosh_vocabulary_matches_workload() -> None:
    pytest.importorskip("whoosh", reason="Whoosh is not installed (pip install -e '.[bench]')")
    workload = load(SUITE / "whoosh" / "workload.py", "_suite_whoosh_workload")
    inputs = generator("whoosh")
    assert workload.SYLLABLES == inputs.SYLLABLES
    assert [workload.word(r) for r in range(0, 20000, 97)] == [inputs.word(r) for r in range(0, 20000, 97)]


def test_whoosh_small_input_end_to_end(tmp_path: Path) -> None:
    pytest.importorskip("whoosh", reason="Whoosh is not installed (pip install -e '.[bench]')")
    records = list(generator("whoosh").generate(count=40, seed=1, out_dir=str(tmp_path / "inputs")))

    def work(record: dict) -> int:
        argv = record["argv"]
        value = lambda flag: int(argv[argv.index(flag) + 1])  # noqa: E731
        return value("--docs") * value("--doc-words") * value("--pages") * value("--hits") * value("--repeat")

    # A cheap input that highlights (Whoosh's own tie-breaking between fragments is not deterministic).
    record = min((r for r in records if "--highlight" in r["argv"]), key=work)
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = {**os.environ, "PYTHONHASHSEED": "0", "TMPDIR": str(temp)}
    runs = [subprocess.run([sys.executable, str(SUITE / "whoosh" / "workload.py"), *record["argv"], *extra],
                           cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
            for extra in (["--storage", "ram"], ["--storage", "dir"])]
    for run in runs:
        assert run.returncode == 0, run.stderr
        assert run.stdout.startswith("whoosh: ") and "sha256" in run.stdout
    # Same results (digest of hits and highlights) from two runs, whatever the storage.
    assert runs[0].stdout == runs[1].stdout, "the workload is not deterministic"
    assert not any(temp.iterdir()), "the workload left temporary files behind"


def test_mistune_small_input_renders_the_same_twice(tmp_path: Path) -> None:
    pytest.importorskip("mistune", reason="mistune is not installed (pip install -e '.[bench]')")
    records = list(generator("mistune").generate(count=30, seed=1, out_dir=str(tmp_path / "inputs")))
    record = min(records, key=lambda r: Path(r["files"][0]).stat().st_size * int(r["argv"][r["argv"].index("--repeat") + 1]))
    runs = [subprocess.run([sys.executable, str(SUITE / "mistune" / "workload.py"), *record["argv"]], cwd=tmp_path,
                           capture_output=True, text=True, timeout=120) for _ in range(2)]
    assert all(run.returncode == 0 for run in runs), runs[0].stderr
    assert runs[0].stdout.startswith("mistune: 1 files") and runs[0].stdout == runs[1].stdout
