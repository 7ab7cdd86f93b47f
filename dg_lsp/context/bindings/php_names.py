"""PHP's variables read where nothing in their function gives them a value (PHP: "Warning: Undefined variable
$x", and the value null), read from the whole file's tree-sitter tree. A PHP function's variables are its own: a
function, method or closure sees only its parameters, its closure's `use` list, `global` and `static` declarations
and what its own statements assign; an arrow function (`fn($x) => ...`) sees its parent's too, so it is read as part
of it. `$this` and the superglobals are always there.

A variable counts as given a value anywhere in its function, before or after the read (a loop may run the assignment
first): as a parameter, in a `use` list, `global`, `static`, as the target of an assignment (`$x = `, `$x[] = `,
`[$a, $b] = `, `list(...) = `), a `foreach`'s key or value, a `catch`'s variable, and wherever reading it undefined
raises nothing or it may be written: a call's argument (`preg_match($re, $s, $matches)` writes `$matches`;
`isset($x)`), `unset`, the left of `??` and `??=`, after `@`.

Nothing is known (no variables) in code outside any function (a script's or template's variables come from files it
includes), and in a function that includes a file, calls `extract`, `parse_str`, `eval` or `get_defined_vars`, or
reads a variable variable (`$$name`): each can give values no statement shows, or where the function does not parse
clean. `unbound_php_reads` finds them in a span of a file: the text a suggestion puts there; a variable the function
also reads outside the span with no value (the user's code is waiting for it, or it comes from where this module
cannot see) is never claimed."""

from __future__ import annotations

from tree_sitter import Node

from dg_lsp.context.bindings.walk import encoded, named
from dg_lsp.context.syntax import document_tree

__all__ = ["php_unbound", "unbound_php_reads"]

# a function's own variables: these start a scope; an arrow function reads its parent's
_SCOPES = frozenset({"function_definition", "method_declaration", "anonymous_function"})
_ALWAYS = frozenset({"this", "GLOBALS", "_SERVER", "_GET", "_POST", "_FILES", "_COOKIE", "_SESSION", "_REQUEST",
                     "_ENV", "http_response_header", "argc", "argv", "php_errormsg"})
# where a variable is given a value, or read where an undefined one raises nothing (the node holding it)
_GIVEN_IN = frozenset({"simple_parameter", "variadic_parameter", "property_promotion_parameter", "global_declaration",
                       "static_variable_declaration", "list_literal", "pair", "catch_clause", "argument",
                       "unset_statement", "error_suppression_expression", "anonymous_function_use_clause",
                       "by_ref"})
# a function that holds one of these can have variables no statement shows
_UNKNOWABLE_NODES = frozenset({"dynamic_variable_name", "include_expression", "include_once_expression",
                               "require_expression", "require_once_expression"})
_UNKNOWABLE_CALLS = frozenset({"extract", "parse_str", "eval", "get_defined_vars"})


def _name(node: Node) -> str:
    return node.text.decode("utf-8", "replace")[1:]  # without the `$`


def _given(node: Node) -> bool:
    """Whether the variable `node` (a variable_name) is given a value where it stands, or read where an undefined
    one raises nothing (the module's docstring)."""
    parent = node.parent
    kind = parent.type
    if kind in _GIVEN_IN:
        return True
    if kind == "foreach_statement":  # `foreach ($xs as $x)`: the iterated value is read, the other is given
        return bool(parent.named_children) and parent.named_children[0] != node
    if kind in ("binary_expression", "augmented_assignment_expression"):
        operator = parent.child_by_field_name("operator")
        return parent.child_by_field_name("left") == node and operator is not None and operator.type in ("??", "??=")
    # an assignment's target, or the array a target's subscript writes into (`$rows[] = $row`, `$map['k'] = 1`)
    child = node
    while kind == "subscript_expression" and parent.named_children and parent.named_children[0] == child:
        child, parent = parent, parent.parent
        kind = parent.type
    return kind in ("assignment_expression", "reference_assignment_expression") and \
        parent.child_by_field_name("left") == child


