"""Content features (issue 18): the program's own regexes, found by the probe, counted in the input files,
chosen by correlation, cost and determinism, and read back from their artefact."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mantispy.content.choose import choose
from mantispy.content.discover import (
    COUNTED_BYTES,
    alternation,
    byte_candidates,
    candidates_from,
    read_probe_files,
    scanners_from,
)
from mantispy.content.measure import Measured, measure
from mantispy.content.stage import describe, offered_line
from mantispy.content.types import (
    INPUT_FILES,
    ContentError,
    ContentFeature,
    ContentTable,
    feature_from_json,
    read_table,
    table_from_json,
)
from mantispy.runtime import regex_probe
from mantispy.runtime.content import compile_feature, content_values, count_matches, feature_id, literal_byte

PROGRAM = '''\
import argparse
import re
import sys

from lexer import words_in

LINE = re.compile(rb"\\n")

def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("file")
    parser.add_argument("--upper", action="store_true")
    args = parser.parse_args()
    text = open(args.file, encoding="utf-8").read()
    total = 0
    for word in words_in(text):
        total += len(re.sub(r"[aeiou]", "", word))
    print(total, len(LINE.findall(text.encode())))

main()
'''

LEXER = '''\
import re

WORD = re.compile(r"[A-Za-z_]\\w*", re.ASCII)

def words_in(text):
    return WORD.findall(text)
'''


def _program(tmp_path: Path) -> Path:
    root = tmp_path / "app"
    root.mkdir()
    (root / "main.py").write_text(PROGRAM)
    (root / "lexer.py").write_text(LEXER)
    (tmp_path / "in.txt").write_text("alpha beta_2 gamma\n12 delta\n")
    return root


def _probe(root: Path, out: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, regex_probe.ENV_OUT: str(out), regex_probe.ENV_ROOT: str(root)}
    return subprocess.run([sys.executable, "-m", "mantispy.runtime.regex_probe", str(root / "main.py"), *args],
                          capture_output=True, text=True, env=env, cwd=root.parent, timeout=60)


def test_probe_finds_the_programs_own_patterns_and_where_they_were_compiled(tmp_path):
    root = _program(tmp_path)
    proc = _probe(root, tmp_path / "probe", "in.txt")
    assert proc.returncode == 0, proc.stderr
    plain = subprocess.run([sys.executable, str(root / "main.py"), "in.txt"], capture_output=True, text=True,
                           cwd=tmp_path, timeout=60)
    assert proc.stdout == plain.stdout == "13 2\n"  # the program's output is unchanged
    found = {(p["file"], p["pattern"]): p for p in read_probe_files(tmp_path / "probe")}
    assert set(found) == {("lexer.py", r"[A-Za-z_]\w*"), ("main.py", r"[aeiou]"), ("main.py", r"\n")}
    word = found[("lexer.py", r"[A-Za-z_]\w*")]
    assert word["line"] == 3 and word["qualname"] == "<module>" and word["flags"] & 256  # re.ASCII
    assert found[("main.py", r"\n")]["bytes"] is True
    assert found[("main.py", r"[aeiou]")]["qualname"] == "main"  # compiled through re.sub, inside main()
    # argparse compiles its own patterns: not the program's, left out (no file outside the root)
    candidates = candidates_from(read_probe_files(tmp_path / "probe"))
    assert [c.file for c in candidates].count("main.py") == 2
    assert all(c.id.startswith("content:") for c in candidates)


HELPER_PROGRAM = {
    "util.py": """\
import re

def rcompile(pattern, flags=0):
    return re.compile(pattern, re.UNICODE | flags)
""",
    "plugins.py": """\
from util import rcompile

DIGITS = rcompile(r"[0-9]+")

class Tagging:
    expr = None

    def __init__(self, expr=None):
        self.expr = rcompile(expr or self.expr)

class Star(Tagging):
    expr = r"[*]"
""",
    "main.py": """\
