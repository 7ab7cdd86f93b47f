"""Python's names read where nothing binds them (a NameError when the line runs), read from the whole module's `ast`
by Python's scope rules: a function sees its own names, the functions around it and the module, not the class
bodies around it; a class body sees its own names. A name bound anywhere in a scope counts, before or after the
read, with one exception: a function's own name (bound in it, not declared `global` or `nonlocal`) read in a
statement (an `except` handler or a `case` counts as one) that no binding of it comes before, outside the bodies of
that function's loops, raises UnboundLocalError (`logger = logger(msg)`, `exc_type, exc_value, tb =
exc_type(exc_value)`, `while logger:` over a body that binds it). A binding comes before a read when its statement
starts earlier, or it is the read's own statement's and not what a simple assignment assigns (a walrus, `with ...
as`); a local's annotation, or a function's under `from __future__ import annotations`, never runs, so only
counts where nothing binds the name. A read in a `try` body that a handler of `NameError` follows is expected to
fail (`try: unicode` / `except NameError: unicode = str`) and is not one. `unbound_reads` finds them in a span of a
module: the text a suggestion puts there.

Nothing is known (no names) where the module does not parse, or where its names may not all be in the text: a star
import, `exec` with no namespace of its own, `globals()` or `vars()`, `__builtins__`, a write to the `builtins` module
or `sys.modules[...]`, or enum's `global_enum` or `_convert_` anywhere in it (`_binds_unseen`)."""

from __future__ import annotations

import ast
import builtins
import warnings

# names every module (or class body) has without binding them, beyond the builtins of this machine: `_` is
# gettext's, installed into the builtins; `WindowsError` is a builtin on Windows
_MODULE_NAMES = frozenset({"__name__", "__file__", "__doc__", "__package__", "__spec__", "__loader__", "__path__",
                           "__cached__", "__annotations__", "__builtins__", "__dict__", "__class__", "__module__",
                           "__qualname__", "__warningregistry__", "_", "WindowsError"})
_WRITES = frozenset({"update", "setdefault", "__setitem__"})
_READS = frozenset({"get", "keys", "values", "items", "copy", "__contains__", "__getitem__"})


def _binds_unseen(node: ast.AST) -> bool:
    """Whether `node` may bind names no statement shows: a star import; `exec` with no namespace of its own;
    `globals()` or `vars()` (inspect.py writes through `mod_dict = globals()`; `_Walk` lets through the ones only
    read from, click's `globals()[f"_{name}"]`); `__builtins__`; the `builtins` module or `sys.modules[...]` written
    to; enum's `global_enum` and `_convert_`, which put a class's members in its module (re's `DEBUG`, ssl's
    `Options`)."""
    if isinstance(node, ast.alias):
        return node.name == "*"
    if isinstance(node, ast.Name):
        return node.id in ("__builtins__", "global_enum")
    if isinstance(node, ast.Attribute) and node.attr in ("global_enum", "_convert_"):
        return True
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        if node.func.id == "exec":
            return len(node.args) < 2 and not any(k.arg == "globals" for k in node.keywords)
        if node.func.id in ("globals", "vars"):
            return not node.args
        return node.func.id == "setattr" and bool(node.args) and _is_namespace(node.args[0])
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _WRITES:
        return _is_namespace(node.func.value)
    if isinstance(node, (ast.Subscript, ast.Attribute)) and isinstance(node.ctx, (ast.Store, ast.Del)):
        return _is_namespace(node.value)
    return False


def _is_namespace(node: ast.AST) -> bool:
    """`builtins`, `builtins.__dict__`, `sys.modules[...]` (and its `__dict__`)."""
    if isinstance(node, ast.Name):
        return node.id == "builtins"
    if isinstance(node, ast.Attribute):
        return node.attr == "__dict__" and _is_namespace(node.value)
    return isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and node.value.attr == "modules"


_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
TRIES = (ast.Try, ast.TryStar) if hasattr(ast, "TryStar") else (ast.Try,)


def catches(node: ast.Try, error: str) -> bool:
    """Whether a handler of the `try` statement `node` names `error` (`except NameError`, `except (KeyError,
    builtins.NameError)`)."""
    for handler in node.handlers:
        types = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
        if any(isinstance(t, ast.Name) and t.id == error or isinstance(t, ast.Attribute) and t.attr == error
               for t in types):
            return True
    return False


