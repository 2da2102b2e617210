"""Data dependence: what each CFG vertex defines and uses, and reaching definitions.

Locations (what a definition writes and a use reads):

* ``("var", SCOPE, NAME)``: a variable, resolved with CPython's own scoping rules (``symtable``): a
  local, a closure cell (named by the function that owns it), a module global (``SCOPE`` is
  ``<module>``), a class-body name (``SCOPE`` is the class).
* ``("attr", NAME)``: the heap abstraction for attributes is the *field name*: ``a.size`` and
  ``b.size`` are one location whatever objects ``a`` and ``b`` are (object-insensitive, so always
  weak updates: a write never kills another).
* Container contents are rooted at the variable that holds the container: ``xs[i] = v``,
  ``xs.append(v)`` are weak definitions of ``xs``'s location (or of ``("attr", F)`` for
  ``self.F.append(v)``), so later reads of ``xs`` depend on them.
* ``("state", KIND, VERTEX)``: hidden state one vertex hands to another (an iterator from
  ``for-iter`` to ``for-next``, a context manager from ``with-enter`` to ``with-exit``, a match
  subject to its cases).
* ``ANY``: what a construct the analysis does not model may touch (``exec``/``eval`` of code in a
  module or class body or in the module's globals, ``globals()`` written under a computed key or held
  on to, ``locals()``/``vars()`` in a class body, ``from m import *``). Such a vertex
  weakly defines ``ANY`` (every later use may depend on it) and uses ``ANY`` (it depends on every
  definition that reaches it); each is reported as an :class:`Unsupported` note with its location.
  ``obj.__dict__`` and ``vars(obj)`` written through (``.update(...)``, ``[k] = v``, ``= d``) write "some
  field" (``ATTR_ANY``) and obj; read otherwise, they use ``ANY`` (every field); under a constant key
  (``.get("k")``, ``["k"]``, ``"k" in``) it is field ``k``, and the current module's own ``__dict__``
  (``sys.modules[__name__]``) is its globals (see ``_Collector._object_dict``). ``globals()`` (and
  ``vars()``/``locals()`` in a module body) read where it stands (subscripted, compared, iterated, a
  reading method's receiver, ``**``-unpacked) reads the module's globals, under a constant key that
  one; ``vars()``/``locals()`` in a function reads its variables. ``exec``/``eval`` in a function use
  ``ANY`` and weakly define the module's globals and the function's variables (the objects they hold may
  change); with a globals mapping of the caller's own (``exec(text, namespace)``) they are an outside
  call that may change that mapping. ``__import__(...)`` only
  imports: a module body it may run writes import-time globals, which the SDG handles apart.

Soundness limits (documented, and caught by the slicer's fidelity check, which marks a feature
unsliceable rather than trust a wrong slice): aliasing is tracked only within a unit and only from a
variable to what it was taken from (``ys = xs``, ``starts, ends = closers[tag]``, ``for g in groups``: a
mutation through the first is one of the second, see :func:`_container_aliases`), or to what a program
function it called hands back a part of (``last = self.last_token()`` returning ``self.tokens[-1]``), or to
the receiver and arguments of an outside call not known to return an object of its own (``cell =
etree.SubElement(row, "td")``; :func:`externals.may_return_part`), or, for a variable bound to a
container's method (``add = out.append``, in the unit or an enclosing function), to that container (a
call through it reads it and, unless the method is pure, writes it), and
from a variable to the field or container it was stored into whole (``node.value = value``, or passed to a
program callee that stores it so: ``SequenceNode(tag, value)``) or to the values a generator yields
(``yield data``), not through fields otherwise; ``getattr``/``object.__getattribute__`` with a
computed name read the import-time fields (methods, class attributes) whose names start with the name's
constant part (``"parse_" + kind``; any field when there is none), but not fields set at run time;
what ``exec``/``eval``'d text does is not modelled beyond the above; code outside the
analysed source is assumed not to read or write attributes of the program's objects except through
calls the call graph resolves; an unknown call may read and mutate its arguments and receiver (the
conservative default of :mod:`externals`).
"""

from __future__ import annotations

import ast
import builtins
import symtable
from collections import defaultdict
from dataclasses import dataclass, field

from . import externals
from .ir import CFG, CodeUnit, Vertex

Location = tuple  # ("var", scope, name) | ("attr", name) | ("state", kind, vertex id) | ANY
ANY: Location = ("any",)
RET: Location = ("ret",)  # the value a unit hands back to its caller (return, yield, lambda body, element)
UNMODELLED_CALLS = {"exec", "eval", "globals", "locals", "vars", "__import__"}
FILE_SYSTEM: Location = ("fs",)  # the files and folders the program reads and writes, as one location
ATTR_ANY: tuple = ("attr", "*")
ATTR_PREFIX = "attr-prefix"  # (ATTR_PREFIX, "parse_"): some field named "parse_..." (getattr dispatch)
COMPUTED_GETATTR = {"getattr", "object.__getattribute__", "type.__getattribute__"}
DICT_MUTATORS = {"update", "setdefault", "pop", "popitem", "clear", "__setitem__", "__delitem__"}
DICT_READERS = {"get", "items", "keys", "values", "copy", "__contains__", "__getitem__", "__len__", "__iter__"}
NAMESPACE_CALLS = {"globals", "locals", "vars"}
# builtins that read a mapping they are given and keep no hold on it (``len(globals())``, ``sorted(vars())``)
READING_BUILTINS = {"len", "list", "sorted", "dict", "set", "tuple", "frozenset", "repr", "str", "print", "any", "all"}


