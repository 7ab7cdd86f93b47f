"""Bash's blocks, read line by line: which lines open one (`if`, `for`/`while`/`until`/`select` ... `do`, `case`,
a `case` arm's pattern), continue one (`then`, `do`, `else`, `elif`, the next arm's pattern) or close one (`fi`,
`done`, `esac`, an arm's `;;`), as `context/end_blocks.py` reads each language whose blocks close with a keyword.

Bash's keywords are reserved only where a command starts (`echo done` prints a word), so a line's blocks are the
keywords at its commands' starts: the line's first word, and the first after `;`, `&&`, `||`, `|`, `&`, `(`, a
`then`, `do`, `else`, `!` or `{`, outside strings and comments (a `#` that starts a word). A function's `{ ... }`
is a bracket (`completion/brackets.py` reads Bash's), not a block here. A `case` arm's pattern (`-h|--help)`,
`*)`) is a clause at its own line's start: `case` takes it, and an arm its next one; the arm's `;;` closes it.
tree-sitter-bash pairs `fi`, `done` and `esac` with openers by count alone, as tree-sitter-ruby pairs `end`s: a text
that drops an `if` line re-pairs every `fi` below it. Bash code lines each line-leading `fi`, `done` and `esac` up
with the line that opened its block (shfmt writes it so), which `end_blocks.end_faults` reads.
"""

from __future__ import annotations

import re

from dg_lsp.context.keyword_blocks import read_conditional

# one word of a `case` pattern: unquoted characters that are no operator, escapes, quoted strings
_PATTERN_WORD = r"""(?:[^\s()|;&<>"'\\]|\\.|"(?:[^"\\]|\\.)*"|'[^']*')+"""
# a `case` arm's pattern, `(` optional, words joined by `|`, up to its `)`
_ARM = r"\(?\s*" + _PATTERN_WORD + r"(?:\s*\|\s*" + _PATTERN_WORD + r")*\s*\)"
# a line that continues the block above it at the header's column, and heads lines of its own (a `then` or `do`
# alone: the last line of a header of several lines; the next arm's pattern)
CLAUSE = re.compile(r"((?:else|elif|then|do)(?![\w-])|" + _ARM + ")")
# a line that closes the block above it (an arm's `;;` is `CLAUSE_BELOW`: it stands at the arm's column or its
# body's)
END = re.compile(r"(fi|done|esac)(?![\w-])")
# `end_blocks.closes_only`: the words that close a block
CLOSE_WORDS = re.compile(r"(?<![\w-])(?:fi|done|esac)(?![\w-])|;;&?|;&")
# a line whose statement goes on below it: a `\`, a pipe, a list's `&&` or `||`, an opener (a `x=` at its end is an
# empty value, not one on the next line)
GOES_ON = re.compile(r"(?:\\|\|\|?|&&|[(\[{])\s*$")
# a keyword at a line's end that takes what the next line says: none (`local` or `return` alone is a command)
WANTS_MORE = None
# a line that goes on with the statement above it: a pipe, a list's `&&` or `||`, a closer, a `then` or `do` (a line
# that starts with `-` is a command's next argument only where the line above ends with a `\`)
GOES_ON_FROM_ABOVE = re.compile(r"(?:&&|\|\||\||[)\]}]|then(?![\w-])|do(?![\w-]))")
# a line after which the next code line must be a clause or a block's end: an arm's `;;` (the next arm's pattern, or
# `esac`); at the arm's column, it stands where a block's end does
CLAUSE_BELOW = re.compile(r"(?:;;&?|;&)$")
_ARM_START = re.compile(r"\s*" + _ARM)
_TOKENS = re.compile(r";;&|;;|;&|&&|\|\||\|&|[;&|()]|[<>]+&?|[^\s;&|()<>]+")
_ASSIGNMENT = re.compile(r"[A-Za-z_]\w*(?:\[[^\]]*\])?\+?=")
# tree-sitter-bash's nodes whose later lines are text, not code: strings, here-documents (from the line after
# their `<<` to their delimiter's line), comments
LITERAL_QUERY = ("(string) @string (raw_string) @string (ansi_c_string) @string (translated_string) @string "
                 "(heredoc_redirect) @string (comment) @comment")
