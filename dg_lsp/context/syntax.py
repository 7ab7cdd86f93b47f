"""Syntax checks on candidate completions: tree-sitter ERROR and MISSING nodes, literals left open,
Python's own compiler.

Used by the syntax gate of post-processing (completion/postprocess.py), to tie-break candidates of
different lengths, and by the benchmark's syntax-valid rate. Unknown languages count as error-free.
"""

from __future__ import annotations

import ast
import functools
import re
import textwrap

from tree_sitter import Node

from dg_lsp.context.languages import get_parser


@functools.lru_cache(maxsize=16)
def parsed(text: str, language: str):
    """`text` parsed as `language` (one it has a grammar for). Cached: the syntax gate parses the same window, with a
    suggestion and without, in several of its checks."""
    return get_parser(language).parse(text.encode("utf-8"))


@functools.lru_cache(maxsize=2)
def document_tree(data: bytes, language: str):
    """A whole document (UTF-8) parsed as `language` (one it has a grammar for). A cache of its own, for the last
    two: `parsed`'s holds the gate's windows, which whole documents would push out; a suggestion's document is read
    by the name check and the whole-document parse rule in turn."""
    return get_parser(language).parse(data)


def breaks_document(document: str, at: int, to: int, text: str, language: str | None) -> bool:
    """Whether `document`, which parses clean, does not with `text` over [`at`, `to`) (character offsets): the
    whole file read, where the gate reads windows, whose blocks it closes at their ends (npm's arborist: a blank
    line in a method given `if (minReleaseAgeExclude) {` and a `return`, whose `{` the method's own `}` then closes,
    leaving the class open to the file's end). False for a language without a grammar, a document that does not
    parse clean, or a text with no UTF-8 form."""
    if get_parser(language) is None:
        return False
    try:
        applied = (document[:at] + text + document[to:]).encode("utf-8")
        if not document_tree(applied, language).root_node.has_error:
            return False
        return not document_tree(document.encode("utf-8"), language).root_node.has_error
    except UnicodeEncodeError:  # a lone surrogate: nothing known
        return False


def syntax_error_count(text: str, language: str | None) -> int:
    """Number of ERROR and MISSING nodes in ``text`` parsed as ``language`` (0 if unknown)."""
    parser = get_parser(language)
    if parser is None:
        return 0
    return _count_errors(parsed(text, language).root_node)


def introduces_syntax_errors(before: str, after: str, language: str | None) -> bool:
    """True when ``after`` has more syntax errors than ``before``."""
    if get_parser(language) is None:
        return False
    return syntax_error_count(after, language) > syntax_error_count(before, language)


# Node types of literals and comments that must not start inside an inserted text and end after it.
_LITERAL_SUFFIXES = ("string", "string_literal", "comment", "char_literal", "rune_literal", "text_block")


def _is_literal(node: Node) -> bool:
    # adjacent strings (`"a "\n"b"`, Python and C) are one `concatenated_string` of closed strings: a text may
    # end with the first of them; each string in it is judged on its own
    return node.type.endswith(_LITERAL_SUFFIXES) and node.type != "concatenated_string"


def opens_unclosed_literal(root: Node, start: int, end: int) -> bool:
    """True if a string, docstring or comment node starts inside the bytes [start, end) and ends after
    them: an inserted text that opens a literal it does not close."""
    stack = [root]
    while stack:
        node = stack.pop()
        if node.end_byte <= start or node.start_byte >= end:
            continue
        if _is_literal(node) and node.start_byte >= start and node.end_byte > end:
            return True
        stack.extend(node.children)
    return False


def _error_spans(root: Node) -> list[tuple[str, int, int]]:
    """(type, start byte, end byte) of every ERROR and MISSING node. A hidden MISSING node (python's
    `_newline` between two statements on one line) is not among any node's children: a node flagged
    `has_error` with no flagged child stands for it, with the node's own span."""
    spans = []
    if not root.has_error:
        return spans
    stack = [root]
    while stack:
        node = stack.pop()
        if node.is_error or node.is_missing:
            spans.append((node.type, node.start_byte, node.end_byte))
        flagged = [child for child in node.children if child.has_error or child.is_missing]
        if not flagged and node.has_error and not node.is_error:
            spans.append(("MISSING", node.start_byte, node.end_byte))
        stack.extend(flagged)
    return spans


