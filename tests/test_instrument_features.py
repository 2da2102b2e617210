"""Each feature family counts what the issue says, with Python semantics, and the program is unchanged."""

from __future__ import annotations

import textwrap

import pytest

from mantispy.instrument.transformer import Options
from tests.helpers import COUNTING_FLAG, by_suffix, instrument_and_run, same_behaviour


def check(source: str, tmp_path, options: Options | None = None):
    original, instrumented, result = instrument_and_run(source, tmp_path, options)
    same_behaviour(original, instrumented, tmp_path)
    assert result.shifted_lines == 0
    return instrumented.features, result


def test_for_while_and_nested_loops_count_iterations(tmp_path):
    features, _ = check(
        """
        def main(n):
            total = 0
            for i in range(n):
                for j in range(i):
                    total += j
            k = 0
            while k < 7:
                k += 1
            for _ in []:
                pass
            return total
        print(main(5))
        """,
        tmp_path,
    )
    assert by_suffix(features, ":main:loop:1") == 5
    assert by_suffix(features, ":main:loop:2") == 0 + 1 + 2 + 3 + 4
    assert by_suffix(features, ":main:loop:3") == 7
    assert by_suffix(features, ":main:loop:4") == 0
    assert by_suffix(features, ":main:call") == 1


def test_comprehension_clauses_and_partially_consumed_generator(tmp_path):
    features, _ = check(
        """
        pairs = [(a, b) for a in range(3) for b in range(4) if b % 2]
        gen = (x * x for x in range(100))
        first = [next(gen) for _ in range(5)]
        d = {k: v for k, v in zip("abc", range(3))}
        s = {c for c in "hello"}
        print(pairs, first, d, sorted(s))
        """,
        tmp_path,
    )
    assert by_suffix(features, "<module>:loop:1") == 3
    assert by_suffix(features, "<module>:loop:2") == 12
    assert by_suffix(features, "<module>:loop:3") == 5  # only the items produced
    assert by_suffix(features, "<module>:loop:4") == 5
    assert by_suffix(features, "<module>:loop:5") == 3
    assert by_suffix(features, "<module>:loop:6") == 5


def test_if_elif_else_arms_including_implicit_else(tmp_path):
    features, result = check(
        """
        def classify(x):
            if x < 0:
                return "neg"
            elif x == 0:
                return "zero"
            elif x < 10:
                return "small"
            else:
                return "big"
        def only_if(x):
            if x:
                print("yes")
            return x
        for v in [-2, -1, 0, 3, 4, 5, 50]:
            classify(v)
        for v in [0, 1, 0, 0]:
            only_if(v)
        """,
        tmp_path,
    )
    assert [by_suffix(features, f":classify:branch:{n}") for n in (1, 2, 3, 4)] == [2, 1, 3, 1]
    assert by_suffix(features, ":only_if:branch:1") == 1
    assert by_suffix(features, ":only_if:branch:2") == 3
    details = {f.id.split(":", 1)[1]: f.detail for f in result.features if f.kind == "branch"}
    assert details["classify:branch:1"] == "if"
    assert details["classify:branch:2"] == "elif"
    assert details["classify:branch:4"] == "else"
    assert details["only_if:branch:2"] == "implicit-else"


def test_condition_truthiness_is_evaluated_once(tmp_path):
    features, _ = check(
        COUNTING_FLAG + textwrap.dedent("""
        for v in [True, False, True]:
            if Flag(v):
                pass
        n = 0
        while Flag(n < 3):
            n += 1
        y = 1 if Flag(False) else 2
        print(Flag.calls, y)
        """),
        tmp_path,
    )
    assert by_suffix(features, "<module>:branch:1") == 2
    assert by_suffix(features, "<module>:branch:2") == 1
    assert by_suffix(features, "<module>:loop:2") == 3


def test_conditional_expression_arms(tmp_path):
    features, _ = check(
        """
        out = ["even" if i % 2 == 0 else "odd" for i in range(7)]
        print(out)
        """,
        tmp_path,
    )
    assert by_suffix(features, "<module>:branch:1") == 4
    assert by_suffix(features, "<module>:branch:2") == 3


def test_match_cases_with_guards_and_wildcard(tmp_path):
    features, _ = check(
        """
        def kind(v):
            match v:
                case 0:
                    return "zero"
                case int(n) if n > 100:
                    return "big"
                case int():
                    return "int"
                case [x, *rest]:
                    return "seq"
                case _:
                    return "other"
        print([kind(v) for v in [0, 0, 500, 7, 8, [1, 2], "s", None]])
        """,
        tmp_path,
    )
    assert [by_suffix(features, f":kind:branch:{n}") for n in range(1, 6)] == [2, 1, 2, 1, 2]


def test_loop_else_and_try_else(tmp_path):
    features, _ = check(
        """
        def find(xs, t):
            for x in xs:
                if x == t:
                    break
            else:
                return -1
            return t
        def attempt(v):
            try:
                r = 10 // v
            except ZeroDivisionError:
                return None
            else:
                return r
        print(find([1, 2], 2), find([1, 2], 3), find([], 0))
        print(attempt(0), attempt(2), attempt(5))
        """,
        tmp_path,
    )
    assert by_suffix(features, ":find:branch:3") == 2  # loop-else taken when no break
    assert by_suffix(features, ":attempt:except:1") == 1
    assert by_suffix(features, ":attempt:branch:1") == 2  # try-else


