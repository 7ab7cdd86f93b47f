"""Python's own compiler on candidate completions: its first complaint about a window (`python_complaint`), and
the gate's readings of it (a text that mends the statement at the hole, fixes or leaves the window's error,
misindents the lines under it, opens a block with no body). The tree-sitter checks of every language are
`syntax`."""

from __future__ import annotations

import ast
import functools
import re
import textwrap


@functools.lru_cache(maxsize=64)
def python_complaint(text: str) -> tuple[int, bool, str] | None:
    """Python's first complaint about `text`, its common indentation removed (compiled to an AST only: nothing
    runs), as (its 1-based line, 0 if it has none; whether it is an indentation error; its message), or None if it
    compiles. Cached: the gate's checks ask about the same window, with and without a suggestion, several times
    (about 10 compiles of 3 texts a suggestion)."""
    try:
        compile(textwrap.dedent(text), "<suggestion>", "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
        return None
    except IndentationError as e:
        return (e.lineno or 0, True, e.msg or "")
    except SyntaxError as e:
        return (e.lineno or 0, False, e.msg or "")
    except (ValueError, RecursionError, MemoryError, OverflowError) as e:
        return (0, False, str(e))


def python_error(text: str) -> tuple[int, bool] | None:
    """`python_complaint` without the message: (line, whether it is an indentation error), or None."""
    complaint = python_complaint(text)
    return None if complaint is None else complaint[:2]


def python_compiles(text: str) -> bool:
    """`text`, its common indentation removed, compiles as Python (to an AST only: nothing runs)."""
    return python_error(text) is None


def _met_line(prefix: str, text: str, suffix: str) -> int:
    """The 1-based line of `prefix + text + suffix` where the text meets the document after it: the line the text
    ends on, or the next one unless it ends at a line's start, then past blank lines."""
    lines = (prefix + text + suffix).split("\n")
    meets = prefix.count("\n") + 1 + text.count("\n")
    meets += bool(text.rsplit("\n", 1)[-1].strip())
    while meets < len(lines) and not lines[meets - 1].strip():
        meets += 1
    return meets


def python_mends(prefix: str, text: str, suffix: str) -> bool:
    """`text` stays on the cursor's line, Python's first complaint about the window without it is on that line or
    below it (the statement being written is unfinished: `elif value i`), and with the text it has none up to and
    including the first non-blank line after it: the text finishes that statement and fits the line after it. A
    window cut mid-statement at its end still complains there, past the text, so the text is judged by its own
    line. A text that adds lines is not judged so: Python names only its first complaint, and one further down
    (an `except` whose `try` the new line should have been) could be the text's own."""
    if "\n" in text:
        return False
    before = python_error(prefix + suffix)
    if before is None or before[0] < prefix.count("\n") + 1:
        return False
    after = python_error(prefix + text + suffix)
    return after is None or after[0] > _met_line(prefix, text, suffix)


REACH = 8  # lines below the cursor's line where a complaint of the window without the text counts as the hole's
PAST = 2  # with the text, a complaint this few lines under where the window's first one was still counts
# complaints that name where something opens, not where the window broke: a string or bracket a window cut at its
# end leaves open is reported at its start, which may be anywhere
_OPENED = ("unterminated", "was never closed")
_CLAUSE = re.compile(r"\s*(else|elif|except|finally|case)\b")


def _inner_complaint(text: str, own: range) -> tuple[int, bool, str] | None:
    """`python_complaint` where it is about the text's inside: None where it compiles, and where the complaint
    could be the window's cut, unless it is on one of the lines `own` (the cursor's statement, or a suggestion's
    lines: theirs to answer for): a string or bracket reported where it opens, a complaint on the last non-blank
    line or past it other than an unmatched bracket (a block with no body, a statement cut short)."""
    complaint = python_complaint(text)
    if complaint is None or complaint[0] in own:
        return complaint
    if any(word in complaint[2] for word in _OPENED):
        return None
    end = max((i + 1 for i, line in enumerate(text.split("\n")) if line.strip()), default=0)
    return None if complaint[0] >= end and not complaint[2].startswith("unmatched") else complaint


def _own_lines(prefix: str, text: str) -> tuple[range, range]:
    """The lines a string or bracket opened on belongs to the cursor's statement (without the text: the cursor's
    line, where code stands before the cursor on it) and to the text's (with it: the lines it writes on, not the one
    its final line break starts)."""
    hole = prefix.count("\n") + 1
    cursor = range(hole, hole + 1) if prefix.rpartition("\n")[2].strip() else range(0)
    written = text.count("\n") + (not text.endswith("\n"))
    return cursor, range(hole, hole + written) if text.strip() else cursor


def python_fixes(prefix: str, text: str, suffix: str) -> bool:
    """Python complains about the window without `text` at the cursor's line or under it, other than where the window's
    cut makes it (`_inner_complaint`), or about a string or bracket opened above the hole, which runs over it; and with
    the text that complaint is gone: it compiles, or its first complaint is further down than the old one (moved by the
    text's lines) and is one the window's cut makes (`_inner_complaint`), not one on the text's own lines. The window
    lacked what the text supplies (the first line of a call continued under it, the `}` of a dict opened above, a body
    under a `def`)."""
    hole = prefix.count("\n") + 1
    cursor, written = _own_lines(prefix, text)
    before = python_complaint(prefix + suffix)
    if before is None:
        return False
    if not (before[0] < hole and any(word in before[2] for word in _OPENED)):  # else: opened above, over the hole
        before = _inner_complaint(prefix + suffix, cursor)
        if before is None or before[0] < hole:
            return False
    after = python_complaint(prefix + text + suffix)
    if after is None:
        return True
    if after[0] <= before[0] + text.count("\n"):
        return False
    return _inner_complaint(prefix + text + suffix, written) is None


def python_judges_hole(prefix: str, suffix: str) -> bool:
    """Python's first complaint about `prefix + suffix` (if any) is not above the cursor's line: the window says
    something about the lines at the hole and under it."""
    complaint = python_complaint(prefix + suffix)
    return complaint is None or complaint[0] >= prefix.count("\n") + 1


def python_region_around(prefix: str, suffix: str, sizes: tuple[int, ...] = (24, 8, 3)) -> tuple[str, str] | None:
    """The largest run of the `sizes` lines above the cursor's line, started at one of them least indented (a
    statement's start, most likely; the first that serves), that Python judges at the hole (`python_judges_hole`) with
    `suffix` under it up to where that block ends (`_block_below`), as (its prefix, that suffix); None if none does.
    For a window whose first complaint is above the hole (cut in a docstring, or starting inside a block)."""
    above = prefix.split("\n")
    for k in sizes:
        lines = above[max(len(above) - 1 - k, 0):-1]
        indents = [len(line) - len(line.lstrip()) if line.strip() else None for line in lines]
        least = min((i for i in indents if i is not None), default=None)
        below = _block_below(suffix, least or 0)
        for start in (i for i, indent in enumerate(indents) if indent == least):
            region = "\n".join(lines[start:] + [above[-1]])
            if python_judges_hole(region, below):
                return region, below
    return None


def _block_below(suffix: str, indent: int) -> str:
    """`suffix` up to the first line after the cursor's that is indented less than `indent` (where the block the
    lines above start in ends; dedented alone it would misindent them)."""
    lines = suffix.split("\n")
    for i, line in enumerate(lines[1:], 1):
        if line.strip() and len(line) - len(line.lstrip()) < indent:
            return "\n".join(lines[:i]) + "\n"
    return suffix


def python_leaves_error(prefix: str, text: str, suffix: str, reach: int = REACH, past: int = PAST) -> bool:
    """The window without `text` compiles up to the cursor's line but not past it: Python's first complaint is on that
    line or at most `reach` lines below it (and is not one a window cut at its end makes: `_inner_complaint`). With the
    text Python still complains at the cursor's line, or below it at most `past` lines under where the first complaint
    was (moved down by the text's line breaks). A text inside the cursor's line answers only for that line (both counts
    0): a complaint under it was there whatever the line says. The code at and under the hole lacks what the hole should
    hold (continuation lines whose call starts there, dict entries under a missing `ops = {`, an `else:` whose `if` body
    is missing, the cursor's own unfinished statement), and a text that leaves that lack, or fixes one line of it and
    not the next, is not what goes there. Where the first complaint is above the cursor's line the window says nothing
    about the hole, nor where it starts at a clause (`else:`) on the cursor's line, whose statement is not in it, nor
    where it has no code after the cursor: False."""
    hole = prefix.count("\n") + 1
    if hole == 1 and _CLAUSE.match(prefix + text):  # the window starts at a clause: its statement is not in it
        return False
    if not suffix.strip():  # no code under the hole to lack anything
        return False
    if "\n" not in text:  # inside the cursor's line: only its own statement is the text's to finish
        reach = past = 0
    cursor, written = _own_lines(prefix, text)
    before = _inner_complaint(prefix + suffix, cursor)
    if before is None or not hole <= before[0] <= hole + reach:
        return False
    after = _inner_complaint(prefix + text + suffix, written)
    return after is not None and hole <= after[0] <= max(before[0] + text.count("\n") + past,
                                                         _met_line(prefix, text, suffix))


def python_misindents(prefix: str, text: str, suffix: str) -> bool:
    """`text`, inserted between `prefix` and `suffix`, breaks lines (it holds a line break) and Python finds an
    indentation error on its lines or on the first non-blank line after them: a block it opens with no body
    under it, a line that the next one is indented deeper than, a dedent to no level. This judges a window that
    does not compile even without the text (the hole is an empty block's body, say), where a text that makes it
    compile cannot be asked for: one that breaks lines owns the indentation where it meets the next line."""
    if "\n" not in text:
        return False  # inside one line: the lines keep their structure, and any error there was there before
    whole = prefix + text + suffix
    error = python_error(whole)
    if error is None or not error[1]:
        return False
    return prefix.count("\n") + 1 <= error[0] <= _met_line(prefix, text, suffix)


_EMPTY_BLOCK = re.compile(r"expected an indented block after .* on line (\d+)")


def python_opens_empty_block(prefix: str, text: str, suffix: str) -> bool:
    """`text` ends the cursor's line without breaking it (the suffix starts with a line break), and Python's first
    complaint about the window with it is a block that line opens with no body under it (`if soft_break:` above a
    line at its own indentation), found on the first non-blank line after it. A text inside a line owns no other
    indentation error (`python_misindents`), but this one is its own line's."""
    if "\n" in text or not suffix.startswith(("\n", "\r\n")):
        return False
    complaint = python_complaint(prefix + text + suffix)
    if complaint is None:
        return False
    opened = _EMPTY_BLOCK.match(complaint[2])
    hole = prefix.count("\n") + 1
    return bool(opened) and int(opened.group(1)) == hole and hole < complaint[0] <= _met_line(prefix, text, suffix)
