"""The slice emitter: hand-checked slices of small multi-file programs, emitted as feature evaluators, give
the same values as the full program instrumented by the real instrumentor, for several inputs.

Slices are picked by hand with markers at the end of source lines: ``# @L @V.2`` puts the CFG vertices that
start on that line (all of them, or only the 2nd from the left with ``.2``) in the slices tagged L and V.
Vertex spans are those of docs/contracts.md, taken from ``ast`` nodes: a simple statement, an if/while test,
a for loop's iterable and target, a with item, a handler, a match subject, a case's pattern..guard, a
def/class statement.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from mantispy.core.types import Span
from mantispy.instrument.transformer import instrument_source
from mantispy.slicer import guard
from mantispy.slicer.emit import EmitError, EmitReport, emit_slice
from mantispy.slicer.program import Program
from mantispy.slicer.slice_result import SliceResult
from tests.helpers import interpreter

REPO = Path(__file__).resolve().parent.parent

# ====================================================================== programs
SHOP = {
    "main.py": '''
        """Entry script of the test shop: python main.py N MODE [WORD...]."""
        import sys

        from shop import core
        from shop.util import parse_args, log


        def run(argv):  # @A
            n, mode, words = parse_args(argv)  # @A
            log("start", n)
            total = core.accumulate(n)  # @L @C @V
            label = core.classify(n, mode)  # @B
            errors = core.check(words)  # @E
            print(total, label, errors)
            return total


        if __name__ == "__main__":  # @A
            run(sys.argv[1:])  # @A
        ''',
    "shop/__init__.py": '''
        """The test shop package."""
        VERSION = "1.0"
        ''',
    "shop/util.py": '''
        """Helpers of the test shop."""
        import os


        def parse_args(argv):  # @A
            n = int(argv[0]) if argv else 3  # @A
            mode = argv[1] if len(argv) > 1 else "plain"  # @A
            words = argv[2:]  # @A
            return n, mode, words  # @A


        def log(*parts):
            print("log:", *parts, os.getpid())


        def square(x):
            return x * x  # @C
        ''',
    "shop/core.py": '''
        """Core computations of the test shop (non-ASCII text: café, 数)."""
        from shop.util import square


        def accumulate(n):  # @L @C @V
            total = 0  # @C
            title = "café ☕"; k = n  # @L.2 @V.2
            for i in range(n):  # @L @C
                total += square(i)  # @C
            while k > 0:  # @L @V
                k //= 2  # @L @V
            evens = [j for j in range(n) if j % 2 == 0]  # @L
            print(title)
            return total + len(evens)


        def classify(n, mode):  # @B
            label = "é" * n if n < 2 else "big"  # @B
            if n == 0:  # @B
                label = "zero"
            elif n < 5:  # @B
                label = "small"
            else:
                label = "large"
            if mode == "loud":  # @B
                label = label.upper()
            match mode:  # @B
                case "plain":  # @B
                    label += "."
                case "loud" | "quiet" if n > 1:  # @B
                    label += "!"
                case _:  # @B
                    pass
            return label


        def check(words):  # @E
            errors = 0
            for w in words:  # @E
                try:
                    value = 10 // int(w)  # @E
                except ValueError:  # @E
                    errors += 1
                except ZeroDivisionError:  # @E
                    errors += 2
                else:
                    errors -= value
            return errors
        ''',
}

SHOP_INPUTS = [[], ["0"], ["1", "loud"], ["4", "quiet", "1", "x", "0"], ["7", "plain", "2", "0", "y", "5"],
               ["12", "other", "3"], ["2", "quiet", "0", "0"]]

CALC = {
    "calc/__init__.py": "",
    "calc/__main__.py": '''
        import sys

        from calc.engine import Engine


        def main():  # @X
            engine = Engine()  # @X
            for token in sys.argv[1:]:  # @X
                engine.feed(token)  # @X
            print(engine.level)


        main()  # @X
        ''',
    "calc/engine.py": '''
        class Engine:  # @X
            def __init__(self):  # @X
                self.level = 0; self.seen = []  # @X.1

            def feed(self, token):  # @X
                if (m := len(token)) > 2:  # @X
                    self.level += m  # @X
                self.seen.append(token)
                return self.level  # @X


        def total(words):  # @X
            engine = Engine()  # @X
            return sum(engine.feed(w) for w in words)  # @X
        ''',
}

CALC_INPUTS = [["a"], ["abc", "de", "fghij", "klmn"], ["xyz"] * 7, []]


# ====================================================================== helpers
def write_tree(root: Path, files: dict[str, str]) -> Path:
    """Write a program (sources dedented)."""
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return root


def instrument_tree(src: Path, dst: Path) -> Path:
    """Instrument every file of ``src`` with the real instrumentor into ``dst``."""
    for path in src.rglob("*.py"):
        rel = path.relative_to(src).as_posix()
        out = dst / rel
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(instrument_source(path.read_text(encoding="utf-8"), rel).code, encoding="utf-8")
    return dst


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MANTIS_") and k != "PYTHONPATH"}
    env.update(extra)
    return env


def instrumented_features(inst: Path, command: list[str], tmp: Path) -> dict[str, float]:
    """Run the instrumented program (``command`` after the interpreter, cwd ``inst``); its features."""
    out = tmp / "features.json"
    if out.exists():
        out.unlink()
    proc = subprocess.run([sys.executable, *command], cwd=inst, capture_output=True, text=True, timeout=120,
                          env=clean_env(MANTIS_FEATURES_OUT=str(out), PYTHONPATH=str(inst)))
    assert out.exists(), proc.stderr
    return json.loads(out.read_text())


def run_evaluator(out_dir: Path, args: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(out_dir / "evaluate.py"), *args], capture_output=True, text=True,
                          timeout=120, cwd=cwd or out_dir.parent, env=clean_env())


def evaluator_value(out_dir: Path, args: list[str]) -> float:
    proc = run_evaluator(out_dir, args)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    return float(proc.stdout)


_TAG = re.compile(r"@(\w+)(?:\.(\d+))?")


def _span(node: ast.AST) -> Span:
    return (node.lineno, node.col_offset, node.end_lineno, node.end_col_offset)


def _vertices(node: ast.AST) -> tuple[int, int, list[Span]] | None:
    """(line, col, vertex spans) of the vertices an ast node stands for (contract, "kept")."""
    if isinstance(node, (ast.If, ast.While)):
        return node.lineno, node.col_offset, [_span(node.test)]
    if isinstance(node, (ast.For, ast.AsyncFor)):
        return node.lineno, node.col_offset, [_span(node.iter), _span(node.target)]
    if isinstance(node, (ast.With, ast.AsyncWith)):
        spans = [(i.context_expr.lineno, i.context_expr.col_offset, *_span(i.optional_vars or i.context_expr)[2:])
                 for i in node.items]
        return node.lineno, node.col_offset, spans
    if isinstance(node, (ast.Try, ast.TryStar)):
        return None
    if isinstance(node, ast.Match):
        return node.lineno, node.col_offset, [_span(node.subject)]
    if isinstance(node, ast.match_case):
        last = node.guard or node.pattern
        return node.pattern.lineno, node.pattern.col_offset, [(*_span(node.pattern)[:2], *_span(last)[2:])]
    if isinstance(node, (ast.stmt, ast.ExceptHandler)):
        return node.lineno, node.col_offset, [_span(node)]
    return None


def marked_spans(source: str, tags: set[str]) -> list[Span]:
    """The vertex spans of the lines marked with one of ``tags`` (see the module docstring)."""
    wanted: dict[int, set[int | None]] = {}
    for number, line in enumerate(source.splitlines(), 1):
        if "# @" in line:
            for tag, nth in _TAG.findall(line[line.index("# @"):]):
                if tag in tags:
                    wanted.setdefault(number, set()).add(int(nth) if nth else None)
    on_line: dict[int, list[tuple[int, list[Span]]]] = {}
    for node in ast.walk(ast.parse(source)):
        found = _vertices(node)
        if found is not None and found[0] in wanted:
            on_line.setdefault(found[0], []).append((found[1], found[2]))
    spans: list[Span] = []
    for line, picks in wanted.items():
        candidates = [s for _, s in sorted(on_line.get(line, []))]
        assert candidates, f"marker on line {line} but no vertex starts there"
        for nth in picks:
            for group in (candidates if nth is None else [candidates[nth - 1]]):
                spans.extend(group)
    return sorted(spans)


def feature_of(root: Path, file: str, feature_id: str):
    """The instrumentor's Feature for an id (its span is what the manifest gives)."""
    source = (root / file).read_text(encoding="utf-8")
    features = {f.id: f for f in instrument_source(source, file).features}
    assert feature_id in features, sorted(features)
    return features[feature_id]


