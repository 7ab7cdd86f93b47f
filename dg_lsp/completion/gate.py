"""The syntax gate of post-processing: a suggestion is shown only if it breaks nothing around the hole.

A suggestion is shown only if it adds no tree-sitter ERROR/MISSING node to the window around the hole
(`gate_windows.judge_window`) nor to the enclosing scope parsed alone (`gate_windows.scope_window`: the scope's
lines, or the top-level statement's outside any scope), and
opens no string, docstring or comment it does not close. A multi-line one is cut to its longest clean run of leading
lines, a broken first line of a text inside a line to its longest clean start (at the end of a word or a closing
bracket; a whole-line text is shown whole or not at all); when no cut is clean the answer is "" (nothing is shown):
a user prefers no suggestion to a broken one. The scope is the one found in the document without the suggestion,
whose brackets end it one closer early where the suggestion opens a block over lines already below, indented deeper,
whose closer is there too (`} el` + `se {`): there the scope is judged through the lines that hold that closer
(`reaching_closers`), and where those lie past the end of a window that ends before the document does, with the
closers of the blocks around the text added after the window's end (`past_the_window`). Such a window is also read
with its own open blocks closed after its end (`_closed_ends`), where tree-sitter reads the cut as one error across
it, for texts that leave those blocks as they were (`_closed_judge`). Each added reading only adds: a text is shown
where any reading shows it. Outside Python, a text after which the window or the scope has no error left, where it
had some, and the same brackets open, is shown (`_mends`).

Eight structure rules come before every reading, outside Python and where the hole is not inside a string or
comment (`gate_structure.structure_judge`, whose docstring gives them): a text must give back the opener of a block
the hole lost, close no block early, open no block over lines of its own level, add no early error that tree-sitter
parses as valid code (`bindings.early_errors`), start no statement that takes in the next line, open no `/*` it
leaves open, head the `{` alone on the line below it (GNU and Allman styles), and parse where it stands.

Python has its compiler's word, which outweighs tree-sitter's (the checks are context/syntax.py's):
- a window or scope that compiles without the suggestion must compile with it, and then that is the verdict;
- one that did not compile and does with it, or whose complaint at or under the hole the suggestion removes leaving
  only the window's cut (`python_fixes`: the first line of a call continued under the hole, the `}` of a dict opened
  far above), passes;
- one that leaves Python's complaint at the cursor's line, or just under the hole, where it was does not
  (`python_leaves_error`: a comment above continuation lines, `# [tag]` above dict entries whose `ops = {` is
  missing, a cursor's unfinished statement left so); where every window complains above the hole, the lines from a
  least-indented one nearer it judge this (`python_region_around`);
- in a window that does not compile, a suggestion that breaks lines leaves no indentation error on its lines or
  where they meet the next (`python_misindents`; also read in the lines nearer the hole where every window
  complains above it: a text that ends in `if x:` with no body, in a window cut inside a long signature), one
  that ends the cursor's line opens no block with no body under it (`python_opens_empty_block`), and one that
  finishes the cursor's statement on its line with no complaint up to the next passes (`python_mends`).
"""

from __future__ import annotations

import re

from dg_lsp.completion.brackets import PAIRS, ends_in_literal, misaligned_closers, open_counts, open_spans
from dg_lsp.completion.gate_structure import heads_deeper_lines, structure_judge
from dg_lsp.context import get_parser, introduces_syntax_errors
from dg_lsp.context.document import leading_whitespace
from dg_lsp.context.python_syntax import (python_compiles, python_fixes, python_judges_hole, python_leaves_error,
                                          python_mends, python_misindents, python_opens_empty_block,
                                          python_region_around)
from dg_lsp.context.syntax import (clean_region_around, error_spans, insertion_breaks_syntax, insertion_lands_clean,
                                   spans_hole)

_CLOSERS = {opener: closer for closer, opener in PAIRS.items()}


def _open_blocks(text: str, language: str) -> list[tuple[str, int]]:
    """The brackets open at the end of `text` as (bracket, indentation of a `{`'s line): what a text must leave as
    it was for a region's end to stand (`_mends`, `_closed_judge`)."""
    return [(bracket, indent) for bracket, _, indent in open_spans(text, language)]


def _closers(spans: list[tuple[str, int, int]]) -> str:
    """Lines that close the `open_spans` brackets `spans`, innermost first, each `}` at its `{`'s indentation."""
    return "".join("\n" + " " * indent + _CLOSERS[bracket] for bracket, _, indent in reversed(spans))


