"""Performance-regression diagnosis (issue 22, AutoPerf): the AST diff, the autoencoder, the analysis on
made-up runs, the real CLI on a small program with a seeded regression and a neutral change, bad input,
and the diagnosis reader (property test)."""

from __future__ import annotations

import json
import math
import random
import shutil
import subprocess
import textwrap
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mantispy.counters.function_profile import FunctionCounts
from mantispy.diagnosis.analysis import diagnose
from mantispy.diagnosis.autoencoder import CounterAutoencoder, counting_noise, sample_vector
from mantispy.diagnosis.changes import ChangeError, ChangeSet, diff_trees
from mantispy.diagnosis.count_changes import count_changes
from mantispy.diagnosis.counting import CountRun
from mantispy.diagnosis.profiling import BASELINE, CANDIDATE, VersionRun
from mantispy.diagnosis.render_text import render as render_text
from mantispy.diagnosis.types import Settings
from tests.helpers import MANTISPY, read_mutated


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return root


LIB = '''
    """A module."""
    LIMIT = 3


    def helper(x):
        """Doubles."""
        return x * 2


    class Parser:
        def parse(self, items):
            def step(i):
                return helper(i) + 1
            return [step(i) for i in items]


    def unrelated():
        return 0
'''


def test_the_diff_finds_changed_renamed_added_functions_and_their_callers(tmp_path):
    old = _write(tmp_path / "old", {"pkg/lib.py": LIB})
    new_lib = (textwrap.dedent(LIB)
               .replace("return x * 2", "return x * 2 + 0")  # helper changed
               .replace('"""Doubles."""', '"""Doubles, now differently."""')
               .replace("def unrelated():", "def not_related():")  # renamed, same code
               + "\n\ndef fresh():\n    return helper(1)\n")
    new = _write(tmp_path / "new", {"pkg/lib.py": new_lib})
    changes = diff_trees(old, new)
    assert changes.changed == ["pkg/lib.py:helper"]
    assert changes.renamed == {"pkg/lib.py:unrelated": "pkg/lib.py:not_related"}
    assert changes.added == ["pkg/lib.py:fresh"] and changes.removed == []
    assert "pkg/lib.py:Parser.parse.<locals>.step" in changes.callers  # calls helper
    assert "pkg/lib.py:Parser.parse" in changes.callers  # holds step, whose body names helper
    assert changes.module_code_changed == []
    assert changes.baseline_name("pkg/lib.py:not_related") == "pkg/lib.py:unrelated"
    assert "pkg/lib.py:not_related" in changes.touched
    assert "pkg/lib.py:fresh" not in changes.touched  # (no baseline; measuring it would slow its callers alone)


def test_comments_docstrings_and_formatting_are_no_change_but_module_code_is(tmp_path):
    old = _write(tmp_path / "old", {"lib.py": LIB})
    same = _write(tmp_path / "same", {"lib.py": '"""Another module docstring."""\n'
                                      + textwrap.dedent(LIB).split('"""A module."""', 1)[1]
                                      .replace("return x * 2", "return x*2  # twice")})
    assert diff_trees(old, same).empty
    moved = _write(tmp_path / "moved", {"lib.py": textwrap.dedent(LIB).replace("LIMIT = 3", "LIMIT = 4")})
    changes = diff_trees(old, moved)
    assert changes.module_code_changed == ["lib.py"] and not changes.changed and not changes.empty