import sys
from plugins import DIGITS, Star
text = open(sys.argv[1]).read()
print(len(DIGITS.findall(text)), len(Star().expr.findall(text)))
""",
}


def test_probe_looks_through_helpers_that_compile_the_pattern_they_are_given(tmp_path):
    root = tmp_path / "app"
    root.mkdir()
    for name, text in HELPER_PROGRAM.items():
        (root / name).write_text(text)
    (tmp_path / "in.txt").write_text("a* 12 b* 3\n")
    proc = _probe(root, tmp_path / "probe", "in.txt")
    assert proc.returncode == 0 and proc.stdout == "2 2\n", proc.stderr
    found = {p["pattern"]: p for p in read_probe_files(tmp_path / "probe")}
    assert (found["[0-9]+"]["file"], found["[0-9]+"]["line"], found["[0-9]+"]["qualname"]) == ("plugins.py", 3, "<module>")
    assert found["[0-9]+"]["via"] == "util.py:4"
    star = found["[*]"]  # `expr or self.expr` is not the helper's argument passed on: the place is the method
    assert (star["file"], star["line"], star["qualname"]) == ("plugins.py", 9, "Tagging.__init__ (Star)")
    assert star["via"] == "util.py:4"


def test_a_probed_program_can_pickle_its_compiled_patterns(tmp_path):
    """A pickled pattern refers to re._compile; under the probe that must still name something picklable
    (Whoosh pickles its schema, analyzers' patterns included: every probed Whoosh run failed)."""
    root = tmp_path / "app"
    root.mkdir()
    (root / "main.py").write_text("import pickle, re\nWORD = re.compile(r'[a-z]+')\n"
                                  "copy = pickle.loads(pickle.dumps(WORD))\nprint(copy.pattern, len(pickle.dumps(WORD)))\n")
    plain = subprocess.run([sys.executable, str(root / "main.py")], capture_output=True, text=True, timeout=60)
    proc = _probe(root, tmp_path / "probe")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == plain.stdout  # the same pickle, byte count included
    assert [p["pattern"] for p in read_probe_files(tmp_path / "probe")] == ["[a-z]+"]


def test_counts_match_what_the_program_computes(tmp_path):
    root = _program(tmp_path)
    candidates = candidates_from(read_probe_files(_probe_dir(root, tmp_path)))
    values = content_values([c.runtime() for c in candidates], ["in.txt"], str(tmp_path))
    by_pattern = {c.pattern: values[c.id] for c in candidates}
    assert by_pattern[r"[A-Za-z_]\w*"] == 4  # alpha, beta_2, gamma, delta; not "12"
    assert by_pattern[r"\n"] == 2
    assert by_pattern[r"[aeiou]"] == 8


def _probe_dir(root: Path, tmp_path: Path) -> Path:
    out = tmp_path / "probe"
    if not out.exists():
        assert _probe(root, out, "in.txt").returncode == 0
    return out


SCANNER_PROGRAM = {
    "lexer.py": """\
import re

# The rules a lexer tries in this order at each position (sorted by text, "." would come first and
# match every character: the order is part of the scanner).
RULES = [(r"\\s+", "space"), (r"[a-z]+", "word"), (r"[a-z]", "letter"), (r"\\d+", "number"), (r"#[^\\n]*", "comment"),
         (r".", "other")]
COMPILED = [(re.compile(rx, re.IGNORECASE).match, kind) for rx, kind in RULES]

def tokens(text):
    pos = 0
    while pos < len(text):
        for match, kind in COMPILED:
            m = match(text, pos)
            if m:
                yield kind, m.group()
                pos = m.end()
                break
        else:
            yield "error", text[pos]
            pos += 1
""",
    "main.py": """\
import sys
from lexer import tokens
print(sum(1 for _ in tokens(open(sys.argv[1]).read())))
""",
}


def test_a_scanner_counts_the_tokens_of_the_programs_own_lexer(tmp_path):
    """The rules one place compiled, alternated in the order it compiled them, count what the program's
    lexer loop yields (issue 18: the tokenizer run on the input by itself, at C speed)."""
    root = tmp_path / "app"
    root.mkdir()
    for name, text in SCANNER_PROGRAM.items():
        (root / name).write_text(text)
    text = "SELECT a1, b FROM t # two words\n  where x = 42;\n" * 3
    (tmp_path / "in.txt").write_text(text)
    proc = _probe(root, tmp_path / "probe", "in.txt")
    assert proc.returncode == 0, proc.stderr
    candidates = candidates_from(read_probe_files(tmp_path / "probe"))
    scanners = [c for c in candidates if c.kind == "scanner"]
    assert [(c.file, c.line, c.parts) for c in scanners] == [("lexer.py", 7, 6)]
    assert scanners[0].id.startswith("content:lexer.py:7:scanner#")
    assert len([c for c in candidates if c.kind == "regex" and c.file == "lexer.py"]) == 6
    values = content_values([c.runtime() for c in scanners], ["in.txt"], str(tmp_path))
    assert values[scanners[0].id] == int(proc.stdout)
    assert int(proc.stdout) != len(text)  # rules in text order ("." first) would count every character


def _record(pattern: str, order: int, process: int = 0, line: int = 4, flags: int = 32, file: str = "lex.py") -> dict:
    return {"pattern": pattern, "bytes": False, "flags": flags, "file": file, "line": line, "qualname": "Lexer.setup",
            "order": order, "process": process}


def test_scanners_keep_the_compile_order_of_the_process_that_compiled_most_at_one_place():
    records = [_record("b", 1), _record("a", 0), _record("c", 2),  # process 0: a, b, c
               _record("z", 5, process=1), _record("a", 3, process=1), _record("b", 4, process=1),
               _record("q", 6, process=1),  # process 1: a, b, z, q (the most)
               _record("x", 0, line=9), _record("y", 1, line=9),  # two rules: not a scanner
               _record("m", 0, line=12), _record("n", 1, line=12, flags=0), _record("o", 2, line=12)]  # flags differ
    scanners = scanners_from(records)
    assert [(s.line, s.parts, s.pattern) for s in scanners] == [(4, 4, "(?:a)|(?:b)|(?:z)|(?:q)")]
    assert scanners[0].qualname == "Lexer.setup" and scanners[0].kind == "scanner"


def test_an_alternation_matches_as_the_rules_do_one_by_one_or_is_not_offered():
    assert alternation(["a+", "(?i)b", "c"], False, 0) == "(?:a+)|(?:(?i:b))|(?:c)"
    assert re.compile(alternation(["a+", "(?i)b", "c"], False, 0)).findall("aaBc") == ["aa", "B", "c"]
    assert alternation([r"(.)\1", "b", "c"], False, 0) is None  # a group number would point elsewhere
    assert alternation(["(?P<n>a)", "(?P<n>b)", "c"], False, 0) is None  # a group name defined twice
    verbose = alternation(["a  # the letter a", "b", "c"], False, re.VERBOSE)
    assert re.compile(verbose, re.VERBOSE).findall("abc") == ["a", "b", "c"]  # a comment ends with its rule
    assert re.compile(alternation(["\xe9", "b", "c"], True, 0).encode("latin-1")).findall("é".encode("latin-1")) == [b"\xe9"]


def test_feature_ids_are_stable_and_tell_patterns_apart():
    a = feature_id("lex.py", 3, r"\w+", False, 32)
    assert a == feature_id("lex.py", 3, r"\w+", False, 32)
    assert a != feature_id("lex.py", 3, r"\w+", True, 32) != feature_id("lex.py", 3, r"\w*", False, 32)
    assert a.startswith("content:lex.py:3:regex#")


def test_bytes_and_str_patterns_count_over_the_same_bytes():
    data = "naïve café\n".encode()
    assert count_matches(compile_feature({"pattern": r"\w+", "bytes": False, "flags": 32}), data) == 2
    assert count_matches(compile_feature({"pattern": "\xc3", "bytes": True, "flags": 0}), data) == 2  # UTF-8 lead bytes
    assert count_matches(compile_feature({"pattern": "", "bytes": False, "flags": 32}), b"abc") == 4


def _candidate(pattern: str, line: int = 1) -> ContentFeature:
    return ContentFeature(id=feature_id("p.py", line, pattern, False, 32), pattern=pattern, bytes=False, flags=32,
                          file="p.py", line=line, qualname="<module>")


def test_a_pattern_that_backtracks_without_end_is_dropped_and_the_rest_measured(tmp_path):
    (tmp_path / "a.txt").write_text("a" * 40 + "!")
    (tmp_path / "b.txt").write_text("aaa bbb")
    good, evil = _candidate("a"), _candidate("(a+)+$", 2)

    class Record:
        def __init__(self, iid, name):
            self.id, self.files, self.argv = iid, [name], []

    result = measure([good, evil], [Record("1", "a.txt"), Record("2", "b.txt")], tmp_path, limit_s=3)
    assert evil.id in result.dropped and "past" in result.dropped[evil.id]
    assert result.values == {"1": {good.id: 40.0}, "2": {good.id: 3.0}}
    assert all(s >= 0 for row in result.seconds.values() for s in row.values())
    other = _candidate("b", 3)
    shared = measure([good, evil, other], [Record("1", "a.txt"), Record("2", "b.txt")], tmp_path, limit_s=3, jobs=2)
    assert set(shared.dropped) == {evil.id}  # two children, each counting its share
    assert shared.values == {"1": {good.id: 40.0, other.id: 0.0}, "2": {good.id: 3.0, other.id: 3.0}}


class _Record:
    def __init__(self, iid, name):
        self.id, self.files, self.argv = iid, [name], []


def test_the_limit_holds_for_one_count_not_for_the_whole_child(tmp_path):
    """Pygments compiles 1,003 patterns. The limit held for the child that counted them all: when their counts
    together ran past it, the child was stopped, the pattern it was counting dropped though no slower than the
    rest, and the input counted again from its start, so the stage dropped one innocent pattern per turn for
    hours."""
    import re
    import time

    from mantispy.runtime.content import count_matches

    (tmp_path / "a.txt").write_text("lorem ipsum dolor sit amet consectetur " * 100000)  # 3.9 MB
    patterns = [_candidate(rf"\b\w+{letter}\b", n) for n, letter in enumerate("abcdefghijkl", 1)]
    data = (tmp_path / "a.txt").read_bytes()
    started = time.process_time()
    count_matches(re.compile(patterns[0].pattern), data)
    one = time.process_time() - started
    result = measure(patterns, [_Record("1", "a.txt")], tmp_path, limit_s=max(4 * one, 0.1))  # 12 counts: past it
    assert result.dropped == {}
    assert set(result.values["1"]) == {p.id for p in patterns}


def test_a_candidate_far_over_the_budget_on_a_window_is_not_measured_further(tmp_path):
    from mantispy.content.measure import SCREEN_BYTES, screen

    (tmp_path / "big.txt").write_text(("word " * 20 + "\n") * 1000)  # 101 kB
    (tmp_path / "small.txt").write_text("word " * 100)
    cheap, costly = _candidate("word"), _candidate(r"(?s).*\.zz", 2)  # the second: quadratic in the text
    out = screen([cheap, costly], _Record("1", "big.txt"), tmp_path, wall_s=1.0, max_cost=0.01, limit_s=30)
    assert set(out) == {costly.id}
    assert "too expensive" in out[costly.id] and f"{SCREEN_BYTES} bytes of input 1" in out[costly.id]
    assert screen([cheap, costly], _Record("2", "small.txt"), tmp_path, wall_s=1.0, max_cost=0.01, limit_s=30) == {}
    # An input no larger than the window is counted whole (a median input of 2.6 kB once screened nothing, and
    # a thousand of Pygments' patterns were counted on every training input).
    (tmp_path / "mid.txt").write_text(("word " * 20 + "\n") * 38)  # 3.8 kB: under the window
    out = screen([cheap, costly], _Record("4", "mid.txt"), tmp_path, wall_s=1.0, max_cost=0.001, limit_s=30)
    assert set(out) == {costly.id} and "to count on input 4 (3838 bytes)" in out[costly.id]
    assert screen([cheap], _Record("3", "gone.txt"), tmp_path, wall_s=1.0, max_cost=0.01, limit_s=30) == {}


def test_a_count_that_grows_faster_than_the_text_is_screened_by_the_largest_training_input(tmp_path):
    """A file-name glob searched through a file rescans the rest of the text from every position: cheap on a
    3 kB median input, seconds on a 110 kB one, where the count would run past its limit and be dropped
    after it (Pygments: hundreds of such globs, each dropped after 2 s on the largest input)."""
    from mantispy.content.measure import growth, screen

    assert growth(0.0005, 0.0001) == 1.0  # too short to tell
    assert growth(0.008, 0.0005) == pytest.approx(2.0) and growth(0.008, 0.002, step=2) == pytest.approx(2.0)
    assert growth(0.004, 0.003) == 1.0 and growth(1.0, 0.001) == 3.0  # within [1, 3]
    (tmp_path / "mid.txt").write_text(("word " * 20 + "\n") * 38)  # 3.8 kB: the median input, counted whole
    glob, cheap = _candidate(r"(?s:.*\.zz)\Z", 2), _candidate("word")
    out = screen([cheap, glob], _Record("m", "mid.txt"), tmp_path, wall_s=1.0, max_cost=0.05, limit_s=2.0,
                 largest=("big", 400_000.0))
    assert set(out) == {glob.id}
    assert "time growing as size^" in out[glob.id] and "on input big (400000 bytes) it would take about" in out[glob.id]
    assert screen([cheap, glob], _Record("m", "mid.txt"), tmp_path, wall_s=1.0, max_cost=0.05, limit_s=2.0) == {}


def test_choose_offers_cheap_informative_new_candidates_only():
    ids = [str(n) for n in range(12)]
    rng = np.random.default_rng(1)
    size = {i: float(1000 + 100 * n) for n, i in enumerate(ids)}
    tokens = {i: float(50 + 37 * ((n * 7) % 12)) for n, i in enumerate(ids)}  # not the size's order
    cost = {i: 0.2 + tokens[i] / 100 + size[i] / 300 + rng.uniform(0, 0.01) for i in ids}
    cands = {name: _candidate(name, n) for n, name in enumerate(["tok", "tok2", "size", "flat", "slow", "noise"])}
    values = {i: {cands["tok"].id: tokens[i], cands["tok2"].id: 2 * tokens[i] + 1, cands["size"].id: size[i] / 7,
                  cands["flat"].id: 3.0, cands["slow"].id: tokens[i] + 5, cands["noise"].id: float((n * 5) % 3)}
              for n, i in enumerate(ids)}
    seconds = {i: {c.id: 0.001 for c in cands.values()} for i in ids}
    for i in ids:
        seconds[i][cands["slow"].id] = 0.5 * cost[i]
    chosen, reasons = choose(list(cands.values()), Measured(values, seconds), {"cpu_s": cost},
                             {i: cost[i] for i in ids}, size, max_cost=0.05)
    assert chosen == [cands["tok"].id] or chosen == [cands["tok2"].id]
    other = cands["tok2"].id if chosen == [cands["tok"].id] else cands["tok"].id
    assert reasons[other].startswith("a copy of")
    assert reasons[cands["size"].id].startswith("moves with the input files' size")
    assert reasons[cands["flat"].id].startswith("the same value")
    assert reasons[cands["slow"].id].startswith("too expensive")
    assert reasons[cands["noise"].id].startswith("rank correlation")
    assert reasons[chosen[0]].startswith("offered")


def test_an_offered_scanner_supersedes_the_rules_compiled_at_its_place():
    ids = [str(n) for n in range(12)]
    size = {i: float(1000 + 100 * n) for n, i in enumerate(ids)}
    words = {i: float(40 + 29 * ((n * 5) % 12)) for n, i in enumerate(ids)}
    numbers = {i: float(10 + 13 * ((n * 7) % 12)) for n, i in enumerate(ids)}
    cost = {i: 0.1 + (words[i] + numbers[i]) / 500 for i in ids}
    scanner = ContentFeature(id=feature_id("lex.py", 4, "(?:w)|(?:n)|(?:s)", False, 32, kind="scanner"),
                             pattern="(?:w)|(?:n)|(?:s)", bytes=False, flags=32, file="lex.py", line=4,
                             qualname="Lexer.setup", kind="scanner", parts=3)
    word, number = _candidate("w"), _candidate("n")
    word, number = (ContentFeature(**{**c.__dict__, "file": "lex.py", "line": 4}) for c in (word, number))
    elsewhere = _candidate("e", 9)
    values = {i: {scanner.id: words[i] + numbers[i] + 3, word.id: words[i], number.id: numbers[i],
                  elsewhere.id: numbers[i] * 2 + words[i] / 3} for i in ids}
    seconds = {i: {c: 0.001 for c in values[i]} for i in ids}
    everything = [word, number, scanner, elsewhere]
    chosen, reasons = choose(everything, Measured(values, seconds), {"cpu_s": cost}, dict(cost), size, max_cost=0.05)
    assert chosen[0] == scanner.id and elsewhere.id in chosen  # scanners first; another place's pattern stays
    for rule in (word, number):
        assert reasons[rule.id] == f"counted by the scanner offered at its place ({scanner.id})"
    for i in ids:  # a scanner too expensive to offer leaves its rules to compete as before
        seconds[i][scanner.id] = cost[i]
    chosen, reasons = choose(everything, Measured(values, seconds), {"cpu_s": cost}, dict(cost), size, max_cost=0.05)
    assert scanner.id not in chosen and word.id in chosen and number.id in chosen
    assert reasons[scanner.id].startswith("too expensive")


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=300), extra=st.sampled_from([b"\\", b"\n", b"..", b"((", b"\xff,", b"*+?"]))
def test_a_byte_candidate_counts_what_its_pattern_matches(data, extra):
    """The ``bytes.count`` path gives the number of matches ``finditer`` finds, for every counted byte."""
    data = data + extra
    for cand in byte_candidates():
        compiled = compile_feature(cand.runtime())
        assert literal_byte(compiled) is not None, cand.pattern
        assert count_matches(compiled, data) == sum(1 for _ in compiled.finditer(data)), cand.pattern


