"""Seeded changes for evaluating the performance-regression diagnosis (AutoPerf-style).

Each `Case` is a small source change to a copy of one of the benchmark suite's real third-party
packages, as `benchmarks/suite/prepare.py` lays it out (``WORK/NAME/app/PACKAGE/...``): a
*regression* (a realistic code change that makes the program slower or heavier on the campaign's
inputs) or a *neutral* change (a refactoring that keeps the work, and the output, the same). The
diagnosis profiles the unchanged copy (baseline) and the changed copy (candidate) over the inputs
of ``prepare(NAME, WORK, count=6, seed=3)`` and has to say whether the candidate regressed and, if
so, name the function (`Case.function`) and the counter (`Case.counter`) behind it.

How the cases were chosen. The 6 inputs of each program were profiled with cProfile (per-function
call counts and self time, summed over the inputs), and every change was placed in a function that
those inputs execute (all 6 for most cases; 2 for the reindent filter and 4 for mistune's HTML
renderer, the only ones whose options reach them), mostly in the hottest functions. The
regressions cover the usual kinds of slow-downs a developer introduces:

* an allocation that churns memory (page faults): the SQL lexer materialising ``enumerate(text)``
  as a list of (pos, char) tuples per text; mistune's renderer building a new output string per
  rendered piece; a reference cycle that keeps each parsed mistune document alive (below);
* a linear search or pass turned quadratic / re-scanning: sqlparse's keyword lookup scanning the
  keyword dictionaries' items instead of a dict lookup, Python-Markdown's inline processor
  rescanning from the start of the text after every match (what upstream Markdown does), sqlparse's
  reindent filter rebuilding the statement's text to measure the current line (sqlparse's older
  code), pycparser's lexer counting newlines from the start of the file for every token's line;
* copying a list in a loop: Markdown's inline loop taking a fresh snapshot of the pattern registry
  at every step;
* lock contention: a lock taken per token, with a reporter thread started by the change that takes
  it every millisecond and holds it across an ``os.write`` (pycparser; moves context switches);
* exceptions for control flow: EAFP ``try/except`` instead of a test in a hot path (sqlparse's
  token-type membership test on ``None``, pycparser's token look-ahead buffer);
* IO in a loop: a debug trace record logged (and flushed) to a temporary file for every text run
  of Markdown's inline processor;
* garbage-collector pressure: ``gc.collect()`` after every conversion (markdown) and a reference
  cycle (the root state stored in its own env) that keeps every parsed document and its token tree
  alive until a full collection (mistune);
* recomputing something that was cached: recompiling a regular expression on every use
  (Markdown's inline patterns, mistune's fast-text trigger), rebuilding mistune's trigger
  character set on every call;
* removed memoisation that multiplies the calls of a helper: the lexer singleton (sqlparse:
  ``Lexer.default_initialization``, ``set_SQL_REGEX`` and ``add_keywords`` then run once per
  tokenised text) and the per-token ID/TYPEID classification memo of ``CParser._peek``
  (``_classify_identifier`` and ``_is_type_in_scope`` then run for every peek, 3-4x as often);
  for these `function` is the function whose code changed and `counter` is ``calls`` (of the
  helpers that `what` names);
* quadratic string concatenation: an f-string that copies the output so far for every rendered
  piece (mistune's renderer);
* sorting inside a loop (Markdown's registry re-sorted on every item access, pycparser's operator
  candidates sorted for every token) and a defensive deep copy (pycparser's declaration
  specifiers).

Magnitudes were measured, not tuned: user+sys CPU of each input's process, original and changed
copy run alternately, 3 repeats, the median over the 6 inputs of the per-input ratio of medians.
On a quiet moment of the shared 2-core machine they came out at 1.00-1.03 for nine regressions
(among them those that move calls or page faults more than time, and the reindent filter, which
costs +4-21 % on the 2 inputs that reach it), 1.04-1.10 for eight, 1.18-1.30 for three and 2.2
for pycparser's line re-scan, with the neutral changes at 0.98-1.03 (at a busier moment, neutral
changes ranged 0.94-1.06, so the smallest effects are below that noise). Changes tried
first whose effect stayed below about 1 % (a list snapshot per sqlparse token search, a slice of
the document per mistune line lookup, a copy of mistune's rule table per match, EAFP in
pycparser's scope lookup, ``+=`` on a dict item in mistune's text merging) were replaced by
changes in hotter code. Every case, regression or neutral, keeps the program's output
byte-identical on the 6 inputs. The neutral changes rename a function and its call sites (across
two files), rename local variables, extract a helper, inline a tiny helper, turn a loop into a
comprehension, reorder independent statements, edit docstrings and comments, add type hints and
replace a literal with a named module constant.

`Edit.file` is relative to the prepared app folder (``WORK/NAME/app``); `Edit.old` occurs exactly
once in that file of the unmodified package. `apply(case, app)` applies a case's edits in order.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Edit:
    file: str  # path relative to the prepared app folder, e.g. "sqlparse/lexer.py"
    old: str  # exact text that occurs EXACTLY ONCE in that file of the unmodified package
    new: str  # its replacement


@dataclass(frozen=True)
class Case:
    name: str  # short unique id, e.g. "sqlparse-quadratic-search"
    program: str  # "sqlparse" | "markdown" | "pycparser" | "mistune"
    kind: str  # "regression" | "neutral"
    function: str  # "FILE:QUALNAME" of the function the change is in (a regression's root cause)
    counter: str  # regression: "thread.cpu_ns" | "sw.page_faults" | "sw.context_switches" | "calls"; neutral: ""
    what: str  # one line: what the change does
    edits: tuple[Edit, ...]


CPU = "thread.cpu_ns"
FAULTS = "sw.page_faults"
SWITCHES = "sw.context_switches"
CALLS = "calls"

CASES: tuple[Case, ...] = (
    # ------------------------------------------------------------------ sqlparse: regressions
    Case(
        name="sqlparse-ttype-contains-eafp",
        program="sqlparse",
        kind="regression",
        function="sqlparse/tokens.py:_TokenType.__contains__",
        counter=CPU,
        what="token-type membership rewritten EAFP: the 'item is not None' test is replaced by catching "
        "the TypeError that slicing None raises, so every test on a group token (ttype None) raises",
        edits=(
            Edit(
                "sqlparse/tokens.py",
                """    def __contains__(self, item):
        return item is not None and (self is item or item[:len(self)] == self)
