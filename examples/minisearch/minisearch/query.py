"""A tiny query language and its parser.

Grammar (operators are upper case; lower-case ``and``/``or``/``not`` are words)::

    query   := or_expr
    or_expr := and_expr ("OR" and_expr)*
    and_expr:= group ("AND" group)*
    group   := ("NOT"? primary)+        # juxtaposed clauses use the default operator
    primary := "(" query ")" | '"' words '"' | word | prefix "*"

``NOT x`` inside a group always excludes ``x`` from the group's matches, as
Lucene's ``-x`` does, whatever the default operator is.
"""

import re
from dataclasses import dataclass, field

from .analysis import analyze

_TOKEN_RE = re.compile(r'\s*(?:(\()|(\))|"([^"]*)"|([^\s()"]+)|(\S))')
OPERATORS = ("AND", "OR", "NOT")


class QuerySyntaxError(ValueError):
    """Raised for a query that cannot be parsed."""


@dataclass(frozen=True)
class Term:
    """A single analyzed term."""

    term: str


@dataclass(frozen=True)
class Prefix:
    """Every indexed term that starts with ``prefix``."""

    prefix: str


@dataclass(frozen=True)
class Phrase:
    """Terms that must occur at the given relative positions."""

    terms: tuple  # of (term, offset) pairs


@dataclass(frozen=True)
class Empty:
    """A clause that analyzed to nothing (a stop word, punctuation)."""


@dataclass
class Bool:
    """Clauses combined with ``op`` ("AND"/"OR"), minus the ``excluded`` ones."""

    op: str
    clauses: list = field(default_factory=list)
    excluded: list = field(default_factory=list)


def _tokenize(text):
    """Split query text into ``(kind, value)`` tokens."""
    tokens = []
    position = 0
    text = text.rstrip()
    while position < len(text):
        match = _TOKEN_RE.match(text, position)
        lparen, rparen, phrase, word, stray = match.groups()
        if stray is not None:
            raise QuerySyntaxError(f"unterminated quote at column {match.start(5) + 1}")
        if lparen:
            tokens.append(("(", lparen))
        elif rparen:
            tokens.append((")", rparen))
        elif phrase is not None:
            tokens.append(("PHRASE", phrase))
        elif word in OPERATORS:
            tokens.append((word, word))
        else:
            tokens.append(("WORD", word))
        position = match.end()
    return tokens


class _Parser:
    """Recursive-descent parser over the token list."""

    def __init__(self, tokens, default_op):
        self.tokens = tokens
        self.pos = 0
        self.default_op = default_op

    def peek(self):
        return self.tokens[self.pos][0] if self.pos < len(self.tokens) else None

    def take(self):
        token = self.tokens[self.pos]
        self.pos += 1
        return token

    def parse(self):
        node = self.or_expr()
        if self.peek() is not None:
            raise QuerySyntaxError(f"unexpected {self.tokens[self.pos][1]!r}")
        return node

    def or_expr(self):
        items = [self.and_expr()]
        while self.peek() == "OR":
            self.take()
            items.append(self.and_expr())
        return items[0] if len(items) == 1 else Bool("OR", items)

    def and_expr(self):
        items = [self.group()]
        while self.peek() == "AND":
            self.take()
            items.append(self.group())
        return items[0] if len(items) == 1 else Bool("AND", items)

    def group(self):
        clauses, excluded = [], []
        while self.peek() in ("NOT", "(", "PHRASE", "WORD"):
            if self.peek() == "NOT":
                self.take()
                excluded.append(self.primary())
            else:
                clauses.append(self.primary())
        if not clauses and not excluded:
            found = self.tokens[self.pos][1] if self.pos < len(self.tokens) else "end of query"
            raise QuerySyntaxError(f"expected a term, found {found!r}")
        if len(clauses) == 1 and not excluded:
            return clauses[0]
        return Bool(self.default_op, clauses, excluded)

    def primary(self):
        kind = self.peek()
        if kind is None:
            raise QuerySyntaxError("expected a term, found end of query")
        kind, value = self.take()
        if kind == "(":
            node = self.or_expr()
            if self.peek() != ")":
                raise QuerySyntaxError("missing ')'")
            self.take()
            return node
        if kind == "PHRASE":
            return _words_node(value)
        if kind == "WORD":
            if value.endswith("*"):
                prefix = value[:-1].lower()
                if not prefix.isalnum():
                    raise QuerySyntaxError(f"bad wildcard {value!r}: use letters then '*'")
                return Prefix(prefix)
            return _words_node(value)
        raise QuerySyntaxError(f"unexpected {value!r}")


def _words_node(text):
    """Analyze free text into Empty, a Term, or a Phrase (relative positions kept)."""
    terms = analyze(text)
    if not terms:
        return Empty()
    if len(terms) == 1:
        return Term(terms[0][0])
    first = terms[0][1]
    return Phrase(tuple((term, position - first) for term, position in terms))


def parse_query(text, default_op="OR"):
    """Parse ``text`` into a query tree; raise :class:`QuerySyntaxError` if invalid."""
    tokens = _tokenize(text)
    if not tokens:
        raise QuerySyntaxError("empty query")
    return _Parser(tokens, default_op).parse()
