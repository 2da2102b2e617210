"""Which values a variable feature records, and as what number: the one rule shared by the runtime and
by emitted feature evaluators (which get a verbatim copy of this file, so it imports nothing but the
standard library and nothing relative).

int/float/bool are recorded as numbers (bool as 0/1; NaN, infinities and ints beyond the float range
are skipped); builtin sized types (str, bytes, list, dict, set, ... and any static builtin type with
``__len__``) as ``len()``; int and float subclasses by their int/float value, read without running user
code; anything else is not recorded (``len()`` is never called on a user type). A variable's version
seen by several threads or processes is their :func:`mean`.
"""

from __future__ import annotations

import math
import sys

FLOAT_MAX_INT = int(sys.float_info.max)
"""Largest int that converts to float without overflow (ints beyond it are skipped)."""

SIZED_BUILTINS = frozenset({str, bytes, bytearray, list, tuple, dict, set, frozenset, range, memoryview})
_NOT_SIZED = frozenset({type(type.__dict__)})  # mappingproxy: its len() may run user code
_HEAPTYPE = 1 << 9
_type_flags = type.__dict__["__flags__"].__get__
_type_module = type.__dict__["__module__"].__get__
_sized_cache: dict = {}


def number(value):
    """The number recorded for ``value``, or None when it is not recorded."""
    cls = type(value)
    if cls is int:
        return value if -FLOAT_MAX_INT <= value <= FLOAT_MAX_INT else None
    if cls is float:
        return value if value - value == 0.0 else None  # finite (NaN and infinities give NaN)
    if cls is bool:
        return 1 if value else 0
    return convert(value, cls)


def convert(value, cls):
    """Slow path of :func:`number` for types other than exactly int/float/bool."""
    try:
        if cls in SIZED_BUILTINS or is_builtin_sized(cls):
            return len(value)
        if issubclass(cls, int):  # IntEnum, user int subclasses: int value, no user code
            n = int.__index__(value)
            return n if -FLOAT_MAX_INT <= n <= FLOAT_MAX_INT else None
        if issubclass(cls, float):
            n = float.__float__(value)
            return n if n - n == 0.0 else None
    except Exception:
        pass
    return None


def is_builtin_sized(cls) -> bool:
    """Whether ``cls`` is a static type of the builtins module that defines ``__len__``."""
    if _type_flags(cls) & _HEAPTYPE:  # user classes (even with a forged __module__)
        return False
    known = _sized_cache.get(cls)
    if known is None:
        known = (cls not in _NOT_SIZED and _type_module(cls) == "builtins"
                 and any("__len__" in vars(base) for base in cls.__mro__))
        _sized_cache[cls] = known
    return known


def mean(numbers):
    """The average of the finite numbers among ``numbers`` (None when there are none): exact for ints
    whose total divides evenly, else a float; a float total beyond the float range is averaged on the
    numbers scaled by the largest, instead of overflowing."""
    nums = [x for x in numbers if isinstance(x, (int, float)) and x - x == 0]  # finite only
    if not nums:
        return None
    n = len(nums)
    if all(type(x) is int for x in nums):
        total = sum(nums)
        return total // n if total % n == 0 else total / n
    try:
        averaged = math.fsum(nums) / n
    except OverflowError:  # a total beyond the float range: average the numbers scaled to [-1, 1]
        scale = max(abs(x) for x in nums)
        averaged = scale * (math.fsum(x / scale for x in nums) / n)
    return averaged if averaged - averaged == 0 else None
