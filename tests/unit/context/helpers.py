"""Small helpers for context tests: find positions by needle, slice text by position."""

from __future__ import annotations


def at(text: str, needle: str, offset: int = 0, occurrence: int = 0) -> tuple[int, int]:
    """(line, column) of ``needle`` (its ``occurrence``-th match) plus ``offset`` columns."""
    index = -1
    for _ in range(occurrence + 1):
        index = text.index(needle, index + 1)
    line = text.count("\n", 0, index)
    column = index - (text.rfind("\n", 0, index) + 1)
    return line, column + offset


def offset_of(text: str, line: int, column: int) -> int:
    """String index of a (line, column) position in ``text`` with "\\n" line breaks."""
    lines = text.split("\n")
    return sum(len(part) + 1 for part in lines[:line]) + column


def line_start(text: str, line: int) -> int:
    return offset_of(text, line, 0)


def after(text: str, needle: str) -> tuple[int, int]:
    """(line, column) right after the first match of ``needle``."""
    index = text.index(needle) + len(needle)
    line = text.count("\n", 0, index)
    return line, index - (text.rfind("\n", 0, index) + 1)
