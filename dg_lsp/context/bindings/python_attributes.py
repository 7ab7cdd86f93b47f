"""Python attributes read on a method's `self` that nothing binds (an AttributeError when the line runs): the model's
`return self._copy()` in a class with no `_copy`, `self._queue.lock` where no `_queue` is ever set.

Read from the whole module's `ast`, and only where the module shows everything that could bind one:
- the read is `p.name`, loaded, where `p` is the first parameter of a method of the class (not a `staticmethod`), in
  the method or a function or lambda inside it that does not rebind `p`, and `p` is never assigned in the method; a
  dunder (`__wrapped__`) is never claimed;
- the class is defined once by its name; its bases are classes of this module (by name, defined once) or the
  builtins' own types (`object`, `Exception`, `dict`: their attributes are theirs), all the way up; it has no
  keywords (a metaclass), no decorator but `dataclass`, `total_ordering`, `final` and an ABC's `register`, and no
  "mixin" in its name; neither it nor a base defines `__getattr__` or `__getattribute__`; each subclass of it in the
  module is such a class too (a mixin's attributes come from its subclass's other bases);
- the class's code outside the span reads no attribute that nothing binds: a class that does gets attributes from
  elsewhere (a base class that subclasses in other modules complete, pygments' `Formatter.format_unencoded`);
- nothing may bind attributes on it that no statement names (`_binds_unseen`): `x.__dict__`, `vars(x)`, or setattr
  with a name not written out, on a method's own instance, disable its class's family (below); on any other object,
  or a star import, `exec` without a namespace or a three-argument `type(...)`, the whole module.

A class's family is the classes whose attributes its instances may have, as the module shows them: its subclasses,
itself, and all their bases. A name counts as bound for a class where a class of its family binds it in its body (a
method, an assignment, an annotation) or stores it on a method's own instance (`self.name = ...`), and for every
class where the module stores it on any other object (`x.name = ...`, `for x.name in`, `del x.name`) or a string in
the module is exactly the name (`__slots__`, `setattr(self, "name", ...)`, `hasattr(self, "name")`). A base class
whose only read of an attribute a subclass elsewhere binds is in the span is still claimed; the false claims this
makes on code that runs are measured in `docs/results/python-attributes.md`."""

from __future__ import annotations

import ast
import builtins

from .python import parse

# class decorators that add no attribute the class body does not show (`register`: an ABC's, which returns the class)
_DECORATORS = frozenset({"dataclass", "total_ordering", "final", "register"})
_DYNAMIC = frozenset({"__getattr__", "__getattribute__"})
_SETTERS = frozenset({"setattr", "delattr", "__setattr__", "__delattr__"})
_STATE_METHODS = frozenset({"__setstate__", "__getstate__", "__reduce__", "__reduce_ex__", "__copy__", "__deepcopy__"})
_CLASS_METHODS = frozenset({"__new__", "__init_subclass__", "__class_getitem__"})
_TYPE = frozenset(dir(type))


def _name(node: ast.AST) -> str | None:
    """The last part of a decorator's or a base's dotted name (`dataclasses.dataclass(frozen=True)` -> dataclass)."""
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else None


def _binds_unseen(node: ast.AST) -> ast.AST | bool:
    """What `node` may bind attributes on that no statement names: the object's expression, True where that may be
    any object, False where it binds none. `x.__dict__` and `vars(x)` count, read or written (a read may be written
    through); so do setattr, delattr, `__setattr__` and `__delattr__` with a name not written out; a star import,
    `exec` without a namespace and `type(name, bases, namespace)` may bind anything."""
    if isinstance(node, ast.alias):
        return node.name == "*"
    if isinstance(node, ast.Attribute) and node.attr == "__dict__":
        return node.value
    if not isinstance(node, ast.Call):
        return False
    called = _name(node.func)
    if called == "vars":
        return node.args[0] if node.args else False
    if called == "exec":
        return len(node.args) < 2 and not any(k.arg == "globals" for k in node.keywords)
    if called == "type" and len(node.args) == 3:
        return True  # a class made at run time from bases of the module (email's header classes)
    if called not in _SETTERS:
        return False
    # the name is the one but last argument of setattr(obj, name, value), object.__setattr__(self, name, value) and
    # super().__setattr__(name, value); the last of delattr's and __delattr__'s
    at = len(node.args) - (2 if called in ("setattr", "__setattr__") else 1)
    named = node.args[at] if at >= 0 and not any(isinstance(a, ast.Starred) for a in node.args) else None
    if isinstance(named, ast.Constant) and isinstance(named.value, str):
        return False
    if at == 1:
        return node.args[0]  # setattr(obj, ...), object.__setattr__(obj, ...)
    return node.func.value if at == 0 and isinstance(node.func, ast.Attribute) else True