def find_feature(root: Path, file: str, detail: str, snippet: str) -> str:
    """The id of the feature of ``file`` with this detail whose line contains ``snippet``."""
    source = (root / file).read_text(encoding="utf-8")
    hits = [f.id for f in instrument_source(source, file).features if f.detail == detail and snippet in f.snippet]
    assert len(hits) == 1, hits
    return hits[0]


def hand_slice(root: Path, feature_id: str, tags: set[str], entry: str,
               keep_units: dict[str, list[str]] | None = None) -> SliceResult:
    """A SliceResult built from the markers of every file of ``root``."""
    kept = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        spans = marked_spans(path.read_text(encoding="utf-8"), tags)
        if spans:
            kept[rel] = spans
    file = feature_id.split(":", 1)[0]
    feature = feature_of(root, file, feature_id)
    return SliceResult(criterion=feature_id, criterion_kind=feature.kind, criterion_file=file,
                       criterion_span=tuple(feature.span), entry=entry, kept=kept, keep_units=keep_units or {})


def emit(root: Path, out: Path, result: SliceResult, k: int = 5) -> EmitReport:
    # Through JSON, as the artefact travels between the stages.
    result = SliceResult.from_json(result.to_json())
    report = emit_slice(Program.load(root), result, out, k=k)
    for rel in report.files:
        compile((out / rel).read_text(encoding="utf-8"), rel, "exec")
    return report


@pytest.fixture(scope="module")
def shop(tmp_path_factory):
    """The shop program, its instrumented copy and the features of every input (one run each)."""
    base = tmp_path_factory.mktemp("shop")
    root = write_tree(base / "src", SHOP)
    inst = instrument_tree(root, base / "inst")
    runs = {tuple(args): instrumented_features(inst, ["main.py", *args], base) for args in SHOP_INPUTS}
    return root, runs, base


def check_against_instrumented(shop, feature_id: str, tags: set[str], name: str,
                               keep_units: dict[str, list[str]] | None = None) -> EmitReport:
    root, runs, base = shop
    out = base / f"eval-{name}"
    report = emit(root, out, hand_slice(root, feature_id, tags | {"A"}, "main.py", keep_units))
    values = {}
    for args, features in runs.items():
        expected = features.get(feature_id, 0)
        got = evaluator_value(out, list(args))
        values[args] = (got, expected)
    assert all(got == expected for got, expected in values.values()), values
    assert len({e for _, e in values.values()}) > 1, f"inputs do not exercise {feature_id}: {values}"
    return report


# ====================================================================== the feature kinds
@pytest.mark.parametrize("detail, snippet", [
    ("for", "for i in range(n)"),
    ("while", "while k > 0"),
    ("comprehension", "for j in range(n)"),
])
def test_loop_counters_match_the_instrumented_program(shop, detail, snippet):
    feature_id = find_feature(shop[0], "shop/core.py", detail, snippet)
    report = check_against_instrumented(shop, feature_id, {"L"}, f"loop-{detail}")
    core = (report.out_dir / "shop/core.py").read_text(encoding="utf-8")
    assert "print(title)" not in core and "title =" not in core  # sliced away
    assert "square" not in core  # the loop body and the import it needed are gone
    assert core.count("_mantis_n(_mantis_k[0])") == 1


