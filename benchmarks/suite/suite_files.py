"""Helpers the suite's input generators share (copied next to each prepared campaign's generator)."""

from __future__ import annotations

from pathlib import Path


def write_if_changed(path: Path, text: str) -> None:
    """Write ``text`` unless the file already holds it (a generator runs on every spec load)."""
    try:
        if path.read_text(encoding="utf-8") == text:
            return
    except OSError:
        pass
    path.write_text(text, encoding="utf-8")


def relative_path(path: Path, base: Path) -> str:
    """``path`` relative to ``base`` (the campaign folder) when inside it, else absolute."""
    try:
        return path.relative_to(base).as_posix()
    except ValueError:
        return str(path)


def input_folder(out_dir: str, base: Path) -> Path:
    """The folder a generator writes its input files to (``out_dir``, relative to ``base`` unless
    absolute), created if missing."""
    folder = Path(out_dir) if Path(out_dir).is_absolute() else base / out_dir
    folder.mkdir(parents=True, exist_ok=True)
    return folder
