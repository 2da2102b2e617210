"""Where an interpreter imports each named package from, without importing any (standard library only).

Run by file path with the interpreter in question (``python locate_packages.py NAME...``), so it works for
an interpreter that has no mantispy. Prints one JSON object: {name: the package's folder, its module
file, or null when the interpreter cannot find it}.
"""

from __future__ import annotations

import importlib.util
import json
import sys


def locate(names: list[str]) -> dict[str, str | None]:
    """{name: where ``import name`` would load it from, or None}."""
    out: dict[str, str | None] = {}
    for name in names:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        if spec is None:
            out[name] = None
        elif spec.submodule_search_locations:
            out[name] = list(spec.submodule_search_locations)[0]
        else:
            out[name] = spec.origin
    return out


if __name__ == "__main__":
    print(json.dumps(locate(sys.argv[1:])))
