"""What instrumented code calls at run time: ``register`` and the objects it returns.

Every instrumented module runs, near its top::

    import mantispy.runtime.counters as _mantis_rt; _mantis_k, _mantis_n, _mantis_vg, _mantis_rec = \
        _mantis_rt.register("rel/path.py", (COUNTER_IDS...), (VARIABLE_IDS...), K)

* A counter tick is ``_mantis_n(_mantis_k[i])``: the builtin ``next`` on an ``itertools.count(1)``,
  always truthy, no Python-level call and no lock.  The count of ``c`` is
  ``int(repr(c)[6:-1]) - 1``.
* A value is recorded by ``_mantis_vg[j] and _mantis_rec(j, value)`` (variables a statement assigns
  together: ``_mantis_gg[g] and _mantis_rec(-1 - g, (v1, v2, ...))``, one guard for the group, off once
  each member's is).  Each thread keeps its own
  first ``k`` recordable values of each variable: int/float/bool as numbers (bool as 0/1; NaN,
  infinities and ints beyond the float range are skipped), ``str``/``bytes``/``bytearray``/``list``/
  ``tuple``/``dict``/``set``/``frozenset``/``range``/``memoryview`` and other builtin sized types as
  ``len()``; anything else is not recorded and uses no version slot (``len()`` is never called on
  a user type), and after ``4k`` such values a thread gives the variable up, so one that only ever
  holds objects or None stops costing a call per assignment.  Once the calling thread holds ``k`` values of variable j while the process has a
  single live thread, ``_mantis_vg[j]`` turns False so the guard short-circuits; starting a thread
  (``threading.Thread.start``) or forking turns every guard on again.
* At exit (normal end, ``sys.exit``, uncaught exception, SIGTERM) and if ``MANTIS_FEATURES_OUT`` is
  set, the root process writes ``{feature_id: value}`` as JSON, atomically: counter ids map to
  counts, variable ``v`` to ``v#1 .. v#k`` (each version averaged over the threads, of all
  processes, that recorded it); zero counts and unrecorded versions are omitted.  Child processes
  (``os.fork``, ``multiprocessing`` with fork, spawn or forkserver, or any subprocess that imports
  instrumented code) write parts into ``<MANTIS_FEATURES_OUT>.parts/`` that the root merges.

Limitations:

* ``os._exit`` (and SIGKILL, or a crash) loses the results of that process; a plain ``os.fork``
  child must leave through ``sys.exit``/normal end (multiprocessing children are handled).
* Children that outlive the root process are lost (their part has nowhere to go).
* The SIGTERM handler is installed only when the first ``register`` of the process runs in the
  main thread and SIGTERM still has its default disposition.  Python runs signal handlers between
  bytecodes: a SIGTERM that lands just before the main thread blocks in a long system call is
  handled (and the process dies) only when that call returns.  multiprocessing pool workers wait
  for tasks with timeouts for this reason, so ``Pool.terminate`` cannot hang on it.
* The root is the first process that registers (``MANTIS_ROOT_PID`` unset); when the program's
  first process is not instrumented, each of its instrumented children believes it is a root.
* Threads started without ``threading.Thread.start`` (``_thread.start_new_thread``, threads made
  in C) do not turn the guards back on, so they may record nothing.
* On free-threaded builds (no GIL), ``next()`` on a shared ``itertools.count`` is not guaranteed
  atomic: counter increments from several threads may race and be lost.
"""

from __future__ import annotations

import threading

from . import collector as _collector
from . import values as _values
from .collector import Number

TYPE_CHECKING = False
if TYPE_CHECKING:  # no run-time import of typing (start-up cost)
    from collections.abc import Callable
    from typing import Any

__all__ = ["register", "snapshot", "reset", "write"]

_FLOAT_MAX_INT = _values.FLOAT_MAX_INT