@pytest.mark.parametrize("detail, snippet", [
    ("if", "if n == 0"),
    ("elif", "elif n < 5"),
    ("else", "else"),
    ("if", 'if mode == "loud"'),
    ("implicit-else", 'if mode == "loud"'),
    ("ifexp-true", '"é" * n'),
    ("ifexp-false", '"é" * n'),
    ("case", 'case "plain"'),
    ("case", 'case "loud"'),
    ("case", "case _"),
])
def test_branch_arm_counters_match_the_instrumented_program(shop, detail, snippet):
    root = shop[0]
    if detail == "else":
        source = (root / "shop/core.py").read_text(encoding="utf-8")
        hits = [f.id for f in instrument_source(source, "shop/core.py").features if f.detail == "else"]
        feature_id = hits[0]
    else:
        feature_id = find_feature(root, "shop/core.py", detail, snippet)
    report = check_against_instrumented(shop, feature_id, {"B"}, f"branch-{detail}-{abs(hash(snippet))}")
    core = (report.out_dir / "shop/core.py").read_text(encoding="utf-8")
    assert 'label = "zero"' not in core  # arm bodies are not in the slice: they became pass
    assert "pass" in core


def test_try_else_counter_matches_the_instrumented_program(shop):
    feature_id = find_feature(shop[0], "shop/core.py", "try-else", "else")
    check_against_instrumented(shop, feature_id, {"E"}, "try-else")


def test_call_counter_of_a_unit_kept_only_through_keep_units(shop):
    report = check_against_instrumented(shop, "shop/util.py:square:call", {"C"}, "call",
                                        keep_units={"shop/util.py": ["square"]})
    util = (report.out_dir / "shop/util.py").read_text(encoding="utf-8")
    # its def statement is not marked: keep_units keeps it; the tick is on the first line of its body
    assert "def square(x):\n    _mantis_n(_mantis_k[0]); return x * x" in util
    # main.py's kept ``from shop.util import parse_args, log`` needs ``log``: a stub, its body became pass
    assert "def log(*parts):\n    pass" in util
    assert "print(" not in util and "import os" not in util


@pytest.mark.parametrize("snippet", ["except ValueError", "except ZeroDivisionError"])
def test_exception_handler_counters_match_the_instrumented_program(shop, snippet):
    feature_id = find_feature(shop[0], "shop/core.py", "except", snippet)
    check_against_instrumented(shop, feature_id, {"E"}, f"except-{snippet[7:]}")


@pytest.mark.parametrize("feature_id, tags", [
    ("shop/core.py:accumulate:value:k#1", {"V"}),
    ("shop/core.py:accumulate:value:k#3", {"V"}),
    ("shop/core.py:accumulate:value:i#3", {"L"}),  # a for target
    ("shop/util.py:square:value:x#3", {"C"}),  # a parameter
])
def test_value_versions_match_the_instrumented_program(shop, feature_id, tags):
    keep_units = {"shop/util.py": ["square"]} if "square" in feature_id else None
    check_against_instrumented(shop, feature_id, tags, "value-" + feature_id.replace("/", "_").replace(":", "_"),
                               keep_units)


# ====================================================================== entries: -m and module:function
@pytest.fixture(scope="module")
def calc(tmp_path_factory):
    base = tmp_path_factory.mktemp("calc")
    root = write_tree(base / "src", CALC)
    inst = instrument_tree(root, base / "inst")
    return root, inst, base


@pytest.mark.parametrize("feature_id", [
    "calc/engine.py:Engine:value:self.level#2",  # attribute: tapped assignment and re-read after +=
    "calc/engine.py:Engine.feed:value:m#3",  # walrus
    "calc/engine.py:Engine.feed:call",
    "calc/engine.py:Engine.feed:branch:2",  # implicit else of the walrus test
])
def test_module_entry(calc, feature_id):
    root, inst, base = calc
    out = base / ("m-" + feature_id.replace("/", "_").replace(":", "_").replace("#", "_"))
    report = emit(root, out, hand_slice(root, feature_id, {"X"}, "-m calc"))
    engine = (out / "calc/engine.py").read_text(encoding="utf-8")
    assert "self.seen" not in engine
    assert report.command[-1].endswith("evaluate.py")
    values = []
    for args in CALC_INPUTS:
        expected = instrumented_features(inst, ["-m", "calc", *args], base).get(feature_id, 0)
        values.append((evaluator_value(out, args), expected))
    assert all(a == b for a, b in values), values
    assert len({b for _, b in values}) > 1, values


def test_function_entry_with_keyword_arguments(calc):
    root, inst, base = calc
    feature_id = "calc/engine.py:Engine.feed:value:m#3"
    out = base / "fn-entry"
    emit(root, out, hand_slice(root, feature_id, {"X"}, "calc.engine:total"))
    for words in (["abcd", "ef", "ghijk"], ["a", "b", "cdef", "ghi", "jklmn"]):
        expected = instrumented_features(
            inst, ["-m", "mantispy.runtime.entry", "calc.engine:total", json.dumps({"words": words})], base)[feature_id]
        assert evaluator_value(out, [json.dumps({"words": words})]) == expected
        code = ("import sys; sys.path.insert(0, sys.argv[1]); from evaluate import evaluate; "
                "print(evaluate(words=sys.argv[2:]), evaluate(words=sys.argv[2:]))")
        proc = subprocess.run([sys.executable, "-c", code, str(out), *words], capture_output=True, text=True,
                              env=clean_env(), cwd=base)
        assert proc.stdout.split() == [str(float(expected))] * 2, proc.stderr  # repeatable in one process


# ====================================================================== no side effects, no mantispy
FILES = {
    "count.py": '''
        import sys


        def main(path, out):  # @R @W @S
            with open(path) as fh:  # @R @W @S
                lines = fh.read().splitlines()  # @R @W @S
            count = 0
            for line in lines:  # @R @W @S
                count += 1
            with open(out, "w") as fh:  # @W
                fh.write(str(count))
            try:
                open(out, "a").close()  # @S
            except OSError:
                pass
            print("done")


        main(sys.argv[1], sys.argv[2])  # @R @W @S
        ''',
}


@pytest.fixture()
def files_program(tmp_path):
    root = write_tree(tmp_path / "src", FILES)
    data = tmp_path / "input.txt"
    data.write_text("a\nb\nc\n")
    return root, data, tmp_path


def test_reading_input_is_allowed_and_stdout_is_only_the_value(files_program):
    root, data, tmp = files_program
    emit(root, tmp / "out", hand_slice(root, "count.py:main:loop:1", {"R"}, "count.py"))
    proc = run_evaluator(tmp / "out", [str(data), str(tmp / "never.txt")])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "3\n"
    assert not (tmp / "never.txt").exists()


