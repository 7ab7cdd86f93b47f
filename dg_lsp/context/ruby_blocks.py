"""Ruby's `end`s: what tree-sitter-ruby's parse of a broken block leaves unsaid.

tree-sitter-ruby reads an `end` that closes nothing as a plain identifier (`class A ... end` then a stray `end`
parses with no ERROR node; `ruby -c` refuses the file: "unexpected `end'"), and pairs `end`s with openers by count
alone, so a text that drops a `def` line, or adds one, re-pairs every `end` below it without an error until the
file's last line. Ruby code lines each line-leading `end` up with the line that opened its block (RuboCop's
`Layout/EndAlignment`, `Layout/BlockAlignment`, `Layout/DefEndAlignment`), so an `end` standing at no column its
opener gives is a block closed by the wrong `end`.

`end_faults` lists both, as the syntax checks' error spans (`syntax._error_spans`): a text that adds one adds an
error, and a document that has one does not parse clean.
"""

from __future__ import annotations

import functools
import re

from tree_sitter import Node, Query, QueryCursor

from dg_lsp.context.languages import get_language

# a line that opens a block closed by `end` (a one-line block, which ends with its `end`, and an endless `def`
# excepted): a header keyword at its start, a `do` (with its block's parameters) at its end, or a value that is a
# block (`x = if y`, `@z ||= begin`)
_MODIFIERS = r"(?:(?:private|public|protected|module_function|private_class_method)\s+)?"
_HEADER = re.compile(_MODIFIERS + r"(def|class|module|if|unless|while|until|case|begin|for)\b(?![?!:])")
# `def name(args) = value` (not a setter's `def name=(value)`)
_ENDLESS_DEF = re.compile(_MODIFIERS + r"def\s+[\w.?!]+\s*(?:\(.*\))?\s*=(?=\s)")
DO = re.compile(r"\bdo\s*(?:\|[^|]*\|)?\s*$")
_BLOCK_VALUE = re.compile(r"(?:[-+*/|&]?=|<<|\(|,|\breturn)\s*(if|unless|case|begin|while|until)\b(?![?!:])")
_ONE_LINE_END = re.compile(r"(?<![.\w:])end\s*$")  # not `range.end`
# a clause: it continues the block above it at the header's column, and heads lines of its own
CLAUSE = re.compile(r"(else|elsif|when|in|rescue|ensure)\b(?![?!:])")
END = re.compile(r"end\b(?![?!:])")
_END_WORDS = re.compile(r"\bend\b")
_QUOTES = "'\"`"


def code_of(line: str) -> str:
    """A line's code: its comment (a `#` outside the line's quotes, not `#{`) dropped, trailing blanks too (roughly:
    a quote another line opened, a `%q(...)` or a regex are not followed)."""
    quote = None
    for at, char in enumerate(line):
        if quote is not None:
            if char == quote and line[at - 1:at] != "\\":
                quote = None
        elif char in _QUOTES and line[at - 1:at] != "?":  # `?'` is a character literal
            quote = char
        elif char == "#" and line[at + 1:at + 2] != "{":
            return line[:at].rstrip()
    return line.rstrip()


def closes_only(text: str) -> bool:
    """Whether `text` holds nothing but `end`s, closing brackets and blanks (`    end` over `  end` closes a deeper
    block: post-processing trims no such text as a repeat of the lines below)."""
    return not _END_WORDS.sub("", text).strip(" \t\n)]}")


def opens_block(code: str) -> bool:
    """Whether a line's code (`code_of`) opens a block its `end` closes on a later line."""
    code = code.strip()
    if not code or _ONE_LINE_END.search(code):
        return False
    if _HEADER.match(code):
        return not _ENDLESS_DEF.match(code)
    return bool(DO.search(code) or _BLOCK_VALUE.search(code))


def block_kind(code: str) -> str | None:
    """The keyword of the block or clause a line's code (`code_of`) heads (`def`, `if`, `else`, `do` ...); None for
    a line that heads none."""
    code = code.strip()
    clause = CLAUSE.match(code)
    if clause:
        return clause.group(1)
    if not opens_block(code):
        return None
    header = _HEADER.match(code) or _BLOCK_VALUE.search(code)
    return header.group(1) if header else "do"


# the clauses a block of each kind takes at its header's column (a clause heads the lines below it as its block does)
_TAKES = {"if": {"elsif", "else"}, "elsif": {"elsif", "else"}, "unless": {"else"}, "case": {"when", "in", "else"},
          "when": {"when", "else"}, "in": {"in", "else"}, "begin": {"rescue", "ensure"},
          "def": {"rescue", "ensure"}, "do": {"rescue", "ensure"}, "class": {"rescue", "ensure"},
          "module": {"rescue", "ensure"}, "rescue": {"rescue", "else", "ensure"}, "else": {"ensure"},
          "ensure": set(), "while": set(), "until": set(), "for": set()}


def takes_clause(kind: str, clause: str) -> bool:
    """Whether a block headed by `kind` (`block_kind`) goes on with `clause` at its header's column (`else` after a
    `def`'s body, with no `rescue` before it, is a syntax error; so is `rescue` after an `if`'s)."""
    return clause in _TAKES.get(kind, {"elsif", "else", "when", "in", "rescue", "ensure"})


# blocks whose `end` may line up with the line of the call (or loop) they belong to: `foo(a,\n    b) do |x|`
_CALL_BLOCKS = ("do_block", "do")


@functools.cache
def _query() -> Query:
    return Query(get_language("ruby"), '"end" @end ((identifier) @stray (#eq? @stray "end"))')


def _indentation(data: bytes, node: Node) -> int:
    """The indentation (bytes of blanks) of the line `node` starts on (tree-sitter's columns count bytes)."""
    start = node.start_byte - node.start_point.column
    line = data[start: node.start_byte]
    return len(line) - len(line.lstrip(b" \t"))


def _named(node: Node) -> bool:
    """Whether an identifier `end` is a method's name where Ruby takes one (`range.end`, `def end`)."""
    parent = node.parent
    field = {"call": "method", "method": "name", "singleton_method": "name"}.get(parent.type if parent else "")
    named = parent.child_by_field_name(field) if field else None
    return named is not None and named.start_byte == node.start_byte


def end_faults(root: Node, data: bytes) -> list[tuple[str, int, int]]:
    """("END", start byte, end byte) of each `end` of `root` (a tree-sitter-ruby parse of `data`) read as an
    identifier, and of each `end` that starts its line at a column that is neither its opener's line's indentation
    nor its opener's own column (nor, for a `do` block, the indentation of its call's first line). An `end` on its
    opener's line, or after code on its own line, is not judged."""
    captures = QueryCursor(_query()).captures(root)
    if not captures:
        return []
    faults = [("END", node.start_byte, node.end_byte) for node in captures.get("stray", []) if not _named(node)]
    for node in captures.get("end", []):
        opener = node.parent
        row, column = node.start_point
        if opener is None or node.is_missing or opener.start_point.row >= row:
            continue
        if _indentation(data, node) != column:
            continue  # code before it on its line
        allowed = {_indentation(data, opener), opener.start_point.column}
        if opener.type in _CALL_BLOCKS and opener.parent is not None:
            allowed.add(_indentation(data, opener.parent))
        if column not in allowed:
            faults.append(("END", node.start_byte, node.end_byte))
    faults.sort(key=lambda span: span[1])
    return faults
