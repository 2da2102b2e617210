"""Counters of a mantispy feature evaluator (copied into each evaluator as ``_mantis_eval.py``;
standard library only).

Sliced modules run ``import _mantis_eval as _mantis_e; _mantis_k, _mantis_n, _mantis_vg, _mantis_rec =
_mantis_e.register()`` and then tick ``_mantis_n(_mantis_k[j])`` or record ``_mantis_vg[j] and
_mantis_rec(j, value)``, as instrumented code does with the mantispy run-time, whose value rules this
module shares (``_mantis_values`` is a copy of :mod:`mantispy.runtime.values`): per thread, the first K
recordable values; a thread gives a variable up after 4K unrecordable values; version V is averaged over
the threads that recorded it. Slot j is one counter feature or one variable (all wanted versions of a
variable share its slot); a counter whose slot is in ``DEDUCTIONS`` is its count less the deducted slot's
(an else arm: its chain's entries less its arms taken). The slice's features, slots and K come from
``_mantis_build``.
"""

import itertools
import threading

from _mantis_build import FEATURES, SLOTS, K

try:
    from _mantis_build import DEDUCTIONS
except ImportError:  # an evaluator written before deductions existed
    DEDUCTIONS = {}
from _mantis_values import mean, number

COUNTERS = tuple(itertools.count(1) for _ in range(SLOTS))
GUARDS = [K > 0] * SLOTS
_stores: list = []
_local = threading.local()
_lock = threading.Lock()
_limbo = getattr(threading, "_limbo", None)
_active = getattr(threading, "_active", None)
_start = None


def register():
    """``(_mantis_k, _mantis_n, _mantis_vg, _mantis_rec)`` for a sliced module."""
    return COUNTERS, next, GUARDS, _rec


def reset():
    """Start from zero (before each evaluation; the sliced modules are imported afresh)."""
    global COUNTERS, _local
    COUNTERS = tuple(itertools.count(1) for _ in range(SLOTS))
    GUARDS[:] = [K > 0] * SLOTS
    del _stores[:]
    _local = threading.local()


def count(slot=0):
    """Ticks of one slot's counter so far."""
    return int(repr(COUNTERS[slot])[6:-1]) - 1


def _single_thread():
    if type(_limbo) is dict and type(_active) is dict:
        return len(_limbo) + len(_active) == 1
    return threading.active_count() == 1


def _store():
    local = _local
    try:
        return local.store
    except AttributeError:
        store = local.store = [[] for _ in range(SLOTS)]
        local.misses = [0] * SLOTS
        with _lock:
            _stores.append(store)
        return store


def _rec(j, value):
    lst = _store()[j]
    if len(lst) < K:
        recorded = number(value)
        if recorded is None:
            misses = _local.misses
            misses[j] += 1
            if misses[j] < 4 * K:
                return value
            if _single_thread():
                GUARDS[j] = False
            return value
        lst.append(recorded)
        if len(lst) < K:
            return value
    if _single_thread():
        GUARDS[j] = False
    return value


def _value_of(slot, version):
    if version is None:
        return count(slot) - count(DEDUCTIONS[slot]) if slot in DEDUCTIONS else count(slot)
    i = version - 1
    averaged = mean([store[slot][i] for store in list(_stores) if len(store[slot]) > i])
    return 0 if averaged is None else averaged


def value():
    """The first feature's value: its count, or its version of the variable (0 if never recorded)."""
    _, slot, version = FEATURES[0]
    return _value_of(slot, version)


def values():
    """Every feature's value, by feature id."""
    return {fid: _value_of(slot, version) for fid, slot, version in FEATURES}


def install():
    """Starting a thread turns the value guards on again (each thread records its own first K values)."""
    global _start
    if _start is not None:
        return
    original = _start = threading.Thread.start

    def start(self):
        GUARDS[:] = [K > 0] * SLOTS
        try:
            return original(self)
        finally:
            GUARDS[:] = [K > 0] * SLOTS

    threading.Thread.start = start


def uninstall():
    """Undo :func:`install`."""
    global _start
    if _start is not None:
        threading.Thread.start = _start
        _start = None
