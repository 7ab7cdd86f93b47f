"""Which tree-sitter nodes are scopes (functions, methods, classes), and their names.

``Scope`` is the plain record callers get; the rest are pure functions over
``tree_sitter.Node``: no parsing, no document lines.
"""

from __future__ import annotations

from dataclasses import dataclass

from tree_sitter import Node


@dataclass(frozen=True)
class Scope:
    """A function, method, class (or similar) around the cursor; lines are 0-based."""

    kind: str
    name: str | None
    start_line: int
    end_line: int


_JS_LIKE = {
    "function_declaration": "function",
    "generator_function_declaration": "function",
    "function_expression": "function",
    "generator_function": "function",
    "function": "function",
    "arrow_function": "function",
    "method_definition": "method",
    "class_declaration": "class",
    "abstract_class_declaration": "class",
    "class": "class",
    "interface_declaration": "interface",
    "enum_declaration": "enum",
}

# language -> node type -> scope kind
SCOPE_KINDS: dict[str, dict[str, str]] = {
    "python": {"function_definition": "function", "class_definition": "class"},
    "javascript": _JS_LIKE,
    "typescript": _JS_LIKE,
    "tsx": _JS_LIKE,
    "go": {
        "function_declaration": "function",
        "method_declaration": "method",
        "func_literal": "function",
        "type_spec": "type",  # refined to struct/interface below
    },
    "rust": {
        "function_item": "function",
        "impl_item": "impl",
        "trait_item": "trait",
        "struct_item": "struct",
        "enum_item": "enum",
    },
    "java": {
        "method_declaration": "method",
        "constructor_declaration": "method",
        "compact_constructor_declaration": "method",
        "class_declaration": "class",
        "record_declaration": "class",
        "interface_declaration": "interface",
        "enum_declaration": "enum",
    },
    "c": {"function_definition": "function", "struct_specifier": "struct"},
    "cpp": {
        "function_definition": "function",
        "class_specifier": "class",
        "struct_specifier": "struct",
    },
    "csharp": {
        "method_declaration": "method",
        "constructor_declaration": "method",
        "destructor_declaration": "method",
        "operator_declaration": "method",
        "conversion_operator_declaration": "method",
        "local_function_statement": "function",
        "class_declaration": "class",
        "record_declaration": "class",
        "struct_declaration": "struct",
        "interface_declaration": "interface",
        "enum_declaration": "enum",
    },
    "php": {
        "function_definition": "function",
        "method_declaration": "method",
        "anonymous_function": "function",
        "arrow_function": "function",
        "class_declaration": "class",
        "interface_declaration": "interface",
        "trait_declaration": "trait",
        "enum_declaration": "enum",
    },
    "ruby": {
        "method": "function",  # a method where a class or module holds it (`_METHOD_CONTAINERS`)
        "singleton_method": "method",
        "class": "class",
        "singleton_class": "class",
        "module": "module",
    },
    "lua": {
        "function_declaration": "function",  # a method where its name is `M:name` (`scope_kind`)
        "function_definition": "function",  # `M.f = function(x)`, a table's field, a callback
    },
    "bash": {"function_definition": "function"},  # `name() {`, `function name {`
}

# Containers whose function children are methods, per language, and the wrapper
# nodes that may sit between a function and that container.
_METHOD_CONTAINERS = {
    "python": ({"class_definition"}, {"block", "decorated_definition"}),
    "rust": ({"impl_item", "trait_item"}, {"declaration_list"}),
    "cpp": (
        {"class_specifier", "struct_specifier"},
        {"field_declaration_list", "template_declaration"},
    ),
    "ruby": ({"class", "module", "singleton_class"}, {"body_statement"}),
}

# Parents that give an anonymous JS/TS function its name: parent type -> field.
_JS_NAME_PARENTS = {
    "variable_declarator": "name",
    "assignment_expression": "left",
    "pair": "key",
    "public_field_definition": "name",
    "field_definition": "property",
}


def scope_kind(node: Node, language: str) -> str | None:
    """The scope kind of ``node`` ("function", "method", "class", ...), or None."""
    kind = SCOPE_KINDS.get(language, {}).get(node.type)
    if kind is None or not node.is_named:
        return None
    if language == "go" and kind == "type":
        body = node.child_by_field_name("type")
        kinds = {"struct_type": "struct", "interface_type": "interface"}
        return kinds.get(body.type) if body is not None else None
    if language in ("c", "cpp") and kind in ("struct", "class"):
        # `struct point p;` is a struct_specifier too; only definitions are scopes.
        return kind if node.child_by_field_name("body") is not None else None
    if kind == "function" and _inside_method_container(node, language):
        return "method"
    if language == "lua" and (name := node.child_by_field_name("name")) is not None \
            and name.type == "method_index_expression":
        return "method"
    return kind


def _inside_method_container(node: Node, language: str) -> bool:
    rule = _METHOD_CONTAINERS.get(language)
    if rule is None:
        return False
    containers, wrappers = rule
    parent = node.parent
    while parent is not None and parent.type in wrappers:
        parent = parent.parent
    return parent is not None and parent.type in containers


def scope_name(node: Node, language: str) -> str | None:
    """The declared name of a scope node; None for anonymous ones."""
    if language in ("c", "cpp") and node.type == "function_definition":
        return _declarator_name(node)
    if language == "rust" and node.type == "impl_item":
        return _text(node.child_by_field_name("type"))
    name = node.child_by_field_name("name")
    if name is not None:
        return _text(name)
    parent = node.parent
    if language == "lua":
        return _lua_value_name(node)
    if parent is not None and parent.type in _JS_NAME_PARENTS:
        return _text(parent.child_by_field_name(_JS_NAME_PARENTS[parent.type]))
    return None


def _lua_value_name(node: Node) -> str | None:
    """The name a Lua function value is given: the table field's (`{ setup = function() ... end }`), or the variable
    it is assigned to (`M.setup = function()`, `local setup = function()`, the n-th of `a, b = f, g`)."""
    parent = node.parent
    if parent is not None and parent.type == "field":
        return _text(parent.child_by_field_name("name"))
    if parent is None or parent.type != "expression_list" or parent.parent is None \
            or parent.parent.type != "assignment_statement":
        return None
    values = [child.id for child in parent.named_children]
    targets = next((child.named_children for child in parent.parent.named_children
                    if child.type == "variable_list"), [])
    at = values.index(node.id)
    return _text(targets[at]) if at < len(targets) else None


def _declarator_name(node: Node) -> str | None:
    """C/C++: follow `declarator` fields down to the function declarator's name."""
    declarator = node.child_by_field_name("declarator")
    while declarator is not None and declarator.type != "function_declarator":
        declarator = declarator.child_by_field_name("declarator")
    if declarator is None:
        return None
    return _text(declarator.child_by_field_name("declarator"))


def scope_start(node: Node, language: str) -> Node:
    """The node whose start is the scope's first line (Python decorators included)."""
    parent = node.parent
    if language == "python" and parent is not None and parent.type == "decorated_definition":
        return parent
    return node


def is_closed(node: Node) -> bool:
    """True when the node ends with a real (not MISSING) closing brace, or Ruby's or Lua's `end`."""
    last = node
    while last.child_count:
        last = last.children[-1]
    return last.type in ("}", "end") and not last.is_missing


def is_comment(node: Node) -> bool:
    return "comment" in node.type


def _text(node: Node | None) -> str | None:
    if node is None or node.text is None:
        return None
    return node.text.decode("utf-8", errors="replace")