def test_byte_candidates_are_the_newline_and_punctuation_and_never_a_pattern_with_flags():
    cands = byte_candidates()
    assert [c.pattern.encode("latin-1")[-1:] for c in cands] == [bytes([b]) for b in COUNTED_BYTES]
    assert b"\n" in COUNTED_BYTES and b"," in COUNTED_BYTES and b"a" not in COUNTED_BYTES and b"7" not in COUNTED_BYTES
    assert len({c.id for c in cands}) == len(cands) and all(c.id.startswith("content:input:0:byte#") for c in cands)
    assert all(c.kind == "byte" and c.file == INPUT_FILES and c.line == 0 and c.bytes for c in cands)
    assert literal_byte(re.compile(b",", re.IGNORECASE)) is None and literal_byte(re.compile(",")) is None
    assert literal_byte(re.compile(rb"\d")) is None and literal_byte(re.compile(b".")) is None
    comma = next(c for c in cands if c.pattern == ",")
    assert feature_from_json(comma.__dict__) == comma
    with pytest.raises(ContentError, match="parts"):
        feature_from_json({**comma.__dict__, "parts": 2})
    described = describe(ContentTable(key="k", candidates=[comma], values={}, seconds={}, chosen=[], reasons={}), comma.id)
    assert "the byte b','" in described["detail"] and described["file"] == INPUT_FILES


