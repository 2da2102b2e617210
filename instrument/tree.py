"""Instrument a whole source tree (or one file) into a mirror directory and write its manifest.

The mirror is built in a temporary sibling of OUT and moved into place at the end, so an interrupted
run never leaves a half-written OUT, and an earlier OUT is only replaced when it is mantispy's own.
SRC is only ever read.
"""

from __future__ import annotations

import fnmatch
import hashlib
import io
import os
import shutil
import tempfile
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import libcst as cst

from mantispy.core.version import VERSION as __version__

from .manifest import FileRecord, Manifest, manifest_path
from .transformer import Options, instrument_source

SKIPPED_DIRS = {"__pycache__", ".git", ".hg", ".svn", ".mantis", ".tox", ".nox", ".venv", "venv", ".mypy_cache", ".pytest_cache"}


class InstrumentError(Exception):
    """Bad input that stops instrumentation altogether (the message is one line and says the fix)."""


@dataclass
class SourceError:
    """A file that could not be instrumented; it is copied unchanged."""

    path: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


@dataclass
class TreeResult:
    """What :func:`instrument_tree` did."""

    manifest: Manifest
    out_dir: Path
    errors: list[SourceError] = field(default_factory=list)


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def walk_sources(src: Path) -> Iterator[Path]:
    """Files below src in a stable order, skipping caches and VCS folders."""
    for root, dirs, files in os.walk(src):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS and not d.endswith(".egg-info"))
        for name in sorted(files):
            if name.endswith((".pyc", ".pyo")):
                continue
            yield Path(root) / name


def is_excluded(rel: str, patterns: list[str]) -> bool:
    """Whether ``--exclude`` patterns name this file (by relative path or by file name)."""
    return any(fnmatch.fnmatch(rel, p) or fnmatch.fnmatch(Path(rel).name, p) for p in patterns)


def check_paths(src: Path, out: Path, force: bool) -> None:
    """Refuse a missing SRC, an OUT that overlaps SRC, and an OUT that is someone else's folder."""
    if not src.exists():
        raise InstrumentError(f"{src}: no such file or directory; give the program's .py file or source folder")
    if src.is_file() and src.suffix != ".py":
        raise InstrumentError(f"{src}: not a .py file; give a Python file or a source folder")
    src_dir = src if src.is_dir() else src.parent
    out_r, src_r = out.resolve(), src_dir.resolve()
    overlaps = out_r == src_r or (src.is_dir() and (src_r in out_r.parents or out_r in src_r.parents))
    if overlaps and src.is_dir() and src_r / ".mantis" in out_r.parents:  # SRC/.mantis/...: never read as source
        overlaps = False
    if overlaps:
        raise InstrumentError(
            f"{out}: the output folder overlaps the source {src}; choose -o outside it (SRC is never written)"
        )
    if out.exists():
        if not out.is_dir():
            raise InstrumentError(f"{out}: exists and is not a folder; choose another -o")
        if any(out.iterdir()) and not manifest_path(out).exists() and not force:
            raise InstrumentError(
                f"{out}: folder exists and is not a mantispy output; choose another -o or pass --force"
            )


def _syntax_error(path: str, source: str) -> SourceError | None:
    """Python's own verdict on the file (the message users know), or None if it compiles."""
    try:
        compile(source, path, "exec", dont_inherit=True)
    except SyntaxError as exc:
        return SourceError(path, exc.lineno or 0, exc.msg)
    except ValueError as exc:  # e.g. null bytes
        return SourceError(path, 0, str(exc))
    return None


