"""libcst node builders for the code the instrumentor inserts, and line-preserving insertion.

Every counter tick is the expression ``_mantis_n(_mantis_k[i])`` (``next`` on an ``itertools.count``;
always truthy), so it can live inside a condition as well as in a statement. That lets almost every
probe sit on a line that already exists:

* conditions: ``if t:`` -> ``if (t) and TICK:``; the else arm rides on the last test as
  ``((t) and TICK) or not TICK``;
* block starts: prepended to the first simple statement of the block (``TICK; x = 1``), or folded
  into the first expression the block evaluates when it starts with a compound statement
  (``for y in (TICK and ys):``); only when neither is possible is a new line added, and that is
  counted so the manifest can say which files lost exact line numbers.
"""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

COUNTERS = "_mantis_k"
NEXT = "_mantis_n"
GUARDS = "_mantis_vg"
RECORD = "_mantis_rec"
GROUP_GUARDS = "_mantis_gg"


def _index(value: str, i: int) -> cst.Subscript:
    return cst.Subscript(
        value=cst.Name(value),
        slice=[cst.SubscriptElement(slice=cst.Index(value=cst.Integer(str(i))))],
    )


def tick(i: int) -> cst.Call:
    """``_mantis_n(_mantis_k[i])``: increments counter i, evaluates to a positive int."""
    return cst.Call(func=cst.Name(NEXT), args=[cst.Arg(value=_index(COUNTERS, i))])


def record(j: int, value: cst.BaseExpression) -> cst.BooleanOperation:
    """``_mantis_vg[j] and _mantis_rec(j, value)``: records while variable j still wants values."""
    call = cst.Call(
        func=cst.Name(RECORD),
        args=[
            cst.Arg(value=cst.Integer(str(j)), comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))),
            cst.Arg(value=value),
        ],
    )
    return cst.BooleanOperation(left=_index(GUARDS, j), operator=cst.And(), right=call)


def record_group(g: int, values: Sequence[cst.BaseExpression]) -> cst.BooleanOperation:
    """``_mantis_gg[g] and _mantis_rec(-1 - g, (v1, v2, ...))``: records the variables of group g (those
    one statement assigns together: a function's parameters, a loop's targets) behind one guard, which
    stays on while any of them still wants values."""
    call = cst.Call(
        func=cst.Name(RECORD),
        args=[
            cst.Arg(value=cst.UnaryOperation(operator=cst.Minus(), expression=cst.Integer(str(g + 1))),
                    comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))),
            cst.Arg(value=cst.Tuple(elements=[cst.Element(value=v) for v in values],
                                    lpar=[cst.LeftParen()], rpar=[cst.RightParen()])),
        ],
    )
    return cst.BooleanOperation(left=_index(GROUP_GUARDS, g), operator=cst.And(), right=call)


def record_call(j: int, value: cst.BaseExpression) -> cst.Call:
    """``_mantis_rec(j, V)``: records V on its way in, evaluating it once; a call on every execution."""
    return cst.Call(
        func=cst.Name(RECORD),
        args=[
            cst.Arg(value=cst.Integer(str(j)), comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))),
            cst.Arg(value=value),
        ],
    )


def record_tap(j: int, value: cst.BaseExpression) -> cst.IfExp:
    """``_mantis_rec(j, V) if _mantis_vg[j] else V``: records V on its way to an assignment target.

    V is written twice but evaluated once (only one arm runs), so a target whose re-reading could have
    side effects (an attribute) is never read back.
    """
    call = cst.Call(
        func=cst.Name(RECORD),
        args=[
            cst.Arg(value=cst.Integer(str(j)), comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))),
            cst.Arg(value=paren(value)),
        ],
    )
    return cst.IfExp(test=_index(GUARDS, j), body=call, orelse=paren(value))