""",
                """    def __contains__(self, item):
        try:
            return self is item or item[:len(self)] == self
        except TypeError:  # item is None: a group token has no ttype
            return False
""",
            ),
        ),
    ),
    Case(
        name="sqlparse-keyword-scan",
        program="sqlparse",
        kind="regression",
        function="sqlparse/lexer.py:Lexer.is_keyword",
        counter=CPU,
        what="linear search instead of a dict lookup: each word is compared with every entry of the "
        "keyword dictionaries in turn (a plain name scans all of them, some thousand entries)",
        edits=(
            Edit(
                "sqlparse/lexer.py",
                """        val = value.upper()
        for kwdict in self._keywords:
            if val in kwdict:
                return kwdict[val], value
        else:
            return tokens.Name, value
""",
                """        val = value.upper()
        for kwdict in self._keywords:
            for keyword, ttype in kwdict.items():
                if keyword == val:
                    return ttype, value
        return tokens.Name, value
""",
            ),
        ),
    ),
    Case(
        name="sqlparse-lexer-no-singleton",
        program="sqlparse",
        kind="regression",
        function="sqlparse/lexer.py:Lexer.get_default_instance",
        counter=CALLS,
        what="removed memoisation: the default lexer is rebuilt for every tokenize() call, so "
        "Lexer.default_initialization (9 add_keywords, set_SQL_REGEX with ~80 re.compile) runs per "
        "text instead of once; calls of Lexer.default_initialization/add_keywords/set_SQL_REGEX grow",
        edits=(
            Edit(
                "sqlparse/lexer.py",
                """        with cls._lock:
            if cls._default_instance is None:
                cls._default_instance = cls()
                cls._default_instance.default_initialization()
        return cls._default_instance
""",
                """        # A fresh lexer per call, so keywords added by one caller can't leak
        # into another one's tokenization.
        with cls._lock:
            instance = cls()
            instance.default_initialization()
            cls._default_instance = instance
        return instance
""",
            ),
        ),
    ),
    Case(
        name="sqlparse-line-len-rescan",
        program="sqlparse",
        kind="regression",
        function="sqlparse/filters/reindent.py:ReindentFilter._current_line_len",
        counter=CPU,
        what="the current line's width is measured by rebuilding the statement's text from its first "
        "token up to the token (sqlparse's older code), O(statement) per call, quadratic per statement",
        edits=(
            Edit(
                "sqlparse/filters/reindent.py",
                """        length = 0
        node = token
        while node is not self._curr_stmt and node.parent is not None:
            parent = node.parent
            # ``Token`` doesn't implement ``__eq__``, so ``index()`` is an
            # identity lookup and safe against tokens sharing a value.
            stack = parent.tokens[:parent.tokens.index(node)]
            while stack:
                prev_ = stack.pop()
                if prev_.is_group:
                    stack.extend(prev_.tokens)
                    continue

                value = prev_.value
                size = len(value)
                if not size:
                    continue
                lines = value.splitlines()
                if len(lines) == 1 and len(lines[0]) == size:
                    # No break in here.  ``splitlines()`` hands back the value
                    # itself in that case, so this costs a scan but no copy --
                    # which is what keeps a long break-free line affordable.
                    length += size
                    continue

                # ``value`` holds the break that starts the current line.  The
                # sentinel keeps a trailing break from collapsing, so ``lines``
                # always has one entry more than the number of breaks.
                lines = (value + '.').splitlines()
                tail = len(lines[-1]) - 1 + length
                if tail:
                    return tail
                # Nothing but a break to our right, and ``splitlines()`` drops
                # that empty line -- so the line to measure is the one before.
                if len(lines) > 2:
                    return len(lines[-2])
                length = len(lines[0])
            node = parent
        return length
""",
                """        if token.is_group:
            token = next(token.flatten())
        raw = ''
        for prev_ in self._curr_stmt.flatten():
            if prev_ is token:
                break
            raw += prev_.value
        return len((raw or '\\n').splitlines()[-1])
