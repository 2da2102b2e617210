"""Implicit else arms counted by no probe (instrument/derivation.py): which ones, and that their counts
equal the probed ones."""

from __future__ import annotations

import json
import textwrap

from mantispy.instrument.manifest import Manifest
from mantispy.instrument.transformer import Options, instrument_source
from tests.helpers import COUNTING_FLAG, MANTISPY, by_suffix, instrument_and_run, same_behaviour

GUARDS = """
def imt(token, i=None, m=None):
    \"\"\"Guard clauses, as sqlparse's utils.imt has them.\"\"\"
    if token is None:
        return False
    if i and isinstance(token, i):
        return True
    if m:
        if m == 1:
            return 1
        elif m == 2:
            return 2
    x = 1
    if x > len(str(token)):
        x = 2
    return x

def scan(rows):
    total = 0
    for row in rows:
        if row is None:
            continue
        if row < 0:
            total -= 1
        elif row > 10:
            total += 2
        while row > 100:
            row -= 100
            if row == 150:
                break
    return total

def first_key(d, keys):
    for k in keys:
        v = d[k]            # a KeyError here ends the loop through the caller's handler
        if v:
            return v
    return None

def gen(xs):
    for x in xs:
        if (yield x):
            pass

for t in [None, "a", 3, 4.0, "long text", None]:
    imt(t, int, 1 if t == 3 else (2 if t == 4.0 else None))
print(scan([None, 1, -1, 11, 250, 350, None, 5]))
try:
    first_key({"a": 0, "b": 2}, ["a", "c", "b"])
except KeyError:
    print("missing")
print(first_key({"a": 0, "b": 2}, ["a", "b"]))
g = gen([1, 2, 3])
next(g); g.send(1); g.send(0)
"""


def _derived_details(result) -> dict[str, str]:
    details = {f.id: f.snippet for f in result.features}
    return {fid: details[fid] for fid in result.derived}


def test_guard_clauses_and_loop_bodies_count_their_implicit_else_without_a_probe(tmp_path):
    original, instrumented, result = instrument_and_run(GUARDS, tmp_path)
    same_behaviour(original, instrumented, tmp_path)
    derived = _derived_details(result)
    # imt: the first guard (the function's first statement), the second (after a guard whose test calls
    # nothing), and the nested chain (it starts the arm of "if m:").
    assert derived["prog.py:imt:branch:2"] == "if token is None: (implicit else)"
    assert derived["prog.py:imt:branch:4"] == "if i and isinstance(token, i): (implicit else)"
    assert derived["prog.py:imt:branch:8"] == "elif m == 2: (implicit else)"
    assert result.derived["prog.py:imt:branch:2"] == {"prog.py:imt:call": 1, "prog.py:imt:branch:1": -1}
    assert result.derived["prog.py:imt:branch:8"] == {"prog.py:imt:branch:5": 1, "prog.py:imt:branch:6": -1,
                                                      "prog.py:imt:branch:7": -1}
    # ... but not "if m:", which follows a test that calls isinstance (it may raise), nor anything after it.
    assert "prog.py:imt:branch:9" not in result.derived and "prog.py:imt:branch:11" not in result.derived
    # Loop bodies: the first statement, and a chain after a guard that continues; the if inside the while
    # body follows a simple statement that calls nothing.
    assert "prog.py:scan:branch:2" in result.derived and "prog.py:scan:branch:5" in result.derived
    assert "prog.py:scan:branch:7" in result.derived
    # After ``v = d[k]`` (a subscript may raise, as here), and on a test that yields: probes.
    assert "prog.py:first_key:branch:2" not in result.derived
    assert "prog.py:gen:branch:2" not in result.derived
    # The derived counts are the probed ones.
    probed = tmp_path / "probed"
    probed.mkdir()
    _, every, every_result = instrument_and_run(GUARDS, probed, Options(derive_arms=False))
    assert every_result.derived == {} and set(every.features) == set(instrumented.features)
    assert every.features == instrumented.features
    assert by_suffix(instrumented.features, ":imt:branch:2") == 4 and by_suffix(instrumented.features, ":scan:branch:5") == 2


