"""JavaScript's and TypeScript's names read where nothing binds them (a ReferenceError when the line runs; the
TypeScript compiler's "Cannot find name"), read from the whole file's tree-sitter tree by the language's scope
rules: a `var` and a function declaration are seen in the whole function around them, before or after, a `let`,
`const`, `class`, `enum` or namespace in their block, a parameter in its function, a named function or class
expression's name in itself, a `catch` parameter in its clause, an import and a name assigned without a
declaration (a sloppy global) in the whole file. The global names of the usual environments (the browser, workers,
Node, the test runners; `script_globals.txt`) are never claimed. A `let` read before its line (the temporal dead
zone) counts as bound. `unbound_script_reads` finds them in a span of a file: the text a suggestion puts there.

Not read: TypeScript's types (a type annotation, a type's arguments, an interface, a `declare`), JSX's element and
attribute names, the operand of `typeof` (which reads an undeclared name without an error), import and export
specifiers. Nothing is known (no names) where the file does not parse clean, has a `with` statement or calls
`eval` (both can bind names no statement shows), or reads a name nothing binds outside the span: its environment
has globals the list does not know (a bundler's `__DEV__`, Deno's `Deno`), or a `/* global */` comment, and a name
made up in the span may be one of them."""

from __future__ import annotations

import functools
from importlib import resources

from tree_sitter import Node, Tree

from dg_lsp.context.bindings.script import LANGUAGES
from dg_lsp.context.bindings.script import pattern_nodes as _pattern
from dg_lsp.context.bindings.walk import encoded, named
from dg_lsp.context.syntax import document_tree

__all__ = ["LANGUAGES", "unbound_script_reads"]

# where a `var` (and a function declaration) is seen: the function around it
_FUNCTIONS = frozenset({"function_declaration", "function_expression", "function", "arrow_function",
                        "generator_function_declaration", "generator_function", "method_definition",
                        "class_static_block", "program"})
# where a `let`, `const` or `class` is seen: the block around it
_BLOCKS = _FUNCTIONS | {"statement_block", "switch_body", "for_statement", "for_in_statement", "catch_clause",
                        "internal_module", "module"}
_NAMED_EXPRESSIONS = frozenset({"function_expression", "function", "generator_function", "class"})
_BLOCK_DECLARATIONS = frozenset({"class_declaration", "abstract_class_declaration", "enum_declaration",
                                 "internal_module", "module", "interface_declaration", "type_alias_declaration"})
_HOISTED = frozenset({"function_declaration", "generator_function_declaration", "function_signature"})
# subtrees no value is read in: types, TypeScript's declarations without code, an enum's body (its members are in
# scope there), imports and exports' specifiers
_NOT_READ = frozenset({
    "type_annotation", "type_arguments", "type_parameters", "type_alias_declaration", "interface_declaration",
    "implements_clause", "extends_type_clause", "type_predicate_annotation", "asserts_annotation", "type_query",
    "ambient_declaration", "enum_body", "function_signature", "method_signature", "abstract_method_signature",
    "call_signature", "construct_signature", "property_signature", "index_signature", "import_statement",
    "import_specifier", "export_specifier", "namespace_export", "import_alias", "opting_type_annotation",
    "omitting_type_annotation", "adding_type_annotation", "jsx_namespace_name", "nested_identifier",
    "nested_type_identifier"})
_JSX_ELEMENTS = frozenset({"jsx_opening_element", "jsx_closing_element", "jsx_self_closing_element"})
_READ = frozenset({"identifier", "shorthand_property_identifier"})
# never claimed: names every function has, and keywords tree-sitter reads as names in code that runs (`await (0,
# f)(path)` is a call of `await` to JavaScript's grammar; `yield` and `let` are names in sloppy code)
_ALWAYS = frozenset({"arguments", "undefined", "globalThis", "this", "super", "await", "yield", "let",
                     # globals of runtimes the list has not: old Internet Explorer's, VS Code's webviews', SystemJS's,
                     # Deno's, Bun's, Vercel's edge functions'
                     "XDomainRequest", "ActiveXObject", "acquireVsCodeApi", "System", "Deno", "Bun", "EdgeRuntime"})


@functools.cache
def _globals() -> frozenset[str]:
    text = resources.files("dg_lsp.context.bindings").joinpath("script_globals.txt").read_text(encoding="utf-8")
    return frozenset(line for line in text.splitlines() if line and not line.startswith("#")) | _ALWAYS


