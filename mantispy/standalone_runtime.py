"""A minimal standalone copy of the run-time, for interpreters where mantispy is not installed.

``standalone_runtime_dir(dest)`` writes ``dest/mantispy/__init__.py`` (a stub with ``__version__``)
and ``dest/mantispy/runtime/*.py`` (copies of :mod:`mantispy.runtime`'s modules); putting ``dest`` on
``PYTHONPATH`` makes ``import mantispy.runtime.counters`` work without the rest of mantispy or any
third-party package.
"""

from __future__ import annotations

from pathlib import Path

from mantispy import runtime as runtime_package
from mantispy.core.version import VERSION as __version__


def standalone_runtime_dir(dest: Path) -> Path:
    """Materialize the standalone copy under ``dest``; return ``dest`` (the PYTHONPATH entry)."""
    dest = Path(dest)
    package = dest / "mantispy"
    runtime = package / "runtime"
    runtime.mkdir(parents=True, exist_ok=True)
    (package / "__init__.py").write_text(
        '"""mantispy (standalone run-time copy)."""\n\n'
        f"__version__ = {__version__!r}\n", encoding="utf-8")
    for source in sorted(Path(runtime_package.__file__).resolve().parent.glob("*.py")):
        (runtime / source.name).write_bytes(source.read_bytes())
    return dest