def instrument_tree(
    src: Path,
    out: Path,
    options: Options | None = None,
    exclude: list[str] | None = None,
    force: bool = False,
) -> TreeResult:
    """Mirror ``src`` into ``out`` with every ``.py`` instrumented; returns the manifest and file errors."""
    options = options or Options()
    exclude = exclude or []
    src, out = Path(src), Path(out)
    check_paths(src, out, force)
    root = src if src.is_dir() else src.parent
    files = list(walk_sources(src)) if src.is_dir() else [src]

    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    umask = os.umask(0)
    os.umask(umask)
    staging.chmod(0o777 & ~umask)  # mkdtemp makes it private; OUT should look like any folder
    try:
        manifest = Manifest(
            mantispy_version=__version__,
            source_root=str(root.resolve()),
            source_hash="",
            options={
                "families": sorted(options.families),
                "k": options.k,
                "exclude": exclude,
                "disabled": sorted(options.disabled),
                "derive_arms": options.derive_arms,
            },
        )
        errors: list[SourceError] = []
        digest = hashlib.sha256()
        for path in files:
            rel = path.relative_to(root).as_posix()
            target = staging / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            data = path.read_bytes()
            sha = _sha256(data)
            if path.suffix != ".py":
                shutil.copy2(path, target)
                manifest.files.append(FileRecord(rel, "copied", sha))
                continue
            digest.update(f"{rel}\0{sha}\n".encode())
            record, error = _instrument_file(path, rel, data, sha, target, options, exclude, manifest)
            manifest.files.append(record)
            if error:
                errors.append(error)
        manifest.source_hash = digest.hexdigest()
        manifest.save(manifest_path(staging))
        replace_dir(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return TreeResult(manifest=manifest, out_dir=out, errors=errors)


def _instrument_file(
    path: Path,
    rel: str,
    data: bytes,
    sha: str,
    target: Path,
    options: Options,
    exclude: list[str],
    manifest: Manifest,
) -> tuple[FileRecord, SourceError | None]:
    """Instrument one .py file into target (or copy it unchanged); returns its record and any error."""

    def copy_unchanged(status: str, error: SourceError | None = None) -> tuple[FileRecord, SourceError | None]:
        shutil.copy2(path, target)
        message = None if error is None else str(error)
        return FileRecord(rel, status, sha, lines=data.count(b"\n"), error=message), error

    if is_excluded(rel, exclude):
        return copy_unchanged("excluded")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)  # PEP 263 declaration, BOM, else UTF-8
        source = data.decode(encoding)
    except (SyntaxError, LookupError) as exc:
        return copy_unchanged("error", SourceError(rel, 0, f"unknown source encoding ({exc})"))
    except UnicodeDecodeError as exc:
        return copy_unchanged("error", SourceError(rel, 0, f"not {exc.encoding} ({exc.reason}), as its encoding "
                                                        "declaration (or the UTF-8 default) says"))
    error = _syntax_error(rel, source)
    if error is not None:
        return copy_unchanged("error", error)
    try:
        result = instrument_source(source, rel, options)
    except cst.ParserSyntaxError as exc:
        return copy_unchanged("error", SourceError(rel, exc.raw_line, f"libcst cannot parse this: {exc.message}"))
    except RecursionError:
        return copy_unchanged("error", SourceError(rel, 0, "too deeply nested to instrument"))
    invalid = _syntax_error(rel, result.code)
    if invalid is not None:
        # A bug of ours must never break the user's program: ship the original and say so.
        invalid.message = f"internal error, file left uninstrumented: generated code does not compile ({invalid.message})"
        return copy_unchanged("error", invalid)
    try:
        target.write_bytes(result.code.encode(encoding))  # the file's own encoding: its declaration stays true
    except UnicodeEncodeError:
        return copy_unchanged("error", SourceError(rel, 0, f"internal error, file left uninstrumented: the probes "
                                                         f"cannot be written in {encoding}"))
    shutil.copymode(path, target)
    manifest.features.extend(result.features)
    manifest.value_sites.extend(result.value_sites)
    manifest.derived.update(result.derived)
    record = FileRecord(rel, "instrumented", sha, lines=source.count("\n"), shifted_lines=result.shifted_lines)
    return record, None


def replace_dir(staging: Path, out: Path) -> None:
    """Move the finished staging folder to OUT, replacing an earlier mantispy output there."""
    if out.exists():
        backup = out.with_name(f".{out.name}.old-{os.getpid()}")
        out.rename(backup)
        staging.rename(out)
        shutil.rmtree(backup, ignore_errors=True)
    else:
        staging.rename(out)
