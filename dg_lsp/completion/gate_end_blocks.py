"""The syntax gate's rules for the languages whose blocks close with a keyword (Ruby's and Lua's `end`, Bash's `fi`,
`done`, `esac`: `context/end_blocks.py`): a block's header line and its `end` line, read by indentation.

A hole where a block's header (`def call(env)`, `items.each do |item|`, `local function walk(node)`) or its `end`
was leaves the file broken in a way no text that leaves it as broken makes worse: every `end` below re-pairs with
the opener above it, and the window's error count is the same with a wrong line as without any. Ruby and Lua code
lines an `end` up with its block's header (RuboCop's layout rules, StyLua's), so the lines around the hole say what
the hole's line must be (each language's own keywords: Ruby's clauses below, Lua's `else`, `elseif` and `until`):
- `must_close`: the first code line above the text's first line indented no deeper than it is a block's header
  (or an `else`, `when`, `rescue` ... clause) at exactly its indentation, with that block's body between: the text's
  line, back at the header's column, must end that block or continue it (`end`, `else`, `elsif`, `when`, `in`,
  `rescue`, `ensure`), where a wrong line puts a statement at the header's level inside the block;
- `must_open`: the code lines below the text's last line are indented deeper than it, down to an `end` (or a
  clause) at exactly its indentation: the text's line must head that block (a header, a clause, or a line its
  statement goes on from: `foo(a,`, over a `do` below), where a wrong line leaves the block's body and its `end`
  with no header; and a block that takes the clause below it (a `def` over an `else` is a syntax error, an `if`
  over a `rescue` too); a clause (`else`, `when` ...) must head lines indented deeper, or stand right over the `end`
  or clause its block goes on with: over lines of its own level it leaves that block without its `end`; and over a
  block whose `end` line closes a bracket too (`end)`, `end, keys)`: a callback's, a `do` block's in a call), the
  line must end inside a bracket (`table.sort(items, function(a, b)`, `end, function(err)` in a call);
- a body's line where its header was (`_under_no_header`): a text's first line indented deeper than the code line
  above it, where the `end` below it stands at a column between the two that no keyword of that line gives, or
  where that line heads nothing (no block, clause, statement going on, nor a bracket with no block opened in it),
  unless the text's line goes on from it (`.map`, `and b`) or heads something itself;
- a clause below the text (`else`, Bash's `-h|--help)`) needs its header (`headless_clause`): the nearest line
  above it no deeper than it, where that is the text's (or the text is a comment), must be a header that takes it
  or, at its column, a clause before it (the arm above, its `;;`);
- a text's last line that heads nothing is not over deeper lines (`heads_nothing_over_deeper`: two columns or
  more, a tab as eight) that do not go on from it: a statement where a header was, or where a string of several
  lines started (`OPTS="--all`), its later lines left as code;
- a statement is not over an `end` whose block has no header (`headless_end`): the nearest line above that `end`
  no deeper than it, above the text, must head a block it closes;
- a header's block must be one the `end` below closes (`closes`: an `if` over a `done` is not), and a Bash header
  still waiting for its `then` or `do` (`?if`: `if x == y then`) takes that keyword alone, from the next line at its
  column or a deeper line of its condition (`header_kind`), and stands over it (`waits_unanswered`);
- Bash's arms: a `;;` stands over the next arm's pattern or `esac` (`no_clause_below`), a pattern over lines of its
  own or its `;;` (`left_empty`), and the last line of an arm's body over the next arm's pattern is its `;;`
  (`body_left_open`);
- a text that ends its line with a bracket open (its own: `headers.merge!(@headers`) must be over a line that
  goes on with it (indented deeper, or a closing bracket). A missing `end` above leaves tree-sitter-ruby's whole
  window one ERROR node, in which the error count sees nothing, so none of these are left to it.
The rules that read the lines below a text (a clause's or an `end`'s header, deeper lines, Bash's arms) and the line
readings the rules share are in `completion/gate_end_lines.py`.
The window's rules are read again on the whole document after the gate (`postprocess.gate_suggestion`): a block's
body can run past the windows (a file's `module` and its `end`).

The `end`s of the whole window are read by the error count (`end_blocks.end_faults`): an `end` that closes nothing,
or one at a column its opener does not give. `with_its_end` reads the same lines for post-processing
(`postprocess.finish`): a block the document has not closed keeps the `end` the model wrote for it.
"""