def rank_by_syntax(candidates: list[tuple[str, float]], prefix: str, suffix: str, language: str | None,
                   margin: float = 0.05) -> str | None:
    """Length search: the best mean log-probability wins; among candidates within `margin` of it,
    one that does not add syntax errors to the window wins the tie."""
    if not candidates:
        return None
    ordered = sorted(candidates, key=lambda c: -c[1])
    if language is None:
        return ordered[0][0]
    best = ordered[0][1]
    window = prefix + suffix
    for text, score in ordered:
        if best - score > margin:
            break
        if not introduces_syntax_errors(window, prefix + text + suffix, language):
            return text
    return ordered[0][0]


def clean_cut(text: str, prefix: str, suffix: str, language: str | None,
              scope: tuple[str, str] | None = None, truncated: bool = False, prefix_truncated: bool = True,
              whole_scope: bool = False, clean_with=None) -> str:
    """`text` if it breaks nothing (see the module's docstring) in the window `prefix + suffix`, nor in `scope` (the
    enclosing scope's part of them, `gate_windows.scope_window`); else its longest run of leading lines that breaks
    nothing, or (inside a line) its first line's longest clean start (never one that ends inside a string it opens);
    else "". Where an error node of the text without the suggestion runs across the hole in both (a bracket or string
    left open above), the lines nearest the hole are judged instead; if even the hole's own lines are broken across it,
    the text must leave no error on itself in the scope (it mends the line). A whole-line text (ending in a line break
    and the cursor's indentation) is judged as it is: its line break is part of it. `truncated`: the document goes on
    after `suffix` (`CodeContext.suffix_truncated`; `reaching_closers`); `prefix_truncated`: it starts before `prefix`
    (`brackets.lost_opener`). `whole_scope`: `scope` holds the enclosing scope's every line, its header to its last
    (`gate_windows.scope_is_whole`); outside Python a text that passes the structure rules and leaves that scope parsing
    clean with every bracket in it closed is then shown whatever the window reads (a window cut inside a class reads the
    class's `}` as closing nothing, and a text that mends the method's last line lets that error out of the one the
    broken line made), and one that heads the lines below and leaves that scope a `}` short at its end is not
    (`_leaves_a_block_open`). `clean_with`: whether the whole document reads clean (no ERROR or MISSING node) with a
    candidate in the hole; a candidate that passes the structure rules and leaves the whole document clean is shown
    whatever the windows read (their cut is their own: a field's line read without its class, a scope tree-sitter's
    recovery ended wrong). Unknown languages pass unchecked."""
    if not text or get_parser(language) is None:
        return text
    structure = structure_judge(prefix, suffix, language, prefix_truncated, scope)
    as_it_is = _judge(prefix, suffix, language, scope, truncated)
    closed = None  # a second reading: the window's end as the document's, its blocks closed there

    def breaks(candidate: str, whole: bool = True) -> bool:
        # a text that breaks the brace languages' rules breaks in every reading; else it is shown where any reading
        # shows it, the whole document's last (`whole`: not for the clean starts of a line, each a parse of it)
        if structure is not None and structure(candidate):
            return True
        if not windows_break(candidate):
            return False
        return not (whole and clean_with is not None and clean_with(candidate))

    def windows_break(candidate: str) -> bool:
        # the second reading is built only where the first refuses a text
        nonlocal closed
        if whole_scope and language != "python":
            if _leaves_a_block_open(scope, prefix, candidate, suffix, language):
                return True
            if _completes(scope, candidate, language):
                return False
        if not as_it_is(candidate):
            return False
        if not truncated or language == "python":
            return True
        if closed is None:
            closed = _closed_judge(prefix, suffix, scope, language)
        return closed(candidate)

    if not breaks(text):
        return text
    lines = text.split("\n")
    tail = ""
    if len(lines) > 1 and not lines[-1].strip():  # a whole-line text: its line break stays on every cut
        tail, lines = "\n" + lines[-1], lines[:-1]
    else:
        for k in range(len(lines) - 1, 0, -1):
            cut = "\n".join(lines[:k]).rstrip(" \t")
            if cut.strip() and not breaks(cut):
                return cut
    if len(lines) != 1 or tail:  # a whole line is shown whole or not at all
        return ""
    for cut in _line_cuts(lines[0], prefix, language):  # the first line itself is broken: its longest clean start
        if not breaks(cut, whole=False):
            return cut
    return ""


