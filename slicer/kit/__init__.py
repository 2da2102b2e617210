"""The evaluator kit: the modules every emitted feature evaluator carries, as real, tested modules.

An evaluator folder (see :mod:`mantispy.slicer.emit`) holds the sliced program plus

* ``evaluate.py``: :mod:`.evaluate`, copied verbatim (the command line, ``evaluate_all`` and the warm
  server);
* ``_mantis_eval.py``: :mod:`.counters`, copied verbatim (the counters and value records the sliced
  modules tick);
* ``_mantis_values.py``: :mod:`mantispy.runtime.values`, copied verbatim (which values are recorded, as
  what number, and how versions are averaged: the run-time's own rules);
* ``_mantis_guard.py``: :mod:`mantispy.slicer.guard`, copied verbatim (the write guard);
* ``_mantis_confine.py``: :mod:`mantispy.slicer.confine`, copied verbatim (kernel confinement of the
  evaluation: Landlock and seccomp);
* ``_mantis_build.py``: the one generated file, the build's constants (:class:`BuildConstants`).

The copied modules import only the standard library and each other by those names, never mantispy.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mantispy.runtime import values as _values
from mantispy.slicer import confine as _confine
from mantispy.slicer import guard as _guard

_HERE = Path(__file__).resolve().parent

EVAL_MODULE = "_mantis_eval"
GUARD_MODULE = "_mantis_guard"
CONFINE_MODULE = "_mantis_confine"
VALUES_MODULE = "_mantis_values"
BUILD_MODULE = "_mantis_build"
ENTRY_FILE = "evaluate.py"
ERROR_PREFIX = "mantispy-evaluator-error: "
"""How ``evaluate.py --mantis-json`` starts the one stderr line that says why an evaluation failed."""

COPIED: dict[str, Path] = {
    f"{EVAL_MODULE}.py": _HERE / "counters.py",
    f"{VALUES_MODULE}.py": Path(_values.__file__),
    f"{GUARD_MODULE}.py": Path(_guard.__file__),
    f"{CONFINE_MODULE}.py": Path(_confine.__file__),
    ENTRY_FILE: _HERE / "evaluate.py",
}
"""Evaluator file name -> the module copied there (counters and evaluate import ``_mantis_build``, so
they are only imported inside an evaluator folder, or in tests that provide one)."""

FILES = (*COPIED, f"{BUILD_MODULE}.py")
"""Every file of the kit in an evaluator folder (a program file of the same name cannot be written)."""


@dataclass(frozen=True)
class BuildConstants:
    """What one evaluator's kit needs to know about its slice: written as ``_mantis_build.py``."""

    features: tuple[tuple[str, int, int | None], ...]
    """(feature id, slot, version of the variable or None for a counter), in the slice's order."""
    k: int
    """How many versions of each variable the program was instrumented to record."""
    entry: str
    """The program's entry: a script path, ``-m module`` or ``module:function``."""
    root_parts: tuple[str, ...]
    """The folder of the copy of the program's root, relative to the evaluator folder."""
    modules: tuple[str, ...]
    """The program's modules written into the evaluator (imported afresh by every evaluation)."""
    preload: tuple[str, ...]
    """What the warm server imports once: the modules the program imports (not the entry's)."""
    counts_on_failure: bool = False
    """Whether an evaluation that fails (the program raises or exits non-zero) still gives the counts it
    made: a sampled evaluator's, whose program may fail on a cut file as its sampled runs did."""
    deductions: tuple[tuple[int, int], ...] = ()
    """(slot, taken slot): a counter whose value is its slot's count less the taken slot's (an else arm
    counted as its ``if`` chain's entries less its arms taken, as the profile derives it)."""

    @property
    def slots(self) -> int:
        """Number of counter/record slots (a variable's versions share one slot)."""
        used = [slot for _, slot, _ in self.features] + [slot for pair in self.deductions for slot in pair]
        return max(used, default=-1) + 1

    def source(self) -> str:
        """The text of ``_mantis_build.py``: literals only."""
        ids = [fid for fid, _, _ in self.features]
        shown = ", ".join(ids[:5]) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")
        lines = [
            '"""Constants of one mantispy feature evaluator (generated).',
            "",
            f"Features: {shown}",
            f"Entry:    {self.entry}",
            '"""',
            "",
            f"FEATURES = {tuple(self.features)!r}  # (feature id, slot, version or None for a counter)",
            f"SLOTS = {self.slots!r}",
            f"K = {self.k!r}",
            f"ENTRY = {self.entry!r}",
            f"ROOT_PARTS = {tuple(self.root_parts)!r}  # the copy of the program's root, below this folder",
            f"MODULES = {tuple(self.modules)!r}  # the program's modules written here",
            f"PRELOAD = {tuple(self.preload)!r}  # what the warm server imports once",
            f"COUNTS_ON_FAILURE = {bool(self.counts_on_failure)!r}  # a failed evaluation gives its counts",
            f"DEDUCTIONS = {dict(self.deductions)!r}  # slot -> the slot whose count its value is less",
            "",
        ]
        return "\n".join(lines)


def write_kit(out_dir: Path, constants: BuildConstants) -> list[str]:
    """Write the kit into the evaluator folder ``out_dir``; returns the file names written."""
    out_dir = Path(out_dir)
    for name, module_file in COPIED.items():
        (out_dir / name).write_bytes(module_file.read_bytes())
    (out_dir / f"{BUILD_MODULE}.py").write_text(constants.source(), encoding="utf-8")
    for name in FILES:
        compile((out_dir / name).read_text(encoding="utf-8"), name, "exec")
    return list(FILES)
