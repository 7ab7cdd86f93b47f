"""Rust's errors that tree-sitter parses as valid code and that need no types to see, read from its tree:
- `self` in a function that takes no `self` (rustc's E0424, "`self` value is a keyword only available in methods
  with a `self` parameter"): `self.chunk_size = rem_len;` written in `fn new(chunk_size: usize, ...) -> Self`;
- a value left as the body's last expression in a function that returns nothing (E0308, "expected `()`"): a
  suggestion whose last line is `self` or `self.thread_id`, cut where the model stopped, above the body's `}` in
  `fn reset(&self)`. Only expressions that are never `()` count (`self`, a field, a literal, a reference, an
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
# expressions whose value is never `()`
_VALUES = frozenset({"self", "identifier", "field_expression", "integer_literal", "float_literal", "string_literal",
                     "raw_string_literal", "char_literal", "boolean_literal", "reference_expression",
                     "binary_expression", "unary_expression", "tuple_expression", "array_expression",
                     "index_expression", "range_expression", "type_cast_expression"})


def _takes_self(function: Node) -> bool:
    parameters = function.child_by_field_name("parameters")
    return parameters is not None and any(node.type == "self" for node, _ in nodes(parameters))


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
        elif node.type == "function_item" and node.child_by_field_name("return_type") is None:
            body = node.child_by_field_name("body")
            if body is None or broken_block(body):
                continue
            inner = [c for c in body.named_children if "comment" not in c.type]
            if inner and inner[-1].type in _VALUES:
                errors["unit tail", ""] += 1
    return errors
