"""Writing an evaluator folder: the sliced files, stubs for modules kept imports name, and the evaluator
kit (:mod:`mantispy.slicer.kit`); ``emit_slice`` is the emitter's entry point."""

from __future__ import annotations

import ast
import json
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

from mantispy.core.types import Span
from mantispy.slicer import kit
from mantispy.slicer.program import Program, SourceFile
from mantispy.slicer.slice_result import SliceResult

from .criteria import resolve_criteria
from .emission import Emission, entry_file_of
from .errors import EmitError


@dataclass
class FileStats:
    """Statements of one original file: how many the evaluator keeps, of how many."""

    kept: int
    total: int
    sliced: bool  # False: written as an empty stub (an import needs the module, nothing of it is kept)


@dataclass
class EmitReport:
    """What :func:`emit_slice` wrote and how to run it."""

    out_dir: Path
    files: list[str]  # every file written, relative to out_dir (POSIX), evaluator modules included
    statements: dict[str, FileStats]  # original file (relative to the program root) -> counts
    entry: str
    criterion: str
    command: list[str]  # run as ``[*command, *ARGS]``
    warnings: list[str] = field(default_factory=list)
    # file -> spans of statements kept for the names they bind but not in the slice (see FilePlan.added)
    added: dict[str, list[Span]] = field(default_factory=dict)

    @property
    def statements_kept(self) -> int:
        """Statements kept over all files."""
        return sum(s.kept for s in self.statements.values())

    @property
    def statements_total(self) -> int:
        """Statements over all files that were written."""
        return sum(s.total for s in self.statements.values())


def _stub(path: str) -> str:
    return f"# mantispy: nothing of {path} is in the slice; this module exists so that imports of it work\n"


def emit_slice(program: Program, result: SliceResult, out_dir: Path, k: int = 5,
               counts_on_failure: bool = False, derived: frozenset[str] | None = None) -> EmitReport:
    """Write the feature evaluator of ``result`` into ``out_dir``; see the module docstring.

    ``k`` must be the ``--k`` the program was instrumented with (value criteria follow the runtime's
    per-variable limits); ``counts_on_failure``: the evaluator gives the counts of a run that fails (a
    sampled evaluator's, see :class:`mantispy.slicer.kit.BuildConstants`); ``derived``: the counters the
    profile's instrumentation counted with no probe (None: those the default instrumentation derives),
    whose evaluator counts them the same way. Raises :class:`EmitError` when the criterion or entry cannot be found or a file
    that keeps code cannot be parsed.
    """
    out_dir = Path(out_dir)
    criteria = resolve_criteria(program, result, k, derived)
    entry_source = entry_file_of(program, result.entry)
    if entry_source is None:
        raise EmitError(f"entry {result.entry!r}: no such script or module in the program")

    emission = Emission(program, result, criteria)
    emission.run()

    base_parts = Path(program.root).relative_to(program.search_root).parts
    base = out_dir.joinpath(*base_parts)
    to_write = _files_to_write(program, emission, entry_source)
    reserved = set(kit.FILES)
    clashes = sorted(p for p in to_write if "/".join([*base_parts, p]) in reserved)
    if clashes:
        raise EmitError(f"{', '.join(clashes)}: the program has a file named like the evaluator's own modules")
    _prepare_out_dir(out_dir)
    written: list[str] = []
    stats: dict[str, FileStats] = {}
    for path in sorted(to_write):
        source = program.by_path[path]
        total = sum(isinstance(n, ast.stmt) for n in ast.walk(source.tree))
        work = emission.work.get(path)
        encoding = "utf-8"
        if work is not None and work.plan is not None:
            code = emission.rewrite(path)
            encoding = source.encoding  # the cut file keeps its encoding declaration
            stats[path] = FileStats(work.plan.kept_statements, total, True)
        else:
            code = _stub(path)
            stats[path] = FileStats(0, total, False)
        target = base / path
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            target.write_bytes(code.encode(encoding))
        except UnicodeEncodeError as exc:
            raise EmitError(f"{path}: the sliced file cannot be written in its encoding {encoding} ({exc.reason})") from None
        written.append(target.relative_to(out_dir).as_posix())

    missing = [c.feature.id for c in criteria if not emission.probes.get(c.slot)]
    if missing:
        raise EmitError(f"{missing[0]}: no probe could be inserted (construct not kept?)")
    modules = sorted({program.by_path[p].modname for p in to_write if program.by_path[p].modname})
    feature_ids = [c["id"] for c in result.all_criteria()]
    constants = kit.BuildConstants(
        features=tuple((fid, c.slot, c.version) for fid, c in zip(feature_ids, criteria)), k=k,
        entry=result.entry, root_parts=tuple(base_parts), modules=tuple(modules),
        preload=_preload(program, emission, entry_source, result.entry, to_write),
        counts_on_failure=counts_on_failure,
        deductions=tuple((c.slot, c.taken_slot) for c in criteria if c.taken_slot is not None))
    written += kit.write_kit(out_dir, constants)
    warnings = emission.warnings + [f"{p}: the slice imports it but keeps nothing of it (written as an empty module)"
                                    for p, s in stats.items() if not s.sliced and not program.by_path[p].is_package]
    return EmitReport(out_dir=out_dir, files=written, statements=stats, entry=result.entry,
                      criterion=result.criterion, command=[sys.executable, str(out_dir / kit.ENTRY_FILE)],
                      warnings=warnings,
                      added={p: list(w.plan.added) for p, w in sorted(emission.work.items()) if w.plan and w.plan.added})


