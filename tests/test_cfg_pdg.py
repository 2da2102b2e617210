"""Control flow and dependences of small programs, one construct at a time, checked by hand."""

from __future__ import annotations

import subprocess
import textwrap

import pytest

from mantispy.slicer.pdg import analyse_module
from tests.helpers import MANTISPY


def graphs(source: str):
    source = textwrap.dedent(source)
    return analyse_module(source, "m.py")


def edges(cfg) -> set[tuple[str, str, str]]:
    """(from label, to label, kind) with labels shortened to the vertex text."""
    return {(cfg.vertices[a].label, cfg.vertices[b].label, d["kind"]) for a, b, d in cfg.graph.edges(data=True)}


def vertex(cfg, label: str):
    found = [v for v in cfg.vertices.values() if v.label == label]
    assert len(found) == 1, (label, [v.label for v in cfg.vertices.values()])
    return found[0]


def depends(pdg, label: str) -> set[tuple[str, str]]:
    """What the vertex labelled ``label`` depends on: (label, 'data:NAME' or 'control:KIND')."""
    v = vertex(pdg.cfg, label)
    result = set()
    for a, kind, lab in pdg.dependences_of(v.id):
        what = f"data:{lab[-1] if lab[0] != 'attr' else '.' + lab[1]}" if kind == "data" else f"control:{lab}"
        result.add((pdg.cfg.vertices[a].label, what))
    return result


def test_if_elif_else_edges_and_control_dependence():
    g = graphs("""
        def f(x):
            if x > 0:
                y = 1
            elif x < 0:
                y = 2
            else:
                y = 3
            return y
    """)
    cfg = g.cfgs["f"]
    e = edges(cfg)
    assert ("if x > 0", "y = 1", "true") in e and ("if x > 0", "if x < 0", "false") in e
    assert ("if x < 0", "y = 2", "true") in e and ("if x < 0", "y = 3", "false") in e
    assert {("y = 1", "return y", "normal"), ("y = 2", "return y", "normal"), ("y = 3", "return y", "normal")} <= e
    pdg = g.pdgs["f"]
    assert ("if x < 0", "control:true") in depends(pdg, "y = 2")
    assert ("if x > 0", "control:false") in depends(pdg, "if x < 0")
    assert {("y = 1", "data:y"), ("y = 2", "data:y"), ("y = 3", "data:y")} <= depends(pdg, "return y")
    assert ("entry f", "control:normal") in depends(pdg, "return y")


def test_loops_break_continue_and_else():
    g = graphs("""
        def f(xs):
            for x in xs:
                if x == 0:
                    continue
                if x < 0:
                    break
            else:
                done = True
            while xs:
                xs = xs[1:]
            return xs
    """)
    e = edges(g.cfgs["f"])
    assert ("iter(xs)", "x = next(...)", "normal") in e
    assert ("x = next(...)", "if x == 0", "true") in e
    assert ("continue", "x = next(...)", "normal") in e
    assert ("break", "while xs", "normal") in e  # break skips the loop's else
    assert ("break", "x = next(...)", "pseudo") in e  # where it would go if it were not there
    assert ("x = next(...)", "done = True", "false") in e
    assert ("xs = xs[1:]", "while xs", "normal") in e and ("while xs", "return xs", "false") in e
    pdg = g.pdgs["f"]
    assert ("xs = xs[1:]", "data:xs") in depends(pdg, "xs = xs[1:]")  # loop-carried
    assert ("while xs", "control:true") in depends(pdg, "xs = xs[1:]")
    assert ("x = next(...)", "control:false") in depends(pdg, "done = True")


def test_try_except_else_finally_with_return_and_exceptional_edges():
    g = graphs("""
        def f(a):
            try:
                r = 10 // a
            except ZeroDivisionError:
                return -1
            except TypeError as exc:
                r = 0
            else:
                r += 1
            finally:
                print("done")
            return r
    """)
    cfg = g.cfgs["f"]
    e = edges(cfg)
    assert ("r = 10 // a", "except ZeroDivisionError", "exception") in e
    assert ("except ZeroDivisionError", "except TypeError as exc", "false") in e
    assert ("except TypeError as exc", "print('done')", "exception") in e  # no handler matched
    assert ("r = 10 // a", "r += 1", "normal") in e  # the else arm
    assert ("return -1", "print('done')", "normal") in e  # return passes through finally
    assert ("print('done')", "exit", "normal") in e and ("print('done')", "return r", "normal") in e
    assert ("print('done')", "raise-exit", "exception") in e  # an unhandled exception after finally
    pdg = g.pdgs["f"]
    assert ("r = 10 // a", "control:exception") in depends(pdg, "except ZeroDivisionError")
    assert ("except ZeroDivisionError", "control:true") in depends(pdg, "return -1")


