"""The whole program: plans per file, the imports between them to a program-wide fixpoint, and the
sliced text of every planned file."""

from __future__ import annotations

import re
import weakref
from dataclasses import dataclass

import libcst as cst
from libcst.helpers import get_full_name_for_node

from mantispy.core.types import Span
from mantispy.instrument.transformer import insert_header
from mantispy.slicer.program import Program, SourceFile
from mantispy.slicer.slice_result import SliceResult

from .criteria import Criterion
from .errors import EmitError
from .planning import FilePlan, is_future, plan_file
from .rewriting import Rewriter, compiled_without_unbound_nonlocals, find_target, forced_nodes, probe_header
from .source import ParsedFile, parsed_file

FUNCTION_ENTRY = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")

# (kept nodes, hoisted nodes) of a parsed tree -> its sliced text without probes; dropped with the tree
_REWRITES: weakref.WeakKeyDictionary[ParsedFile, dict[tuple, str]] = weakref.WeakKeyDictionary()


@dataclass
class FileWork:
    """One file of the emission: its parsed text and, once planned, its plan."""

    parsed: ParsedFile
    plan: FilePlan | None = None


def _resolve_from(importer: SourceFile, level: int, module: str | None) -> str | None:
    """The absolute module name of ``from <level dots><module> import ...`` in ``importer``."""
    if level == 0:
        return module
    parts = importer.modname.split(".") if importer.modname else []
    if not importer.is_package:
        parts = parts[:-1]
    if level - 1 > len(parts):
        return None
    parts = parts[: len(parts) - (level - 1)]
    if module:
        parts.append(module)
    return ".".join(parts) or None


def _kept_imports(source: SourceFile, module: cst.Module, plan: FilePlan) -> list[tuple[str, tuple[str, ...]]]:
    """(absolute module, names imported from it) of every kept import statement of a file (``("*",)``
    for a star import, ``()`` for ``import module``)."""
    found: list[tuple[str, tuple[str, ...]]] = []

    class Visitor(cst.CSTVisitor):
        def visit_Import(self, node: cst.Import) -> None:
            if id(node) in plan.keep:
                for alias in node.names:
                    found.append((get_full_name_for_node(alias.name) or "", ()))

        def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
            if id(node) not in plan.keep or is_future(node):
                return
            name = get_full_name_for_node(node.module) if node.module is not None else None
            absolute = _resolve_from(source, len(node.relative), name)
            if absolute is None:
                return
            names = ("*",) if isinstance(node.names, cst.ImportStar) else tuple(
                get_full_name_for_node(a.name) or "" for a in node.names)
            found.append((absolute, names))

    module.visit(Visitor())
    return found


def _module_chain(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[: i + 1]) for i in range(len(parts))]


