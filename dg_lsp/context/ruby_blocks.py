"""Ruby's blocks, read line by line, and its `end`s: what tree-sitter-ruby's parse of a broken block leaves unsaid
(`context/end_blocks.py` reads each language whose blocks close with a keyword with such a module).

tree-sitter-ruby reads an `end` that closes nothing as a plain identifier (`class A ... end` then a stray `end`
parses with no ERROR node; `ruby -c` refuses the file: "unexpected `end'"), and pairs `end`s with openers by count
alone, so a text that drops a `def` line, or adds one, re-pairs every `end` below it without an error until the
file's last line. Ruby code lines each line-leading `end` up with the line that opened its block (RuboCop's
`Layout/EndAlignment`, `Layout/BlockAlignment`, `Layout/DefEndAlignment`), so an `end` standing at no column its
opener gives is a block closed by the wrong `end`.

`end_blocks.end_faults` lists both, as the syntax checks' error spans (`syntax._error_spans`): a text that adds one
adds an error, and a document that has one does not parse clean.
"""

from __future__ import annotations

import re

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
# `end_blocks.closes_only`: the word that closes a block
CLOSE_WORDS = re.compile(r"\bend\b")
# a line whose statement goes on below it: an opener, a comma, a `\`, a `.`, an operator
GOES_ON = re.compile(r"(?:[(\[{,\\.|&+\-*/%<>=!?:~^]|\band|\bor|\bnot)\s*$")
# a keyword at a line's end that takes what the next line says (Ruby's `x unless`, Lua's `return`, `local`)
WANTS_MORE = re.compile(r"\b(?:if|unless|while|until|elseif|in|return|local)$")
# a line that goes on with the statement above it: a method chain's `.x`, an operator, a closer, a comma
GOES_ON_FROM_ABOVE = re.compile(r"(?:[.&|+\-*/%<>=~^,)\]}:?]|and\b|or\b|then\b|do\b)")
# a line after which the next code line must be a clause or a block's end: none
CLAUSE_BELOW = None
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


def opens_block(code: str) -> bool:
    """Whether a line's code (`code_of`) opens a block its `end` closes on a later line."""
    code = code.strip()
    if not code or _ONE_LINE_END.search(code):
        return False
    if _HEADER.match(code):
        return not _ENDLESS_DEF.match(code)
    return bool(DO.search(code) or _BLOCK_VALUE.search(code))


def leaves_block_open(code: str) -> bool:
    """Whether a clause's line (`else`, `rescue => e`) leaves its block open for lines of its own (`else nil end`
    closes it)."""
    return not _ONE_LINE_END.search(code)


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
CALL_BLOCKS = ("do_block", "do")
BODY_BLOCKS = ()  # blocks whose `end` may line up with the statement they are the body of: none
BLOCK_BRACKETS = ""  # the brackets that hold a block's lines, read as a block's: none (`{` is a hash's too)
# tree-sitter-ruby's `end`s, and the identifiers it reads a stray `end` as
END_QUERY = '"end" @end ((identifier) @stray (#eq? @stray "end"))'
# tree-sitter-ruby's nodes whose later lines are text, not code: a heredoc's body, a string's, a comment's (an
# `=begin` one's), the data after `__END__`
LITERAL_QUERY = "(heredoc_body) @body (string) @string (comment) @comment (uninterpreted) @data"


def is_long_comment(text: bytes) -> bool:
    """Whether a comment node's text is an `=begin` comment, whose later lines are the comment's (a `#` comment is
    one line, which `code_of` drops)."""
    return text.startswith(b"=begin")


def stray(node) -> bool:
    """Whether an identifier `end` (`END_QUERY`'s `stray`) is a stray `end`, not a method's name where Ruby takes
    one (`range.end`, `def end`)."""
    parent = node.parent
    field = {"call": "method", "method": "name", "singleton_method": "name"}.get(parent.type if parent else "")
    named = parent.child_by_field_name(field) if field else None
    return named is None or named.start_byte != node.start_byte


def closes(kind: str, end: str) -> bool:
    """Whether a line that starts with `end` (`END`'s match) closes a block headed by `kind`: always (an `end`
    closes any block)."""
    return True


def before_clause(clause: str, code: str) -> bool:
    """Whether `code`, the last line of a body indented deeper than the clause `clause` below it, may end that body:
    always."""
    return True


def needs_body(code: str) -> bool:
    """Whether a line must be followed by lines of its own (deeper): never (a block may be empty: `def x` over its
    `end`)."""
    return False


def heads_block_below(code: str) -> bool:
    """Whether a line below a statement's start that goes on (`foo(a,`) can be the block the body is in: a line
    that ends with a `do` (`  b) do |x|`)."""
    return bool(DO.search(code))
