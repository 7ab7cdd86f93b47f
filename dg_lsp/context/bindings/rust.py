"""Rust's errors that tree-sitter parses as valid code and that need no types to see, read from its tree:
- `self` in a function that takes no `self` (rustc's E0424, "`self` value is a keyword only available in methods
  with a `self` parameter"): `self.chunk_size = rem_len;` written in `fn new(chunk_size: usize, ...) -> Self`;
- a value left as the body's last expression in a function that returns nothing (E0308, "expected `()`"): a
  suggestion whose last line is `self` or `self.thread_id`, cut where the model stopped, above the body's `}` in
  `fn reset(&self)`. Only expressions that are hardly ever `()` count (`self`, a field, a literal, a reference, an
  arithmetic or comparison, a tuple or array); a call, a macro, a block or an `if` may be `()` and are not read.

Rust lets a name be declared again (`let x = x + 1;` shadows), so there is no rule for that. As in the other
languages, a block with an ERROR or MISSING node among its own children is not read (a window cut inside a function
leaves its body's end missing), nor anything inside an ERROR node.
"""

from __future__ import annotations

from collections import Counter

from tree_sitter import Node

from dg_lsp.context.bindings.walk import broken_block, nodes

# where `self` is a path's first segment or a declaration's, not the method's receiver (`use self::x`,
# `self::foo()`, `pub(self)`, the receiver parameter itself), or a token of a macro's input (`quote! { self.x }`,
# `Token![self]`), which the macro may put anywhere
_NOT_A_VALUE = frozenset({"scoped_identifier", "scoped_type_identifier", "scoped_use_list", "use_declaration",
                          "use_list", "use_as_clause", "use_wildcard", "visibility_modifier", "self_parameter",
                          "parameter", "token_tree"})
# expressions whose value is `()` only in code nobody writes (a name or a field of type `()`)
_VALUES = frozenset({"self", "identifier", "field_expression", "integer_literal", "float_literal", "string_literal",
                     "raw_string_literal", "char_literal", "boolean_literal", "reference_expression",
                     "binary_expression", "unary_expression", "tuple_expression", "array_expression",
                     "index_expression", "range_expression", "type_cast_expression"})


def _takes_self(function: Node) -> bool:
    parameters = function.child_by_field_name("parameters")
    return parameters is not None and any(node.type == "self" for node, _ in nodes(parameters))


def _in_unit_impl(function: Node) -> bool:
    """A method of an `impl ... for ()`, whose `self` is `()` (wasm-bindgen's `fn into_abi(self) { self }`)."""
    impl = function.parent.parent if function.parent is not None else None
    return impl is not None and impl.type == "impl_item" and impl.child_by_field_name("type") is not None \
        and impl.child_by_field_name("type").type == "unit_type"


def rust_errors(root: Node) -> Counter:
    """`self` outside a method (`"self"`) and a value as the last expression of a function without a return type
    (`"unit tail"`), each counted once per place (see the module's docstring)."""
    errors = Counter()
    for node, in_error in nodes(root):
        if in_error:
            continue
        if node.type == "self" and node.parent is not None and node.parent.type not in _NOT_A_VALUE:
            function = node.parent
            while function is not None and function.type != "function_item":
                function = function.parent  # a closure takes its method's `self`
            if function is not None and not _takes_self(function):
                errors["self", ""] += 1
        elif node.type == "function_item" and node.child_by_field_name("return_type") is None \
                and not _in_unit_impl(node):
            body = node.child_by_field_name("body")
            if body is None or broken_block(body):
                continue
            inner = [c for c in body.named_children if "comment" not in c.type]
            if inner and inner[-1].type in _VALUES:
                errors["unit tail", ""] += 1
    return errors


# patterns whose named children are patterns (a struct's and a tuple struct's `type` child is a path, not a binding)
_PATTERNS = frozenset({"tuple_pattern", "slice_pattern", "mut_pattern", "ref_pattern", "reference_pattern",
                       "captured_pattern", "or_pattern", "match_pattern", "tuple_struct_pattern", "struct_pattern"})


def rust_pattern_names(node: Node | None) -> list[str]:
    """The names a Rust pattern binds (`(a, mut b)`, `Some(c)`, `S { d, e: ref f, .. }`, `g @ 1..=5`): not a struct's
    or variant's path, nor a field's name where a pattern follows it. A path alone (`None`) reads as a name too."""
    if node is None:
        return []
    if node.type in ("identifier", "shorthand_field_identifier"):
        return [node.text.decode("utf-8", "replace")]
    if node.type == "field_pattern":
        inner = node.child_by_field_name("pattern")
        return rust_pattern_names(inner if inner is not None else node.child_by_field_name("name"))
    if node.type in _PATTERNS:
        return [name for i, child in enumerate(node.children) if child.is_named
                and node.field_name_for_child(i) != "type" for name in rust_pattern_names(child)]
    return []


def rust_declared(node: Node) -> list[str]:
    """The names one Rust node declares: a `let`'s, a parameter's, a closure's parameters', a `for`'s, an `if let`'s
    or `while let`'s, a match arm's, and an item's name (a function, a `const`, a `static`)."""
    if node.type in ("let_declaration", "parameter", "for_expression", "let_condition"):
        return rust_pattern_names(node.child_by_field_name("pattern"))
    if node.type == "closure_parameters":
        return [name for child in node.named_children
                for name in (rust_declared(child) if child.type == "parameter" else rust_pattern_names(child))]
    if node.type == "match_pattern":
        return rust_pattern_names(node)
    if node.type in ("function_item", "const_item", "static_item") and node.child_by_field_name("name") is not None:
        return [node.child_by_field_name("name").text.decode("utf-8", "replace")]
    return []
