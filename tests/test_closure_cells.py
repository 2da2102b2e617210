"""Unit tests of slicer.emit.cells: which statements bind the closure cells a kept statement reads."""

from __future__ import annotations

import ast
import hashlib
import textwrap
from pathlib import Path

import libcst as cst

from mantispy.slicer.emit.cells import cell_map
from mantispy.slicer.emit.source import ParsedFile
from mantispy.slicer.program import SourceFile


def parsed(source: str) -> ParsedFile:
    text = textwrap.dedent(source)
    return ParsedFile(SourceFile("m.py", Path("m.py"), "m", text, hashlib.sha256(text.encode()).hexdigest(),
                                 ast.parse(text)))


def code_of(p: ParsedFile, node: cst.CSTNode) -> str:
    if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
        return f"def {node.name.value}" if isinstance(node, cst.FunctionDef) else f"class {node.name.value}"
    return p.module.code_for_node(node).strip()


def readers(source: str) -> dict[str, set[str]]:
    """{code of a reading statement: codes of the bindings its cells have}."""
    p = parsed(source)
    found: dict[str, set[str]] = {}

    class Collect(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            bindings = cell_map(p).bindings_read_by({id(node)})
            if bindings:
                found[code_of(p, node).splitlines()[0]] = {code_of(p, b) for b in bindings.values()}
            return True

    p.module.visit(Collect())
    return found


def test_a_wrapper_reading_and_rebinding_its_makers_variables():
    found = readers('''
        def trim(func, max_limit=3):
            limit = 0
            found = False
            def wrapper(*args):
                nonlocal found, limit
                while 1:
                    try:
                        ret = func(*args[limit:])
                        found = True
                        return ret
                    except TypeError:
                        if found:
                            raise
                        limit += 1
            return wrapper
    ''')
    assert found["ret = func(*args[limit:])"] == {"limit = 0", "limit += 1"}
    assert found["if found:"] == {"found = False", "found = True"}
    assert "while 1:" not in found            # reads no cell
    assert all("func" not in b for bs in found.values() for b in bs)  # a parameter stays with its def


def test_locals_globals_comprehension_targets_and_class_bodies_are_not_cells():
    found = readers('''
        x = 1
        def outer():
            y = 2
            z = 3
            class Inner:
                z = 4
                def method(self):
                    return z
            def f():
                y = 5
                return y + x + sum(w for w in range(3))
            def g():
                global y
                return y
            return f, g, Inner
    ''')
    assert found == {"return z": {"z = 3"}}   # the class body's z is not visible to method


def test_a_lambda_and_a_nested_def_read_cells():
    found = readers('''
        def outer(n):
            scale = n * 2
            def helper(v):
                return v
            return lambda v: helper(v) * scale
    ''')
    assert found == {"return lambda v: helper(v) * scale": {"scale = n * 2", "def helper"}}


def test_a_nonlocal_chain_binds_the_outermost_owner_and_compound_bindings_are_left_out():
    """``count`` belongs to ``outer`` (``middle`` only passes it on); its binding in an ``if`` header is a
    compound statement, which the rule does not keep (the module docstring says so)."""
    found = readers('''
        def outer(items):
            if (count := len(items)) > 2:
                pass
            def middle():
                nonlocal count
                def inner():
                    nonlocal count
                    count -= 1
                    return count
                return inner
            return middle
    ''')
    assert found == {"return count": {"count -= 1"}}
