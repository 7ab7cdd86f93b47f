"""Syntax checks on candidate completions: tree-sitter ERROR and MISSING nodes, literals left open, a whole
document's parse. Python's own compiler's checks are `python_syntax`.

Used by the syntax gate of post-processing (completion/postprocess.py), to tie-break candidates of
different lengths, and by the benchmark's syntax-valid rate. Unknown languages count as error-free.
"""

from __future__ import annotations

import functools
import re

from tree_sitter import Node

from dg_lsp.context.languages import get_parser
from dg_lsp.context.end_blocks import end_faults, reading


# PHP: a method's or class constant's modifiers at a line's start: a window or scope cut below its class's `{` reads
# a method as an error where PHP's grammar has no class around it (Java's and C#'s grammars take a method alone).
# Without them a method is still one inside a class, and a function outside; a property is left as it is (`$x;`
# is no member of a class)
_PHP_MEMBER = re.compile(r"^([ \t]*)((?:(?:public|protected|private|static|abstract|final)[ \t]+)+)"
                         r"(?=function\b|const\b)", re.MULTILINE | re.ASCII)


def readable(text: str, language: str) -> str:
    """`text` as the gate's windows are parsed: in PHP, methods' and class constants' modifiers blanked
    (`_PHP_MEMBER`), so that a method read without its class parses as a function; the same length, so every offset
    stands. Any other language: `text`."""
    if language != "php":
        return text
    return _PHP_MEMBER.sub(lambda m: m.group(1) + " " * len(m.group(2)), text)


@functools.lru_cache(maxsize=16)
def parsed(text: str, language: str):
    """`text` parsed as `language` (one it has a grammar for), as a window reads (`readable`). Cached: the syntax
    gate parses the same window, with a suggestion and without, in several of its checks."""
    return get_parser(language).parse(readable(text, language).encode("utf-8"))


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
        if _clean(document_tree(applied, language).root_node, language, applied):
            return False
        data = document.encode("utf-8")
        return _clean(document_tree(data, language).root_node, language, data)
    except UnicodeEncodeError:  # a lone surrogate: nothing known
        return False


# node types that hold a literal's or a comment's text (tree-sitter's names across the grammars)
_LITERAL_ENDINGS = ("string", "string_literal", "comment", "text_block", "heredoc", "nowdoc", "template_string")


def literal_end_after(document: str, at: int, language: str | None, before: int | None = None) -> int | None:
    """Where the string, template or comment that character offset `at` of `document` lies inside ends (a character
    offset), read on the whole document's parse; with `before`, where the largest construct around that literal that
    ends at or before offset `before` ends (the call, the statement or the function it is in). None where `at` is in
    no literal, or the language has no grammar. A window that starts inside a long raw string (Go's `` ` ``, a
    JavaScript template, a C# verbatim string) reads the rest of itself inside out: the literal's end as an
    opening."""
    if get_parser(language) is None:
        return None
    try:
        data = document.encode("utf-8")
    except UnicodeEncodeError:
        return None
    byte = len(document[:at].encode("utf-8"))
    node = document_tree(data, language).root_node.descendant_for_byte_range(byte, byte)
    while node is not None and not (node.type.endswith(_LITERAL_ENDINGS) and node.type != "system_lib_string"
                                    and node.start_byte < byte < node.end_byte):
        node = node.parent
    if node is None:
        return None
    if before is not None:
        limit = len(document[:before].encode("utf-8"))
        while node.parent is not None and node.parent.parent is not None and node.parent.end_byte <= limit:
            node = node.parent
    return len(data[:node.end_byte].decode("utf-8", "replace"))


def parses_clean_with(document: str, at: int, to: int, text: str, language: str | None) -> bool:
    """Whether `document` with `text` over [`at`, `to`) (character offsets), read whole, has no ERROR or MISSING node.
    False for a language without a grammar, or a text with no UTF-8 form."""
    if get_parser(language) is None:
        return False
    try:
        applied = (document[:at] + text + document[to:]).encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: nothing known
        return False
    return _clean(document_tree(applied, language).root_node, language, applied)


def syntax_error_count(text: str, language: str | None) -> int:
    """Number of ERROR and MISSING nodes in ``text`` parsed as ``language`` (0 if unknown)."""
    parser = get_parser(language)
    if parser is None:
        return 0
    return len(_error_spans(parsed(text, language).root_node, language, text))


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


def _clean(root: Node, language: str, data: bytes) -> bool:
    """No ERROR or MISSING node in `root` (a parse of `data`), nor, in Ruby, Lua and Bash, an `end` that closes the
    wrong block (`end_blocks.end_faults`)."""
    return not root.has_error and not (reading(language) is not None and end_faults(root, data, language))


def _error_spans(root: Node, language: str | None = None, text: str | bytes = b"") -> list[tuple[str, int, int]]:
    """(type, start byte, end byte) of every ERROR and MISSING node. A hidden MISSING node (python's
    `_newline` between two statements on one line) is not among any node's children: a node flagged
    `has_error` with no flagged child stands for it, with the node's own span. In Ruby, Lua and Bash, with the parse's
    `text`, also each `end` that closes the wrong block (`end_blocks.end_faults`: tree-sitter-ruby reads a stray
    one as a name)."""
    spans = []
    if reading(language) is not None:
        spans = end_faults(root, text.encode("utf-8") if isinstance(text, str) else text, language)
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
    return [] if parser is None else _error_spans(parsed(text, language).root_node, language, text)


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
    after = _error_spans(root, language, prefix + text + suffix)
    data = prefix.encode("utf-8")
    start = len(data)
    inserted = len(text.encode("utf-8"))
    # a MISSING node with nothing but blanks between it and the hole is at the hole: the token it stands for (the
    # `end` of a block the document has not closed) is missing after whatever goes there
    before = [(kind, start, start) if s == e < start and not data[s:start].strip() else (kind, s, e)
              for kind, s, e in before]
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
    if any(s < end and e > start or start <= s == e <= end for _, s, e in _error_spans(root, language, prefix + text + suffix)):
        return False
    return not opens_unclosed_literal(root, start, end)


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