def test_finally_with_break_and_continue_inside_loop():
    g = graphs("""
        def f(xs):
            for x in xs:
                try:
                    if x:
                        break
                    continue
                finally:
                    cleanup(x)
            return 1
    """)
    e = edges(g.cfgs["f"])
    assert ("break", "cleanup(x)", "normal") in e and ("continue", "cleanup(x)", "normal") in e
    assert ("cleanup(x)", "return 1", "normal") in e  # the break continues after the loop
    assert ("cleanup(x)", "x = next(...)", "normal") in e  # the continue goes to the next item


def test_with_raise_assert_and_match_with_guards():
    g = graphs("""
        def f(path, v):
            with open(path) as fh:
                data = fh.read()
            assert data, "empty"
            match v:
                case 0:
                    kind = "zero"
                case int(n) if n > 9:
                    kind = "big"
                case _:
                    raise ValueError(v)
            return kind
    """)
    e = edges(g.cfgs["f"])
    assert ("with open(path) as fh", "data = fh.read()", "normal") in e
    assert ("data = fh.read()", "exit of with open(path)", "normal") in e
    assert ("exit of with open(path)", "assert data, 'empty'", "normal") in e
    assert ("assert data, 'empty'", "raise-exit", "exception") in e
    assert ("case 0", "case int(n) if n > 9", "false") in e
    assert ("case int(n) if n > 9", "kind = 'big'", "true") in e
    assert ("raise ValueError(v)", "raise-exit", "exception") in e
    assert not any(a == "raise ValueError(v)" and k == "normal" for a, _, k in e)
    pdg = g.pdgs["f"]
    assert ("with open(path) as fh", "data:fh") in depends(pdg, "data = fh.read()")
    assert ("case int(n) if n > 9", "control:true") in depends(pdg, "kind = 'big'")


def test_scopes_globals_closures_walrus_starred_chained_and_defaults():
    g = graphs("""
        import os
        COUNT = 0
        def bump(step=COUNT):
            global COUNT
            COUNT = COUNT + step
        def outer():
            total = 0
            def inner(v):
                nonlocal total
                total += v
            inner(1)
            return total
        a = b = [1, 2, 3]
        first, *rest = a
        if (n := len(rest)) > 1:
            print(n)
        @decorate(os.sep)
        def g(x=first):
            return x
    """)
    bump = g.pdgs["bump"]
    assert ("entry bump", "data:step") in depends(bump, "COUNT = COUNT + step")
    assert ("var", "<module>", "COUNT") in bump.access[vertex(bump.cfg, "COUNT = COUNT + step").id].defs
    inner = g.pdgs["outer.inner"]
    defined = inner.access[vertex(inner.cfg, "total += v").id].defs
    assert ("var", "outer", "total") in defined  # the closure cell belongs to outer
    module = g.pdgs["<module>"]
    assert ("COUNT = 0", "data:COUNT") in depends(module, "def bump")  # default evaluated at def time
    assert ("a = b = [1, 2, 3]", "data:a") in depends(module, "first, *rest = a")
    assert ("first, *rest = a", "data:rest") in depends(module, "if (n := len(rest)) > 1")
    assert ("if (n := len(rest)) > 1", "data:n") in depends(module, "print(n)")
    assert ("import os", "data:os") in depends(module, "def g")  # decorator arguments
    assert ("first, *rest = a", "data:first") in depends(module, "def g")


def test_heap_abstraction_fields_containers_and_calls():
    g = graphs("""
        import math
        def f(obj, xs):
            obj.size = len(xs)
            xs.append(3)
            ys = sorted(xs)
            root = math.sqrt(obj.size)
            mystery(ys)
            return ys, root, xs
    """)
    pdg = g.pdgs["f"]
    assert ("obj.size = len(xs)", "data:.size") in depends(pdg, "root = math.sqrt(obj.size)")
    assert ("xs.append(3)", "data:xs") in depends(pdg, "ys = sorted(xs)")  # mutation via a known mutator
    assert ("mystery(ys)", "data:ys") in depends(pdg, "return (ys, root, xs)")  # unknown call may mutate
    sorted_defs = pdg.access[vertex(pdg.cfg, "ys = sorted(xs)").id].defs
    assert sorted_defs[("var", "f", "xs")] is False  # sorted iterates xs: a weak write (xs may be an iterator)
    size_defs = pdg.access[vertex(pdg.cfg, "obj.size = len(xs)").id].defs
    assert ("var", "f", "xs") not in size_defs  # len neither iterates nor writes