""",
            ),
        ),
    ),
    Case(
        name="sqlparse-lexer-materialize",
        program="sqlparse",
        kind="regression",
        function="sqlparse/lexer.py:Lexer.get_tokens",
        counter=FAULTS,
        what="the lexer materialises enumerate(text) as a list of (pos, char) tuples per text, "
        "allocating ~90 bytes of small objects per character of the script",
        edits=(
            Edit(
                "sqlparse/lexer.py",
                "        iterable = enumerate(text)\n",
                "        iterable = iter(list(enumerate(text)))  # materialised for look-ahead\n",
            ),
        ),
    ),
    # ------------------------------------------------------------------ sqlparse: neutral
    Case(
        name="sqlparse-rename-consume",
        program="sqlparse",
        kind="neutral",
        function="sqlparse/utils.py:consume",
        counter="",
        what="rename utils.consume to advance_iterator and its import and two call sites in lexer.py",
        edits=(
            Edit("sqlparse/utils.py", "def consume(iterator, n):\n", "def advance_iterator(iterator, n):\n"),
            Edit(
                "sqlparse/lexer.py",
                "from sqlparse.utils import consume\n",
                "from sqlparse.utils import advance_iterator\n",
            ),
            Edit(
                "sqlparse/lexer.py",
                "                    consume(iterable, end - pos - 1)\n",
                "                    advance_iterator(iterable, end - pos - 1)\n",
            ),
            Edit(
                "sqlparse/lexer.py",
                "                consume(iterable, m.end() - pos - 1)\n",
                "                advance_iterator(iterable, m.end() - pos - 1)\n",
            ),
        ),
    ),
    Case(
        name="sqlparse-extract-create-table-check",
        program="sqlparse",
        kind="neutral",
        function="sqlparse/engine/grouping.py:group_functions",
        counter="",
        what="extract group_functions' CREATE TABLE (without AS) check into a helper "
        "_is_create_table_without_as(tlist)",
        edits=(
            Edit(
                "sqlparse/engine/grouping.py",
                """@recurse(sql.Function)
def group_functions(tlist):
    has_create = False
    has_table = False
    has_as = False
    for tmp_token in tlist.tokens:
        if tmp_token.value.upper() == 'CREATE':
            has_create = True
        if tmp_token.value.upper() == 'TABLE':
            has_table = True
        if tmp_token.value.upper() == 'AS':
            has_as = True
    if has_create and has_table and not has_as:
        return
""",
                """def _is_create_table_without_as(tlist):
    \"\"\"True for CREATE TABLE statements without AS (no function calls there).\"\"\"
    has_create = False
    has_table = False
    has_as = False
    for tmp_token in tlist.tokens:
        if tmp_token.value.upper() == 'CREATE':
            has_create = True
        if tmp_token.value.upper() == 'TABLE':
            has_table = True
        if tmp_token.value.upper() == 'AS':
            has_as = True
    return has_create and has_table and not has_as


@recurse(sql.Function)
def group_functions(tlist):
    if _is_create_table_without_as(tlist):
        return
""",
            ),
        ),
    ),
    Case(
        name="sqlparse-imt-hints-docs",
        program="sqlparse",
        kind="neutral",
        function="sqlparse/utils.py:imt",
        counter="",
        what="add type hints to utils.imt and rewrite its docstring and comments",
        edits=(
            Edit(
                "sqlparse/utils.py",
                '''def imt(token, i=None, m=None, t=None):
    """Helper function to simplify comparisons Instance, Match and TokenType
    :param token:
    :param i: Class or Tuple/List of Classes
    :param m: Tuple of TokenType & Value. Can be list of Tuple for multiple
    :param t: TokenType or Tuple/List of TokenTypes
    :return:  bool
    """
''',
                '''def imt(token: "Token | None", i: "type | tuple[type, ...] | None" = None,
        m: "tuple | list[tuple] | None" = None, t: "object | None" = None) -> bool:
    """Does *token* match an Instance, a Match or a TokenType?

    :param token: the token to test (``None`` never matches)
    :param i: a class, or a tuple/list of classes, for ``isinstance``
    :param m: a (ttype, values) pair for ``Token.match``, or a list of them
    :param t: a token type, or a tuple/list of token types
    :return: ``True`` as soon as one of the criteria holds
    """
''',
            ),
        ),
    ),
    # ------------------------------------------------------------------ markdown: regressions
    Case(
        name="markdown-inline-rescan",
        program="markdown",
        kind="regression",
        function="markdown/treeprocessors.py:InlineProcessor.__applyPattern",
        counter=CPU,
        what="after a match, inline pattern search restarts at index 0 of the text instead of just past "
        "the inserted placeholder (upstream Markdown's behaviour), rescanning the processed prefix",
        edits=(
            Edit(
                "markdown/treeprocessors.py",
                """            return "{}{}{}".format(data[:start],
                                   placeholder, data[end:]), True, start + len(placeholder)
""",
                """            return "{}{}{}".format(data[:start],
                                   placeholder, data[end:]), True, 0
""",
            ),
        ),
    ),
    Case(
        name="markdown-registry-resort",
        program="markdown",
        kind="regression",
        function="markdown/util.py:Registry._sort",
        counter=CPU,
        what="sorting inside a loop: Registry._sort no longer checks _is_sorted, so every registry access "
        "(one per inline pattern tried) re-sorts the items by priority",
        edits=(
            Edit(
                "markdown/util.py",
                """        if not self._is_sorted:
            self._priority.sort(key=lambda item: item.priority, reverse=True)
            self._is_sorted = True
