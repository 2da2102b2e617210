"""Lexical and syntactic features of a Python function, for the resource classifier.

From the function's source (found by file and first line): the names it calls and the attributes it
reads, the modules its names come from (through the file's imports), the kinds of statement and
expression it is made of, its deepest loop nesting, the words of its docstring and of its own and its
parameters' names (``json.dump(obj, fp)`` against ``json.dumps(obj)``); then the same, with less weight,
for the functions it calls, transitively to ``FOLLOW_DEPTH``: functions of the same file called by name, and
functions of other modules called through the file's imports (``from m import f; f()``, ``import m;
m.f()``), found on ``sys.path`` without importing anything (a name-based call graph). Returned as a sparse dict of
feature -> value (``call:recv``, ``mod:socket``, ``node:For``, ``name:dump``, ``param:fp``, ``loop_depth``...),
which is what the labelled corpus stores and the classifier's vectoriser reads. Following calls two levels
deep, not three, and the name words were chosen on the corpus and then judged on functions measured after
the choice (``benchmarks/RESULTS.md``, issue 23).
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from functools import lru_cache
from pathlib import Path

NODE_KINDS = ("For", "While", "ListComp", "DictComp", "SetComp", "GeneratorExp", "With", "Try", "BinOp", "AugAssign",
              "Compare", "Subscript", "Call", "Yield", "Await", "Lambda", "JoinedStr", "BoolOp", "IfExp", "Return")
FOLLOW_DEPTH = 2
MAX_FOLLOWED = 40


@lru_cache(maxsize=256)
def _module(path: str) -> tuple[ast.Module, dict[str, str], dict[str, ast.AST]] | None:
    """A file's tree, its imported names (local name -> module, or module:name for a from-import) and
    its functions by name."""
    try:
        tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError, RecursionError):
        return None
    imports: dict[str, str] = {}
    functions: dict[str, ast.AST] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    imports[alias.asname] = alias.name
                else:
                    imports[alias.name.split(".")[0]] = alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(path, node.module or "", node.level)
            for alias in node.names:
                if base:
                    imports[alias.asname or alias.name] = f"{base}:{alias.name}"
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            functions.setdefault(node.name, node)
    return tree, imports, functions


def _absolute(path: str, module: str, level: int) -> str:
    """The absolute module name of a (possibly relative) from-import in ``path``."""
    if level == 0:
        return module
    package = _package_of(path)
    if package is None:
        return ""
    parts = package.split(".")
    if level - 1 > len(parts):
        return ""
    base = parts[: len(parts) - (level - 1)]
    return ".".join(base + ([module] if module else []))


def _package_of(path: str) -> str | None:
    """The dotted package a file lies in, from the ``__init__.py`` files above it."""
    folder = Path(path).resolve().parent
    parts: list[str] = []
    while (folder / "__init__.py").exists():
        parts.append(folder.name)
        folder = folder.parent
    return ".".join(reversed(parts)) if parts else None


@lru_cache(maxsize=1024)
def module_file(name: str) -> str | None:
    """The source file of module ``name`` on ``sys.path``, found without importing it."""
    import importlib.machinery
    import sys

    locations: list[str] | None = list(sys.path)
    spec = None
    for part in name.split("."):
        if locations is None:
            return None
        spec = importlib.machinery.PathFinder.find_spec(part, locations)
        if spec is None:
            return None
        locations = list(spec.submodule_search_locations) if spec.submodule_search_locations else None
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return None
    return spec.origin


def _function_at(tree: ast.Module, line: int) -> ast.AST | None:
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
            if line in (node.lineno, first):
                return node
    return None


def features_at(path: str, line: int) -> dict[str, float]:
    """The features of the function defined at ``line`` of ``path``; {} when it cannot be found."""
    parsed = _module(path)
    if parsed is None:
        return {}
    tree, imports, functions = parsed
    node = _function_at(tree, line)
    if node is None:
        return {}
    features: defaultdict[str, float] = defaultdict(float)
    _collect(node, imports, functions, features, depth=0, seen=set(), path=path)
    return {k: float(v) for k, v in features.items()}


def features_of_source(source: str) -> dict[str, float]:
    """The features of the first function in ``source`` (tests and the corpus builder)."""
    tree = ast.parse(source)
    imports = {}
    functions: dict[str, ast.AST] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                imports[alias.asname or alias.name.split(".")[0]] = alias.name
        elif isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                imports[alias.asname or alias.name] = node.module
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            functions.setdefault(node.name, node)
    first = next((n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
    features: defaultdict[str, float] = defaultdict(float)
    if first is not None:
        _collect(first, imports, functions, features, depth=0, seen=set())
    return {k: float(v) for k, v in features.items()}


def _collect(fn: ast.AST, imports: dict[str, str], functions: dict[str, ast.AST], out: defaultdict[str, float],
             depth: int, seen: set[int], path: str = "") -> None:
    if id(fn) in seen or len(seen) >= MAX_FOLLOWED:
        return
    seen.add(id(fn))
    weight = 0.5 ** depth
    callees: list[tuple[str, str]] = []  # (local name, the module it came through, or "")
    for node in ast.walk(fn):
        kind = type(node).__name__
        if kind in NODE_KINDS:
            out[f"node:{kind}"] += weight
        if isinstance(node, ast.Call):
            name = _called_name(node.func)
            if name:
                out[f"call:{name.lower()}"] += weight
                owner = node.func.value.id if isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name) else ""
                callees.append((name, owner))
        elif isinstance(node, ast.Attribute):
            out[f"attr:{node.attr.lower()}"] += weight * 0.5
        elif isinstance(node, ast.Name) and node.id in imports:
            out[f"mod:{imports[node.id].split(':')[0].split('.')[0]}"] += weight
    out["loop_depth"] = max(out.get("loop_depth", 0.0), float(_loop_depth(fn)))
    for word in _doc_words(fn):
        out[f"doc:{word}"] += weight
    for word in _name_words(fn):
        out[f"name:{word}"] += weight
    for word in _param_words(fn):
        out[f"param:{word}"] += weight
    if depth + 1 >= FOLLOW_DEPTH:
        return
    for name, owner in callees:
        target = _resolve(name, owner, imports, functions)
        if target is not None:
            callee, callee_path = target
            parsed = _module(callee_path) if callee_path else None
            if callee_path and parsed is not None:
                _collect(callee, parsed[1], parsed[2], out, depth + 1, seen, callee_path)
            else:
                _collect(callee, imports, functions, out, depth + 1, seen, path)


def _resolve(name: str, owner: str, imports: dict[str, str], functions: dict[str, ast.AST]) -> tuple[ast.AST, str] | None:
    """The definition a call reaches: a function of this file, or one of a module this file imports."""
    if owner and owner in imports and ":" not in imports[owner]:  # import m; m.f()
        return _function_in(imports[owner], name)
    if not owner and name in imports and ":" in imports[name]:  # from m import f; f()
        module, attr = imports[name].split(":", 1)
        found = _function_in(module, attr)
        if found is None:  # from package import submodule... or a re-export: try m.attr as a module
            return None
        return found
    if name in functions:
        return functions[name], ""
    return None


def _function_in(module: str, name: str) -> tuple[ast.AST, str] | None:
    path = module_file(module)
    if path is None:
        return None
    parsed = _module(path)
    if parsed is None:
        return None
    node = parsed[2].get(name)
    if node is None and name in parsed[1] and ":" in parsed[1][name]:  # re-exported: follow one more hop
        inner_module, inner_name = parsed[1][name].split(":", 1)
        inner_path = module_file(inner_module)
        inner = _module(inner_path) if inner_path else None
        if inner is not None and inner_name in inner[2]:
            return inner[2][inner_name], inner_path or ""
        return None
    return (node, path) if node is not None else None


_NAME_PART = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")


def _name_parts(name: str) -> list[str]:
    """The words of an identifier: ``read_csv`` -> read, csv; ``HTTPResponse`` -> http, response."""
    return [part.lower() for part in _NAME_PART.findall(name) if len(part) >= 2]


def _name_words(fn: ast.AST) -> set[str]:
    """The words of a function's own name."""
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return set()
    return set(_name_parts(fn.name))


