"""The windows the syntax gate (completion/gate.py `clean_cut`) judges a suggestion in: the text after the hole
(`judge_window`: the model's window and, past it, the context's longer one, up to where a statement ends) and the
enclosing scope's part of the window (`scope_window`)."""

from __future__ import annotations

import re

from dg_lsp.completion.brackets import first_unopened_closer


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


def judge_window(prefix: str, ctx) -> tuple[str, bool]:
    """The suffix the gate judges a suggestion in, and whether the document goes on after it: the model's window and,
    past it, the context's longer one (`CodeContext.judge_suffix`) up to the next top-level statement (a line that
    starts at column 0 with code other than a closer), so that the closers of the blocks around the hole are in it
    and the window still ends where a statement does (a window cut inside a later statement can read as one error
    across it all: zod's `to-json-schema.ts`). Where the window starts inside a block, the part past the model's
    window ends before the line of the first closer of a block opened above the window, which the window reads as
    closing nothing, with the text or without it (npm's install.js at `} e|`: its class's `}`)."""
    suffix, longer = ctx.suffix, getattr(ctx, "judge_suffix", "") or ctx.suffix
    if len(longer) <= len(suffix):
        return suffix, ctx.suffix_truncated
    cut = None if ctx.language in ("c", "cpp") else next(  # C's column 0 holds a namespace's code, `#if` lines
        (m.start() for m in _LINE_START.finditer(longer, len(suffix))
         if longer[m.start():m.start() + 1] not in _NOT_A_STATEMENT), None)
    if ctx.prefix_truncated or prefix != ctx.prefix:
        end = first_unopened_closer(prefix + longer, len(prefix) + len(suffix), ctx.language)
        if end is not None:
            line = (prefix + longer).rfind("\n", 0, end) + 1 - len(prefix)
            cut = line if cut is None else min(cut, line)
    if cut is None:
        return longer, ctx.judge_truncated
    return longer[:max(cut, len(suffix))], True


_LINE_START = re.compile(r"^", re.MULTILINE)
_NOT_A_STATEMENT = set(" \t\r\n)]}")  # a line that starts so does not start a top-level statement (or is empty)


def scope_is_whole(prefix: str, suffix: str, ctx) -> bool:
    """Whether `scope_window` holds every line of the enclosing scope (`ctx.enclosing`), its header's to its last,
    the cursor's and the selection's inside it; False outside any scope."""
    scope = getattr(ctx, "enclosing", None)
    if scope is None or not scope.start_line <= ctx.start[0] <= ctx.end[0] <= scope.end_line:
        return False
    below = suffix.count("\n") - suffix.endswith("\n")  # whole lines after the cursor's (a last "" is none)
    return ctx.start[0] - scope.start_line <= prefix.count("\n") and scope.end_line - ctx.end[0] <= below


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