def register(file: str, counter_ids: tuple[str, ...], variable_ids: tuple[str, ...],
             k: int, derived: tuple = (), groups: tuple = ()) -> tuple[Any, ...]:
    """Register an instrumented file; return ``(_mantis_k, _mantis_n, _mantis_vg, _mantis_rec)``, and
    ``_mantis_gg`` after them when ``groups`` are given.

    ``derived``: counts that have no probe, ``((feature_id, ((counter index, coefficient), ...)), ...)``,
    each the sum of its counters' counts times their coefficients (an else arm: its statement's entries
    minus its arms), computed whenever the counts are collected. ``groups``: tuples of variable indexes
    recorded together (``_mantis_gg[g] and _mantis_rec(-1 - g, (v1, v2, ...))``); group g's guard
    ``_mantis_gg[g]`` turns False once every member's has.

    ``_mantis_k``: one ``itertools.count(1)`` per counter id; ``_mantis_n``: builtin ``next``;
    ``_mantis_vg``: one guard per variable id; ``_mantis_rec(j, value)``: record ``value`` for the
    calling thread and return it unchanged.  The same file with the same ids (and k) gives the
    same objects.  The first call in a process installs the exit, SIGTERM, thread and fork hooks.
    """
    key = (file, tuple(counter_ids), tuple(variable_ids), int(k))
    reg = _collector.registry.get(key)
    if reg is None:
        with _collector.get_lock():
            _collector.ensure_installed()
            reg = _collector.registry.get(key)
            if reg is None:
                reg = _collector.Registration(*key, derived=tuple(derived), groups=tuple(groups))
                reg.rec = _make_rec(reg)
                _collector.add(reg)
    assert reg.rec is not None
    if groups:
        return reg.counters, next, reg.guards, reg.rec, reg.group_guards
    return reg.counters, next, reg.guards, reg.rec


def _make_rec(reg: _collector.Registration) -> Callable[[int, Any], Any]:
    """Build the ``_mantis_rec`` of a registration (a closure over the registration's state)."""
    local = reg.local
    guards = reg.guards
    k = reg.k
    new_store = reg.new_store
    limbo, active = _thread_tables()
    convert = _convert
    big = _FLOAT_MAX_INT
    give_up = 4 * k

    groups = reg.groups
    group_guards = reg.group_guards

    def _mantis_rec(j: int, value: Any) -> Any:
        if j < 0:  # a group: its members that still want values, then its guard off once none does
            members = groups[-1 - j]
            for member, item in zip(members, value):
                if guards[member]:
                    _mantis_rec(member, item)
            for member in members:
                if guards[member]:
                    return value
            group_guards[-1 - j] = False
            return value
        try:
            lst = local.store[j]
        except AttributeError:
            lst = new_store()[j]
        if len(lst) < k:
            cls = type(value)
            if cls is int:
                if -big <= value <= big:
                    lst.append(value)
            elif cls is float:
                if value - value == 0.0:  # finite (NaN and infinities give NaN)
                    lst.append(value)
            elif cls is str or cls is list or cls is tuple or cls is dict:
                lst.append(len(value))
            elif cls is bool:
                lst.append(1 if value else 0)
            else:
                number = convert(value, cls)
                if number is not None:
                    lst.append(number)
                else:
                    # A variable that keeps holding unrecordable values (objects, None) is given up
                    # after 4k of them in this thread, so it stops costing a call per assignment.
                    misses = local.__dict__.setdefault("misses", {})
                    missed = misses[j] = misses.get(j, 0) + 1
                    if missed < give_up:
                        return value
                    if len(limbo) + len(active) == 1:
                        guards[j] = False
                    return value
            if len(lst) < k:
                return value
        if len(limbo) + len(active) == 1:   # a single live thread
            guards[j] = False
        return value

    return _mantis_rec


class _ActiveCount:
    """Fallback for ``_thread_tables``: ``len()`` is ``threading.active_count()``."""

    def __len__(self) -> int:
        return threading.active_count()


def _thread_tables() -> tuple[Any, Any]:
    """``(threading._limbo, threading._active)``: ``len(limbo) + len(active)`` is
    ``threading.active_count()`` without its lock (about 10x cheaper, and ``rec`` runs it on every
    call of a saturated variable while several threads live).  Reading ``_limbo`` first never
    undercounts a thread moving from ``_limbo`` to ``_active`` (added there before removed here).
    Falls back to ``active_count()`` when these tables are missing."""
    limbo = getattr(threading, "_limbo", None)
    active = getattr(threading, "_active", None)
    if type(limbo) is dict and type(active) is dict:
        return limbo, active
    return (), _ActiveCount()


_convert = _values.convert


def snapshot() -> dict[str, Number]:
    """Merged flat ``{feature_id: value}`` of this process (plus finished children in the root),
    in the format of the output file."""
    return _collector.snapshot()


def reset() -> None:
    """Zero every count, forget every recorded value and re-enable every guard (for tests)."""
    _collector.reset()


def write(path: str) -> None:
    """Write ``snapshot()`` as JSON to ``path`` (atomically)."""
    _collector.write_json_atomic(path, snapshot())