def test_byte_counts_are_offered_after_the_programs_own_patterns():
    """Generic counts of the input come after what the program compiled: they fill the places its patterns
    leave, most correlated first."""
    ids = [str(n) for n in range(12)]
    size = {i: float(1000 + 100 * n) for n, i in enumerate(ids)}
    tokens = {i: float(50 + 37 * ((n * 7) % 12)) for n, i in enumerate(ids)}
    commas = {i: float(20 + 11 * ((n * 5) % 12)) for n, i in enumerate(ids)}
    cost = {i: 0.2 + tokens[i] / 100 + commas[i] / 50 for i in ids}
    own = _candidate("tok")
    comma, newline = (next(c for c in byte_candidates() if c.pattern == p) for p in (",", "\\\n"))
    values = {i: {own.id: tokens[i], comma.id: commas[i], newline.id: size[i] / 40 + (n % 3)} for n, i in enumerate(ids)}
    seconds = {i: {c: 0.0001 for c in values[i]} for i in ids}
    chosen, reasons = choose([comma, newline, own], Measured(values, seconds), {"cpu_s": cost}, dict(cost), size,
                             max_cost=0.05)
    assert chosen[0] == own.id and comma.id in chosen, reasons
    chosen, _ = choose([comma, newline, own], Measured(values, seconds), {"cpu_s": cost}, dict(cost), size,
                       max_cost=0.05, limit=1)
    assert chosen == [own.id]