def test_a_derived_count_is_the_statements_entries_minus_its_arms_when_the_test_raises(tmp_path):
    """As the bytecode backend counts an implicit else (its if's entries minus its arm), a test that
    raises counts as the else arm; a probe on the arm counts it as no arm (``--probe-every-arm``)."""
    source = """
    def check(x):
        if 10 / x > 1:
            return "big"
        return "small"
    for v in [1, 20, 0, 5]:
        try:
            print(check(v))
        except ZeroDivisionError:
            print("zero")
    """
    original, instrumented, result = instrument_and_run(source, tmp_path)
    same_behaviour(original, instrumented, tmp_path)
    assert "prog.py:check:branch:2" in result.derived
    assert by_suffix(instrumented.features, ":check:branch:2") == 2  # 20 and 0
    probed = tmp_path / "probed"
    probed.mkdir()
    _, every, _ = instrument_and_run(source, probed, Options(derive_arms=False))
    assert by_suffix(every.features, ":check:branch:2") == 1


def test_the_first_test_of_a_loop_body_is_evaluated_once_with_values_recorded(tmp_path):
    """Bug: with a value recorded at the loop's start, the loop tick and the record were folded into the
    body's first ``if`` test as a tuple, so a test whose arm alone is probed (an ``if`` followed by ``elif``,
    or a derived implicit else) was left as an object whose truth the ``if`` took a second time."""
    source = COUNTING_FLAG + textwrap.dedent("""
    for v in [True, False, True, False]:
        if Flag(v):
            pass
        elif v is None:
            pass
    for v in [True, False]:
        if Flag(v):
            pass
    print(Flag.calls)
    """)
    for options in (Options(), Options(derive_arms=False)):
        folder = tmp_path / str(options.derive_arms)
        folder.mkdir()
        original, instrumented, _ = instrument_and_run(source, folder, options)
        same_behaviour(original, instrumented, folder)
        assert original.stdout == "6\n"