class _Scope:
    def __init__(self, kind: str, parent: _Scope | None):
        self.kind, self.parent, self.names, self.declared = kind, parent, set(), set()
        # name -> where each binding takes effect: (statement line, statement column, 1 after the statement's value
        # as a simple assignment's target, else 0); a parameter's is (0, 0, 0)
        self.where: dict[str, list[tuple[int, int, int]]] = {}

    def function(self) -> _Scope:
        """The scope a walrus in a comprehension binds in: the nearest one that is not a comprehension."""
        scope = self
        while scope.kind == "comprehension" and scope.parent is not None:
            scope = scope.parent
        return scope

    def before(self, name: str, statement: tuple[int, int]) -> bool:
        """Whether a binding of `name` in this scope comes before a read in the statement at `statement`."""
        return any(at[:2] < statement or (at[:2] == statement and not at[2]) for at in self.where.get(name, ()))

    def sees(self, name: str) -> bool:
        """Whether a read of `name` in this scope finds a binding (class bodies around it are skipped)."""
        scope = self
        while scope is not None:
            if name in scope.names and (scope is self or scope.kind != "class"):
                return True
            scope = scope.parent
        return False


class _Walk:
    """Every scope's bindings, and the reads between two (line, byte column) positions with their scopes."""

    def __init__(self, start: tuple[int, int], end: tuple[int, int]):
        self.start, self.end = start, end
        self.module = _Scope("module", None)
        # each read: its node, its scope, its statement's (line, column), and whether its order is not read (a loop
        # of its function holds it, or it is an annotation of a local)
        self.reads: list[tuple[ast.Name, _Scope, tuple[int, int], bool]] = []
        self.statement, self.target, self.loop = (0, 0), False, False
        self.unseen = False  # the module may bind names no statement shows (`_binds_unseen`)
        self.guarded = False  # in a `try` body whose handlers catch NameError: a read there is expected to fail
        self.lazy_annotations = False  # `from __future__ import annotations`: a function's annotations never run
        self.read_from: set[int] = set()  # the `globals()` and `vars()` calls only read from

    def bind(self, scope: _Scope, name: str, at: tuple[int, int, int] | None = None) -> None:
        scope.names.add(name)
        scope.where.setdefault(name, []).append(at or (*self.statement, int(self.target)))

    def visit(self, node: ast.AST, scope: _Scope) -> None:
        # an `except` handler and a `case` are statements here: they come after the `try` body, the `match` subject
        if isinstance(node, (ast.stmt, ast.ExceptHandler, ast.match_case)):
            saved = self.statement, self.target, self.loop
            at = node.pattern if isinstance(node, ast.match_case) else node
            self.statement, self.target = (at.lineno, at.col_offset), False
            try:
                self.visit_statement(node, scope)
            finally:
                self.statement, self.target, self.loop = saved
        else:
            self.visit_statement(node, scope)

    def visit_statement(self, node: ast.AST, scope: _Scope) -> None:
        # a parent comes before its children: a namespace read from (`globals()[...]`, `globals().get`, `in
        # globals()`) is known before its call is judged
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) \
                or isinstance(node, ast.Attribute) and node.attr in _READS:
            self.read_from.add(id(node.value))
        elif isinstance(node, ast.Compare):
            self.read_from.update(id(c) for c in node.comparators)
        self.unseen = self.unseen or (_binds_unseen(node) and id(node) not in self.read_from)
        if isinstance(node, TRIES):
            # `try: unicode` / `except NameError: unicode = str`: the body's reads may fail, on purpose
            saved, self.guarded = self.guarded, self.guarded or catches(node, "NameError")
            for child in node.body:
                self.visit(child, scope)
            self.guarded = saved
            for child in node.handlers + node.orelse + node.finalbody:
                self.visit(child, scope)
            return
        if isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
            # the header runs before the first pass (a `while` test first of all); the body and `else` after passes
            for child in [node.iter, node.target] if isinstance(node, (ast.For, ast.AsyncFor)) else [node.test]:
                self.visit(child, scope)
            self.loop = True
            for child in node.body + node.orelse:
                self.visit(child, scope)
            return
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            # the value first; the targets are bound after it
            if node.value is not None:
                self.visit(node.value, scope)
            if isinstance(node, ast.AnnAssign):
                # a local's annotation is never run (PEP 526): read for a name bound nowhere, not for the order
                saved, self.loop = self.loop, True
                self.visit(node.annotation, scope)
                self.loop = saved
            self.target = True
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                self.visit(target, scope)
            return
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            self.bind(scope, node.name)
            for outer in node.decorator_list + (node.bases + [k.value for k in node.keywords]
                                                if isinstance(node, ast.ClassDef) else []):
                self.visit(outer, scope)
            inner = _Scope("class" if isinstance(node, ast.ClassDef) else "function", scope)
            if not isinstance(node, ast.ClassDef):
                self.arguments(node.args, scope, inner)
                if node.returns is not None:
                    self.annotation(node.returns, scope)
            self.body(node.body, inner)
            return
        if isinstance(node, ast.Lambda):
            inner = _Scope("function", scope)
            self.arguments(node.args, scope, inner)
            self.body([node.body], inner)
            return
        if isinstance(node, _COMPREHENSIONS):
            # the first iterable is read where the comprehension is (a class body's names too), the rest inside
            self.visit(node.generators[0].iter, scope)
            inner = _Scope("comprehension", scope)
            for child in ast.iter_child_nodes(node):
                if child is not node.generators[0]:
                    self.visit(child, inner)
            first = node.generators[0]
            for child in [first.target] + first.ifs:
                self.visit(child, inner)
            return
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Load):
                # a name the span ends (a word typed before the cursor and finished after it) is read there too
                if (node.lineno, node.col_offset) < self.end and self.start < (node.end_lineno, node.end_col_offset) \
                        and not self.guarded:
                    self.reads.append((node, scope, self.statement, self.loop))
            else:
                self.bind(scope, node.id)
            return
        if isinstance(node, ast.NamedExpr):
            self.bind(scope.function(), node.target.id)
        elif isinstance(node, ast.alias):
            self.bind(scope, (node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.ExceptHandler) and node.name:
            self.bind(scope, node.name)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            for name in node.names:
                self.bind(scope, name)
                scope.declared.add(name)
                if isinstance(node, ast.Global):
                    self.bind(self.module, name)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            self.bind(scope, node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            self.bind(scope, node.rest)
        for child in ast.iter_child_nodes(node):
            self.visit(child, scope)

    def body(self, statements: list[ast.AST], scope: _Scope) -> None:
        """A function's or class's body: its own loops, not the ones around its definition; a function's runs later,
        outside the `try` around its definition."""
        saved = self.loop, self.guarded
        self.loop, self.guarded = False, self.guarded and scope.kind == "class"
        try:
            for child in statements:
                self.visit(child, scope)
        finally:
            self.loop, self.guarded = saved

    def arguments(self, args: ast.arguments, outer: _Scope, inner: _Scope) -> None:
        """Parameters bind in the function; defaults and annotations are read where the function is defined."""
        for default in args.defaults + [d for d in args.kw_defaults if d is not None]:
            self.visit(default, outer)
        for arg in args.posonlyargs + args.args + args.kwonlyargs + [a for a in (args.vararg, args.kwarg) if a]:
            self.bind(inner, arg.arg, (0, 0, 0))
            if arg.annotation is not None:
                self.annotation(arg.annotation, outer)

    def annotation(self, node: ast.AST, scope: _Scope) -> None:
        """A parameter's or a return's annotation: under `from __future__ import annotations` never run (PEP 563),
        so read for a name bound nowhere, not for the order (torch's `def rename(n: str)` above a local `str`)."""
        saved = self.loop
        self.loop = self.loop or self.lazy_annotations
        try:
            self.visit(node, scope)
        finally:
            self.loop = saved


def position(source: str, offset: int) -> tuple[int, int]:
    """(1-based line, UTF-8 byte column) of a character offset, as `ast` numbers positions."""
    line_start = source.rfind("\n", 0, offset) + 1
    return source.count("\n", 0, offset) + 1, len(source[line_start:offset].encode("utf-8"))


def node_offset(lines: list[str], node: ast.AST) -> int:
    """The character offset of `node`'s start in the source split into `lines` (its `ast` position: a 1-based line,
    a UTF-8 byte column)."""
    column = len(lines[node.lineno - 1].encode("utf-8")[:node.col_offset].decode("utf-8", errors="replace"))
    return sum(len(x) + 1 for x in lines[:node.lineno - 1]) + column


def parse(source: str) -> ast.Module | None:
    """`source`'s module, or None where it does not parse."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escapes in a string: a SyntaxWarning
            return ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def unbound_reads(source: str, start: int, end: int, tree: ast.Module | None = None) -> list[tuple[str, int]]:
    """(name, character offset) of each name read in `source[start:end]` (or that starts before it and ends in it)
    that no scope it can see binds, nor the builtins, in source order; [] where nothing is known (see the module's
    docstring). The offset is the name's own start, which may be before `start`. `tree`: `source` parsed, where the
    caller has it."""
    if start >= end:
        return []
    tree = tree or parse(source)
    if tree is None:
        return []
    walk = _Walk(position(source, start), position(source, end))
    walk.lazy_annotations = any(isinstance(node, ast.ImportFrom) and node.module == "__future__"
                                and any(a.name == "annotations" for a in node.names) for node in tree.body)
    try:
        for node in tree.body:
            walk.visit(node, walk.module)
    except RecursionError:
        return []
    if walk.unseen:
        return []
    known = set(dir(builtins)) | _MODULE_NAMES
    lines = source.split("\n")
    out = []
    for node, scope, statement, loop in walk.reads:
        local = scope.kind == "function" and node.id in scope.names and node.id not in scope.declared
        if local and not loop and not scope.before(node.id, statement):
            pass  # read before anything binds it: UnboundLocalError
        elif node.id in known or scope.sees(node.id):
            continue
        out.append((node.id, node_offset(lines, node)))
    return sorted(out, key=lambda read: read[1])