@pytest.mark.parametrize("tag", ["W", "S"])  # S: the program catches the PermissionError itself
def test_a_kept_write_fails_loudly_and_writes_nothing(files_program, tag):
    root, data, tmp = files_program
    out = tmp / f"out-{tag}"
    emit(root, out, hand_slice(root, "count.py:main:loop:1", {tag}, "count.py"))
    target = tmp / "result.txt"
    proc = run_evaluator(out, [str(data), str(target)])
    assert proc.returncode != 0
    assert f"PermissionError: mantispy evaluator: the slice tried to write {target}" in proc.stderr
    assert proc.stdout == ""
    assert not target.exists()


def test_the_evaluator_does_not_import_mantispy(shop):
    root, _, base = shop
    out = base / "no-mantispy"
    emit(root, out, hand_slice(root, "shop/core.py:accumulate:loop:2", {"L", "A"}, "main.py"))
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import evaluate; v = evaluate.evaluate(['12']); "
            "print(v, sorted(m for m in sys.modules if m.split('.')[0] == 'mantispy'))")
    proc = subprocess.run([sys.executable, "-c", code, str(out)], capture_output=True, text=True, env=clean_env(),
                          cwd=base)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split(" ", 1) == ["4.0", "[]\n"]
    for path in out.rglob("*.py"):
        assert not re.search(r"^\s*(import|from)\s+mantispy", path.read_text(encoding="utf-8"), re.M), path


def test_guard_refuses_writes_processes_and_connections_and_uninstalls(tmp_path):
    import shutil
    import socket

    readable = tmp_path / "in.txt"
    readable.write_text("x")
    patches = guard.install()
    try:
        with open(readable) as fh:
            assert fh.read() == "x"
        for attempt in (lambda: open(tmp_path / "w.txt", "w"), lambda: open(tmp_path / "a.txt", "a"),
                        lambda: open(readable, "r+"), lambda: (tmp_path / "p.txt").write_text("no"),
                        lambda: os.remove(readable), lambda: os.rename(readable, tmp_path / "r"),
                        lambda: os.makedirs(tmp_path / "d"), lambda: shutil.rmtree(tmp_path),
                        lambda: shutil.copy(readable, tmp_path / "c"), lambda: os.system("true"),
                        lambda: subprocess.run(["true"]),
                        lambda: socket.socket().connect(("127.0.0.1", 9))):
            with pytest.raises(PermissionError, match="mantispy evaluator: the slice tried to"):
                attempt()
    finally:
        guard.uninstall(patches)
    assert len(guard.VIOLATIONS) == 12
    (tmp_path / "after.txt").write_text("ok")
    assert subprocess.run(["true"]).returncode == 0
    assert "connect" not in socket.socket.__dict__
    assert readable.exists() and not (tmp_path / "w.txt").exists()


def test_writes_inside_the_evaluations_own_scratch_folder_are_allowed_and_removed(tmp_path, monkeypatch):
    import shutil
    import tempfile

    outside = tmp_path / "outside"
    outside.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp_path / "system-tmp"))
    (tmp_path / "system-tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", None)
    monkeypatch.chdir(outside)
    patches = guard.install()
    try:
        scratch = guard.SCRATCH
        assert scratch is not None and Path(scratch).parent == (tmp_path / "system-tmp").resolve()
        folder = tempfile.mkdtemp(prefix="index-")  # as Whoosh's workload does
        assert Path(folder).parent == Path(scratch)
        with open(os.path.join(folder, "seg.dat"), "w") as fh:
            fh.write("postings")
        os.makedirs(os.path.join(folder, "a", "b"))
        os.rename(os.path.join(folder, "seg.dat"), os.path.join(folder, "a", "seg.dat"))
        with tempfile.NamedTemporaryFile("w") as handle:
            handle.write("x")
        shutil.rmtree(os.path.join(folder, "a"))  # fd-relative unlinks and rmdirs
        os.symlink(str(outside), os.path.join(folder, "escape"))
        for attempt in (lambda: open(os.path.join(folder, "escape", "x.txt"), "w"),  # a link out of it
                        lambda: open("relative.txt", "w"),  # the working directory is outside
                        lambda: os.rename(os.path.join(folder), str(outside / "moved")),
                        lambda: open(os.path.join(folder, "..", "..", "outside", "y.txt"), "w")):
            with pytest.raises(PermissionError, match="the slice tried to write"):
                attempt()
    finally:
        guard.uninstall(patches)
    assert not Path(scratch).exists() and guard.SCRATCH is None
    assert tempfile.tempdir is None and os.environ["TMPDIR"] == str(tmp_path / "system-tmp")
    assert list(outside.iterdir()) == [] and list((tmp_path / "system-tmp").iterdir()) == []


SCRATCH_PROGRAM = {
    "index.py": '''
        import os
        import shutil
        import sys
        import tempfile


        def main(n):  # @K
            folder = tempfile.mkdtemp()  # @K
            for i in range(n):  # @K
                with open(os.path.join(folder, f"doc{i}.txt"), "w") as fh:  # @K
                    fh.write("x" * i)  # @K
            with open(os.path.join(tempfile.gettempdir(), "fixed-name.txt"), "a") as fh:  # @K
                fh.write("once")  # @K
            with open(os.path.join(tempfile.gettempdir(), "fixed-name.txt")) as fh:  # @K
                seen = fh.read()  # @K
            sizes = 0  # @K
            for name in sorted(os.listdir(folder)):  # @K
                sizes += os.path.getsize(os.path.join(folder, name))  # @K
            shutil.rmtree(folder)  # @K
            if seen != "once":  # @K
                for k in range(1000):  # @K
                    pass
            for k in range(sizes):  # @K
                pass


        main(int(sys.argv[1]))  # @K
        ''',
}