def test_byte_counts_that_say_nothing_beyond_the_size_are_not_offered():
    """Judged as a group: where the size alone explains the cost as well, generic counts would only give a
    fit on few inputs more columns to overfit (tabulate's and pyflakes' CPU models lost to the black box
    with them); where they explain what the size does not (a parser whose cost per byte follows the input's
    separators), they are offered."""
    rng = np.random.default_rng(3)
    ids = [str(n) for n in range(30)]
    size = {i: float(rng.uniform(1e4, 1e6)) for i in ids}
    commas = {i: size[i] * float(rng.uniform(0.01, 0.2)) for i in ids}
    lines = {i: size[i] / 40 * float(rng.uniform(0.9, 1.1)) for i in ids}
    comma, newline = (next(c for c in byte_candidates() if c.pattern == p) for p in (",", "\\\n"))
    values = {i: {comma.id: commas[i], newline.id: lines[i]} for i in ids}
    seconds = {i: {c: 1e-5 for c in values[i]} for i in ids}
    by_size = {i: 0.05 + size[i] * 1e-6 * float(rng.uniform(0.95, 1.05)) for i in ids}
    chosen, reasons = choose([comma, newline], Measured(values, seconds), {"cpu_s": by_size}, dict(by_size), size,
                             max_cost=0.05)
    assert chosen == [] and reasons[comma.id].startswith("the input's structure says little beyond its size")
    by_commas = {i: 0.05 + commas[i] * 1e-5 * float(rng.uniform(0.95, 1.05)) for i in ids}
    chosen, reasons = choose([comma, newline], Measured(values, seconds), {"cpu_s": by_commas}, dict(by_commas), size,
                             max_cost=0.05)
    assert comma.id in chosen and "cross-validated on the files' size and the byte counts" in reasons[comma.id]


