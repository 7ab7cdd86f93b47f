"""See the structure of unfinished code that tree-sitter's recovery loses.

Code being typed often ends with open brackets (`foo(`, `if x {`). When that
happens at the end of the parsed text, tree-sitter's error recovery may fold
everything into one flat ERROR node and the enclosing function disappears.
Appending the missing closers, in order, on a new line after the text usually
restores a tree with the function in it; byte offsets before the end do not
move.

Python whose header itself is unfinished (`def f(x:`) is beyond that repair;
there the indentation still tells which `def`/`class` lines own the cursor.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from tree_sitter import Node

from dg_lsp.context.document import DocumentLines, leading_whitespace
from dg_lsp.context.scope_nodes import Scope

_CLOSER_FOR = {"(": ")", "[": "]", "{": "}", "${": "}", "#{": "}"}
_CLOSERS = frozenset(")]}")
_PYTHON_HEADER = re.compile(r"(?:async\s+)?(def|class)\s+([A-Za-z_]\w*)")


def with_brackets_closed(root: Node, source: bytes, separator: str = "") -> bytes | None:
    """``source`` plus the closers its open brackets need; None if none are open.

    ``separator`` goes after each closer: ``";"`` suits C-like statements
    (`foo(` inside a method inside a class needs `);};`).
    """
    expected: list[str] = []
    for token in _tokens(root):
        if token.is_missing:
            continue
        kind = token.type
        if kind in _CLOSER_FOR:
            expected.append(_CLOSER_FOR[kind])
        elif kind in _CLOSERS and expected and expected[-1] == kind:
            expected.pop()
    if not expected:
        return None
    closers = "".join(closer + separator for closer in reversed(expected))
    return source + b"\n" + closers.encode("ascii")


def has_error_ancestor(node: Node | None) -> bool:
    while node is not None:
        if node.is_error:
            return True
        node = node.parent
    return False


def _tokens(root: Node) -> Iterator[Node]:
    """Leaves of the tree in document order."""
    cursor = root.walk()
    while True:
        if cursor.node is not None and cursor.node.child_count == 0:
            yield cursor.node
        if cursor.goto_first_child():
            continue
        while not cursor.goto_next_sibling():
            if not cursor.goto_parent():
                return


def python_scopes_by_indent(
    doc: DocumentLines, line: int, indent_width: int, top: int
) -> list[Scope]:
    """Python `def`/`class` lines above ``line`` that own it by indentation, outer to inner."""
    found: list[Scope] = []
    depth = indent_width
    for index in range(line, top - 1, -1):
        text = doc.content(index)
        if not text.strip() or text.lstrip().startswith("#"):
            continue
        width = len(leading_whitespace(text))
        if width >= depth:
            continue
        depth = width
        match = _PYTHON_HEADER.match(text, width)
        if match is not None:
            kind = "class" if match.group(1) == "class" else "function"
            found.append(Scope(kind, match.group(2), index, line))
        if depth == 0:
            break
    found.reverse()
    return [
        Scope("method", scope.name, scope.start_line, scope.end_line)
        if scope.kind == "function" and index > 0 and found[index - 1].kind == "class"
        else scope
        for index, scope in enumerate(found)
    ]