def paren(expr: cst.BaseExpression) -> cst.BaseExpression:
    """Wrap in one more pair of parentheses (always safe, keeps precedence right)."""
    return expr.with_changes(lpar=[cst.LeftParen(), *expr.lpar], rpar=[*expr.rpar, cst.RightParen()])


def and_(left: cst.BaseExpression, right: cst.BaseExpression) -> cst.BooleanOperation:
    """``left and right`` with both sides parenthesised where needed."""
    return cst.BooleanOperation(left=left, operator=cst.And(), right=right)


def then_tick(test: cst.BaseExpression, i: int) -> cst.BooleanOperation:
    """``(test) and TICK``: counts when test is true; same truth value as test."""
    return and_(paren(test), tick(i))


def else_tick(test: cst.BaseExpression, i: int) -> cst.BooleanOperation:
    """``test or not TICK``: counts when test is false; same truth value as test."""
    return cst.BooleanOperation(
        left=test, operator=cst.Or(), right=cst.UnaryOperation(operator=cst.Not(), expression=tick(i))
    )


def before(effects: Sequence[cst.BaseExpression], expr: cst.BaseExpression) -> cst.BaseExpression:
    """An expression that evaluates ``effects`` in order, then ``expr``, and has ``expr``'s value."""
    if not effects:
        return expr
    if all(_is_tick(e) for e in effects):
        result: cst.BaseExpression = paren(expr)
        for effect in reversed(effects):
            result = and_(effect, result)
        return paren(result)
    elements = [cst.Element(value=e) for e in effects] + [cst.Element(value=paren(expr))]
    return cst.Subscript(
        value=cst.Tuple(elements=elements, lpar=[cst.LeftParen()], rpar=[cst.RightParen()]),
        slice=[
            cst.SubscriptElement(
                slice=cst.Index(value=cst.UnaryOperation(operator=cst.Minus(), expression=cst.Integer("1")))
            )
        ],
    )


def before_test(effects: Sequence[cst.BaseExpression], test: cst.BaseExpression) -> cst.BaseExpression:
    """A condition that evaluates ``effects`` in order, then ``test``, with ``test``'s truth: everything is
    joined by ``and`` (an effect that is not a tick made always true first, :func:`always_true`), so the
    test stays in the ``if``'s jump context and its truth is taken once, even where nothing normalises it
    to a bool (an arm counted by no probe leaves ``(test) and TICK``)."""
    if not effects:
        return test
    parts = [effect if _is_tick(effect) else always_true(effect) for effect in effects]
    result: cst.BaseExpression = paren(test)
    for part in reversed(parts):
        result = and_(part, result)
    return paren(result)


def always_true(effect: cst.BaseExpression) -> cst.BaseExpression:
    """``effect`` as an always-true operand of ``and`` that takes no truth of a program value and builds
    nothing: a group's record (False, or the non-empty tuple it recorded) becomes ``(effect or 1)``, any
    other effect (a variable's record returns the program's value, whose truth may raise or run code)
    ``(effect) is not _mantis_k`` (the counters' list, which no program value is). A tuple
    ``(effect, 1)[-1]`` did the same at the cost of building and indexing it: sqlparse's lexer ran one
    per character, and its instrumented runs took 3-5 % less CPU time without them (Python 3.11)."""
    if (isinstance(effect, cst.BooleanOperation) and isinstance(effect.operator, cst.And)
            and isinstance(effect.left, cst.Subscript) and isinstance(effect.left.value, cst.Name)
            and effect.left.value.value == GROUP_GUARDS):
        return paren(cst.BooleanOperation(left=paren(effect), operator=cst.Or(), right=cst.Integer("1")))
    return paren(cst.Comparison(left=paren(effect), comparisons=[
        cst.ComparisonTarget(operator=cst.IsNot(), comparator=cst.Name(COUNTERS))]))