# the keywords that close a block, a command named as a keyword (tree-sitter-bash's recovery from a `fi` no `if` is
# open for reads it as a command's name), and a subshell inside a command: a call written as another language's
# (`print("hi")`, `read_file(name)`), which Bash refuses ("syntax error near unexpected token") and tree-sitter-bash
# reads as a command followed by a subshell
END_QUERY = ('"fi" @end "done" @end "esac" @end '
             '((command_name) @stray (#match? @stray "^(then|else|elif|fi|do|done|esac)$")) '
             '(command (subshell) @stray)')
CALL_BLOCKS = ()  # no block is a call's argument
# blocks whose closer may line up with the statement they are the body of: a loop's `done` under its `while` after
# a `|` (`| while read -r line; do`), not under the line's start
BODY_BLOCKS = ("do_group",)
# the brackets that hold a block's lines, not a call's arguments or a table's fields: a function's body, a `{ }` group
BLOCK_BRACKETS = "{"


def is_long_comment(text: bytes) -> bool:
    """Whether a comment node's text is a comment of several lines: never (Bash's comments end their line)."""
    return False


def stray(node) -> bool:
    """Whether a command named as a keyword (`END_QUERY`'s `stray`) is an error: always (Bash would read the
    keyword)."""
    return True


def _code_and_words(line: str) -> tuple[str, str]:
    """The line with its comment dropped (a `#` that starts a word, outside the line's strings) and trailing blanks
    too, and the same with the strings' contents and escaped characters replaced by `_` (a string left open runs
    to the line's end)."""
    quote = None
    words = []
    at = 0
    while at < len(line):
        char = line[at]
        if quote is not None:
            if char == "\\" and quote != "'":
                words.append("__")
                at += 2
                continue
            if char == quote:
                quote = None
            words.append(char if quote is None else "_")
        elif char == "\\":
            words.append("__")
            at += 2
            continue
        elif char in "'\"`":
            quote = char
            words.append(char)
        elif char == "#" and (at == 0 or line[at - 1] in " \t;&|()<>"):
            return line[:at].rstrip(), "".join(words).rstrip()
        else:
            words.append(char)
        at += 1
    return line.rstrip(), "".join(words)[:len(line)].rstrip()


def code_of(line: str) -> str:
    """A line's code: its comment (a `#` that starts a word, outside the line's strings) dropped, trailing blanks too
    (a string another line opened is not followed)."""
    return _code_and_words(line)[0]


def _open_kinds(code: str) -> list[str]:
    """The blocks (and clauses) a line's code opens and leaves open on it, outermost first: `if [ -f x ]; then` an
    `if`, `elif x; then` an `elif`, `then` alone (a condition's last line) a `then`, `-h|--help)` an `arm`, `-h)
    usage ;;` nothing. A header whose `then` (`do`) it does not hold is `?if` (`?elif`, `?do`): waiting for it at its
    column on the next line (`while read -r line` over `do`), unless the line goes on below (`if [ a ] &&`: the
    `then` comes with the condition's rest)."""
    stack: list[str] = []
    words = _code_and_words(code)[1]
    at = 0
    arm = _ARM_START.match(words)
    if arm is not None:
        stack.append("arm")
        at = arm.end()
    command = True  # at a command's start: a keyword is read
    redirect = False
    for token in _TOKENS.findall(words, at):
        top = stack[-1] if stack else None
        if token[0] in "<>":
            redirect = True
            continue
        if redirect:  # a redirection's file
            redirect = False
            continue
        if token in (";;", ";&", ";;&"):
            if top == "arm":
                stack.pop()
            command = True
            continue
        if token in (";", "&", "&&", "||", "|", "|&", "(", ")"):
            command = True
            continue
        if not command:
            continue
        command = token in ("then", "do", "else", "elif", "if", "while", "until", "!", "{", "time")
        if read_conditional(stack, token, "elif", ("for", "while", "until", "select")):
            continue
        if token == "case":
            stack.append("case")
        elif token in ("fi", "done", "esac"):
            if token == "esac" and top == "arm":
                stack.pop()
            if stack:
                stack.pop()
        elif _ASSIGNMENT.match(token):
            command = True  # `LC_ALL=C sort`: the command comes after its assignments
    if GOES_ON.search(words) or code.rstrip().endswith("\\"):  # `if [ -n "$a" ] &&`, `for x in \`: the `then` (`do`)
        # comes on a line that goes on from this one
        return [kind.lstrip("?") for kind in stack]
    return stack