def test_versions_with_nothing_in_common_are_refused(tmp_path):
    old = _write(tmp_path / "old", {"a.py": "x = 1\n"})
    new = _write(tmp_path / "new", {"b.py": "x = 1\n"})
    with pytest.raises(ChangeError, match="no Python file in common"):
        diff_trees(old, new)
    with pytest.raises(ChangeError, match="no such folder"):
        diff_trees(old, tmp_path / "missing")
    # Two programs that share only the entry script's name: not two versions of one program.
    first = _write(tmp_path / "first", {"main.py": "def parse(t):\n    return t.split()\n\nparse('a b')\n"})
    second = _write(tmp_path / "second", {"main.py": "def render(rows):\n    return len(rows) * 2\n\nrender([])\n"})
    with pytest.raises(ChangeError, match="no function in common"):
        diff_trees(first, second)
    renamed = _write(tmp_path / "renamed", {"main.py": "def split_words(t):\n    return t.split()\n\nsplit_words('a b')\n"})
    assert diff_trees(first, renamed).renamed == {"main.py:parse": "main.py:split_words"}


def test_the_autoencoder_flags_what_departs_and_not_one_more_fault():
    rng = np.random.default_rng(1)
    events = ["sw.page_faults", "thread.cpu_ns"]
    train, noise = [], []
    for size in rng.uniform(100, 2000, 30):
        totals = {"sw.page_faults": 0.0, "thread.cpu_ns": size * 1000 * rng.normal(1, 0.02)}
        train.append(sample_vector(int(size), totals, events))
        noise.append(counting_noise(int(size), totals, events))
    model = CounterAutoencoder().fit(train, noise)
    like = sample_vector(700, {"sw.page_faults": 0.0, "thread.cpu_ns": 700_000.0}, events)
    slower = sample_vector(700, {"sw.page_faults": 0.0, "thread.cpu_ns": 2_100_000.0}, events)
    one_fault = sample_vector(700, {"sw.page_faults": 1.0, "thread.cpu_ns": 700_000.0}, events)
    scores = model.score_samples([like, slower, one_fault])
    assert scores[0] <= model.threshold_ < scores[1]
    assert scores[2] <= model.threshold_


def _counts(name: str, calls: int, cpu_ns: float, faults: float = 0.0) -> FunctionCounts:
    totals = {"sw.page_faults": faults, "thread.cpu_ns": cpu_ns}
    return FunctionCounts(name, calls, totals, {k: v / max(calls, 1) for k, v in totals.items()}, min(calls, 10))


def _runs(slow: float = 1.0, calls_factor: int = 1, seed: int = 0) -> list[VersionRun]:
    """Two functions, outer calling inner, over 8 inputs; the candidate's inner costs ``slow`` times as much
    per call and is called ``calls_factor`` times as often."""
    rng = random.Random(seed)
    runs = []
    for version, repeats in ((BASELINE, 3), (CANDIDATE, 2)):
        for size in range(1, 9):
            for repeat in range(repeats):
                factor = slow if version == CANDIDATE else 1.0
                many = calls_factor if version == CANDIDATE else 1
                inner_cpu = size * 1e7 * factor * many * rng.gauss(1, 0.03)
                outer_cpu = inner_cpu + size * 2e7 * rng.gauss(1, 0.03)
                functions = {"m.py:inner": _counts("m.py:inner", size * 50 * many, inner_cpu),
                             "m.py:outer": _counts("m.py:outer", size, outer_cpu)}
                runs.append(VersionRun(version, f"in{size}", repeat, "ok", outer_cpu / 1e9 + 0.05, functions,
                                       ["sw.page_faults", "thread.cpu_ns"]))
    return runs


CHANGED_INNER = ChangeSet(changed=["m.py:inner"], callers=["m.py:outer"], files_changed=["m.py"])


def test_a_candidate_that_fails_where_the_baseline_ran_is_said_in_the_first_line():
    """The first line said 'no regression' and the failures came last, after the tables."""
    from dataclasses import replace

    runs = [replace(r, status="failed", message="ValueError: boom") if r.version == CANDIDATE and r.input_id in ("in3", "in5")
            else r for r in _runs()]
    flaky = replace(runs[0], status="failed", message="flaky")  # in1: the baseline failed there too, so not counted
    runs += [flaky, replace(flaky, version=CANDIDATE)]
    first = render_text(diagnose(CHANGED_INNER, runs, Settings())).splitlines()[0]
    assert first.startswith("the candidate FAILED on 2 of 8 inputs where the baseline ran (in3: ValueError: boom)"), first
    assert first.endswith("no regression: no touched function departs from what the baseline's runs taught"), first
    assert render_text(diagnose(CHANGED_INNER, _runs(), Settings())).startswith("no regression")


