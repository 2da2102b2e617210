"""Memo caches: module-level dicts a program uses only to remember what a function already computed.

``_stem_cache = {}`` at module level, and in ``stem(word)``: look the word up, compute and store on a
miss, return what was found or stored. A value read from such a cache is the value the function would
compute anyway, so the dependence of a lookup on every earlier store (indexing a corpus fills the stem
cache that parsing a query later reads) is one on *when* a value was computed, not on *what* it is.
Treating the cache as transparent lets a slice keep the function and drop the work that filled the
cache; the evaluator then fills its own cache as it goes.

This is an assumption about the cached computation (that it is a function of the key): a cache whose
function reads other state that changes may make a slice's value differ, which the build's fidelity
check on training inputs catches (the feature is then rejected as "evaluator disagrees"). The
recognised shape is strict, so registries, interning tables and "seen" sets are not mistaken for caches:

* the name is bound once, at module level, to an empty ``{}`` or ``dict()``, never elsewhere (no
  ``global`` rebinding, no import of it by another file);
* every other use is inside a function, as a lookup (``C.get(K)``, ``C.get(K, D)``, ``C[K]``,
  ``K in C``, ``K not in C``) or a store (``C[K] = V`` as a statement of its own);
* each such function both looks up and stores, is no generator, and every ``return`` in it hands back
  either a lookup ``C[K]`` or a name the function stores into the cache (``C[K] = value``), or a name
  it only binds from lookups or to the stored value.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass

Position = tuple[int, int]  # line (1-based), column (0-based, as ast numbers it)


@dataclass(frozen=True)
class MemoCache:
    """A module-level dict used only as a memo cache by the functions listed."""

    file: str  # the program-relative path of the module that binds it
    name: str
    functions: tuple[Position, ...]  # where each function that looks up and stores starts (its def)
    lookups: tuple[Position, ...]  # where each lookup expression starts
    stores: tuple[Position, ...]  # where each store statement starts

    @property
    def location(self) -> tuple[str, str, str, str]:
        """The SDG's location of the module global (``("var", file, "<module>", name)``)."""
        return ("var", self.file, "<module>", self.name)


_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


def memo_caches(files: Iterable[tuple[str, ast.Module]]) -> list[MemoCache]:
    """The memo caches of a program given as ``(relative path, module tree)`` pairs."""
    files = list(files)
    named_elsewhere: dict[str, set[str]] = {}  # name -> files that import or reach it as an attribute
    for path, tree in files:
        for node in ast.walk(tree):
            if isinstance(node, ast.alias):
                named_elsewhere.setdefault(node.name.rsplit(".", 1)[-1], set()).add(path)
            elif isinstance(node, ast.Attribute):
                named_elsewhere.setdefault(node.attr, set()).add(path)
    found = []
    for path, tree in files:
        for name in _empty_dict_globals(tree):
            if named_elsewhere.get(name):
                continue
            cache = _memo_use(path, tree, name)
            if cache is not None:
                found.append(cache)
    return found


def _empty_dict_globals(tree: ast.Module) -> list[str]:
    """Names the module body binds exactly once, to ``{}`` or ``dict()``, and binds nowhere else."""
    bound: dict[str, int] = {}
    empty: set[str] = set()
    for stmt in tree.body:
        value = stmt.value if isinstance(stmt, (ast.Assign, ast.AnnAssign)) else None
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] if isinstance(stmt, ast.AnnAssign) else []
        if len(targets) == 1 and isinstance(targets[0], ast.Name) and _is_empty_dict(value):
            empty.add(targets[0].id)
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            bound[node.id] = bound.get(node.id, 0) + 1
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            for name in node.names:
                bound[name] = bound.get(name, 0) + 2  # a function may rebind it
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound[node.name] = bound.get(node.name, 0) + 1
        elif isinstance(node, ast.alias):
            alias = node.asname or node.name.split(".")[0]
            bound[alias] = bound.get(alias, 0) + 1
        elif isinstance(node, ast.arg):
            bound[node.arg] = bound.get(node.arg, 0) + 1
    return sorted(name for name in empty if bound.get(name) == 1)


def _is_empty_dict(value: ast.AST | None) -> bool:
    if isinstance(value, ast.Dict):
        return not value.keys
    return (isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "dict"
            and not value.args and not value.keywords)


