"""C#'s early error that tree-sitter parses as valid: a local declared again while another local or parameter of that
name is in scope (`csharp_redeclared`: csc's CS0128 "A local variable named 'n' is already defined in this scope" and
CS0136 "... cannot be declared in this scope because that name is used in an enclosing local scope"). C#'s
unreachable code is only a warning (CS0162), so it is not one."""

from __future__ import annotations

from collections import Counter

from tree_sitter import Node

from dg_lsp.context.bindings.walk import ScopeRules, scoped_redeclared

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


def _locals(statement: Node) -> list[str]:
    if statement.type != "local_declaration_statement":
        return []
    return _declarators(next((c for c in statement.named_children if c.type == "variable_declaration"), None))


_CSHARP_SCOPES = ScopeRules(
    bodies=_TYPE_BODIES,
    parameters=lambda node: _parameters(node) if node.type in _FUNCTIONS else None,
    declares=_declares,
    blocks=_BLOCKS,
    groups=frozenset({"switch_section"}),  # one scope for all a switch's sections
    locals=_locals)


def csharp_redeclared(root: Node) -> Counter:
    """C#: a local (or a `for`, `foreach`, `catch` or `using` variable) declared where a local or parameter of that
    name is already in scope, in its block or an enclosing one of the same method. Declarations read only before it
    (C# also refuses one whose name a later declaration in an enclosing block takes; not read). Not read: pattern and
    `out var` variables, anything across a lambda or local function (each starts afresh with its parameters), a
    block with an ERROR or MISSING node among its statements (its declarations do not count), nor anything inside
    an ERROR node."""
    return scoped_redeclared(root, _CSHARP_SCOPES)