def test_a_hardware_counter_carries_a_regression_the_cpu_time_hides():
    """The hardware path (hw.* events, which this machine's missing PMU never gives) through the diagnosis:
    a change that triples the inner function's cache misses at the same CPU time is named by its counter."""
    rng = random.Random(4)
    events = ["hw.instructions", "hw.cache_misses", "sw.page_faults", "thread.cpu_ns"]
    runs = []
    for version, repeats in ((BASELINE, 3), (CANDIDATE, 2)):
        for size in range(1, 9):
            for repeat in range(repeats):
                misses = size * 4e4 * (3.0 if version == CANDIDATE else 1.0) * rng.gauss(1, 0.03)
                inner = {"hw.instructions": size * 5e7 * rng.gauss(1, 0.01), "hw.cache_misses": misses,
                         "sw.page_faults": 0.0, "thread.cpu_ns": size * 1e7 * rng.gauss(1, 0.03)}
                outer = {k: v * 1.5 for k, v in inner.items()}
                functions = {name: FunctionCounts(name, calls, totals, {k: v / calls for k, v in totals.items()}, 10)
                             for name, calls, totals in (("m.py:inner", size * 50, inner), ("m.py:outer", size, outer))}
                runs.append(VersionRun(version, f"in{size}", repeat, "ok", outer["thread.cpu_ns"] / 1e9, functions, events))
    diagnosis = diagnose(CHANGED_INNER, runs, Settings())
    assert (diagnosis.verdict, diagnosis.function, diagnosis.counter) == ("regression", "m.py:inner", "hw.cache_misses")
    assert diagnosis.effect == pytest.approx(3.0, rel=0.15)
    assert "counter hw.cache_misses" in render_text(diagnosis).splitlines()[0]


def test_a_slower_function_is_named_with_its_counter_before_its_caller():
    diagnosis = diagnose(CHANGED_INNER, _runs(slow=1.6), Settings())
    assert diagnosis.verdict == "regression"
    assert (diagnosis.function, diagnosis.counter) == ("m.py:inner", "thread.cpu_ns")
    assert diagnosis.effect == pytest.approx(1.6, rel=0.1) and diagnosis.confidence > 0.95
    assert diagnosis.cpu_total.verdict == "regression"
    assert [f.function for f in diagnosis.findings] == ["m.py:inner", "m.py:outer"]


def test_more_calls_are_named_as_calls_and_noise_alone_is_no_regression():
    more_calls = diagnose(CHANGED_INNER, _runs(calls_factor=3), Settings())
    assert (more_calls.verdict, more_calls.function, more_calls.counter) == ("regression", "m.py:inner", "calls")
    assert more_calls.effect == pytest.approx(3.0, rel=0.01)
    for seed in range(3):
        assert diagnose(CHANGED_INNER, _runs(seed=seed), Settings()).verdict == "no regression"
    faster = diagnose(CHANGED_INNER, _runs(slow=0.5), Settings())
    assert (faster.verdict, faster.function) == ("improvement", "m.py:inner")


def _count_runs(baseline: dict, candidate: dict, inputs: int = 6, grows_on: int | None = None) -> list[CountRun]:
    """Count runs over ``inputs`` inputs: per version FUNCTION -> {kind: count per unit of input size}; the
    candidate's differ from the baseline's only on the first ``grows_on`` inputs (all by default)."""
    runs = []
    functions = {version: frozenset(counts) for version, counts in ((BASELINE, baseline), (CANDIDATE, candidate))}
    for size in range(1, inputs + 1):
        for version, counts in ((BASELINE, baseline), (CANDIDATE, candidate)):
            if version == CANDIDATE and grows_on is not None and size > grows_on:
                counts = baseline
            scaled = {name: {kind: per * size * 100 for kind, per in kinds.items()} for name, kinds in counts.items()}
            runs.append(CountRun(version, f"in{size}", "ok", scaled, functions[version]))
    return runs


