"""Hybrid slicing (issue 6): recording which callee each call site reached, resolving the calls static
inference cannot with those observations, and validating hybrid slices on held-out inputs."""

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

from mantispy.runtime import observed_calls as recorder
from mantispy.slicer.evaluators import SliceSession, check_fidelity
from mantispy.slicer.hybrid import hybrid_session, validate_hybrid
from mantispy.slicer.observations import Observations
from mantispy.slicer.sdg import Precision
from mantispy.standalone_runtime import standalone_runtime_dir
from tests.helpers import MANTISPY, REPO
from tests.test_python_versions import interpreter
from tests.test_slicing import kept_lines, line_of
from tests.test_slicing import write_program as write_files

# A class taken from a dict filled at run time and a function looked up by a computed name: the static
# call graph resolves neither ``obj.process(...)`` (its fallback: every ``process`` of the program) nor
# the ``getattr(...)(word)`` call. ``selftest`` calls ``Rev.process`` where inference can see it, after
# the loop, so that an unobserved ``Rev.process`` is not an escaped function either.
PROGRAM = '''
"""Calls static inference cannot resolve: a class taken from a dict, a function looked up by name."""
import sys


class Upper:
    def process(self, s):
        return s.upper()


class Rev:
    def process(self, s):
        out = ""
        for ch in s:
            if ch.isalpha():
                out = ch.upper() + out
            else:
                out = ch + out
        return out


def fmt_twice(s):
    return s + s


def fmt_shout(s):
    return s + "!"


def pieces(s):
    for ch in s:
        yield ch


KINDS = {}


def register(name, cls):
    KINDS[name] = cls


def selftest():
    return Rev().process("ok") == "KO"


def main(argv):
    register("upper", Upper)
    register("rev", Rev)
    obj = KINDS[argv[0]]()
    word = obj.process(argv[1])
    count = 0
    for ch in pieces(word):
        if ch.isupper():
            count += 1
    tail = getattr(sys.modules[__name__], "fmt_" + argv[2])(word)
    if tail == "never":
        tail = obj.process(tail)
    print(word, count, tail, selftest())


main(sys.argv[1:])
'''
LOOP = "prog.py:main:loop:1"
TRAIN = [["upper", "abc", "twice"], ["upper", "Xy", "shout"]]


def write_program(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "prog.py").write_text(textwrap.dedent(PROGRAM).lstrip("\n"))
    return root


def record(python: str, src: Path, out: Path, inputs: list[list[str]], runtime: Path | None = None) -> dict:
    """Run the program under the recorder once per input; returns the merged observations."""
    env = {**os.environ, recorder.ENV_OUT: str(out), recorder.ENV_ROOT: str(src)}
    if runtime is not None:
        env["PYTHONPATH"] = str(runtime)
    for args in inputs:
        proc = subprocess.run([python, "-m", "mantispy.runtime.observed_calls", "prog.py", *args], cwd=src, env=env,
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
    return json.loads(out.read_text())


def call_at(source: str, text: str) -> list:
    """[file, line, col, end_line, end_col] of the ast.Call whose source text is ``text``."""
    tree = ast.parse(source)
    found = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and ast.get_source_segment(source, n) == text]
    assert len(found) == 1, text
    n = found[0]
    return ["prog.py", n.lineno, n.col_offset, n.end_lineno, n.end_col_offset]


def def_line(source: str, qualname: str) -> int:
    tree = ast.parse(source)
    names = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names[node.name] = node.lineno
            for inner in getattr(node, "body", []):
                if isinstance(inner, ast.FunctionDef):
                    names[f"{node.name}.{inner.name}"] = inner.lineno
    return names[qualname]


def loop_at(source: str, iterable: str) -> list:
    """[file, line, col, end_line, end_col] of the ``for`` statement over ``iterable``."""
    found = [n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.For)
             and ast.get_source_segment(source, n.iter) == iterable]
    assert len(found) == 1, iterable
    n = found[0]
    return ["prog.py", n.lineno, n.col_offset, n.end_lineno, n.end_col_offset]


def expected_calls(source: str, generators_seen: bool, version: str) -> list[list]:
    pairs = [
        ('Rev().process("ok")', "Rev.process"),
        ('register("upper", Upper)', "register"),
        ('register("rev", Rev)', "register"),
        ("obj.process(argv[1])", "Upper.process"),
        ('getattr(sys.modules[__name__], "fmt_" + argv[2])(word)', "fmt_twice"),
        ("selftest()", "selftest"),
        ("main(sys.argv[1:])", "main"),
    ]
    if generators_seen:  # sys.monitoring CALL events see the generator function being called
        pairs.append(("pieces(word)", "pieces"))
    found = [[*call_at(source, text), "prog.py", callee, def_line(source, callee)] for text, callee in pairs]
    # the loop that resumes the generator runs its body: 3.11 and 3.12 put that at the whole ``for``
    # statement, 3.13 at its iterable (the creating call, already a pair there)
    if version != "3.13":
        found.append([*loop_at(source, "pieces(word)"), "prog.py", "pieces", def_line(source, "pieces")])
    return sorted(found)


