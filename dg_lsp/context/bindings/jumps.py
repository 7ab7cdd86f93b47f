"""A `break` or `continue` with nothing around it in its function that it can leave: every brace language's compiler
refuses it (JavaScript's "Illegal break statement", javac's "break outside switch or loop", csc's CS0139, gcc's
"break statement not within loop or switch", Go's "break is not in a loop, switch, or select", rustc's E0268, PHP's
"'break' not in the 'loop' or 'switch' context"), and tree-sitter parses it as valid. A `break` leaves a loop or a
switch (Go: a `select` too), a `continue` a loop (PHP: a switch too); neither leaves its function, lambda or
closure. PHP's `break 2` needs two of them.

Read only where the function around the jump is in the text (a window cut inside a function does not show its
loops); a jump with a label (`break outer`, Rust's `break 'a`) or inside an ERROR node is not read."""

from __future__ import annotations

from collections import Counter

from tree_sitter import Node

from dg_lsp.context.bindings.walk import nodes

_SCRIPT = ({"for_statement", "for_in_statement", "while_statement", "do_statement"}, {"switch_statement"},
           {"function_declaration", "function_expression", "function", "arrow_function", "generator_function",
            "generator_function_declaration", "method_definition", "class_static_block"})
_C = ({"for_statement", "while_statement", "do_statement"}, {"switch_statement"}, {"function_definition"})
# language -> (loops, switches, functions)
_RULES: dict[str, tuple[set[str], set[str], set[str]]] = {
    "javascript": _SCRIPT,
    "typescript": _SCRIPT,
    "tsx": _SCRIPT,
    "java": ({"for_statement", "enhanced_for_statement", "while_statement", "do_statement"}, {"switch_expression"},
             {"method_declaration", "constructor_declaration", "compact_constructor_declaration", "lambda_expression",
              "static_initializer"}),
    "csharp": ({"for_statement", "foreach_statement", "while_statement", "do_statement"}, {"switch_statement"},
               {"method_declaration", "constructor_declaration", "destructor_declaration", "operator_declaration",
                "conversion_operator_declaration", "local_function_statement", "lambda_expression",
                "anonymous_method_expression", "accessor_declaration"}),
    "c": _C,
    "cpp": (_C[0] | {"for_range_loop"}, _C[1], _C[2] | {"lambda_expression"}),
    "go": ({"for_statement"}, {"expression_switch_statement", "type_switch_statement", "select_statement"},
           {"function_declaration", "method_declaration", "func_literal"}),
    "rust": ({"loop_expression", "while_expression", "for_expression"}, set(),
             {"function_item", "closure_expression", "async_block"}),
    "php": ({"for_statement", "foreach_statement", "while_statement", "do_statement"}, {"switch_statement"},
            {"function_definition", "method_declaration", "anonymous_function", "arrow_function"}),
}
_BREAKS = frozenset({"break_statement", "break_expression"})
_JUMPS = _BREAKS | {"continue_statement", "continue_expression"}
# a jump's child that names what it leaves (a label); Rust's `break value` leaves its loop with a value
_LABELS = frozenset({"statement_identifier", "label_name", "identifier", "label", "lifetime"})


def _levels(jump: Node, language: str) -> int | None:
    """How many loops (or switches) the jump leaves: 1, PHP's `break 2` 2; None where it names a label."""
    for child in jump.named_children:
        if language == "php" and child.type == "integer":
            return int(child.text) if child.text.isdigit() else None
        if child.type in _LABELS and language != "php":
            return None
    return 1


def stray_jumps(root: Node, language: str | None) -> Counter:
    """The `break`s and `continue`s under `root` that nothing around them in their function can take (the module's
    docstring), counted as ("jump", "break" or "continue"). Empty in a language without rules (Python's compiler
    reads its own)."""
    errors = Counter()
    if language not in _RULES:
        return errors
    loops, switches, functions = _RULES[language]
    for node, in_error in nodes(root):
        if node.type not in _JUMPS or in_error:
            continue
        levels = _levels(node, language)
        if levels is None:
            continue
        leaves = loops | (switches if node.type in _BREAKS or language == "php" else set())
        around = node.parent
        while around is not None and around.type not in functions and levels:
            levels -= around.type in leaves
            around = around.parent
        if around is not None and levels:  # its function reached with loops still to leave
            errors["jump", "break" if node.type in _BREAKS else "continue"] += 1
    return errors