def test_module_functions_that_mutate_an_argument_write_it_not_the_module():
    g = graphs("""
        import heapq
        def top(xs, k):
            heap = []
            for x in xs:
                heapq.heappush(heap, x)
            return heap
    """)
    pdg = g.pdgs["top"]
    push = pdg.access[vertex(pdg.cfg, "heapq.heappush(heap, x)").id].defs
    assert push == {("var", "top", "heap"): False}  # weak: the list, not the name; heapq untouched
    assert ("heapq.heappush(heap, x)", "data:heap") in depends(pdg, "return heap")


def test_a_mutation_through_an_outside_calls_result_writes_what_it_was_given_unless_that_result_is_fresh():
    g = graphs("""
        import xml.etree.ElementTree as etree
        def cell(row, text):
            td = etree.SubElement(row, "td")
            td.set("class", "x")
            words = text.split()
            words.append("!")
            return words
    """)
    pdg = g.pdgs["cell"]
    setter = pdg.access[vertex(pdg.cfg, "td.set('class', 'x')").id].defs
    assert setter == {("var", "cell", "td"): False, ("var", "cell", "row"): False}  # never the module etree
    appended = pdg.access[vertex(pdg.cfg, "words.append('!')").id].defs
    assert appended == {("var", "cell", "words"): False}  # str.split answers with new strings


def test_extra_tables_say_which_outside_results_are_fresh(tmp_path):
    from mantispy.slicer import externals

    assert externals.may_return_part("etree.SubElement", "SubElement")
    assert not externals.may_return_part("len", None) and not externals.may_return_part("s.strip", "strip")
    table = tmp_path / "fresh.json"
    table.write_text('{"fresh_methods": ["render_markup"]}')
    saved = set(externals.TABLES["fresh_methods"])
    try:
        externals.extend(table)
        assert not externals.may_return_part("page.render_markup", "render_markup")
    finally:
        externals.TABLES["fresh_methods"] = saved


def test_lambdas_and_comprehensions_are_units_reading_their_enclosing_scope():
    g = graphs("""
        def f(xs, k):
            key = lambda v: v % k
            return [key(x) for x in xs if x > k]
    """)
    assert {"f", "f.<lambda>", "f.<listcomp>"} <= set(g.cfgs)
    comp = g.cfgs["f.<listcomp>"]
    e = edges(comp)
    assert ("x = next(...)", "if x > k", "true") in e and ("if x > k", "x = next(...)", "false") in e
    assert ("key(x)", "x = next(...)", "normal") in e
    pdg = g.pdgs["f"]
    assert ("key = lambda v: v % k", "data:key") in depends(pdg, "return [key(x) for x in xs if x > k]")
    assert ("entry f", "data:k") in depends(pdg, "return [key(x) for x in xs if x > k]")  # read inside the unit
    assert ("entry f", "data:k") in depends(pdg, "key = lambda v: v % k")


def test_every_statement_has_a_vertex_with_its_source_span():
    source = textwrap.dedent("""
        def f(x):
            y = x + 1
            return y
            print("unreachable")
    """)
    g = analyse_module(source, "m.py")
    cfg = g.cfgs["f"]
    unreachable = vertex(cfg, "print('unreachable')")
    assert unreachable.span == (5, 4, 5, 24)
    kinds = {cfg.graph.edges[p, unreachable.id]["kind"] for p in cfg.graph.predecessors(unreachable.id)}
    assert kinds == {"pseudo"}  # reached only by the return's non-executable fall-through edge


@pytest.mark.parametrize("verb", ["cfg", "pdg"])
def test_cli_listing_dot_and_errors(tmp_path, verb):
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "a.py").write_text("def work(n):\n    s = 0\n    for i in range(n):\n        s += i\n    return s\n")
    (tmp_path / "app" / "b.py").write_text("def work(n):\n    return n\n")
    (tmp_path / "app" / "broken.py").write_text("def oops(:\n")
    run = lambda *a: subprocess.run([*MANTISPY, verb, *map(str, a)], capture_output=True, text=True, timeout=120)  # noqa: E731
    listing = run(tmp_path / "app", "--function", "a.py:work")
    assert listing.returncode == 0, listing.stderr
    assert "s += i" in listing.stdout and "broken.py:1: " in listing.stderr
    dot = run(tmp_path / "app", "--function", "a.py:work", "--dot")
    assert dot.stdout.startswith("digraph") and dot.stdout.rstrip().endswith("}")
    ambiguous = run(tmp_path / "app", "--function", "work")
    assert ambiguous.returncode == 2 and "ambiguous" in ambiguous.stderr


