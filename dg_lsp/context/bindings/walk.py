"""What the early-error readings of every language share: a walk of a tree that knows where ERROR nodes are, and
the count of names declared twice."""

from __future__ import annotations

from collections import Counter

from tree_sitter import Node


def nodes(root: Node):
    """Every node under `root` (itself included), each with whether it lies inside an ERROR node (or is one)."""
    stack = [(root, False)]
    while stack:
        node, in_error = stack.pop()
        in_error = in_error or node.is_error
        stack.extend((child, in_error) for child in node.children)
        yield node, in_error


def broken_block(block: Node) -> bool:
    """An ERROR or MISSING node among a block's own statements: its declarations are not read."""
    return any(child.is_error or child.is_missing for child in block.children)


def count_redeclared(errors: Counter, declarations: Counter, lexical: set[str]) -> None:
    """Into `errors`, each name of `lexical` that `declarations` counts more than once, once per extra declaration."""
    for name, n in declarations.items():
        if n > 1 and name in lexical:
            errors["redeclared", name] += n - 1