def _bindings(node: Node, kind: str, parent: str, function: Node, block: Node, root: Node) \
        -> list[tuple[Node, Node]]:
    """(name node, the node it is seen in) of each name `node` (of type `kind`, under a node of type `parent`)
    binds by itself; `function` and `block` are the nearest function and block above it."""
    out: list[tuple[Node, Node]] = []
    if kind == "variable_declarator":
        scope = function if parent == "variable_declaration" else block
        out += [(name, scope) for name in _pattern(node.child_by_field_name("name"))]
    elif kind == "for_in_statement":
        declaration = node.child_by_field_name("kind")
        if declaration is not None:  # else `for (x of xs)`: an assignment
            scope = node if declaration.type != "var" else function
            out += [(name, scope) for name in _pattern(node.child_by_field_name("left"))]
    elif kind == "catch_clause":
        out += [(name, node) for name in _pattern(node.child_by_field_name("parameter"))]
    elif kind in ("import_clause", "import_require_clause", "import_alias"):
        stack = [node]
        while stack:  # every name in an import binds (an alias's first name too: binding more claims less)
            below = stack.pop()
            if below.type == "identifier":
                out.append((below, root))
            stack.extend(below.named_children)
    if kind in _HOISTED or kind in _BLOCK_DECLARATIONS or kind in _NAMED_EXPRESSIONS:
        name = node.child_by_field_name("name")
        if name is not None and name.type == "nested_identifier":  # `namespace a.b`: a
            name = name.named_children[0] if name.named_children else None
        if name is not None:
            out.append((name, node if kind in _NAMED_EXPRESSIONS else function if kind in _HOISTED else block))
    if kind in _FUNCTIONS and kind != "program":
        params = node.child_by_field_name("parameters") or node.child_by_field_name("parameter")
        out += [(name, node) for name in _pattern(params)]
    return out


# the node types `_bindings` and `_assigned` read: no other binds a name by itself
_BINDS = frozenset({"variable_declarator", "for_in_statement", "catch_clause", "import_clause",
                    "import_require_clause", "import_alias"}) | _HOISTED | _BLOCK_DECLARATIONS | _NAMED_EXPRESSIONS \
    | _FUNCTIONS
_ASSIGNS = frozenset({"assignment_expression", "augmented_assignment_expression"})


def _assigned(node: Node, kind: str) -> list[Node]:
    """The names `node` assigns to without declaring them (`x = 1`, `[a, b] = pair`, `for (x of xs)`)."""
    if kind in _ASSIGNS or (kind == "for_in_statement" and node.child_by_field_name("kind") is None):
        return _pattern(node.child_by_field_name("left"))
    return []


def _typeof(parent: Node) -> bool:
    """Whether a name under `parent` is the operand of `typeof` (which reads an undeclared name without an error)."""
    return parent.type == "unary_expression" \
        and (operator := parent.child_by_field_name("operator")) is not None and operator.type == "typeof"


def _not_read(node: Node, kind: str, parent: Node | None) -> bool:
    """Whether no value is read in `node`'s subtree: a type, a declaration without code, a specifier, JSX's names,
    esbuild's `0 && (module.exports = {...})` (never run)."""
    if kind in _NOT_READ or kind.endswith("_type"):
        return True
    if parent is not None and parent.type in _JSX_ELEMENTS and node == parent.child_by_field_name("name"):
        return True  # `<Widget.Item ...>`: an element's name (its attributes' values are code)
    if kind == "binary_expression" and (left := node.child_by_field_name("left")) is not None \
            and left.text in (b"0", b"false") and (op := node.child_by_field_name("operator")) is not None \
            and op.type == "&&":
        return True
    return False


def _walk(root: Node) -> tuple[dict[str, list[Node]], list[Node], dict[str, list[int]], bool]:
    """The file's bindings (name: the nodes each is seen in), its reads, the names `typeof` tests where nothing binds
    them (name: where), and whether it has a `with` statement or an `eval` call. One pass over the named nodes, each
    carrying its parent and the nearest function and block above it (tree-sitter finds a node's parent from the
    root)."""
    seen: dict[str, list[Node]] = {}
    binding_at: set[int] = set()
    assigned: list[Node] = []
    tested: list[Node] = []
    reads: list[Node] = []
    unseen = False
    stack: list[tuple[Node, Node | None, bool, Node, Node]] = [(root, None, False, root, root)]
    while stack:
        node, parent, skipped, function, block = stack.pop()
        kind = node.type
        skipped = skipped or _not_read(node, kind, parent)
        if kind == "with_statement" or (kind == "call_expression" and (f := node.child_by_field_name("function"))
                                        is not None and f.type == "identifier" and f.text == b"eval"):
            unseen = True
        if kind in _BINDS:
            for name, scope in _bindings(node, kind, parent.type if parent is not None else "", function, block,
                                         root):
                seen.setdefault(name.text.decode("utf-8", "replace"), []).append(scope)
                binding_at.add(name.start_byte)
        if kind in _ASSIGNS or kind == "for_in_statement":
            for name in _assigned(node, kind):
                assigned.append(name)
                binding_at.add(name.start_byte)
        if kind in _READ and not skipped and node.start_byte not in binding_at:
            if parent is not None and _typeof(parent):
                tested.append(node)
            else:
                reads.append(node)
        below_function = node if kind in _FUNCTIONS else function
        below_block = node if kind in _BLOCKS else block
        stack.extend((child, node, skipped, below_function, below_block) for child in reversed(node.named_children))
    # a name assigned where no declaration of it is seen is a sloppy script's global: seen everywhere
    for name in assigned:
        word = name.text.decode("utf-8", "replace")
        if not _bound(name, seen.get(word, [])):
            seen.setdefault(word, []).append(root)
    # `typeof x` where nothing binds `x` tests whether the environment has it; of a local it is a type test
    undeclared: dict[str, list[int]] = {}
    for node in tested:
        word = node.text.decode("utf-8", "replace")
        if not _bound(node, seen.get(word, [])):
            undeclared.setdefault(word, []).append(node.start_byte)
    return seen, [r for r in reads if r.start_byte not in binding_at], undeclared, unseen