def test_the_manifest_lists_derived_counts_and_probe_every_arm_turns_them_off(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "app.py").write_text("import sys\n\ndef f(x):\n    if x:\n        return 1\n    return 0\n\n"
                                "print(sum(f(int(a)) for a in sys.argv[1:]))\n")
    import subprocess

    for flag, out in (([], tmp_path / "derived"), (["--probe-every-arm"], tmp_path / "every")):
        done = subprocess.run([*MANTISPY, "instrument", str(src), "-o", str(out), *flag], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
    derived, every = Manifest.load(tmp_path / "derived"), Manifest.load(tmp_path / "every")
    assert derived.derived == {"app.py:f:branch:2": {"app.py:f:call": 1, "app.py:f:branch:1": -1}}
    assert derived.options["derive_arms"] is True and every.options["derive_arms"] is False and every.derived == {}
    assert [f.id for f in derived.features] == [f.id for f in every.features]
    counts = {}
    for name in ("derived", "every"):
        features = tmp_path / f"{name}.json"
        done = subprocess.run([*MANTISPY, "run", str(tmp_path / name), "--features-out", str(features), "--",
                               "app.py", "0", "1", "0"], capture_output=True, text=True)
        assert done.returncode == 0 and done.stdout == "1\n", done.stderr
        counts[name] = json.loads(features.read_text())
    assert counts["derived"] == counts["every"] and counts["derived"]["app.py:f:branch:2"] == 2


def test_derivation_leaves_module_level_try_and_async_code_probed():
    source = (
        "if a:\n    pass\n"
        "def f(x):\n    try:\n        if x:\n            return 1\n    except ValueError:\n        pass\n"
        "async def g(xs):\n    async for x in xs:\n        if x:\n            pass\n"
        "    if await xs:\n        pass\n"
    )
    result = instrument_source(source, "m.py")
    assert result.derived == {"m.py:g:branch:2": {"m.py:g:loop:1": 1, "m.py:g:branch:1": -1}}


def test_variables_assigned_together_share_one_guard_that_closes_when_all_are_done(tmp_path):
    """A function's parameters, a loop's targets, a tuple assignment: one guard per statement (fewer checks
    once the values are in), each variable still recording its own first k values."""
    source = """
    def f(a, b, c=None):
        x, y = a, b
        return x
    for n, (p, q) in enumerate([(1, "ab"), (2, "cde"), (3, "f"), (4, ""), (5, "gh")]):
        f(n, q, c=p)
    """
    original, instrumented, result = instrument_and_run(source, tmp_path, Options(k=3))
    same_behaviour(original, instrumented, tmp_path)
    code = result.code
    assert "_mantis_gg[0] and _mantis_rec(-1, (a, b, c))" in code
    assert "_mantis_rec(-2, (x, y))" in code and "_mantis_rec(-3, (n, p, q))" in code
    values = {k.split(":value:")[1]: v for k, v in instrumented.features.items() if ":value:" in k}
    assert [values[f"a#{i}"] for i in (1, 2, 3)] == [0, 1, 2] and [values[f"b#{i}"] for i in (1, 2, 3)] == [2, 3, 1]
    assert [values[f"q#{i}"] for i in (1, 2, 3)] == [2, 3, 1] and "q#4" not in values
    assert [values[f"c#{i}"] for i in (1, 2, 3)] == [1, 2, 3]
    # Every group's guard is off once each member has its k values (one live thread).
    probe = tmp_path / "inst" / "probe.py"
    probe.write_text(result.code + "\nprint(_mantis_gg)\n")
    from tests.helpers import run_file

    assert run_file(probe).stdout.strip() == "[False, False, False]"


WRITTEN_ELSE = """
def sign(x):
    if x > 0:
        return 1
    elif x < 0:
        return -1
    else:
        return 0

def classify(rows):
    small = big = other = 0
    for row in rows:
        if row is None:
            continue
        if row < 10:
            small += 1
        else:
            big += 1
        n = len(str(row))
        if n > 2:
            other += 1
        else:
            other -= 1
    return small, big, other

print([sign(v) for v in (3, -2, 0, 0, 7)], classify([1, None, 50, 200, 3, None, 9]))
"""


def test_a_written_else_is_counted_without_a_probe_where_its_chain_entries_are_known(tmp_path):
    """A written ``else`` is taken as often as its chain is entered less its arms, as an implicit else."""
    original, instrumented, result = instrument_and_run(WRITTEN_ELSE, tmp_path)
    same_behaviour(original, instrumented, tmp_path)
    derived = _derived_details(result)
    # sign: the chain starts the function body (its calls); classify: the else after a guard clause.
    assert derived["prog.py:sign:branch:3"] == "else:"
    assert result.derived["prog.py:sign:branch:3"] == {"prog.py:sign:call": 1, "prog.py:sign:branch:1": -1,
                                                       "prog.py:sign:branch:2": -1}
    assert result.derived["prog.py:classify:branch:4"] == {"prog.py:classify:loop:1": 1,
                                                           "prog.py:classify:branch:1": -1,
                                                           "prog.py:classify:branch:3": -1}
    # ... but not after ``n = len(str(row))``, which calls (it may raise): that else keeps its probe.
    assert "prog.py:classify:branch:6" not in result.derived
    assert "_mantis_k[" in result.code.split("n = len(str(row))")[1]
    probed = tmp_path / "probed"
    probed.mkdir()
    _, every, every_result = instrument_and_run(WRITTEN_ELSE, probed, Options(derive_arms=False))
    assert every_result.derived == {} and every.features == instrumented.features
    assert by_suffix(instrumented.features, ":sign:branch:3") == 2 and by_suffix(instrumented.features, ":classify:branch:4") == 2
