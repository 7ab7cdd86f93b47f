"""The indentation a completion at the cursor line should use.

A line with code keeps its own leading whitespace. A whitespace-only line keeps
the whitespace the editor already put there (its auto-indent is the block's
expected indentation, and the completion's first line continues from it). An
empty line gets the indentation the block expects, judged from the nearest
code line above: one level deeper after an opener (`:`, `{`, `(`, `[`; in Ruby
and Lua also a block's header or clause, `def x`, `items.each do |i|`, `else`,
`if x then`), one level shallower after a Python `return`/`pass`/`raise`/`break`/`continue`,
else the same. After a blank gap, though, an empty line lines up with the code
below it (two blank lines before a top-level `def` are top level), unless that
code is a closing bracket.
"""

from __future__ import annotations

import re
from collections import Counter

from dg_lsp.context.document import DocumentLines, leading_whitespace
from dg_lsp.context.end_blocks import reading
from dg_lsp.context.scopes import comment_starts

_OPENERS = (":", "{", "(", "[")
_CLOSERS = (")", "]", "}")
_PYTHON_BLOCK_ENDERS = re.compile(r"^(return|pass|raise|break|continue)\b")
_UNIT_SAMPLE_LINES = 200


def cursor_indent(doc: DocumentLines, line: int, language: str | None) -> str:
    """Leading whitespace for the cursor line (see the module docstring)."""
    text = doc.content(line)
    if text:
        return leading_whitespace(text)
    above = doc.previous_nonblank(line, comment_starts(language))
    if above is None:
        return ""
    below = doc.next_nonblank(line)
    if below is not None and above < line - 1:
        below_text = doc.content(below)
        if not below_text.lstrip().startswith(_CLOSERS):
            return leading_whitespace(below_text)
    above_text = doc.content(above)
    base = leading_whitespace(above_text)
    code = _strip_trailing_comment(above_text, language).rstrip()
    if code.endswith(_OPENERS) or _heads_a_block(code, language):
        return base + indent_unit(doc, line, language)
    if language == "python" and _PYTHON_BLOCK_ENDERS.match(code.lstrip()):
        return _dedent(base, indent_unit(doc, line, language))
    return base


def opens_block(doc: DocumentLines, line: int, language: str | None) -> bool:
    """True when the nearest code line above ``line`` ends with an opener."""
    above = doc.previous_nonblank(line, comment_starts(language))
    if above is None:
        return False
    code = _strip_trailing_comment(doc.content(above), language).rstrip()
    return code.endswith(_OPENERS) or _heads_a_block(code, language)


def indent_unit(doc: DocumentLines, line: int, language: str | None) -> str:
    """One indentation level as used near ``line``: a tab or N spaces.

    The most common step between successive deeper lines wins, so aligned
    continuation lines and ` * ` comment lines do not skew it.
    """
    tabs = spaces = 0
    steps: Counter[int] = Counter()
    previous = 0
    for index in range(max(doc.first, line - _UNIT_SAMPLE_LINES), line + 1):
        text = doc.content(index)
        stripped = text.strip()
        if not stripped or stripped.startswith("*"):
            continue
        indent = leading_whitespace(text)
        if indent.startswith("\t"):
            tabs += 1
            continue
        if indent:
            spaces += 1
        if len(indent) > previous:
            steps[len(indent) - previous] += 1
        previous = len(indent)
    if tabs > spaces:
        return "\t"
    if steps:
        return " " * steps.most_common(1)[0][0]
    return "\t" if language == "go" else "    "


def _dedent(indent: str, unit: str) -> str:
    return indent[: -len(unit)] if indent.endswith(unit) else indent


def _heads_a_block(code: str, language: str | None) -> bool:
    """Ruby, Lua, Bash: whether a line's code heads a block or a clause (`def x`, `items.each do |i|`, `else`, `if x
    then`, `local function f()`)."""
    blocks = reading(language)
    return blocks is not None and blocks.block_kind(code) is not None


def _strip_trailing_comment(text: str, language: str | None) -> str:
    """Drop an end-of-line comment (roughly: string contents are not tracked, but in Ruby's, Lua's and Bash's
    `code_of`)."""
    blocks = reading(language)
    if blocks is not None:
        return blocks.code_of(text)
    marker = "#" if language == "python" else "//"
    position = text.find(marker)
    return text if position < 0 else text[:position]