def opens_block(code: str) -> bool:
    """Whether a line's code (`code_of`) opens a block (or a clause of one) that a `fi`, `done`, `esac` or `;;`
    closes on a later line."""
    return bool(_open_kinds(code))


def leaves_block_open(code: str) -> bool:
    """Whether a clause's line (`else`, `elif x; then`) leaves its block open for lines of its own, to be closed (or
    continued) at its column (`elif x; then y; fi` closes it). Not an arm's pattern: its `;;` stands in its body, and
    the last arm's `esac` at the `case` line's column, left of the arm's."""
    kinds = _open_kinds(code)
    return bool(kinds) and kinds[-1] != "arm"


def block_kind(code: str) -> str | None:
    """The kind of the block or clause a line's code (`code_of`) heads (`if`, `elif`, `else`, `then`, `do`, `case`,
    `arm`; `?if`, `?elif`, `?do` for a header still waiting for its `then` or `do`: `_open_kinds`); None for a line
    that heads none."""
    kinds = _open_kinds(code.strip())
    return kinds[-1] if kinds else None


def takes_clause(kind: str, clause: str) -> bool:
    """Whether a block headed by `kind` (`block_kind`) goes on with `clause` (`CLAUSE`'s group) at its header's
    column: an `if`'s (and an `elif`'s, a `then`'s) take `elif` and `else`, an `if`'s and `elif`'s a `then` (a
    condition of several lines), a loop's its `do`, a `case` and an arm an arm's pattern; no other block takes
    one. A header still waiting for its `then` (`do`) takes that alone (`if x == y` over an `else`: no `then`)."""
    if kind.startswith("?"):
        return clause == ("do" if kind == "?do" else "then")
    if clause == "then":
        return kind in ("if", "elif")
    if clause == "do":
        return kind == "do"
    if clause in ("else", "elif"):
        return kind in ("if", "elif", "then")
    return kind in ("case", "arm")


def closes(kind: str, end: str) -> bool:
    """Whether a line that starts with `end` (`END`'s match: `fi`, `done`, `esac`) closes a block headed by `kind`
    (`block_kind`): `fi` an `if` (its `then`, `elif`, `else`), `done` a loop's `do`, `esac` a `case` (or its last
    arm). A header still waiting for its `then` or `do` (`?if`) is closed by none."""
    if kind.startswith("?"):
        return False
    word = end.strip()
    if word == "fi":
        return kind in ("if", "elif", "else", "then")
    if word == "done":
        return kind == "do"
    return kind in ("case", "arm")


def before_clause(clause: str, code: str) -> bool:
    """Whether `code`, the last line of a body indented deeper than the clause `clause` (`CLAUSE`'s group) below it,
    may end that body: before an arm's pattern, only a line that ends the arm above (`;;`); before a keyword,
    any."""
    return not clause.endswith(")") or bool(CLAUSE_BELOW.search(code))


def needs_body(code: str) -> bool:
    """Whether a line must be followed by lines of its own (deeper) or its `;;`: an arm's pattern that its line does
    not end (`-h|--help)`, `-v) verbose=1`): a `case` may not go on, or end, right under it."""
    return block_kind(code) == "arm"


def heads_block_below(code: str) -> bool:
    """Whether a line below a statement's start that goes on (`foo &&`) can be the block the body is in: a line that
    opens one (`while read -r line; do`)."""
    return opens_block(code)
