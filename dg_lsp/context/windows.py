"""The prefix and suffix windows around a hole: the text the prompt is made of.

The prefix window runs from a stable anchor to the hole's start. The encoder's KV cache of a
prompt can be reused for the next one only where the two agree from their first token on. A
window that ended at the cursor and started a fixed number of characters before it would lose
a character at its start for every character typed, so no two prompts would share a prefix.
Here the start only moves in jumps: it is the first line start at or after `cursor - budget`
rounded *up* to a multiple of `stride`, so it stays put while the cursor advances by up to
`stride` characters, and the window is at most `budget` characters long and at least
`budget - stride` less the line the anchor falls in (longer only when a single line is, which
is then cut at a stride multiple).

The suffix window runs from the hole's end over whole lines, until the next line would
overflow the token budget; a first line longer than the budget is cut inside (keeping the
text nearest the hole). So the document's window is ``prefix + hole + suffix`` exactly.

Lines break as LSP breaks them (``\\n``, ``\\r\\n``, ``\\r``); columns count code points.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from dg_lsp.context.document import LINE_BREAK as _LINE_BREAK
from dg_lsp.context.document import DocumentLines

CHARS_PER_TOKEN = 3.5

TokenCounter = Callable[[str], float]

_LINEAR_BELOW = 1 << 16


def estimate_tokens(text: str) -> int:
    """The default token estimate: about 3.5 characters per token."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def _additive_estimate(text: str) -> float:
    # Unrounded, so summing per-line costs matches the cost of the joined text.
    return len(text) / CHARS_PER_TOKEN


def _has_lone_cr(text: str) -> bool:
    return "\r" in text and text.count("\r") != text.count("\r\n")


# -- the prefix window ------------------------------------------------------------------------------
def line_start(text: str, line: int) -> int:
    """Offset of the start of 0-based `line`; len(text) past the end."""
    if line <= 0:
        return 0
    if _has_lone_cr(text):  # rare: lines that end in a lone "\r" too
        for found, match in enumerate(_LINE_BREAK.finditer(text), 1):
            if found == line:
                return match.end()
        return len(text)
    if len(text) > _LINEAR_BELOW:  # bisect with str.count: about one pass over a huge text, in C
        low, high, needed = 0, len(text), line
        while high - low > 4096:
            middle = (low + high) // 2
            found = text.count("\n", low, middle)
            if found >= needed:
                high = middle
            else:
                needed, low = needed - found, middle
        offset = low
    else:
        offset, needed = 0, line
    for _ in range(needed):
        offset = text.find("\n", offset) + 1
        if offset == 0:
            return len(text)
    return offset


def cursor_offset(text: str, line: int, column: int) -> int:
    """Offset of (line, column) in `text`, the column clamped to the line's content."""
    start = line_start(text, line)
    end = _LINE_BREAK.search(text, start)
    return min(start + max(0, column), len(text) if end is None else end.start())


def anchor_offset(text: str, cursor: int, budget: int, stride: int) -> int:
    """Start of the prefix window for a cursor at offset `cursor` (see the module docstring)."""
    low = cursor - budget
    if low <= 0:
        return 0
    stride = max(1, min(stride, budget))
    anchor = -(-low // stride) * stride
    if text[anchor - 1] not in "\r\n" or text[anchor - 1:anchor + 1] == "\r\n":
        newline = _LINE_BREAK.search(text, anchor, cursor)
        if newline is not None:
            anchor = newline.end()
    return anchor


def stable_prefix(text: str, line: int, column: int, budget: int, stride: int | None = None) -> tuple[str, int]:
    """(prefix window, cursor offset) for a cursor at (line, column); budget and stride in characters."""
    cursor = cursor_offset(text, line, column)
    anchor = anchor_offset(text, cursor, budget, stride if stride is not None else budget // 4)
    return text[anchor:cursor], cursor


# -- the suffix window ------------------------------------------------------------------------------
@dataclass(frozen=True)
class SuffixWindow:
    text: str
    end_line: int
    truncated: bool


def suffix_window(doc: DocumentLines, end: tuple[int, int], budget: float,
                  count_tokens: TokenCounter | None = None) -> SuffixWindow:
    """The window after a hole that ends at `end` (a clamped position), within `budget` tokens."""
    count = count_tokens or _additive_estimate
    line = end[0]
    tail = doc.content(line)[end[1]:] + doc.eol(line)
    cut = _keep_head(tail, budget, count)
    if cut != tail:
        return SuffixWindow(cut, line, True)
    last, left = line, budget - count(tail)
    while last < doc.stop - 1:
        cost = count(doc.raw(last + 1))
        if cost > left:
            break
        left -= cost
        last += 1
    return SuffixWindow(tail + doc.join(line + 1, last + 1), last, not doc.is_last(last))


def _keep_head(text: str, budget: float, count: TokenCounter) -> str:
    """``text`` itself if it fits, else its longest fitting head."""
    if count(text) <= budget:
        return text
    low, high = 0, len(text) - 1  # longest fitting length lies in [low, high]
    while low < high:
        middle = (low + high + 1) // 2
        if count(text[:middle]) <= budget:
            low = middle
        else:
            high = middle - 1
    return text[:low]