def _table() -> ContentTable:
    cand = _candidate(r"\w+")
    return ContentTable(key="k", candidates=[cand], values={"i1": {cand.id: 3.0}}, seconds={"i1": {cand.id: 0.01}},
                        chosen=[cand.id], reasons={cand.id: "offered"})


def test_the_offered_line_says_how_many_more_there_are_than_it_names(tmp_path):
    chosen = [f"content:app.py:{n}:regex#{n:010x}" for n in range(7)]
    reasons = {f: "offered: rank correlation 0.8 with a metric" for f in chosen}
    line = offered_line(chosen, reasons, tmp_path / "content.json")
    assert line.startswith("content features: 7 offered to the models: ")
    assert all(f in line for f in chosen[:4]) and not any(f in line for f in chosen[4:])
    assert line.endswith(f"and 3 more (all in {tmp_path / 'content.json'})")
    assert offered_line(chosen[:2], reasons, tmp_path).count("regex#") == 2 and "more" not in offered_line(chosen[:2], reasons, tmp_path)
    assert offered_line([], {}, tmp_path) == "content features: 0 offered to the models"


def test_the_table_reads_back(tmp_path):
    table = _table()
    table.save(tmp_path / "content.json")
    again = read_table(tmp_path / "content.json")
    assert again == table


def test_a_bad_table_names_its_field(tmp_path):
    doc = _table().to_json()
    doc["candidates"][0]["line"] = "3"
    with pytest.raises(ContentError, match=r"candidates\[0\]: field 'line' must be int"):
        table_from_json(doc)
    doc = _table().to_json()
    doc["chosen"] = ["content:nowhere"]
    with pytest.raises(ContentError, match=r"chosen\[0\]"):
        table_from_json(doc)
    (tmp_path / "x.json").write_text("{")
    with pytest.raises(ContentError, match="unreadable"):
        read_table(tmp_path / "x.json")


def test_a_scanner_reads_back_and_a_table_from_before_scanners_reads_as_regexes(tmp_path):
    scanner = ContentFeature(id=feature_id("p.py", 2, "(?:a)|(?:b)|(?:c)", False, 32, kind="scanner"),
                             pattern="(?:a)|(?:b)|(?:c)", bytes=False, flags=32, file="p.py", line=2, qualname="f",
                             kind="scanner", parts=3)
    table = _table()
    table.candidates.append(scanner)
    table.save(tmp_path / "content.json")
    assert read_table(tmp_path / "content.json") == table
    old = _table().to_json()
    for cand in old["candidates"]:
        del cand["kind"], cand["parts"]
    assert table_from_json(old) == _table()
    doc = table.to_json()
    doc["candidates"][1]["kind"] = "lexer"
    with pytest.raises(ContentError, match=r"candidates\[1\]: field 'kind' must be one of regex, scanner"):
        table_from_json(doc)
    doc = table.to_json()
    doc["candidates"][0]["parts"] = 3
    with pytest.raises(ContentError, match=r"candidates\[0\]: field 'parts' must be 1 for a regex"):
        table_from_json(doc)


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=5),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
                    max_leaves=8)