""",
                """        self._priority.sort(key=lambda item: item.priority, reverse=True)
        self._is_sorted = True
""",
            ),
        ),
    ),
    Case(
        name="markdown-gc-collect",
        program="markdown",
        kind="regression",
        function="markdown/core.py:Markdown.convert",
        counter=CPU,
        what="garbage-collector pressure: convert() runs a full gc.collect() after every conversion "
        "to free the element tree early",
        edits=(
            Edit("markdown/core.py", "import codecs\n", "import codecs\nimport gc\n"),
            Edit(
                "markdown/core.py",
                """        for pp in self.postprocessors:
            output = pp.run(output)

        return output.strip()
""",
                """        for pp in self.postprocessors:
            output = pp.run(output)

        # Release the element tree and the stashes of this document right away.
        root = None
        gc.collect()
        return output.strip()
""",
            ),
        ),
    ),
    Case(
        name="markdown-inline-trace-log",
        program="markdown",
        kind="regression",
        function="markdown/treeprocessors.py:InlineProcessor.__handleInline",
        counter=CPU,
        what="IO in a loop: a debug trace record (logging, flushed by its StreamHandler) is written to a "
        "temporary file for every text run handled by the inline processor",
        edits=(
            Edit(
                "markdown/treeprocessors.py",
                "import re\nimport xml.etree.ElementTree as etree\n",
                """import logging
import re
import tempfile
import xml.etree.ElementTree as etree
""",
            ),
            Edit(
                "markdown/treeprocessors.py",
                "from . import inlinepatterns\n",
                """from . import inlinepatterns

# Trace of the inline processor's work, for debugging pattern order issues.
_trace = logging.getLogger('MARKDOWN.inline')
_trace.setLevel(logging.DEBUG)
_trace.propagate = False
_trace.addHandler(logging.StreamHandler(tempfile.TemporaryFile('w+', encoding='utf-8')))
""",
            ),
            Edit(
                "markdown/treeprocessors.py",
                """        if not isinstance(data, util.AtomicString):
            startIndex = 0
            count = len(self.inlinePatterns)
""",
                """        if not isinstance(data, util.AtomicString):
            _trace.debug('inline: %d chars from pattern %d', len(data), patternIndex)
            startIndex = 0
            count = len(self.inlinePatterns)
""",
            ),
        ),
    ),
    Case(
        name="markdown-pattern-list-copy",
        program="markdown",
        kind="regression",
        function="markdown/treeprocessors.py:InlineProcessor.__handleInline",
        counter=CPU,
        what="copying a list in a loop: every step of the inline loop takes a fresh snapshot of the "
        "pattern registry (list(self.inlinePatterns), which runs Registry.__iter__) to pick the next pattern",
        edits=(
            Edit(
                "markdown/treeprocessors.py",
                """            while patternIndex < count:
                data, matched, startIndex = self.__applyPattern(
                    self.inlinePatterns[patternIndex], data, patternIndex, startIndex
                )
""",
                """            while patternIndex < count:
                patterns = list(self.inlinePatterns)  # a snapshot, in priority order
                data, matched, startIndex = self.__applyPattern(
                    patterns[patternIndex], data, patternIndex, startIndex
                )
""",
            ),
        ),
    ),
    Case(
        name="markdown-pattern-recompile",
        program="markdown",
        kind="regression",
        function="markdown/inlinepatterns.py:Pattern.getCompiledRegExp",
        counter=CPU,
        what="getCompiledRegExp() recompiles the stored pattern on every call (re.compile, served from "
        "re's cache) instead of returning the compiled object",
        edits=(
            Edit(
                "markdown/inlinepatterns.py",
                """        \"\"\" Return a compiled regular expression. \"\"\"
        return self.compiled_re
""",
                """        \"\"\" Return a compiled regular expression. \"\"\"
        return re.compile(self.compiled_re.pattern, self.compiled_re.flags)
""",
            ),
        ),
    ),
    # ------------------------------------------------------------------ markdown: neutral
    Case(
        name="markdown-rename-locals",
        program="markdown",
        kind="neutral",
        function="markdown/treeprocessors.py:InlineProcessor.__processPlaceholders",
        counter="",
        what="rename local variables of __processPlaceholders (strartIndex -> start_index, "
        "phEndIndex -> end_index, id -> node_id)",
        edits=(
            Edit(
                "markdown/treeprocessors.py",
                """        result = []
        strartIndex = 0
        while data:
            index = data.find(self.__placeholder_prefix, strartIndex)
            if index != -1:
                id, phEndIndex = self.__findPlaceholder(data, index)

                if id in self.stashed_nodes:
                    node = self.stashed_nodes.get(id)

                    if index > 0:
                        text = data[strartIndex:index]
                        linkText(text)
""",
                """        result = []
        start_index = 0
        while data:
            index = data.find(self.__placeholder_prefix, start_index)
            if index != -1:
                node_id, end_index = self.__findPlaceholder(data, index)

                if node_id in self.stashed_nodes:
                    node = self.stashed_nodes.get(node_id)

                    if index > 0:
                        text = data[start_index:index]
                        linkText(text)
