"""``mantispy slice --why FILE:LINE``: the chain of dependences that keeps a statement in a slice
(slicer/explain.py), checked against the slice itself on every line of a program."""

from __future__ import annotations

import subprocess

from mantispy.slicer.evaluators import SliceSession
from mantispy.slicer.explain import why_kept
from mantispy.slicer.slice_index import SliceIndex
from mantispy.slicer.slicing import criterion_nodes
from tests.helpers import MANTISPY
from tests.test_slicing import line_of, write_program

LEXER = {"lexer.py": """
    import sys


    def build(n):
        total = 0
        for i in range(n * 1000):
            total += i % 7
        return str(total)


    class Lexer:
        values = ("true", "false", "null")
        pattern = "|".join(values) + build(int(sys.argv[2]))


    TABLE = {"x": ("a", "b"), "y": ("c",)}


    def main():
        count = 0
        for names in TABLE.values():
            count += len(names)
        print(count, len(Lexer.pattern))


    main()
"""}
FEATURE = "lexer.py:main:loop:1"


def test_the_chain_runs_from_the_criterion_to_the_statement_through_each_dependence(tmp_path):
    """``for names in TABLE.values()`` keeps the work inside ``build``: the chain says how (the class
    body's join is taken to advance ``values``, a field every ``.values()`` lookup reads)."""
    root = write_program(tmp_path / "p", LEXER)
    session = SliceSession(root, "lexer.py")
    steps = why_kept(session.sdg, session.features[FEATURE], "lexer.py", line_of(root, "lexer.py", "for i in range"))
    assert steps is not None
    assert steps[0].how == "criterion" and steps[0].line == line_of(root, "lexer.py", "for names in TABLE")
    assert steps[-1].line == line_of(root, "lexer.py", "for i in range") and steps[-1].unit == "build"
    assert any(s.how == "global .values" and s.unit == "Lexer" for s in steps), steps
    assert why_kept(session.sdg, session.features[FEATURE], "lexer.py", line_of(root, "lexer.py", "print(count")) is None


def test_a_chain_exists_for_exactly_the_lines_the_slice_keeps(tmp_path):
    """On every line of the program: a chain when a statement starting there is in the slice, none
    otherwise; each chain ends on that line."""
    root = write_program(tmp_path / "p", LEXER)
    session = SliceSession(root, "lexer.py")
    sdg = session.sdg
    index = SliceIndex.of(sdg)
    kept = index.nodes_of(index.slice(criterion_nodes(sdg, session.features[FEATURE])))
    starts = {sdg.span_of(n)[1][0] for n in kept if n[0] == "v" and sdg.span_of(n) is not None}
    lines = (root / "lexer.py").read_text().splitlines()
    for line in range(1, len(lines) + 1):
        if not lines[line - 1].strip():
            continue
        steps = why_kept(sdg, session.features[FEATURE], "lexer.py", line)
        starting = any(sdg.span_of(n)[1][0] == line for n in index.nodes
                       if n[0] == "v" and sdg.span_of(n) is not None and sdg.span_of(n)[0] == "lexer.py")
        if starting:
            assert (steps is not None) == (line in starts), (line, lines[line - 1], steps)
        if steps is not None:
            assert steps[-1].line is not None and steps[-1].line <= line, (line, steps[-1])


def test_the_cli_prints_the_chain_and_refuses_a_bad_location_in_one_line(tmp_path):
    root = write_program(tmp_path / "p", LEXER)
    line = line_of(root, "lexer.py", "for i in range")
    done = subprocess.run([*MANTISPY, "slice", str(root), "--entry", "lexer.py", "--feature", FEATURE,
                           "--why", f"lexer.py:{line}"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert f"why lexer.py:{line} is in the slice of {FEATURE}" in done.stdout
    assert "global .values" in done.stdout and "for i in range(n * 1000):" in done.stdout
    for bad in ("lexer.py", "nowhere.py:3", "lexer.py:0"):
        refused = subprocess.run([*MANTISPY, "slice", str(root), "--entry", "lexer.py", "--feature", FEATURE,
                                  "--why", bad], capture_output=True, text=True, timeout=120)
        assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1, refused.stderr
        assert "--why" in refused.stderr and "Traceback" not in refused.stderr
