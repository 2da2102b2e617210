"""Where an interpreter keeps its standard library and installed packages: what a recording stores so
that its frames there are told from the program's own by whichever Python analyses it later."""

from __future__ import annotations

import re
import subprocess
import sys
import sysconfig
from functools import lru_cache

LIBRARY_KEYS = ("stdlib", "platstdlib", "purelib", "platlib")
_PATH_LINE = re.compile(r'^\t(\w+) = "(.*)"$')


def library_paths() -> tuple[str, ...]:
    """This interpreter's standard-library and installed-packages folders."""
    paths = sysconfig.get_paths()
    return tuple(sorted({paths[key] for key in LIBRARY_KEYS if key in paths}))


@lru_cache(maxsize=16)
def library_paths_of(python: str) -> tuple[str, ...]:
    """The same folders of the interpreter ``python`` (this one's without starting a process); () when it
    cannot say (not a Python, or one that fails to start)."""
    if python == sys.executable:
        return library_paths()
    try:
        said = subprocess.run([python, "-m", "sysconfig"], capture_output=True, text=True, timeout=30,
                              stdin=subprocess.DEVNULL).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ()
    return parse_sysconfig_paths(said)


def parse_sysconfig_paths(text: str) -> tuple[str, ...]:
    """The library folders in ``python -m sysconfig``'s output (its ``Paths:`` section)."""
    found: dict[str, str] = {}
    in_paths = False
    for line in text.splitlines():
        if not line.startswith("\t"):
            in_paths = line.strip() == "Paths:"
            continue
        matched = _PATH_LINE.match(line)
        if in_paths and matched and matched.group(1) in LIBRARY_KEYS:
            found[matched.group(1)] = matched.group(2)
    return tuple(sorted(set(found.values())))
