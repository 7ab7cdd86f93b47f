"""C#'s early error that tree-sitter parses as valid: a local declared again while another local or parameter of that
name is in scope (`csharp_redeclared`: csc's CS0128 "A local variable named 'n' is already defined in this scope" and
CS0136 "... cannot be declared in this scope because that name is used in an enclosing local scope"). C#'s
unreachable code is only a warning (CS0162), so it is not one."""

from __future__ import annotations

from collections import Counter

from tree_sitter import Node

from dg_lsp.context.bindings.walk import broken_block

# a type's members: each method starts afresh
_TYPE_BODIES = frozenset({"declaration_list", "enum_member_declaration_list"})
# what starts a scope of its own with its parameters; a lambda and a local function start afresh too (newer C# lets
# their parameters and locals shadow the enclosing method's, so nothing is read across them)
_FUNCTIONS = frozenset({"method_declaration", "constructor_declaration", "destructor_declaration",
                        "operator_declaration", "conversion_operator_declaration", "local_function_statement",
                        "lambda_expression", "anonymous_method_expression", "accessor_declaration"})
# statement lists whose statements share one scope: a block, and a switch's body (its sections are one scope)
_BLOCKS = frozenset({"block", "switch_body"})


def _text(node: Node | None) -> str | None:
    return None if node is None else node.text.decode("utf-8", "replace")


def _declarators(declaration: Node | None) -> list[str]:
    """The names a `variable_declaration` declares (`int a = 1, b;`: a and b)."""
    if declaration is None or declaration.type != "variable_declaration":
        return []
    return [name for c in declaration.named_children if c.type == "variable_declarator"
            and (name := _text(c.child_by_field_name("name"))) is not None]


def _parameters(function: Node) -> list[str]:
    params = function.child_by_field_name("parameters")
    if params is None:
        return []
    if params.type == "implicit_parameter":  # `q => q + 1`
        return [_text(params)]
    return [name for p in params.named_children if p.type in ("parameter", "implicit_parameter")
            and (name := _text(p.child_by_field_name("name") or (p if p.type == "implicit_parameter" else None)))]


def _declares(node: Node) -> list[str]:
    """The locals a statement declares for what it encloses: a `for`'s initializer, a `foreach`'s variable, a
    `catch`'s, a `using`'s."""
    if node.type in ("for_statement", "using_statement"):
        return [name for c in node.named_children if c.type == "variable_declaration" for name in _declarators(c)]
    if node.type == "foreach_statement":
        left = node.child_by_field_name("left")
        return [_text(left)] if left is not None and left.type == "identifier" else []
    if node.type == "catch_clause":  # its declaration and its block are siblings under it
        return [name for c in node.named_children if c.type == "catch_declaration"
                and (name := _text(c.child_by_field_name("name")))]
    return []


def _statements(block: Node) -> list[Node]:
    """A block's statements in order; a switch body's, its sections' (one scope for all of them)."""
    return [child for c in block.children
            for child in (c.children if c.type == "switch_section" else [c])]


def csharp_redeclared(root: Node) -> Counter:
    """C#: a local (or a `for`, `foreach`, `catch` or `using` variable) declared where a local or parameter of that
    name is already in scope, in its block or an enclosing one of the same method. Declarations read only before it
    (C# also refuses one whose name a later declaration in an enclosing block takes; not read). Not read: pattern and
    `out var` variables, anything across a lambda or local function (each starts afresh with its parameters), a
    block with an ERROR or MISSING node among its statements (its declarations do not count), nor anything inside
    an ERROR node."""
    errors, stack = Counter(), [(root, frozenset(), False)]
    while stack:
        node, scope, in_error = stack.pop()
        in_error = in_error or node.is_error
        if node.type in _TYPE_BODIES:
            scope = frozenset()
        if node.type in _FUNCTIONS:
            scope = frozenset(_parameters(node))
        elif names := _declares(node):
            if not in_error:
                for name in names:
                    errors["redeclared", name] += name in scope
            scope = scope | frozenset(names)
        if node.type in _BLOCKS and not in_error and not broken_block(node) \
                and not any(broken_block(c) for c in node.children if c.type == "switch_section"):
            declared: set[str] = set()
            for child in _statements(node):
                if child.type == "local_declaration_statement":
                    for name in _declarators(next((c for c in child.named_children
                                                   if c.type == "variable_declaration"), None)):
                        errors["redeclared", name] += name in scope or name in declared
                        declared.add(name)
                stack.append((child, scope | frozenset(declared), in_error))
            continue
        stack.extend((child, scope, in_error) for child in node.children)
    return +errors
