"""A Python source tree loaded once for static analysis: files, module names, sources, ``ast`` and astroid trees.

Design
------
:class:`Program` is the single entry point of the slicer's front end. ``Program.load(path)`` walks a folder
(or takes one ``.py`` file), reads every Python file once and records, per file, its relative POSIX path,
dotted module name, source text, content SHA-256 and parsed :mod:`ast` tree. Nothing of the analysed
program is imported or run.

Module names follow PyCG: ``pkg/sub/mod.py`` is ``pkg.sub.mod`` and ``pkg/__init__.py`` is ``pkg``. The
root folder itself is not a package level, unless it holds an ``__init__.py``: then the root folder's name
is the top package (``root/a.py`` is ``root.a``), exactly as PyCG names modules given a package root.

Files that cannot be read or parsed are recorded as :class:`ProblemReport` (path, line, message) and left
out; loading never raises for them.

Parse results are cached in-process by content hash (``_PARSE_CACHE``), so loading the same tree twice,
or two trees sharing files, parses each distinct text once.

astroid trees are built lazily (:meth:`Program.astroid_module`) and only inside
:meth:`Program.astroid_session`. astroid's module manager is process-global, so a session (1) puts the
program's search root first on ``sys.path`` (the root folder, or its parent when the root is a package)
so that astroid resolves absolute imports of the program's own packages to the program's files, relative
imports included, (2) drops astroid's cached modules and look-up caches that could belong to another
program analysed earlier in the same process (two test programs both named ``main`` for instance), and
(3) restores ``sys.path`` and drops the program's modules from astroid's caches again when it ends.
Modules of the program that astroid reaches through an import are built by astroid from the same files;
:meth:`Program.astroid_module` reuses them, so each module exists once per session.
"""

from __future__ import annotations

import ast
import hashlib
import io
import os
import re
import sys
import tokenize
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover - typing only
    from astroid import nodes

SKIPPED_DIRS = frozenset({"__pycache__", ".git", ".mantis"})

# content sha256 -> parsed tree, or (line, message) of the syntax error
_PARSE_CACHE: dict[str, ast.Module | tuple[int, str]] = {}


@dataclass(frozen=True)
class ProblemReport:
    """A file that could not be analysed (fully): relative path, 1-based line (0 if none) and message."""

    path: str
    line: int
    message: str

    def __str__(self) -> str:
        """``path:line: message``, the form the CLI prints."""
        return f"{self.path}:{self.line}: {self.message}"


@dataclass
class SourceFile:
    """One parsed Python file of the program."""

    path: str  # relative POSIX path from the program root (the file name for a single-file program)
    abs_path: Path
    modname: str
    source: str
    sha256: str
    tree: ast.Module
    is_package: bool = False  # an __init__.py
    encoding: str = "utf-8"  # the file's own (PEP 263 declaration or BOM): what a sliced copy is written in
    _astroid: nodes.Module | None = field(default=None, repr=False)
    _lines: list[str] | None = field(default=None, repr=False)

    def lines(self) -> list[str]:
        """The source split into lines the way :mod:`ast` numbers them (``\\n``, ``\\r\\n``, ``\\r``)."""
        if self._lines is None:
            self._lines = re.split(r"\r\n|\r|\n", self.source)
        return self._lines

    def segment(self, line: int, col: int, end_line: int, end_col: int, limit: int) -> str:
        """The source text of an :mod:`ast` span (1-based lines, UTF-8 byte columns), cut to ``limit``
        characters."""
        lines = self.lines()
        if line - 1 >= len(lines):
            return ""
        chunk = [text.encode() for text in lines[line - 1:end_line]]
        if len(chunk) == 1:
            chunk[0] = chunk[0][col:end_col]
        else:
            chunk[0] = chunk[0][col:]
            chunk[-1] = chunk[-1][:end_col]
        text = b"\n".join(chunk).decode(errors="replace")
        return text if len(text) <= limit else text[:limit - 3] + "..."


class ProgramError(Exception):
    """The program root itself cannot be loaded (missing, not a folder or .py file)."""


