"""A `break` or `continue` with nothing around it in its function that it can leave: every brace language's compiler
refuses it (JavaScript's "Illegal break statement", javac's "break outside switch or loop", csc's CS0139, gcc's
"break statement not within loop or switch", Go's "break is not in a loop, switch, or select", rustc's E0268, PHP's
"'break' not in the 'loop' or 'switch' context", luac's "break outside a loop"), and tree-sitter parses it as valid
(Lua has no `continue`). A `break` leaves a loop or a
switch (Go: a `select` too), a `continue` a loop (PHP: a switch too); neither leaves its function, lambda or
closure. PHP's `break 2` needs two of them.

In a window (`stray_jumps`, the gate's early errors) a jump is read only where the function around it is in the
window (one cut inside a function does not show its loops); `text_strays` reads a suggestion's own jumps on the
whole document with it. A jump with a label (`break outer`, Rust's `break 'a`) or inside an ERROR node is not
read."""

from __future__ import annotations

import functools
from collections import Counter

from tree_sitter import Node, Query, QueryCursor

from dg_lsp.context.bindings.walk import encoded
from dg_lsp.context.languages import get_language
from dg_lsp.context.syntax import document_tree

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
    "lua": ({"for_statement", "while_statement", "repeat_statement"}, set(),
            {"function_declaration", "function_definition"}),
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


def _stray(jump: Node, language: str, whole: bool) -> bool | None:
    """Whether the jump `jump` has nothing around it in its function that takes it; None where that is not known:
    a label, an ERROR node around it, or (`whole` False: a window) no function around it in the text."""
    loops, switches, functions = _RULES[language]
    levels = _levels(jump, language)
    if levels is None:
        return None
    leaves = loops | (switches if jump.type in _BREAKS or language == "php" else set())
    around, function = jump.parent, None
    while around is not None:
        if around.is_error:
            return None
        if function is None and levels and around.type in functions:
            function = around
        elif function is None and levels:
            levels -= around.type in leaves
        around = around.parent
    if levels == 0:
        return False
    return True if function is not None or whole else None


def stray_jumps(root: Node, language: str | None) -> Counter:
    """The `break`s and `continue`s under `root` (a window's tree) that nothing around them in their function can
    take (the module's docstring), counted as ("jump", "break" or "continue"). Empty in a language without rules
    (Python's compiler reads its own)."""
    errors = Counter()
    text = root.text or b""
    if language not in _RULES or (b"break" not in text and b"continue" not in text):
        return errors  # the gate asks for every candidate in every window: most hold no jump to walk to
    # the jumps found by a query (the gate asks four times a candidate; a walk over every node in Python cost a
    # 2,300-line Lua file's windows ~40 ms a suggestion); `_stray` reads nothing inside an ERROR node
    for node in (node for nodes in QueryCursor(_jump_query(language)).captures(root).values() for node in nodes):
        if _stray(node, language, whole=False):
            errors["jump", "break" if node.type in _BREAKS else "continue"] += 1
    return errors


@functools.cache
def _jump_query(language: str) -> Query:
    """A query for the jumps of `language`'s grammar (each grammar has its own of `_JUMPS`' node kinds)."""
    grammar = get_language(language)
    kinds = [kind for kind in sorted(_JUMPS) if grammar.id_for_node_kind(kind, True)]
    return Query(grammar, " ".join(f"({kind}) @jump" for kind in kinds))


def text_strays(document: str, at: int, to: int, text: str, language: str | None) -> bool:
    """Whether `text` over [`at`, `to`) of `document` (character offsets) holds a `break` or `continue` that nothing
    in its function takes, read on the whole document with the text (where a window starts inside a long function,
    the gate's reading does not see its loops: guzzle's MessageFormatter, a 100-line closure). At the top of a
    whole file, outside any function, a jump is stray too. False without rules for the language, or no UTF-8 form."""
    if language not in _RULES or not text or not any(word in text for word in ("break", "continue")):
        return False
    if (applied := encoded(document[:at] + text + document[to:])) is None:  # a lone surrogate: nothing known
        return False
    start = len(document[:at].encode("utf-8"))
    end = start + len(text.encode("utf-8"))
    root = document_tree(applied, language).root_node
    stack = [root]  # down the nodes that overlap the text only
    while stack:
        node = stack.pop()
        if node.type in _JUMPS and start <= node.start_byte < end and _stray(node, language, whole=True):
            return True
        stack.extend(c for c in node.children if c.end_byte > start and c.start_byte < end)
    return False