def _unseen(classes: _Classes, tree: ast.Module) -> tuple[bool, set[str]]:
    """(whether the module may bind attributes no statement names on any object, the classes it may on): where the
    object is a method's own instance (its first parameter, or `super()`), on that method's class, its bases and its
    subclasses in the module. A method that saves or restores an instance's state (`__setstate__`, `__copy__`)
    binds nothing new."""
    per_class: set[str] = set()
    seen: set[int] = set()
    for cls in classes.all:
        for method, owner in _methods(cls):
            nodes = list(ast.walk(method))
            if method.name in _STATE_METHODS:
                seen.update(id(node) for node in nodes)
                continue
            for node in nodes:
                target = _binds_unseen(node)
                if isinstance(target, ast.Name) and target.id == owner \
                        or isinstance(target, ast.Call) and _name(target.func) == "super":
                    seen.add(id(node))
                    per_class.add(cls.name)
    if any(id(node) not in seen and _binds_unseen(node) is not False for node in ast.walk(tree)):
        return True, set()
    family = set()
    for name in per_class:
        family |= classes.family(name)
    return False, family


def _bound(tree: ast.Module, classes: _Classes) -> tuple[set[str], dict[str, set[str]]]:
    """The attribute names the module binds (see the module's docstring): (for every class, for each class by name).
    A class binds what its body binds and what its methods store on their own instance (`self.name = ...`); any
    other object's attribute stored (`other.name = ...`) and a string that is a name count for every class."""
    anywhere: set[str] = set()
    own: dict[str, set[str]] = {cls.name: set() for cls in classes.all}
    on_self: set[int] = set()
    for cls in classes.all:
        names = own[cls.name]
        for method, owner in _methods(cls):
            for node in ast.walk(method):
                if isinstance(node, ast.Attribute) and not isinstance(node.ctx, ast.Load) \
                        and isinstance(node.value, ast.Name) and node.value.id == owner:
                    names.add(node.attr)
                    on_self.add(id(node))
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
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and not isinstance(node.ctx, ast.Load) and id(node) not in on_self:
            anywhere.add(node.attr)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.isidentifier():
            anywhere.add(node.value)
    return anywhere, own


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

    def family(self, name: str) -> set[str]:
        """The classes whose attributes an instance of the class `name` may have, as the module shows them: its
        subclasses (a base class's method may read what a subclass sets), itself, and the bases of each of these
        all the way up (a mixin's sibling bases in a subclass)."""
        below, todo = {name}, [name]
        while todo:
            subclasses = [sub.name for sub in self.subclasses.get(todo.pop(), ()) if sub.name not in below]
            below.update(subclasses)
            todo += subclasses
        out, todo = set(), list(below)
        while todo:
            up = todo.pop()
            if up not in out:
                out.add(up)
                cls = self.by_name.get(up)
                todo += [b.id for b in cls.bases if isinstance(b, ast.Name)] if cls is not None else []
        return out

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
        if cls.name in seen or cls.keywords or "mixin" in cls.name.lower() or cls.name not in self.by_name:
            return None  # a name defined twice: its subclasses cannot be told apart (matplotlib's `_Base`s)
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
        classes = _Classes(tree)
        anywhere, unseen = _unseen(classes, tree)
        if anywhere:
            return []
        anywhere_bound, own = _bound(tree, classes)
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
        if inherited is None or cls.name in unseen:
            continue
        # what its bases and its subclasses in the module bind (a base class's method may read what a subclass sets)
        bound = anywhere_bound.union(*(own.get(name, ()) for name in classes.family(cls.name)))
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