def test_an_evaluator_that_builds_files_in_its_temporary_folder_works_cold_and_warm(tmp_path, monkeypatch):
    """Each evaluation (also each forked one of a warm evaluator) starts with an empty scratch folder,
    and none is left behind."""
    from mantispy.slicer.warm_client import WarmEvaluator

    root = write_tree(tmp_path / "src", SCRATCH_PROGRAM)
    feature = find_feature(root, "index.py", "for", "for k in range(sizes)")
    out = tmp_path / "out"
    emit(root, out, hand_slice(root, feature, {"K"}, "index.py"))
    system_tmp = tmp_path / "system-tmp"
    system_tmp.mkdir()
    proc = subprocess.run([sys.executable, str(out / "evaluate.py"), "5"], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path, env=clean_env(TMPDIR=str(system_tmp)))
    assert proc.returncode == 0, proc.stderr
    assert float(proc.stdout) == 0 + 1 + 2 + 3 + 4
    monkeypatch.setenv("TMPDIR", str(system_tmp))  # the warm server inherits it
    warm = WarmEvaluator(out)
    warm.start()
    try:
        values = [warm.evaluate([str(n)], None, cwd=str(tmp_path), timeout=60)[0][feature] for n in (4, 4, 6)]
    finally:
        warm.close()
    assert values == [6.0, 6.0, 15.0]  # a folder shared between evaluations would add 1000
    assert list(system_tmp.iterdir()) == []


STDIN_PROGRAM = {
    "filter.py": '''
        import sys


        def main(limit):  # @S
            text = sys.stdin.read() if limit < 0 else ""  # @S
            for ch in text:  # @S
                pass
            for k in range(abs(limit)):  # @S
                pass


        main(int(sys.argv[1]))  # @S
        ''',
}


def test_a_warm_evaluation_reads_an_empty_stdin_as_profiled_runs_do(tmp_path):
    """Profiled runs read /dev/null on stdin; a forked evaluation of a warm server must too, not the
    server's own stdin (the client's request pipe: it would wait for the next request, or eat it)."""
    from mantispy.slicer.warm_client import WarmEvaluator

    root = write_tree(tmp_path / "src", STDIN_PROGRAM)
    feature = find_feature(root, "filter.py", "for", "for ch in text")
    out = tmp_path / "out"
    emit(root, out, hand_slice(root, feature, {"S"}, "filter.py"))
    with WarmEvaluator(out) as warm:
        values = [warm.evaluate([n], None, cwd=str(tmp_path), timeout=30)[0][feature] for n in ("-3", "2", "-1")]
    assert values == [0.0, 0.0, 0.0]



def test_a_cold_evaluation_reads_an_empty_stdin_whatever_its_caller_gives_it(tmp_path):
    """The command line and evaluate_all read no stdin either: a predictor's caller may have one."""
    root = write_tree(tmp_path / "src", STDIN_PROGRAM)
    feature = find_feature(root, "filter.py", "for", "for ch in text")
    out = tmp_path / "out"
    emit(root, out, hand_slice(root, feature, {"S"}, "filter.py"))
    for args in (["-3"], ["--mantis-json", "-3"]):
        proc = subprocess.run([sys.executable, str(out / "evaluate.py"), *args], input="abc", capture_output=True,
                              text=True, timeout=120, cwd=tmp_path, env=clean_env())
        assert proc.returncode == 0, proc.stderr
        assert float(json.loads(proc.stdout)[feature] if args[0] == "--mantis-json" else proc.stdout) == 0.0


REGEX_PROGRAM = {
    "scan.py": '''
        import re
        import sys

        WORD = "caf[eé]+ [0-9]+"


        def main(text):  # @R
            cached = any((str, WORD, int(re.I)) in getattr(re, name, {}) for name in ("_cache", "_cache2"))  # @R
            found = [None] * 10 if cached else []  # @R
            found += re.compile(WORD, re.I).findall(text) + re.compile(rb"\\xff+").findall(text.encode("latin-1"))  # @R
            for item in found:  # @R
                pass


        main(sys.argv[1])  # @R
        ''',
}


@pytest.mark.parametrize("version", [None, "3.12", "3.13"])
def test_a_warm_server_compiles_the_patterns_its_evaluations_compiled(tmp_path, version):
    """What one evaluation compiles (str and bytes patterns, with flags) the server compiles too, so later
    forks find it in re's cache (which this program looks into, as no real one does); what the patterns
    match is unchanged. On each Python the kit runs on (re's caches are private to it)."""
    text = "Café 12, CAFEE 7 and caf 3 \xff\xff"
    values = warm_loop_counts(tmp_path, REGEX_PROGRAM, "scan.py", "R", version, [text], 2)
    assert values == [3.0, 13.0]  # 2 words and 1 run of bytes; then found in the cache


def warm_loop_counts(tmp_path: Path, program: dict[str, str], name: str, tag: str, version: str | None,
                     argv: list[str], times: int) -> list[float]:
    """The count of ``for item in found`` in ``name``, sliced by ``tag``, from ``times`` evaluations in a row
    by one warm server on Python ``version`` (this one for None; skips when pyenv lacks it)."""
    from mantispy.slicer.warm_client import WarmEvaluator

    root = write_tree(tmp_path / "src", program)
    found = find_feature(root, name, "for", "for item in found")
    out = tmp_path / "out"
    emit(root, out, hand_slice(root, found, {tag}, name))
    python = interpreter(version) if version else sys.executable
    if python is None:
        pytest.skip(f"no CPython {version} under pyenv on this machine")
    with WarmEvaluator(out, python=python) as warm:
        return [warm.evaluate(argv, None, cwd=str(tmp_path), timeout=60)[0][found] for _ in range(times)]


LAZY_IMPORT_PROGRAM = {
    "lazy.py": '''
        import sys


        def main():  # @L
            found = [None] * 3 if "colorsys" in sys.modules else []  # @L
            import colorsys  # @L
            found += [None] * 2 if colorsys.rgb_to_hsv(0.2, 0.4, 0.4)[0] > 0 else []  # @L
            for item in found:  # @L
                pass


        main()  # @L
        ''',
}


@pytest.mark.parametrize("version", [None, "3.12", "3.13"])
def test_a_warm_server_imports_the_standard_library_modules_its_evaluations_imported(tmp_path, version):
    """A standard-library module one evaluation imported at run time (Markdown imports importlib.metadata
    and email to read its installed extensions, some 12 ms per fork) the server imports too, so later forks
    find it imported (which this program looks into, as no real one does); what the module computes is
    unchanged."""
    assert warm_loop_counts(tmp_path, LAZY_IMPORT_PROGRAM, "lazy.py", "L", version, [], 3) == [2.0, 5.0, 5.0]


