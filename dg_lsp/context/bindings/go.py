"""Go's names declared twice in one block (`go_redeclared`: "no new variables on left side of :="), read from a
tree-sitter tree, and the readings of Go's declarations that the selection rules share."""

from __future__ import annotations

from collections import Counter

from tree_sitter import Node

from dg_lsp.context.bindings.walk import broken_block, nodes

GO_FUNCTIONS = frozenset({"function_declaration", "method_declaration", "func_literal"})
_GO_DECLARATIONS = frozenset({"var_declaration", "const_declaration", "type_declaration"})
_GO_SPECS = frozenset({"var_spec", "const_spec", "type_spec", "type_alias"})
GO_NAMES = frozenset({"identifier", "type_identifier", "iota", "true", "false", "nil"})  # predeclared names too


def go_field_names(node: Node) -> list[str]:
    """Go: the names in a node's `name` fields (a spec's, a parameter declaration's: `a, b int` has two)."""
    return [node.children[i].text.decode("utf-8", "replace") for i in range(node.child_count)
            if node.field_name_for_child(i) == "name" and node.children[i].type in GO_NAMES]


def go_names(node: Node) -> list[str]:
    """Go: the names a `var`, `const` or `type` declaration declares, grouped ones (`var ( ... )`) included."""
    if node.type in _GO_SPECS:
        return go_field_names(node)
    if node.type in _GO_DECLARATIONS or node.type in ("var_spec_list", "const_spec_list", "type_spec_list"):
        return [name for child in node.named_children for name in go_names(child)]
    return []


def _go_parameters(body: Node) -> list[str]:
    """The receiver's, the parameters' and the named results' names of the function whose body `body` is: Go puts
    them in the body's own block."""
    function = body.parent
    if function is None or function.type not in GO_FUNCTIONS:
        return []
    names = []
    for field in ("receiver", "parameters", "result"):
        params = function.child_by_field_name(field)
        for p in (params.named_children if params is not None and params.type == "parameter_list" else []):
            names += go_field_names(p)
    return names


def go_redeclared(root: Node) -> Counter:
    """Go: in one block, a name declared again by `var`, `const` or `type` ("x redeclared in this block"), a `:=`
    that declares no new name ("no new variables on left side of :="), and a `:=` whose left side is not names
    (`s.x := 1`). A function's body starts with its receiver, parameters and named results declared; a file starts
    with nothing (its package's other files are not read). Functions at a file's top level count too, but not
    `init` nor methods. The blocks of `if`, `for` and `switch` headers, and a case's implicitly declared names, are
    not read; nor, as in C, a block with an ERROR or MISSING node among its statements, nor what is inside an ERROR."""
    errors = Counter()
    for node, in_error in nodes(root):
        if node.type not in ("statement_list", "source_file") or in_error or broken_block(node):
            continue
        seen = set(_go_parameters(node.parent)) if node.parent is not None and node.parent.type == "block" else set()
        seen.discard("_")
        for statement in node.named_children:
            if statement.type == "short_var_declaration":
                left = statement.child_by_field_name("left")
                items = left.named_children if left is not None else []
                if any(item.type not in GO_NAMES for item in items):
                    errors["non-name", left.text.decode("utf-8", "replace")] += 1
                    continue
                names = [item.text.decode("utf-8", "replace") for item in items]
                names = [name for name in names if name != "_"]
                if names and all(name in seen for name in names):
                    errors["no new", ", ".join(names)] += 1
                seen.update(names)
                continue
            names = go_names(statement)
            if statement.type == "function_declaration" and statement.child_by_field_name("name") is not None:
                names = [statement.child_by_field_name("name").text.decode("utf-8", "replace")]
                names = [name for name in names if name != "init"]
            for name in names:
                if name != "_" and name in seen:
                    errors["redeclared", name] += 1
                seen.add(name)
    return errors


def go_results(function: Node) -> tuple[int, bool]:
    """How many values a Go function returns, and whether its results are named (a bare `return` then returns them)."""
    result = function.child_by_field_name("result")
    if result is None:
        return 0, False
    if result.type != "parameter_list":
        return 1, False
    count, named = 0, False
    for p in result.named_children:
        names = go_field_names(p)
        count += max(1, len(names)) if p.type == "parameter_declaration" else 0
        named = named or bool(names)
    return count, named

