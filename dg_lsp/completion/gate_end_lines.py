"""The lines around a text as the `end` rules read them (`completion/gate_end_blocks.py`): each line's code, whether a
line is inside a bracket that holds no block, and the rules that judge a text by the lines below it: a clause or an
`end` below needs its header, a line that heads nothing is over no deeper lines, and Bash's arms (a `;;` over the next
arm, a pattern over lines of its own, an arm's last line over the next arm is its `;;`). The lines are read by the
language's module (`end_blocks.reading`), passed as `blocks`."""

from __future__ import annotations

import re

from dg_lsp.completion.brackets import indent_width, open_spans

# Ruby's access modifiers: the methods below them may be indented one deeper (Rails' `indented_internal_methods`)
ACCESS = re.compile(r"(?:private|protected|public|module_function)$")


def code_lines(blocks, lines: list[str], rows: range, literal: set[int]):
    """(row, indentation, code) of each line of `rows` with code (no blank, comment-only or literal line), read by
    `blocks` (`end_blocks.reading`)."""
    for row in rows:
        if row in literal:
            continue
        code = blocks.code_of(lines[row])
        if code.strip():
            yield row, indent_width(code), code.strip()


def in_a_bracket(blocks, text: str, language: str) -> bool:
    """Whether the end of `text` is inside a bracket (a call's arguments, a table) and no block opened inside that
    bracket (`on_reload = function(_, buf)` in a table: the lines of the function's body are a block's); not where
    that bracket is a block's (`BLOCK_BRACKETS`: Bash's function body, `f() {`)."""
    spans = open_spans(text, language)
    if not spans or spans[-1][0] in blocks.BLOCK_BRACKETS:
        return False
    inside = text[spans[-1][1] + 1:].split("\n")
    return not any(blocks.opens_block(blocks.code_of(line).strip()) for line in inside)


def wants_more(blocks, code: str) -> bool:
    """Whether a line's code ends with a keyword that takes what the next line says (`WANTS_MORE`: Ruby's `x unless`,
    Lua's `return`); never in Bash (`local` alone is a command)."""
    return blocks.WANTS_MORE is not None and bool(blocks.WANTS_MORE.search(code))


def columns(line: str) -> int:
    """The columns a line's indentation spans, a tab as eight."""
    return indent_width(line.expandtabs(8))


def ends_arm(blocks, code: str) -> bool:
    """Whether a line's code ends with Bash's `;;` (`CLAUSE_BELOW`): an arm's end, where a block's end may stand."""
    return blocks.CLAUSE_BELOW is not None and bool(blocks.CLAUSE_BELOW.search(code))


def header_kind(blocks, lines: list[str], row: int, literal: set[int]) -> str | None:
    """The kind of the block the code line `row` heads (`block_kind`), where a header waits for a keyword (Bash's
    `?if`, its `then` not on its line) that a deeper line below it gives (a condition of several lines: `[[ b ]];
    then`, which the header takes as its clause): the block's own kind then (`if`)."""
    kind = blocks.block_kind(blocks.code_of(lines[row]).strip())
    if kind is None or not kind.startswith("?"):
        return kind
    width = indent_width(lines[row])
    for _, indent, code in code_lines(blocks, lines, range(row + 1, len(lines)), literal):
        if indent <= width:
            break
        given = blocks.block_kind(code)
        if given is not None and blocks.takes_clause(kind, given):
            return kind[1:]
    return kind


def waits_unanswered(blocks, lines: list[str], row: int, literal: set[int], below) -> bool:
    """Whether the code line `row` heads a block still waiting for its keyword (Bash's `?if`: `if [[ -z $d ]]` with no
    `then`; `header_kind`), which the next code line `below`, at its column or deeper, does not give: the `if` over
    the lines after its block, or over a body with no `then`."""
    kind = header_kind(blocks, lines, row, literal)
    if kind is None or not kind.startswith("?"):
        return False
    given = blocks.block_kind(below[2]) if below is not None else None
    return below is not None and not (given is not None and blocks.takes_clause(kind, given))


def headless_clause(blocks, lines: list[str], first: int, last: int, literal: set[int], below) -> bool:
    """Whether the first code line `below` the text's rows (`first` to `last`) is a clause (`else`, a `case` arm's
    pattern: `-h|--help)`) that the nearest code line above it indented no deeper than it, where that is a line of
    the text (or the text has no code: a comment where a header was), does not head: neither a header that takes
    the clause (`case "$1" in` over its arms, at its column or less) nor, at the clause's column, a clause before it
    (the arm above, or its `;;`; not an `end`, which closed the block). A line put where a `case` line (or an `if`
    line over an `else`) was leaves the clauses below with no block."""
    clause = blocks.CLAUSE.match(below[2]) if below is not None else None
    if clause is None:
        return False
    column = below[1]
    above = next((line for line in code_lines(blocks, lines, range(below[0] - 1, -1, -1), literal)
                  if line[1] <= column), None)
    if above is None:
        return False
    if above[0] < first and any(blocks.code_of(lines[row]).strip() for row in range(first, last + 1)):
        return False  # the clause's nearest line is above the text's code, which is its body's
    kind = header_kind(blocks, lines, above[0], literal)
    if kind is not None and blocks.takes_clause(kind, clause.group(1)):
        return False
    return not (above[1] == column and (blocks.CLAUSE.match(above[2]) or ends_arm(blocks, above[2])))