def _judge(prefix: str, suffix: str, language: str, scope: tuple[str, str] | None, truncated: bool):
    """`clean_cut`'s test for the window `prefix + suffix` and `scope`: whether a candidate text breaks them."""
    regions = [(prefix, suffix)] + ([scope] if scope is not None and scope != (prefix, suffix) else [])
    primary = list(regions)  # the window and the scope (a run of lines around the hole may join them below)
    befores = [error_spans(p + s, language) for p, s in regions]
    mend = None
    if all(spans_hole(before, len(p.encode("utf-8"))) for (p, _), before in zip(regions, befores)):
        local = clean_region_around(prefix, suffix, language)  # every region is blind at the hole: look closer
        if local is None:
            mend = regions[-1]  # the scope's lines where there is one (never cut inside a string)
        else:
            regions.append(local[0])
            befores.append(local[1])

    # Python: its compiler's word first (the rules: the module's docstring)
    compiled, uncompiled = [], []
    python_regions, local_python = regions if language == "python" else [], None
    if python_regions and not any(python_judges_hole(p, s) for p, s in python_regions):
        local_python = python_region_around(prefix, suffix)  # every region complains above the hole: look closer
    for region in python_regions:
        (compiled if python_compiles(region[0] + region[1]) else uncompiled).append(region)
    # where every region complains above the hole, lines nearer it: to find a text that mends what lacks under the
    # hole, or one that leaves it lacking (a text may dedent below their start: no other check runs there)
    lacking = uncompiled + ([local_python] if local_python is not None else [])

    def breaks(candidate: str) -> bool:
        if any(not python_compiles(p + candidate + s) for p, s in compiled):
            return True
        if any(region in compiled for region in primary):
            return False  # the window or the scope compiles, with the text too: tree-sitter has nothing to add
        if any(python_compiles(p + candidate + s) or python_fixes(p, candidate, s) for p, s in lacking):
            return False  # it mends lines that did not compile: Python's word outweighs tree-sitter's
        if any(python_leaves_error(p, candidate, s) or python_opens_empty_block(p, candidate, s) for p, s in lacking):
            return True
        if not compiled and any(python_mends(p, candidate, s) for p, s in uncompiled):
            return False  # it finishes the statement the cursor is in, and Python finds nothing wrong near it
        if any(python_misindents(p, candidate, s) for p, s in lacking):
            return True
        if language != "python" and any(before and _mends(p, candidate, s, language)
                                         for (p, s), before in zip(primary, befores)):
            return False  # the window or the scope had errors, and none is left with the text
        if mend is not None:
            return not insertion_lands_clean(mend[0], candidate, mend[1], language)
        return any(breaks_region(p, candidate, s, before) for (p, s), before in zip(regions, befores))

    def breaks_region(p: str, candidate: str, s: str, before) -> bool:
        # the region's lines through the closers the text needs, against the region's own errors without the text
        # (both balanced: the lines taken on would leave the region without the text one closer too many). Past the
        # window's end, the closers added there only add a reading: they are a guess, which a region that starts
        # inside a statement can parse worse than its own end (a `}` after a signature cut above its `(`)
        reach = reaching_closers(p, candidate, s, suffix, language)
        if not insertion_breaks_syntax(p, candidate, reach, language, before):
            return False
        past = reaching_closers(p, candidate, s, suffix, language, truncated) if truncated else reach
        return past == reach or insertion_breaks_syntax(p, candidate, past, language, before)

    return breaks


