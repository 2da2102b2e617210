"""Else arms that need no probe: their count follows from counts the instrumentor takes anyway.

An ``if`` chain with no ``else`` falls through without taking an arm every time it is entered and no
arm is taken, so that count (the *implicit else*) is the statement's entries minus its arms' counts;
a written ``else`` is taken as often, so it needs no probe either where the entries are known.
The bytecode backend counts both that way (see :mod:`mantispy.monitoring.plan`). The entries themselves
are known without a probe where control reaches the statement in one way only:

* the statement starts a counted block: a function body (its call count), a loop body (its
  iterations), an arm (that arm's count), an exception handler, a match case;
* or every statement before it in its block is entered as often as the one before it, less the times
  that one left the block: a simple statement that neither leaves (``return``, ``raise``, ``break``,
  ``continue``) nor suspends (``yield``, ``await``) nor calls or subscripts anything (where exceptions
  come from: ``next(it)`` ending a loop by ``StopIteration``, ``d[k]`` raising ``KeyError`` for a
  caller to catch), or an ``if`` chain whose tests call and subscript nothing and whose every arm
  either always leaves (it ends with ``return``/``raise``/``break``/``continue``: it leaves as often as
  it is taken) or is made of such statements (the guard-clause chain ``if a is None: return`` /
  ``if not b: continue`` / ...).

So a derived count equals the counted one except where an exception leaves the block between its
start and the ``if`` without a call or subscript raising it (an attribute missing, a division by zero,
a name not bound) — an error path, not the normal flow of a program. A test that raises counts as
the else arm, as in the bytecode backend. ``mantispy instrument --probe-every-arm`` puts a probe
on every arm instead.

Formulas are ``{feature id: coefficient}`` over counted features only (an implicit else used in
another formula is expanded), evaluated by the run-time when it collects the counts.
"""

from __future__ import annotations

from collections.abc import Mapping

import libcst as cst

Formula = dict[str, int]

_EXITS = (cst.Return, cst.Raise, cst.Break, cst.Continue)


def combine(*parts: tuple[int, Formula]) -> Formula:
    """``sum(sign * formula)``, zero coefficients dropped."""
    total: Formula = {}
    for sign, formula in parts:
        for feature_id, coefficient in formula.items():
            total[feature_id] = total.get(feature_id, 0) + sign * coefficient
    return {k: v for k, v in total.items() if v}


class _Finder(cst.CSTVisitor):
    """Whether a node holds one of ``kinds`` outside nested scopes (functions, classes, lambdas)."""

    def __init__(self, kinds: tuple[type[cst.CSTNode], ...]) -> None:
        self.kinds = kinds
        self.found = False

    def on_visit(self, node: cst.CSTNode) -> bool:
        if self.found or isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            return False
        if isinstance(node, self.kinds) or getattr(node, "asynchronous", None) is not None:
            self.found = True
            return False
        return True


_SUSPENDS = (cst.Yield, cst.Await)
_RAISES = (*_SUSPENDS, cst.Call, cst.Subscript, cst.Import, cst.ImportFrom, *_EXITS)


def _holds(node: cst.CSTNode, kinds: tuple[type[cst.CSTNode], ...]) -> bool:
    finder = _Finder(kinds)
    node.visit(finder)
    return finder.found


def suspends(node: cst.CSTNode) -> bool:
    """Whether evaluating ``node`` may suspend (a generator may be abandoned there): yield, await, async."""
    return _holds(node, _SUSPENDS)


def quiet(node: cst.CSTNode) -> bool:
    """Whether ``node`` runs straight through: no call or subscript (where exceptions come from), no
    import, no yield/await, no return/raise/break/continue."""
    return not _holds(node, _RAISES)


def always_leaves(block: cst.BaseSuite) -> bool:
    """Whether every run of ``block`` that completes leaves the enclosing block: its last statement is a
    ``return``, ``raise``, ``break`` or ``continue``."""
    if isinstance(block, cst.SimpleStatementSuite):
        last_small = block.body[-1] if block.body else None
    else:
        last = block.body[-1] if block.body else None
        last_small = last.body[-1] if isinstance(last, cst.SimpleStatementLine) and last.body else None
    return isinstance(last_small, _EXITS)


def chain_of(head: cst.If) -> list[cst.If]:
    """The ``if`` and its ``elif`` nodes, in order."""
    chain = [head]
    while isinstance(chain[-1].orelse, cst.If):
        chain.append(chain[-1].orelse)
    return chain