from __future__ import annotations

import functools
import re

from tree_sitter import Query, QueryCursor

from dg_lsp.completion.brackets import PAIRS, first_unopened_closer, indent_width, open_brackets
from dg_lsp.completion.gate_end_lines import (ACCESS, breaks_below, code_lines, ends_arm, header_kind, in_a_bracket,
                                                wants_more)
from dg_lsp.context.end_blocks import reading
from dg_lsp.context.languages import get_language
from dg_lsp.context.syntax import parsed

# the keywords an `end` may line up with, in a line that opens a block after other code (Ruby's `x = if y`)
_BLOCK_KEYWORDS = re.compile(r"\b(?:if|unless|case|while|until|begin|for|def|do|function|repeat)\b")


@functools.cache
def _literal_query(language: str) -> Query:
    return Query(get_language(language), reading(language).LITERAL_QUERY)


def _literals(text: str, language: str) -> list[tuple[tuple[int, int], tuple[int, int], range]]:
    """Each literal of `text` whose later lines are text, not code (a string's, a long comment's: Ruby's heredoc
    bodies, `=begin` comments and the data after `__END__`, Lua's `--[[`, Bash's here-documents), as (its start
    point, its end point, the rows of its text)."""
    spans = []
    blocks = reading(language)
    for nodes in QueryCursor(_literal_query(language)).captures(parsed(text, language).root_node).values():
        for node in nodes:
            if node.type == "comment" and not blocks.is_long_comment(node.text):
                continue  # a line comment: `code_of` drops it, and a line of it is no line of code
            # from the row after the one it starts on, unless it starts that row (`=begin`, a heredoc's body)
            first = node.start_point.row + (0 if node.start_point.column == 0 else 1)
            spans.append((tuple(node.start_point), tuple(node.end_point), range(first, node.end_point.row + 1)))
    return spans


def _literal_rows(text: str, language: str, last: int, shift: int, without: set) -> set[int]:
    """The rows of `text` that are inside a literal (`_literals`): their indentation is text, not code's. `text` holds
    a text that ends on row `last` and adds `shift` lines; `without` holds the (start, end) points of the literals
    of the file without it. A literal that starts below row `last` counts only where it is one without that text too
    (`shift` rows higher): a text that breaks the blocks can make tree-sitter-bash pair the quotes below it the wrong
    way round, reading the lines between two strings as one string's."""
    rows: set[int] = set()
    for start, end, text_rows in _literals(text, language):
        if start[0] > last and ((start[0] - shift, start[1]), (end[0] - shift, end[1])) not in without:
            continue
        rows.update(text_rows)
    return rows