class Program:
    """The Python files of one source tree, parsed once; see the module docstring for the design."""

    def __init__(self, root: Path, files: list[SourceFile], problems: list[ProblemReport], search_root: Path) -> None:
        """Use :meth:`load`; this only stores what it found."""
        self.root = root
        self.files = files
        self.problems = problems
        self.search_root = search_root
        self.by_module: dict[str, SourceFile] = {f.modname: f for f in files}
        self.by_path: dict[str, SourceFile] = {f.path: f for f in files}
        self._by_abs: dict[str, SourceFile] = {str(f.abs_path): f for f in files}
        self._session_depth = 0

    # ------------------------------------------------------------------ loading
    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Program:
        """Load a folder (every ``.py`` below it, hidden folders, ``__pycache__``, ``.git`` and ``.mantis``
        skipped) or a single ``.py`` file. Raises :class:`ProgramError` only if ``path`` itself is unusable."""
        root = Path(path).resolve()
        if root.is_file():
            if root.suffix != ".py":
                raise ProgramError(f"{path}: not a .py file or a folder")
            return cls._from_files(root.parent, [root], root.parent, prefix="")
        if not root.is_dir():
            raise ProgramError(f"{path}: no such file or folder")
        if (root / "__init__.py").is_file():
            return cls._from_files(root, _python_files(root), root.parent, prefix=root.name)
        return cls._from_files(root, _python_files(root), root, prefix="")

    @classmethod
    def _from_files(cls, root: Path, paths: list[Path], search_root: Path, prefix: str) -> Program:
        files: list[SourceFile] = []
        problems: list[ProblemReport] = []
        for abs_path in paths:
            rel = abs_path.relative_to(root).as_posix()
            loaded = _load_file(abs_path, rel, module_name(rel, prefix))
            if isinstance(loaded, ProblemReport):
                problems.append(loaded)
            else:
                files.append(loaded)
        return cls(root, files, problems, search_root)

    # ------------------------------------------------------------------ look-ups
    def file_for(self, path: str | os.PathLike[str]) -> SourceFile | None:
        """The loaded file at ``path`` (relative to the root, or absolute), or None."""
        candidate = Path(path)
        if not candidate.is_absolute():
            found = self.by_path.get(candidate.as_posix())
            if found is not None:
                return found
            candidate = self.root / candidate
        return self._by_abs.get(str(candidate.resolve()))

    def entry_problem(self, entry: str) -> str | None:
        """Why ``entry`` (``SCRIPT.py``, ``-m module`` or ``module:function``) names nothing in this program,
        or None when it does."""
        entry = entry.strip()
        if entry.startswith("-m "):
            module = entry[3:].strip()
            if module not in self.by_module:
                return f"entry {entry!r}: no module {module} in {self.root}"
            return None
        if ":" in entry and not entry.endswith(".py"):
            module, _, function = entry.partition(":")
            source = self.by_module.get(module)
            if source is None:
                return f"entry {entry!r}: no module {module} in {self.root}"
            if function not in _top_level_names(source.tree):
                return f"entry {entry!r}: {source.path} defines no {function} at its top level"
            return None
        if self.file_for(entry) is None:
            return f"entry {entry!r}: no such file in {self.root}"
        return None

    def deepest_file(self) -> tuple[str, int]:
        """(path, depth) of the file whose syntax tree nests deepest (walked without recursion)."""
        best = ("", 0)
        for source in self.files:
            stack = [(source.tree, 1)]
            while stack:
                node, depth = stack.pop()
                if depth > best[1]:
                    best = (source.path, depth)
                stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
        return best

    def module_names(self) -> list[str]:
        """Every module name of the program, sorted."""
        return sorted(self.by_module)

    # ------------------------------------------------------------------ astroid
    @contextmanager
    def astroid_session(self) -> Iterator[Program]:
        """Make astroid see this program (search root first on ``sys.path``, stale caches dropped); restore
        ``sys.path`` and drop the program's astroid modules on exit. Re-entrant."""
        if self._session_depth:
            self._session_depth += 1
            try:
                yield self
            finally:
                self._session_depth -= 1
            return
        saved_path = list(sys.path)
        sys.path.insert(0, str(self.search_root))
        self._forget_astroid_state()
        self._session_depth = 1
        try:
            yield self
        finally:
            self._session_depth = 0
            sys.path[:] = saved_path
            self._forget_astroid_state()
            for f in self.files:
                f._astroid = None

    def astroid_module(self, modname: str) -> nodes.Module | None:
        """The astroid tree of one program module (None if unknown); built on first use, inside a session."""
        source = self.by_module.get(modname)
        if source is None:
            return None
        if source._astroid is None:
            if not self._session_depth:
                raise RuntimeError("Program.astroid_module needs an active astroid_session()")
            source._astroid = self._build_astroid(source)
        return source._astroid

    def _build_astroid(self, source: SourceFile) -> nodes.Module:
        from astroid import MANAGER
        from astroid.builder import AstroidBuilder

        cached = MANAGER.astroid_cache.get(source.modname)
        if cached is not None and cached.file == str(source.abs_path):
            return cached
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return AstroidBuilder(MANAGER).string_build(source.source, source.modname, str(source.abs_path))

    def _forget_astroid_state(self) -> None:
        """Drop astroid's cached modules of this program (by name or by file under the search root) and
        astroid's look-up caches, which do not notice ``sys.path`` changes."""
        from astroid import MANAGER
        from astroid.context import _invalidate_cache

        names = set(self.by_module)
        under = str(self.search_root) + os.sep
        for name, module in list(MANAGER.astroid_cache.items()):
            if name in names or (module.file or "").startswith(under):
                del MANAGER.astroid_cache[name]
        MANAGER._mod_file_cache.clear()
        _invalidate_cache()
        try:
            from astroid.inference_tip import clear_inference_tip_cache

            clear_inference_tip_cache()
        except ImportError:  # pragma: no cover - older astroid
            pass
        for cached in _astroid_lru_caches():
            cached.cache_clear()