@settings(max_examples=200, deadline=None)
@given(path=st.lists(st.sampled_from(["candidates", 0, "id", "line", "bytes", "values", "i1", "chosen", "reasons",
                                      "seconds", "key", "version", "format", "flags", "pattern", "kind", "parts"]), min_size=1,
                      max_size=3),
       value=JSON)
def test_the_table_reader_says_content_error_or_reads_any_mutation(path, value):
    doc = json.loads(json.dumps(_table().to_json()))
    target = doc
    for step in path[:-1]:
        if isinstance(target, dict) and isinstance(step, str) and step in target:
            target = target[step]
        elif isinstance(target, list) and isinstance(step, int) and step < len(target):
            target = target[step]
        else:
            return
    last = path[-1]
    if isinstance(target, dict) and isinstance(last, str):
        target[last] = value
    elif isinstance(target, list) and isinstance(last, int) and last < len(target):
        target[last] = value
    else:
        return
    try:
        table = table_from_json(doc)
    except ContentError:
        return
    assert isinstance(table, ContentTable)


SQL_WORKLOAD = '''\
"""Format a SQL file with sqlparse (the copy next to this script)."""
import sys

import sqlparse

text = open(sys.argv[1], encoding="utf-8").read()
print(len(sqlparse.format(text, reindent=True, keyword_case="upper")))
'''

SQL_INPUTS = '''\
"""SQL files whose cost follows their tokens, not their size: dense SELECTs mixed with long comments and
string literals (few tokens per byte)."""
import random
from pathlib import Path


def generate(count=12, seed=1):
    rng = random.Random(seed)
    folder = Path(__file__).resolve().parent / "sql"
    folder.mkdir(exist_ok=True)
    for n in range(count):
        dense, sparse = rng.randint(20, 400), rng.randint(0, 120)
        parts = []
        for i in range(dense):
            cols = ", ".join(f"c{rng.randint(0, 99)}" for _ in range(rng.randint(3, 9)))
            parts.append(f"select {cols} from t{i} where a{i} = {rng.randint(0, 9)} and b > {rng.randint(0, 99)};")
        for i in range(sparse):
            parts.append(f"-- {'x' * rng.randint(200, 900)}\\ninsert into log values ('{'y' * rng.randint(200, 900)}');")
        rng.shuffle(parts)
        path = folder / f"q{n:02d}.sql"
        text = "\\n".join(parts) + "\\n"
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
        yield {"id": f"q{n:02d}", "argv": [f"sql/q{n:02d}.sql"]}
'''