def test_calls_methods_lambdas_recursion_generators_async(tmp_path):
    features, _ = check(
        """
        import asyncio
        def fib(n):
            return n if n < 2 else fib(n - 1) + fib(n - 2)
        class Node:
            def __init__(self, v):
                self.v = v
            @property
            def double(self):
                return 2 * self.v
            @staticmethod
            def make(v):
                return Node(v)
        def gen(n):
            for i in range(n):
                yield i
        async def work(n):
            await asyncio.sleep(0)
            return n
        sq = lambda x: x * x
        print(fib(10), Node.make(3).double, list(map(sq, range(4))), sum(gen(4)))
        print(asyncio.run(work(5)))
        unused = gen(3)
        """,
        tmp_path,
    )
    assert by_suffix(features, ":fib:call") == 177
    assert by_suffix(features, ":Node.__init__:call") == 1
    assert by_suffix(features, ":Node.double:call") == 1
    assert by_suffix(features, ":Node.make:call") == 1
    assert by_suffix(features, ":<lambda>:call") == 4
    assert by_suffix(features, ":gen:call") == 1  # a generator counts when it starts running
    assert by_suffix(features, ":work:call") == 1


def test_exception_handlers_and_except_star(tmp_path):
    features, _ = check(
        """
        def risky(v):
            try:
                return {"a": 1}[v]
            except KeyError:
                return 0
            except (TypeError, ValueError) as exc:
                return -1
        def group():
            try:
                raise ExceptionGroup("g", [ValueError(1), KeyError(2)])
            except* ValueError:
                pass
            except* KeyError:
                pass
        print([risky(v) for v in ["a", "b", [], "c"]])
        group(); group()
        """,
        tmp_path,
    )
    assert by_suffix(features, ":risky:except:1") == 2
    assert by_suffix(features, ":risky:except:2") == 1
    assert by_suffix(features, ":group:except:1") == 2
    assert by_suffix(features, ":group:except:2") == 2


def test_value_versions_first_k_numbers_and_lengths(tmp_path):
    features, result = check(
        """
        class Box:
            def __init__(self, n):
                self.n = n
            def grow(self):
                self.n += 10
        def f(xs, scale=2.5, *rest, **opts):
            words = " ".join(xs)
            for i, w in enumerate(xs):
                pass
            if (m := len(words)) > 3:
                pass
            return words
        f(["ab", "cde"], 1.5, 7, 8, key=1)
        b = Box(4); b.grow(); b.grow()
        count = 0
        for _ in range(8):
            count += 1
        label = None
        """,
        tmp_path,
        Options(k=3),
    )
    assert features[next(k for k in features if k.endswith(":f:value:xs#1"))] == 2
    assert by_suffix(features, ":f:value:scale#1") == 1.5
    assert by_suffix(features, ":f:value:rest#1") == 2
    assert by_suffix(features, ":f:value:opts#1") == 1
    assert by_suffix(features, ":f:value:words#1") == 6
    assert [by_suffix(features, f":f:value:i#{v}") for v in (1, 2, 3)] == [0, 1, 0]  # two values only
    assert by_suffix(features, ":f:value:m#1") == 6
    assert [by_suffix(features, f":Box:value:self.n#{v}") for v in (1, 2, 3)] == [4, 14, 24]
    assert [by_suffix(features, f"<module>:value:count#{v}") for v in (1, 2, 3)] == [0, 1, 2]
    assert not any(":value:label#" in k for k in features)  # None is not recorded
    assert not any(":value:b#" in k for k in features)  # user objects are not recorded
    versions = {f.version for f in result.features if f.kind == "value"}
    assert versions == {1, 2, 3}


def test_global_and_nonlocal_variables_belong_to_their_scope(tmp_path):
    features, _ = check(
        """
        level = 1
        def bump():
            global level
            level = level + 1
        def outer():
            n = 10
            def inner():
                nonlocal n
                n = n + 5
            inner()
            return n
        bump(); print(outer(), level)
        """,
        tmp_path,
    )
    assert [by_suffix(features, f"<module>:value:level#{v}") for v in (1, 2)] == [1, 2]
    assert [by_suffix(features, f":outer:value:n#{v}") for v in (1, 2)] == [10, 15]


@pytest.mark.parametrize("family,kind", [("loops", "loop"), ("branches", "branch"), ("calls", "call"), ("exceptions", "exception"), ("values", "value")])
def test_only_selects_one_family(tmp_path, family, kind):
    features, result = check(
        """
        def f(x):
            try:
                for i in range(x):
                    if i:
                        pass
                int("not a number")
            except ValueError:
                pass
        f(3)
        """,
        tmp_path,
        Options(families=frozenset({family})),
    )
    assert {f.kind for f in result.features} == {kind}
    assert features


def test_probes_never_shift_lines_in_common_shapes_and_fall_back_when_they_must(tmp_path):
    source = """
    def f(xs):
        for x in xs:
            while x > 0:
                x -= 1
        return len(xs)
    print(f([3, 2]))
    """
    original, instrumented, result = instrument_and_run(source, tmp_path)
    same_behaviour(original, instrumented, tmp_path)
    assert result.shifted_lines == 1  # a loop whose body starts with a while: nowhere to fold the tick
    assert by_suffix(instrumented.features, ":f:loop:1") == 2
    assert by_suffix(instrumented.features, ":f:loop:2") == 5