def _leaves_a_block_open(scope: tuple[str, str], prefix: str, text: str, suffix: str, language: str) -> bool:
    """Whether `text`, heading lines already below it (indented deeper: a block's body, whose `}` is there too),
    leaves a block open to the end of the whole scope `scope`, whose last line is the `}` at its first line's
    indentation, or that `}` closing nothing: tree-sitter misses a `}` on that last line or after it, or reads an
    ERROR there, where without the text it did not (a second `{` on the header's line, `gth) {{`, that nothing below
    closes), or closes the scope's own `{` (`}{` where a loop's header was, which ends the function early). Counted
    in errors, the text trades the hole's error for one at the scope's end, one for one. A scope whose last line is
    not its header's `}` may end short (tree-sitter's recovery ends it at the hole): it proves nothing."""
    p, s = scope
    lines = s.rstrip().split("\n")
    last = lines[-1]
    if len(lines) < 2 or not last.lstrip().startswith("}") or leading_whitespace(last) != leading_whitespace(p):
        return False
    opened = [at for bracket, at, _ in open_spans(p, language) if bracket == "{"]
    if opened and opened[0] not in (at for _, at, _ in open_spans(p + text, language)):
        return True  # the text closes the scope's own `{`, whose `}` is the scope's last line
    if not heads_deeper_lines(prefix, text, suffix):
        return False

    def at_the_end(region: str, before_last: int) -> set[str]:
        at = len(region[:before_last].encode("utf-8"))
        return {kind for kind, start, _ in error_spans(region, language) if kind in ("}", "ERROR") and start >= at}

    end = len(s.rstrip()) - len(last)  # the last line's start in `s`
    return bool(at_the_end(p + text + s, len(p + text) + end) - at_the_end(p + s, len(p) + end))


def _completes(scope: tuple[str, str], text: str, language: str) -> bool:
    """The whole scope `scope` with `text` in it has no error node, no literal the text opens and leaves open, and
    no bracket left open at its end."""
    prefix, suffix = scope
    return not insertion_breaks_syntax(prefix, text, suffix, language, []) and \
        not _open_blocks(prefix + text + suffix, language)


def _mends(prefix: str, text: str, suffix: str, language: str) -> bool:
    """The region `prefix + suffix` has no error node with `text` in it, the text opens no string or comment it does
    not close, and it leaves the same brackets open at the region's end as the region has without it (kind and
    indentation). A region whose only errors were the hole's own (an object
    entry cut before its comma, a window cut inside a class) is then whole with the text. The brackets must stay
    as they were: a region that ends one closer early parses clean with a brace that takes a later block's closer
    (`x); {`), and the closers the region lacks are what `reaching_closers` is for."""
    if insertion_breaks_syntax(prefix, text, suffix, language, []):  # against no errors: any error, or a literal
        return False
    return _open_blocks(prefix + text + suffix, language) == _open_blocks(prefix + suffix, language)


def _closed_ends(prefix: str, suffix: str, language: str, scope: tuple[str, str] | None):
    """The window, and the scope where it runs to the window's end, each with the closers of the brackets still open
    at its end added after it (innermost first, at the indentation of each `{`'s line), for a window that ends
    before the document does: as (prefix, suffix, scope). A region's closers count only where they leave it fewer
    error nodes than it has without them: the bracket scan does not know every literal (a JavaScript regex with
    `//` in it reads as a comment to it), and a region it misread keeps its own end. None where neither region
    gains."""
    def closed(p: str, s: str) -> str:
        tail = _closers(open_spans(p + s, language))
        if tail and len(error_spans(p + s + tail + "\n", language)) < len(error_spans(p + s, language)):
            return s + tail + "\n"
        return s

    window, closed_scope = closed(prefix, suffix), scope
    if scope is not None and scope[1] == suffix:
        closed_scope = (scope[0], window if scope[0] == prefix else closed(*scope))
    if window == suffix and closed_scope == scope:
        return None
    return prefix, window, closed_scope


def _closed_judge(prefix: str, suffix: str, scope: tuple[str, str] | None, language: str):
    """`_judge` of the window and scope with their ends closed (`_closed_ends`), for texts that leave the same brackets
    open at the window's end as it has without them: the closers added fit those alone. A text that leaves others
    open there (a block it opens, a call it closes) is for the window as it was to judge (`reaching_closers`,
    `past_the_window`). Else, with the window's end standing for an unfinished one, a text that mends the errors a
    missing header caused (a method's body read as class members) and leaves a bracket open would count as a mend
    (`{{`). Where closing gains nothing, every text breaks this reading."""
    closed = _closed_ends(prefix, suffix, language, scope)
    if closed is None:
        return lambda candidate: True
    judge = _judge(closed[0], closed[1], language, closed[2], False)
    open_without = _open_blocks(prefix + suffix, language)

    def breaks(candidate: str) -> bool:
        return _open_blocks(prefix + candidate + suffix, language) != open_without or judge(candidate)
    return breaks


