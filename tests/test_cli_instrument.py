"""End-to-end: the real ``mantispy`` CLI on a small multi-file app (package, data file, broken file)."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from mantispy.instrument.manifest import Manifest
from tests.helpers import MANTISPY

APP = {
    "app.py": """
        import sys
        from wordy.count import top_words

        def main(argv):
            path, n = argv[0], int(argv[1])
            with open(path) as fh:
                text = fh.read()
            for word, count in top_words(text, n):
                print(word, count)
            if n > 50:
                sys.exit(4)

        if __name__ == "__main__":
            main(sys.argv[1:])
        """,
    "wordy/__init__.py": '"""Word tools."""\n',
    "wordy/count.py": """
        from collections import Counter

        def top_words(text, n):
            words = [w.lower() for w in text.split() if w.isalpha()]
            return Counter(words).most_common(n)
        """,
    "wordy/__main__.py": """
        import sys
        from wordy.count import top_words
        print(top_words(" ".join(sys.argv[1:]), 2))
        """,
    "data/words.txt": "the cat and the dog and the bird\n",
    "README.txt": "not python\n",
}


def make_app(root: Path, extra: dict[str, str] | None = None) -> Path:
    for rel, text in {**APP, **(extra or {})}.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
    return root


def tree_digest(root: Path) -> str:
    h = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        if path.is_file():
            h.update(str(path.relative_to(root)).encode() + path.read_bytes())
    return h.hexdigest()


def mantispy(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*MANTISPY, *map(str, args)], capture_output=True, text=True, cwd=cwd, timeout=300)


def test_instrument_mirrors_tree_writes_manifest_and_run_collects_features(tmp_path):
    src = make_app(tmp_path / "src")
    before = tree_digest(src)
    out = tmp_path / "out"
    proc = mantispy("instrument", src, "-o", out)
    assert proc.returncode == 0, proc.stderr
    assert tree_digest(src) == before  # SRC is never written
    assert (out / "data/words.txt").read_text() == (src / "data/words.txt").read_text()
    assert (out / "README.txt").exists()
    manifest = Manifest.load(out)
    assert {f.path: f.status for f in manifest.files}["wordy/count.py"] == "instrumented"
    assert {f.path: f.status for f in manifest.files}["README.txt"] == "copied"
    ids = [f.id for f in manifest.features]
    assert len(ids) == len(set(ids))
    feature = manifest.feature("wordy/count.py:top_words:loop:1")
    assert feature.kind == "loop" and feature.module == "wordy.count" and feature.qualname == "top_words"
    assert feature.snippet == "for w in text.split() if w.isalpha()]"
    assert feature.span[0] == 4

    features_file = tmp_path / "f.json"
    run = mantispy("run", out, "--features-out", features_file, "--", "app.py", src / "data/words.txt", "2", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split("\n")[:2] == ["the 3", "and 2"]
    values = json.loads(features_file.read_text())
    assert values["wordy/count.py:top_words:loop:1"] == 8
    assert values["app.py:main:loop:1"] == 2
    assert values["app.py:main:branch:2"] == 1  # implicit else of `if n > 50`
    assert values["app.py:main:value:n#1"] == 2

    again = mantispy("instrument", src, "-o", out)  # replacing an earlier mantispy output is fine
    assert again.returncode == 0, again.stderr
    assert [f.id for f in Manifest.load(out).features] == ids


def test_run_module_entry_exit_status_and_features_table(tmp_path):
    src = make_app(tmp_path / "src")
    out = tmp_path / "out"
    assert mantispy("instrument", src, "-o", out).returncode == 0
    features_file = tmp_path / "m.json"
    run = mantispy("run", out, "--features-out", features_file, "--", "-m", "wordy", "a", "b", "a", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert "('a', 2)" in run.stdout
    assert json.loads(features_file.read_text())["wordy/count.py:top_words:call"] == 1
    exit4 = mantispy("run", out, "--features-out", features_file, "--", "app.py", src / "data/words.txt", "60", cwd=tmp_path)
    assert exit4.returncode == 4
    assert json.loads(features_file.read_text())["app.py:main:branch:1"] == 1
    table = mantispy("features", features_file, "--manifest", out, "--top", "5")
    assert table.returncode == 0, table.stderr
    assert "top_words" in table.stdout


def test_syntax_error_is_reported_others_instrumented_and_exit_status(tmp_path):
    src = make_app(tmp_path / "src", {"wordy/broken.py": "def f(:\n    pass\n"})
    out = tmp_path / "out"
    proc = mantispy("instrument", src, "-o", out)
    assert proc.returncode == 1
    assert "wordy/broken.py:1: " in proc.stderr
    assert (out / "wordy/broken.py").read_text() == "def f(:\n    pass\n"
    statuses = {f.path: f.status for f in Manifest.load(out).files}
    assert statuses["wordy/broken.py"] == "error" and statuses["wordy/count.py"] == "instrumented"
    skipped = mantispy("instrument", src, "-o", out, "--skip-errors")
    assert skipped.returncode == 0
    assert "wordy/broken.py:1: " in skipped.stderr


def test_exclude_only_and_k_options(tmp_path):
    src = make_app(tmp_path / "src")
    out = tmp_path / "out"
    proc = mantispy("instrument", src, "-o", out, "--exclude", "wordy/*", "--only", "loops,values", "--k", "2")
    assert proc.returncode == 0, proc.stderr
    manifest = Manifest.load(out)
    assert {f.path: f.status for f in manifest.files}["wordy/count.py"] == "excluded"
    assert (out / "wordy/count.py").read_text() == (src / "wordy/count.py").read_text()
    assert {f.kind for f in manifest.features} == {"loop", "value"}
    assert max(f.version or 0 for f in manifest.features) == 2
    assert manifest.options["k"] == 2


@pytest.mark.parametrize(
    "args,message",
    [
        (["instrument", "{src}", "-o", "{src}/inside"], "overlaps the source"),
        (["instrument", "{src}", "-o", "{src}"], "overlaps the source"),
        (["instrument", "{tmp}/missing", "-o", "{tmp}/o"], "no such file or directory"),
        (["instrument", "{src}/README.txt", "-o", "{tmp}/o"], "not a .py file"),
        (["instrument", "{src}", "-o", "{tmp}/foreign"], "not a mantispy output"),
        (["instrument", "{src}", "-o", "{tmp}/o", "--only", "loops,bogus"], "unknown family bogus"),
        (["run", "{src}", "--features-out", "{tmp}/f.json", "--", "app.py"], "not an instrumented folder"),
        (["run", "{tmp}/out", "--features-out", "{tmp}/f.json", "--", "nope.py"], "nope.py: no such script"),
    ],
)
def test_bad_input_gives_one_line_error_and_nonzero_exit(tmp_path, args, message):
    src = make_app(tmp_path / "src")
    (tmp_path / "foreign").mkdir()
    (tmp_path / "foreign" / "keep.txt").write_text("user data")
    assert mantispy("instrument", src, "-o", tmp_path / "out").returncode == 0
    before = tree_digest(src)
    proc = mantispy(*[a.format(src=src, tmp=tmp_path) for a in args])
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert message in proc.stderr, proc.stderr
    if "family" not in message:
        assert len(lines) == 1 and lines[0].startswith("mantispy: error: ")
    assert tree_digest(src) == before
    assert (tmp_path / "foreign" / "keep.txt").read_text() == "user data"


def test_help_for_every_verb():
    for verb in ("instrument", "run", "features"):
        proc = mantispy(verb, "--help")
        assert proc.returncode == 0 and "Usage:" in proc.stdout
    assert mantispy("--version").stdout.strip().endswith(__import__("mantispy").__version__)
    assert sys.executable