@pytest.mark.parametrize("version", ["3.11", "3.12", "3.13"])
def test_recording_gives_exactly_the_pairs_the_program_reached(tmp_path, version):
    if sys.version_info[:2] == tuple(map(int, version.split("."))):
        python, runtime = sys.executable, None
    else:
        python = interpreter(version)
        if python is None:
            pytest.skip(f"no CPython {version} under pyenv")
        runtime = standalone_runtime_dir(tmp_path / "rt")  # mantispy is not installed there
    src = write_program(tmp_path / "src")
    source = (src / "prog.py").read_text()
    data = record(python, src, tmp_path / "calls.json", [["upper", "abc", "twice"]], runtime)
    monitoring = version != "3.11"
    assert data["runs"][0]["api"] == ("sys.monitoring" if monitoring else "setprofile")
    assert data["calls"] == expected_calls(source, generators_seen=monitoring, version=version)
    ran = {"<module>", "Upper", "Rev", "Upper.process", "Rev.process", "fmt_twice", "pieces", "register", "selftest", "main"}
    assert {s[1] for s in data["started"]} == ran  # fmt_shout never ran
    assert data["uncreated"] == ([] if monitoring else [["prog.py", "pieces", def_line(source, "pieces")]])
    assert set(data["files"]) == {"prog.py"}
    reached = {tuple(r) for r in data["reached"]}
    assert {tuple(c[:5]) for c in data["calls"]} <= reached  # every site with a pair ran
    assert tuple(call_at(source, "ch.isupper()")) in reached  # a builtin's call site ran too
    assert tuple(call_at(source, "s.upper()")) in reached
    # A second run merges: the shout formatter joins, nothing is lost.
    merged = record(python, src, tmp_path / "calls.json", [["upper", "abc", "shout"]], runtime)
    assert len(merged["runs"]) == 2
    assert [c for c in merged["calls"] if c not in data["calls"]] == [
        [*call_at(source, 'getattr(sys.modules[__name__], "fmt_" + argv[2])(word)'), "prog.py", "fmt_shout",
         def_line(source, "fmt_shout")]]


@pytest.fixture(scope="module")
def sessions(tmp_path_factory):
    """The program, its observations on the training inputs, and its static and hybrid sessions."""
    tmp = tmp_path_factory.mktemp("hybrid")
    src = write_program(tmp / "src")
    record(sys.executable, src, tmp / "calls.json", TRAIN)
    static = SliceSession(src, "prog.py")
    hybrid = hybrid_session(static, tmp / "calls.json")
    return src, static, hybrid


def test_observed_calls_resolve_only_what_inference_could_not(sessions):
    src, static, hybrid = sessions
    by_site = lambda sdg: {(c.caller, c.vertex, c.text): c for p in sdg.procs.values() for c in p.calls}  # noqa: E731
    before, after = by_site(static.sdg), by_site(hybrid.sdg)
    for key, call in before.items():
        if call.resolved == "static":  # a statically resolved edge is never dropped nor changed
            assert after[key].callees == call.callees and after[key].resolved == "static"
    changed = {info["text"]: info for info in hybrid.sdg.observed_sites.values()}
    assert changed["obj.process(argv[1])"]["callees"] == ["prog.py:Upper.process"]
    assert sorted(changed["obj.process(argv[1])"]["instead_of"]) == ["prog.py:Rev.process", "prog.py:Upper.process"]
    assert sorted(changed['getattr(sys.modules[__name__], "fmt_" + argv[2])(word)']["callees"]) == [
        "prog.py:fmt_shout", "prog.py:fmt_twice"]


def test_a_site_that_never_ran_keeps_its_fallback_unless_asked_to_drop_it(sessions):
    src, static, hybrid = sessions
    texts = {info["text"]: info for info in hybrid.sdg.observed_sites.values()}
    assert "obj.process(tail)" not in texts  # its unit ran, the site did not: nothing is known about it
    dropped = hybrid_session(static, hybrid.observed_calls, unreached="drop")
    texts = {info["text"]: info for info in dropped.sdg.observed_sites.values()}
    assert texts["obj.process(tail)"]["callees"] == []
    assert sorted(texts["obj.process(tail)"]["instead_of"]) == ["prog.py:Rev.process", "prog.py:Upper.process"]