def test_unmodelled_constructs_are_reported_and_treated_conservatively():
    g = graphs("""
        def f(obj, name, code):
            a = 1
            setattr(obj, name, 2)
            b = obj.size
            exec(code)
            return a
    """)
    assert [(n.line, n.what) for n in g.unsupported] == [(6, "exec()")]
    assert str(g.unsupported[0]).startswith("m.py:6: exec() is not modelled")
    pdg = g.pdgs["f"]
    # setattr with a computed name writes "some field" (``.*``), which every plain attribute read uses
    assert ("setattr(obj, name, 2)", "data:.*") in depends(pdg, "b = obj.size")  # may have set .size
    assert ("setattr(obj, name, 2)", "data:obj") in depends(pdg, "b = obj.size")  # and mutated obj
    assert ("a = 1", "data:a") in depends(pdg, "exec(code)")  # exec may read anything
    # and change any object a visible variable holds (in a function, not rebind its variables)
    assert ("exec(code)", "data:a") in depends(pdg, "return a")


def test_eval_of_a_builtins_name_is_a_plain_read():
    """Whoosh's compat.py does ``exec_ = eval("exec")`` at import: that reads the builtin and touches
    nothing else, while any other eval still may read and write anything."""
    g = graphs("""
        def f(code):
            a = 1
            run = eval("exec")
            other = eval(code)
            return a
    """)
    assert [(n.line, n.what) for n in g.unsupported] == [(5, "eval()")]
    pdg = g.pdgs["f"]
    assert ('run = eval("exec")', "data:any") not in depends(pdg, "return a")
    assert ("other = eval(code)", "data:a") in depends(pdg, "return a")


def test_namespaces_and_vars_of_an_object_are_modelled_where_they_are_read():
    """pyparsing's ``vars(self) == vars(other)``, sqlparse's ``str.format(**locals())``, Pygments'
    ``globals()[cat]`` and ``exec(f.read(), custom_namespace)`` only read (or write a mapping of their
    own): none may touch *anything*, which switched the import-time-constant shortcut off for the whole
    program. ``vars(obj)`` is ``obj.__dict__``; ``globals()`` read where it stands reads the module's
    globals (under a constant key that one); ``locals()`` in a function reads its variables; writing
    into ``globals()`` under a computed key, or holding on to it, is still not modelled."""
    g = graphs("""
        LIMIT = 3
        OTHER = 4

        def eq(self, other):
            a = 1
            same = vars(self) == vars(other)
            return a

        def show(value, width):
            text = "{value:>{width}}".format(**locals())
            return text

        def lookup(name, code, namespace):
            b = 2
            found = globals()[name]
            limit = globals()["LIMIT"]
            exec(code, namespace)
            return b

        def register(name, value, code):
            globals()[name] = value
            table = globals()
            exec(code)
    """)
    assert [(n.line, n.what) for n in g.unsupported] == [
        (7, "__dict__"), (7, "__dict__"), (22, "globals()"), (23, "globals()"), (24, "exec()")]
    eq = g.pdgs["eq"]
    assert not [d for d in depends(eq, "return a") if d[1] == "data:any"]
    assert ("a = 1", "data:a") in depends(eq, "same = vars(self) == vars(other)")  # reads every field: any
    show = g.pdgs["show"]
    assert {("entry show", "data:value"), ("entry show", "data:width")} <= depends(show, "text = '{value:>{width}}'.format(**locals())")
    lookup = g.pdgs["lookup"]
    assert not [d for d in depends(lookup, "return b") if d[1] == "data:any"]
    assert ("exec(code, namespace)", "data:namespace") not in depends(lookup, "return b")
    register = g.pdgs["register"]
    assert ("globals()[name] = value", "data:any") in depends(register, "table = globals()")


def test_writes_through_an_objects_dict_and_import_calls_are_modelled():
    """Whoosh's ``Token.__init__`` does ``self.__dict__.update(kwargs)`` and its columns
    ``__import__(module)``: the first writes "some field" of self (plain field reads depend on it), the
    second only imports; neither may touch *anything* (which made every caller of them depend on all
    that came before). A constant key names its field (``self.__dict__["extra"] = 1`` writes ``extra``
    alone). Reading ``obj.__dict__`` otherwise still reads every field."""
    g = graphs("""
        def f(self, kwargs, module):
            self.__dict__.update(kwargs)
            self.__dict__["extra"] = 1
            lib = __import__(module)
            size = self.size
            state = self.__dict__
            extra = self.extra
            return size
    """)
    assert [(n.line, n.what) for n in g.unsupported] == [(7, "__dict__")]
    pdg = g.pdgs["f"]
    assert ("self.__dict__.update(kwargs)", "data:.*") in depends(pdg, "size = self.size")
    assert ("self.__dict__['extra'] = 1", "data:.*") not in depends(pdg, "size = self.size")
    assert ("self.__dict__['extra'] = 1", "data:.extra") in depends(pdg, "extra = self.extra")
    assert not [d for d in depends(pdg, "return size") if d[1] == "data:any"]
    assert ("lib = __import__(module)", "data:any") not in depends(pdg, "state = self.__dict__")
