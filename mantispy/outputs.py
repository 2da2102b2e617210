"""Where mantispy may write: never over the program, its campaign spec, its store or its work folder, and
never over a file or folder mantispy did not write.

Every writer (``build -o``, ``build --frontier``, ``report -o``, ``export -o``, ``slice -o``,
``callgraph -o``, ``fidelity -o``) asks here first; a refusal is an :class:`OutputError` with one line
naming the path, what it would have destroyed, and what to do instead.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

REPORT_MARK = '<meta name="generator" content="mantispy report">'
"""The line every HTML report carries in its head: how ``report -o`` knows a file it may replace."""


class OutputError(Exception):
    """A writer would write over something it must not (the message says what and how to avoid it)."""


def _resolved(path: Path) -> Path:
    return Path(path).expanduser().resolve()


def refuse_overlap(out: Path, protected: Mapping[str, Path | None], option: str = "-o") -> None:
    """Refuse an ``out`` that is, contains, or lies inside any protected path (``{what: path}``; a
    protected file only by being it or lying below ``out``)."""
    target = _resolved(out)
    for what, path in protected.items():
        if path is None:
            continue
        guarded = _resolved(path)
        if target == guarded or target in guarded.parents:
            raise OutputError(f"{out}: {'is' if target == guarded else 'holds'} the {what} ({path}); mantispy never "
                              f"writes over it: choose {option} elsewhere")
        if guarded.is_dir() and guarded in target.parents:
            raise OutputError(f"{out}: lies inside the {what} ({path}); mantispy writes nothing there: choose "
                              f"{option} outside it")


def check_folder(out: Path, is_ours: Callable[[Path], bool], what: str, option: str = "-o") -> None:
    """``out`` may be new, an empty folder, or a folder ``is_ours`` recognises (an earlier output)."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise OutputError(f"{out}: exists and is not a folder; choose another {option}")
    if out.is_dir() and any(out.iterdir()) and not is_ours(out):
        raise OutputError(f"{out}: not empty and not an earlier {what}; mantispy replaces only folders it wrote: "
                          f"choose a new or empty folder for {option}")


def check_file(out: Path, is_ours: Callable[[Path], bool], what: str, force: bool = False, option: str = "-o",
               can_force: bool = True) -> None:
    """``out`` may be new, or a file ``is_ours`` recognises (an earlier output); another existing file only
    with ``force`` (the user named it and asked to replace it; ``can_force``: the verb has --force). Never a
    folder."""
    out = Path(out)
    if out.is_dir():
        raise OutputError(f"{out}: is a folder; give {option} a file name")
    if out.exists() and not force and not is_ours(out):
        raise OutputError(f"{out}: exists and is not an earlier {what}; choose another {option}"
                          + (" (or pass --force to replace it)" if can_force else " (mantispy does not write over files)"))


def is_report(path: Path) -> bool:
    """The file is an HTML report mantispy wrote (its head carries :data:`REPORT_MARK`)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            head = handle.read(4096)
    except OSError:
        return False
    return REPORT_MARK in head


def is_predictor(path: Path) -> bool:
    """The folder is a predictor package mantispy wrote (its models.json says so)."""
    import json

    try:
        data = json.loads((Path(path) / "models.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and data.get("format") == "mantispy-predictor-models"