def test_hybrid_slice_is_smaller_and_faithful_on_held_out_inputs(sessions):
    src, static, hybrid = sessions
    plain, mixed = static.slice(LOOP), hybrid.slice(LOOP)
    assert mixed.statements_kept < plain.statements_kept
    observed = [c for c in mixed.calls if c["resolved"] == "observed"]
    assert [c["callees"] for c in observed] == [["prog.py:Upper.process"]]
    assert [o["text"] for o in mixed.extra["calls_observed"]] == ["obj.process(argv[1])"]
    assert not any("obj.process(argv[1])" in u for u in mixed.unresolved)  # no longer "kept conservatively"
    held_out = [["upper", "hello", "twice"], ["upper", "a1b2", "shout"]]
    verdict, = validate_hybrid(static, hybrid, src, [LOOP], held_out, cwd=src)
    assert verdict.trusted and verdict.use == "hybrid" and verdict.hybrid_fidelity == 1.0, verdict
    assert (verdict.static_kept, verdict.hybrid_kept) == (plain.statements_kept, mixed.statements_kept)


def test_incomplete_observations_are_caught_and_fall_back_to_the_static_slice(sessions):
    src, static, hybrid = sessions
    held_out = [["upper", "hello", "twice"], ["rev", "abc", "twice"]]  # Rev.process: never observed at that site
    verdict, = validate_hybrid(static, hybrid, src, [LOOP], held_out + TRAIN[:1], cwd=src)
    assert not verdict.trusted and verdict.use == "static"
    assert verdict.inputs == 2  # the training input is not held out
    assert verdict.mismatches and verdict.mismatches[0]["input"] == ["rev", "abc", "twice"]
    assert verdict.reason.startswith("falls back to the static slice")
    row, = check_fidelity(static, src, held_out, [LOOP], cwd=src)  # and the fallback is right
    assert row.status == "sliceable"


def test_stale_or_foreign_observations_change_nothing(sessions, tmp_path):
    src, static, _ = sessions
    data = recorder.empty(str(src))
    data["files"] = {"prog.py": "0" * 64}  # another version of the file
    data["started"] = [["prog.py", "main", 1]]
    stale = hybrid_session(static, data)
    assert stale.sdg.observed_sites == {}
    assert stale.slice(LOOP).kept == static.slice(LOOP).kept
    with pytest.raises(Exception, match="not a mantispy-observed-calls"):
        Observations.from_dict({"format": "something else"})