""",
            ),
            Edit(
                "markdown/treeprocessors.py",
                """                    else:  # it's just a string
                        linkText(node)
                        strartIndex = phEndIndex
                        continue

                    strartIndex = phEndIndex
                    result.append((node, self.ancestors[:]))

                else:  # wrong placeholder
                    end = index + len(self.__placeholder_prefix)
                    linkText(data[strartIndex:end])
                    strartIndex = end
            else:
                text = data[strartIndex:]
""",
                """                    else:  # it's just a string
                        linkText(node)
                        start_index = end_index
                        continue

                    start_index = end_index
                    result.append((node, self.ancestors[:]))

                else:  # wrong placeholder
                    end = index + len(self.__placeholder_prefix)
                    linkText(data[start_index:end])
                    start_index = end
            else:
                text = data[start_index:]
""",
            ),
        ),
    ),
    Case(
        name="markdown-placeholder-constant",
        program="markdown",
        kind="neutral",
        function="markdown/treeprocessors.py:InlineProcessor.__makePlaceholder",
        counter="",
        what='replace the "%04d" literal of __makePlaceholder with a module constant PLACEHOLDER_ID_FORMAT',
        edits=(
            Edit(
                "markdown/treeprocessors.py",
                "from . import inlinepatterns\n",
                """from . import inlinepatterns

PLACEHOLDER_ID_FORMAT = "%04d"
\"\"\" Format of the numeric id of an inline placeholder (see `InlineProcessor`). \"\"\"
""",
            ),
            Edit(
                "markdown/treeprocessors.py",
                '        id = "%04d" % len(self.stashed_nodes)\n',
                "        id = PLACEHOLDER_ID_FORMAT % len(self.stashed_nodes)\n",
            ),
        ),
    ),
    Case(
        name="markdown-parent-map-comprehension",
        program="markdown",
        kind="neutral",
        function="markdown/treeprocessors.py:InlineProcessor.run",
        counter="",
        what="the loop that records the parents of newly inlined nodes becomes a dict comprehension "
        "passed to parent_map.update",
        edits=(
            Edit(
                "markdown/treeprocessors.py",
                """                    for item in lst:
                        self.parent_map[item[0]] = child
""",
                """                    self.parent_map.update({item[0]: child for item in lst})
""",
            ),
        ),
    ),
    # ------------------------------------------------------------------ pycparser: regressions
    Case(
        name="pycparser-peek-eafp",
        program="pycparser",
        kind="regression",
        function="pycparser/c_parser.py:_TokenStream.peek",
        counter=CPU,
        what="token look-ahead rewritten EAFP: peek indexes the buffer and fills it in an "
        "except IndexError handler, so every token read from the lexer first raises an IndexError",
        edits=(
            Edit(
                "pycparser/c_parser.py",
                """        pos = self._index + k - 1
        if pos >= len(self._buffer):
            self._fill(k)
        return self._buffer[pos]
""",
                """        pos = self._index + k - 1
        try:
            return self._buffer[pos]
        except IndexError:
            self._fill(k)
            return self._buffer[pos]
""",
            ),
        ),
    ),
    Case(
        name="pycparser-line-rescan",
        program="pycparser",
        kind="regression",
        function="pycparser/c_lexer.py:CLexer._make_token",
        counter=CPU,
        what="each token's line and column are derived from the text (newlines counted from the last "
        "#line directive or the start of the input, str.count/str.rfind) instead of the tracked "
        "counters: a re-scan of the file prefix per token, quadratic in the file size",
        edits=(
            Edit(
                "pycparser/c_lexer.py",
                "        self._line_start = 0\n",
                """        self._line_start = 0
        # Line number at _line_origin_pos (the start, or the line after a #line directive).
        self._line_origin = 1
        self._line_origin_pos = 0
""",
            ),
            Edit(
                "pycparser/c_lexer.py",
                """            self._pos = line_end + 1
            self._line_start = self._pos

        def fail(msg: str, offset: int) -> None:
            self._error(msg, self._pos + offset)
            self._pos = line_end + 1
            self._line_start = self._pos
""",
                """            self._pos = line_end + 1
            self._line_start = self._pos
            self._line_origin, self._line_origin_pos = self._lineno, self._pos

        def fail(msg: str, offset: int) -> None:
            self._error(msg, self._pos + offset)
            self._pos = line_end + 1
            self._line_start = self._pos
            self._line_origin, self._line_origin_pos = self._lineno, self._pos
""",
            ),
            Edit(
                "pycparser/c_lexer.py",
                """        column = pos - self._line_start + 1
        tok = Token(tok_type, value, self._lineno, column, self._filename)
""",
                """        text = self._lexdata
        lineno = self._line_origin + text.count("\\n", self._line_origin_pos, pos)
        column = pos - (text.rfind("\\n", 0, pos) + 1) + 1
        tok = Token(tok_type, value, lineno, column, self._filename)
""",
            ),
        ),
    ),
    Case(
        name="pycparser-peek-no-memo",
        program="pycparser",
        kind="regression",
        function="pycparser/c_parser.py:CParser._peek",
        counter=CALLS,
        what="removed memoisation: _peek classifies the peeked token (ID/TYPEID) on every call instead "
        "of once per token, so calls of CParser._classify_identifier and _is_type_in_scope grow ~3x",
        edits=(
            Edit(
                "pycparser/c_parser.py",
                """        tok = self._tokens.peek(k)
        if tok is not self._typedef_checked_token:
            self._classify_identifier(tok)
        return tok
