"""The house's structure, checked on the source: no import circles, the stages import from the top of
mantispy only its shared bottom (``mantispy.core``), the run-time imports only the standard library, and
no module uses another module's private names."""

from __future__ import annotations

import ast
import sys
import tomllib
from pathlib import Path

import networkx as nx
import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGE_DIR: dict[str, str] = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["package-dir"]
KIT_NAMES = {"_mantis_build", "_mantis_values", "_mantis_eval", "_mantis_guard", "_mantis_confine"}  # an evaluator's own modules
# Copied into a predictor package as its __init__.py: its relative imports name the package's own files there.
COPIED_AS_PACKAGE = {"mantispy.package_kit.package"}


def _modules() -> dict[str, Path]:
    found = {}
    for package, folder in PACKAGE_DIR.items():
        for path in (REPO / folder).rglob("*.py"):
            parts = path.relative_to(REPO / folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join((package, *parts))] = path
    return found


MODULES = _modules()


def _imported(name: str, path: Path) -> list[tuple[str, int, tuple[str, ...]]]:
    """(absolute module, line, names imported from it) of every import in the module, at any depth."""
    found = []
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno, ()) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[:len(base) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            found.append((module, node.lineno, tuple(alias.name for alias in node.names)))
    return found


def _owner(target: str) -> str | None:
    """The project module an import names (a name imported from a package may be a submodule)."""
    while target and target not in MODULES:
        target = target.rpartition(".")[0]
    return target or None


def _graph() -> nx.DiGraph:
    graph = nx.DiGraph()
    for name, path in MODULES.items():
        graph.add_node(name)
        for module, _, names in _imported(name, path):
            for target in (module, *(f"{module}.{n}" for n in names)):
                owner = _owner(target)
                if owner and owner != name and not name.startswith(owner + "."):  # a package's own parents
                    graph.add_edge(name, owner)
    return graph


def test_no_import_circles():
    """Function-level imports count too: a circle hidden in a function is still a circle."""
    cycles = sorted(sorted(c) for c in nx.simple_cycles(_graph()))
    assert not cycles, f"import circles: {cycles}"


@pytest.mark.parametrize("stage", ["mantispy.instrument", "mantispy.slicer", "mantispy.runtime"])
def test_stages_import_only_the_shared_bottom_of_the_top_package(stage):
    allowed = ("mantispy.core", "mantispy.instrument", "mantispy.slicer", "mantispy.runtime")
    wrong = [f"{name} -> {target}" for name, target in _graph().edges
             if name.startswith(stage) and not target.startswith(allowed)]
    assert not wrong, wrong


def _third_party(name: str, path: Path) -> list[str]:
    return [f"{name}:{line} imports {module}" for module, line, _ in _imported(name, path)
            if module.split(".")[0] not in sys.stdlib_module_names
            and not module.startswith(("mantispy.runtime", "mantispy.core"))
            and module.split(".")[0] not in KIT_NAMES]


def test_runtime_and_core_import_only_the_standard_library():
    wrong = []
    for name, path in MODULES.items():
        if name.startswith("mantispy.runtime"):
            wrong += [w for w in _third_party(name, path)] + [
                f"{name} imports {m}" for m, _, _ in _imported(name, path) if m.startswith("mantispy.core")]
        elif name.startswith("mantispy.core"):
            wrong += _third_party(name, path)
    assert not wrong, wrong


def test_no_module_takes_another_modules_private_names():
    """``from X import _name`` and ``module._name`` across project modules (a shared name is public)."""
    wrong = []
    for name, path in MODULES.items():
        if name in COPIED_AS_PACKAGE:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        aliases = {}
        for module, line, names in _imported(name, path):
            owner = _owner(module)
            if owner is None:
                continue
            wrong += [f"{name}:{line} from {module} import {n}" for n in names
                      if n.startswith("_") and not n.startswith("__") and _owner(f"{module}.{n}") != f"{module}.{n}"]
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for alias in node.names:
                    full = alias.name if isinstance(node, ast.Import) else f"{node.module}.{alias.name}"
                    if _owner(full) == full:
                        aliases[alias.asname or alias.name.split(".")[0]] = full
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
                    and node.attr.startswith("_") and not node.attr.startswith("__")):
                wrong.append(f"{name}:{node.lineno} {node.value.id}.{node.attr}")
    assert not wrong, wrong


def test_span_has_one_definition():
    defined = [name for name, path in MODULES.items()
               for node in ast.parse(path.read_text(encoding="utf-8")).body
               if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "Span" for t in node.targets)]
    assert defined == ["mantispy.core.types"]
