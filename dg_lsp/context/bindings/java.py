"""Java's early errors that tree-sitter parses as valid: a local declared again in its scope (`java_redeclared`:
javac's "variable n is already defined") and a statement that cannot run (`java_unreachable`)."""

from __future__ import annotations

from collections import Counter

from tree_sitter import Node

from dg_lsp.context.bindings.c_family import c_parameters, declarator_names
from dg_lsp.context.bindings.walk import ScopeRules, broken_block, nodes, scoped_redeclared

_JAVA_BODIES = frozenset({"class_body", "interface_body", "enum_body", "annotation_type_body"})


def _java_lambda_parameters(node: Node) -> list[str]:
    params = node.child_by_field_name("parameters")
    if params is None:
        return []
    if params.type == "identifier":  # `v -> v`
        return [params.text.decode("utf-8", "replace")]
    if params.type == "inferred_parameters":  # `(a, b) -> a`
        return [c.text.decode("utf-8", "replace") for c in params.named_children if c.type == "identifier"]
    return [name for p in params.named_children for name in declarator_names(p)]


def _java_declares(node: Node) -> list[str]:
    """The locals a Java construct declares for what it encloses: a `for`'s init, an enhanced `for`'s variable, a
    `catch`'s parameter, a `try`'s resources, a lambda's parameters."""
    if node.type == "for_statement":
        return [name for i in range(node.child_count) if node.field_name_for_child(i) == "init"
                and node.children[i].type == "local_variable_declaration"
                for name in declarator_names(node.children[i], functions=False)]
    if node.type == "enhanced_for_statement" and node.child_by_field_name("name") is not None:
        return [node.child_by_field_name("name").text.decode("utf-8", "replace")]
    if node.type == "catch_clause":
        return [c.child_by_field_name("name").text.decode("utf-8", "replace") for c in node.named_children
                if c.type == "catch_formal_parameter" and c.child_by_field_name("name") is not None]
    if node.type == "try_with_resources_statement":
        resources = node.child_by_field_name("resources")
        return [r.child_by_field_name("name").text.decode("utf-8", "replace")
                for r in (resources.named_children if resources is not None else [])
                if r.type == "resource" and r.child_by_field_name("name") is not None]
    if node.type == "lambda_expression":
        return _java_lambda_parameters(node)
    return []


def java_redeclared(root: Node) -> Counter:
    """Java: a local declared again while another local or parameter of that name is in scope, in its block or an
    enclosing one of the same method, lambdas included ("variable n is already defined in method f": Java, unlike C,
    lets no local shadow another). A `for`'s variables, an enhanced `for`'s, a `catch`'s parameter, a `try`'s
    resources and a lambda's parameters count as declared too. A class body (a local or anonymous class) starts
    afresh; a switch's groups share its scope (its arrow rules' bodies are blocks of their own). Not read: a block
    with an ERROR or MISSING node among its statements (its declarations do not count), nor anything inside an ERROR
    node."""
    return scoped_redeclared(root, _JAVA_SCOPES)


_JAVA_SCOPES = ScopeRules(
    bodies=_JAVA_BODIES,
    parameters=lambda node: c_parameters(node) if node.type in ("method_declaration", "constructor_declaration")
    else None,
    declares=_java_declares,
    blocks=frozenset({"block", "constructor_body", "switch_block"}),
    groups=frozenset({"switch_block_statement_group"}),
    locals=lambda statement: declarator_names(statement, functions=False)
    if statement.type == "local_variable_declaration" else [])


_JAVA_EXITS = frozenset({"return_statement", "throw_statement", "break_statement", "continue_statement"})


def java_unreachable(root: Node) -> Counter:
    """Java: a statement after a `return`, `throw`, `break` or `continue` in the same block or switch group
    ("unreachable statement": javac refuses code that cannot run), once per block. Not read, as in `c_redeclared`:
    a block with an ERROR or MISSING node among its statements, nor inside an ERROR node."""
    errors = Counter()
    for node, in_error in nodes(root):
        if node.type not in ("block", "switch_block_statement_group") or in_error or broken_block(node):
            continue
        statements = [c for c in node.named_children if "comment" not in c.type and c.type != "switch_label"]
        if any(s.type in _JAVA_EXITS for s in statements[:-1]):
            errors["unreachable", ""] += 1
    return errors

