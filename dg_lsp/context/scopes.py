"""Find the functions and classes that enclose a cursor (or a selection).

Only a region of lines is parsed, never the whole document: from the nearest
"top-level start" line at or above the cursor (a non-indented line that opens
a statement, not a closing brace, comment, label or preprocessor line) to the
next one below. That region holds the whole top-level construct around the
cursor, usually a few dozen lines, so huge files cost the same as small ones.
The scan is capped in lines and characters, so a giant construct degrades to
a partial parse (which tree-sitter tolerates) instead of a slow one; a hole
that alone exceeds the caps (a huge selection, a megabyte minified line) gets
no scopes at all.
"""

from __future__ import annotations

import re

from tree_sitter import Node, Parser

from dg_lsp.context.document import DocumentLines, leading_whitespace
from dg_lsp.context.languages import get_parser
from dg_lsp.context.repair import has_error_ancestor, python_scopes_by_indent, with_brackets_closed
from dg_lsp.context.end_blocks import reading
from dg_lsp.context.scope_nodes import (
    Scope,
    is_closed,
    is_comment,
    scope_kind,
    scope_name,
    scope_start,
)

MAX_LINES_ABOVE = 2000
MAX_LINES_BELOW = 1000
# Tree-sitter parses a few MB/s: this keeps the worst region to tens of ms.
MAX_REGION_CHARS = 150_000
# How much further up to look when the first region parses to nothing useful.
RETRY_LINES = 400
RETRY_CHARS = 40_000
# Non-indented lines just above a start that continue its declaration
# (`static int` above `foo(void)`, decorators above `def`).
MAX_HEADER_LINES = 3
# The most lines a parse may read on each side of the hole.
REACH_ABOVE = MAX_LINES_ABOVE + MAX_HEADER_LINES + RETRY_LINES
REACH_BELOW = MAX_LINES_BELOW + RETRY_LINES

_CLOSERS = tuple(")]}")
_REPAIR_SEPARATORS = ("", ";")
_LABEL = re.compile(r"^[A-Za-z_]\w*\s*:\s*(//.*|/\*.*)?$")
_COMMENT_STARTS = {
    "python": ("#",),
    "c": ("//", "/*", "*", "#"),
    "cpp": ("//", "/*", "*", "#"),
    "csharp": ("//", "/*", "*", "#"),  # `#if` / `#region` at column 0 sit inside classes
    "php": ("//", "/*", "*", "#"),  # `#` comments, `#[Attribute]` lines
    "ruby": ("#", "=begin", "=end"),
    "lua": ("--",),
    "bash": ("#",),
}
_C_COMMENT_STARTS = ("//", "/*", "*")


def comment_starts(language: str | None) -> tuple[str, ...]:
    if language is None:
        return ()
    return _COMMENT_STARTS.get(language, _C_COMMENT_STARTS)


def is_comment_line(text: str, language: str) -> bool:
    """Whether a line (from its first character) starts with a comment; PHP's `#[Attribute]` lines do not."""
    return text.startswith(comment_starts(language)) and not (language == "php" and text.startswith("#["))


def is_top_level_start(text: str, language: str) -> bool:
    if not text or text[0] in " \t" or not text.strip():
        return False
    if text.startswith(_CLOSERS) or text.startswith("{"):
        return False
    if is_comment_line(text, language):
        return False
    blocks = reading(language)
    if blocks is not None:  # Ruby, Lua, Bash: a line that closes or continues a block, as `}` does
        return not (blocks.END.match(text) or blocks.CLAUSE.match(text))
    return not (language != "python" and _LABEL.match(text))


def parse_region(
    doc: DocumentLines, first: int, last: int, language: str
) -> tuple[int, int] | None:
    """Lines ``[top, bottom)`` to parse for a hole on lines first..last; None if too big."""
    if last - first > MAX_LINES_ABOVE:
        return None
    hole_chars = sum(len(doc.content(index)) + 1 for index in range(first, last + 1))
    if hole_chars > MAX_REGION_CHARS:
        return None
    budget = MAX_REGION_CHARS - hole_chars
    top, budget = _region_top(doc, first, language, budget)
    bottom = last + 1
    limit = min(doc.stop, last + 1 + MAX_LINES_BELOW)
    while bottom < limit and not is_top_level_start(doc.content(bottom), language):
        budget -= len(doc.content(bottom)) + 1
        if budget < 0:
            break
        bottom += 1
    return top, bottom


