"""Prefix and suffix windows around a hole, cut to token budgets at line boundaries.

The cut is exact at the hole (the prefix ends at its start, the suffix begins
at its end) and at whole lines everywhere else, so the document's window is
``prefix + hole + suffix`` exactly. Windows grow outward from the hole, taking
the enclosing function's head (signature to cursor) and the rest of its body
as one block first when they fit, then line by line until the next line would
overflow the budget. A single cursor line longer than the budget is the only
case cut mid-line (keeping the text nearest the hole).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from dg_lsp.context.document import DocumentLines

CHARS_PER_TOKEN = 3.5

TokenCounter = Callable[[str], float]


def estimate_tokens(text: str) -> int:
    """The default token estimate: about 3.5 characters per token."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def _additive_estimate(text: str) -> float:
    # Unrounded, so summing per-line costs matches the cost of the joined text.
    return len(text) / CHARS_PER_TOKEN


@dataclass(frozen=True)
class Windows:
    prefix: str
    suffix: str
    prefix_start_line: int
    suffix_end_line: int
    prefix_truncated: bool
    suffix_truncated: bool


def build_windows(
    doc: DocumentLines,
    start: tuple[int, int],
    end: tuple[int, int],
    prefix_budget: float,
    suffix_budget: float,
    count_tokens: TokenCounter | None = None,
    focus: tuple[int, int] | None = None,
) -> Windows:
    """Windows for a hole from ``start`` to ``end`` (clamped positions, start <= end).

    ``focus`` is the (start_line, end_line) of the enclosing function whose head
    and rest the windows favour; None gives plain line-based windows.
    """
    count = count_tokens or _additive_estimate
    head_line, tail_line = start[0], end[0]

    head = doc.content(head_line)[: start[1]]
    head_cut = _keep_tail(head, prefix_budget, count)
    if head_cut != head:
        prefix_start, prefix = head_line, head_cut
    else:
        block_start = focus[0] if focus is not None else None
        prefix_start = _grow_up(doc, head_line, prefix_budget - count(head), count, block_start)
        prefix = doc.join(prefix_start, head_line) + head

    tail = doc.content(tail_line)[end[1] :] + doc.eol(tail_line)
    tail_cut = _keep_head(tail, suffix_budget, count)
    if tail_cut != tail:
        suffix_end, suffix = tail_line, tail_cut
    else:
        block_end = focus[1] if focus is not None else None
        suffix_end = _grow_down(doc, tail_line, suffix_budget - count(tail), count, block_end)
        suffix = tail + doc.join(tail_line + 1, suffix_end + 1)

    return Windows(
        prefix=prefix,
        suffix=suffix,
        prefix_start_line=prefix_start,
        suffix_end_line=suffix_end,
        prefix_truncated=prefix_start > 0 or head_cut != head,
        suffix_truncated=not doc.is_last(suffix_end) or tail_cut != tail,
    )


def _grow_up(
    doc: DocumentLines, line: int, budget: float, count: TokenCounter, block_start: int | None
) -> int:
    """First line of the prefix: ``line`` extended upward within ``budget``."""
    first = line
    if block_start is not None and doc.first <= block_start < first:
        cost = count(doc.join(block_start, first))
        if cost <= budget:
            budget -= cost
            first = block_start
    while first > doc.first:
        cost = count(doc.raw(first - 1))
        if cost > budget:
            break
        budget -= cost
        first -= 1
    return first


def _grow_down(
    doc: DocumentLines, line: int, budget: float, count: TokenCounter, block_end: int | None
) -> int:
    """Last line of the suffix: ``line`` extended downward within ``budget``."""
    last = line
    if block_end is not None and block_end > last:
        block_end = min(block_end, doc.stop - 1)
        cost = count(doc.join(last + 1, block_end + 1))
        if cost <= budget:
            budget -= cost
            last = block_end
    while last < doc.stop - 1:
        cost = count(doc.raw(last + 1))
        if cost > budget:
            break
        budget -= cost
        last += 1
    return last


def _keep_tail(text: str, budget: float, count: TokenCounter) -> str:
    """``text`` itself if it fits, else its longest fitting tail."""
    if count(text) <= budget:
        return text
    low, high = 1, len(text)  # smallest cut start that fits lies in [low, high]
    while low < high:
        middle = (low + high) // 2
        if count(text[middle:]) <= budget:
            high = middle
        else:
            low = middle + 1
    return text[low:]


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