def reaching_closers(prefix: str, text: str, suffix: str, window_suffix: str, language: str | None = None,
                     truncated: bool = False) -> str:
    """A region's `suffix` (the start of the window's `window_suffix`) taken on, line by line, until the brackets
    `text` opens in the region are closed (as few left open as without it), else `suffix` itself. The enclosing
    scope was found in the document without the text: where a text opens a block whose closer is already below
    (`} el` + `se {`, then the `}` that ends the else), that document's brackets end the scope one closer early,
    and the region would blame the text for a closer it has, just past the region's end. Only where the text
    opens its block over lines already below (`heads_deeper_lines`) and puts every block closer there in line with
    its opener, where some was not without it (`brackets.misaligned_closers`): else an opener would take the
    closer of a block around it (the method's `}`), which the region is there to catch. A text that opens a bracket
    nothing in the window closes keeps the region as it was too, unless the window ends before the document does
    (`truncated`) and the closers the text needs are past it (`past_the_window`). Brackets are counted as a parser
    recovers (`open_counts(recover=True)`): without `gth) {` at `if (items.len`, the block's `}` closes the `(` and
    the function, as tree-sitter's scope does."""
    if not window_suffix.startswith(suffix) or (len(window_suffix) == len(suffix) and not truncated):
        return suffix
    if not heads_deeper_lines(prefix, text, suffix):
        return suffix
    after = window_suffix[len(suffix):]
    ends = [i + 1 for i, ch in enumerate(after) if ch == "\n"] + ([len(after)] if not after.endswith("\n") else [])
    with_text, without = prefix + text + suffix, prefix + suffix
    opened = open_counts(with_text + after, [len(with_text)] + [len(with_text) + e for e in ends], language, True)
    before = open_counts(without + after, [len(without)] + [len(without) + e for e in ends], language, True)
    if opened[0] <= before[0]:
        return suffix  # the text leaves no more open in the region than was
    for k, end in enumerate(ends, start=1):
        if opened[k] <= before[k]:
            reach = suffix + after[:end]
            # and the text puts every block closer there in line with its opener, where without it some was not, as
            # a missing block opener does (without it the else's `}` closed the if around it): else the closer it
            # takes is another block's
            if misaligned_closers(prefix + text + reach, language) == 0 < misaligned_closers(prefix + reach, language):
                return reach
            return suffix
    return (past_the_window(prefix, text, window_suffix, language) if truncated else None) or suffix


def past_the_window(prefix: str, text: str, window_suffix: str, language: str | None = None) -> str | None:
    """`window_suffix` and the closers of the brackets the text leaves open at its end beyond those open there
    without the text (and of any opened inside them), in a window that ends before the document does: the closers the
    text needs are past the window's end (`} el` + `se {` in a method longer than the window: without the text, the
    else's `}` closed the method early). Only where each bracket the text opens is closed in the window, and every
    line-leading `}` after the text closes a `{` of its own indentation, where without the text some after the hole
    did not: the text supplies a missing opener, and what stays open is blocks around it. Else (and in Python, whose
    blocks have no closers) None: the region stays as it was, and its end blames the text for what it left open."""
    start, end = len(prefix), len(prefix) + len(text)
    whole = prefix + text + window_suffix
    still = open_spans(whole, language)
    if language == "python" or any(start <= offset < end for _, offset, _ in still):
        return None
    if not misaligned_closers(whole, language, end) == 0 < misaligned_closers(prefix + window_suffix, language, start):
        return None
    without = {offset if offset < start else offset + len(text) for _, offset, _ in open_spans(prefix + window_suffix,
                                                                                               language)}
    extra = next((i for i, (_, offset, _) in enumerate(still) if offset not in without), len(still))
    tail = _closers(still[extra:])
    return window_suffix + tail + ("\n" if tail else "")



_PIECES = re.compile(r"\w+|\s+|[^\w\s]")


def _line_cuts(line: str, prefix: str, language: str | None, most: int = 12) -> list[str]:
    """Shorter starts of `line` (after `prefix`), longest first, each ending at the end of a word or a closing
    bracket (never in a blank run, never after an operator or an opening quote, never inside a string it opens:
    where one error node swallows the rest of the file, no error reads new); of the `most` longest (each is a parse
    or two)."""
    ends = [m.end() for m in _PIECES.finditer(line)
            if (m.group()[0].isalnum() or m.group() in ")]}_") and m.end() < len(line.rstrip())]
    indent = len(line) - len(line.lstrip())
    cuts = [line[:end] for end in reversed(ends) if end > indent][:most]
    if ends_in_literal(prefix, language):
        return cuts
    return [cut for cut in cuts if not ends_in_literal(prefix + cut, language)]
