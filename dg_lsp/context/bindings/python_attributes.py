"""Python attributes read on a method's `self` that nothing binds (an AttributeError when the line runs): the model's
`return self._copy()` in a class with no `_copy`, `self._queue.lock` where no `_queue` is ever set.

Read from the whole module's `ast`, and only where the module shows everything that could bind one:
- the read is `p.name`, loaded, where `p` is the first parameter of a method of the class (not a `staticmethod`), in
  the method or a function or lambda inside it that does not rebind `p`, and `p` is never assigned in the method; a
  dunder (`__wrapped__`) is never claimed;
- the class is defined once by its name; its bases are classes of this module (by name, defined once) or the
  builtins' own types (`object`, `Exception`, `dict`: their attributes are theirs) other than `type` (a metaclass's
  instances are classes, with what their bodies bind), all the way up; it has no keywords (a metaclass), no
  decorator but `dataclass`, `total_ordering`, `final` and an ABC's `register`, and no "mixin" in its name; neither
  it nor a base defines `__getattr__` or `__getattribute__`; each subclass of it in the module is such a class too (a
  mixin's attributes come from its subclass's other bases);
- the read is not in a `try` body that a handler of `AttributeError` follows (`try: return self._cache` / `except
  AttributeError: ...`: it may fail on purpose);
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

from .python import TRIES, catches, node_offset, parse, position

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


def _builtin_type(name: str) -> type | None:
    value = getattr(builtins, name, None)
    return value if isinstance(value, type) else None


class _Classes:
    """The module's classes by name, and which of them show every attribute they have."""

    def __init__(self, facts: _Facts):
        self.all = facts.classes
        names = [cls.name for cls in self.all]
        self.by_name = {cls.name: cls for cls in self.all if names.count(cls.name) == 1}
        self.module_names = facts.module_names
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
            elif base.id not in self.module_names and _builtin_type(base.id) not in (None, type):
                more = set(dir(_builtin_type(base.id)))
            else:
                return None
            if more is None:
                return None
            got |= more
        return got