class Emission:
    """The program-wide fixpoint: plans per file, imports between them, files to write."""

    def __init__(self, program: Program, result: SliceResult, criteria: list[Criterion]) -> None:
        self.program = program
        self.result = result
        self.criteria = criteria
        self.criterion_files = {c.feature.file for c in criteria}
        self.work: dict[str, FileWork] = {}
        self.required: dict[str, set[str]] = {}
        self.needed_modules: set[str] = set()
        self.targets: dict[str, dict[int, list[Criterion]]] = {}  # file -> id(node) -> counter criteria
        self.forced_ids: dict[str, set[int]] = {}
        self.forced_spans: dict[str, list[Span]] = {}
        self.probes: dict[int, int] = {}  # slot -> probes inserted over all files
        self.warnings: list[str] = []

    def file(self, path: str) -> FileWork:
        work = self.work.get(path)
        if work is None:
            source = self.program.by_path.get(path)
            if source is None:
                raise EmitError(f"{path}: not a file of the program (root {self.program.root})")
            work = self.work[path] = FileWork(parsed_file(source))
            if path in self.criterion_files:
                targets = self.targets.setdefault(path, {})
                ids = self.forced_ids.setdefault(path, set())
                spans = self.forced_spans.setdefault(path, [])
                for criterion in self.criteria:
                    if criterion.feature.file != path:
                        continue
                    target = find_target(work.parsed, criterion)
                    if target is not None:
                        targets.setdefault(id(target), []).append(criterion)
                    more_ids, more_spans = forced_nodes(work.parsed, criterion, target)
                    ids |= more_ids
                    spans += more_spans
        return work

    def run(self) -> None:
        active = {f for f, spans in self.result.kept.items() if spans}
        active |= {f for f, units in self.result.keep_units.items() if units}
        for path in sorted(p for p in active if p not in self.program.by_path):
            self.warnings.append(f"{path}: the slice keeps code of it, but it is not a file of the program; ignored")
            active.discard(path)
        active |= self.criterion_files
        entry_module, entry_function = split_function_entry(self.result.entry)
        if entry_module is not None:
            source = self.program.by_module.get(entry_module)
            if source is None:
                raise EmitError(f"entry {self.result.entry}: no module {entry_module} in the program")
            self.required.setdefault(source.path, set()).add(entry_function)  # type: ignore[arg-type]
        while True:
            for path in sorted(active):
                self.plan(path)
            required, modules = self.imports()
            grown = set(required) - active
            if required == self.required and not grown and modules == self.needed_modules:
                return
            self.required = required
            self.needed_modules = modules
            active |= grown

    def plan(self, path: str) -> None:
        work = self.file(path)
        kept = list(self.result.kept.get(path, [])) + self.forced_spans.get(path, [])
        work.plan = plan_file(work.parsed, kept, set(self.result.keep_units.get(path, [])),
                              self.required.get(path, set()), self.forced_ids.get(path, set()))

    def imports(self) -> tuple[dict[str, set[str]], set[str]]:
        required: dict[str, set[str]] = {p: set(n) for p, n in self.required.items()}
        modules: set[str] = set()
        for path, work in self.work.items():
            if work.plan is None:
                continue
            attributes = {n[1:] for n in work.plan.used if n.startswith(".")}
            for module, names in _kept_imports(work.parsed.source, work.parsed.module, work.plan):
                modules.update(_module_chain(module))
                target = self.program.by_module.get(module)
                if names == ("*",):  # re-exported: what others need of this file may be bound there
                    if target is not None:
                        required.setdefault(target.path, set()).update(self.required.get(path, set()))
                    continue
                if not names and target is not None:  # import pkg.mod: pkg.mod.NAME reads its globals
                    required.setdefault(target.path, set()).update(attributes)
                for name in names:
                    modules.add(f"{module}.{name}")
                    if target is not None:
                        required.setdefault(target.path, set()).add(name)
                    submodule = self.program.by_module.get(f"{module}.{name}")
                    if submodule is not None:  # from pkg import mod: mod.NAME reads its globals
                        required.setdefault(submodule.path, set()).update(attributes)
        return required, {m for m in modules if m in self.program.by_module}

    def rewrite(self, path: str) -> str:
        """The sliced source of one planned file."""
        work = self.work[path]
        assert work.plan is not None
        has_criteria = path in self.criterion_files
        criteria = [c for c in self.criteria if c.feature.file == path]
        calls_only = frozenset(tuple(span[:2]) for span in self.result.calls_only.get(path, []))
        key = (frozenset(work.plan.keep), frozenset(work.plan.hoist), calls_only)
        rewrites = _REWRITES.setdefault(work.parsed, {})
        if not has_criteria and key in rewrites:  # the same cut of a file without probes
            return rewrites[key]
        rewriter = Rewriter(work.parsed, work.plan, criteria, self.targets.get(path, {}), calls_only)
        module = work.parsed.module.visit(rewriter)
        for slot, count in rewriter.probes.items():
            self.probes[slot] = self.probes.get(slot, 0) + count
        if has_criteria:
            if not any(rewriter.probes.get(c.slot) for c in criteria):
                raise EmitError(f"{criteria[0].feature.id}: no probe could be inserted (construct not kept?)")
            module, _ = insert_header(module, probe_header())
        code = compiled_without_unbound_nonlocals(module.code, path)
        if not has_criteria:
            if len(rewrites) > 500:
                rewrites.clear()
            rewrites[key] = code
        return code


def split_function_entry(entry: str) -> tuple[str | None, str | None]:
    """(module, function) of a ``module:function`` entry, else (None, None)."""
    if FUNCTION_ENTRY.match(entry.strip()):
        module, _, function = entry.strip().partition(":")
        return module, function
    return None, None


def entry_file_of(program: Program, entry: str) -> SourceFile | None:
    """The program file an entry starts in (a script, a ``-m`` module or package)."""
    entry = entry.strip()
    module, _ = split_function_entry(entry)
    if entry.startswith("-m "):
        module = entry[3:].strip()
        source = program.by_module.get(module)
        main = program.by_module.get(module + ".__main__")
        return main if source is not None and source.is_package and main is not None else source
    if module is not None:
        return program.by_module.get(module)
    return program.file_for(entry)