@pytest.fixture(scope="module")
def sql_build(tmp_path_factory):
    """``mantispy build`` (the CLI) on sqlparse formatting SQL files, with content features (and without the
    input descriptors, so that the file's size does not stand in for them)."""
    import importlib.util
    import shutil

    from tests.helpers import MANTISPY

    root = tmp_path_factory.mktemp("content-build")
    app = root / "app"
    app.mkdir()
    origin = importlib.util.find_spec("sqlparse").origin
    shutil.copytree(Path(origin).parent, app / "sqlparse", ignore=shutil.ignore_patterns("__pycache__"))
    (app / "work.py").write_text(SQL_WORKLOAD)
    (root / "inputs.py").write_text(SQL_INPUTS)
    (root / "campaign.toml").write_text(textwrap.dedent("""\
        name = "sqlformat"
        source = "app"
        entry = "work.py"
        timeout = 120
        [env]
        PYTHONHASHSEED = "0"
        [inputs]
        generator = "inputs.py:generate"
        generator_args = { count = 16, seed = 1 }
        """))
    out = root / "predictor"
    proc = subprocess.run([*MANTISPY, "build", str(root / "campaign.toml"), "-o", str(out), "--work", str(root / "work"),
                           "--train-fraction", "0.5", "--metric", "cpu", "--repeats", "1", "--lookahead", "3",
                           "--max-rounds", "2", "--static", "--jobs", "2", "--no-input-features"],
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return root, out, proc.stdout + proc.stderr


def test_build_offers_sqlparse_regexes_as_content_features(sql_build):
    root, out, said = sql_build
    table = read_table(root / "work" / "content.json")
    assert "regular expression(s) of its own" in said and "offered to the models" in said
    own = [c for c in table.candidates if c.kind != "byte"]
    assert len(own) >= 20  # sqlparse's lexer compiles one regex per token rule
    assert all(c.file.startswith("sqlparse/") for c in own)  # its own, not argparse's
    counted = {c.id for c in table.candidates if c.kind == "byte"}
    assert len(counted) == len(COUNTED_BYTES) and "byte counts of the input files" in said
    assert sum(counted <= set(row) for row in table.values.values()) == 8  # measured on every training input
    assert table.chosen, table.reasons
    ids = set(table.values)
    assert len(ids) == 16 and all(set(table.chosen) <= set(row) for row in table.values.values())
    for fid, why in table.reasons.items():
        assert why, fid


def test_a_model_using_content_features_predicts_from_its_package(sql_build, tmp_path):
    from mantispy.build_record import BuildRecord
    from tests.helpers import MANTISPY

    root, out, _ = sql_build
    assert BuildRecord.load(out).evaluator.files >= 0  # build.json reads back (files was once the input's paths)
    report = subprocess.run([*MANTISPY, "report", str(out), "-o", str(tmp_path / "report.html")], capture_output=True,
                            text=True, timeout=300)
    assert report.returncode == 0, report.stderr
    record = json.loads((out / "build.json").read_text())
    model = record["metrics"]["cpu_s"]["model"]
    used = [f for f in model["scaling"] if f.startswith("content:")]
    fidelity = record["evaluator"]["fidelity"]
    assert fidelity["mismatch_count"] == 0
    assert fidelity["content_features"] == sorted(used)  # the package lists them sorted; an averaged model's scaling
    # is its members' union in member order (CI once saw the two orders differ)
    table = read_table(root / "work" / "content.json")
    for fid in used:  # a scanner or a single regex, whichever cross-validation kept, says which it is
        described, candidate = model["features"][fid], table.feature(fid)
        assert described["kind"] == "content" and candidate is not None
        said = {"scanner": "alternation of the", "regex": "regular expression", "byte": "the byte"}[candidate.kind]
        assert said in described["detail"] and (described["file"], described["line"]) == (candidate.file, candidate.line)
    code = ("import sys, json; sys.path.insert(0, sys.argv[1]); import predictor as p; "
            "print(json.dumps([p.predict([sys.argv[2]], cwd=sys.argv[3]), p.content_numbers([sys.argv[2]], cwd=sys.argv[3])]))")
    proc = subprocess.run([sys.executable, "-c", code, str(out.parent), "sql/q00.sql", str(root)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    estimate, numbers = json.loads(proc.stdout)
    assert estimate["cpu_s"] > 0
    # cross-validation keeps a content feature or an equally good program feature, as the run's timings fall;
    # either way the package counts exactly the content features its models use (none when they use none)
    assert numbers == {f: table.values["q00"][f] for f in used}
    if not used:  # what the package would have counted: the table's choice, as the run-time counts it
        chosen = [c for c in table.candidates if c.id in table.chosen]
        assert chosen and content_values([c.runtime() for c in chosen], ["sql/q00.sql"], str(root)) == {
            c.id: table.values["q00"][c.id] for c in chosen}


def test_no_content_features_keeps_them_out(sql_build, tmp_path):
    from mantispy.build import BuildOptions, build

    root, _, _ = sql_build
    record = build(BuildOptions(spec=root / "campaign.toml", out=tmp_path / "p", work=root / "work", metrics=("cpu_s",),
                                train_fraction=0.5, repeats=1, lookahead=3, max_rounds=2, observed_calls=False,
                                content=False, inputs=False))
    model = record.metrics["cpu_s"].model
    assert not any(f.startswith("content:") for f in model["scaling"])
    assert not record.evaluator.fidelity.get("content_features")


def test_the_content_tables_cache_key_changes_with_the_code_that_chooses(tmp_path, monkeypatch):
    """A cached content.json was reused after the choosing rules changed (its key covered only the probe
    and the counting code), so a build kept offering what the old rules chose."""
    from mantispy.content import choose as choosing
    from mantispy.content import discover as discovering
    from mantispy.content import stage

    before = stage._key("src", ["a", "b"], ["a"], 0.05)
    for module in (choosing, discovering):
        changed = tmp_path / f"{module.__name__}.py"
        changed.write_bytes(Path(module.__file__).read_bytes() + b"\n# another rule\n")
        with monkeypatch.context() as patch:
            patch.setattr(module, "__file__", str(changed))
            assert stage._key("src", ["a", "b"], ["a"], 0.05) != before
    assert stage._key("src", ["a", "b"], ["a"], 0.05) == before


def test_inputs_that_name_no_file_get_no_byte_candidates(tmp_path, monkeypatch):
    """A campaign whose inputs are argv numbers alone has no bytes to count: its table lists none (the
    wheel check's program, squares.py, had 33 candidates with nothing to judge)."""
    from types import SimpleNamespace

    from mantispy.content import stage

    monkeypatch.setattr(stage, "discover", lambda spec, ids, jobs=1, log=None: [])
    said: list[str] = []
    records = [SimpleNamespace(id=f"n{k}", argv=[str(k)], files=[], kwargs=None) for k in range(6)]
    spec = SimpleNamespace(inputs=records, workdir=str(tmp_path))
    train = {r.id: {"wall_s": 0.1 + k / 100, "cpu_s": 0.1 + k / 100} for k, r in enumerate(records)}
    table = stage.content_table(spec, tmp_path, "src", train, 0.05, log=said.append)
    assert table.candidates == [] and table.chosen == []
    assert not any("byte counts" in line for line in said)