UNCHANGED_COUNTS = {"m.py:outer": {"call": 1, "loop": 50}, "m.py:inner": {"call": 50, "loop": 200},
                    "m.py:classify": {"call": 50}}


def test_more_calls_of_an_unchanged_callee_are_put_down_to_the_changed_function():
    more = {**UNCHANGED_COUNTS, "m.py:classify": {"call": 150}}
    changes = ChangeSet(changed=["m.py:inner"], callers=["m.py:outer"], calls_from={"m.py:inner": ["classify"]})
    moved = count_changes(changes, _count_runs(UNCHANGED_COUNTS, more), Settings())
    assert [(c.function, c.kind, c.cause, c.regressed) for c in moved] == [
        ("m.py:classify", "call", "m.py:inner", True)]
    assert moved[0].effect == pytest.approx(3.0, rel=0.01) and moved[0].moved == moved[0].inputs == 6
    # growth on fewer than half the inputs is not a regression
    assert count_changes(changes, _count_runs(UNCHANGED_COUNTS, more, grows_on=2), Settings()) == []


def test_the_calls_the_changed_code_makes_come_before_their_callees_loops():
    # removed memoisation: inner calls classify 3x as often, and classify's scope loop (the larger share of the
    # program's loop iterations) runs 3x as often because of it: the mechanism is the calls inner makes
    baseline = {**UNCHANGED_COUNTS, "m.py:classify": {"call": 50, "loop": 400}}
    more = {**UNCHANGED_COUNTS, "m.py:classify": {"call": 150, "loop": 1200}}
    changes = ChangeSet(changed=["m.py:inner"], callers=["m.py:outer"], calls_from={"m.py:inner": ["classify"]})
    moved = count_changes(changes, _count_runs(baseline, more), Settings())
    assert [(c.function, c.kind, c.cause) for c in moved] == [
        ("m.py:classify", "call", "m.py:inner"), ("m.py:classify", "loop", "m.py:inner")]
    assert moved[1].program_share > moved[0].program_share


def test_work_that_only_moved_is_not_more_work():
    extracted = {"m.py:outer": {"call": 1, "loop": 50}, "m.py:inner": {"call": 50, "loop": 20},
                 "m.py:inner_part": {"call": 50, "loop": 180}, "m.py:classify": {"call": 50}}
    changes = ChangeSet(changed=["m.py:inner"], added=["m.py:inner_part"], callers=["m.py:outer"])
    assert count_changes(changes, _count_runs(UNCHANGED_COUNTS, extracted), Settings()) == []
    inlined = {"m.py:outer": {"call": 1, "loop": 50}, "m.py:inner": {"call": 50, "loop": 200, "exception": 0}}
    changes = ChangeSet(changed=["m.py:inner"], removed=["m.py:classify"], callers=["m.py:outer"])
    assert [c for c in count_changes(changes, _count_runs(UNCHANGED_COUNTS, inlined), Settings()) if c.regressed] == []