def _memo_use(path: str, tree: ast.Module, name: str) -> MemoCache | None:
    parents: dict[int, ast.AST] = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[id(child)] = node
    uses: dict[int, tuple[ast.AST, list[ast.AST], list[ast.Assign]]] = {}  # function -> (it, lookups, stores)
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load)):
            continue
        parent = parents.get(id(node))
        if isinstance(parent, (ast.Assign, ast.AnnAssign)) and parents.get(id(parent)) is tree:
            continue  # (the binding itself has a Store name; a Load here would be ``x = C``: caught below)
        function = _enclosing_function(node, parents)
        if function is None:
            return None  # used at module level: filled or read at import, not a memo cache
        kind = _use_kind(node, parents)
        if kind is None:
            return None
        entry = uses.setdefault(id(function), (function, [], []))
        if kind[0] == "lookup":
            entry[1].append(kind[1])
        else:
            entry[2].append(kind[1])  # type: ignore[arg-type]
    if not uses:
        return None
    for function, lookups, stores in uses.values():
        if not lookups or not stores or not _returns_cached_values(function, name, stores, parents):
            return None
    return MemoCache(
        file=path, name=name,
        functions=tuple(sorted((f.lineno, f.col_offset) for f, _, _ in uses.values())),
        lookups=tuple(sorted((n.lineno, n.col_offset) for _, ls, _ in uses.values() for n in ls)),
        stores=tuple(sorted((n.lineno, n.col_offset) for _, _, ss in uses.values() for n in ss)))


def _enclosing_function(node: ast.AST, parents: dict[int, ast.AST]) -> ast.AST | None:
    current = parents.get(id(node))
    while current is not None and not isinstance(current, _FUNCTIONS):
        current = parents.get(id(current))
    return current


def _use_kind(node: ast.Name, parents: dict[int, ast.AST]) -> tuple[str, ast.AST] | None:
    """("lookup", the lookup expression) or ("store", the assignment), or None for any other use."""
    parent = parents.get(id(node))
    if isinstance(parent, ast.Attribute) and parent.value is node and parent.attr == "get":
        call = parents.get(id(parent))
        if isinstance(call, ast.Call) and call.func is parent and 1 <= len(call.args) <= 2 and not call.keywords:
            return ("lookup", call)
        return None
    if isinstance(parent, ast.Subscript) and parent.value is node:
        if isinstance(parent.ctx, ast.Load):
            return ("lookup", parent)
        statement = parents.get(id(parent))
        if isinstance(parent.ctx, ast.Store) and isinstance(statement, ast.Assign):
            return ("store", statement)
        return None
    if (isinstance(parent, ast.Compare) and len(parent.ops) == 1 and isinstance(parent.ops[0], (ast.In, ast.NotIn))
            and parent.comparators[0] is node):
        return ("lookup", parent)
    return None


def _returns_cached_values(function: ast.AST, name: str, stores: list[ast.Assign],
                           parents: dict[int, ast.AST]) -> bool:
    """Whether every ``return`` of ``function`` hands back what the cache holds for the key, and what it
    stores is computed without what it looked up (a counter ``C[k] = C.get(k, 0) + 1`` is no cache)."""
    if isinstance(function, ast.Lambda):
        return False
    own = [n for n in ast.walk(function) if _enclosing_function(n, parents) is function]
    if any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in own):
        return False
    assigns = [n for n in own if isinstance(n, ast.Assign)]
    looked_up = {t.id for n in assigns if _is_lookup(n.value, name) for t in n.targets if isinstance(t, ast.Name)}
    stored_names = {t.id for s in stores for t in s.targets if isinstance(t, ast.Name)}
    stored_names |= {s.value.id for s in stores if isinstance(s.value, ast.Name)}
    tainted = looked_up | {name}
    for n in own:
        if isinstance(n, (ast.AugAssign, ast.AnnAssign, ast.NamedExpr)) and _binds(n, stored_names | looked_up):
            return False
    for n in assigns:
        binds_stored = any(isinstance(t, ast.Name) and t.id in stored_names for t in n.targets)
        stores_a_name = n in stores and isinstance(n.value, ast.Name)  # that name's bindings are checked
        if ((n in stores and not stores_a_name) or binds_stored) and not _is_lookup(n.value, name) \
                and _reads(n.value, tainted):
            return False
    returns = [n for n in own if isinstance(n, ast.Return)]
    if not returns:
        return False
    for ret in returns:
        value = ret.value
        if not (_is_lookup(value, name) or isinstance(value, ast.Name) and value.id in stored_names):
            return False
    return True


def _binds(node: ast.AST, names: set[str]) -> bool:
    target = getattr(node, "target", None)
    return isinstance(target, ast.Name) and target.id in names


def _reads(value: ast.AST, names: set[str]) -> bool:
    return any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(value))


def _is_lookup(value: ast.AST | None, name: str) -> bool:
    if isinstance(value, ast.Subscript) and isinstance(value.value, ast.Name) and value.value.id == name:
        return True
    return (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "get"
            and isinstance(value.func.value, ast.Name) and value.func.value.id == name)