def _variables(scope: Node) -> tuple[list[Node], set[str]] | None:
    """The local variables `scope` (a function) reads, as variable_name nodes, and the names it gives a value (the
    module's docstring); None where nothing is known. A nested function or closure is its own scope, but for its
    `use` list, which reads the variables of this one."""
    reads, given = [], set()
    stack = [scope]
    while stack:
        node = stack.pop()
        kind = node.type
        if node is not scope and kind in _SCOPES:
            if kind == "anonymous_function":
                stack.extend(c for c in node.children if c.type == "anonymous_function_use_clause")
            continue
        if kind in _UNKNOWABLE_NODES or node.is_error or node.is_missing:
            return None
        if kind == "function_call_expression":
            function = node.child_by_field_name("function")
            if function is not None and function.type == "name" and \
                    function.text.decode("utf-8", "replace").lower() in _UNKNOWABLE_CALLS:
                return None
        if kind == "variable_name":
            parent = node.parent
            # `self::$cache`, `Foo::$bar`: a static property, not a local
            if not (parent.type == "scoped_property_access_expression" and parent.child_by_field_name("name") == node):
                if _given(node):
                    given.add(_name(node))
                else:
                    reads.append(node)
            continue
        stack.extend(node.children)
    return reads, given


def _scope_of(node: Node) -> Node | None:
    while node is not None and node.type not in _SCOPES:
        node = node.parent
    return node


def _unbound_in(scope: Node) -> list[Node] | None:
    """The reads of variables `scope` gives no value, in source order; None where nothing is known."""
    if scope.has_error or (found := _variables(scope)) is None:
        return None
    reads, given = found
    return sorted((r for r in reads if _name(r) not in given and _name(r) not in _ALWAYS), key=lambda r: r.start_byte)


def php_unbound(source: str) -> list[tuple[str, int]] | None:
    """(name with its `$`, offset) of every read, in every function of `source`, of a variable its function gives no
    value; the functions where nothing is known are left out. None where `source` has no UTF-8 form. For comparing a
    document with and without a selection fill."""
    if (data := encoded(source)) is None:
        return None
    out, stack = [], [document_tree(data, "php").root_node]
    while stack:
        node = stack.pop()
        stack.extend(node.children)
        if node.type in _SCOPES:
            out += _unbound_in(node) or []
    return named(data, sorted(out, key=lambda read: read.start_byte))


def unbound_php_reads(source: str, start: int, end: int) -> list[tuple[str, int]]:
    """(name with its `$`, offset in `source`) of each variable `source[start:end]` reads (or finishes: a read that
    starts before `start`) where its function gives it no value, in source order; [] where nothing is known (the
    module's docstring). A variable the function reads outside the span with no value is not claimed."""
    if start >= end or (data := encoded(source)) is None:
        return []
    start_b, end_b = len(source[:start].encode("utf-8")), len(source[:end].encode("utf-8"))
    tree = document_tree(data, "php")
    out = []
    node = tree.root_node.descendant_for_byte_range(start_b, max(start_b, end_b - 1))
    # each function the span touches: the innermost around it, and those that start inside it
    touched = [s for s in [_scope_of(node)] if s is not None]
    stack = [node] if node is not None else []
    while stack:
        n = stack.pop()
        if n.type in _SCOPES and n.start_byte >= start_b and n not in touched:
            touched.append(n)
        stack.extend(c for c in n.children if c.end_byte > start_b and c.start_byte < end_b)
    for scope in touched:
        if (reads := _unbound_in(scope)) is None:
            continue
        inside = [r for r in reads if r.start_byte < end_b and r.end_byte > start_b]
        outside = {_name(r) for r in reads if not (r.start_byte < end_b and r.end_byte > start_b)}
        out += [r for r in inside if _name(r) not in outside]  # a nested function's reads are its own: once each
    return named(data, sorted(out, key=lambda read: read.start_byte))