# ====================================================================== the rewrite itself
def slice_single(tmp_path: Path, source: str, tags: set[str], feature_detail: str, snippet: str,
                 name: str = "prog.py") -> tuple[str, Path]:
    root = write_tree(tmp_path / "src", {name: source})
    feature_id = find_feature(root, name, feature_detail, snippet)
    out = tmp_path / "out"
    emit(root, out, hand_slice(root, feature_id, tags, name))
    return (out / name).read_text(encoding="utf-8"), out


def test_non_ascii_text_before_a_kept_statement_does_not_shift_spans(tmp_path):
    code, out = slice_single(tmp_path, '''
        n = 5  # @K
        s = "ünïcödé ☕ 数"; t = "é"; m = n * 2  # @K.3
        for i in range(m):  # @K
            print(s, t)
        ''', {"K"}, "for", "for i")
    assert 'm = n * 2' in code and "ünïcödé" not in code and 't = "é"' not in code
    assert evaluator_value(out, []) == 10


def test_empty_bodies_get_pass_and_unkept_arms_go(tmp_path):
    code, out = slice_single(tmp_path, '''
        import sys
        import os.path as osp
        n = len(sys.argv)  # @K
        while n < 20:  # @K
            n += 3  # @K
            if n % 2:  # @K
                print("odd")
            elif n % 3:
                print("three")
            else:
                print("other")
            try:
                x = osp.join("a", "b")  # @K
            except TypeError:
                print("no")
            finally:
                print("done")
            with open(osp.devnull) as fh:
                y = n + 1  # @K
        ''', {"K"}, "if", "if n % 2")
    tree = ast.parse(code)
    assert "elif" not in code and "else" not in code and "print" not in code
    assert "finally" not in code and "except" not in code and "with" not in code  # try/with flattened
    assert "import os.path as osp" in code  # the kept try body uses osp
    assert any(isinstance(n, ast.If) and [type(s) for s in n.body] == [ast.Pass] for n in ast.walk(tree))
    assert evaluator_value(out, []) == sum(1 for n in range(1, 20, 3) if (n + 3) % 2)


def test_try_with_handlers_gone_keeps_finally_and_match_without_cases_gets_wildcard(tmp_path):
    code, out = slice_single(tmp_path, '''
        import sys
        total = 0  # @K
        for a in sys.argv[1:]:  # @K
            try:
                total += len(a)  # @K
            except ValueError:
                pass
            finally:
                total += 1  # @K
            match a:  # @K
                case "x":
                    print(a)
        ''', {"K"}, "for", "for a in")
    assert "finally:" in code and "except" not in code and "case _:" in code
    compile(code, "prog.py", "exec")
    assert evaluator_value(out, ["a", "bb", "x"]) == 3


def test_decorators_signatures_and_docstrings_stay(tmp_path):
    code, out = slice_single(tmp_path, '''
        """Module docstring."""
        from __future__ import annotations
        import functools


        def twice(fn):  # @K
            @functools.wraps(fn)
            def inner(*args, scale: int = 2, **kw):  # @K
                return fn(*args, **kw) * scale  # @K
            return inner  # @K


        @twice
        def double(x: int, /, y: int = 1, *, z: int = 0) -> int:  # @K
            """Docstring."""
            print("side")
            return x + y + z  # @K


        print(double(1, 2, z=3))  # @K
        ''', {"K"}, "function", "def double")
    assert code.startswith('"""Module docstring."""')
    assert "from __future__ import annotations" in code
    assert "def double(x: int, /, y: int = 1, *, z: int = 0) -> int:" in code and "@twice" in code
    assert "@functools.wraps(fn)" in code and 'print("side")' not in code
    assert evaluator_value(out, []) == 1


def test_the_criterion_construct_is_kept_even_when_the_slice_forgot_it(tmp_path):
    code, out = slice_single(tmp_path, '''
        import sys
        n = len(sys.argv)  # @K
        if n > 2:  # @K
            print("many")
        else:
            print("few")
        ''', {"K"}, "else", "else")
    assert "else:" in code
    assert evaluator_value(out, []) == 1 and evaluator_value(out, ["a", "b"]) == 0


def test_unknown_criterion_and_entry_are_errors(tmp_path):
    root = write_tree(tmp_path / "src", {"prog.py": "for i in range(3):\n    pass\n"})
    program = Program.load(root)
    good = hand_slice(root, "prog.py:<module>:loop:1", set(), "prog.py")
    with pytest.raises(EmitError, match="no such feature"):
        emit_slice(program, SliceResult(**{**good.__dict__, "criterion": "prog.py:<module>:loop:7"}), tmp_path / "o")
    with pytest.raises(EmitError, match="entry"):
        emit_slice(program, SliceResult(**{**good.__dict__, "entry": "missing.py"}), tmp_path / "o")
    with pytest.raises(EmitError, match="span"):
        emit_slice(program, SliceResult(**{**good.__dict__, "criterion_span": (9, 0, 9, 1)}), tmp_path / "o")


def test_report_counts_statements(shop):
    root, _, base = shop
    report = emit(root, base / "counts", hand_slice(root, "shop/core.py:accumulate:loop:2", {"L", "A"}, "main.py"))
    assert set(report.statements) == {"main.py", "shop/__init__.py", "shop/core.py", "shop/util.py"}
    core = report.statements["shop/core.py"]
    assert 0 < core.kept < core.total
    assert core.total == sum(isinstance(n, ast.stmt) for n in ast.walk(ast.parse((root / "shop/core.py").read_text())))
    assert report.statements_kept < report.statements_total
    assert {"evaluate.py", "_mantis_eval.py", "_mantis_guard.py", "shop/core.py"} <= set(report.files)


