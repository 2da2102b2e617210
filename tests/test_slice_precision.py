"""Slices that keep what a criterion needs and no more: the precision losses the issue on cheap content
features names (a call-count feature kept its callee's work; a call that mutates one argument was taken
to mutate all of them; a consumer was taken to advance every argument). Each test fails on the slicer
that had the loss, and each checks fidelity so precision never costs correctness."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from mantispy.slicer.evaluators import SliceSession, check_fidelity
from mantispy.slicer.memo import memo_caches
from mantispy.slicer.sdg import loadable_files
from tests.test_slicing import kept_lines, line_of, write_program

MINISEARCH = Path(__file__).resolve().parent.parent / "examples" / "minisearch"


def test_counting_a_methods_calls_does_not_keep_the_work_behind_its_arguments_and_result():
    """``Searcher.search:call`` counts repeat x queries: the slice needs the loops around the call and
    the receiver's construction, not the corpus, the index (``index.add``) or what search computes (it
    once kept 611 of 771 statements)."""
    session = SliceSession(MINISEARCH, "search.py")
    result = session.slice("minisearch/searcher.py:Searcher.search:call")
    assert result.statements_kept < 0.3 * result.statements_total, (result.statements_kept, result.statements_total)
    assert line_of(MINISEARCH, "search.py", "index.add(document)") not in kept_lines(result, "search.py")
    assert "corpus.py" not in result.kept
    inputs = [["--docs", "120", "--query", "data", "--query", "ab*", "--repeat", "2"],
              ["--docs", "90", "--query", '"search engine" OR lock', "--no-highlight"]]
    rows = check_fidelity(session, MINISEARCH, inputs, ["minisearch/searcher.py:Searcher.search:call"], cwd=MINISEARCH)
    assert [(r.feature, r.reason) for r in rows if r.status != "sliceable"] == []


PROGRAM = {"main.py": '''
    import heapq
    import sys


    def expensive(n):
        total = 0
        for i in range(n * 1000):
            total += i % 7
        return total


    def record(log, item, size):
        log.append(item)
        return size


    def summarise(values, k):
        return [v * 2 for v in heapq.nsmallest(k, values)]


    def handle(text):
        return text.upper()


    def main():
        n = int(sys.argv[1])
        k = int(sys.argv[2])
        log = []
        record(log, expensive(n), k)
        for _ in range(k):
            pass
        best = summarise(list(range(n)), k)
        for _ in range(k):
            pass
        results = [handle(w) for w in sys.argv[3:]]
        print(len(log), best[:1], results)


    main()
''', }


def test_a_call_that_mutates_one_argument_does_not_redefine_the_others(tmp_path):
    """``record(log, expensive(n), k)`` writes through ``log`` only: the loop over ``range(k)`` right
    after it does not depend on the call (nor on ``expensive``)."""
    root = write_program(tmp_path / "mut", PROGRAM)
    session = SliceSession(root, "main.py")
    result = session.slice("main.py:main:loop:1")
    assert line_of(root, "main.py", "record(log, expensive(n), k)") not in kept_lines(result, "main.py"), result.kept
    rows = check_fidelity(session, root, [["3", "2", "a"], ["5", "4"]], ["main.py:main:loop:1"], cwd=root)
    assert [(r.feature, r.reason) for r in rows if r.status != "sliceable"] == []


def test_a_consumer_advances_only_the_arguments_it_iterates(tmp_path):
    """``heapq.nsmallest(k, values)`` iterates ``values``, not ``k``: a loop over ``range(k)`` after a
    call of ``summarise`` does not depend on that call."""
    root = write_program(tmp_path / "consume", PROGRAM)
    session = SliceSession(root, "main.py")
    result = session.slice("main.py:main:loop:2")
    assert line_of(root, "main.py", "best = summarise(") not in kept_lines(result, "main.py"), result.kept
    rows = check_fidelity(session, root, [["3", "2"], ["5", "4", "x", "y"]], ["main.py:main:loop:2"], cwd=root)
    assert [(r.feature, r.reason) for r in rows if r.status != "sliceable"] == []


def test_counting_calls_made_in_a_comprehension_keeps_the_comprehension_not_the_results_use(tmp_path):
    """``results = [handle(w) for w in ...]``: how often ``handle`` runs depends on the words, not on
    what it returns; the evaluator still counts every call."""
    root = write_program(tmp_path / "comp", PROGRAM)
    session = SliceSession(root, "main.py")
    result = session.slice("main.py:handle:call")
    lines = kept_lines(result, "main.py")
    assert line_of(root, "main.py", "return text.upper()") not in lines, result.kept
    assert line_of(root, "main.py", "results = [handle(w)") in lines
    rows = check_fidelity(session, root, [["2", "1", "a", "b", "c"], ["2", "1"]], ["main.py:handle:call"], cwd=root)
    assert [(r.feature, r.reason) for r in rows if r.status != "sliceable"] == []


FILES = {"main.py": '''
    import os
    import sys
    import tempfile


    def index_path():
        return os.path.join(tempfile.gettempdir(), f"mantispy-index-{os.getpid()}.txt")


    def save(words):
        with open(index_path(), "w") as handle:
            for word in words:
                handle.write(word + "\\n")


    def load():
        if not os.path.exists(index_path()):
            return []
        with open(index_path()) as handle:
            return handle.read().split()


    def main():
        save(sys.argv[1:])
        count = 0
        for word in load():
            count += 1
        os.remove(index_path())
        print(count)


    main()
'''}


def test_a_file_written_then_read_back_is_a_dependence(tmp_path):
    """Whoosh writes its index to files and reads it back: the loop over what ``load`` reads depends
    on ``save``'s writes, which the slice must keep though no variable connects the two (each computes
    the path on its own)."""
    root = write_program(tmp_path / "files", FILES)
    session = SliceSession(root, "main.py")
    result = session.slice("main.py:main:loop:1")
    lines = kept_lines(result, "main.py")
    assert line_of(root, "main.py", 'handle.write(word') in lines, result.kept
    rows = check_fidelity(session, root, [["a", "b", "c"], []], ["main.py:main:loop:1"], cwd=root)
    assert [(r.feature, r.reason) for r in rows if r.status != "sliceable"] == []


CAUGHT = {"main.py": '''
    import os
    import sys
    import tempfile


    def ensure(folder):
        try:
            os.makedirs(folder)
        except OSError:
            if not os.path.isdir(folder):
                raise


    def main():
        base = tempfile.mkdtemp()
        for i in range(int(sys.argv[1])):
            ensure(os.path.join(base, f"part{i % 2}"))
        count = 0
        for name in os.listdir(base):
            count += 1
        print(count)


    main()
'''}


def test_a_kept_statement_that_may_raise_keeps_the_handler_that_catches_it(tmp_path):
    """``os.makedirs`` is kept (``listdir`` reads what it creates); its second call raises
    FileExistsError, which the program's handler swallows. Dropping the handler (nothing in the slice
    reads what it computes) let the evaluator die where the program goes on: Whoosh's evaluators
    failed so on ``FileStorage.create``."""
    root = write_program(tmp_path / "caught", CAUGHT)
    session = SliceSession(root, "main.py")
    result = session.slice("main.py:main:loop:2")
    lines = kept_lines(result, "main.py")
    assert line_of(root, "main.py", "os.makedirs(folder)") in lines
    assert line_of(root, "main.py", "except OSError:") in lines, result.kept
    rows = check_fidelity(session, root, [["3"], ["1"]], ["main.py:main:loop:2"], cwd=root)
    assert [(r.feature, r.reason) for r in rows if r.status != "sliceable"] == []


IMPURE_MEMO = {"main.py": '''
    import sys

    SETTINGS = {"scale": 1}
    _cache = {}


    def scaled(k):
        found = _cache.get(k)
        if found is None:
            found = k * SETTINGS["scale"]
            _cache[k] = found
        return found


    def main():
        n = int(sys.argv[1])
        scaled(n)
        SETTINGS["scale"] = 3
        for _ in range(scaled(n)):
            pass


    main()
'''}


def test_a_cache_whose_function_reads_changing_state_is_caught_by_fidelity(tmp_path):
    """The memo assumption is that the cached function depends on its key alone; here it also reads
    SETTINGS, which changes after the first call: the slice drops the first call, its evaluator counts
    3n iterations where the program made n, and the fidelity check says so (the build then rejects it)."""
    root = write_program(tmp_path / "impure", IMPURE_MEMO)
    session = SliceSession(root, "main.py")
    assert line_of(root, "main.py", "    scaled(n)") not in kept_lines(session.slice("main.py:main:loop:1"), "main.py")
    rows = check_fidelity(session, root, [["2"]], ["main.py:main:loop:1"], cwd=root)
    assert [r.status for r in rows] != ["sliceable"] and rows[0].reason, rows


MEMO_SHAPES = {
    "get, compute on a miss, store, return": ("_c = {}\ndef f(k):\n    r = _c.get(k)\n    if r is None:\n"
                                              "        r = g(k)\n        _c[k] = r\n    return r\n", True),
    "membership, then the stored value": ("_c = dict()\ndef f(k):\n    if k in _c:\n        return _c[k]\n"
                                          "    v = g(k)\n    _c[k] = v\n    return v\n", True),
    "a counter": ("_c = {}\ndef f(k):\n    n = _c.get(k, 0) + 1\n    _c[k] = n\n    return n\n", False),
    "a counter in two steps": ("_c = {}\ndef f(k):\n    n = _c.get(k, 0)\n    n = n + 1\n    _c[k] = n\n"
                               "    return n\n", False),
    "a seen-set": ("_c = {}\ndef f(k):\n    if k in _c:\n        return False\n    _c[k] = True\n    return True\n",
                   False),
    "a registry": ("_c = {}\ndef put(k, v):\n    _c[k] = v\ndef get(k):\n    return _c[k]\n", False),
    "an interning table": ("_c = {}\ndef f(k):\n    if k not in _c:\n        _c[k] = len(_c)\n    return _c[k]\n",
                           False),
    "filled at import": ("_c = {}\n_c['a'] = 1\ndef f(k):\n    if k not in _c:\n        _c[k] = g(k)\n"
                         "    return _c[k]\n", False),
    "rebound by a function": ("_c = {}\ndef reset():\n    global _c\n    _c = {}\ndef f(k):\n    if k not in _c:\n"
                              "        _c[k] = g(k)\n    return _c[k]\n", False),
    "a generator": ("_c = {}\ndef f(k):\n    if k not in _c:\n        _c[k] = g(k)\n    yield 1\n    return _c[k]\n",
                    False),
}


@pytest.mark.parametrize("shape", sorted(MEMO_SHAPES))
def test_only_a_memo_cache_is_taken_for_one(shape):
    """The memo shape is strict: what only looks like a cache (a counter, a seen-set, a registry, an
    interning table, a dict filled at import or rebound) keeps every dependence through it."""
    source, is_cache = MEMO_SHAPES[shape]
    found = memo_caches([("m.py", ast.parse(source))])
    assert [c.name for c in found] == (["_c"] if is_cache else []), shape


def test_a_cache_another_module_imports_is_not_taken_for_a_memo_cache():
    cache = "_c = {}\ndef f(k):\n    r = _c.get(k)\n    if r is None:\n        r = g(k)\n        _c[k] = r\n    return r\n"
    assert memo_caches([("m.py", ast.parse(cache))])
    assert not memo_caches([("m.py", ast.parse(cache)), ("n.py", ast.parse("from m import _c\n_c.clear()\n"))])


PACKAGE = {
    "pkg/__init__.py": '''
        from . import util
        from .core import count_words
        from .core import SEPARATOR
    ''',
    "pkg/util.py": '''
        def split(text, sep):
            return [w for w in text.split(sep) if w]
    ''',
    "pkg/core.py": '''
        from pkg import util
        from . import util as helpers

        SEPARATOR = " "


        def count_words(text):
            total = 0
            for word in helpers.split(text, SEPARATOR):
                total += len(word) > 2
            return total
    ''',
    "main.py": '''
        import sys

        import pkg

        print(pkg.count_words(" ".join(sys.argv[1:])))
    ''',
}


def test_an_import_of_a_started_module_does_not_run_its_body_again(tmp_path):
    """A submodule's ``from pkg import x`` finds its package mid-import, and a module body's second import
    of a module finds it started: neither runs that body, so neither is a call of it (in pyparsing such
    imports made 34 of the package body's 35 callers, each with over a million summary edges)."""
    root = write_program(tmp_path / "app", PACKAGE)
    session = SliceSession(root, "main.py")
    callers = {key[0]: sorted(f"{c.caller[0]}:{c.text}" for c in calls)
               for key, calls in session.sdg.calls_to.items() if key[1] == "<module>"}
    assert callers["pkg/__init__.py"] == ["main.py:import pkg"]
    assert callers["pkg/core.py"] == ["pkg/__init__.py:import pkg.core"]  # the first of its two imports
    # core imports util twice: its second import is no call; its first still is (that a sibling imported
    # earlier by the package has started needs the import order, which the SDG does not follow)
    assert callers["pkg/util.py"] == ["pkg/__init__.py:import pkg.util", "pkg/core.py:import pkg.util"]
    feature = "pkg/core.py:count_words:loop:1"
    rows = check_fidelity(session, root, [["a", "bcd", "efgh"], ["x"]], [feature], cwd=root)
    assert [(r.feature, r.reason) for r in rows if r.status != "sliceable"] == []


TWO_SCRIPTS = {
    "count.py": '''
        import sys


        def count(n):
            for i in range(n):
                pass
            return n


        def main(argv):
            n = int(argv[0])
            print(count(n))


        main(sys.argv[1:])
        ''',
    "other.py": '''
        import sys


        def heavy(argv):
            total = 0
            for k in range(int(argv[0]) * 1000):
                total += k
            return total


        print(heavy(sys.argv[1:]))
        ''',
}


@pytest.mark.parametrize("count_also", ["", "import importlib\nimportlib.import_module(sys.argv[2])\n",
                                         "def later():\n    import other\n"])
def test_a_module_the_program_never_imports_defines_nothing_it_reads(tmp_path, count_also):
    """A second script beside the entry (``other.py``) never runs: its reading of ``sys.argv`` through a
    call that may change it is no write the entry's ``sys.argv`` depends on (it once put all of
    ``other.py`` into every slice of ``count.py``). Where the entry may load it — by name through
    importlib, or by an ``import`` in a function — it is still taken into account."""
    files = dict(TWO_SCRIPTS)
    files["count.py"] = TWO_SCRIPTS["count.py"].replace("        main(sys.argv[1:])",
                                                         textwrap.indent(count_also, " " * 8) + "        main(sys.argv[1:])")
    root = write_program(tmp_path / "app", files)
    session = SliceSession(root, "count.py")
    result = session.slice("count.py:count:loop:1")
    loadable = loadable_files(session.sdg)
    if not count_also:
        assert "other.py" not in result.kept and loadable == {"count.py"}, result.kept.keys()
    else:  # loaded by name: any module may be (None); imported in a function: other.py may be
        assert loadable is None if "importlib" in count_also else loadable == {"count.py", "other.py"}
    rows = check_fidelity(session, root, [["5", "json"], ["12", "json"]], ["count.py:count:loop:1"], cwd=root)
    assert [(r.feature, r.reason) for r in rows if r.status != "sliceable"] == []


def test_an_import_kept_to_run_a_module_does_not_keep_the_classes_it_names(tmp_path):
    """sqlparse's ``engine/__init__.py`` runs ``from sqlparse.engine.filter_stack import FilterStack``: kept
    to explain why a module body it leads to runs (the keyword tables), the statement made the slice keep
    ``class FilterStack`` and, a class kept, the body of its ``__init__`` (the runtime calls it), with
    everything that body reads (sqlparse: a keyword table's slice went from 52 statements to 133). A read
    of the name the import binds depends on the original definition directly; the import alone does not.
    ``getattr(str, case)`` reads no field of the program (sqlparse's ``_CaseFilter``: as a computed
    ``getattr`` of any object it read every import-time field, and a 52-statement slice became the whole
    program's 1,994)."""
    root = write_program(tmp_path / "imports", {
        "pkg/__init__.py": """
            from pkg.stack import Stack
        """,
        "pkg/stack.py": """
            from pkg import table


            class Stack:
                def __init__(self, case=None):
                    self.convert = getattr(str, case or "upper")
                    self.size = len(table.WORDS) * 2
        """,
        "pkg/table.py": """
            WORDS = {"select": 1, "from": 2}
            LIMIT = len(WORDS) + 1
        """,
        "main.py": """
            import sys

            import pkg
            from pkg.table import LIMIT


            def main():
                stack = pkg.Stack(sys.argv[1])
                print(stack.convert("a"), stack.size + LIMIT)


            main()
        """})
    session = SliceSession(root, "main.py")
    assert session.sdg.constant_defs.written_elsewhere is not None  # the shortcut is on
    limit = session.slice("pkg/table.py:<module>:value:LIMIT#1")
    assert "pkg/stack.py" not in limit.kept or kept_lines(limit, "pkg/stack.py") <= {1}, limit.kept
    size = "main.py:main:value:stack#1"
    assert line_of(root, "pkg/stack.py", "self.size = len(table.WORDS) * 2") in kept_lines(session.slice(size), "pkg/stack.py")
    rows = check_fidelity(session, root, [["upper"], ["lower"]], ["pkg/table.py:<module>:value:LIMIT#1", size], cwd=root)
    assert [(r.feature, r.reason) for r in rows if r.status != "sliceable"] == []


def test_a_method_call_looks_up_only_the_defs_of_the_methods_it_runs(tmp_path):
    """``super().__init__(n)`` looks up ``__init__``: it once depended on every class body's ``def
    __init__`` (an import-time field every class writes), so a slice through it kept every class of the
    program with what their bodies read (sqlparse's middle slices: some hundred statements more). The
    call graph says which defs the call can find; the others are not read. A call of an outside method
    (``items.append``) finds no program def; one resolved by name only still reads them all, and an
    assignment in a class body (``size = compute``) stays a writer."""
    root = write_program(tmp_path / "lookup", {
        "shapes.py": """
            import sys


            class Base:
                def __init__(self, n):
                    self.n = n

                def append(self, item):
                    self.n += item


            class Square(Base):
                def __init__(self, n):
                    super().__init__(n * n)


            class Unused(Base):
                def __init__(self, n):
                    super().__init__(len(sys.argv) * n)


            class Other:
                SCALE = int(sys.argv[2])

                def __init__(self):
                    self.n = self.SCALE

                def append(self, item):
                    self.n = item


            def count(shape, items):
                items.append(shape.n)
                for _ in range(shape.n):
                    items.append(1)
                return len(items)


            def main():
                shape = Square(int(sys.argv[1]))
                total = count(shape, [])
                print(total, Other().n)


            main()
        """})
    session = SliceSession(root, "shapes.py")
    assert session.sdg.constant_defs.written_elsewhere is not None  # the shortcut is on
    result = session.slice("shapes.py:count:loop:1")
    kept = kept_lines(result, "shapes.py")
    assert line_of(root, "shapes.py", "super().__init__(n * n)") in kept
    assert line_of(root, "shapes.py", "self.n = n") in kept
    for absent in ("class Unused(Base):", "class Other:", "SCALE = int(sys.argv[2])", "def append(self, item):"):
        assert line_of(root, "shapes.py", absent) not in kept, (absent, sorted(kept))
    rows = check_fidelity(session, root, [["3", "1"], ["5", "2"]], ["shapes.py:count:loop:1"], cwd=root)
    assert [(r.feature, r.reason) for r in rows if r.status != "sliceable"] == []
