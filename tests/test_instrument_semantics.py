"""The instrumented program behaves exactly like the original: output, exit status, exceptions and
traceback line numbers, docstrings, future imports, scopes, generators, async, classes, match."""

from __future__ import annotations

from mantispy.instrument.transformer import instrument_source
from tests.helpers import instrument_and_run, same_behaviour


def equivalent(source: str, tmp_path) -> None:
    original, instrumented, result = instrument_and_run(source, tmp_path)
    same_behaviour(original, instrumented, tmp_path)
    assert instrumented.features, "instrumentation produced no features"
    assert result.shifted_lines == 0


def test_uncaught_exception_traceback_keeps_line_numbers(tmp_path):
    equivalent(
        """
        def parse(items):
            out = []
            for item in items:
                if item.isdigit():
                    out.append(int(item))
                else:
                    out.append(float(item))
            return out
        def main():
            data = ["1", "2", "x"]
            return parse(data)
        main()
        """,
        tmp_path,
    )


def test_exit_codes_and_stderr(tmp_path):
    equivalent(
        """
        import sys
        def check(n):
            if n > 2:
                print("too big", file=sys.stderr)
                sys.exit(3)
        for i in range(5):
            check(i)
        """,
        tmp_path,
    )


def test_docstrings_future_annotations_and_module_attributes(tmp_path):
    equivalent(
        '''
        """Module doc."""
        from __future__ import annotations
        import inspect
        class A:
            """Class doc."""
            def m(self, x: int) -> list[int]:
                """Method doc."""
                return [x]
        def f(a: A) -> None:
            """Function doc."""
        print(__doc__, A.__doc__, A.m.__doc__, f.__doc__)
        print(f.__annotations__, A.m.__annotations__)
        print(sorted(n for n in dir() if not n.startswith("_")))
        print(inspect.signature(f), inspect.signature(A.m))
        ''',
        tmp_path,
    )


def test_generators_send_throw_close_and_yield_from(tmp_path):
    equivalent(
        """
        def averager():
            total = count = 0
            avg = None
            while True:
                try:
                    value = yield avg
                except ValueError:
                    value = 0
                if value is None:
                    break
                total += value
                count += 1
                avg = total / count
            return total
        def outer():
            result = yield from averager()
            yield ("done", result)
        g = outer()
        next(g)
        print(g.send(10), g.send(20), g.throw(ValueError), g.send(None))
        g2 = averager(); next(g2); g2.close(); print("closed")
        """,
        tmp_path,
    )


def test_async_code(tmp_path):
    equivalent(
        """
        import asyncio
        async def agen(n):
            for i in range(n):
                await asyncio.sleep(0)
                yield i
        class Ctx:
            async def __aenter__(self):
                return 5
            async def __aexit__(self, *exc):
                return False
        async def main():
            out = [x async for x in agen(4) if x % 2 == 0]
            async for y in agen(2):
                out.append(y)
            async with Ctx() as c:
                out.append(c)
            results = await asyncio.gather(*(asyncio.sleep(0, result=i) for i in range(3)))
            return out, results
        print(asyncio.run(main()))
        """,
        tmp_path,
    )


def test_class_bodies_enum_dataclass_decorators_and_class_scope(tmp_path):
    equivalent(
        """
        import enum, dataclasses, functools
        class Color(enum.Enum):
            RED = 1
            GREEN = 2
            if True:
                BLUE = 3
            for _name in ["X"]:
                pass
            del _name
        @dataclasses.dataclass(order=True)
        class P:
            x: int
            y: int = 0
            tags: list = dataclasses.field(default_factory=list)
        def deco(fn):
            @functools.wraps(fn)
            def wrapper(*a, **k):
                return ("wrapped", fn(*a, **k))
            return wrapper
        @deco
        def add(a, b=2):
            return a + b
        class Scoped:
            items = [1, 2, 3]
            doubled = [i * 2 for i in items]
            try:
                bad = [i for i in range(2) if i in items]
            except NameError as e:
                err = str(e)
        print(list(Color), [c.value for c in Color], len(Color))
        print(P(1), P(2, 3) > P(1, 9), dataclasses.fields(P)[0].name)
        print(add(1), add.__name__, Scoped.doubled, Scoped.err)
        print(sorted(k for k in vars(Scoped) if not k.startswith("__")))
        """,
        tmp_path,
    )


def test_try_finally_with_return_break_continue(tmp_path):
    equivalent(
        """
        def f():
            try:
                return "try"
            finally:
                print("finally runs")
        def g():
            for i in range(3):
                try:
                    if i == 1:
                        continue
                    if i == 2:
                        break
                finally:
                    print("cleanup", i)
            return i
        def h():
            try:
                raise KeyError("k")
            except KeyError:
                return "handled"
            finally:
                print("h finally")
        print(f(), g(), h())
        """,
        tmp_path,
    )


