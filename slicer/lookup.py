"""Find a code unit of a loaded program by name, and analyse files once per content hash."""

from __future__ import annotations

from .ir import CodeUnit
from .pdg import ModuleGraphs, analyse_module
from .program import Program, SourceFile

_CACHE: dict[tuple[str, str, bool], ModuleGraphs] = {}


class LookupError_(Exception):
    """No such unit, or several."""


class UnitNotFound(LookupError_):
    """No such unit (or no such file): where a file of the program does not parse, the unit may be in it."""


def graphs_for(source: SourceFile, exceptional: bool = False) -> ModuleGraphs:
    """Units, CFGs and PDGs of one file; cached by content hash, so unchanged files are analysed once."""
    key = (source.sha256, source.path, exceptional)
    if key not in _CACHE:
        _CACHE[key] = analyse_module(source.source, source.path, source.tree, exceptional)
    return _CACHE[key]


def find_unit(program: Program, spec: str, exceptional: bool = False) -> tuple[SourceFile, ModuleGraphs, CodeUnit]:
    """``[FILE.py|MODULE:]QUALNAME`` -> (file, its graphs, the unit). ``<module>`` names a module body."""
    where, _, qualname = spec.rpartition(":")
    candidates = program.files
    if where:
        candidates = [f for f in program.files if f.path == where or f.modname == where]
        if not candidates:
            raise UnitNotFound(f"{where}: no such file or module in {program.root}")
    found = []
    for source in candidates:
        graphs = graphs_for(source, exceptional)
        if qualname in graphs.cfgs:
            found.append((source, graphs, graphs.cfgs[qualname].unit))
    if not found:
        raise UnitNotFound(f"{spec}: no function, class, lambda or comprehension of that name; "
                           "write QUALNAME like Class.method, optionally FILE.py:QUALNAME")
    if len(found) > 1:
        places = ", ".join(f"{s.path}:{qualname}" for s, _, _ in found)
        raise LookupError_(f"{spec}: ambiguous ({places}); prefix it with the file")
    return found[0]