def _region_top(doc: DocumentLines, first: int, language: str, budget: int) -> tuple[int, int]:
    """First line of the region (within a character budget) and the budget left."""
    top, spent = first, 0
    limit = max(doc.first, first - MAX_LINES_ABOVE)
    up_budget = budget * 2 // 3  # the head of a construct matters more than its tail
    while top > limit and not is_top_level_start(doc.content(top), language):
        cost = len(doc.content(top - 1)) + 1
        if spent + cost > up_budget:
            break
        spent += cost
        top -= 1
    for _ in range(MAX_HEADER_LINES):
        above = doc.content(top - 1) if top > doc.first else ""
        if not above or above[0] in " \t" or above.rstrip().endswith((";", "}", "{")):
            break
        if above.startswith(_CLOSERS) or is_comment_line(above, language):
            break
        spent += len(above) + 1
        top -= 1
    return top, budget - spent


def find_scopes(
    doc: DocumentLines,
    language: str,
    start: tuple[int, int],
    end: tuple[int, int],
    indent_width: int,
) -> list[Scope]:
    """Scopes enclosing the range ``start``..``end`` (clamped positions), outer to inner.

    ``indent_width`` is the cursor's block indentation; Python uses it to tell
    whether a cursor below a function's last statement still belongs to it.
    Returns [] for unknown languages or when parsing fails.
    """
    parser = get_parser(language)
    if parser is None:
        return []
    region = parse_region(doc, start[0], end[0], language)
    if region is None:
        return []
    top, bottom = region
    nodes, has_error = _parse_scopes(parser, doc, (top, bottom), start, end, language, indent_width)
    if not nodes and has_error and top > doc.first:
        # The top-level heuristic can cut mid-construct (unindented bodies,
        # column-0 lines inside strings); look further out once.
        top, bottom = _wider(doc, top, -1), _wider(doc, bottom, 1)
        nodes, has_error = _parse_scopes(
            parser, doc, (top, bottom), start, end, language, indent_width
        )
    if language == "python" and has_error:
        by_indent = python_scopes_by_indent(doc, start[0], indent_width, top)
        if len(by_indent) > len(nodes):
            return by_indent
    # Every scope found encloses the hole, so its range reaches the hole's line
    # (a Python body can end above a cursor on a deeper-indented blank line).
    last_line = max(top, bottom - 1)
    scopes = [_describe(node, language, top, end[0], last_line) for node in nodes]
    if has_error and language != "python":
        scopes = [_closed_by_indentation(doc, scope, node, top, end[0], language)
                  for scope, node in zip(scopes, nodes)]
    return scopes


def _closed_by_indentation(doc: DocumentLines, scope: Scope, node: Node, top: int, hole_line: int,
                           language: str) -> Scope:
    """`scope` (of the parse's `node`, whose rows count from line `top`) ending at the `}` that its header's
    indentation gives it, where the code around the hole is broken: tree-sitter's recovery from an unfinished line
    (`assert.deepEqual(document.positio`) can run a function on to the region's end, or end it at the hole
    (`export function create(func: `). The first code line below the hole's that is indented no deeper than the
    scope's header must start with a `}` (Ruby, Lua: `end`) at exactly the header's indentation (comments skipped);
    where it does not (a template literal or a label at column 0), the parse's end stands, as it does where the
    scope's first line and its name's line are indented differently (a PHP attribute at column 0 that the parse
    gave to a method of the class whose header line is the hole)."""
    header = leading_whitespace(doc.content(scope.start_line))
    name = node.child_by_field_name("name")
    if name is not None and leading_whitespace(doc.content(top + name.start_point.row)) != header:
        return scope
    blocks = reading(language)
    for row in range(hole_line + 1, doc.stop):
        text = doc.content(row)
        code = text.lstrip()
        if not code or is_comment_line(code, language):
            continue
        lead = text[: len(text) - len(code)]
        if len(lead.expandtabs(8)) > len(header.expandtabs(8)) and lead.startswith(header):
            continue
        if lead == header and (code.startswith("}") or blocks is not None and blocks.END.match(code)):
            return Scope(scope.kind, scope.name, scope.start_line, row)
        return scope
    return scope


def _parse_scopes(
    parser: Parser,
    doc: DocumentLines,
    region: tuple[int, int],
    start: tuple[int, int],
    end: tuple[int, int],
    language: str,
    indent_width: int,
) -> tuple[list[Node], bool]:
    source, hole_start, hole_end = _region_source(doc, *region, start, end)
    try:
        return _scope_nodes(parser, source, hole_start, hole_end, language, indent_width)
    except (ValueError, RuntimeError):
        return [], True


def _wider(doc: DocumentLines, boundary: int, step: int) -> int:
    """A region boundary moved up (step -1) or down (step 1) within the retry limits."""
    budget = RETRY_CHARS
    if step < 0:
        limit = max(doc.first, boundary - RETRY_LINES)
    else:
        limit = min(doc.stop, boundary + RETRY_LINES)
    while boundary != limit:
        budget -= len(doc.content(boundary - 1 if step < 0 else boundary)) + 1
        if budget < 0:
            break
        boundary += step
    return boundary