def test_match_statement_semantics(tmp_path):
    equivalent(
        """
        from dataclasses import dataclass
        @dataclass
        class Point:
            x: int
            y: int
        def where(p):
            match p:
                case Point(x=0, y=0):
                    return "origin"
                case Point(x=0, y=y):
                    return f"y={y}"
                case Point(x=x, y=0) if x > 0:
                    return f"x+={x}"
                case {"kind": k, **rest}:
                    return f"dict {k} {sorted(rest)}"
                case [first, *others] if len(others) > 1:
                    return f"list {first} {others}"
                case str() | bytes():
                    return "text"
                case _:
                    return "?"
        for v in [Point(0, 0), Point(0, 4), Point(3, 0), Point(-3, 0), {"kind": 1, "a": 2}, [1, 2, 3], [1], "s", 4.5]:
            print(where(v))
        """,
        tmp_path,
    )


def test_scopes_global_nonlocal_walrus_and_comprehensions(tmp_path):
    equivalent(
        """
        counter = 0
        def incr():
            global counter
            counter += 1
            return counter
        def make():
            total = 0
            def add(v):
                nonlocal total
                total += v
                return total
            return add
        add = make()
        print(incr(), incr(), add(3), add(4), counter)
        data = [1, 5, 2, 8]
        if any((big := x) > 4 for x in data):
            print("first big", big)
        print([y for x in data if (y := x * 2) > 4], y)
        print([(lambda v=i: v)() for i in range(3)])
        x = 10
        print([x for x in range(3)], x)
        """,
        tmp_path,
    )


def test_with_statements_context_managers_and_del_assert(tmp_path):
    equivalent(
        """
        import contextlib
        @contextlib.contextmanager
        def tag(name):
            print("<" + name + ">")
            try:
                yield name.upper()
            finally:
                print("</" + name + ">")
        with tag("a") as a, tag("b") as b:
            print(a, b)
        with contextlib.suppress(ZeroDivisionError):
            1 / 0
        v = [1, 2]
        del v[0]
        assert v == [2], "unexpected"
        try:
            assert len(v) > 5, "too short"
        except AssertionError as e:
            print("assert:", e)
        """,
        tmp_path,
    )


def test_same_source_same_ids_and_unrelated_edit_keeps_ids():
    source = "def f(x):\n    if x:\n        return [i for i in range(x)]\n    return []\n"
    first = instrument_source(source, "m.py")
    second = instrument_source(source, "m.py")
    assert [f.id for f in first.features] == [f.id for f in second.features]
    assert first.code == second.code
    edited = instrument_source("# a comment\n\nimport os\n" + source.replace("return []", "return  [ ]"), "m.py")
    assert [f.id for f in edited.features] == [f.id for f in first.features]
    assert [f.span[0] + 3 for f in first.features] == [f.span[0] for f in edited.features]


def test_module_header_placement_keeps_docstring_future_and_shebang():
    source = "#!/usr/bin/env python3\n# -*- coding: utf-8 -*-\n\ndef f():\n    for i in range(3):\n        pass\n"
    result = instrument_source(source, "s.py")
    lines = result.code.splitlines()
    assert lines[0] == "#!/usr/bin/env python3"
    assert lines[1] == "# -*- coding: utf-8 -*-"
    assert lines[2].startswith("import mantispy.runtime.counters")
    assert result.shifted_lines == 0
    assert len(lines) == len(source.splitlines())
    doc = instrument_source('"""Doc."""\nfrom __future__ import annotations\nfor i in range(2):\n    pass\n', "d.py")
    assert doc.code.splitlines()[0] == '"""Doc."""'
    assert doc.code.splitlines()[1].startswith("from __future__ import annotations; import mantispy")


def test_file_without_features_is_left_byte_identical():
    source = "# just constants\nA = 1\nB = 'x'\n"
    from mantispy.instrument.transformer import Options

    assert instrument_source(source, "c.py", Options(families=frozenset({"loops"}))).code == source


def test_multiline_and_unsafe_attribute_values_are_recorded_without_moving_lines(tmp_path):
    original, instrumented, result = instrument_and_run(
        """
        class A:
            def __init__(self, parts):
                self.total = (sum(parts) +
                              len(parts))
                self.gen = [p for p in parts]
                self.label: str = (
                    "parts")
                raise ValueError(self.total)
        A([1, 2, 3])
        """,
        tmp_path,
    )
    same_behaviour(original, instrumented, tmp_path)
    assert result.shifted_lines == 0
    assert instrumented.features["prog.py:A:value:self.total#1"] == 9
    assert instrumented.features["prog.py:A:value:self.gen#1"] == 3
    assert instrumented.features["prog.py:A:value:self.label#1"] == 5


def test_a_loop_whose_body_starts_with_an_if_never_takes_the_truth_of_its_targets(tmp_path):
    """The loop targets' records ride on the first ``if`` of the body as always-true operands; a value whose
    truth raises (as a numpy array's does) or has side effects must be recorded without it being asked."""
    equivalent(
        """
        asked = []
        class Loud:
            def __init__(self, n):
                self.n = n
            def __bool__(self):
                asked.append(self.n)
                raise ValueError("the truth of a Loud is ambiguous")
        total = 0
        for item in [Loud(1), Loud(2), Loud(3)]:
            if item.n > 1:
                total += item.n
        for left, right in [(Loud(4), Loud(5)), (Loud(6), Loud(7))]:
            if left.n % 2 == 0:
                total += right.n
        print(total, asked)
        """,
        tmp_path,
    )
    source = "for item in items:\n    if item:\n        pass\n"
    assert ", 1)[-1]" not in instrument_source(source, "m.py").code