""",
                """        tok = self._tokens.peek(k)
        self._classify_identifier(tok)
        return tok
""",
            ),
        ),
    ),
    Case(
        name="pycparser-sort-bucket",
        program="pycparser",
        kind="regression",
        function="pycparser/c_lexer.py:CLexer._match_token",
        counter=CPU,
        what="sorting inside the hot loop: the operator/punctuator candidates for the current character "
        "are sorted longest first for every token instead of relying on the pre-sorted bucket",
        edits=(
            Edit(
                "pycparser/c_lexer.py",
                """        if bucket := _fixed_tokens_by_first.get(text[pos]):
            for entry in bucket:
""",
                """        if bucket := _fixed_tokens_by_first.get(text[pos]):
            for entry in sorted(bucket, key=lambda e: len(e.literal), reverse=True):
""",
            ),
        ),
    ),
    Case(
        name="pycparser-lock-contention",
        program="pycparser",
        kind="regression",
        function="pycparser/c_lexer.py:CLexer.token",
        counter=SWITCHES,
        what="lock contention: token() counts tokens under a module lock that a progress-reporter "
        "thread (started on import) takes every millisecond and holds across an os.write",
        edits=(
            Edit("pycparser/c_lexer.py", "import re\n", "import os\nimport re\nimport threading\nimport time\n"),
            Edit(
                "pycparser/c_lexer.py",
                """class CLexer:
    \"\"\"A standalone lexer for C.
""",
                """# Tokens lexed so far, published by a reporter thread; guarded by _progress_lock.
_progress_lock = threading.Lock()
_progress = {"tokens": 0}
_progress_fd = os.open(os.devnull, os.O_WRONLY)


def _report_progress() -> None:
    while True:
        time.sleep(0.001)
        with _progress_lock:
            os.write(_progress_fd, b"%d tokens\\n" % _progress["tokens"])


threading.Thread(target=_report_progress, name="c-lexer-progress", daemon=True).start()


class CLexer:
    \"\"\"A standalone lexer for C.
""",
            ),
            Edit(
                "pycparser/c_lexer.py",
                """        if self._pending_tok is not None:
            tok = self._pending_tok
            self._pending_tok = None
            return tok
""",
                """        with _progress_lock:
            _progress["tokens"] += 1

        if self._pending_tok is not None:
            tok = self._pending_tok
            self._pending_tok = None
            return tok
""",
            ),
        ),
    ),
    Case(
        name="pycparser-deepcopy-declspec",
        program="pycparser",
        kind="regression",
        function="pycparser/c_parser.py:CParser._add_declaration_specifier",
        counter=CPU,
        what="defensive copy.deepcopy of the declaration-specifier dict (with its AST nodes and coords) "
        "every time a specifier is added",
        edits=(
            Edit(
                "pycparser/c_parser.py",
                "from collections.abc import Callable\n",
                "import copy\nfrom collections.abc import Callable\n",
            ),
            Edit(
                "pycparser/c_parser.py",
                """        else:
            spec = declspec

        if kind == "type":
""",
                """        else:
            # Don't mutate the caller's specifiers.
            spec = copy.deepcopy(declspec)

        if kind == "type":
""",
            ),
        ),
    ),
    # ------------------------------------------------------------------ pycparser: neutral
    Case(
        name="pycparser-rename-classify",
        program="pycparser",
        kind="neutral",
        function="pycparser/c_parser.py:CParser._classify_identifier",
        counter="",
        what="rename CParser._classify_identifier to _classify_name_token and its two call sites",
        edits=(
            Edit(
                "pycparser/c_parser.py",
                "    def _classify_identifier(self, tok: Token | None) -> None:\n",
                "    def _classify_name_token(self, tok: Token | None) -> None:\n",
            ),
            Edit(
                "pycparser/c_parser.py",
                """        tok = self._tokens.peek(k)
        if tok is not self._typedef_checked_token:
            self._classify_identifier(tok)
""",
                """        tok = self._tokens.peek(k)
        if tok is not self._typedef_checked_token:
            self._classify_name_token(tok)
""",
            ),
            Edit(
                "pycparser/c_parser.py",
                """            self._parse_error("At end of input", self.clex.filename)
        if tok is not self._typedef_checked_token:
            self._classify_identifier(tok)
""",
                """            self._parse_error("At end of input", self.clex.filename)
        if tok is not self._typedef_checked_token:
            self._classify_name_token(tok)
""",
            ),
        ),
    ),
    Case(
        name="pycparser-visit-hints-docs",
        program="pycparser",
        kind="neutral",
        function="pycparser/c_ast.py:NodeVisitor.visit",
        counter="",
        what="add type hints to NodeVisitor.visit and its locals and expand its docstring",
        edits=(
            Edit(
                "pycparser/c_ast.py",
                """    def visit(self, node: Node):
        \"\"\"Visit a node.\"\"\"

        if self._method_cache is None:
            self._method_cache = {}

        visitor = self._method_cache.get(node.__class__.__name__, None)