def _bound(read: Node, scopes: list[Node]) -> bool:
    return any(s.start_byte <= read.start_byte and read.end_byte <= s.end_byte for s in scopes)


@functools.lru_cache(maxsize=2)
def _analysis(data: bytes, language: str) -> tuple[Tree, list[Node], dict[str, list[int]]] | None:
    """The tree of the file `data` (UTF-8), its reads that nothing binds and no list of globals has, and the names
    `typeof` tests where nothing binds them (name: where); None where nothing is known. Cached for the last two
    texts: a suggestion's document is read for its own names, then for the code around it."""
    tree = document_tree(data, language)
    if tree.root_node.has_error:
        return None
    seen, reads, tested, unseen = _walk(tree.root_node)
    if unseen:
        return None
    known = _globals()
    out = []
    for read in reads:
        name = read.text.decode("utf-8", "replace")
        # a bundler's or runtime's own names (`__webpack_require__`, `__DEV__`) are never claimed
        if name not in known and not (name.startswith("__") and name.endswith("__")) \
                and not _bound(read, seen.get(name, [])):
            out.append(read)
    return tree, out, tested


def _unbound(data: bytes, language: str | None, span: tuple[int, int] = (0, 0)) -> tuple[Node, list[Node]] | None:
    """The root of the file `data` (UTF-8) and its reads that nothing binds, in source order; None where nothing is
    known. A name that `typeof` tests outside the `span` (bytes), where nothing binds it, counts as bound: the code
    expects that it may be missing (tslib's `typeof AsyncIterator === "function" ? AsyncIterator : Object`)."""
    if language not in LANGUAGES or (found := _analysis(data, language)) is None:
        return None
    tree, reads, tested = found
    outside = {name for name, where in tested.items() if any(not span[0] <= at < span[1] for at in where)}
    return tree.root_node, [read for read in reads if read.text.decode("utf-8", "replace") not in outside]


def script_unbound(source: str, language: str | None) -> list[tuple[str, int]] | None:
    """(name, offset) of every read in `source` that nothing binds, with no guard; None where nothing is known (no
    clean parse, a `with`, an `eval`). For comparing a document with and without a selection fill."""
    if (data := encoded(source)) is None or (found := _unbound(data, language)) is None:
        return None
    return named(data, found[1])


def unbound_script_reads(source: str, start: int, end: int, language: str | None) -> list[tuple[str, int]]:
    """(name, offset in `source`) of each name `source[start:end]` reads (or finishes: a read that starts before
    `start`) where nothing binds it, in source order; [] outside JavaScript and TypeScript, or where nothing is
    known (the module's docstring).

    The reads outside the span that nothing binds decide what is known. Those after the span in the function
    around it are names the code there is waiting for (a statement deleted and being written again: `messages`
    read below a deleted `const messages = ...`), and do not stop the reading; any other stops it. A name read
    unbound outside the span too is never claimed: the environment may have it."""
    if start >= end or (data := encoded(source)) is None:
        return []
    start_b, end_b = len(source[:start].encode("utf-8")), len(source[:end].encode("utf-8"))
    if (found := _unbound(data, language, (start_b, end_b))) is None:
        return []
    root, reads = found
    function = root.descendant_for_byte_range(start_b, max(start_b, end_b - 1)) or root
    while function.type not in _FUNCTIONS and function.parent is not None:
        function = function.parent
    inside, elsewhere = [], set()
    for read in reads:
        if read.start_byte < end_b and read.end_byte > start_b:
            inside.append(read)
            continue
        waiting = function.type != "program" and read.start_byte >= end_b and read.end_byte <= function.end_byte
        if not waiting:
            return []
        elsewhere.add(read.text.decode("utf-8", "replace"))
    return [(name, offset) for name, offset in named(data, inside) if name not in elsewhere]