def test_a_handler_entered_where_none_was_is_a_regression_and_a_setup_call_is_not():
    eafp = {**UNCHANGED_COUNTS, "m.py:inner": {"call": 50, "loop": 200, "exception": 50}}
    changes = ChangeSet(changed=["m.py:inner"], callers=["m.py:outer"])
    moved = count_changes(changes, _count_runs(UNCHANGED_COUNTS, eafp), Settings())
    assert [(c.function, c.kind, c.baseline, c.cause) for c in moved] == [("m.py:inner", "exception", 0.0, "m.py:inner")]
    # one more call of a function called once: +100 %, but 1 of the program's 10,000 or more calls per input
    setup = {**UNCHANGED_COUNTS, "m.py:outer": {"call": 2, "loop": 50}}
    runs = [CountRun(r.version, r.input_id, r.status,
                     {**r.counts, "m.py:outer": {**r.counts["m.py:outer"], "call": 1.0 + (r.version == CANDIDATE)}},
                     r.functions) for r in _count_runs(UNCHANGED_COUNTS, setup)]
    assert count_changes(changes, runs, Settings()) == []


def test_program_counts_decide_when_the_counters_see_only_noise_and_yield_to_a_faster_candidate():
    more = {**UNCHANGED_COUNTS, "m.py:classify": {"call": 150}}
    counts = _count_runs(UNCHANGED_COUNTS, more, inputs=8)
    changes = ChangeSet(changed=["m.py:inner"], callers=["m.py:outer"], files_changed=["m.py"],
                        calls_from={"m.py:inner": ["classify"]})
    verdict = diagnose(changes, _runs(seed=1), Settings(), counts)
    assert (verdict.verdict, verdict.function, verdict.counter) == ("regression", "m.py:inner", "calls")
    assert verdict.effect == pytest.approx(3.0, rel=0.01) and verdict.confidence == 1.0
    assert "calls of m.py:classify" in render_text(verdict).splitlines()[0]
    assert "calls_from" not in verdict.to_json()["changes"]
    assert diagnose(changes, _runs(seed=1), Settings()).verdict == "no regression"
    assert diagnose(changes, _runs(slow=0.5), Settings(), counts).verdict == "improvement"


def test_a_regressed_caller_yields_to_the_changed_callee_its_extra_work_is_counted_in():
    """The caller's inclusive counters regressed, the changed callee's did not cross their gate (its calls
    are sampled), and the exact counts put the extra work down to the callee: the callee is the root cause."""
    runs = [VersionRun(r.version, r.input_id, r.repeat, r.status, r.cpu_s,
                       {**r.functions, "m.py:outer": _counts("m.py:outer", r.functions["m.py:outer"].calls,
                                                             r.functions["m.py:outer"].totals["thread.cpu_ns"]
                                                             * (1.6 if r.version == CANDIDATE else 1.0))},
                       r.events) for r in _runs(seed=1)]
    more = {**UNCHANGED_COUNTS, "m.py:classify": {"call": 150}}
    changes = ChangeSet(changed=["m.py:inner"], callers=["m.py:outer"], files_changed=["m.py"],
                        calls_from={"m.py:inner": ["classify"]})
    alone = diagnose(changes, runs, Settings())
    assert (alone.verdict, alone.function, alone.counter) == ("regression", "m.py:outer", "thread.cpu_ns")
    counted = diagnose(changes, runs, Settings(), _count_runs(UNCHANGED_COUNTS, more, inputs=8))
    assert (counted.verdict, counted.function, counted.counter) == ("regression", "m.py:inner", "calls")
    assert counted.findings[0].function == "m.py:outer" and counted.findings[0].regressed


def _scaled(runs: list[VersionRun], factors: dict[str, float], noise: float = 0.01, seed: int = 0) -> list[VersionRun]:
    """The runs with each named function's candidate CPU time multiplied by its factor, every run's CPU time
    redrawn with ``noise`` (relative) around its value."""
    rng = random.Random(seed)
    scaled = []
    for r in runs:
        functions = {}
        for name, counts in r.functions.items():
            cpu = counts.totals["thread.cpu_ns"] * (factors.get(name, 1.0) if r.version == CANDIDATE else 1.0)
            functions[name] = _counts(name, counts.calls, cpu * rng.gauss(1, noise))
        scaled.append(VersionRun(r.version, r.input_id, r.repeat, r.status, r.cpu_s, functions, r.events))
    return scaled