""",
                """    def visit(self, node: Node) -> Any:
        \"\"\"Visit a node: call visit_<ClassName>(node) if the visitor defines it,
        generic_visit(node) otherwise. The method found is cached per class name.\"\"\"

        if self._method_cache is None:
            self._method_cache = {}

        visitor: Any = self._method_cache.get(node.__class__.__name__, None)
""",
            ),
        ),
    ),
    Case(
        name="pycparser-reorder-match-token",
        program="pycparser",
        kind="neutral",
        function="pycparser/c_lexer.py:CLexer._match_token",
        counter="",
        what="reorder the two independent local loads at the top of _match_token (pos before text)",
        edits=(
            Edit(
                "pycparser/c_lexer.py",
                """        text = self._lexdata
        pos = self._pos
        # Attribute arguments are balanced token sequences, not C expressions.
""",
                """        pos = self._pos
        text = self._lexdata
        # Attribute arguments are balanced token sequences, not C expressions.
""",
            ),
        ),
    ),
    # ------------------------------------------------------------------ mistune: regressions
    Case(
        name="mistune-trigger-recompile",
        program="mistune",
        kind="regression",
        function="mistune/inline_parser.py:InlineParser._get_fast_trigger_re",
        counter=CPU,
        what="the fast-text trigger regex is rebuilt (re.escape + re.compile, served from re's cache) on "
        "every call instead of being kept on the parser",
        edits=(
            Edit(
                "mistune/inline_parser.py",
                """        key = tuple(sorted(chars))
        if self._fast_trigger_re is None or self._fast_trigger_re_chars != key:
            pattern = "[" + re.escape("".join(key)) + "]"
            self._fast_trigger_re = re.compile(pattern)
            self._fast_trigger_re_chars = key
        assert self._fast_trigger_re is not None
        return self._fast_trigger_re
""",
                """        key = tuple(sorted(chars))
        pattern = "[" + re.escape("".join(key)) + "]"
        return re.compile(pattern)
""",
            ),
        ),
    ),
    Case(
        name="mistune-trigger-chars-no-memo",
        program="mistune",
        kind="regression",
        function="mistune/inline_parser.py:InlineParser._get_fast_trigger_chars",
        counter=CPU,
        what="removed memoisation: the set of characters that can start an inline rule is rebuilt from "
        "the rule list on every call instead of being cached on the parser",
        edits=(
            Edit(
                "mistune/inline_parser.py",
                """        chars = self._fast_trigger_chars
        if chars is not None:
            return chars

        chars = set()
        for name in self.rules:
            rule_chars = self._rule_start_chars.get(name, _KNOWN_RULE_START_CHARS.get(name))
            if rule_chars is None:
                self._fast_trigger_chars = None
                return None
            chars.update(rule_chars)
        self._fast_trigger_chars = chars
        return chars
""",
                """        # Not cached: plugins may add rules after the parser was built.
        chars = set()
        for name in self.rules:
            rule_chars = self._rule_start_chars.get(name, _KNOWN_RULE_START_CHARS.get(name))
            if rule_chars is None:
                return None
            chars.update(rule_chars)
        return chars
""",
            ),
        ),
    ),
    Case(
        name="mistune-render-concat",
        program="mistune",
        kind="regression",
        function="mistune/core.py:BaseRenderer.render_tokens",
        counter=FAULTS,
        what="quadratic string concatenation: rendered pieces are accumulated with out = f'{out}{text}' "
        "(a new string, copying the output so far, per piece) instead of ''.join; the large "
        "intermediate strings move page faults more than CPU time",
        edits=(
            Edit(
                "mistune/core.py",
                """    def render_tokens(self, tokens: Iterable[Dict[str, Any]], state: BlockState) -> str:
        return "".join(self.iter_tokens(tokens, state))
""",
                """    def render_tokens(self, tokens: Iterable[Dict[str, Any]], state: BlockState) -> str:
        out = ""
        for text in self.iter_tokens(tokens, state):
            out = f"{out}{text}"
        return out
""",
            ),
        ),
    ),
    Case(
        name="mistune-state-cycle",
        program="mistune",
        kind="regression",
        function="mistune/markdown.py:Markdown.parse",
        counter=FAULTS,
        what="garbage-collector pressure: parse() stores the root state in its own env "
        "(state.env['root_state'] = state), a reference cycle that keeps each document's whole state "
        "and token tree alive until a full collection",
        edits=(
            Edit(
                "mistune/markdown.py",
                """        state.process(s)

        for hook in self.before_parse_hooks:
""",
                """        state.process(s)
        # Let plugins reach the document's root state from any nested state.
        state.env["root_state"] = state

        for hook in self.before_parse_hooks:
""",
            ),
        ),
    ),
    # ------------------------------------------------------------------ mistune: neutral
    Case(
        name="mistune-rename-split-locals",
        program="mistune",
        kind="neutral",
        function="mistune/_inline/emphasis.py:_split_text_token",
        counter="",
        what="rename the locals of _split_text_token (pos -> cursor, end -> run_end, length -> run_length)",
        edits=(
            Edit(
                "mistune/_inline/emphasis.py",
                """    text = token["raw"]
    pos = 0
    while pos < len(text):
        if text[pos] not in "*_":
            end = _next_delimiter_run(text, pos)
            parts.append({"type": "text", "raw": text[pos:end]})
            pos = end
            continue

        marker = text[pos]
        end = pos
        while end < len(text) and text[end] == marker:
            end += 1
        length = end - pos
        absolute = source_start + pos
        can_open = _can_open_emphasis(source, absolute, length, marker)
        can_close = _can_close_emphasis(source, absolute, length, marker)
        index = len(parts)
        parts.append({"type": "text", "raw": text[pos:end]})
        if can_open or can_close:
            delimiters.append(_Delimiter(index, marker, length, can_open, can_close, length, len(delimiters)))
        pos = end