def new_errors(before: list[tuple[str, int, int]], after: list[tuple[str, int, int]], hole: int,
               inserted: int) -> list[tuple[str, int, int]]:
    """The error spans of the text with `inserted` bytes at byte `hole` that the text without them did not
    have, the spans of `before` moved past the insertion where they lie in the suffix. A span that ended at
    the hole and now runs over the inserted text is new: the insertion became part of the error (an error
    count alone misses that, one ERROR node can swallow any text)."""
    allowed: dict[tuple[str, int, int], int] = {}

    def allow(key):
        allowed[key] = allowed.get(key, 0) + 1

    for kind, start, end in before:
        if start == end == hole:  # a MISSING node at the hole: either side of the insertion
            allow((kind, hole, hole))
            allow((kind, hole + inserted, hole + inserted))
            continue
        allow((kind, start + inserted if start >= hole else start, end + inserted if end > hole else end))
    out = []
    for span in after:
        if allowed.get(span, 0) > 0:
            allowed[span] -= 1
        else:
            out.append(span)
    return out


def error_spans(text: str, language: str | None) -> list[tuple[str, int, int]]:
    """(type, start byte, end byte) of the ERROR and MISSING nodes of ``text`` ([] if the language is unknown)."""
    parser = get_parser(language)
    return [] if parser is None else _error_spans(parsed(text, language).root_node)


def insertion_breaks_syntax(prefix: str, text: str, suffix: str, language: str | None,
                            before: list[tuple[str, int, int]] | None = None) -> bool:
    """True when ``text`` inserted between ``prefix`` and ``suffix`` adds an ERROR/MISSING node that
    ``prefix + suffix`` did not have (see `new_errors`; an insertion that lowers the number of errors
    is accepted), or opens a string, docstring or comment that does not end inside it. Unknown languages
    never break. ``before``: `error_spans(prefix + suffix)` when the caller has it."""
    parser = get_parser(language)
    if parser is None:
        return False
    if before is None:
        before = error_spans(prefix + suffix, language)
    root = parsed(prefix + text + suffix, language).root_node
    after = _error_spans(root)
    start = len(prefix.encode("utf-8"))
    inserted = len(text.encode("utf-8"))
    if len(after) >= len(before) and new_errors(before, after, start, inserted):
        return True
    return opens_unclosed_literal(root, start, start + inserted)


def insertion_lands_clean(prefix: str, text: str, suffix: str, language: str | None) -> bool:
    """No ERROR/MISSING node of ``prefix + text + suffix`` touches ``text``, and ``text`` opens no literal it
    does not close (a stricter test than `insertion_breaks_syntax`, for a hole whose own line is broken
    across it: the text must mend it). Unknown languages land clean."""
    parser = get_parser(language)
    if parser is None:
        return True
    root = parsed(prefix + text + suffix, language).root_node
    start = len(prefix.encode("utf-8"))
    end = start + len(text.encode("utf-8"))
    if any(s < end and e > start or start <= s == e <= end for _, s, e in _error_spans(root)):
        return False
    return not opens_unclosed_literal(root, start, end)


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


def spans_hole(spans: list[tuple[str, int, int]], hole: int) -> bool:
    """An error node of ``spans`` runs across the byte offset ``hole``: a text inserted there lands inside it,
    whatever it is."""
    return any(start < hole < end for _, start, end in spans)


def _lines_around(prefix: str, suffix: str, k: int) -> tuple[str, str]:
    above, below = prefix.split("\n"), suffix.split("\n")
    return ("\n".join(above[max(len(above) - 1 - k, 0):]),
            "\n".join(below[:k + 1]) + ("\n" if len(below) > k + 1 else ""))


def clean_region_around(prefix: str, suffix: str, language: str, sizes: tuple[int, ...] = (24, 8, 3, 1)):
    """The largest run of lines around the hole between ``prefix`` and ``suffix`` (``sizes`` lines each side)
    whose text has no error node across the hole, as ((its prefix, its suffix), its error spans); None if even
    one line each side has one."""
    for k in sizes:
        p, s = _lines_around(prefix, suffix, k)
        spans = error_spans(p + s, language)
        if not spans_hole(spans, len(p.encode("utf-8"))):
            return (p, s), spans
    return None


def _count_errors(root: Node) -> int:
    return len(_error_spans(root))
