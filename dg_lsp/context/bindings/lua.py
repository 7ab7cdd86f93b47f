"""Lua's errors that luac reports and tree-sitter-lua parses as valid code, read from its tree: a `...` in a function
whose parameters take none (luac: "cannot use '...' outside a vararg function"; the main chunk takes one). A
`break` with no loop around it in its function is `jumps.stray_jumps`'.

As in the other languages, nothing inside an ERROR node is read.
"""

from __future__ import annotations

from collections import Counter

from tree_sitter import Node

from dg_lsp.context.bindings.walk import nodes

_FUNCTIONS = ("function_declaration", "function_definition")


def _takes_none(function: Node) -> bool:
    params = function.child_by_field_name("parameters")
    return params is not None and not any(child.type == "vararg_expression" for child in params.children)


def lua_errors(root: Node) -> Counter:
    """Each `...` under `root` in a function that takes none, counted as ("vararg", "...")."""
    errors = Counter()
    if b"..." not in (root.text or b""):
        return errors
    for node, in_error in nodes(root):
        if node.type != "vararg_expression" or in_error or node.parent is None or node.parent.type == "parameters":
            continue
        around = node.parent
        while around is not None and around.type not in _FUNCTIONS:
            around = around.parent
        if around is not None and _takes_none(around):
            errors["vararg", "..."] += 1
    return errors