def headless_end(blocks, lines: list[str], first: int, last: int, literal: set[int], code: str) -> bool:
    """Whether the text's last line is a statement (no `end`, clause or header, nor a line that goes on from the one
    above) and the first code line below it indented less than it is an `end` whose block has no header: the nearest
    code line above it indented no deeper than it, above the text's rows, neither heads a block that `end` closes nor is
    a clause. A line of a block's body put where its header was, at the body's column (under a line that goes on from
    the one above it, so `_under_no_header` does not judge it), leaves the body and its `end` with no header. `code`:
    that line's code."""
    if blocks.END.match(code) or blocks.CLAUSE.match(code) or blocks.opens_block(code) \
            or blocks.GOES_ON_FROM_ABOVE.match(code):
        return False  # a block's end or clause, a header, a line that goes on: judged by the rules above
    width = indent_width(lines[last])
    end = next((line for line in code_lines(blocks, lines, range(last + 1, len(lines)), literal) if line[1] < width),
               None)
    match = blocks.END.match(end[2]) if end is not None else None
    if match is None:
        return False
    above = next((line for line in code_lines(blocks, lines, range(end[0] - 1, -1, -1), literal)
                  if line[1] <= end[1]), None)
    if above is None or above[0] >= first or blocks.CLAUSE.match(above[2]):
        return False
    kind = header_kind(blocks, lines, above[0], literal)
    return kind is None or not blocks.closes(kind, match.group())


def heads_nothing_over_deeper(blocks, lines: list[str], row: int, code: str, below, language: str) -> bool:
    """Whether the code line `row` (its code `code`) heads nothing (it opens no block and no clause, does not go on
    below: `foo(a,`, `cmd \\`, `x unless`, and is inside no bracket) while the next code line is indented deeper, by two
    columns or more (a tab as eight: a file's odd line one column off is no block), and is no block's end or clause, nor
    goes on from it (`.map`, Bash's `&& b`): a line put where a header was, or the first line of a string
    (`OPTS="--all`) whose later lines are left as code."""
    if not code or below is None or columns(lines[below[0]]) < columns(lines[row]) + 2 \
            or blocks.GOES_ON_FROM_ABOVE.match(below[2]) or blocks.END.match(below[2]) or blocks.CLAUSE.match(below[2]):
        return False
    if blocks.opens_block(code) or blocks.CLAUSE.match(code) or blocks.GOES_ON.search(code) or ACCESS.match(code) \
            or wants_more(blocks, code):
        return False
    return not in_a_bracket(blocks, "\n".join(lines[:row + 1]), language)


def no_clause_below(blocks, code: str, below) -> bool:
    """Whether a line's code `code` must be followed by a clause or a block's end (`CLAUSE_BELOW`: Bash's `;;`, the
    next arm's pattern or `esac`) and the next code line `below` is neither."""
    if not ends_arm(blocks, code):
        return False
    return below is not None and not (blocks.CLAUSE.match(below[2]) or blocks.END.match(below[2]))


def left_empty(blocks, lines: list[str], row: int, code: str, below) -> bool:
    """Whether the code line `row` (its code `code`) needs lines of its own (`needs_body`: Bash's arm pattern) and the
    next code line `below` is neither indented deeper nor an arm's end (`;;`): the next arm, an `esac` or the code
    after the `case` right under a pattern (`*)` where an `esac` was)."""
    if not blocks.needs_body(code):
        return False
    return below is not None and below[1] <= indent_width(lines[row]) and not ends_arm(blocks, below[2])


def body_left_open(blocks, lines: list[str], row: int, code: str, below) -> bool:
    """Whether the code line `row` (its code `code`) is indented deeper than the next code line `below`, a clause, and
    may not end the body above that clause (`before_clause`: before a Bash arm's pattern, the arm above must end with
    its `;;`)."""
    clause = blocks.CLAUSE.match(below[2]) if code and below is not None else None
    return clause is not None and indent_width(lines[row]) > below[1] \
        and not blocks.before_clause(clause.group(1), code)


def breaks_below(blocks, lines: list[str], first: int, last: int, literal: set[int], language: str) -> bool:
    """Whether a text on rows `first` to `last` of `lines`, its last line ending with the text, breaks a rule read on
    the lines below it (the next code line read once, for each rule)."""
    code = blocks.code_of(lines[last]).strip()
    below = next(code_lines(blocks, lines, range(last + 1, len(lines)), literal), None)
    return (headless_clause(blocks, lines, first, last, literal, below)  # where its header was, the clause below
            or heads_nothing_over_deeper(blocks, lines, last, code, below, language)  # deeper lines, no header
            or waits_unanswered(blocks, lines, last, literal, below)  # Bash's `if` with no `then` below it
            or headless_end(blocks, lines, first, last, literal, code)  # an `end` below with no header
            or no_clause_below(blocks, code, below)  # Bash's `;;` over a line of the arm's body
            or left_empty(blocks, lines, last, code, below)  # Bash's arm pattern with no body and no `;;` below
            or body_left_open(blocks, lines, last, code, below))  # an arm's body with no `;;` over the next arm