def _astroid_lru_caches() -> list:
    """astroid's functools caches that hold look-up results or nodes (the ones ``clear_cache`` empties,
    without re-bootstrapping builtins); looked up by name so that astroid 3.3 and 4.x both work."""
    import importlib

    found = []
    for module_name_, attr in (("astroid.nodes._base_nodes", "LookupMixIn.lookup"), ("astroid.modutils", "_cache_normalize_path_"),
                               ("astroid.modutils", "_has_init"), ("astroid.modutils", "cached_os_path_isfile"),
                               ("astroid.interpreter._import.util", "is_namespace"),
                               ("astroid.interpreter._import.spec", "_find_spec"),
                               ("astroid.interpreter._import.spec", "_is_setuptools_namespace"),
                               ("astroid.interpreter.objectmodel", "ObjectModel.attributes"),
                               ("astroid.nodes.scoped_nodes", "ClassDef._metaclass_lookup_attribute")):
        try:
            obj = importlib.import_module(module_name_)
            for part in attr.split("."):
                obj = getattr(obj, part)
        except (ImportError, AttributeError):
            continue
        if hasattr(obj, "cache_clear"):
            found.append(obj)
    try:
        from astroid.interpreter._import import spec

        found.extend(f.find_module for f in spec._SPEC_FINDERS if hasattr(f.find_module, "cache_clear"))
    except (ImportError, AttributeError):
        pass
    return found


def module_name(rel_path: str, prefix: str = "") -> str:
    """PyCG's dotted name of a file: ``pkg/sub/mod.py`` -> ``pkg.sub.mod``, ``pkg/__init__.py`` -> ``pkg``;
    ``prefix`` (the root package's name, or empty) goes first."""
    parts = rel_path[:-3].split("/") if rel_path.endswith(".py") else rel_path.split("/")
    if parts[-1] == "__init__":
        parts.pop()
    if prefix:
        parts.insert(0, prefix)
    return ".".join(parts)


def _python_files(root: Path) -> list[Path]:
    """Every .py file below ``root``, sorted, skipping hidden folders and the SKIPPED_DIRS."""
    found: list[Path] = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS and not d.startswith("."))
        found.extend(Path(folder) / n for n in sorted(names) if n.endswith(".py") and not n.startswith("."))
    return found


def _load_file(abs_path: Path, rel: str, modname: str) -> SourceFile | ProblemReport:
    """Read and parse one file (parse results cached by content hash)."""
    try:
        data = abs_path.read_bytes()
    except OSError as exc:
        return ProblemReport(rel, 0, f"cannot read: {exc.strerror or exc}")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        text = data.decode(encoding)
    except (SyntaxError, LookupError, UnicodeDecodeError) as exc:
        return ProblemReport(rel, 1, f"cannot decode: {exc}")
    digest = hashlib.sha256(data).hexdigest()
    parsed = _PARSE_CACHE.get(digest)
    if parsed is None:
        parsed = _parse(text, rel)
        _PARSE_CACHE[digest] = parsed
    if isinstance(parsed, tuple):
        return ProblemReport(rel, parsed[0], parsed[1])
    return SourceFile(rel, abs_path, modname, text, digest, parsed, is_package=abs_path.name == "__init__.py",
                      encoding=encoding)


def _parse(text: str, rel: str) -> ast.Module | tuple[int, str]:
    """The ast of ``text``, or (line, message) of its syntax error."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(text, filename=rel, type_comments=False)
    except SyntaxError as exc:
        return (exc.lineno or 0, f"syntax error: {exc.msg}")
    except (ValueError, RecursionError, MemoryError) as exc:
        return (0, f"cannot parse: {exc}")


def _top_level_names(tree: ast.Module) -> set[str]:
    """Names a module binds at its top level (defs, classes, assignments, imports), conditionally or not."""
    names: set[str] = set()
    stack: list[ast.stmt] = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
        elif isinstance(node, (ast.If, ast.Try, ast.With, ast.For, ast.While)):
            for block in ("body", "orelse", "finalbody", "handlers"):
                for child in getattr(node, block, []) or []:
                    stack.extend(child.body if isinstance(child, ast.ExceptHandler) else [child])
    return names
