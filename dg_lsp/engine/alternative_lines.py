"""The lines the suffix-scored alternatives (engine/alternatives.py) weigh, as text and tokens, with no model: which
answers they apply to and how the answer's line ends (`line_mode`, `riding_mode`), what a hole's text writes after
the healing tail (`after_heal`), the part of the suffix that scores a line (`suffix_head`), the starts of lines that
bind a name only the suffix reads (`name_starts`), and the drafts a branch takes from the code (`lookup`)."""

from __future__ import annotations

SUFFIX_LINES = 3  # lines of the suffix scored after each line
SUFFIX_CHARS = 400  # at most this much of them
LOOKUP = 6  # without the answer to draft from, a branch drafts this many tokens that followed its last ones in the code


def line_mode(prefix: str, suffix: str, text: str, one_line: bool) -> tuple[str, str] | None:
    """How the answer's line ends, and that line; None where alternatives do not apply. `one_line`: only the
    answer's first line is shown (InfillRequest.line_only, or rest_of_line where the line has code).
    "whole": nothing but indentation before the cursor on its line, and the line is a whole line ending in its line
    break: the answer itself, or its first line where only that is shown;
    "end": the cursor ends its line (the suffix starts with a line break, or is empty), and the line is the rest
    of the cursor's line, without the break: the answer, or its first line where only that is shown."""
    first, brk, rest = text.partition("\n")
    if not first.strip():
        return None
    mode = riding_mode(prefix, suffix)
    if mode == "end" and (not brk or one_line):
        return "end", first.rstrip("\r")
    if mode == "whole" and brk and (not rest or one_line):
        return "whole", first + brk
    return None


def riding_mode(prefix: str, suffix: str) -> str | None:
    """The mode `line_mode` gives any answer it applies to, from the text around the cursor alone (what the walk's
    riders go by before there is an answer); None where it applies to none."""
    if suffix == "" or suffix.startswith(("\n", "\r\n")):
        return "end"
    return "whole" if not prefix.rpartition("\n")[2].strip() else None


def after_heal(text: str, heal: str) -> str | None:
    """What a hole's text writes after the healing tail (`healing.unheal`'s reading, trailing blanks kept): a text
    that starts with fewer line breaks than the tail counts as having the tail's; None where the text does not
    (yet) start with the tail."""
    breaks = len(heal) - len(heal.lstrip("\n"))
    written = len(text) - len(text.lstrip("\n"))
    if 0 < written < breaks:
        text = heal[:breaks] + text[written:]
    return text[len(heal):] if text.startswith(heal) else None


def lookup(ids: list[int], context, n: int = LOOKUP) -> list[int]:
    """The `n` tokens that followed the latest place in `context` where the last 3 (else 2, else 1) of `ids` occur;
    [] where none does."""
    context = list(context)
    for k in (3, 2, 1):
        if len(ids) < k:
            continue
        key = ids[-k:]
        for s in range(len(context) - k - 1, -1, -1):
            if context[s:s + k] == key:
                return context[s + k:s + k + n]
    return []


def suffix_head(suffix: str, mode: str) -> str:
    """The part of the suffix each line is scored with: its first SUFFIX_LINES lines (after the cursor's own line
    break in mode "end"), at most SUFFIX_CHARS characters."""
    lines = suffix.splitlines(keepends=True)
    return "".join(lines[:SUFFIX_LINES + (1 if mode == "end" else 0)])[:SUFFIX_CHARS]


def name_starts(names: tuple[str, ...], line: str, prefix: str, suffix: str) -> list[str]:
    """Starts of whole lines that bind `names` (context/names.py: read by the suffix, never seen in the prefix), at
    the answer `line`'s indentation, in Python's syntax (the only language whose requests carry names): where the
    suffix's next line of text is indented deeper than the answer, the line opens its block, so `for name in`
    (and `for a, b in` for two); else `name =`. Starts the answer's line already begins with are left out.
    Indentations count from the line's start: the blanks before the cursor, then the answer's own."""
    if not names:
        return []
    cursor = len(prefix.rpartition("\n")[2])
    indent = line[:len(line) - len(line.lstrip(" \t"))]
    lines = suffix.split("\n")
    j = next((j for j, text in enumerate(lines) if text.strip()), None)
    following = -1 if j is None else len(lines[j]) - len(lines[j].lstrip(" \t")) + (cursor if j == 0 else 0)
    if following > cursor + len(indent):
        starts = [f"for {name} in" for name in names] + ([f"for {', '.join(names)} in"] if len(names) > 1 else [])
    else:
        starts = [f"{name} =" for name in names]
    return [indent + start for start in starts if not line.lstrip().startswith(start)]
