"""Lines of a document as LSP sees them, with exact line endings kept.

LSP counts only ``\\n``, ``\\r\\n`` and ``\\r`` as line breaks (unlike
``str.splitlines``, which also breaks on form feeds and U+2028).

Small documents are split whole. For a huge one (megabytes, 100k+ lines)
creating every line string costs more than all the rest of a request, so only
the lines within ``reach`` of the cursor are materialised: the cursor line's
offset is found by bisecting with ``str.count`` (C speed, about two passes over
the text) and just that slice is split. Line indices stay document-global;
``first``/``stop`` bound the lines that may be read.
"""

from __future__ import annotations

import re

_EOL = re.compile(r"(\r\n|\r|\n)")
LINE_BREAK = re.compile(r"\r\n|\r|\n")  # LSP's line breaks

# Below this size splitting everything is cheaper than being clever.
WINDOWED_ABOVE_CHARS = 1_000_000
_LINEAR_FINISH_CHARS = 4096


class DocumentLines:
    """Line access by 0-based document index; ``raw`` lines keep their terminator."""

    def __init__(
        self,
        text: str,
        around: tuple[int, int] | None = None,
        reach: tuple[int, int] = (0, 0),
    ) -> None:
        """Split ``text``; a huge one only ``reach`` (above, below) lines ``around`` a hole."""
        self.first = 0
        self._text = text
        self._eols: list[str] | None = None
        self._count: int | None = None  # None: not counted yet (huge text, window)
        if "\r" in text and text.count("\r") != text.count("\r\n"):
            pieces = _EOL.split(text)  # lone "\r" line breaks: rare, take the slow way
            self._parts = pieces[0::2]
            self._eols = pieces[1::2]
            self._count = len(self._parts)
        elif around is None or len(text) <= WINDOWED_ABOVE_CHARS:
            # Every "\r" belongs to a "\r\n", so "\n" splits exactly.
            self._parts = text.split("\n")
            self._count = len(self._parts)
        else:
            self._split_window(text, around, reach)
        self.stop = self.first + len(self._parts)

    def _split_window(self, text: str, around: tuple[int, int], reach: tuple[int, int]) -> None:
        first = max(around[0] - reach[0], 0)
        offset = _line_offset(text, first, 0)
        if offset < 0:  # the hole is past the end: take the document's tail
            self._count = text.count("\n") + 1
            first = max(self._count - 1 - reach[0], 0)
            offset = _line_offset(text, first, 0)
        stop = max(around) + reach[1] + 1
        end = _line_offset(text, stop - first, offset)
        self.first = first
        if end < 0:
            self._parts = text[offset:].split("\n")
            self._count = first + len(self._parts)
        else:
            self._parts = text[offset : end - 1].split("\n")

    def __len__(self) -> int:
        if self._count is None:
            self._count = self._text.count("\n") + 1
        return self._count

    def is_last(self, index: int) -> bool:
        """True for the document's last line (cheap: never counts a huge text)."""
        if index < self.stop - 1:
            return False
        return len(self) - 1 == index

    def content(self, index: int) -> str:
        """Line text without its terminator."""
        part = self._parts[index - self.first]
        if self._eols is None and part.endswith("\r"):
            return part[:-1]
        return part

    def eol(self, index: int) -> str:
        """The line's terminator; empty for the last line."""
        if self.is_last(index):
            return ""
        if self._eols is not None:
            return self._eols[index]
        return "\r\n" if self._parts[index - self.first].endswith("\r") else "\n"

    def raw(self, index: int) -> str:
        return self.content(index) + self.eol(index)

    def join(self, start: int, stop: int) -> str:
        """Raw text of lines ``start`` to ``stop - 1``, terminators included."""
        start, stop = max(self.first, start), min(self.stop, stop)
        if start >= stop:
            return ""
        if self._eols is None:
            tail = "" if self.is_last(stop - 1) else "\n"
            return "\n".join(self._parts[start - self.first : stop - self.first]) + tail
        return "".join(self.raw(i) for i in range(start, stop))

    def clamp(self, line: int, column: int) -> tuple[int, int]:
        """Clamp a position into the document: past the end -> end of line / document."""
        if line < 0:
            return 0, 0
        if line >= self.stop and self.is_last(self.stop - 1):
            return self.stop - 1, len(self.content(self.stop - 1))
        return line, min(max(column, 0), len(self.content(line)))

    def previous_nonblank(self, line: int, skip_comments: tuple[str, ...] = ()) -> int | None:
        """Index of the nearest line above ``line`` with code on it, or None."""
        for index in range(line - 1, max(self.first - 1, line - 200), -1):
            stripped = self.content(index).strip()
            if stripped and not stripped.startswith(skip_comments):
                return index
        return None


    def next_nonblank(self, line: int) -> int | None:
        """Index of the nearest non-blank line below ``line``, or None."""
        for index in range(line + 1, min(self.stop, line + 200)):
            if self.content(index).strip():
                return index
        return None


def newline_text(text: str) -> str:
    """``text`` with every line break (``\\r\\n``, ``\\r``) as ``\\n``: the same lines, by LSP's count, the same
    columns, so positions on its ``'\\n'`` lines are positions on the LSP lines of ``text``."""
    if "\r" not in text:
        return text
    return text.replace("\r\n", "\n").replace("\r", "\n")


def leading_whitespace(text: str) -> str:
    return text[: len(text) - len(text.lstrip(" \t"))]


def _line_offset(text: str, lines: int, start: int) -> int:
    """Offset of the line ``lines`` lines after the one starting at ``start``; -1 if none."""
    if lines <= 0:
        return start
    low, high, needed = start, len(text), lines
    # Bisect to a short span holding the needed newline; each count covers half
    # of what is left, so the total work is about one pass over the text.
    while high - low > _LINEAR_FINISH_CHARS:
        middle = (low + high) // 2
        found = text.count("\n", low, middle)
        if found >= needed:
            high = middle
        else:
            needed -= found
            low = middle
    offset = low
    for _ in range(needed):
        offset = text.find("\n", offset) + 1
        if offset == 0:
            return -1
    return offset