class ArmDerivation:
    """Entries of statements and blocks as formulas over counted features, kept while the instrumentor
    walks a module (it reports each block's count as it allocates it).

    ``parents`` maps each node of the original tree to its parent (libcst's ``ParentNodeProvider``)."""

    def __init__(self, parents: Mapping[cst.CSTNode, cst.CSTNode]) -> None:
        self.parents = parents
        self.block_entries: dict[int, Formula | None] = {}  # id(owner node) -> entries of the block it owns
        self.arm_counts: dict[int, Formula | None] = {}  # id(If node) -> its arm's count
        self.else_counts: dict[int, Formula | None] = {}  # id(last If of a chain) -> its else arm's count
        self._entries_of: dict[int, Formula | None] = {}

    # ------------------------------------------------------------------ what the instrumentor reports
    def note_block(self, owner: cst.CSTNode, formula: Formula | None) -> None:
        """The block ``owner`` owns (a function's or loop's body, a handler, a case, a loop's or try's
        else) is entered ``formula`` times (None: not counted)."""
        self.block_entries[id(owner)] = formula

    def note_arm(self, node: cst.If, formula: Formula | None) -> None:
        """The arm of ``node`` (an ``if`` or ``elif``) is taken ``formula`` times."""
        self.arm_counts[id(node)] = formula
        self.block_entries[id(node)] = formula

    def note_else(self, last: cst.If, else_node: cst.Else | None, formula: Formula | None) -> None:
        """The else arm (written: ``else_node``; implicit: None) of the chain ending at ``last``."""
        self.else_counts[id(last)] = formula
        if else_node is not None:
            self.block_entries[id(else_node)] = formula

    # ------------------------------------------------------------------ questions
    def else_count(self, last: cst.If) -> Formula | None:
        """The else arm's count (implicit or written) of the chain ending at ``last`` from other counts, or
        None when it needs a probe."""
        head = last
        while isinstance(self.parents.get(head), cst.If) and self.parents[head].orelse is head:
            head = self.parents[head]
        chain = chain_of(head)
        if any(suspends(node.test) for node in chain):
            return None
        arms = [self.arm_counts.get(id(node)) for node in chain]
        entries = self.statement_entries(head)
        if entries is None or any(arm is None for arm in arms):
            return None
        return combine((1, entries), *((-1, arm) for arm in arms if arm is not None)) or None

    def statement_entries(self, statement: cst.CSTNode) -> Formula | None:
        """How often ``statement`` is entered, or None when counted blocks do not tell."""
        key = id(statement)
        if key not in self._entries_of:
            self._entries_of[key] = self._entries(statement)
        return self._entries_of[key]

    def _entries(self, statement: cst.CSTNode) -> Formula | None:
        block = self.parents.get(statement)
        if not isinstance(block, cst.IndentedBlock):
            return None
        owner = self.parents.get(block)
        position = next((n for n, s in enumerate(block.body) if s is statement), None)
        if owner is None or position is None:
            return None
        if position == 0:
            return self.block_entries.get(id(owner))
        before = block.body[position - 1]
        previous = self.statement_entries(before)
        leaving = None if previous is None else self._leaving(before)
        return None if leaving is None else combine((1, previous), (-1, leaving))

    def _leaving(self, statement: cst.CSTNode) -> Formula | None:
        """The times ``statement``, once entered, leaves its block (None: not known from the counts)."""
        if isinstance(statement, cst.SimpleStatementLine):
            return {} if quiet(statement) else None
        if isinstance(statement, cst.If):
            return self._chain_leaving(statement)
        return None

    def _chain_leaving(self, head: cst.If) -> Formula | None:
        chain = chain_of(head)
        if not all(quiet(node.test) for node in chain):
            return None
        arms: list[tuple[cst.BaseSuite, Formula | None]] = [(node.body, self.arm_counts.get(id(node))) for node in chain]
        last = chain[-1]
        if isinstance(last.orelse, cst.Else):
            arms.append((last.orelse.body, self.else_counts.get(id(last))))
        leaving: Formula = {}
        for body, count in arms:
            left = self._block_leaving(body, count)
            if left is None:
                return None
            leaving = combine((1, leaving), (1, left))
        return leaving

    def _block_leaving(self, block: cst.BaseSuite, entries: Formula | None) -> Formula | None:
        """The times a block entered ``entries`` times leaves its enclosing block: all of them when it
        ends by leaving, else the sum over its statements (None: not known)."""
        if always_leaves(block):
            return entries
        if isinstance(block, cst.SimpleStatementSuite):
            return {} if quiet(block) else None
        leaving: Formula = {}
        for statement in block.body:
            left = self._leaving(statement)
            if left is None:
                return None
            leaving = combine((1, leaving), (1, left))
        return leaving
