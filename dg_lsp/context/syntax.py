"""Syntax checks on candidate completions: count tree-sitter ERROR and MISSING nodes.

Used to tie-break candidates of different lengths and by the benchmark's
syntax-valid rate. Unknown languages count as error-free.
"""

from __future__ import annotations

from tree_sitter import Node

from dg_lsp.context.languages import get_parser


def syntax_error_count(text: str, language: str | None) -> int:
    """Number of ERROR and MISSING nodes in ``text`` parsed as ``language`` (0 if unknown)."""
    parser = get_parser(language)
    if parser is None:
        return 0
    root = parser.parse(text.encode("utf-8")).root_node
    return _count_errors(root)


def introduces_syntax_errors(before: str, after: str, language: str | None) -> bool:
    """True when ``after`` has more syntax errors than ``before``."""
    if get_parser(language) is None:
        return False
    return syntax_error_count(after, language) > syntax_error_count(before, language)


def _count_errors(root: Node) -> int:
    if not root.has_error:
        return 0
    count = 0
    stack = [root]
    while stack:
        node = stack.pop()
        if node.is_error or node.is_missing:
            count += 1
        # Only subtrees flagged with errors can hold more; skip the rest.
        stack.extend(child for child in node.children if child.has_error)
    return count