def block_judge(prefix: str, suffix: str, language: str):
    """The rules of the module's docstring, as a test of a text that goes between `prefix` and `suffix` in
    `language` (Ruby, Lua, Bash): True where it breaks one (never without the language's grammar: the gate passes every
    text of a language it has no grammar for)."""
    blocks = reading(language)
    if get_language(language) is None:
        return lambda text: False

    without = None

    def literal_rows(text: str, last: int) -> set[int]:
        nonlocal without
        if without is None:
            without = {(start, end) for start, end, _ in _literals(prefix + suffix, language)}
        return _literal_rows(prefix + text + suffix, language, last, text.count("\n"), without)

    def breaks(text: str) -> bool:
        whole = prefix + text + suffix
        lines = whole.split("\n")
        first = prefix.count("\n")
        last = first + text.rstrip().count("\n")
        literal = None
        head = lines[first]
        if not head[: len(prefix) - prefix.rfind("\n") - 1].strip() and text.strip():
            literal = literal_rows(text, last)
            if first not in literal and must_close(blocks, lines, first, literal):
                code = blocks.code_of(head).strip()
                if code and not (blocks.END.match(code) or blocks.CLAUSE.match(code) or ends_arm(blocks, code)):
                    return True
                if not code and not must_close(blocks, lines, last + 1, literal, width=indent_width(head)):
                    return True  # a comment where the block's `end` was
            if first not in literal and _under_no_header(blocks, lines, first, literal, language):
                return True  # a body's line where its header was: the body and its `end` are left with no header
        tail = lines[last]
        if text.strip() and not whole[len(prefix) + len(text.rstrip()):].split("\n", 1)[0].strip():
            literal = literal_rows(text, last) if literal is None else literal
            body = must_open(blocks, lines, last, literal)
            if last not in literal and body:
                code, clause = blocks.code_of(tail).strip(), blocks.CLAUSE.match(body[-1])
                end = blocks.END.match(body[-1])
                if not (blocks.opens_block(code) or blocks.CLAUSE.match(code)
                        or blocks.GOES_ON.search(code) and any(blocks.heads_block_below(line) and (
                            end is None or blocks.closes(blocks.block_kind(line), end.group())) for line in body[:-1])):
                    return True  # the block's body and `end` below are left with no header
                kind = header_kind(blocks, lines, last, literal)
                if kind is not None and clause is not None and not blocks.takes_clause(kind, clause.group(1)):
                    return True  # a header whose block does not go on with the clause below (`def` over `else`)
                if kind is not None and end is not None and not blocks.closes(kind, end.group()):
                    return True  # a header whose block the line below does not close (Bash's `if` over `done`)
                if blocks.END.match(body[-1]) and first_unopened_closer(body[-1], 0, language) is not None \
                        and not open_brackets("\n".join(lines[:last + 1]), language):
                    return True  # `end)` below closes a bracket that nothing is in at its header's line
            elif last not in literal and blocks.CLAUSE.match(code := blocks.code_of(tail).strip()) \
                    and blocks.leaves_block_open(code) \
                    and not must_close(blocks, lines, last + 1, literal, width=indent_width(tail)):
                return True  # a clause over lines of its level: the `end` it continues the block to is not there
            if last not in literal and breaks_below(blocks, lines, first, last, literal, language):
                return True  # a header missing above a clause or `end` below, deeper lines, Bash's arms
            if last not in literal and open_brackets(text, language) \
                    and not _goes_on_below(blocks, lines, last, literal):
                return True  # a bracket the text opens and nothing below closes
        return False
    return breaks


def _under_no_header(blocks, lines: list[str], row: int, literal: set[int], language: str) -> bool:
    """Whether the code line `row`, which does not go on from the code line above it (`.map`, `and b`) nor heads
    anything itself (a block, a bracket left open: `M.optable = {` one column in), is indented deeper than that line
    where the `end` (or clause) below it stands at a column between the two, which neither the line above nor a
    block keyword of it (`x = if y` over an `end` under its `if`) gives; or where the line above heads nothing: it
    opens no block and no clause, does not go on below (`foo(a,`, `x =`, `x unless`), and is inside no bracket. A
    body's line put where its block's header was leaves that body and the `end` below it with no header, at a column
    no header gives."""
    code = blocks.code_of(lines[row]).strip()
    above = next(code_lines(blocks, lines, range(row - 1, -1, -1), literal), None)
    width = indent_width(lines[row])
    if not code or above is None or width <= above[1] or blocks.GOES_ON_FROM_ABOVE.match(code):
        return False
    if blocks.opens_block(code) or open_brackets(code, language):
        return False
    below = next((line for line in code_lines(blocks, lines, range(row + 1, len(lines)), literal)
                  if line[1] < width), None)
    if below is not None and above[1] < below[1] and (blocks.END.match(below[2]) or blocks.CLAUSE.match(below[2])) \
            and below[1] not in _keyword_columns(lines[above[0]]):
        return True  # an `end` between the line above's column and this one's: its header is missing
    if blocks.opens_block(above[2]) or blocks.CLAUSE.match(above[2]) or blocks.GOES_ON.search(above[2]) \
            or ACCESS.match(above[2]) or wants_more(blocks, above[2]):
        return False
    return not in_a_bracket(blocks, "\n".join(lines[:above[0] + 1]), language)


def _keyword_columns(line: str) -> set[int]:
    """The columns of the block keywords of a line (`x = if y`: the `if`'s), where an `end` may line up."""
    return {m.start() for m in _BLOCK_KEYWORDS.finditer(line)}


