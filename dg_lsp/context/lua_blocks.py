"""Lua's blocks, read line by line: which lines open one, continue one (`else`, `elseif`) or close one (`end`,
`until`), as `context/end_blocks.py` reads each language whose blocks close with a keyword.

Lua's keywords are reserved (an `end` is never a name), so a line's blocks are its keywords counted outside
strings and comments: `function`, `if`, `do` (a `for`'s and a `while`'s too) and `repeat` open one; `end` and
`until` close the innermost. tree-sitter-lua reads a stray `end` as an error, but pairs `end`s with openers by count
alone, as tree-sitter-ruby does: a text that drops a `function` line re-pairs every `end` below it until the
file's last line. Its recovery from some broken lines reads a keyword as a name (`end_blocks.end_faults` counts
those). Lua code lines each line-leading `end` up with the line that opened its block (StyLua and
LuaFormatter write it so), which `end_blocks.end_faults` reads.
"""

from __future__ import annotations

import re

from dg_lsp.context.keyword_blocks import read_conditional
# a line whose statement goes on below it, and one that goes on from the line above: Ruby's operators are Lua's
# (`and`, `or`, `not`, `..`, a closer, a comma), its keywords that take the next line too (`return`, `local`); and
# as in Ruby, an `end` closes any block, any line may end a body above a clause, and a block may be empty
from dg_lsp.context.ruby_blocks import (  # noqa: F401
    GOES_ON, GOES_ON_FROM_ABOVE, WANTS_MORE, before_clause, closes, needs_body)

# a line that continues the block above it at the header's column, and heads lines of its own (a `then` or `do`
# alone: the last line of a header of several lines)
CLAUSE = re.compile(r"(else|elseif|then|do)\b")
# a line that closes the block above it (a `repeat`'s `until` with its condition)
END = re.compile(r"(end|until)\b")
# `end_blocks.closes_only`: the word that closes a block
CLOSE_WORDS = re.compile(r"\bend\b")
# a line after which the next code line must be a clause or a block's end: none
CLAUSE_BELOW = None
_WORDS = re.compile(r"[A-Za-z_]\w*")
_CLOSES = ("end", "until")
_LONG_OPEN = re.compile(r"\[(=*)\[")
_LONG_COMMENT = re.compile(rb"--\[=*\[")
# tree-sitter-lua's nodes whose later lines are text, not code: strings, and comments (a long one's, `--[[`)
LITERAL_QUERY = "(string) @string (comment) @comment"
# Lua's reserved words: none is a name
_KEYWORDS = ("and", "break", "do", "else", "elseif", "end", "false", "for", "function", "goto", "if", "in", "local",
             "nil", "not", "or", "repeat", "return", "then", "true", "until", "while")
# tree-sitter-lua's `end`s, and the identifiers it reads a keyword as: its recovery from `env = env,` over an `else`
# takes the `else` for the list's next name, and the `if`'s `end` with it, with no ERROR node
END_QUERY = '"end" @end ((identifier) @stray (#match? @stray "^(' + "|".join(_KEYWORDS) + ')$"))'
# blocks whose `end` may line up with the line of the call they are an argument of
CALL_BLOCKS = ("function_definition",)
BODY_BLOCKS = ()  # blocks whose `end` may line up with the statement they are the body of: none
BLOCK_BRACKETS = ""  # the brackets that hold a block's lines: none (a `{` holds a table)


def is_long_comment(text: bytes) -> bool:
    """Whether a comment node's text is a long comment, whose later lines are the comment's (`--[[ ... ]]`)."""
    return _LONG_COMMENT.match(text) is not None


def stray(node) -> bool:
    """Whether an identifier that is a keyword (`END_QUERY`'s `stray`) is an error: always (Lua's keywords are
    reserved)."""
    return True


def _code_and_words(line: str) -> tuple[str, str]:
    """The line with its comment dropped (a `--` outside its strings) and trailing blanks too, and the same with the
    strings' contents blanked out (a long string's `[[` left open runs to the line's end)."""
    quote = None
    words = []
    at = 0
    while at < len(line):
        char = line[at]
        if quote is not None:
            if char == "\\":
                words.append("  ")
                at += 2
                continue
            if char == quote:
                quote = None
            words.append(char if quote is None else " ")
        elif char in "'\"":
            quote = char
            words.append(char)
        elif line.startswith("--", at):
            return line[:at].rstrip(), "".join(words).rstrip()
        elif char == "[" and _LONG_OPEN.match(line, at):
            level = _LONG_OPEN.match(line, at).group(1)
            close = line.find("]" + level + "]", at)
            if close < 0:
                return line.rstrip(), "".join(words).rstrip()
            words.append(" " * (close + len(level) + 2 - at))
            at = close + len(level) + 2
            continue
        else:
            words.append(char)
        at += 1
    return line.rstrip(), "".join(words).rstrip()


def code_of(line: str) -> str:
    """A line's code: its comment (a `--` outside the line's strings) dropped, trailing blanks too (a string or long
    comment another line opened is not followed)."""
    return _code_and_words(line)[0]


def _open_kinds(code: str) -> list[str]:
    """The blocks (and clauses) a line's code opens and leaves open on it, outermost first: `end, function(err)`
    leaves a `function`, `elseif x then` an `elseif`, `then` alone (a condition's last line) a `then`, `for k, v in
    pairs(t)` (its `do` on a later line) a `do`."""
    stack: list[str] = []
    for word in _WORDS.findall(_code_and_words(code)[1]):
        if read_conditional(stack, word, "elseif", ("for", "while")):
            continue
        if word in ("function", "repeat"):
            stack.append(word)
        elif word in _CLOSES and stack:
            stack.pop()
    return [kind.lstrip("?") for kind in stack]


def opens_block(code: str) -> bool:
    """Whether a line's code (`code_of`) opens a block (or a clause of one) its `end` (or `until`) closes on a later
    line."""
    return bool(_open_kinds(code))


def leaves_block_open(code: str) -> bool:
    """Whether a clause's line (`else`, `elseif x then`) leaves its block open for lines of its own (`elseif x then y
    end` closes it)."""
    return opens_block(code)


def block_kind(code: str) -> str | None:
    """The keyword of the block or clause a line's code (`code_of`) heads (`function`, `if`, `do`, `repeat`, `else`,
    `elseif`, `then`); None for a line that heads none."""
    kinds = _open_kinds(code.strip())
    return kinds[-1] if kinds else None


def takes_clause(kind: str, clause: str) -> bool:
    """Whether a block headed by `kind` (`block_kind`) goes on with `clause` at its header's column: an `if`'s (and
    an `elseif`'s, a `then`'s) take `elseif` and `else`, an `if`'s and `elseif`'s a `then` (a condition of several
    lines), a loop's its `do`; no other block takes one."""
    if clause == "then":
        return kind in ("if", "elseif")
    if clause == "do":
        return kind == "do"
    return kind in ("if", "elseif", "then")


def heads_block_below(code: str) -> bool:
    """Whether a line below a statement's start that goes on (`foo(a,`) can be the block the body is in: a line
    that opens one (`function(err)`)."""
    return opens_block(code)