def _is_tick(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value == NEXT


def is_docstring_line(stmt: cst.BaseStatement) -> bool:
    """True for a line whose first statement is a bare string (a docstring where it stands first)."""
    return (
        isinstance(stmt, cst.SimpleStatementLine)
        and bool(stmt.body)
        and isinstance(stmt.body[0], cst.Expr)
        and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def _fold_into_first_expression(
    stmt: cst.BaseStatement, effects: Sequence[cst.BaseExpression]
) -> cst.BaseStatement | None:
    """Fold effects into the first expression a compound statement evaluates, exactly once, on entry."""
    if isinstance(stmt, cst.If):
        return stmt.with_changes(test=before_test(effects, stmt.test))
    if isinstance(stmt, cst.For):
        return stmt.with_changes(iter=before(effects, stmt.iter))
    if isinstance(stmt, cst.With) and stmt.items:
        first = stmt.items[0]
        items = [first.with_changes(item=before(effects, first.item)), *stmt.items[1:]]
        return stmt.with_changes(items=items)
    if isinstance(stmt, cst.Match):
        return stmt.with_changes(subject=before(effects, stmt.subject))
    if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)) and stmt.decorators:
        # Decorators are evaluated first when a def/class statement runs (any expression since 3.9).
        first = stmt.decorators[0]
        return stmt.with_changes(decorators=[first.with_changes(decorator=before(effects, first.decorator)), *stmt.decorators[1:]])
    if isinstance(stmt, cst.ClassDef) and stmt.bases:
        first = stmt.bases[0]
        return stmt.with_changes(bases=[first.with_changes(value=before(effects, first.value)), *stmt.bases[1:]])
    if isinstance(stmt, (cst.Try, cst.TryStar)):
        body, shifted = insert_at_block_start(stmt.body, effects)
        return None if shifted else stmt.with_changes(body=body)
    return None


def insert_at_block_start(
    block: cst.BaseSuite, effects: Sequence[cst.BaseExpression], after_docstring: bool = False
) -> tuple[cst.BaseSuite, bool]:
    """Make ``effects`` run first whenever ``block`` is entered. Returns (new block, added a line)."""
    if not effects:
        return block, False
    small = [cst.Expr(value=e) for e in effects]
    if isinstance(block, cst.SimpleStatementSuite):
        if after_docstring and block.body and isinstance(block.body[0], cst.Expr) and isinstance(
            block.body[0].value, (cst.SimpleString, cst.ConcatenatedString)
        ):
            return block.with_changes(body=[block.body[0], *small, *block.body[1:]]), False
        return block.with_changes(body=[*small, *block.body]), False
    assert isinstance(block, cst.IndentedBlock)
    body = list(block.body)
    first = body[0]
    if isinstance(first, cst.SimpleStatementLine):
        if after_docstring and is_docstring_line(first):
            # Keep the docstring the first statement: effects go right after it, on its line.
            new_first = first.with_changes(body=[first.body[0], *small, *first.body[1:]])
        else:
            new_first = first.with_changes(body=[*small, *first.body])
        return block.with_changes(body=[new_first, *body[1:]]), False
    if after_docstring and len(body) > 1 and is_docstring_line(body[0]):
        raise AssertionError("unreachable: a docstring line is a SimpleStatementLine")
    folded = _fold_into_first_expression(first, effects)
    if folded is not None:
        return block.with_changes(body=[folded, *body[1:]]), False
    # No line to share: use a blank line above the statement if there is one, else add a line.
    leading = list(first.leading_lines)
    blank = next((n for n in range(len(leading)) if leading[n].comment is None), None)
    new_line = cst.SimpleStatementLine(body=small)
    if blank is not None:
        new_line = new_line.with_changes(leading_lines=leading[:blank])
        first = first.with_changes(leading_lines=leading[blank + 1 :])
        return block.with_changes(body=[new_line, first, *body[1:]]), False
    new_line = new_line.with_changes(leading_lines=leading)
    first = first.with_changes(leading_lines=[])
    return block.with_changes(body=[new_line, first, *body[1:]]), True