def _preload(program: Program, emission: Emission, entry_source: SourceFile, entry: str,
             to_write: set[str]) -> tuple[str, ...]:
    """Modules a warm evaluator imports before any input: the program modules the kept code imports,
    except the entry's own module (it runs per input, as ``__main__`` or by name)."""
    entry_module = entry_source.modname if not entry.strip().endswith(".py") else None
    names = []
    for stmt in entry_source.tree.body:  # what the entry imports from outside the program (argparse...)
        if isinstance(stmt, ast.Import):
            found = [alias.name for alias in stmt.names]
        elif isinstance(stmt, ast.ImportFrom) and not stmt.level and stmt.module:
            found = [stmt.module]
        else:
            continue
        names += [n for n in found if n.split(".")[0] not in program.by_module and n != "__future__"]
    for path in sorted(to_write):
        source = program.by_path[path]
        name = source.modname
        if not name or source.path == entry_source.path or name == entry_module:
            continue
        names.append(name)
    return tuple(names)


def _prepare_out_dir(out_dir: Path) -> None:
    """Create ``out_dir``, or empty it if it holds an earlier evaluator; refuse any other non-empty folder."""
    if out_dir.exists() and not out_dir.is_dir():
        raise EmitError(f"{out_dir}: exists and is not a folder")
    if out_dir.is_dir() and any(out_dir.iterdir()):
        if not (out_dir / f"{kit.EVAL_MODULE}.py").is_file():
            raise EmitError(f"{out_dir}: not empty and not an earlier evaluator; choose an empty folder")
        for child in out_dir.iterdir():
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child)
            else:
                child.unlink()
    out_dir.mkdir(parents=True, exist_ok=True)


def _files_to_write(program: Program, emission: Emission, entry: SourceFile) -> set[str]:
    """Planned files, modules kept imports name, the entry, and every package ``__init__`` above them."""
    paths = {p for p, w in emission.work.items() if w.plan is not None}
    paths |= {program.by_module[m].path for m in emission.needed_modules}
    paths.add(entry.path)
    for path in list(paths):
        parts = path.split("/")[:-1]
        for depth in range(len(parts) + 1):
            init = "/".join([*parts[:depth], "__init__.py"])
            if init in program.by_path:
                paths.add(init)
    return paths


def report_json(report: EmitReport) -> str:
    """The report as JSON (for the CLI)."""
    return json.dumps({
        "out_dir": str(report.out_dir), "files": report.files, "entry": report.entry,
        "criterion": report.criterion, "command": report.command, "warnings": report.warnings,
        "statements": {p: {"kept": s.kept, "total": s.total, "sliced": s.sliced} for p, s in report.statements.items()},
    }, indent=1)
