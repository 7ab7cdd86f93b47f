"""Brackets in code text, outside strings and comments: which are still open at the end of a text.

Shared by post-processing's string rules (completion/postprocess.py: closers the suffix already has, where a
statement ends) and the syntax gate (completion/gate.py: how far the scope reaches for a block a text opens)."""

from __future__ import annotations

PAIRS = {")": "(", "]": "[", "}": "{"}  # each closer's opener
QUOTES = ('"""', "'''", '"', "'", "`")  # the string delimiters `open_brackets` skips over, longest first


def open_brackets(text: str) -> list[str]:
    """The brackets still open at the end of `text`, outermost first. Brackets inside string literals
    (one-line quotes, triple quotes, backticks) and line comments (`#`, `//`) do not count; a closer
    with no opener is ignored (it closes something before `text`)."""
    stack: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == "#" or text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        quote = next((q for q in QUOTES if text.startswith(q, i)), None)
        if quote is not None:
            i += len(quote)
            multi = len(quote) == 3 or quote == "`"
            while i < n and not text.startswith(quote, i):
                if text[i] == "\\":
                    i += 1
                elif text[i] == "\n" and not multi:
                    break
                i += 1
            i += len(quote)
            continue
        if ch in "([{":
            stack.append(ch)
        elif ch in PAIRS and stack and stack[-1] == PAIRS[ch]:
            stack.pop()
        i += 1
    return stack
