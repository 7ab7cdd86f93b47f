"""Go's and Java's `return`s that give the wrong count of values, read from a tree-sitter tree."""

from __future__ import annotations

from collections import Counter

from tree_sitter import Node

from dg_lsp.context.bindings.go import GO_FUNCTIONS, go_results


def return_errors(root: Node, language: str) -> Counter:
    """A `return` that does not give its function's count of values: Go's "not enough return values" and "too many
    return values" (one call may stand for several values), Java's "missing return value" and "unexpected return
    value" (by whether the method is `void`). Returns inside a lambda (Java) are not read, nor anything inside an
    ERROR node."""
    errors, stack = Counter(), [(root, None, False)]
    functions = GO_FUNCTIONS if language == "go" else ("method_declaration", "constructor_declaration",
                                                        "compact_constructor_declaration", "lambda_expression")
    while stack:
        node, function, in_error = stack.pop()
        in_error = in_error or node.is_error
        if node.type in functions:
            function = node
        stack.extend((child, function, in_error) for child in node.children)
        if node.type != "return_statement" or function is None or in_error:
            continue
        values = [c for c in node.named_children if "comment" not in c.type]
        if language == "go":
            values = values[0].named_children if values and values[0].type == "expression_list" else values
            expected, named = go_results(function)
            one_call = len(values) == 1 and values[0].type == "call_expression"
            if (values or not named) and len(values) != expected and not (one_call and expected > 1):
                errors["returns", ""] += 1
        elif function.type != "lambda_expression":
            void = function.type in ("constructor_declaration", "compact_constructor_declaration") or (
                function.child_by_field_name("type") is not None
                and function.child_by_field_name("type").type == "void_type")
            errors["returns", ""] += bool(values) == void
    return errors

