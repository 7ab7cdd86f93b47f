"""Turn a raw hole fill into the text an editor shows: pure string functions.

Order (see `finish`): strip control characters, trim what repeats the start of the suffix,
drop closing brackets the suffix already has, cut to the requested scope (one line for a
mid-line automatic trigger, the end of the current block otherwise, at most `max_lines`).
"""

from __future__ import annotations

import re

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ufffd]")
_PAIRS = {")": "(", "]": "[", "}": "{"}


def strip_control(text: str) -> str:
    return _CONTROL.sub("", text.replace("\r\n", "\n"))


def trim_suffix_overlap(text: str, suffix: str) -> str:
    """Remove the longest tail of `text` that the suffix starts with, and a duplicated next line."""
    if not text or not suffix:
        return text
    for k in range(min(len(text), len(suffix)), 0, -1):
        if text.endswith(suffix[:k]) and suffix[:k].strip():
            return text[:-k]
    next_line = suffix.lstrip("\n").split("\n", 1)[0]
    if next_line.strip() and text.rstrip("\n").endswith(next_line) and text.rstrip("\n") != next_line:
        return text.rstrip("\n")[: -len(next_line)]
    return text


def unmatched_closers(text: str) -> list[int]:
    """Indices of closing brackets in `text` with no opener before them in `text`."""
    stack, unmatched = [], []
    for i, ch in enumerate(text):
        if ch in "([{":
            stack.append(ch)
        elif ch in _PAIRS:
            if stack and stack[-1] == _PAIRS[ch]:
                stack.pop()
            else:
                unmatched.append(i)
    return unmatched


def drop_closers_the_suffix_has(text: str, suffix: str) -> str:
    """A fill that ends with `)` while the suffix starts with `)` would close the bracket twice."""
    rest = suffix.lstrip(" \t")
    while True:
        stripped = text.rstrip(" \t")
        unmatched = unmatched_closers(stripped)
        if not stripped or not unmatched or unmatched[-1] != len(stripped) - 1:
            return text
        if not rest.startswith(stripped[-1]):
            return text
        text, rest = stripped[:-1], rest[1:].lstrip(" \t")


def cut_to_block(text: str, indent: str, max_lines: int) -> str:
    """Keep at most `max_lines` lines and stop before a line that dedents out of the cursor's block."""
    lines = text.split("\n")
    kept = [lines[0]]
    for line in lines[1:]:
        if len(kept) >= max_lines:
            break
        if line.strip() and len(line) - len(line.lstrip()) < len(indent):
            break
        kept.append(line)
    out = "\n".join(kept)
    if len(kept) < len(lines) and out and not out.endswith("\n") and len(kept) > 1:
        out = out.rstrip(" \t")
    return out


def finish(text: str, suffix: str, *, indent: str = "", mid_line: bool = False, single_line: bool = False,
           max_lines: int = 8) -> str:
    text = strip_control(text)
    text = trim_suffix_overlap(text, suffix)
    if single_line or mid_line:
        head, newline, _ = text.partition("\n")
        # A hole that is a whole line (cursor at column 0 before text) keeps its newline.
        text = head + newline if (not mid_line and head.strip() and newline and not single_line) else head
    else:
        text = cut_to_block(text, indent, max_lines)
    text = drop_closers_the_suffix_has(text, suffix)
    if not text.strip():
        return ""
    return text
