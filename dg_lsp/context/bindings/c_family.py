"""C's, C++'s and Java's declarations read from a tree-sitter tree, and C's and C++'s locals declared twice in
one block (`c_redeclared`: gcc's "redeclaration of 'n' with no linkage")."""

from __future__ import annotations

from collections import Counter

from tree_sitter import Node

from dg_lsp.context.bindings.walk import broken_block, count_redeclared, nodes

def declarator_names(node: Node, functions: bool = True) -> list[str]:
    """C, C++, Java: the names a declaration declares, each at the end of its declarator chain (`int *a, b[3] = {0}`:
    a and b; `String s`: s). `functions=False`: not a function's (`int f(void);`, which C may declare again)."""
    names = []
    if node.type in ("formal_parameter", "spread_parameter") and node.child_by_field_name("name") is not None:
        return [node.child_by_field_name("name").text.decode("utf-8", "replace")]
    for i in range(node.child_count):
        if node.field_name_for_child(i) != "declarator":
            continue
        d = node.children[i]
        while d is not None and d.type != "identifier":
            if d.type == "function_declarator" and not functions:
                break
            d = d.child_by_field_name("declarator") or d.child_by_field_name("name") \
                or (d.named_children[0] if d.named_children else None)
        if d is not None and d.type == "identifier":
            names.append(d.text.decode("utf-8", "replace"))
    return names


C_FAMILY = frozenset({"c", "cpp", "java"})
_C_FUNCTIONS = frozenset({"function_definition", "lambda_expression"})


def c_parameters(function: Node) -> list[str]:
    params = function.child_by_field_name("parameters")
    declarator = function.child_by_field_name("declarator")
    while params is None and declarator is not None:  # C: `int *f(int a)` holds them in its declarator chain
        if declarator.type == "function_declarator":
            params = declarator.child_by_field_name("parameters")
        declarator = declarator.child_by_field_name("declarator")
    return [name for p in (params.named_children if params is not None else []) for name in declarator_names(p)]


def c_redeclared(root: Node) -> Counter:
    """C, C++: locals declared twice in one block, or over a parameter in a function's body ("redeclaration of 'n'
    with no linkage"). Not a function's declaration nor an `extern` one, which C may repeat; not a block with an
    ERROR or MISSING node among its statements, nor inside an ERROR node."""
    errors = Counter()
    for node, in_error in nodes(root):
        if node.type != "compound_statement" or in_error or broken_block(node):
            continue
        count = Counter(c_parameters(node.parent) if node.parent is not None and node.parent.type in _C_FUNCTIONS
                        else [])
        for statement in node.named_children:
            extern = any(c.type == "storage_class_specifier" and c.text == b"extern" for c in statement.children)
            if statement.type in ("declaration", "local_variable_declaration") and not extern:
                count.update(declarator_names(statement, functions=False))
        count_redeclared(errors, count, set(count))
    return errors