def test_profile_observe_calls_records_untimed_runs_beside_the_store(tmp_path):
    write_program(tmp_path / "src")
    spec = tmp_path / "spec.toml"
    spec.write_text(textwrap.dedent("""
        name = "hy"
        source = "src"
        entry = "prog.py"
        calibration_runs = 0
        [[inputs.list]]
        id = "a"
        argv = ["upper", "abc", "twice"]
        [[inputs.list]]
        id = "b"
        argv = ["rev", "abc", "shout"]
        [[inputs.list]]
        id = "c"
        argv = ["upper", "zz", "shout"]
    """))
    proc = subprocess.run([*MANTISPY, "profile", str(spec), "--store", str(tmp_path / "m.db"), "--observe-calls",
                           "--observe-inputs", "2"], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stderr
    calls = Observations.load(tmp_path / "m.db.hy.calls.json")
    assert calls.inputs == ["a", "b"] and len(calls.runs) == 2
    assert calls.contributed(["rev", "abc", "shout"]) and not calls.contributed(["upper", "zz", "shout"])
    assert ("prog.py", "Rev.process", def_line((tmp_path / "src" / "prog.py").read_text(), "Rev.process")) in calls.started
    from mantispy.store import RunStore

    store = RunStore(tmp_path / "m.db")
    runs = store.runs(store.campaign("hy"))
    assert len(runs) == 3 and {r["variant"] for r in runs} == {"instrumented"}  # the recording runs are not stored


# ---------------------------------------------------------------------- minisearch, end to end
MINISEARCH = REPO / "examples" / "minisearch"
MS_TRAIN = [["--docs", "150", "--query", "data"], ["--docs", "120", "--query", "ab*", "--fuzzy", "1"]]


@pytest.fixture(scope="module")
def minisearch_calls(tmp_path_factory):
    """Observed calls of minisearch recorded with ``mantispy run`` on an instrumented build."""
    tmp = tmp_path_factory.mktemp("minisearch")
    build = tmp / "build"
    proc = subprocess.run([*MANTISPY, "instrument", str(MINISEARCH), "-o", str(build)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    for args in MS_TRAIN:
        proc = subprocess.run([*MANTISPY, "run", str(build), "--features-out", str(tmp / "f.json"), "--observed-calls",
                               str(tmp / "calls.json"), "--", "search.py", *args], capture_output=True, text=True,
                              cwd=MINISEARCH, timeout=120)
        assert proc.returncode == 0, proc.stderr
        assert json.loads((tmp / "f.json").read_text())["search.py:run:loop:2"] > 0  # features still written
    return tmp / "calls.json"


def test_cli_slice_with_observed_calls_on_minisearch(minisearch_calls):
    calls = json.loads(minisearch_calls.read_text())
    assert calls["root"] == str(MINISEARCH.resolve())  # mapped from the build to the source
    assert calls["calls"] and all(c[0] in calls["files"] for c in calls["calls"])
    proc = subprocess.run([*MANTISPY, "slice", str(MINISEARCH), "--entry", "search.py", "--feature", "search.py:run:loop:2",
                           "--observed-calls", str(minisearch_calls)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    match = re.search(r"hybrid slice: (\d+) statements kept, static slice: (\d+)", proc.stdout)
    assert match, proc.stdout
    hybrid, static = map(int, match.groups())
    assert 0 < hybrid <= static
    dynamic = re.search(r"calls resolved dynamically: (\d+)", proc.stdout)
    assert dynamic and int(dynamic.group(1)) >= 1, proc.stdout
    print(f"search.py:run:loop:2: static {static}, hybrid {hybrid} statements")


def test_minisearch_hybrid_slices_of_other_features(minisearch_calls):
    static = SliceSession(MINISEARCH, "search.py")
    hybrid = hybrid_session(static, minisearch_calls)
    for feature in ["minisearch/analysis.py:stem:call", "minisearch/searcher.py:Searcher._match_phrase:loop:6",
                    "minisearch/query.py:_Parser.primary:branch:6"]:
        plain, mixed = static.slice(feature), hybrid.slice(feature)
        print(f"{feature}: static {plain.statements_kept}, hybrid {mixed.statements_kept} statements, "
              f"{len(mixed.extra['calls_observed'])} call(s) resolved dynamically")
        assert 0 < mixed.statements_kept <= plain.statements_kept


def test_a_memo_cache_others_filled_is_no_dependence_of_a_later_lookup(minisearch_calls):
    """Parsing a query stems its words through ``analysis._stem_cache``, which indexing the corpus filled
    first: a parser counter's slice kept the corpus and the index through the cache (609 of 771
    statements). The cache only remembers what ``stem`` computes anyway, so the slice keeps ``stem``
    (and its cache) and drops the indexing; the evaluator gives the program's value."""
    feature = "minisearch/query.py:_Parser.primary:call"
    static = SliceSession(MINISEARCH, "search.py")
    session = hybrid_session(static, minisearch_calls)  # (statically, ``match.group()`` may call the parser)
    result = session.slice(feature)
    assert line_of(MINISEARCH, "search.py", "index.add(document)") not in kept_lines(result, "search.py")
    assert "corpus.py" not in result.kept and result.statements_kept < 0.45 * result.statements_total
    analysis = kept_lines(result, "minisearch/analysis.py")
    assert line_of(MINISEARCH, "minisearch/analysis.py", "_stem_cache[word] = result") in analysis  # it still memoises
    inputs = [["--docs", "120", "--query", "data engines", "--query", "ab* OR (lock AND keys)", "--repeat", "2"],
              ["--docs", "90", "--query", '"search engines" -locked', "--fuzzy", "1"]]
    rows = check_fidelity(session, MINISEARCH, inputs, [feature], cwd=MINISEARCH)
    assert [(r.feature, r.reason) for r in rows if r.status != "sliceable"] == []
    strict = SliceSession(MINISEARCH, "search.py", observed_calls=minisearch_calls,
                          precision=Precision(transparent_memo_caches=False))
    assert "corpus.py" in strict.slice(feature).kept  # the option is what made the difference


def test_build_observations_match_a_run_of_the_source(tmp_path):
    """``mantispy run`` records on the instrumented build; mapped back, the pairs are those of the source."""
    src = write_program(tmp_path / "src")
    direct = record(sys.executable, src, tmp_path / "direct.json", [TRAIN[0]])
    build = tmp_path / "build"
    assert subprocess.run([*MANTISPY, "instrument", str(src), "-o", str(build)], capture_output=True).returncode == 0
    proc = subprocess.run([*MANTISPY, "run", str(build), "--features-out", str(tmp_path / "f.json"), "--observed-calls",
                           str(tmp_path / "mapped.json"), "--", "prog.py", *TRAIN[0]], capture_output=True, text=True,
                          cwd=src, timeout=60)
    assert proc.returncode == 0, proc.stderr
    mapped = json.loads((tmp_path / "mapped.json").read_text())
    assert mapped["calls"] == direct["calls"] and mapped["started"] == direct["started"]
    assert mapped["files"] == direct["files"]


def hybrid_sessions(tmp_path: Path, files: dict[str, str], train: list[list[str]], version: str | None = None):
    """A program written under ``tmp_path/src``, its calls observed on ``train`` (by CPython ``version``
    from pyenv if given, the test is skipped where there is none), its static and hybrid sessions."""
    src = write_files(tmp_path / "src", files)
    python, runtime = sys.executable, None
    if version is not None and sys.version_info[:2] != tuple(map(int, version.split("."))):
        python = interpreter(version)
        if python is None:
            pytest.skip(f"no CPython {version} under pyenv")
        runtime = standalone_runtime_dir(tmp_path / "rt")  # mantispy is not installed there
    record(python, src, tmp_path / "calls.json", train, runtime)
    static = SliceSession(src, "prog.py")
    return src, static, hybrid_session(static, tmp_path / "calls.json")


# ``str(node)`` on an object of a class taken from a dict filled at run time: inference cannot say which
# ``__str__`` runs, and a builtin gets no by-name fallback (``len(x)`` would tie every slice measuring a
# list to the program's one ``__len__``). sqlparse's ``str(stmt)`` is such a call.
# A class table filled at run time: inference cannot say which class ``KINDS[name]`` holds.
RUN_TIME_TABLE = '''
KINDS = {}


def register(name, cls):
    KINDS[name] = cls
'''


STR_PROGRAM = '''
import sys


class Words:
    def __init__(self, text):
        self.words = text.split()

    def __str__(self):
        out = []
        for word in self.words:
            out.append(word.capitalize())
        return " ".join(out)


class Shout(Words):
    def __str__(self):
        return Words.__str__(self).upper()


class Cursor:
    def __init__(self, items):
        self.items = list(items)

    def __iter__(self):
        return self

    def __next__(self):
        if not self.items:
            raise StopIteration
        return self.items.pop(0)

    def next(self):
        for item in self.items:
            return item

''' + RUN_TIME_TABLE + '''

register("plain", Words)
register("shout", Shout)


def main(argv):
    node = KINDS[argv[0]](argv[1])
    print(len(argv), str(node), next(iter(node.words + [""])), Cursor(argv).next())


main(sys.argv[1:])
'''


def test_a_builtin_call_on_an_uninferable_object_gets_the_dunders_profiling_saw_it_run(tmp_path):
    """``str(node)`` ran ``Words.__str__`` (directly or through ``Shout.__str__``) in the observed runs:
    the hybrid slice of that method's loop must keep the call, or its evaluator counts nothing (sqlparse's
    ``TokenList.__str__:loop:1`` counted 0 on every input). ``len(argv)`` called no program code: no
    callee. Nor has ``next(...)`` one in the static slice: a method named ``next`` is no ``__next__``."""
    src, static, hybrid = hybrid_sessions(tmp_path, {"prog.py": STR_PROGRAM}, [["plain", "a b c"], ["shout", "x y"]])
    loop = "prog.py:Words.__str__:loop:1"
    held_out = [["plain", "one two three four"], ["shout", "p q r"], ["plain", ""]]
    row, = check_fidelity(hybrid, src, held_out, [loop], cwd=src)
    assert (row.agreed, row.inputs) == (3, 3), row.mismatches
    site = next(s for s in hybrid.callgraph.sites if s.text == "str(node)" and s.kind == "protocol-builtin")
    assert not site.resolved and not site.callees
    changed = {info["text"]: info for info in hybrid.sdg.observed_sites.values()}
    assert sorted(changed["str(node)"]["callees"]) == ["prog.py:Shout.__str__", "prog.py:Words.__str__"]
    assert "len(argv)" not in changed
    calls = {c.text: c for p in static.sdg.procs.values() for c in p.calls}
    assert 'next(iter(node.words + [""]))' not in calls and calls["Cursor(argv).next()"].callees
    assert any(s.text == 'next(iter(node.words + [""]))' and not s.resolved for s in static.callgraph.sites)


PROPERTY_PROGRAM = '''
import sys


class Group:
    def __init__(self, tokens):
        self.tokens = tokens

    @property
    def groupable(self):
        kept = []
        for token in self.tokens:
            if token != ",":
                kept.append(token)
        return kept


class Plain:
    groupable = ["x"]

''' + RUN_TIME_TABLE + '''

register("group", Group)
register("plain", Plain)


def main(argv):
    node = KINDS[argv[0]](argv[1:]) if argv[0] == "group" else KINDS[argv[0]]()
    print(len(node.groupable))


main(sys.argv[1:])
'''


def test_a_property_read_on_an_uninferable_object_gets_the_getters_profiling_saw_it_run(tmp_path):
    """``tlist._groupable_tokens`` in sqlparse's ``group_where`` (``tlist`` a parameter of a decorated
    function): the getter's call counter's evaluator counted 0, as its slice had no edge to it."""
    src, static, hybrid = hybrid_sessions(tmp_path, {"prog.py": PROPERTY_PROGRAM}, [["group", "a", ",", "b"], ["plain"]])
    held_out = [["group", "p", "q", ",", "r"], ["plain"], ["group"]]
    rows = check_fidelity(hybrid, src, held_out, ["prog.py:Group.groupable:loop:1", "prog.py:Group.groupable:call"],
                          cwd=src)
    assert [(r.agreed, r.inputs) for r in rows] == [(3, 3), (3, 3)], [r.mismatches for r in rows]
    changed = {info["text"]: info for info in hybrid.sdg.observed_sites.values()}
    assert changed["node.groupable"]["callees"] == ["prog.py:Group.groupable"]


# A host that loads its plugins by a name built from the command line (Markdown's extensions), runs
# them through a registry it iterates (Markdown's Registry.__iter__), and a command-line module no
# run imports (Markdown's __main__.py, whose module-level ``def run`` writes an attribute named run).
PLUGIN_HOST = {
    "host/__init__.py": "",
    "host/registry.py": '''
        class Registry:
            def __init__(self):
                self.items = []

            def register(self, item):
                self.items.append(item)

            def __iter__(self):
                return iter(sorted(self.items, key=lambda item: item.priority))
        ''',
    "host/core.py": '''
        import importlib

        from host.registry import Registry


        class Host:
            def __init__(self, names):
                self.plugins = Registry()
                for name in names:
                    importlib.import_module("host.plugins." + name).install(self)

            def convert(self, text):
                for plugin in self.plugins:
                    text = plugin.run(text)
                return text
        ''',
    "host/__main__.py": '''
        import sys

        from host.core import Host


        def run():
            print(Host(sys.argv[1:]).convert(sys.stdin.read()))


        run()
        ''',
    "host/plugins/__init__.py": "",
    "host/plugins/shout.py": '''
        def words(text):
            found = []
            for word in text.split():
                found.append(word.upper())
            return found


        class Shout:
            priority = 1

            def run(self, text):
                return " ".join(words(text))


        def install(host):
            host.plugins.register(Shout())
        ''',
    "host/plugins/count.py": '''
        class Count:
            priority = 2

            def run(self, text):
                return f"{len(text)}: {text}"


        def install(host):
            host.plugins.register(Count())
        ''',
    "prog.py": '''
        import sys

        from host.core import Host


        def main(argv):
            names, files = argv[0].split(","), argv[1:]
            host = Host([n for n in names if n])
            for name in files:
                print(host.convert(name))


        main(sys.argv[1:])
        ''',
}


def test_plugins_loaded_by_a_computed_name_are_analysed_where_profiling_saw_them_run(tmp_path):
    """Markdown's extensions: a module imported by a name built from the command line is outside the
    entry's import closure, so the call graph had none of its call sites, and a counter of a function its
    code calls (``toc.nest_toc_tokens``) was sliced to its own body (evaluator 0). Its modules are analysed
    where the observations saw them run. A loop over the command line's list keeps no plugin: its
    ``for`` ran without a program ``__iter__`` (by name, every ``__iter__`` of the program: the registry's,
    and through it everything that converts), and the never-imported ``__main__`` writes nothing."""
    src, static, hybrid = hybrid_sessions(tmp_path, PLUGIN_HOST, [["shout,count", "a b", "c"], ["count", "x"]])
    held_out = [["shout", "p q r", "s"], ["count,shout", "one two"], ["", "z"]]
    loop = "host/plugins/shout.py:words:loop:1"
    rows = check_fidelity(hybrid, src, held_out, [loop, "prog.py:main:loop:2"], cwd=src)
    assert [(r.agreed, r.inputs) for r in rows] == [(3, 3), (3, 3)], [r.mismatches for r in rows]
    files_loop = hybrid.slice("prog.py:main:loop:2")
    assert set(files_loop.kept) == {"prog.py"}, files_loop.kept
    assert "host/__main__.py" not in hybrid.slice(loop).kept
    assert any(f.file == "host/plugins/shout.py" for f in hybrid.callgraph.functions.values())
    assert not any(f.file == "host/plugins/shout.py" for f in static.callgraph.functions.values())


SUBSCRIPT_PROGRAM = '''
import sys


class Tokens:
    def __init__(self, items):
        self.items = list(items)

    def __getitem__(self, index):
        return self.items[index]

    def __setitem__(self, index, value):
        self.items[index] = value

''' + RUN_TIME_TABLE + '''

register("tokens", Tokens)


def first_letter(group, i):
    return group[i][:1]


def main(argv):
    local = Tokens(argv)
    local[0] = local[0].upper()
    group = KINDS[argv[0]](argv[1:])
    letters = ""
    for i in range(len(argv) - 1):
        letters += first_letter(group, i)
    print(local.items[0], letters, argv[1:][:1])


main(sys.argv[1:])
'''


@pytest.mark.parametrize("version", ["3.11", "3.12", "3.13"])
def test_a_subscript_runs_the_getitem_and_setitem_of_the_class_indexed(tmp_path, version):
    """``tlist[0]`` runs ``TokenList.__getitem__`` in sqlparse: a counter of its calls had a slice with
    no statement that indexes a token list (evaluator 0). A subscript on an inferable object calls its
    class's ``__getitem__`` (``__setitem__`` when assigned); on a parameter of unknown class it is
    unresolved, with no callee by name (programs index their lists everywhere), and hybrid slicing gives
    it the methods profiling saw it run: the recorder of each version puts the call at the subscript."""
    src, static, hybrid = hybrid_sessions(tmp_path, {"prog.py": SUBSCRIPT_PROGRAM}, [["tokens", "ab", "c"]], version)
    sites = {(s.text, s.kind): s for s in static.callgraph.sites if s.kind == "protocol-subscript"}
    assert sites[("local[0]", "protocol-subscript")].callees
    stored = [s for s in static.callgraph.sites if s.kind == "protocol-subscript" and s.text == "local[0]"]
    assert sorted(c for s in stored for c in s.callees) == ["prog.Tokens.__getitem__", "prog.Tokens.__setitem__"]
    group = sites[("group[i]", "protocol-subscript")]
    assert not group.resolved and not group.callees
    assert not any(s.text in ("self.items[index]", "argv[1:]") for s in static.callgraph.sites)
    held_out = [["tokens", "one", "two", "three"], ["tokens"], ["tokens", "x"]]
    getitem, setitem = "prog.py:Tokens.__getitem__:call", "prog.py:Tokens.__setitem__:call"
    rows = check_fidelity(hybrid, src, held_out, [getitem, setitem], cwd=src)
    assert [(r.agreed, r.inputs) for r in rows] == [(3, 3), (3, 3)], [r.mismatches for r in rows]
    changed = {info["text"]: info for info in hybrid.sdg.observed_sites.values()}
    assert changed["group[i]"]["callees"] == ["prog.py:Tokens.__getitem__"]


IMPLICIT_PROGRAM = '''
import sys


class Coord:
    def __init__(self, line, column):
        self.line = line
        self.column = column

    def __str__(self):
        text = f"line {self.line}"
        if self.column is not None:
            text += f", column {self.column}"
        return text


class Node:
    def __init__(self, name, coord):
        self.name = name
        self.coord = coord

    def show(self, out):
        out.append(f"{self.name} (at {self.coord})")


class Bag:
    def __init__(self, items):
        self.items = items

    def __iter__(self):
        return iter(self.items)


def main(argv):
    nodes = [Node(word, Coord(n, n if n % 2 else None)) for n, word in enumerate(argv)]
    out = []
    for node in nodes:
        node.show(out)
    print(len(out), " ".join(map(str, [n.coord for n in nodes[:2]])), len(list(Bag(argv))))


main(sys.argv[1:])
'''


def test_calls_the_language_makes_for_the_program_where_no_site_is_modelled_are_taken_from_profiling(tmp_path):
    """pycparser's ``f" (at {self.coord})"`` runs ``Coord.__str__``; no call site of the static graph
    holds that call (nor ``map(str, ...)``'s, nor ``list(bag)``'s ``__iter__``), so the counters of those
    methods had evaluators counting 0 (``Coord.__str__:call``: 0 against 22,718). Hybrid slicing gives the
    statement the callees profiling saw it reach there."""
    src, static, hybrid = hybrid_sessions(tmp_path, {"prog.py": IMPLICIT_PROGRAM}, [["a", "b", "c"]])
    held_out = [["one", "two", "three", "four"], [], ["x"]]
    features = ["prog.py:Coord.__str__:call", "prog.py:Coord.__str__:branch:1", "prog.py:Bag.__iter__:call"]
    rows = check_fidelity(hybrid, src, held_out, features, cwd=src)
    assert [(r.agreed, r.inputs) for r in rows] == [(3, 3)] * 3, [r.mismatches for r in rows]
    implicit = {info["text"]: info["callees"] for info in hybrid.sdg.observed_sites.values() if info.get("implicit")}
    assert implicit['f"{self.name} (at {self.coord})"'] == ["prog.py:Coord.__str__"]
    assert implicit["list(Bag(argv))"] == ["prog.py:Bag.__iter__"]
    assert not any(c.implicit == "observed" for p in static.sdg.procs.values() for c in p.calls)


# PyYAML's two-step constructors: a generator yields an empty container, the constructor keeps the
# generator, and a loop far from there drives it to the end, which fills the container.
TWO_STEP_PROGRAM = '''
import sys


def build(items):
    data = []
    yield data
    data.extend(items)


class Constructor:
    def __init__(self):
        self.pending = []

    def construct(self, text):
        generator = build(text.split(","))
        data = next(generator)
        self.pending.append(generator)
        return data

    def construct_document(self, texts):
        made = [self.construct(text) for text in texts]
        while self.pending:
            pending, self.pending = self.pending, []
            for generator in pending:
                for _ in generator:
                    pass
        return made


def main(argv):
    total = 0
    for part in Constructor().construct_document(argv):
        for item in part:
            if item:
                total += 1
    print(total)


main(sys.argv[1:])
'''


@pytest.mark.parametrize("version", ["3.11", "3.12", "3.13"])
def test_a_generator_resumed_far_from_where_it_was_created_fills_what_it_yielded(tmp_path, version):
    """The loop that drives the generators (``for _ in generator: pass``) was no call site of anything,
    so the slice dropped it with the statements after the ``yield`` (PyYAML: the resolver's counters
    counted half on inputs dumped back). Profiling records each place a generator resumes as a call of
    it (every Python version), and resuming a generator that changes what it yielded changes what the
    resuming procedure's variables hold."""
    src, static, hybrid = hybrid_sessions(tmp_path, {"prog.py": TWO_STEP_PROGRAM}, [["a,b", "c"]], version)
    held_out = [["x,y,z", "", "p"], ["q"], []]
    rows = check_fidelity(hybrid, src, held_out, ["prog.py:main:loop:2", "prog.py:main:branch:1"], cwd=src)
    assert [(r.agreed, r.inputs) for r in rows] == [(3, 3), (3, 3)], [r.mismatches for r in rows]
    resumed = sorted(info["text"] for info in hybrid.sdg.observed_sites.values()
                     if info.get("implicit") and info["callees"] == ["prog.py:build"])
    # 3.11 and 3.12 put the loop's steps at the whole ``for`` statement, 3.13 at its iterable
    assert resumed[0] in ("for _ in generator:\n                    pass", "generator"), resumed
    assert resumed[1:] == ["next(generator)"], resumed


WITH_PROGRAM = '''
import sys


class Span:
    def __init__(self, words):
        self.words = words

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def __add__(self, other):
        return Span(self.words + other.words)


def main(argv):
    total = Span([])
    for word in argv:
        with Span([word]) as span:
            total = total + span
    print(len(total.words))


main(sys.argv[1:])
'''


@pytest.mark.parametrize("version", ["3.11", "3.12", "3.13"])
def test_with_statements_and_operators_run_the_dunders_profiling_saw(tmp_path, version):
    """``with x:`` runs ``__enter__`` and ``__exit__``, ``a + b`` runs ``__add__``: no call site of the static
    graph. 3.11 and 3.12 put the context manager's calls at the whole ``with`` statement, 3.13 at its
    expression; both reach the statement's vertices."""
    src, static, hybrid = hybrid_sessions(tmp_path, {"prog.py": WITH_PROGRAM}, [["a", "b"]], version)
    features = ["prog.py:Span.__enter__:call", "prog.py:Span.__exit__:call", "prog.py:Span.__add__:call"]
    rows = check_fidelity(hybrid, src, [["x", "y", "z"], [], ["p"]], features, cwd=src)
    assert [(r.agreed, r.inputs) for r in rows] == [(3, 3)] * 3, [r.mismatches for r in rows]
    static_rows = check_fidelity(static, src, [["x", "y", "z"]], features, cwd=src)
    assert [r.agreed for r in static_rows] == [0, 0, 0]  # statically, no call reaches them