def test_a_small_shift_on_every_input_is_a_regression_though_the_autoencoder_flags_few_runs():
    """12 % more CPU time per call of the changed function on every input (runs ~4 % noisy, as a sampled
    function's are): within the spread the autoencoder learns, so it flags few runs, but the paired test
    over inputs and repeats is sure of it (p within the Bonferroni level over the function's features)."""
    for seed in range(3):
        runs = _scaled(_runs(seed=seed), {"m.py:inner": 1.12}, noise=0.03, seed=seed)
        diagnosis = diagnose(CHANGED_INNER, runs, Settings())
        inner = next(f for f in diagnosis.findings if f.function == "m.py:inner")
        assert inner.flagged < inner.samples / 2
        assert (diagnosis.verdict, diagnosis.function, diagnosis.counter) == ("regression", "m.py:inner", "thread.cpu_ns")
        assert diagnosis.effect > 1.05 and diagnosis.confidence > 1 - 0.05 / 3
    for seed in range(3):  # the same runs without the shift: no regression
        assert diagnose(CHANGED_INNER, _scaled(_runs(seed=seed), {}, seed=seed), Settings()).verdict == "no regression"


def test_a_regressed_caller_yields_to_the_changed_callee_whose_same_counter_grew_significantly():
    """The caller's inclusive CPU time grew 8 %, the changed callee's 3.5 % (significant, below the least
    effect): the callee, whose code changed, is named."""
    runs = _scaled(_runs(seed=4), {"m.py:inner": 1.035, "m.py:outer": 1.08})
    diagnosis = diagnose(CHANGED_INNER, runs, Settings())
    assert diagnosis.findings[0].function == "m.py:outer" and diagnosis.findings[0].regressed
    assert (diagnosis.verdict, diagnosis.function, diagnosis.counter) == ("regression", "m.py:inner", "thread.cpu_ns")
    assert diagnosis.effect == pytest.approx(1.035, rel=0.02)
    unmoved = diagnose(CHANGED_INNER, _scaled(_runs(seed=4), {"m.py:outer": 1.08}), Settings())
    assert (unmoved.verdict, unmoved.function) == ("regression", "m.py:outer")


def test_a_slower_whole_process_is_a_regression_when_no_function_crosses_its_gate():
    runs = [VersionRun(r.version, r.input_id, r.repeat, r.status, r.cpu_s * (1.3 if r.version == CANDIDATE else 1.0),
                       r.functions, r.events) for r in _runs(seed=2)]
    assert diagnose(CHANGED_INNER, _runs(seed=2), Settings()).verdict == "no regression"
    verdict = diagnose(CHANGED_INNER, runs, Settings())
    assert (verdict.verdict, verdict.counter, verdict.function) == ("regression", "process CPU", "m.py:inner")
    assert verdict.effect == pytest.approx(1.3, rel=0.05) and verdict.confidence > 0.95
    assert not any(f.regressed for f in verdict.findings)
    assert render_text(verdict).startswith("regression: the whole process's CPU time +")


PROGRAM = {
    "textlib.py": '''
        """A small text pipeline."""


        def tokenize(text):
            return text.split()


        def known(words, vocabulary):
            vocab = set(vocabulary)
            return [w for w in words if w in vocab]


        def score(words):
            total = 0
            for w in words:
                total += len(w) * 3 % 7
            return total
    ''',
    "prog.py": '''
        import random
        import sys

        import textlib


        def main(n):
            rng = random.Random(n)
            vocabulary = [f"w{i}" for i in range(800)]
            text = " ".join(f"w{rng.randrange(1600)}" for _ in range(n))
            total = 0
            for _ in range(12):
                total += textlib.score(textlib.known(textlib.tokenize(text), vocabulary))
            print(total)


        main(int(sys.argv[1]))
    ''',
}