def _param_words(fn: ast.AST) -> set[str]:
    """The words of a function's parameter names (``fp``, ``path``, ``sock``...), ``self`` and ``cls`` left out."""
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        return set()
    args = fn.args
    names = [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs]
    names += [a.arg for a in (args.vararg, args.kwarg) if a is not None]
    return {word for name in names if name not in ("self", "cls") for word in _name_parts(name)}


_WORD = re.compile(r"[a-z]{3,}")
_STOP = frozenset("the and for with this that from are not but use used when then than into its has have will can "
                  "which their there these those returns return returned default given object objects value values "
                  "type none true false also each other only may must should see more such any all one two".split())


def _doc_words(fn: ast.AST) -> set[str]:
    """The words of a function's docstring (its documentation, which the paper embeds beside its code)."""
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return set()
    doc = ast.get_docstring(fn) or ""
    return {w for w in _WORD.findall(doc.lower()[:2000]) if w not in _STOP}


def _called_name(func: ast.AST) -> str:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""


def _loop_depth(node: ast.AST, depth: int = 0) -> int:
    best = depth
    for child in ast.iter_child_nodes(node):
        inner = depth + 1 if isinstance(child, (ast.For, ast.While, ast.AsyncFor, ast.comprehension)) else depth
        best = max(best, _loop_depth(child, inner))
    return best