def _constant_prefix(node: ast.AST) -> str | None:
    """The constant start of a computed string: ``"parse_" + name``, ``f"parse_{name}"``."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left = node.left
        if isinstance(left, ast.Constant) and isinstance(left.value, str):
            return left.value
        return _constant_prefix(left)
    if isinstance(node, ast.JoinedStr) and node.values:
        first = node.values[0]
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            return first.value
    return None


def _names_a_builtin(call: ast.Call, name: str | None) -> bool:
    """``eval("exec")``: an ``eval`` of a string literal that is just a builtin's name (Whoosh's
    ``exec_ = eval("exec")``) reads that builtin and touches nothing else."""
    if name != "eval" or len(call.args) != 1 or call.keywords:
        return False
    text = call.args[0]
    if not (isinstance(text, ast.Constant) and isinstance(text.value, str)):
        return False
    try:
        expr = ast.parse(text.value.strip(), mode="eval").body
    except SyntaxError:
        return False
    return isinstance(expr, ast.Name) and expr.id in dir(builtins)
"""Some attribute, named at run time (``setattr(obj, name, v)``): every plain attribute read uses it too.
A method call's lookup (``x.m(...)``) does not: methods are rarely set by computed names, and a program
that does so would otherwise make every call depend on every such ``setattr``."""


@dataclass(frozen=True)
class Unsupported:
    """A construct the analysis does not model, treated conservatively."""

    file: str
    line: int
    col: int
    what: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.what} is not modelled; treated as reading and writing anything"


@dataclass
class Access:
    """Definitions and uses of one vertex."""

    defs: dict[Location, bool] = field(default_factory=dict)  # location -> strong (kills) or weak
    uses: set[Location] = field(default_factory=set)
    calls: list[ast.Call] = field(default_factory=list)  # call sites evaluated by the vertex
    # ``x.m(...)``: method name -> the calls whose callee expression looks it up (a use of ``("attr", m)``
    # that only finds the method to call; see sdg's ``_looked_up_writers``)
    lookups: dict[str, list[ast.Call]] = field(default_factory=dict)
    field_reads: set[str] = field(default_factory=set)  # attribute fields read in any other way
    outside_effects: list[str] = field(default_factory=list)  # print/open/... it calls
    unsupported: list[tuple[int, int, str]] = field(default_factory=list)  # (line, col, what)

    def havoc(self, node: ast.AST, what: str) -> None:
        """A construct we do not model: may read and write anything."""
        self.define(ANY, strong=False)
        self.uses.add(ANY)
        self.unsupported.append((getattr(node, "lineno", 0), getattr(node, "col_offset", 0), what))

    def define(self, loc: Location, strong: bool) -> None:
        self.defs[loc] = self.defs.get(loc, False) or strong


class Scopes:
    """Name resolution for every unit of a module, from ``symtable`` (the compiler's own tables)."""

    KIND_NAMES = {"<lambda>": "lambda", "<listcomp>": "listcomp", "<setcomp>": "setcomp",
                  "<dictcomp>": "dictcomp", "<genexpr>": "genexpr"}

    def __init__(self, source: str, file: str, root: CodeUnit) -> None:
        self.table_of: dict[int, symtable.SymbolTable] = {}
        self.unit_of_table: dict[int, CodeUnit] = {}
        module = symtable.symtable(source, file, "exec")
        self._match(module, root)
        # the names the module binds (its ``__dict__`` when its body has run), and the globals bound to the
        # module object itself (``oldmod = sys.modules[__name__]``) once and nowhere else
        self.module_globals: frozenset[str] = frozenset(
            s.get_name() for s in module.get_symbols() if s.is_assigned() or s.is_imported())
        # the globals only ``import`` binds: modules, and what ``from m import x`` binds (the alias rules
        # take neither for an object a call's result is part of; see _is_module)
        self.imported_modules: frozenset[str] = frozenset(
            s.get_name() for s in module.get_symbols() if s.is_imported() and not s.is_assigned())
        stores: dict[str, int] = defaultdict(int)
        bound_to_self: set[str] = set()
        for node in ast.walk(root.node):
            if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
                stores[node.id] += 1
            elif isinstance(node, (ast.Global, ast.Nonlocal)):
                stores.update({name: stores[name] + 2 for name in node.names})
        for stmt in getattr(root.node, "body", []):
            if (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
                    and is_current_module(stmt.value)):
                bound_to_self.add(stmt.targets[0].id)
        self.module_self_names: frozenset[str] = frozenset(n for n in bound_to_self if stores[n] == 1)

    def _match(self, table: symtable.SymbolTable, unit: CodeUnit) -> None:
        self.table_of[id(unit)] = table
        self.unit_of_table[id(table)] = unit
        pool: dict[tuple[int, str], list[symtable.SymbolTable]] = defaultdict(list)
        for child in table.get_children():
            pool[(child.get_lineno(), child.get_name())].append(child)
        for child_unit in unit.children:
            name = child_unit.qualname.rsplit(".", 1)[-1].split("@")[0]
            name = self.KIND_NAMES.get(name, name)
            candidates = pool.get((child_unit.node.lineno, name))
            if candidates:
                self._match(candidates.pop(0), child_unit)

    def resolve(self, unit: CodeUnit, name: str) -> Location:
        """The variable location ``name`` means inside ``unit``."""
        table = self.table_of.get(id(unit))
        if table is None:
            return ("var", "<module>", name)
        try:
            symbol = table.lookup(name)
        except KeyError:
            return ("var", "<module>", name) if unit.kind != "class" else ("var", unit.qualname, name)
        if _is_global(table, symbol) or (unit.kind == "module"):
            return ("var", "<module>", name)
        if symbol.is_free():
            outer = unit.parent
            while outer is not None:
                outer_table = self.table_of.get(id(outer))
                if outer.kind not in ("class",) and outer_table is not None:
                    try:
                        if outer_table.lookup(name).is_local():
                            return ("var", outer.qualname if outer.kind != "module" else "<module>", name)
                    except KeyError:
                        pass
                outer = outer.parent
            return ("var", "<module>", name)
        if symbol.is_local() or symbol.is_parameter():
            return ("var", unit.qualname, name)
        return ("var", "<module>", name)


def _is_global(table: symtable.SymbolTable, symbol: symtable.Symbol) -> bool:
    """``symbol.is_global()`` without its slip: CPython's symtable treats every table whose name is
    ``top`` as the module's, so a local of a function called ``top`` reads as a global there."""
    if table.get_type() != "module" and symbol.is_local():
        return False
    return symbol.is_global()


def _constant_key(node: ast.AST) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def is_current_module(node: ast.AST) -> bool:
    """``sys.modules[__name__]``: the module object whose body is running."""
    return (isinstance(node, ast.Subscript) and dotted_name(node.value) == "sys.modules"
            and isinstance(node.slice, ast.Name) and node.slice.id == "__name__")


def dotted_name(node: ast.AST) -> str | None:
    """``a.b.c`` for an attribute chain over a name."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = dotted_name(node.value)
        return None if base is None else f"{base}.{node.attr}"
    return None


class _Collector(ast.NodeVisitor):
    """Defs and uses of the expressions/statements a vertex evaluates (not of nested units' bodies).

    ``internal(call)`` says whether the call graph resolved a call to code of the program; such a call's
    effects come from its callees' summaries (the SDG adds them), not from the external-code model.
    """

    def __init__(self, unit: CodeUnit, scopes: Scopes, access: Access, nested: dict[int, CodeUnit],
                 internal=lambda call: False, bound: dict[Location, list[tuple[Location, str]]] | None = None) -> None:
        self.unit, self.scopes, self.access, self.nested = unit, scopes, access, nested
        self.internal = internal
        self.bound = bound or {}  # variable -> (receiver, method) of the bound methods it may hold
        self.dict_writes: set[int] = set()  # ``obj.__dict__`` nodes that are written through
        # ``obj.__dict__`` nodes used with a constant key (``.get("k")``, ``["k"]``, ``"k" in``): id -> the key
        self.dict_keys: dict[int, str] = {}
        # ``obj.__dict__`` nodes updated from the current module's own ``__dict__``: id -> the names copied
        self.dict_copies: dict[int, frozenset[str]] = {}
        # dictionary nodes (``obj.__dict__``, ``vars(obj)``, ``globals()``...) only read where they stand:
        # subscripted, compared, iterated, a reading method's receiver, ``**`` unpacked
        self.dict_reads: set[int] = set()

    def var(self, name: str) -> Location:
        return self.scopes.resolve(self.unit, name)

    def root(self, node: ast.AST) -> Location | None:
        """The location a mutation through ``node`` writes: its root variable or its last field."""
        if isinstance(node, ast.Name):
            return self.var(node.id)
        if isinstance(node, ast.Attribute):
            return ("attr", node.attr)
        if isinstance(node, ast.Subscript):
            return self.root(node.value)
        if isinstance(node, ast.Starred):
            return self.root(node.value)
        return None

    def mutate(self, node: ast.AST) -> None:
        """A weak write of every location a mutation through ``node`` may change: the root of each value a
        conditional or boolean expression may give (``(parents[-1] if parents else top).append(t)``)."""
        for option in _alternatives(node):
            loc = self.root(option)
            if loc is not None:
                self.access.define(loc, strong=False)

    # -- names, attributes, subscripts
    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Load):
            self.access.uses.add(self.var(node.id))
        else:
            self.access.define(self.var(node.id), strong=True)

    def visit_Attribute(self, node: ast.Attribute, lookup_for: ast.Call | None = None) -> None:
        """``lookup_for``: the call whose callee ``node`` is (a method lookup)."""
        if node.attr == "__dict__":
            self._object_dict(node)
            return
        self.visit(node.value)
        if isinstance(node.ctx, ast.Load):
            self.access.uses.add(("attr", node.attr))
            if lookup_for is not None:
                self.access.lookups.setdefault(node.attr, []).append(lookup_for)
            else:
                self.access.field_reads.add(node.attr)
                self.access.uses.add(ATTR_ANY)
        else:
            self.access.define(("attr", node.attr), strong=False)

    def _viewed(self, node: ast.AST) -> tuple[str, ast.expr | None] | None:
        """Which dictionary ``node`` is: ``("object", obj)`` for ``obj.__dict__`` and ``vars(obj)``;
        ``("module", None)`` for ``globals()`` and, in a module body, ``vars()`` / ``locals()``;
        ``("locals", None)`` for those two in a function, lambda or comprehension; ``("class", None)`` in
        a class body; None for anything else (also for a program function named ``vars``)."""
        if isinstance(node, ast.Attribute) and node.attr == "__dict__":
            return ("object", node.value)
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in NAMESPACE_CALLS
                and not node.keywords and self._is_builtin(node.func.id)):
            return None
        if node.func.id == "vars" and len(node.args) == 1 and not isinstance(node.args[0], ast.Starred):
            return ("object", node.args[0])
        if node.args:
            return None
        if node.func.id == "globals" or self.unit.kind == "module":
            return ("module", None)
        return ("class", None) if self.unit.kind == "class" else ("locals", None)

    def _is_builtin(self, name: str) -> bool:
        """``name`` is the builtin of that name here (no variable of the program binds it)."""
        return self.var(name) == ("var", "<module>", name) and name not in self.scopes.module_globals

    def _builtin_object(self, node: ast.AST) -> bool:
        """A builtin (``str`` of sqlparse's ``getattr(str, case)``): none of its attributes is a field the
        program sets."""
        return isinstance(node, ast.Name) and hasattr(builtins, node.id) and self._is_builtin(node.id)

    def _read_only(self, node: ast.AST) -> None:
        """Mark a dictionary node that is only read where it stands (see ``dict_reads``)."""
        if self._viewed(node) is not None:
            self.dict_reads.add(id(node))

    def _object_dict(self, node: ast.expr) -> None:
        """A dictionary node (see :meth:`_viewed`): an object's attribute dictionary, or a namespace."""
        kind, holder = self._viewed(node)
        if kind == "object":
            self._attribute_dict(node, holder)
        elif kind == "class":
            self.access.havoc(node, f"{node.func.id}()")
        else:
            self._namespace(node, kind)

    def _namespace(self, node: ast.Call, kind: str) -> None:
        """``globals()`` (and ``vars()`` / ``locals()`` in a module body) is the module's globals: read
        where it stands it reads them all, under a constant key (``globals()["name"]``, ``"name" in
        globals()``) it reads or writes that one; written through otherwise, or held on to, it is not
        modelled (may read and write anything). ``vars()`` / ``locals()`` in a function is a snapshot of
        its variables: it reads them all and writing into it changes none of them."""
        written = id(node) in self.dict_writes
        if kind == "locals":
            self.access.uses.update(self._visible_variables())
            return
        key = self.dict_keys.get(id(node))
        if key is not None:
            self.access.uses.add(("var", "<module>", key))
            if written:
                self.access.define(("var", "<module>", key), strong=False)
            return
        if id(node) in self.dict_reads and not written:
            self.access.uses.update(("var", "<module>", name) for name in self.scopes.module_globals)
            return
        self.access.havoc(node, f"{node.func.id}()")

    def _visible_variables(self) -> set[Location]:
        """The variables ``locals()`` may show in this unit: its own, its parameters and the cells it
        reads, and for a comprehension those of the units around it (Python 3.12 inlines it there)."""
        found: set[Location] = set()
        unit: CodeUnit | None = self.unit
        while unit is not None:
            table = self.scopes.table_of.get(id(unit))
            if unit.kind == "module":
                found.update(("var", "<module>", name) for name in self.scopes.module_globals)
                break
            if table is not None:
                found.update(self.scopes.resolve(unit, s.get_name()) for s in table.get_symbols()
                             if s.is_local() or s.is_parameter() or s.is_free())
            if unit.kind != "comprehension":
                break
            unit = unit.parent
        return found

    def _attribute_dict(self, node: ast.expr, holder: ast.expr) -> None:
        """``obj.__dict__``: a store, or a mutation through it (``.update(...)``, ``[k] = v``), writes some
        field of obj (``ATTR_ANY``, which every field read uses) and obj; any other read of it reads
        every field, which only ``ANY`` stands for (a use, reported as not modelled).

        Two uses name their fields: a constant key (``obj.__dict__.get("k")``, ``["k"]``, ``"k" in``,
        ``.setdefault("k", v)``) reads, or writes, field ``k`` alone; and the current module's own
        ``__dict__`` (``sys.modules[__name__].__dict__``) holds the module's globals, so reading it reads
        them, and copying it into another object (``new.__dict__.update(old.__dict__)``, Pygments'
        lazy-loading module) writes those fields. ``vars(obj)`` is ``obj.__dict__``."""
        self.visit(holder)
        key = self.dict_keys.get(id(node))
        if key is not None:
            self.access.uses.add(("attr", key))
            self.access.field_reads.add(key)
            if id(node) in self.dict_writes:
                self.access.define(("attr", key), strong=False)
                root = self.root(holder)
                if root is not None:
                    self.access.define(root, strong=False)
            return
        copied = self.dict_copies.get(id(node))
        if copied is not None:
            for name in copied:
                self.access.define(("attr", name), strong=False)
            root = self.root(holder)
            if root is not None:
                self.access.define(root, strong=False)
            return
        read = not isinstance(getattr(node, "ctx", None), (ast.Store, ast.Del)) and id(node) not in self.dict_writes
        if read and self._current_module(holder):
            self.access.uses.update(("var", "<module>", name) for name in self.scopes.module_globals)
            return
        if read:
            self.access.uses.add(ANY)
            self.access.unsupported.append((node.lineno, node.col_offset, "__dict__"))
            return
        self.access.define(ATTR_ANY, strong=False)
        root = self.root(holder)
        if root is not None:
            self.access.define(root, strong=False)

    def _current_module(self, node: ast.AST) -> bool:
        """``sys.modules[__name__]``, or a module global bound to it once and never rebound."""
        if isinstance(node, ast.Name):
            return self.var(node.id) == ("var", "<module>", node.id) and node.id in self.scopes.module_self_names
        return is_current_module(node)

    def visit_Compare(self, node: ast.Compare) -> None:
        constant = _constant_key(node.left)
        if constant is not None and len(node.ops) == 1 and isinstance(node.ops[0], (ast.In, ast.NotIn)):
            target = node.comparators[0]
            if self._viewed(target) is not None:
                self.dict_keys[id(target)] = constant
        for operand in [node.left, *node.comparators]:
            self._read_only(operand)
        self.generic_visit(node)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        constant = _constant_key(node.slice)
        viewed = self._viewed(node.value) is not None
        if viewed and constant is not None:
            self.dict_keys[id(node.value)] = constant
        if isinstance(node.ctx, ast.Load):
            self._read_only(node.value)
            self.generic_visit(node)
            return
        if viewed:
            self.dict_writes.add(id(node.value))
            self._object_dict(node.value)
            self.visit(node.slice)
            return
        self.visit(_as_load(node.value))
        self.visit(node.slice)
        loc = self.root(node.value)
        if loc is not None:
            self.access.define(loc, strong=False)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self.visit(node.value)
        self.visit(_as_load(node.target))
        target = node.target
        if isinstance(target, ast.Name):
            self.access.define(self.var(target.id), strong=True)
        else:
            self.visit(target)

    def visit_NamedExpr(self, node: ast.NamedExpr) -> None:
        self.visit(node.value)
        # a walrus in a comprehension binds in the enclosing function: symtable already knows
        self.access.define(self.var(node.target.id), strong=True)

    def visit_Delete(self, node: ast.Delete) -> None:
        for target in node.targets:
            if isinstance(target, ast.Name):
                self.access.define(self.var(target.id), strong=True)
            else:
                self.visit(_as_load(target))
                loc = self.root(target)
                if loc is not None:
                    self.access.define(loc, strong=False)

    def visit_Global(self, node: ast.Global) -> None:
        pass

    visit_Nonlocal = visit_Global

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self.access.define(self.var((alias.asname or alias.name).split(".")[0]), strong=True)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        for alias in node.names:
            if alias.name != "*":
                self.access.define(self.var(alias.asname or alias.name), strong=True)
            else:
                self.access.havoc(node, f"from {node.module} import *")

    # -- calls and their effects
    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if self._viewed(node) is not None:  # vars(obj), globals(), locals(), vars()
            self.access.calls.append(node)
            self._object_dict(node)
            return
        if isinstance(func, ast.Attribute) and self._viewed(func.value) is not None:
            if func.attr in DICT_MUTATORS:
                self.dict_writes.add(id(func.value))
            elif func.attr in DICT_READERS:
                self.dict_reads.add(id(func.value))
            constant = _constant_key(node.args[0]) if node.args else None
            if constant is not None and func.attr in ("get", "setdefault", "pop", "__getitem__", "__contains__"):
                self.dict_keys[id(func.value)] = constant
            elif (func.attr == "update" and len(node.args) == 1 and not node.keywords
                  and isinstance(node.args[0], ast.Attribute) and node.args[0].attr == "__dict__"
                  and self._current_module(node.args[0].value)):
                self.dict_copies[id(func.value)] = frozenset(self.scopes.module_globals)
        for keyword in node.keywords:
            if keyword.arg is None:  # ``**locals()``: unpacked into the call, a copy
                self._read_only(keyword.value)
        if isinstance(func, ast.Name) and func.id in READING_BUILTINS and self._is_builtin(func.id):
            for argument in node.args:
                self._read_only(argument)
        if isinstance(node.func, ast.Attribute) and isinstance(node.func.ctx, ast.Load):
            self.visit_Attribute(node.func, lookup_for=node)
            for child in [*node.args, *node.keywords]:
                self.visit(child)
        else:
            self.generic_visit(node)
        self.access.calls.append(node)
        name = dotted_name(node.func)
        self._file_system(node, name)
        if isinstance(node.func, ast.Name) and self._bound_method_call(node.func):
            return
        if self.internal(node):
            if isinstance(node.func, ast.Attribute) and externals.is_mutator(node.func.attr):
                # resolved to the program through a function it is given (``items.sort(key=lambda v: -v)``):
                # the outside method still writes its receiver
                self.mutate(node.func.value)
            return
        if name in ("setattr", "delattr") and len(node.args) >= 2:
            self.mutate(node.args[0])
            attr = node.args[1]
            named = isinstance(attr, ast.Constant) and isinstance(attr.value, str)
            self.access.define(("attr", attr.value) if named else ATTR_ANY, strong=False)
            return
        if name in COMPUTED_GETATTR and len(node.args) >= 2 and not self._builtin_object(node.args[0]):
            attr = node.args[1]
            if not (isinstance(attr, ast.Constant) and isinstance(attr.value, str)):
                # getattr(self, "parse_" + name), object.__getattribute__(self, name): some field whose
                # name starts with the constant part of the name ("": any field)
                self.access.uses.add((ATTR_PREFIX, _constant_prefix(attr) or ""))
        if isinstance(node.func, ast.Attribute):
            method = node.func.attr
            if name is not None and externals.consumes(name):
                self._advance_arguments(node, name)
            elif externals.consumes_arguments(method):
                self._advance_arguments(node)
            if name and externals.has_outside_effect(name) or externals.has_outside_effect(method) and name in (None, method):
                self.access.outside_effects.append(name or method)
            if externals.is_pure_method(method) or (name is not None and externals.is_pure(name)):
                return
            if self._mutated_argument(node, name):
                return
            if externals.is_mutator(method):
                self.mutate(node.func.value)
                return
            self._unknown(node)
            return
        if name == "__import__":
            return  # imports a module and returns it: module bodies only write import-time globals
        if name in ("exec", "eval") and self._own_namespace(node):
            return
        if name in UNMODELLED_CALLS and not _names_a_builtin(node, name):
            if name in ("exec", "eval") and self.unit.kind in ("function", "lambda", "comprehension"):
                self._code_in_function(node, name)
                return
            self.access.havoc(node, f"{name}()")
            return
        if name is not None and externals.consumes(name):
            self._advance_arguments(node, name)
            return
        if name is not None:
            if externals.has_outside_effect(name):
                self.access.outside_effects.append(name)
            if externals.is_pure(name):
                return
            if self._mutated_argument(node, name):
                return
        self._unknown(node)

    def _own_namespace(self, node: ast.Call) -> bool:
        """``exec(code, namespace)`` / ``eval(code, namespace)`` with a globals mapping of the caller's
        own (``exec(f.read(), custom_namespace)``, Pygments' loading of a lexer from a file): the code
        runs outside the program with that mapping as its globals, so it is treated as any outside call
        is: it reads its arguments and may change the mappings it is given (True then). Code run in
        the module's own globals (``globals()``) or a class body's namespace stays unmodelled."""
        given = {k.arg: k.value for k in node.keywords}
        namespaces = [node.args[i] if len(node.args) > i else given.get(key) for i, key in ((1, "globals"), (2, "locals"))]
        if namespaces[0] is None or any(isinstance(a, ast.Starred) for a in node.args) or None in given:
            return False
        for namespace in namespaces:
            if namespace is None or namespace is namespaces[1] and self._viewed(namespace) == ("locals", None):
                continue
            if (isinstance(namespace, ast.Constant) or self._viewed(namespace) is not None
                    or self._current_module(namespace)):
                return False
            self.mutate(namespace)
        return True

    def _code_in_function(self, node: ast.Call, name: str) -> None:
        """``eval(text)`` / ``exec(text)`` in a function (docutils' ``eval(sizestring)``): code outside the
        program that may read anything (``ANY``); it cannot rebind the function's variables (CPython
        does not write ``locals()`` back), only the module's globals (``global x`` in the text), and it
        may change the objects any visible variable holds, as an outside call given them all may: weak
        definitions of the module's globals and of the function's variables, reported as not modelled
        but not a write of *anything* (which would cost the whole program the import-time-constant
        shortcut)."""
        self.access.uses.add(ANY)
        self.access.unsupported.append((node.lineno, node.col_offset, f"{name}()"))
        for loc in self._visible_variables() | {("var", "<module>", n) for n in self.scopes.module_globals}:
            self.access.define(loc, strong=False)

    def _bound_method_call(self, func: ast.Name) -> bool:
        """A call through a variable holding an outside method bound to its object (``add = out.append``,
        ``cache_get = cache.get``, also from an enclosing function): it reads that object and, unless the
        method mutates nothing, writes it. True when ``func`` is such a variable and its methods are
        known (then the arguments are only read, as ``out.append(x)`` reads ``x``)."""
        bound = self.bound.get(self.var(func.id))
        if not bound:
            return False
        known = True
        for receiver, method in bound:
            self.access.uses.add(receiver)
            if receiver[0] == "attr":
                self.access.field_reads.add(receiver[1])
            if not externals.is_pure_method(method):
                self.access.define(receiver, strong=False)
            known = known and (externals.is_pure_method(method) or externals.is_mutator(method))
        return known

    def _file_system(self, node: ast.Call, name: str | None) -> None:
        """A call that reads or writes files uses or (weakly) defines the file-system location, whether
        the call graph resolved it or not (``self.file.write(b)`` may reach the program's own ``write``s
        by name and a real file's)."""
        method = node.func.attr if isinstance(node.func, ast.Attribute) else None
        mode_arg = next((k.value for k in node.keywords if k.arg == "mode"), None)
        if mode_arg is None:  # a path object's ``open(mode)`` takes the mode first, ``open(path, mode)`` second
            position = 0 if method == "open" and name not in externals.FILE_SYSTEM["openers"] else 1
            mode_arg = node.args[position] if len(node.args) > position else None
        mode = None if mode_arg is None else (
            mode_arg.value if isinstance(mode_arg, ast.Constant) and isinstance(mode_arg.value, str) else "?")
        reads, writes = externals.file_system_effect(name, method, mode)
        if reads:
            self.access.uses.add(FILE_SYSTEM)
        if writes:
            self.access.define(FILE_SYSTEM, strong=False)

    def _mutated_argument(self, node: ast.Call, name: str | None) -> bool:
        """A known module function that mutates one argument (``heapq.heappush(heap, x)``): a weak write
        of that argument; True when ``name`` is one."""
        index = externals.mutated_argument(name) if name is not None else None
        if index is None or index >= len(node.args):
            return False
        self.mutate(node.args[index])
        return True

    def _advance_arguments(self, node: ast.Call, name: str | None = None) -> None:
        """Iterating an argument advances it if it is an iterator: a weak write of each argument the call
        iterates (for a consumer ``name`` known by position, see externals.iterated_arguments; any other
        call: every argument)."""
        if name is None or any(isinstance(a, ast.Starred) for a in node.args):
            iterated = [*node.args, *(k.value for k in node.keywords)]
        else:
            iterated = [node.args[i] for i in externals.iterated_arguments(name, len(node.args))]
            iterated += [k.value for k in node.keywords if k.arg in (None, "iterable")]
        for arg in iterated:  # (not through ``x or []``: an iterator is always true, so that is a container)
            loc = self.root(arg)
            if loc is not None:
                self.access.define(loc, strong=False)

    def _unknown(self, node: ast.Call) -> None:
        """Conservative default: the call may mutate its receiver and every argument."""
        if isinstance(node.func, ast.Attribute):
            self.mutate(node.func.value)
        for arg in [*node.args, *(k.value for k in node.keywords)]:
            self.mutate(arg)

    # -- nested units: their bodies run elsewhere; what they read from here is used here
    def _nested_free_uses(self, node: ast.AST) -> None:
        unit = self.nested.get(id(node))
        if unit is None:
            return
        inner = _free_reads(unit, self.scopes)
        self.access.uses.update(inner)
        self.access.field_reads.update(loc[1] for loc in inner if loc[0] == "attr")

    def visit_Lambda(self, node: ast.Lambda) -> None:
        for default in [*node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)]:
            self.visit(default)
        self._nested_free_uses(node)

    def _comprehension(self, node: ast.AST) -> None:
        self._read_only(node.generators[0].iter)
        self.visit(node.generators[0].iter)  # evaluated here; the rest runs in the comprehension's unit
        self._nested_free_uses(node)

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _comprehension


def _as_load(node: ast.AST) -> ast.AST:
    """A copy of a target expression read instead of written."""
    copy = ast.parse(ast.unparse(node), mode="eval").body if isinstance(node, ast.expr) else node
    return ast.copy_location(copy, node)


def _free_reads(unit: CodeUnit, scopes: Scopes) -> set[Location]:
    """Locations a nested unit reads that belong to enclosing scopes (closures, globals, fields)."""
    reads: set[Location] = set()
    own = unit.qualname
    outside: set[int] = set()
    if unit.kind == "comprehension":  # the outermost iterable is evaluated by the enclosing unit
        outside = {id(n) for n in ast.walk(unit.node.generators[0].iter)}
    for node in ast.walk(unit.node):
        if id(node) in outside:
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            inner = _innermost(unit, node)
            loc = scopes.resolve(inner, node.id)
            if loc[1] != inner.qualname and not loc[1].startswith(own + "."):
                reads.add(loc)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
            reads.add(("attr", node.attr))
    return reads


def _innermost(unit: CodeUnit, node: ast.AST) -> CodeUnit:
    """The unit (unit itself or a descendant) whose own code contains node, by source span."""
    for child in unit.children:
        s = child.span
        if s and (s[0], s[1]) <= (node.lineno, node.col_offset) and (node.end_lineno, node.end_col_offset) <= (s[2], s[3]):
            return _innermost(child, node)
    return unit


def accesses(cfg: CFG, scopes: Scopes, internal=lambda call: False, returned_parts=None,
             stored_parts=None, outside=None) -> dict[int, Access]:
    """Defs and uses of every vertex of one unit's CFG (``internal``: see :class:`_Collector`;
    ``returned_parts``, ``stored_parts``, ``outside``: see :func:`_container_aliases`; ``outside``
    defaults to the calls that are not ``internal``)."""
    unit = cfg.unit
    nested = {id(child.node): child for child in unit.children}
    if outside is None:
        outside = lambda call: not internal(call)  # noqa: E731
    aliases = _container_aliases(cfg, scopes, returned_parts, stored_parts, outside)
    bound = _bound_methods(unit, scopes)
    result: dict[int, Access] = {}
    for vertex in cfg.vertices.values():
        access = Access()
        collector = _Collector(unit, scopes, access, nested, internal, bound)
        node = vertex.node
        kind = vertex.kind
        if kind == "entry":
            for name in _parameters(unit):
                access.define(scopes.resolve(unit, name), strong=True)
        elif kind in ("stmt", "test", "expr", "match-subject"):
            if kind == "expr" and unit.kind == "comprehension":
                for element in ([node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]):
                    collector.visit(element)
            elif node is not None:
                collector.visit(node)
            if kind == "match-subject":
                access.define(("state", "match", vertex.id), strong=True)
        elif kind == "def":
            _def_statement(node, collector, access)
        elif kind == "for-iter":
            collector._read_only(node)
            collector.visit(node)
            access.define(("state", "iter", _loop_key(cfg, vertex)), strong=True)
        elif kind == "for-next":
            key = _loop_key(cfg, vertex)
            access.uses.add(("state", "iter", key))
            access.define(("state", "iter", key), strong=False)
            head = cfg.vertices.get(key)
            if head is not None and head.kind == "for-iter" and isinstance(head.node, ast.Name):
                # ``for pos, char in iterable`` where iterable is an iterator (enumerate, a generator):
                # the loop's iterator *is* that object, and ``consume(iterable, n)`` in the body advances it
                access.uses.add(scopes.resolve(unit, head.node.id))
            if unit.kind == "comprehension" and vertex.id == _first_next(cfg):
                access.uses.add(scopes.resolve(unit, ".0"))
            collector.visit(node)
        elif kind == "with-enter":
            collector.visit(node.context_expr)
            if node.optional_vars is not None:
                collector.visit(node.optional_vars)
            access.define(("state", "with", _position(node.context_expr)), strong=True)
        elif kind == "with-exit":
            access.uses.update(("state", "with", _position(item.context_expr)) for item in node.items)
            for item in node.items:  # leaving ``with open(...) as f`` closes f: what was written reaches the file
                call = item.context_expr
                if isinstance(call, ast.Call) and externals.file_system_effect(dotted_name(call.func), None, "?")[1]:
                    access.define(FILE_SYSTEM, strong=False)
                    if isinstance(item.optional_vars, ast.Name):
                        access.uses.add(scopes.resolve(unit, item.optional_vars.id))
        elif kind == "handler":
            if node.type is not None:
                collector.visit(node.type)
            if node.name:
                access.define(scopes.resolve(unit, node.name), strong=True)
        elif kind == "case":
            access.uses.update(("state", "match", v) for v in _subjects(cfg, vertex))
            collector.visit(node.pattern)
            for capture in _captures(node.pattern):
                access.define(scopes.resolve(unit, capture), strong=True)
            if node.guard is not None:
                collector.visit(node.guard)
        if kind == "stmt" and isinstance(node, ast.Return) or kind == "expr":
            access.define(RET, strong=False)
        if node is not None and kind in ("stmt", "test", "expr") and any(
            isinstance(n, (ast.Yield, ast.YieldFrom)) for n in _own_nodes(node)
        ):
            access.define(RET, strong=False)
        for loc in [loc for loc, strong in access.defs.items() if not strong and loc in aliases]:
            for root in aliases[loc]:  # ``starts.append(x)`` after ``starts, ends = closers[tag]`` changes closers
                access.define(root, strong=False)
        if unit.kind == "module":
            # A module's globals are the module object's attributes: ``tokens.Name`` read elsewhere
            # (``from pkg import tokens``) reads what ``Name = ...`` wrote here.
            for loc in list(access.defs):
                if loc[0] == "var" and loc[1] == "<module>":
                    access.define(("attr", loc[2]), strong=False)
        result[vertex.id] = access
    return result


BINDABLE_METHODS = frozenset(externals.TABLES["mutators"] | externals.TABLES["pure_methods"]
                             | externals.TABLES["consuming_methods"])
"""Methods of the standard containers and strings: ``add = out.append`` holds one bound to ``out``."""


def _bound_methods(unit: CodeUnit, scopes: Scopes) -> dict[Location, list[tuple[Location, str]]]:
    """Variables a unit or an enclosing function binds to a container's method (``add = out.append``,
    ``cache_pop = cache.pop`` in an ``__init__`` whose nested functions call it): variable -> (the
    object's location, the method) for each such binding. Flow-insensitive."""
    found: dict[Location, list[tuple[Location, str]]] = {}
    owner: CodeUnit | None = unit
    while owner is not None:
        for node in _own_nodes(owner.node):
            if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                    and isinstance(node.value, ast.Attribute) and node.value.attr in BINDABLE_METHODS):
                continue
            receiver = node.value.value
            while isinstance(receiver, ast.Subscript):
                receiver = receiver.value
            where = (scopes.resolve(owner, receiver.id) if isinstance(receiver, ast.Name)
                     else ("attr", receiver.attr) if isinstance(receiver, ast.Attribute) else None)
            if where is None or _is_module(where, scopes):
                continue
            held = scopes.resolve(owner, node.targets[0].id)
            if owner is unit or held[1] == owner.qualname:  # an enclosing function's own variable (a cell)
                found.setdefault(held, []).append((where, node.value.attr))
        owner = owner.parent if owner.kind in ("function", "lambda", "comprehension") else None
    return found


def _own_nodes(node: ast.AST):
    """Nodes of ``node`` that belong to its own unit (not inside nested lambdas/comprehensions/defs)."""
    todo = [node]
    while todo:
        current = todo.pop()
        yield current
        for child in ast.iter_child_nodes(current):
            if not isinstance(child, (ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
                                      ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
                todo.append(child)


def _position(node: ast.AST) -> tuple[int, int]:
    return (node.lineno, node.col_offset)


def _parameters(unit: CodeUnit) -> list[str]:
    node = unit.node
    if unit.kind in ("function", "lambda"):
        a = node.args
        names = [p.arg for p in [*a.posonlyargs, *a.args, *a.kwonlyargs]]
        names += [p.arg for p in (a.vararg, a.kwarg) if p is not None]
        return names
    if unit.kind == "comprehension":
        return [".0"]
    return []


def _def_statement(node: ast.AST, collector: _Collector, access: Access) -> None:
    for decorator in node.decorator_list:
        collector.visit(decorator)
    if isinstance(node, ast.ClassDef):
        for base in [*node.bases, *(k.value for k in node.keywords)]:
            collector.visit(base)
    else:
        for default in [*node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)]:
            collector.visit(default)
    access.define(collector.var(node.name), strong=True)


def _loop_key(cfg: CFG, vertex: Vertex) -> int:
    """Pair a for-next with its for-iter: the iter's vertex id (or the next's own id in a comprehension)."""
    if vertex.kind == "for-iter":
        return vertex.id
    for pred in cfg.graph.predecessors(vertex.id):
        if cfg.vertices[pred].kind == "for-iter" and cfg.graph.edges[pred, vertex.id]["kind"] == "normal":
            return pred
    return vertex.id


def _first_next(cfg: CFG) -> int | None:
    nexts = [v.id for v in cfg.vertices.values() if v.kind == "for-next"]
    return min(nexts) if nexts else None


def _subjects(cfg: CFG, vertex: Vertex) -> list[int]:
    seen, todo, found = set(), [vertex.id], []
    while todo:
        vid = todo.pop()
        for pred in cfg.graph.predecessors(vid):
            if pred in seen:
                continue
            seen.add(pred)
            kind = cfg.vertices[pred].kind
            if kind == "match-subject":
                found.append(pred)
            elif kind == "case":
                todo.append(pred)
    return found


def _captures(pattern: ast.AST) -> list[str]:
    names = []
    for node in ast.walk(pattern):
        if isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            names.append(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            names.append(node.rest)
    return names


ELEMENT_GETTERS = frozenset({"get", "setdefault", "pop", "popitem", "popleft", "__getitem__"})
"""Container methods whose result is an item of the container (``starts, ends = closers.get(tag)``)."""


def _alternatives(node: ast.AST) -> list[ast.AST]:
    """The expressions whose value ``node``'s may be: both arms of ``a if c else b``, each operand of
    ``a or b``, the value of ``(x := v)``; ``node`` itself otherwise."""
    if isinstance(node, ast.IfExp):
        return [*_alternatives(node.body), *_alternatives(node.orelse)]
    if isinstance(node, ast.BoolOp):
        return [option for value in node.values for option in _alternatives(value)]
    if isinstance(node, ast.NamedExpr):
        return [node.target, *_alternatives(node.value)]
    return [node]


def _outside_result_parts(call: ast.Call) -> list[ast.expr]:
    """The receiver and arguments whose objects an outside call may hand back a part of (none where it
    is known to return an object of its own)."""
    method = call.func.attr if isinstance(call.func, ast.Attribute) else None
    if not externals.may_return_part(dotted_name(call.func), method):
        return []
    given = [call.func.value] if isinstance(call.func, ast.Attribute) else []
    return [*given, *call.args, *(k.value for k in call.keywords)]


def _is_module(loc: Location, scopes: Scopes) -> bool:
    """A global only ``import`` binds (``etree`` of ``etree.SubElement(...)``; also a ``from m import x``
    object, which is a documented gap: its changes through such a result are not seen)."""
    return loc[0] == "var" and loc[1] == "<module>" and loc[2] in scopes.imported_modules


def _container_aliases(cfg: CFG, scopes: Scopes, returned_parts=None, stored_parts=None,
                       outside=None) -> dict[Location, set[Location]]:
    """Variable -> the locations whose objects it may hold a part of (or be), transitively, from the
    unit's ``x = y``, ``x = y[i]``, ``x = y.f``, ``x = y.get(k)`` / ``.setdefault(k, d)``, their unpacking
    forms (``starts, ends = closers[tag]``) and ``for x in y``: a mutation through ``x`` (a weak
    definition of it) is then a weak definition of those roots too. ``returned_parts(call)``, where given,
    adds ``x = f(...)`` for a call of the program whose callees return part of a field or of an argument
    (``last = self.last_token()``, which returns ``self.tokens[-1]``): the locations it gives (fields, and
    the roots of the arguments and receiver it names). The other way round, a variable stored whole into
    a field or a container (``node.value = value``, ``table[k] = value``) is that field (container) from
    then on, and so is one passed to a program callee that stores the parameter into a field
    (``stored_parts(call)``: (argument, field) pairs; ``SequenceNode(tag, value)`` with ``self.value =
    value`` in its ``__init__``), so ``value.append(item)`` afterwards changes what ``node.value`` reads
    (PyYAML's representer); a variable a generator yields whole is what its consumer receives (``RET``).
    ``outside(call)``, where given, says a call may run code outside the program: what such a call returns
    may be part of its receiver and arguments unless it is known to be an object of its own
    (:func:`externals.may_return_part`): ``cell = etree.SubElement(row, "td")``, ``for el in
    sorted(items)``; a module it is called on is not among them.
    Flow-insensitive within the unit."""
    unit = cfg.unit

    def root(node: ast.AST) -> Location | None:
        while True:
            if isinstance(node, ast.Name):
                return scopes.resolve(unit, node.id)
            if isinstance(node, ast.Attribute):
                return ("attr", node.attr)
            if isinstance(node, (ast.Subscript, ast.Starred)):
                node = node.value
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ELEMENT_GETTERS:
                node = node.func.value
            else:
                return None

    def names(target: ast.AST) -> list[str]:
        if isinstance(target, ast.Name):
            return [target.id]
        if isinstance(target, (ast.Tuple, ast.List)):
            return [n for element in target.elts for n in names(element)]
        if isinstance(target, ast.Starred):
            return names(target.value)
        return []

    direct: dict[Location, set[Location]] = defaultdict(set)
    for vertex in cfg.vertices.values():
        node = vertex.node
        if vertex.kind == "stmt" and node is not None:
            for handed in _yielded_names(node):  # a generator's consumer holds it from then on
                direct[scopes.resolve(unit, handed)].add(RET)
        if vertex.kind == "stmt" and isinstance(node, ast.Assign) and isinstance(node.value, ast.Name):
            stored = scopes.resolve(unit, node.value.id)
            for target in node.targets:
                holder = root(target) if isinstance(target, (ast.Attribute, ast.Subscript)) else None
                if holder is not None and holder != stored:
                    direct[stored].add(holder)
        if vertex.kind == "stmt" and stored_parts is not None and node is not None:
            for call in _own_calls(node):
                for argument, field_loc in stored_parts(call):
                    if isinstance(argument, ast.Name):
                        direct[scopes.resolve(unit, argument.id)].add(field_loc)
        if vertex.kind == "stmt" and isinstance(node, ast.Assign):
            pairs = [(t, node.value) for t in node.targets]
        elif vertex.kind == "for-next":
            head = cfg.vertices.get(_loop_key(cfg, vertex))
            pairs = [(node, head.node)] if head is not None and head.kind == "for-iter" else []
        else:
            continue
        for target, value in pairs:
            sources: set[Location] = set()
            for option in _alternatives(value) if value is not None else []:
                source = root(option)
                if source is not None:
                    sources.add(source)
                    continue
                if isinstance(option, ast.Call) and returned_parts is not None:
                    for part in returned_parts(option):
                        found = root(part) if isinstance(part, ast.AST) else part
                        if found is not None:
                            sources.add(found)
                if isinstance(option, ast.Call) and outside is not None and outside(option):
                    sources.update(loc for loc in map(root, _outside_result_parts(option))
                                   if loc is not None and not _is_module(loc, scopes))
            for name in names(target):
                own = scopes.resolve(unit, name)
                direct[own].update(s for s in sources if s != own)
    closed: dict[Location, set[Location]] = {}
    for start in direct:
        seen: set[Location] = set()
        stack = list(direct[start])
        while stack:
            loc = stack.pop()
            if loc not in seen and loc != start:
                seen.add(loc)
                stack.extend(direct.get(loc, ()))
        closed[start] = seen
    return closed


def _yielded_names(stmt: ast.AST) -> list[str]:
    """Variables a statement yields whole (``yield data``, ``x = yield data``): the consumer gets the
    object, and what the generator does to it after resuming (``data.update(value)``: PyYAML's
    two-step constructors) changes what the consumer holds."""
    value = stmt.value if isinstance(stmt, (ast.Expr, ast.Assign, ast.AnnAssign, ast.AugAssign)) else None
    if isinstance(value, ast.Yield) and isinstance(value.value, ast.Name):
        return [value.value.id]
    return []


def _own_calls(node: ast.AST) -> list[ast.Call]:
    """The calls in a statement, not in the lambdas, comprehensions or definitions it holds."""
    found: list[ast.Call] = []
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, ast.Call):
            found.append(current)
        for child in ast.iter_child_nodes(current):
            if not isinstance(child, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp,
                                      ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                stack.append(child)
    return found


def reaching_definitions(cfg: CFG, access: dict[int, Access]) -> dict[int, dict[Location, frozenset[int]]]:
    """For each vertex, the definitions (location -> defining vertices) that reach its entry.

    A ``for-next`` vertex assigns the loop's target only on its ``true`` edge (an item came): leaving the
    loop (exhausted, or ``next`` raising) the target keeps the definitions from before, so
    ``match = None; for match in ...: ...; if not match`` reads the ``None`` when no item came."""
    order = list(cfg.graph.nodes)
    preds = {v: [p for p in cfg.graph.predecessors(v) if cfg.graph.edges[p, v]["kind"] != "pseudo"] for v in order}
    stepping = {v for v in order if cfg.vertices[v].kind == "for-next"}
    leaving = {(p, v) for v in order for p in preds[v] if p in stepping and cfg.graph.edges[p, v]["kind"] != "true"}
    out: dict[int, dict[Location, frozenset[int]]] = {v: {} for v in order}
    out_unassigned: dict[int, dict[Location, frozenset[int]]] = {v: {} for v in stepping}  # no item came
    into: dict[int, dict[Location, frozenset[int]]] = {v: {} for v in order}
    changed = True
    while changed:
        changed = False
        for v in order:
            merged: dict[Location, set[int]] = {}
            for p in preds[v]:
                for loc, defs in (out_unassigned[p] if (p, v) in leaving else out[p]).items():
                    merged.setdefault(loc, set()).update(defs)
            incoming = {loc: frozenset(d) for loc, d in merged.items()}
            outgoing = dict(incoming)
            unassigned = dict(incoming) if v in stepping else None
            for loc, strong in access[v].defs.items():
                outgoing[loc] = frozenset({v}) if strong else incoming.get(loc, frozenset()) | {v}
                if unassigned is not None and loc[0] == "state":  # the iterator advanced all the same
                    unassigned[loc] = outgoing[loc]
            into[v] = incoming
            if unassigned is not None and unassigned != out_unassigned[v]:
                out_unassigned[v] = unassigned
                changed = True
            if outgoing != out[v]:
                out[v] = outgoing
                changed = True
    return into


def data_dependences(cfg: CFG, access: dict[int, Access]) -> list[tuple[int, int, Location]]:
    """(defining vertex, using vertex, location) for every def that reaches a use."""
    reaching = reaching_definitions(cfg, access)
    edges = []
    for v, acc in access.items():
        wanted = reaching[v].keys() if ANY in acc.uses else acc.uses
        for loc in wanted:
            for d in sorted(reaching[v].get(loc, ())):
                edges.append((d, v, loc))
            if loc != ANY:  # an unmodelled construct may have written it
                for d in sorted(reaching[v].get(ANY, ())):
                    edges.append((d, v, ANY))
    return sorted(set(edges), key=lambda e: (e[0], e[1], str(e[2])))