@pytest.fixture(scope="module")
def versions(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("diagnose")
    base = _write(root / "base", PROGRAM)
    slow = root / "slow"
    shutil.copytree(base, slow)
    lib = slow / "textlib.py"
    lib.write_text(lib.read_text().replace("vocab = set(vocabulary)", "vocab = list(vocabulary)"))
    renamed = root / "renamed"
    shutil.copytree(base, renamed)
    lib = renamed / "textlib.py"
    lib.write_text(lib.read_text().replace("def score(", "def score_words(").replace("total = 0", "total = 0  # sum"))
    (renamed / "prog.py").write_text((renamed / "prog.py").read_text().replace("textlib.score(", "textlib.score_words("))
    spec = "".join(f'[[inputs.list]]\nid = "n{n}"\nargv = ["{n}"]\n' for n in (1500, 2500, 3500, 4500, 6000))
    (root / "campaign.toml").write_text(f'name = "textlib"\nsource = "base"\nentry = "prog.py"\ntimeout = 60\n{spec}')
    return root


def _diagnose(root: Path, candidate: str, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([*MANTISPY, "diagnose", "--baseline", str(root / "base"), "--candidate", str(root / candidate),
                           str(root / "campaign.toml"), "--inputs", "0", *extra], capture_output=True, text=True,
                          timeout=300)


def test_diagnose_names_a_list_search_made_quadratic_and_fails_ci(versions, tmp_path):
    out, page = tmp_path / "d.json", tmp_path / "d.html"
    result = _diagnose(versions, "slow", "-o", str(out), "--html", str(page), "--fail-on-regression")
    assert result.returncode == 1, result.stderr
    assert result.stdout.startswith("regression: textlib.py:known, counter thread.cpu_ns"), result.stdout
    document = json.loads(out.read_text())
    assert document["verdict"] == "regression" and document["function"] == "textlib.py:known"
    assert document["changes"]["changed"] == ["textlib.py:known"] and "prog.py:main" in document["changes"]["callers"]
    assert document["runs"] == {"baseline": 15, "candidate": 10, "inputs": 5, "failed": []}
    html = page.read_text()
    assert "textlib.py:known" in html and "<script" not in html
    shown = subprocess.run([*MANTISPY, "diagnose", "--show", str(out)], capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0 and shown.stdout.splitlines()[0] == result.stdout.splitlines()[0]


def test_diagnose_counts_handlers_entered_and_no_counts_skips_them(versions, tmp_path):
    eafp = tmp_path / "eafp"
    shutil.copytree(versions / "base", eafp)
    lib = eafp / "textlib.py"
    lib.write_text(lib.read_text().replace(
        "    vocab = set(vocabulary)\n    return [w for w in words if w in vocab]",
        "    vocab = dict.fromkeys(vocabulary, True)\n    found = []\n    for w in words:\n        try:\n"
        "            found.append(vocab[w] and w)\n        except KeyError:\n            pass\n    return found"))
    result = _diagnose(versions, str(eafp), "--json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["verdict"] == "regression" and document["function"] == "textlib.py:known"
    handlers = [c for c in document["count_changes"] if c["kind"] == "exception"]
    assert [(c["function"], c["cause"], c["baseline"], c["moved"], c["regressed"]) for c in handlers] == [
        ("textlib.py:known", "textlib.py:known", 0.0, 5, True)]
    assert not [c for c in document["count_changes"] if c["kind"] == "loop"], document["count_changes"]
    skipped = json.loads(_diagnose(versions, str(eafp), "--json", "--no-counts").stdout)
    assert skipped["count_changes"] == []


def test_relative_version_folders_are_the_same_folders_for_the_diff_and_the_runs(versions, tmp_path):
    """The versions are named relative to where mantispy runs; the campaign lives in another folder (whose
    own ``base`` must not be what runs: the runs once resolved the names against the campaign's folder)."""
    elsewhere = tmp_path / "campaign"
    shutil.copytree(versions / "base", elsewhere / "base")
    (elsewhere / "base" / "prog.py").write_text("raise SystemExit('the wrong folder ran')\n")
    spec = (versions / "campaign.toml").read_text().replace('source = "base"', f'source = "{versions / "base"}"')
    (elsewhere / "campaign.toml").write_text(spec)
    result = subprocess.run([*MANTISPY, "diagnose", "--baseline", "base", "--candidate", "slow",
                             str(elsewhere / "campaign.toml"), "--inputs", "2", "--repeats", "2",
                             "--candidate-repeats", "1", "--no-counts", "--json"],
                            capture_output=True, text=True, timeout=300, cwd=versions)
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["runs"]["failed"] == [] and document["runs"]["baseline"] == 4
    assert document["changes"]["changed"] == ["textlib.py:known"]


def test_diagnose_sees_a_rename_and_a_comment_as_no_regression(versions):
    result = _diagnose(versions, "renamed", "--fail-on-regression", "--json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["changes"]["renamed"] == {"textlib.py:score": "textlib.py:score_words"}
    assert document["verdict"] == "no regression", [(f["function"], f["counter"], f["effect"], f["p_value"])
                                                    for f in document["findings"]]
    assert document["count_changes"] == []


def test_diagnose_refuses_bad_input_in_one_line_and_keeps_files(versions, tmp_path):
    keep = tmp_path / "keep.json"
    keep.write_text("mine")
    existing = _diagnose(versions, "slow", "-o", str(keep))
    assert existing.returncode == 2 and keep.read_text() == "mine"
    for option in ("-o", "--html"):  # refused before the runs, not after them with the verdict lost
        nowhere = _diagnose(versions, "slow", option, str(tmp_path / "no-such-folder" / "d.out"))
        assert nowhere.returncode == 2 and "no-such-folder" in nowhere.stderr, nowhere.stderr
        assert len(nowhere.stderr.strip().splitlines()) == 1 and "Traceback" not in nowhere.stderr
    missing = _diagnose(versions, "nowhere")
    assert missing.returncode == 2 and "nowhere" in missing.stderr and len(missing.stderr.strip().splitlines()) == 1
    other = tmp_path / "other"
    _write(other, {"prog.py": "import sys\n", "unrelated.py": "x = 1\n"})
    shutil.copytree(other, tmp_path / "other2")
    (tmp_path / "other2" / "prog.py").unlink()
    broken = tmp_path / "broken"
    shutil.copytree(versions / "base", broken)
    (broken / "textlib.py").write_text("raise SystemExit('textlib is broken')\n")
    failed = _diagnose(versions, str(broken))
    assert failed.returncode == 1 and "failed on every input" in failed.stderr, failed.stderr
    assert "Traceback" not in failed.stderr and len(failed.stderr.strip().splitlines()) <= 2
    show_bad = subprocess.run([*MANTISPY, "diagnose", "--show", str(keep)], capture_output=True, text=True, timeout=60)
    assert show_bad.returncode == 2 and str(keep) in show_bad.stderr and "Traceback" not in show_bad.stderr


@pytest.fixture(scope="module")
def recorded_diagnosis() -> dict:
    more = {**UNCHANGED_COUNTS, "m.py:classify": {"call": 150}}
    return diagnose(CHANGED_INNER, _runs(slow=1.6), Settings(), _count_runs(UNCHANGED_COUNTS, more)).to_json()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_the_diagnosis_reader_refuses_in_one_line_or_reads(recorded_diagnosis, tmp_path, data):
    from mantispy.diagnosis.document import DiagnosisError, load
    from mantispy.diagnosis.render_html import render as render_html

    diagnosis = read_mutated(recorded_diagnosis, data, tmp_path, load, DiagnosisError)
    if diagnosis is None:
        return
    assert render_text(diagnosis) and render_html(diagnosis).endswith("</html>\n")
    assert all(math.isfinite(f.score) for f in diagnosis.findings)
