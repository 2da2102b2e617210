"""The slice emitter: turn a :class:`SliceResult` into an executable *feature evaluator*.

``emit_slice(program, result, out_dir)`` writes into ``out_dir``:

* the program's files cut down to the slice (same relative paths; the packages' ``__init__.py`` files and
  the modules that kept imports name, as empty stubs when nothing of them is in the slice);
* the evaluator kit (:mod:`mantispy.slicer.kit`): ``evaluate.py`` (``evaluate(argv=None, **kwargs)``
  runs the sliced program's entry and returns the feature's value; ``python evaluate.py ARGS...`` prints
  it), ``_mantis_eval.py`` (the counters and value records), ``_mantis_values.py`` (the run-time's value
  rules), ``_mantis_guard.py`` (the write guard), ``_mantis_confine.py`` (kernel confinement) and ``_mantis_build.py`` (the slice's constants).
  Nothing in ``out_dir`` imports mantispy.

The package's modules, in pipeline order: :mod:`.source` (a file parsed once, both coordinate systems),
:mod:`.criteria` (the features, found in the instrumentor's analysis), :mod:`.planning` (what one file
keeps), :mod:`.rewriting` (the cut file with its probes), :mod:`.emission` (the program-wide import
fixpoint) and :mod:`.writing` (the evaluator folder; :func:`emit_slice`).

Slicing one file (a libcst rewrite; comments and formatting of kept code stay as they are)
--------------------------------------------------------------------------------------------
Kept spans are in :mod:`ast` coordinates (UTF-8 byte columns); libcst positions are character columns,
converted per line. A statement is *kept* when:

* simple statement: some kept span lies inside it (the statement itself, or a lambda body /
  comprehension part the slicer kept inside it);
* ``if``/``elif``/``while``: by its test; ``for``: by its iterable or target; ``with``: each item by its
  span (a kept ``with`` statement span keeps every item), a ``with`` none of whose items is kept but whose
  body is has its body hoisted in its place; ``match``: by its subject, each case by pattern..guard;
  ``except`` clause: by its span; ``def``/``class``: by its span or its qualname in ``keep_units``;
* a compound statement is also kept when anything inside it is (a nested kept statement cannot run
  without it); ``try`` is kept exactly when something inside it is. An ``elif``/``else``/``finally`` arm
  with nothing kept is dropped; a ``try`` whose handlers all go becomes ``try/finally`` or just its body
  (then its ``else`` body); a ``match`` without kept cases gets ``case _: pass``; empty bodies get
  ``pass``;
* always: the module docstring, ``from __future__`` and star imports, ``global``/``nonlocal`` declarations
  of kept scopes; ``import``/``from ... import`` statements whose bound names occur in kept code of the
  file, or that another kept ``from M import name`` needs (a name imported from a program module keeps
  the imports and the top-level ``def``/``class`` binding it there); the entry function of a
  ``module:function`` entry; every simple statement (or ``def``/``class``) binding a closure cell that a
  kept statement reads (:mod:`.cells`). Repeated to a fixpoint over the whole program.

The criterion
-------------
The feature is looked up by id in the instrumentor's own analysis of the original file
(:func:`mantispy.instrument.transformer.instrument_source`), which gives its construct's span and
``detail`` and, for values, every assignment site of the variable with the instrumentor's scope rules.
The construct is then kept even if the slice forgot it, and exactly one probe is inserted, with the
instrumentor's code builders (:mod:`mantispy.instrument.codegen`) and semantics:

* loop: ``for`` body start / ``(test) and TICK`` / comprehension clause ``if TICK``;
* branch: ``(test) and TICK`` (if, elif), ``(test) or not TICK`` (else, implicit else, on the last test),
  if-expression arms ``(TICK and (arm))``, case guard, loop-else / try-else block start; an else arm
  the profile counted with no probe (:mod:`mantispy.instrument.derivation`: its ``if`` chain's entries
  less its arms taken, so that a test that raises counts as the else) is counted the same way: a tick at
  the chain's first test and a second slot's after every arm's true test (``DEDUCTIONS`` in the kit);
* call: function body start (after the docstring), lambda ``TICK and (body)``;
* exception: handler block start;
* value ``NAME#V``: the runtime's records at every site (re-read name after the assignment, tapped
  attribute value, parameters at body start, loop targets, walrus), into per-thread stores of the first
  ``k`` recordable values (same conversion and give-up rules as :mod:`mantispy.runtime.counters`); the
  evaluator returns version V (averaged over threads), 0 when fewer were recorded.

A TICK is ``_mantis_n(_mantis_k[j])`` (``next`` on the slot's ``itertools.count`` in ``_mantis_eval.COUNTERS``), so there is no Python-level
call on the hot path; the count is ``int(repr(counter)[6:-1]) - 1``.

Limits: the evaluator runs in one process (counts of forked children are not merged; the guard refuses to
start processes); non-Python files of the program are not copied.
"""

from .errors import EmitError
from .writing import EmitReport, FileStats, emit_slice, report_json

__all__ = ["EmitError", "EmitReport", "FileStats", "emit_slice", "report_json"]
