"""Python attributes read on a method's `self` that nothing binds (an AttributeError when the line runs): the model's
`return self._copy()` in a class with no `_copy`, `self._queue.lock` where no `_queue` is ever set.

Read from the whole module's `ast`, and only where the module shows everything that could bind one:
- the read is `p.name`, loaded, where `p` is the first parameter of a method of the class (not a `staticmethod`), in
  the method or a function or lambda inside it that does not rebind `p`, and `p` is never assigned in the method; a
  dunder (`__wrapped__`) is never claimed;
- the class's bases are classes of this module (by name, defined once) or the builtins' own types (`object`,
  `Exception`, `dict`: their attributes are theirs), all the way up; it has no keywords (a metaclass), no decorator
  but `dataclass`, `total_ordering` and `final`, and no "mixin" in its name; neither it nor a base defines
  `__getattr__` or `__getattribute__`; each subclass of it in the module is such a class too (a mixin's attributes
  come from its subclass's other bases);
- the class's code outside the span reads no attribute that nothing binds: a class that does gets attributes from
  elsewhere (a base class that subclasses in other modules complete, pygments' `Formatter.format_unencoded`);
- the module has no `__dict__`, no `vars(...)`, no `setattr`, `delattr` or `__setattr__` call whose name is not a
  string written out, and no star import or `exec` without a namespace.

A name counts as bound for every class where the module binds it anywhere as an attribute (`x.name = ...`, `for
x.name in`, `del x.name`), a class body binds it (a method, an assignment, an annotation), or a string in the module
is exactly the name (`__slots__`, `setattr(self, "name", ...)`, `hasattr(self, "name")`). A base class whose one
read of such a name is in the span is still claimed; the false claims this makes on code that runs are measured in
`docs/results/python-attributes.md`."""

from __future__ import annotations

import ast
import builtins

from .python import parse

_DECORATORS = frozenset({"dataclass", "total_ordering", "final"})
_DYNAMIC = frozenset({"__getattr__", "__getattribute__"})
_SETTERS = frozenset({"setattr", "delattr", "__setattr__", "__delattr__"})
_CLASS_METHODS = frozenset({"__new__", "__init_subclass__", "__class_getitem__"})
_TYPE = frozenset(dir(type))


def _name(node: ast.AST) -> str | None:
    """The last part of a decorator's or a base's dotted name (`dataclasses.dataclass(frozen=True)` -> dataclass)."""
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else None


def _hides_names(tree: ast.Module) -> bool:
    """Whether the module may bind attributes no statement names (see the module's docstring)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "__dict__":
            return True
        if isinstance(node, ast.alias) and node.name == "*":
            return True
        if isinstance(node, ast.Call):
            called = _name(node.func)
            if called == "vars" and node.args:
                return True
            if called == "exec" and len(node.args) < 2 and not any(k.arg == "globals" for k in node.keywords):
                return True
            if called in _SETTERS:
                # the name is the one but last argument of setattr(obj, name, value), object.__setattr__(self, name,
                # value) and super().__setattr__(name, value); the last of delattr's and __delattr__'s
                at = len(node.args) - (2 if called in ("setattr", "__setattr__") else 1)
                named = node.args[at] if at >= 0 and not any(isinstance(a, ast.Starred) for a in node.args) else None
                if not (isinstance(named, ast.Constant) and isinstance(named.value, str)):
                    return True
    return False


def _bound(tree: ast.Module, classes: list[ast.ClassDef]) -> set[str]:
    """The attribute names the module binds for every class (see the module's docstring)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and not isinstance(node.ctx, ast.Load):
            names.add(node.attr)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.isidentifier():
            names.add(node.value)
    for cls in classes:
        for statement in cls.body:
            for node in _own(statement):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    names.add(node.name)
                elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
                    names.add(node.id)
                elif isinstance(node, ast.alias):
                    names.add((node.asname or node.name).split(".")[0])
                elif isinstance(node, ast.NamedExpr):
                    names.add(node.target.id)
    return names


def _own(statement: ast.AST):
    """The nodes of a class-body statement that run in the class body: not inside a function, lambda or class."""
    yield statement
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
        return
    for child in ast.iter_child_nodes(statement):
        yield from _own(child)


def _builtin_type(name: str) -> type | None:
    value = getattr(builtins, name, None)
    return value if isinstance(value, type) else None


class _Classes:
    """The module's classes by name, and which of them show every attribute they have."""

    def __init__(self, tree: ast.Module):
        self.all = [node for node in ast.walk(tree) if isinstance(node, ast.ClassDef)]
        names = [cls.name for cls in self.all]
        self.by_name = {cls.name: cls for cls in self.all if names.count(cls.name) == 1}
        # every name the module binds at its top, to tell a builtin base from a name that shadows it
        self.module_names = {cls.name for cls in self.all} | {
            node.id for node in ast.walk(tree) if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load)} | {
            (a.asname or a.name).split(".")[0] for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))
            for a in node.names}
        # a class's subclasses in this module, by name: a mixin's attributes may come from a sibling base
        self.subclasses: dict[str, list[ast.ClassDef]] = {}
        for cls in self.all:
            for base in cls.bases:
                if isinstance(base, ast.Name) and base.id in self.by_name:
                    self.subclasses.setdefault(base.id, []).append(cls)

    def shows_all(self, cls: ast.ClassDef) -> set[str] | None:
        """The attributes `cls` has that its builtin bases give it, where the module shows every other one: it and
        its bases show all theirs (`inherited`), and so does each subclass of it in this module (a mixin's
        attributes may come from another base of its subclass); else None."""
        got = self.inherited(cls)
        todo, seen = list(self.subclasses.get(cls.name, ())), {cls.name}
        while got is not None and todo:
            sub = todo.pop()
            if sub.name not in seen:
                seen.add(sub.name)
                got = got if self.inherited(sub) is not None else None
                todo.extend(self.subclasses.get(sub.name, ()))
        return got

    def inherited(self, cls: ast.ClassDef, seen: frozenset = frozenset()) -> set[str] | None:
        """The attributes its builtin bases give `cls` (and `object`'s), or None where it may have attributes the
        module does not show."""
        if cls.name in seen or cls.keywords or "mixin" in cls.name.lower():
            return None
        if any(_name(d) not in _DECORATORS for d in cls.decorator_list):
            return None
        if any(isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and s.name in _DYNAMIC for s in cls.body):
            return None
        got = set(dir(object))
        for base in cls.bases:
            if not isinstance(base, ast.Name):
                return None
            if base.id in self.by_name:
                more = self.inherited(self.by_name[base.id], seen | {cls.name})
            elif base.id not in self.module_names and _builtin_type(base.id) is not None:
                more = set(dir(_builtin_type(base.id)))
            else:
                return None
            if more is None:
                return None
            got |= more
        return got