# ====================================================================== the artefact
def test_slice_result_json_round_trip_and_the_slicers_dict():
    data = {
        "criterion": "pkg/m.py:f:loop:1", "criterion_kind": "loop", "criterion_file": "pkg/m.py",
        "criterion_span": [3, 4, 5, 12], "criterion_detail": "for", "entry": "-m pkg",
        "kept": {"pkg/m.py": [[3, 13, 3, 20], [1, 0, 5, 12]]}, "keep_units": {"pkg/m.py": ["f"]},
        "calls": [{"site": "pkg/m.py:7:0", "callees": ["pkg/m.py:f"], "why": "it runs code", "implicit": False}],
        "unresolved": ["pkg/m.py:9:4"], "statements_total": 12, "statements_kept": 4, "future_key": {"x": 1},
        "calls_only": {"pkg/m.py": [[7, 0, 7, 18]]},
    }
    result = SliceResult.from_dict(data)
    assert result.calls_only == {"pkg/m.py": [(7, 0, 7, 18)]}
    assert result.criterion_span == (3, 4, 5, 12)
    assert result.kept["pkg/m.py"] == [(3, 13, 3, 20), (1, 0, 5, 12)]
    assert result.extra == {"future_key": {"x": 1}}
    again = SliceResult.from_json(result.to_json())
    assert again == result
    assert json.loads(result.to_json())["future_key"] == {"x": 1}
    assert SliceResult.from_dict({**data, "criterion": "a.py:<module>:value:x#3", "criterion_kind": "value"}
                                 ).criterion_version == 3


def test_one_line_suites_lambdas_and_globals_in_dropped_blocks(tmp_path):
    code, out = slice_single(tmp_path, '''
        import sys
        hits = 0  # @K
        scale = lambda v: v * 2  # @K


        def bump(n):  # @K
            if n > 100:
                global hits
                print("big")
            hits += scale(n); print(n)  # @K.1


        for i in range(len(sys.argv) * 3): bump(i); print(i)  # @K.1 @K.2
        ''', {"K"}, "lambda", "scale = lambda")
    assert "global hits" in code and "big" not in code and "print" not in code
    assert "lambda v: _mantis_n(_mantis_k[0]) and (v * 2)" in code
    assert evaluator_value(out, ["a"]) == 6


PACKAGE_ROOT = {
    "__init__.py": '"""A program whose root folder is itself a package."""\nfrom .tools import helper\n',
    "tools.py": '''
        def helper(n):  # @K
            return [x for x in range(n) if x % 3]  # @K


        def unused():
            return 1
        ''',
    "__main__.py": '''
        import sys
        from . import helper  # @K
        from .tools import unused


        print(len(helper(int(sys.argv[1]))))  # @K
        ''',
}


def test_package_root_relative_imports_and_module_entry(tmp_path):
    root = write_tree(tmp_path / "app", PACKAGE_ROOT)
    instrument_tree(root, tmp_path / "inst" / "app")
    feature_id = "tools.py:helper:loop:1"
    out = tmp_path / "out"
    report = emit(root, out, hand_slice(root, feature_id, {"K"}, "-m app"))
    assert "app/__init__.py" in report.files and "app/tools.py" in report.files
    init = (out / "app/__init__.py").read_text(encoding="utf-8")
    assert "from .tools import helper" in init  # ``from . import helper`` in __main__ needs the binding
    tools = (out / "app/tools.py").read_text(encoding="utf-8")
    assert "unused" not in tools  # nothing kept uses ``unused``: its import in __main__ went too
    for n in ("4", "10"):
        expected = instrumented_features(tmp_path / "inst", ["-m", "app", n], tmp_path).get(feature_id, 0)
        assert evaluator_value(out, [n]) == expected == int(n)


def test_out_dir_must_be_empty_or_an_earlier_evaluator_and_names_must_not_clash(tmp_path):
    root = write_tree(tmp_path / "src", {"prog.py": "for i in range(3):  # @K\n    pass\n"})
    result = hand_slice(root, "prog.py:<module>:loop:1", {"K"}, "prog.py")
    out = tmp_path / "out"
    emit(root, out, result)
    (out / "stale.py").write_text("x = 1\n")
    emit(root, out, result)  # an earlier evaluator is replaced
    assert not (out / "stale.py").exists() and evaluator_value(out, []) == 3
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "keep.txt").write_text("mine")
    with pytest.raises(EmitError, match="not empty"):
        emit_slice(Program.load(root), result, busy)
    assert (busy / "keep.txt").read_text() == "mine"
    clash = write_tree(tmp_path / "clash", {"evaluate.py": "for i in range(3):  # @K\n    pass\n"})
    with pytest.raises(EmitError, match="named like the evaluator"):
        emit_slice(Program.load(clash), hand_slice(clash, "evaluate.py:<module>:loop:1", {"K"}, "evaluate.py"),
                   tmp_path / "out-clash")


def compare_single(tmp_path: Path, source: str, tags: set[str], feature_id: str, inputs: list[list[str]]) -> str:
    """Emit a one-file program's hand slice; the evaluator agrees with the instrumented program on
    every input, and the inputs give more than one value. Returns the sliced code."""
    root = write_tree(tmp_path / "src", {"prog.py": source})
    inst = instrument_tree(root, tmp_path / "inst")
    out = tmp_path / "out"
    emit(root, out, hand_slice(root, feature_id, tags, "prog.py"))
    values = [(evaluator_value(out, args), instrumented_features(inst, ["prog.py", *args], tmp_path).get(feature_id, 0))
              for args in inputs]
    assert all(a == b for a, b in values), values
    assert len({b for _, b in values}) > 1, values
    return (out / "prog.py").read_text(encoding="utf-8")


LOOP_ELSE = '''
    import sys


    def search(items, wanted):  # @K
        for item in items:  # @K
            if item == wanted:  # @K
                break  # @K
        else:
            print("for: not found")
        n = len(items)  # @K
        while n:  # @K
            n -= 1  # @K
            if items[n] == wanted:  # @K
                break  # @K
        else:
            print("while: not found")


    search(sys.argv[2:], sys.argv[1])  # @K
    '''


@pytest.mark.parametrize("ordinal", [1, 3])  # search: if:1, implicit else:2, for-else:3, ...
def test_loop_else_arms(tmp_path, ordinal):
    source = textwrap.dedent(LOOP_ELSE)
    features = {f.id: f for f in instrument_source(source.lstrip("\n"), "prog.py").features}
    loop_elses = sorted(i for i, f in features.items() if f.detail == "loop-else")
    code = compare_single(tmp_path, LOOP_ELSE, {"K"}, loop_elses[0 if ordinal == 1 else 1],
                          [["a", "a", "b"], ["z", "a", "b"], ["b", "a", "b", "c"], ["q"]])
    assert "not found" not in code and code.count("_mantis_n(_mantis_k[0])") == 1


