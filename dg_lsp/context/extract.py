"""Build the context of a completion request: the prompt's windows, enclosing scopes, cursor facts.

``extract_context`` is the one entry point. It never raises on positions (they
clamp into the document) and degrades to plain line-based windows when the
language is unknown or the parse fails.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from dg_lsp.context.document import LINE_BREAK, DocumentLines, leading_whitespace
from dg_lsp.context.indentation import cursor_indent, opens_block
from dg_lsp.context.languages import normalize_language
from dg_lsp.context.scopes import REACH_ABOVE, REACH_BELOW, Scope, find_scopes
from dg_lsp.context.windows import CHARS_PER_TOKEN, stable_prefix, suffix_window


# the syntax gate's window after the hole, in tokens (estimated): longer than the model's suffix (256), so that the
# closers of the blocks around the hole are there to judge a suggestion by (docs/results/gate-lost-opener.md)
JUDGE_TOKENS = 2048


@dataclass(frozen=True)
class CodeContext:
    """What the completion engine needs to know about the text around a hole.

    ``prefix`` + the hole's text + ``suffix`` is exactly the document's text from
    line ``prefix_start_line`` through line ``suffix_end_line`` (0-based,
    inclusive, line terminator included): the prompt's windows (windows.py; the
    prefix starts at a stable anchor so the engine's prefix cache can be reused).
    ``start``/``end`` are the hole's clamped (line, column) positions; they are
    equal for a plain cursor. ``cursor`` is the offset of ``start`` in the text.
    """

    prefix: str
    suffix: str
    language: str | None
    enclosing: Scope | None
    scopes: tuple[Scope, ...]
    mid_line: bool
    line_prefix: str
    line_suffix: str
    indent: str
    prefix_truncated: bool
    suffix_truncated: bool
    prefix_start_line: int
    suffix_end_line: int
    start: tuple[int, int]
    end: tuple[int, int]
    cursor: int
    # the longer window after the hole that the syntax gate judges a suggestion in (``JUDGE_TOKENS``, estimated):
    # it starts with ``suffix``, and reaches the closers of blocks longer than the model's window
    judge_suffix: str = ""
    judge_truncated: bool = False
    # a selection's block: the least indentation of the lines that hold selected text (None for a cursor, or a
    # selection of blanks); a selection fill stops where it dedents below it (postprocess.shown_end)
    selection_indent: int | None = None


def extract_context(
    text: str,
    language_id: str | None,
    line: int,
    column: int,
    end: tuple[int, int] | None = None,
    prefix_budget: int = 1024,
    suffix_budget: int = 256,
    count_tokens: Callable[[str], int] | None = None,
    stride: int | None = None,
    judge_budget: int = JUDGE_TOKENS,
) -> CodeContext:
    """Context for a cursor at (line, column), or a selection up to ``end``, all 0-based.

    ``column`` is a code-point index into the line. Budgets are in tokens: the
    suffix's as counted by ``count_tokens`` (default: about 3.5 characters per
    token), the prefix's as 3.5 characters each (the engine trims the prompt to
    its token budget at a line boundary). ``stride``: how far the cursor may move
    before the prefix's anchor does (characters; default a quarter of the budget).
    ``language_id`` is an LSP languageId or a canonical name; unknown -> None.
    """
    first_line = min(line, end[0]) if end is not None else line
    last_line = max(line, end[0]) if end is not None else line
    reach = (REACH_ABOVE + 1, _reach(max(suffix_budget, judge_budget), REACH_BELOW))
    doc = DocumentLines(text, (first_line, last_line), reach)
    language = normalize_language(language_id)
    start = doc.clamp(line, column)
    stop = doc.clamp(*end) if end is not None else start
    start, stop = min(start, stop), max(start, stop)

    line_text = doc.content(start[0])
    line_prefix = line_text[: start[1]]
    line_suffix = doc.content(stop[0])[stop[1] :]
    indent = cursor_indent(doc, start[0], language)

    scopes: list[Scope] = []
    if language is not None:
        depth = _indent_width(doc, start[0], line_prefix, indent, language)
        scopes = find_scopes(doc, language, start, stop, depth)

    budget = int(max(prefix_budget, 0) * CHARS_PER_TOKEN)
    prefix, cursor = stable_prefix(text, start[0], start[1], budget, stride)
    suffix = suffix_window(doc, stop, max(suffix_budget, 0), count_tokens)
    judge = suffix_window(doc, stop, max(judge_budget, 0))
    if len(judge.text) < len(suffix.text):
        judge = suffix
    return CodeContext(
        prefix=prefix,
        suffix=suffix.text,
        language=language,
        enclosing=scopes[-1] if scopes else None,
        scopes=tuple(scopes),
        mid_line=bool(line_suffix.strip()),
        line_prefix=line_prefix,
        line_suffix=line_suffix,
        indent=indent,
        prefix_truncated=cursor > len(prefix),
        suffix_truncated=suffix.truncated,
        prefix_start_line=start[0] - len(LINE_BREAK.findall(prefix)),
        suffix_end_line=suffix.end_line,
        start=start,
        end=stop,
        cursor=cursor,
        judge_suffix=judge.text,
        judge_truncated=judge.truncated,
        selection_indent=_selection_indent(doc, start, stop),
    )


def _selection_indent(doc: DocumentLines, start: tuple[int, int], stop: tuple[int, int]) -> int | None:
    """The least indentation (characters) of the lines whose selected part holds more than blanks: the block the
    selection lies in. A line's own indentation counts, wherever on it the selection starts."""
    if start == stop:
        return None
    depths = []
    for row in range(start[0], stop[0] + 1):
        content = doc.content(row)
        part = content[start[1] if row == start[0] else 0: stop[1] if row == stop[0] else len(content)]
        if part.strip():
            depths.append(len(leading_whitespace(content)))
    return min(depths, default=None)


def _reach(budget: int, region_lines: int) -> int:
    """Lines the suffix window or a parse region may need below the hole (the prefix window reads the text
    itself).

    Every line costs at least its newline, about 1/3.5 token by the default
    estimate; a counter that charges nothing for some lines may find its
    window cut at this many lines.
    """
    return max(region_lines, math.ceil(max(budget, 0) * CHARS_PER_TOKEN)) + 1


def _indent_width(
    doc: DocumentLines, line: int, line_prefix: str, indent: str, language: str
) -> int:
    """The cursor's block depth: the column a Python statement typed here starts at.

    That is the cursor's own column while only whitespace precedes it, so an
    empty line at column 0 below a function is outside it; but an empty line
    right under a block opener (`def f():`) belongs to the block it opens.
    """
    if line_prefix.strip():
        return len(leading_whitespace(doc.content(line)))
    if not doc.content(line) and opens_block(doc, line, language):
        return len(indent)
    return len(line_prefix)