""",
                """    text = token["raw"]
    cursor = 0
    while cursor < len(text):
        if text[cursor] not in "*_":
            run_end = _next_delimiter_run(text, cursor)
            parts.append({"type": "text", "raw": text[cursor:run_end]})
            cursor = run_end
            continue

        marker = text[cursor]
        run_end = cursor
        while run_end < len(text) and text[run_end] == marker:
            run_end += 1
        run_length = run_end - cursor
        absolute = source_start + cursor
        can_open = _can_open_emphasis(source, absolute, run_length, marker)
        can_close = _can_close_emphasis(source, absolute, run_length, marker)
        index = len(parts)
        parts.append({"type": "text", "raw": text[cursor:run_end]})
        if can_open or can_close:
            delimiters.append(
                _Delimiter(index, marker, run_length, can_open, can_close, run_length, len(delimiters))
            )
        cursor = run_end
""",
            ),
        ),
    ),
    Case(
        name="mistune-inline-is-punctuation",
        program="mistune",
        kind="neutral",
        function="mistune/_inline/emphasis.py:_can_open_emphasis",
        counter="",
        what="inline the tiny helper _is_punctuation into _can_open_emphasis and _can_close_emphasis "
        "(its only callers) and remove it",
        edits=(
            Edit(
                "mistune/_inline/emphasis.py",
                """    if next_char.isspace():
        return False
    if _is_punctuation(next_char) and not previous.isspace() and not _is_punctuation(previous):
        return False
    return True
""",
                """    if next_char.isspace():
        return False
    if (
        not next_char.isspace() and not next_char.isalnum()
        and not previous.isspace()
        and not (not previous.isspace() and not previous.isalnum())
    ):
        return False
    return True
""",
            ),
            Edit(
                "mistune/_inline/emphasis.py",
                """    if previous.isspace():
        return False
    if _is_punctuation(previous) and not next_char.isspace() and not _is_punctuation(next_char):
        return False
    return True


def _is_punctuation(char: str) -> bool:
    return not char.isspace() and not char.isalnum()
""",
                """    if previous.isspace():
        return False
    if (
        not previous.isspace() and not previous.isalnum()
        and not next_char.isspace()
        and not (not next_char.isspace() and not next_char.isalnum())
    ):
        return False
    return True
""",
            ),
        ),
    ),
    Case(
        name="mistune-extract-split-tokens",
        program="mistune",
        kind="neutral",
        function="mistune/_inline/emphasis.py:finalize_emphasis_tokens",
        counter="",
        what="extract finalize_emphasis_tokens' splitting loop into a helper _split_tokens",
        edits=(
            Edit(
                "mistune/_inline/emphasis.py",
                """    parts: List[Dict[str, Any]] = []
    delimiters: List[_Delimiter] = []
    source = _emphasis_source_text(tokens)
    source_pos = 0
    for token in tokens:
        if token["type"] == "text" and token.get("_emphasis", True):
            _split_text_token(token, source, source_pos, parts, delimiters)
        else:
            parts.append(_clean_emphasis_token(token))
        source_pos += _emphasis_source_length(token)

    if _process_dense_emphasis(parts, delimiters):
        return _merge_text_tokens(parts)

    _process_emphasis_delimiters(parts, delimiters, max_depth)
    return _merge_text_tokens(parts)
""",
                """    parts, delimiters = _split_tokens(tokens)
    if _process_dense_emphasis(parts, delimiters):
        return _merge_text_tokens(parts)

    _process_emphasis_delimiters(parts, delimiters, max_depth)
    return _merge_text_tokens(parts)


def _split_tokens(tokens: List[Dict[str, Any]]) -> Tuple[List[Dict[str, Any]], List[_Delimiter]]:
    \"\"\"Split text tokens at emphasis delimiter runs; returns the parts and the delimiters.\"\"\"
    parts: List[Dict[str, Any]] = []
    delimiters: List[_Delimiter] = []
    source = _emphasis_source_text(tokens)
    source_pos = 0
    for token in tokens:
        if token["type"] == "text" and token.get("_emphasis", True):
            _split_text_token(token, source, source_pos, parts, delimiters)
        else:
            parts.append(_clean_emphasis_token(token))
        source_pos += _emphasis_source_length(token)
    return parts, delimiters
""",
            ),
        ),
    ),
)


def apply(case: Case, app: Path) -> None:
    """Apply the case's edits to the package copy under app (raises ValueError if an old text does not occur exactly once)."""
    app = Path(app)
    for edit in case.edits:
        path = app / edit.file
        text = path.read_text(encoding="utf-8")
        found = text.count(edit.old)
        if found != 1:
            raise ValueError(f"{case.name}: the old text of an edit occurs {found} times in {edit.file}, not once")
        path.write_text(text.replace(edit.old, edit.new, 1), encoding="utf-8")