ASYNC = '''
    import asyncio
    import sys


    async def ticker(n):  # @K
        for i in range(n):  # @K
            await asyncio.sleep(0)  # @K
            yield i  # @K


    async def consume(n):  # @K
        total = 0  # @K
        async for value in ticker(n):  # @K
            total += value  # @K
        try:
            if total > 3:  # @K
                raise ExceptionGroup("many", [ValueError(total)])  # @K
        except* ValueError:  # @K
            print("caught")
        return total


    print(asyncio.run(consume(int(sys.argv[1]))))  # @K
    '''


@pytest.mark.parametrize("feature_id", ["prog.py:consume:loop:1", "prog.py:ticker:call", "prog.py:consume:call",
                                        "prog.py:consume:except:1"])
def test_async_and_except_star(tmp_path, feature_id):
    inputs = [["0"], ["2"], ["5"]] if "except" in feature_id else [["0"], ["3"], ["6"]]
    if feature_id.endswith(":call"):  # one call per run: compare across runs that do or do not start
        inputs = [["0"], ["4"]]
        if "ticker" in feature_id:
            source = ASYNC.replace("print(asyncio.run(consume(int(sys.argv[1]))))",
                                   "print(asyncio.run(consume(int(sys.argv[1]))) if sys.argv[1] != '0' else 0)")
            compare_single(tmp_path, source, {"K"}, feature_id, inputs)
            return
        inputs = [["0"], ["4"], ["-1"]]
        source = ASYNC.replace("print(asyncio.run(consume(int(sys.argv[1]))))",
                               "print(int(sys.argv[1]) >= 0 and asyncio.run(consume(int(sys.argv[1]))))")
        compare_single(tmp_path, source, {"K"}, feature_id, inputs)
        return
    compare_single(tmp_path, ASYNC, {"K"}, feature_id, inputs)


THREADS = '''
    import sys
    import threading


    def work(base, steps):  # @K
        x = base + steps  # @K
        for i in range(steps):  # @K
            x = x + i  # @K
        return x


    threads = [threading.Thread(target=work, args=(b, int(sys.argv[1]))) for b in (10, 21)]  # @K
    for t in threads:  # @K
        t.start()  # @K
    for t in threads:  # @K
        t.join()  # @K
    work(100, 1)  # @K
    '''


@pytest.mark.parametrize("version", [1, 2, 3])
def test_values_are_per_thread_and_averaged_like_the_runtime(tmp_path, version):
    compare_single(tmp_path, THREADS, {"K"}, f"prog.py:work:value:x#{version}", [["0"], ["1"], ["3"]])


CLOSURES = '''
    import sys


    def make():  # @K
        count = 0  # @K

        def step(flag):  # @K
            nonlocal count
            if flag:  # @K
                count += 1  # @K
            print("step")
            return count  # @K
        return step  # @K


    s = make()  # @K
    for a in sys.argv[1:]:  # @K
        s(a == "y")  # @K
    '''


def test_nonlocal_closures(tmp_path):
    code = compare_single(tmp_path, CLOSURES, {"K"}, "prog.py:make:value:count#2",
                          [["y", "y"], ["n", "y", "y"], ["n"], ["y", "n", "y", "y"]])
    assert "nonlocal count" in code and '"step"' not in code


TRUNCATING_PROGRAM = {
    "parse.py": '''
        import sys


        def parse(path):  # @P
            with open(path) as handle:  # @P
                lines = handle.read().splitlines()  # @P
            for line in lines:  # @P
                if line == "end":  # @P
                    return  # @P
            raise ValueError("at end of input: no 'end' line")  # @P


        parse(sys.argv[1])  # @P
        if sys.argv[2:] == ["strict"]:  # @P
            sys.exit(4)  # @P
        if sys.argv[2:] == ["write"]:  # @P
            open("written.txt", "w")  # @P
        ''',
}


@pytest.mark.parametrize("counts_on_failure", [False, True])
def test_a_sampled_evaluator_gives_the_counts_of_a_run_that_fails_as_sampled_runs_keep_them(tmp_path,
                                                                                             counts_on_failure):
    """A sampled run's counts are kept whatever its exit status (a parser fails at the end of a cut file:
    mantispy.runtime.sampled_input); its evaluator must give them too, warm and cold. It raised instead,
    and every sampled counter of pycparser was found unsliceable. Other evaluators still say that the
    program rejected the input; a refused write still fails every evaluator."""
    from mantispy.slicer.warm_client import WarmError, WarmEvaluator

    root = write_tree(tmp_path / "src", TRUNCATING_PROGRAM)
    feature = find_feature(root, "parse.py", "for", "for line in lines")
    out = tmp_path / "out"
    result = SliceResult.from_json(hand_slice(root, feature, {"P"}, "parse.py").to_json())
    emit_slice(Program.load(root), result, out, k=5, counts_on_failure=counts_on_failure)
    (tmp_path / "whole.txt").write_text("a\nb\nend\nc\n")
    (tmp_path / "cut.txt").write_text("a\nb\nc\n")
    cases = [(["whole.txt"], 3.0), (["cut.txt"], 3.0), (["whole.txt", "strict"], 3.0), (["whole.txt", "write"], None)]
    with WarmEvaluator(out) as warm:
        for argv, expected in cases:
            proc = subprocess.run([sys.executable, str(out / "evaluate.py"), "--mantis-json", *argv],
                                  capture_output=True, text=True, timeout=120, cwd=tmp_path, env=clean_env())
            if expected is None or (argv != ["whole.txt"] and not counts_on_failure):
                with pytest.raises(WarmError, match="ValueError: at end of input|exit status 4|PermissionError"):
                    warm.evaluate(argv, None, cwd=str(tmp_path), timeout=30)
                assert proc.returncode == 3 and "mantispy-evaluator-error: " in proc.stderr
            else:
                assert warm.evaluate(argv, None, cwd=str(tmp_path), timeout=30)[0] == {feature: expected}
                assert proc.returncode == 0, proc.stderr
                assert json.loads(proc.stdout) == {feature: expected}
