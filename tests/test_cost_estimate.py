"""The cost loop's static estimate: the share of the program's work in the loops and functions a slice
would run, counted only for functions its kept call sites reach from module code."""

from __future__ import annotations

import textwrap
from pathlib import Path

from mantispy.build import reached_units
from mantispy.slicer.evaluators import SliceSession

LOADER = '''
    import sys


    class Reader:
        def __init__(self, text):
            self.text = text
            self.chars = self.update(text)

        def update(self, text):
            total = 0
            for ch in text:
                total += ord(ch)
            return total


    class SafeLoader(Reader):
        def __init__(self, text):
            Reader.__init__(self, text)


    class FullLoader(Reader):
        def __init__(self, text):
            Reader.__init__(self, text)


    def main(argv):
        safe = argv[0] == "safe"
        loader = SafeLoader if safe else FullLoader
        print(loader(argv[1]).chars)


    main(sys.argv[1:])
    '''


def test_a_site_inside_a_function_no_kept_site_reaches_is_not_counted():
    features = {
        "app.py:main:call": {"kind": "call", "file": "app.py", "qualname": "main", "span": (1, 0, 20, 0)},
        "app.py:Loader.__init__:call": {"kind": "call", "file": "app.py", "qualname": "Loader.__init__",
                                        "span": (30, 4, 40, 0)},
        "app.py:Reader.update:call": {"kind": "call", "file": "app.py", "qualname": "Reader.update",
                                      "span": (50, 4, 60, 0)},
    }
    calls = [{"site": "app.py:25:0", "callees": ["app.py:main"]},
             {"site": "app.py:35:8", "callees": ["app.py:Reader.update"]}]
    assert reached_units(calls, features) == {("app.py", "main")}
    calls.append({"site": "app.py:10:4", "callees": ["app.py:Loader.__init__"]})
    assert reached_units(calls, features) == {("app.py", "main"), ("app.py", "Loader.__init__"),
                                              ("app.py", "Reader.update")}


def test_a_class_the_slice_only_names_does_not_make_its_constructor_work_count(tmp_path: Path):
    """PyYAML's driver: ``loader = yaml.SafeLoader if args.safe else yaml.FullLoader`` keeps the loader
    classes, whose ``__init__`` bodies (kept whole: Python calls them implicitly) call the reader's
    decoding. Nothing in the slice of that branch instantiates a loader, so the decoding is not work the
    evaluator does; counted, it made the branch "too expensive" (89 % of the program's work) unmeasured."""
    root = tmp_path / "loader"
    root.mkdir()
    (root / "app.py").write_text(textwrap.dedent(LOADER).lstrip("\n"))
    session = SliceSession(root, "app.py")
    branch = next(f for f, info in session.features.items() if info["kind"] == "branch" and info["qualname"] == "main")
    result = session.slice(branch)
    callees = {tuple(c.split(":", 1)) for call in result.calls for c in call.get("callees", [])}
    assert ("app.py", "Reader.update") in callees  # kept: the implicit __init__ bodies call it
    reached = reached_units(result.calls, session.features)
    assert ("app.py", "main") in reached
    assert not reached & {("app.py", "Reader.update"), ("app.py", "Reader.__init__"), ("app.py", "SafeLoader.__init__")}
    counter = session.slice("app.py:Reader.update:loop:1")  # the loader is built in this one
    assert ("app.py", "Reader.update") in reached_units(counter.calls, session.features)
