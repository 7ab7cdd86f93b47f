"""From the engine's raw answer to the text an editor is shown: post-processing, then the syntax gate.

`finish_suggestion` is the one path, used by `CompletionService` and by the quality benchmark (so a
benchmark scores exactly what the editor receives). A suggestion is shown only if it adds no
tree-sitter ERROR/MISSING node to the window around the hole nor to the enclosing scope parsed alone
(`scope_window`: the scope's lines, or the top-level statement's outside any scope), and opens no string,
docstring or comment it does not close (Python: and a scope or window that compiles without it still
compiles with it); a multi-line one is cut to its longest clean run of leading lines, a broken first
line of a text inside a line to its longest clean start (at the end of a word or a closing bracket; a
whole-line text is shown whole or not at all); when no cut is clean the answer is ""
(nothing is shown): a user prefers no suggestion to a broken one.
"""

from __future__ import annotations

import ast
import re
import textwrap

from dg_lsp.context import get_parser, insertion_breaks_syntax, introduces_syntax_errors
from dg_lsp.context.syntax import error_spans, insertion_lands_clean

from .postprocess import finish


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


def python_compiles(text: str) -> bool:
    """`text`, its common indentation removed, compiles as Python (to an AST only: nothing runs)."""
    try:
        compile(textwrap.dedent(text), "<suggestion>", "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
        return True
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return False


def _spans_hole(spans: list[tuple[str, int, int]], hole: int) -> bool:
    """An error node runs across the hole: the text inserted there lands inside it, whatever it is."""
    return any(start < hole < end for _, start, end in spans)


def _lines_around(prefix: str, suffix: str, k: int) -> tuple[str, str]:
    above, below = prefix.split("\n"), suffix.split("\n")
    return ("\n".join(above[max(len(above) - 1 - k, 0):]),
            "\n".join(below[:k + 1]) + ("\n" if len(below) > k + 1 else ""))


def _local_region(prefix: str, suffix: str, language: str, sizes: tuple[int, ...] = (24, 8, 3, 1)):
    """The largest run of lines around the hole (`sizes` lines each side) whose text without the suggestion
    has no error node across the hole, with its error spans; None if even one line each side has one."""
    for k in sizes:
        p, s = _lines_around(prefix, suffix, k)
        spans = error_spans(p + s, language)
        if not _spans_hole(spans, len(p.encode("utf-8"))):
            return (p, s), spans
    return None


def clean_cut(text: str, prefix: str, suffix: str, language: str | None,
              scope: tuple[str, str] | None = None) -> str:
    """`text` if it breaks nothing (see the module's docstring) in the window `prefix + suffix`, nor in
    `scope` (the enclosing scope's part of them, `scope_window`); else its longest run of leading lines
    that breaks nothing, or (inside a line) its first line's longest clean start; else "". Where an error node of the text without the suggestion runs across the
    hole in both (a bracket or string left open above), the lines nearest the hole are judged instead; if
    even the hole's own lines are broken across it, the text must leave no error on itself in the scope
    (it mends the line). A whole-line text (ending in a line break and the cursor's indentation) is judged as
    it is: its line break is part of it. Unknown languages pass unchecked."""
    if not text or get_parser(language) is None:
        return text
    regions = [(prefix, suffix)] + ([scope] if scope is not None and scope != (prefix, suffix) else [])
    befores = [error_spans(p + s, language) for p, s in regions]
    mend = None
    if all(_spans_hole(before, len(p.encode("utf-8"))) for (p, _), before in zip(regions, befores)):
        local = _local_region(prefix, suffix, language)  # every region is blind at the hole: look closer
        if local is None:
            mend = regions[-1]  # the scope's lines where there is one (never cut inside a string)
        else:
            regions.append(local[0])
            befores.append(local[1])

    # Python: tree-sitter takes a wrong indentation or an empty block; a region that compiles without the
    # suggestion must compile with it
    compiled = [(p, s) for p, s in regions if python_compiles(p + s)] if language == "python" else []

    def breaks(candidate: str) -> bool:
        if any(not python_compiles(p + candidate + s) for p, s in compiled):
            return True
        if mend is not None:
            return not insertion_lands_clean(mend[0], candidate, mend[1], language)
        return any(insertion_breaks_syntax(p, candidate, s, language, before)
                   for (p, s), before in zip(regions, befores))

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
    for cut in _line_cuts(lines[0]):  # the first line itself is broken: its longest clean start
        if not breaks(cut):
            return cut
    return ""


_PIECES = re.compile(r"\w+|\s+|[^\w\s]")


def _line_cuts(line: str, most: int = 12) -> list[str]:
    """Shorter starts of `line`, longest first, each ending at the end of a word or a closing bracket
    (never in a blank run, never after an operator or an opening quote); at most `most` of them (each is
    a parse or two)."""
    ends = [m.end() for m in _PIECES.finditer(line)
            if (m.group()[0].isalnum() or m.group() in ")]}_") and m.end() < len(line.rstrip())]
    indent = len(line) - len(line.lstrip())
    return [line[:end] for end in reversed(ends) if end > indent][:most]


def _top_level_lines(above: list[str], below: list[str]) -> tuple[int, int]:
    """Lines of the top-level statement around the cursor, for a hole outside any scope, as (lines above the
    cursor's, lines below it): up to the nearest unindented line at or above the cursor's, down to the line
    before the next unindented one below it (a line that starts with a closing bracket continues it)."""
    def starts(line: str) -> bool:
        return bool(line[:1].strip())

    up = next((i for i in range(len(above)) if starts(above[len(above) - 1 - i])), len(above) - 1)
    down = next((j - 1 for j in range(1, len(below)) if starts(below[j]) and below[j][0] not in ")]}"),
                len(below) - 1)
    return up, down


def scope_window(prefix: str, suffix: str, ctx) -> tuple[str, str]:
    """The part of `prefix` and `suffix` that holds the enclosing scope's lines (`ctx.enclosing`), or, outside
    any scope, the top-level statement's: the syntax gate judges a suggestion there too, so an error elsewhere
    in the window (a bracket left open lines above, whose ERROR node runs over the hole) cannot hide the errors
    the suggestion adds."""
    above = prefix.split("\n")
    below = suffix.split("\n")
    scope = getattr(ctx, "enclosing", None)
    if scope is not None:
        up, down = ctx.start[0] - scope.start_line, max(scope.end_line - ctx.end[0], 0)
    else:
        up, down = _top_level_lines(above, below)
    up, down = min(max(up, 0), len(above) - 1), min(down, len(below) - 1)
    scope_prefix = "\n".join(above[len(above) - 1 - up:])
    scope_suffix = "\n".join(below[:down + 1]) + ("\n" if len(below) > down + 1 else "")
    return scope_prefix, scope_suffix


def finish_suggestion(raw: str, candidates: list[tuple[str, float]], prefix: str, ctx, *, automatic: bool,
                      selection: bool, max_lines: int) -> str:
    """The text shown (or, for a selection, applied) for an engine answer. `prefix` is the prompt's prefix
    (the document before the hole from a stable anchor), `ctx` the request's `CodeContext` (its suffix
    window, indentation, language, whether the cursor's line has text after it)."""
    if len(candidates) > 1:
        raw = rank_by_syntax(candidates, prefix, ctx.suffix, ctx.language) or raw
    # a selection is never cut (issue 14.4): no block to stop at (indent ""), no line limit
    text = finish(raw, ctx.suffix, prefix=prefix, indent="" if selection else ctx.indent,
                  mid_line=ctx.mid_line and not selection,
                  single_line=automatic and ctx.mid_line and not selection,
                  max_lines=10_000 if selection else max_lines)
    if selection:
        return text
    return clean_cut(text, prefix, ctx.suffix, ctx.language, scope_window(prefix, ctx.suffix, ctx))
