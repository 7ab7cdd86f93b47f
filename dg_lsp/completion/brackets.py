"""Brackets in code text, outside strings and comments: which are still open at the end of a text.

Shared by post-processing's string rules (completion/postprocess.py: closers the suffix already has, where a
statement ends) and the syntax gate (completion/gate.py: how far the scope reaches for a block a text opens)."""

from __future__ import annotations

PAIRS = {")": "(", "]": "[", "}": "{"}  # each closer's opener
QUOTES = ('"""', "'''", '"', "'", "`")  # the string delimiters `open_brackets` skips over, longest first
# where a line comment starts, by canonical language name (context/languages.py); any other language, or none: both
# (`#` starts a private name in JavaScript and a preprocessor line in C, `//` divides in Python)
LINE_COMMENTS = {"python": ("#",), **{name: ("//",) for name in
                                       ("javascript", "typescript", "tsx", "go", "rust", "java", "c", "cpp")}}
ANY_COMMENTS = ("#", "//")


def open_brackets(text: str, language: str | None = None) -> list[str]:
    """The brackets still open at the end of `text`, outermost first. Brackets inside string literals
    (one-line quotes, triple quotes, backticks) and line comments (`#` in Python, `//` in the brace languages,
    both for any other language or none) do not count; a closer with no opener is ignored (it closes something
    before `text`)."""
    return _scan(text, [], language)[0]


def open_counts(text: str, offsets: list[int], language: str | None = None, recover: bool = False) -> list[int]:
    """How many brackets are open (as `open_brackets` counts them) at each of the ascending `offsets` of `text`:
    `len(open_brackets(text[:k], language))` for each k, in one pass over `text`. With `recover`, a closer that
    does not match the innermost open bracket closes the nearest one it matches, and those inside it with it (as a
    parser recovers: the `}` under `if (by` closes the `(` and the block), where `open_brackets` ignores it."""
    return _scan(text, offsets, language, recover=recover)[1]


def misaligned_closers(text: str, language: str | None = None, start: int = 0) -> int:
    """How many `}` that start their line close no `{`, or a `{` whose line is indented otherwise: block closers out
    of line with their openers, as where a block's opening line is missing and its `}` closes the block around it
    (or, at the start of a text, nothing) instead. Only the closers from offset `start` on count (the brackets
    before it still open what they open)."""
    return _scan(text, [], language, start)[2]


def open_spans(text: str, language: str | None = None) -> list[tuple[str, int, int]]:
    """The brackets still open at the end of `text` (as `open_brackets` finds them), outermost first, each as
    (bracket, its offset in `text`, the indentation of its line for a `{`, else 0)."""
    return _scan(text, [], language, spans=True)[0]


def _brackets(text: str, language: str | None):
    """Each bracket of `text` outside string literals and line comments, as (offset, bracket), in order."""
    comments = LINE_COMMENTS.get(language, ANY_COMMENTS)
    starts = {c[0] for c in comments}  # a cheap test before the comment's own
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch in starts and any(text.startswith(c, i) for c in comments):
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
        if ch in "([{)]}":
            yield i, ch
        i += 1


def _scan(text: str, offsets: list[int], language: str | None, start: int = 0,
          spans: bool = False, recover: bool = False) -> tuple[list, list[int], int]:
    """The brackets open at the end of `text` (with `spans`, `open_spans`' tuples), how many are open at each of the
    ascending `offsets`, and how many line-leading `}` from offset `start` on close no `{` or one of another
    indentation. With `recover`, `open_counts`' reading of a closer that meets another open bracket."""
    stack: list[tuple[str, int, int]] = []  # (bracket, indentation of its line, offset)
    counts: list[int] = []
    misaligned = 0
    for i, ch in _brackets(text, language):
        while len(counts) < len(offsets) and offsets[len(counts)] <= i:
            counts.append(len(stack))  # an offset inside a string or comment: what was open where it began
        if ch in "([{":
            stack.append((ch, _line_indent(text, i) if ch == "{" else 0, i))
            continue
        matched = bool(stack) and stack[-1][0] == PAIRS[ch]
        if ch == "}" and i >= start and not text[text.rfind("\n", 0, i) + 1:i].strip():  # a line-leading `}`
            misaligned += not matched or stack[-1][1] != _line_indent(text, i)
        if matched:
            stack.pop()
        elif recover and any(b == PAIRS[ch] for b, _, _ in stack):
            while stack.pop()[0] != PAIRS[ch]:
                pass
    counts += [len(stack)] * (len(offsets) - len(counts))
    if spans:
        return [(c, offset, indent) for c, indent, offset in stack], counts, misaligned
    return [c for c, _, _ in stack], counts, misaligned


def indent_width(line: str) -> int:
    """How many blanks (spaces, tabs) a line starts with."""
    return len(line) - len(line.lstrip(" \t"))


def _line_indent(text: str, i: int) -> int:
    """The indentation width of the line of `text` that holds offset `i`."""
    return indent_width(text[text.rfind("\n", 0, i) + 1:i])