def _region_source(
    doc: DocumentLines, top: int, bottom: int, start: tuple[int, int], end: tuple[int, int]
) -> tuple[bytes, int, int]:
    """UTF-8 text of lines [top, bottom) and the hole's byte offsets in it."""
    if start[0] == end[0]:
        between = doc.content(start[0])[start[1] : end[1]]
    else:
        between = (
            doc.content(start[0])[start[1] :]
            + doc.eol(start[0])
            + doc.join(start[0] + 1, end[0])
            + doc.content(end[0])[: end[1]]
        )
    head = (doc.join(top, start[0]) + doc.content(start[0])[: start[1]]).encode("utf-8")
    middle = between.encode("utf-8")
    tail = doc.content(end[0])[end[1] :] + doc.eol(end[0]) + doc.join(end[0] + 1, bottom)
    return head + middle + tail.encode("utf-8"), len(head), len(head) + len(middle)


def _scope_nodes(
    parser: Parser, source: bytes, start: int, end: int, language: str, indent_width: int
) -> tuple[list[Node], bool]:
    """Scope nodes around the hole, and whether the region has syntax errors.

    When errors hide the hole's structure, unbalanced brackets are closed and
    the region parsed again; the parse that finds more scopes wins.
    """
    root = parser.parse(source).root_node
    nodes = _enclosing_nodes(root, source, start, end, language, indent_width)
    if not root.has_error or (nodes and not _anchored_in_error(root, source, start)):
        return nodes, root.has_error
    for separator in _REPAIR_SEPARATORS:
        repaired = with_brackets_closed(root, source, separator)
        if repaired is None:
            break
        fixed_root = parser.parse(repaired).root_node
        fixed = _enclosing_nodes(fixed_root, repaired, start, end, language, indent_width)
        nodes = fixed if len(fixed) > len(nodes) else nodes
    return nodes, True


def _describe(node: Node, language: str, top: int, hole_line: int, last_line: int) -> Scope:
    first = scope_start(node, language)
    end_row = node.end_point.row
    if node.end_point.column == 0 and end_row > first.start_point.row:
        end_row -= 1  # the node ends with a newline: its last line is the one before
    return Scope(
        kind=scope_kind(node, language) or "",
        name=scope_name(node, language),
        start_line=top + first.start_point.row,
        end_line=max(min(top + end_row, last_line), hole_line),
    )


def _anchored_in_error(root: Node, source: bytes, cursor: int) -> bool:
    anchor = _skip_back(root, source, cursor)
    return anchor > 0 and has_error_ancestor(root.descendant_for_byte_range(anchor - 1, anchor - 1))


def _enclosing_nodes(
    root: Node, source: bytes, start: int, end: int, language: str, indent_width: int
) -> list[Node]:
    """Scope nodes around bytes [start, end), outer to inner.

    A scope whose last token sits right before the cursor (only whitespace and
    comments between) still encloses it unless a real `}` closed it; so does
    one broken off by a MISSING brace. In Python, where blocks end by
    dedenting, it encloses the cursor only if the cursor is indented deeper
    than the scope's header.
    """
    anchor = _skip_back(root, source, start)
    if anchor == 0:
        return []
    node: Node | None = root.descendant_for_byte_range(anchor - 1, anchor - 1)
    tight_end = _skip_back(root, source, end)
    found: list[Node] = []
    while node is not None:
        if scope_kind(node, language) is not None and _encloses(
            node, source, end, tight_end, language, indent_width
        ):
            found.append(node)
        node = node.parent
    found.reverse()
    return found


def _encloses(
    node: Node, source: bytes, end: int, tight_end: int, language: str, indent_width: int
) -> bool:
    if node.end_byte > end:
        return True
    if node.end_byte < tight_end or is_closed(node):
        return False
    if language != "python" or node.end_byte == end:
        return True
    line_start = source.rfind(b"\n", 0, node.start_byte) + 1
    header = source[line_start : node.start_byte].decode("utf-8", errors="replace")
    return indent_width > len(leading_whitespace(header))


def _skip_back(root: Node, source: bytes, offset: int) -> int:
    """Move ``offset`` back over whitespace and comments (at most 100 of them)."""
    for _ in range(100):
        offset = len(source[:offset].rstrip(b" \t\r\n\f"))
        if offset == 0:
            return 0
        node = root.descendant_for_byte_range(offset - 1, offset - 1)
        if node is None or not is_comment(node) or node.start_byte >= offset:
            return offset
        offset = node.start_byte
    return offset