def _goes_on_below(blocks, lines: list[str], row: int, literal: set[int]) -> bool:
    """Whether the next line after `row` goes on with its statement: a literal's (`%q{` over the string's lines), or
    code indented deeper than `row`, or code that starts with a closing bracket."""
    below = next((r for r in range(row + 1, len(lines)) if r in literal or blocks.code_of(lines[r]).strip()), None)
    if below is None or below in literal:
        return below is not None
    code = blocks.code_of(lines[below])
    return indent_width(code) > indent_width(lines[row]) or code.strip()[:1] in ")]}"


def must_close(blocks, lines: list[str], row: int, literal: set[int], width: int | None = None) -> bool:
    """Whether the line `row` (code at some indentation) comes back to the column of a block's header (or clause)
    above it, with that block's body (lines indented deeper) between: it must end or continue that block. With
    `width`, whether the first code line from `row` on indented no deeper than `width` does that at `width`: it is
    the `end` or clause the block above it needs. The lines are read by `blocks` (`end_blocks.reading`)."""
    if width is not None:
        below = next((line for line in code_lines(blocks, lines, range(row, len(lines)), literal)
                      if line[1] <= width), None)
        return below is not None and below[1] == width and \
            bool(blocks.END.match(below[2]) or blocks.CLAUSE.match(below[2]))
    width = indent_width(lines[row])
    deeper = False
    for _, indent, code in code_lines(blocks, lines, range(row - 1, -1, -1), literal):
        if indent > width:
            deeper = True
            continue
        return deeper and indent == width and (blocks.opens_block(code) or bool(blocks.CLAUSE.match(code)))
    return False


def must_open(blocks, lines: list[str], row: int, literal: set[int]) -> list[str]:
    """The code lines below `row` where they are indented deeper than it down to an `end` (or a clause) at exactly
    its indentation, and that line last: the body of a block the line `row` must head, and what ends it; else []."""
    width = indent_width(lines[row])
    body = []
    for _, indent, code in code_lines(blocks, lines, range(row + 1, len(lines)), literal):
        if indent > width:
            body.append(code)
            continue
        return body + [code] if body and indent == width and \
            (blocks.END.match(code) or blocks.CLAUSE.match(code)) else []
    return []


def _closes_what_is_open(closers: str, before: str, suffix: str, language: str) -> bool:
    """Whether `closers` (brackets, no comma: `)`, `})`) after an `end` close the brackets still open at the end of
    `before`, innermost first, and the suffix's next code does not close them already (an editor's auto-closed `)`
    on the line below the cursor)."""
    opened = open_brackets(before, language)
    return "," not in closers and len(closers) <= len(opened) and suffix.lstrip()[:1] not in PAIRS and \
        all(opened[-1 - i] == PAIRS[closer] for i, closer in enumerate(closers))


def with_its_end(cut: str, text: str, prefix: str, suffix: str, language: str) -> str:
    """Ruby, Lua, Bash: `cut` (the start of `text` that `postprocess.cut_to_block` kept) with the line after it where
    that line is the `end` of a block the cursor is in whose `end` the document does not have: the header above the hole
    at that `end`'s column, with the kept lines for its body, and below the hole no `end` (or clause) at that column
    before a line back at it. A new method written with no `end` under it yet (no endwise plug-in) then gets its `end`
    with its body; where the `end` is there already, the cut stands."""
    blocks = reading(language)
    rest = text[len(cut):] if text.startswith(cut) else ""
    if not rest.startswith("\n"):
        return cut
    line = rest[1:].split("\n", 1)[0].rstrip()
    end = blocks.END.match(line.strip())
    if end is None or line.strip()[end.end():].strip(" )]},"):
        return cut  # not an `end` (with the brackets it closes after it: a callback's `end)`)
    closers = line.strip()[end.end():].replace(" ", "")
    if closers and not _closes_what_is_open(closers, prefix + cut, suffix, language):
        line = line[:len(line) - len(line.lstrip())] + end.group()  # the suffix's closers, or a guess: the `end` alone
    lines = (prefix + cut + "\n" + line).split("\n")
    width = indent_width(line)
    if not must_close(blocks, lines, len(lines) - 1, set()) \
            or must_close(blocks, suffix.split("\n"), 0, set(), width=width):
        return cut
    return cut + "\n" + line
