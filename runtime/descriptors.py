"""What a black box sees of an input: the numbers on its command line (or in its keyword arguments)
and the sizes of its input files. Standard library only: predictor packages carry a copy of this file
and compute the same numbers at prediction time that the profiler stored at training time.

:func:`describe_input` makes the descriptor of one input (argv / kwargs, input file sizes);
:func:`input_numbers` turns a descriptor into named numbers (``argv[--docs]``, ``size(files[0])``).
"""

from __future__ import annotations

import os
from typing import Any

INPUT_PREFIX = "input:"
"""Column and feature-id prefix of the descriptor's numbers in data frames and models."""


def argv_files(argv: list[str], cwd: str | None = None) -> list[str]:
    """The arguments that name existing files (relative to ``cwd``), in order: the input files a
    predictor assumes when it is not told which files an input reads."""
    base = cwd or os.getcwd()
    found = []
    for arg in argv:
        if arg.startswith("-") or not arg:
            continue
        path = arg if os.path.isabs(arg) else os.path.join(base, arg)
        if os.path.isfile(path):
            found.append(arg)
    return found


def describe_input(argv: list[str] | None = None, kwargs: dict[str, Any] | None = None,
                   files: list[str] | None = None, cwd: str | None = None) -> dict[str, Any]:
    """The descriptor of one input: its argv, keyword arguments and the sizes of its input files
    (``files``; by default the arguments that name existing files, see :func:`argv_files`)."""
    argv = [str(a) for a in (argv or [])]
    base = cwd or os.getcwd()
    names = argv_files(argv, cwd) if files is None else list(files)
    sizes = {}
    for name in names:
        path = name if os.path.isabs(name) else os.path.join(base, name)
        sizes[name] = os.stat(path).st_size
    descriptor: dict[str, Any] = {"argv": argv, "file_sizes": sizes}
    if kwargs is not None:
        descriptor["kwargs"] = kwargs
    return descriptor


def prefixed_numbers(descriptor: dict[str, Any]) -> dict[str, float]:
    """:func:`input_numbers` with the ``input:`` prefix models use for them."""
    return {INPUT_PREFIX + name: value for name, value in input_numbers(descriptor).items()}


def input_numbers(descriptor: dict[str, Any]) -> dict[str, float]:
    """The numbers visible in an input descriptor: what a black-box model knows about an input (the
    paper's baseline), named so that the same knob gets the same column across inputs.

    * argv: a number after an option is named by the option (``argv[--repeat]``), a lone number by its
      position (``argv[0]``); an option without a value is 1 when present (``argv[--reindent]``), and an
      option with a short word value is one-hot (``argv[--mode=parse]``);
    * kwargs: numbers by key (``kwargs.scale``), the length of strings and containers (``len(kwargs.items)``);
    * input files, by their position in the input's file list, not their name (``size(files[0])``), and
      their total (``size(files)``).
    """
    numbers: dict[str, float] = {}
    argv = [str(a) for a in (descriptor.get("argv", []) or [])]
    for n, arg in enumerate(argv):
        value = _number(arg)
        previous = argv[n - 1] if n else None
        if value is not None:
            named = previous is not None and _is_option(previous)
            numbers[f"argv[{previous}]" if named else f"argv[{n}]"] = value
        elif _is_option(arg):
            follower = argv[n + 1] if n + 1 < len(argv) else None
            if follower is None or (_number(follower) is None and not _is_word(follower)):
                numbers[f"argv[{arg}]"] = 1.0  # a flag (what follows, if anything, is an option or a path)
        elif previous is not None and _is_option(previous) and _is_word(arg):
            numbers[f"argv[{previous}={arg}]"] = 1.0
    for key, arg in (descriptor.get("kwargs", {}) or {}).items():
        value = _number(arg)
        if value is not None:
            numbers[f"kwargs.{key}"] = value
        elif isinstance(arg, (str, list, tuple, dict)):
            numbers[f"len(kwargs.{key})"] = float(len(arg))
    sizes = [float(size) for size in (descriptor.get("file_sizes", {}) or {}).values()]
    for n, size in enumerate(sizes):
        numbers[f"size(files[{n}])"] = size
    if len(sizes) > 1:
        numbers["size(files)"] = sum(sizes)
    return numbers


def _is_option(arg: str) -> bool:
    return arg.startswith("-") and len(arg) > 1 and _number(arg) is None


def _is_word(arg: str) -> bool:
    """A short choice value (``parse``, ``upper``): not an option, a number or a path."""
    return 0 < len(arg) <= 24 and not _is_option(arg) and _number(arg) is None and not any(c in arg for c in "/.\\")


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None