def _methods(cls: ast.ClassDef):
    """(method, its instance (or class) parameter's name) for each method of `cls` that has one."""
    for method in cls.body:
        if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if any(_name(d) == "staticmethod" for d in method.decorator_list):
            continue
        positional = method.args.posonlyargs + method.args.args
        if positional:
            yield method, positional[0].arg


def _reads(method: ast.AST, owner: str):
    """The loaded `owner.name` attributes in `method`, where nothing in it rebinds `owner`; else nothing. Functions
    and lambdas inside it that take a parameter `owner` are left out, and classes inside it."""
    found: list[ast.Attribute] = []

    def visit(node: ast.AST, top: bool) -> bool:
        if not top and isinstance(node, ast.ClassDef):
            return True
        if not top and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            a = node.args
            if owner in [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs + [v for v in (a.vararg, a.kwarg) if v]]:
                return True
        if isinstance(node, ast.Name) and node.id == owner and not isinstance(node.ctx, ast.Load):
            return False
        if isinstance(node, (ast.Global, ast.Nonlocal)) and owner in node.names:
            return False
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load) and isinstance(node.value, ast.Name) \
                and node.value.id == owner:
            found.append(node)
        body = node.body if top and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else None
        children = body if body is not None else list(ast.iter_child_nodes(node))
        return all(visit(child, False) for child in children)

    return found if visit(method, True) else []


def _position(source: str, offset: int) -> tuple[int, int]:
    """(1-based line, UTF-8 byte column) of a character offset, as `ast` numbers positions."""
    line_start = source.rfind("\n", 0, offset) + 1
    return source.count("\n", 0, offset) + 1, len(source[line_start:offset].encode("utf-8"))


def unbound_attributes(source: str, start: int, end: int, tree: ast.Module | None = None) -> list[tuple[str, int]]:
    """("self.name", character offset of the read's start) of each attribute read in `source[start:end]` (or that
    starts before it and ends in it) on a method's `self` that nothing binds, in source order; [] where nothing is
    known (see the module's docstring). `tree`: `source` parsed, where the caller has it."""
    if start >= end:
        return []
    tree = tree or parse(source)
    if tree is None:
        return []
    try:
        if _hides_names(tree):
            return []
        classes = _Classes(tree)
        bound = _bound(tree, classes.all)
    except RecursionError:
        return []
    first, last = _position(source, start), _position(source, end)
    lines = source.split("\n")
    out = []
    for cls in classes.all:
        try:
            inherited = classes.shows_all(cls)
        except RecursionError:
            return []
        if inherited is None:
            continue
        reads = []
        for method, owner in _methods(cls):
            # a class method's `cls` (and `__new__`'s) is the class: the attributes of `type` too
            given = inherited | _TYPE if method.name in _CLASS_METHODS or any(
                _name(d) == "classmethod" for d in method.decorator_list) else inherited
            # a dunder (`__wrapped__`, a dataclass's `__dataclass_fields__`) is left alone: the runtime and
            # decorators set them
            reads += [(owner, node) for node in _reads(method, owner)
                      if node.attr not in bound and node.attr not in given and not _dunder(node.attr)]
        inside = [(owner, node) for owner, node in reads
                  if (node.lineno, node.col_offset) < last and first < (node.end_lineno, node.end_col_offset)]
        # a class whose code outside the span reads what nothing here binds gets attributes from elsewhere (a
        # mixin, a base class a subclass in another module completes): nothing is claimed in it
        if len(inside) < len(reads):
            continue
        for owner, node in inside:
            line = lines[node.lineno - 1]
            column = len(line.encode("utf-8")[:node.col_offset].decode("utf-8", errors="replace"))
            out.append((f"{owner}.{node.attr}", sum(len(x) + 1 for x in lines[:node.lineno - 1]) + column))
    return sorted(out, key=lambda read: read[1])


def _dunder(name: str) -> bool:
    return len(name) > 4 and name.startswith("__") and name.endswith("__")
