"""The prefix window of a completion: document text from a stable anchor to the cursor.

The encoder's KV cache of a prompt can be reused for the next one only where the two agree
from their first token on. A window that ended at the cursor and started a fixed number of
characters before it would lose a character at its start for every character typed, so no
two prompts would share a prefix. Here the start only moves in jumps: it is the first line
start at or after `cursor - budget` rounded *up* to a multiple of `stride`, so it stays put
while the cursor advances by up to `stride` characters, and the window is between
`budget - stride` and `budget` characters long (longer only when a single line is).
"""

from __future__ import annotations

_LINEAR_BELOW = 1 << 16


def line_start(text: str, line: int) -> int:
    """Offset of the start of 0-based `line` ('\\n' separated); len(text) past the end."""
    if line <= 0:
        return 0
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
    end = text.find("\n", start)
    end = len(text) if end < 0 else end
    if end > start and text[end - 1] == "\r":
        end -= 1
    return min(start + max(0, column), end)


def anchor_offset(text: str, cursor: int, budget: int, stride: int) -> int:
    """Start of the prefix window for a cursor at offset `cursor` (see the module docstring)."""
    low = cursor - budget
    if low <= 0:
        return 0
    stride = max(1, min(stride, budget))
    anchor = -(-low // stride) * stride
    if text[anchor - 1] != "\n":
        newline = text.find("\n", anchor, cursor)
        if newline >= 0:
            anchor = newline + 1
    return anchor


def stable_prefix(text: str, line: int, column: int, budget: int, stride: int | None = None) -> tuple[str, int]:
    """(prefix window, cursor offset) for a cursor at (line, column); budget and stride in characters."""
    cursor = cursor_offset(text, line, column)
    anchor = anchor_offset(text, cursor, budget, stride if stride is not None else budget // 4)
    return text[anchor:cursor], cursor