class _Facts:
    """What one pass over the module finds: its classes, the names it binds, what its methods read and store on
    their own instance, and what may bind attributes no statement names (`_binds_unseen`)."""

    def __init__(self, tree: ast.Module):
        self.classes: list[ast.ClassDef] = []
        self.module_names: set[str] = set()  # every name bound anywhere, to tell a builtin base from its shadow
        self.anywhere: set[str] = set()  # names stored on any other object than a method's own instance, strings
        self.own: dict[str, set[str]] = {}  # a class's body's names and what its methods store on their instance
        # a class's loaded attributes of a method's own instance: (the instance's name, the node, the method)
        self.reads: dict[int, list[tuple[str, ast.Attribute, ast.AST]]] = {}
        self.rebinds: set[int] = set()  # the methods that assign their instance's name
        self.unseen_anywhere = False
        self.unseen: set[str] = set()  # the classes whose own instance a method may bind unseen attributes on
        self.guarded = False  # in a `try` body whose handlers catch AttributeError: a read there may fail on purpose
        for node in tree.body:
            self.visit(node, None)

    def visit(self, node: ast.AST, at: tuple | None) -> None:
        """`at`: (class, method, the instance's name, whether a read of it is of the instance) inside a method (or a
        function in it), (class, None, None, False) in a class body, None elsewhere."""
        cls, method, owner, reading = at or (None, None, None, False)
        if isinstance(node, ast.ClassDef):
            self.classes.append(node)
            self.module_names.add(node.name)
            if cls is not None and method is None:
                self.own.setdefault(cls.name, set()).add(node.name)
            self.own.setdefault(node.name, set())
            for outer in node.bases + node.keywords + node.decorator_list:
                self.visit(outer, at)
            for statement in node.body:
                if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    self.method(node, statement)
                else:
                    self.visit(statement, (node, None, None, False))
            return
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            if not isinstance(node, ast.Lambda) and cls is not None and method is None:
                self.own[cls.name].add(node.name)
            a = node.args
            params = [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs + [v for v in (a.vararg, a.kwarg) if v]]
            # inside a method, a function that takes a parameter of the instance's name reads its own; a function
            # in a class body or outside classes is no method's
            inner = (cls, method, owner, reading and owner not in params) if method is not None else None
            outer = [a] + (node.decorator_list + ([node.returns] if node.returns else [])
                           if not isinstance(node, ast.Lambda) else [])
            for child in outer:
                self.visit(child, at)
            saved, self.guarded = self.guarded, False  # a function's body runs later, outside the `try` around it
            for child in node.body if not isinstance(node, ast.Lambda) else [node.body]:
                self.visit(child, inner)
            self.guarded = saved
            return
        if isinstance(node, TRIES):
            # `try: return self._cache` / `except AttributeError: ...`: the body's reads may fail, on purpose
            saved, self.guarded = self.guarded, self.guarded or catches(node, "AttributeError")
            for child in node.body:
                self.visit(child, at)
            self.guarded = saved
            for child in node.handlers + node.orelse + node.finalbody:
                self.visit(child, at)
            return
        target = _binds_unseen(node)
        if target is not False:
            if method is not None and method.name in _STATE_METHODS:
                pass  # saving or restoring an instance's state binds nothing new
            elif owner is not None and (isinstance(target, ast.Name) and target.id == owner
                                        or isinstance(target, ast.Call) and _name(target.func) == "super"):
                self.unseen.add(cls.name)
            else:
                self.unseen_anywhere = True
        if isinstance(node, ast.Attribute):
            if owner is not None and isinstance(node.value, ast.Name) and node.value.id == owner:
                if isinstance(node.ctx, ast.Load):
                    if reading and not self.guarded:
                        self.reads.setdefault(id(cls), []).append((owner, node, method))
                else:
                    self.own[cls.name].add(node.attr)
            elif not isinstance(node.ctx, ast.Load):
                self.anywhere.add(node.attr)
        elif isinstance(node, ast.Constant):
            if isinstance(node.value, str) and node.value.isidentifier():
                self.anywhere.add(node.value)
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            self.module_names.add(node.id)
            if reading and node.id == owner:
                self.rebinds.add(id(method))
            if cls is not None and method is None:
                self.own[cls.name].add(node.id)
        elif isinstance(node, ast.alias):
            self.module_names.add((node.asname or node.name).split(".")[0])
            if cls is not None and method is None:
                self.own[cls.name].add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.NamedExpr) and cls is not None and method is None:
            self.own[cls.name].add(node.target.id)
        elif isinstance(node, (ast.Global, ast.Nonlocal)) and reading and owner in node.names:
            self.rebinds.add(id(method))
        for child in ast.iter_child_nodes(node):
            self.visit(child, at)

    def method(self, cls: ast.ClassDef, method: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        """A method: its decorators, defaults and annotations run in the class body; its body with its instance."""
        self.own[cls.name].add(method.name)
        body = (cls, None, None, False)
        for outer in method.decorator_list + [method.args] + ([method.returns] if method.returns else []):
            self.visit(outer, body)
        positional = method.args.posonlyargs + method.args.args
        static = any(_name(d) == "staticmethod" for d in method.decorator_list)
        owner = positional[0].arg if positional and not static else None
        saved, self.guarded = self.guarded, False
        for statement in method.body:
            self.visit(statement, (cls, method, owner, owner is not None))
        self.guarded = saved


def unbound_attributes(source: str, start: int, end: int, tree: ast.Module | None = None) -> list[tuple[str, int]]:
    """("self.name", character offset of the read's start) of each attribute read in `source[start:end]` (or that
    starts before it and ends in it) on a method's `self` that nothing binds, in source order; [] where nothing is
    known (see the module's docstring). `tree`: `source` parsed, where the caller has it."""
    # no attribute read there (its dot is on the line the span starts on, or after), or no class at all
    if start >= end or "." not in source[source.rfind("\n", 0, start) + 1:end] or "class" not in source:
        return []
    tree = tree or parse(source)
    if tree is None:
        return []
    first, last = position(source, start), position(source, end)
    # a read in the span is in a method, so in a class inside a top-level statement the span overlaps: where there is
    # none (a module-level function's line), nothing more is read
    overlapped = [top for top in tree.body if top.lineno <= last[0] and first[0] <= top.end_lineno]
    if not any(isinstance(node, ast.ClassDef) for top in overlapped for node in ast.walk(top)):
        return []
    try:
        facts = _Facts(tree)
    except RecursionError:
        return []
    if facts.unseen_anywhere:
        return []
    classes = _Classes(facts)
    # setattr and the like on a method's own instance: on its class's family (see the module's docstring)
    unseen = set().union(*(classes.family(name) for name in facts.unseen))
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
        bound = facts.anywhere.union(*(facts.own.get(name, ()) for name in classes.family(cls.name)))
        reads = []
        for owner, node, method in facts.reads.get(id(cls), ()):
            if id(method) in facts.rebinds:
                continue
            # a class method's `cls` (and `__new__`'s) is the class: the attributes of `type` too
            given = inherited | _TYPE if method.name in _CLASS_METHODS or any(
                _name(d) == "classmethod" for d in method.decorator_list) else inherited
            # a dunder (`__wrapped__`, a dataclass's `__dataclass_fields__`) is left alone: the runtime and
            # decorators set them
            if node.attr not in bound and node.attr not in given and not _dunder(node.attr):
                reads.append((owner, node))
        inside = [(owner, node) for owner, node in reads
                  if (node.lineno, node.col_offset) < last and first < (node.end_lineno, node.end_col_offset)]
        # a class whose code outside the span reads what nothing here binds gets attributes from elsewhere (a
        # mixin, a base class a subclass in another module completes): nothing is claimed in it
        if len(inside) < len(reads):
            continue
        out += [(f"{owner}.{node.attr}", node_offset(lines, node)) for owner, node in inside]
    return sorted(out, key=lambda read: read[1])


def _dunder(name: str) -> bool:
    return len(name) > 4 and name.startswith("__") and name.endswith("__")
