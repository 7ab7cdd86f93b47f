"""Post-processing, all of it: from the engine's raw answer to the text an editor is shown.

`finish_suggestion` is the one path, used by `CompletionService` and by the quality benchmark (so a
benchmark scores exactly what the editor receives): a length search's candidates ranked
(`rank_by_syntax`), the string rules (`finish`), then the syntax gate (`clean_cut`).

The string rules (see `finish`), in order: line breaks as \\n and control characters stripped;
trim what repeats the start of the suffix; cut to the requested scope (one line for a cursor
with text after it on its line, the end of the current block otherwise or a line that cannot run,
at most `max_lines`);
drop closing brackets the suffix already has (balanced against the whole prefix and the
suffix's line); tidy the joins (no trailing whitespace-only lines, no double spaces where the
text meets the prefix or the suffix); give a whole-line hole (cursor at column 0 or in the
indentation, text after it) its line break back.

The syntax gate: a suggestion is shown only if it adds no tree-sitter ERROR/MISSING node to the
window around the hole nor to the enclosing scope parsed alone (`scope_window`: the scope's lines,
or the top-level statement's outside any scope), and opens no string, docstring or comment it does
not close (Python: a scope or window that compiles without it still compiles with it, and in one that does
not, a suggestion that breaks lines leaves no indentation error on its lines or where they meet the next); a
multi-line one is cut to its longest clean run of leading lines, a broken first line of a text
inside a line to its longest clean start (at the end of a word or a closing bracket; a whole-line
text is shown whole or not at all); when no cut is clean the answer is "" (nothing is shown): a
user prefers no suggestion to a broken one. The checks themselves are context/syntax.py's.
"""

from __future__ import annotations

import re

from dg_lsp.context import get_parser, insertion_breaks_syntax, introduces_syntax_errors
from dg_lsp.context.syntax import (clean_region_around, error_spans, insertion_lands_clean, python_compiles,
                                   python_fixes, python_judges_hole, python_leaves_error, python_mends,
                                   python_misindents, python_region_around, spans_hole)

# control characters, and the line separators LSP does not break at but other line splitters do (\x85 in the C1
# controls, U+2028, U+2029): a client's line index must stay the server's
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u2028\u2029\ufffd]")
_PAIRS = {")": "(", "]": "[", "}": "{"}
_TRAILING_BLANK_LINES = re.compile(r"(?:\n[ \t]*)+\Z")
_QUOTES = ('"""', "'''", '"', "'", "`")


def strip_control(text: str) -> str:
    """Every line break as \\n (LSP breaks at \\r too: a lone \\r the model wrote is a line break, and the editor
    gets it as one), without control characters."""
    return _CONTROL.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))


def trim_suffix_overlap(text: str, suffix: str) -> str:
    """Remove the longest tail of `text` that the suffix starts with, and a duplicated next line."""
    if not text or not suffix:
        return text
    for k in range(min(len(text), len(suffix)), 0, -1):
        if text.endswith(suffix[:k]) and suffix[:k].strip():
            if not suffix[:k].strip(" \t\n)]}"):
                break  # only closing brackets: `drop_closers_the_suffix_has` balances them against the prefix
            return text[:-k]
    next_line = suffix.lstrip("\n").split("\n", 1)[0]
    if next_line.strip(" \t)]}") and text.rstrip("\n").endswith(next_line) and text.rstrip("\n") != next_line:
        return text.rstrip("\n")[: -len(next_line)]
    return text


def unmatched_closers(text: str) -> list[int]:
    """Indices of closing brackets in `text` with no opener before them in `text`."""
    stack, unmatched = [], []
    for i, ch in enumerate(text):
        if ch in "([{":
            stack.append(ch)
        elif ch in _PAIRS:
            if stack and stack[-1] == _PAIRS[ch]:
                stack.pop()
            else:
                unmatched.append(i)
    return unmatched


def open_brackets(text: str) -> list[str]:
    """The brackets still open at the end of `text`, outermost first. Brackets inside string literals
    (one-line quotes, triple quotes, backticks) and line comments (`#`, `//`) do not count; a closer
    with no opener is ignored (it closes something before `text`)."""
    stack: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == "#" or text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        quote = next((q for q in _QUOTES if text.startswith(q, i)), None)
        if quote is not None:
            i += len(quote)
            multi = len(quote) == 3 or quote == "`"
            while i < n and not text.startswith(quote, i):
                if text[i] == "\\":
                    i += 1
                elif text[i] == "\n" and not multi:
                    break
                i += 1
            i += len(quote)
            continue
        if ch in "([{":
            stack.append(ch)
        elif ch in _PAIRS and stack and stack[-1] == _PAIRS[ch]:
            stack.pop()
        i += 1
    return stack


def _leading_closers(suffix: str) -> str:
    """The run of closing brackets the suffix starts with (blanks between them skipped), on its first line."""
    out = []
    for ch in suffix.split("\n", 1)[0]:
        if ch in " \t":
            continue
        if ch not in _PAIRS:
            break
        out.append(ch)
    return "".join(out)


def _has_excess_closer(stack: list[str], closers: str) -> bool:
    """True if some closer of `closers` finds no matching opener on `stack` (the brackets open before it)."""
    stack = list(stack)
    for ch in closers:
        if not stack or stack[-1] != _PAIRS[ch]:
            return True
        stack.pop()
    return False


def drop_closers_the_suffix_has(text: str, suffix: str, prefix: str = "") -> str:
    """A fill that ends with `)` while the suffix starts with `)` would close the bracket twice.

    Balanced against everything around the hole: the brackets the prefix leaves open, those the fill
    opens and closes, and the closers the suffix's line starts with. A trailing closer of the fill is
    dropped only while the suffix's leading closers then find no opener left for one of them, so
    `y = f(g(a` + `b)` + `)` keeps its `)`: the fill closes `g(`, the suffix closes `f(`."""
    closers = _leading_closers(suffix)
    while True:
        stripped = text.rstrip(" \t")
        if not stripped or stripped[-1] not in _PAIRS or not closers or closers[0] != stripped[-1]:
            return text
        if not _has_excess_closer(open_brackets(prefix + stripped), closers):
            return text
        text = stripped[:-1]


# a statement after which the lines of its block never run, and a line that control can still reach after it
_ENDS_FLOW = re.compile(r"(?:return|raise|break|continue)(?![\w.])")
_LABEL = re.compile(r"(?:case|default)\b|\w+:\s*$")


def _width(line: str) -> int:
    return len(line) - len(line.lstrip())


def cut_to_block(text: str, indent: str, max_lines: int, line_prefix: str = "", reach_cut: bool = True) -> str:
    """Keep at most `max_lines` lines and stop before a line that dedents out of the cursor's block, or (with
    `reach_cut`) one that nothing reaches: a line of the block a `return`, `raise`, `break` or `continue` line
    ended (at its indentation; a `case` or a label is reached by a jump). `line_prefix`: the document's text
    before the cursor on its line (the first line's start)."""
    lines = text.split("\n")
    kept = [lines[0]]
    first = line_prefix + lines[0]
    ended = _width(first) if reach_cut and _ENDS_FLOW.match(first.lstrip()) else None  # a block ended there
    for line in lines[1:]:
        if len(kept) >= max_lines:
            break
        if line.strip() and _width(line) < len(indent):
            break
        stmt = line.lstrip()
        ends = reach_cut and bool(_ENDS_FLOW.match(stmt))
        if stmt and (ended is not None or ends) and not open_brackets(line_prefix + "\n".join(kept)):  # a statement
            width = _width(line)
            if width == ended and not _LABEL.match(stmt):
                break
            if ends:
                ended = width
            elif ended is not None and width < ended:
                ended = None
        kept.append(line)
    out = "\n".join(kept)
    if len(kept) < len(lines) and out and not out.endswith("\n") and len(kept) > 1:
        out = out.rstrip(" \t")
    return out


def tidy_joins(text: str, prefix: str, suffix: str) -> str:
    """No trailing whitespace-only lines; no blank run doubled where the text meets the prefix (after
    code, not indentation) or the suffix (a suffix that starts with a blank, a line break, or nothing)."""
    text = _TRAILING_BLANK_LINES.sub("", text)
    line_prefix = prefix.rsplit("\n", 1)[-1]
    if line_prefix.strip() and line_prefix[-1:] in (" ", "\t"):
        head, newline, rest = text.partition("\n")
        text = head.lstrip(" \t") + newline + rest
    if not suffix or suffix[0] in " \t\n":
        text = text.rstrip(" \t")
    return text


def is_whole_line_hole(prefix: str, suffix: str) -> bool:
    """The cursor is at column 0 or in the indentation, with text after it on its line: the answer is
    a new line (or lines) before that text."""
    line_prefix = prefix.rsplit("\n", 1)[-1]
    return not line_prefix.strip() and bool(suffix.split("\n", 1)[0].strip())


def finish(text: str, suffix: str, *, prefix: str = "", indent: str = "", mid_line: bool = False,
           single_line: bool = False, rest_of_line: bool = False, max_lines: int = 8, reach_cut: bool = True) -> str:
    """The shown text for a raw fill between `prefix` (the document before the hole, or its window)
    and `suffix`. `mid_line`: the cursor's line has text after it; `single_line`: at most one line;
    `rest_of_line`: one line if the text writes any on the cursor's line (the cursor ends a line of code);
    `reach_cut`: end before a line that cannot run (not for a selection, which is never cut)."""
    text = strip_control(text)
    text = trim_suffix_overlap(text, suffix)
    # a whole-line hole keeps its line break: the text after the cursor moves to the next line
    whole_line = is_whole_line_hole(prefix, suffix)
    if single_line or mid_line or (rest_of_line and text.partition("\n")[0].strip()):
        head, newline, _ = text.partition("\n")
        new_line = whole_line and bool(newline) and bool(head.strip())
        text = head
    else:
        new_line = whole_line and "\n" in text.lstrip("\n")
        text = cut_to_block(text, indent, max_lines, prefix.rsplit("\n", 1)[-1], reach_cut)
    text = drop_closers_the_suffix_has(text, suffix, prefix)
    text = tidy_joins(text, prefix, "\n" if new_line else suffix)
    if not text.strip():
        return ""
    if new_line:  # the suffix's text keeps its column on its new line
        text += "\n" + prefix.rsplit("\n", 1)[-1]
    return text


def rest_of_line(ctx) -> bool:
    """Whether the cursor ends a line that has code before it (and nothing after it). There an answer that writes
    text on the cursor's line is shown up to that line's end: the statement being written is finished on its
    line, and the lines after it are the document's own (a guess at more lines pushes them down, often repeating
    them: after `for agent in sel` the held-out line-rest holes got a made-up loop body above the real one). An
    answer that starts a new line (the line was done: `pass` then "\n    x = 1") keeps the cursor's block."""
    return not ctx.mid_line and bool(ctx.line_prefix.strip())


def shown_end(ctx, selection: bool, max_lines: int) -> dict:
    """Where `finish` ends the shown text of a request at `ctx` (a CodeContext), as InfillRequest fields, so a
    left-to-right fill can stop once it has written that far: one line where the cursor's line has text after it
    (`line_only`); else the cursor's block and at most `max_lines` lines (`block_indent`, `block_lines`: the
    dedent and line-count rules of `cut_to_block`), and after code on the cursor's line, the end of that line
    where the answer writes text on it (`rest_of_line`). A selection is never cut: nothing."""
    if selection:
        return {}
    if ctx.mid_line:
        return {"line_only": True}
    ends = {"block_indent": len(ctx.indent), "block_lines": max_lines}
    return {**ends, "rest_of_line": True} if rest_of_line(ctx) else ends


# -- the syntax gate and the one path -----------------------------------------------------------------------
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
    if all(spans_hole(before, len(p.encode("utf-8"))) for (p, _), before in zip(regions, befores)):
        local = clean_region_around(prefix, suffix, language)  # every region is blind at the hole: look closer
        if local is None:
            mend = regions[-1]  # the scope's lines where there is one (never cut inside a string)
        else:
            regions.append(local[0])
            befores.append(local[1])

    # Python: tree-sitter takes a wrong indentation or an empty block; a region that compiles without the
    # suggestion must compile with it, and where the window or the scope does, that is the verdict (a window cut
    # at a docstring's closing quotes reads as strings inverted to tree-sitter). A region that does not compile
    # without it and does with it, or whose complaint at the hole it removes (`python_fixes`), passes, whatever
    # tree-sitter makes of a part of it (a `}` closing a dict opened far above). A suggestion that leaves Python's
    # complaint at or just under the hole where it was does not pass (`python_leaves_error`: continuation lines
    # whose call the hole should start). In a region that does not compile, a suggestion that breaks lines must
    # leave no indentation error where its lines are or meet the next one. Where none compiles without it (the
    # cursor's statement is unfinished), one that finishes that statement on its line with no Python error up to
    # the next line passes, whatever tree-sitter makes of the window's broken parts (`python_mends`)
    compiled, uncompiled = [], []
    python_regions, local_python = regions if language == "python" else [], None
    if python_regions and not any(python_judges_hole(p, s) for p, s in python_regions):
        local_python = python_region_around(prefix, suffix)  # every region complains above the hole: look closer
    for region in python_regions:
        (compiled if python_compiles(region[0] + region[1]) else uncompiled).append(region)
    # where every region complains above the hole, lines nearer it, only to find a lack under the hole (a text may
    # dedent below their start: they judge nothing else)
    lacking = uncompiled + ([local_python] if local_python is not None else [])

    def breaks(candidate: str) -> bool:
        if any(not python_compiles(p + candidate + s) for p, s in compiled):
            return True
        if any(region in compiled for region in regions[:2]):
            return False  # the window or the scope compiles, with the text too: tree-sitter has nothing to add
        if any(python_compiles(p + candidate + s) or python_fixes(p, candidate, s) for p, s in lacking):
            return False  # it mends lines that did not compile: Python's word outweighs tree-sitter's
        if any(python_leaves_error(p, candidate, s) for p, s in lacking):
            return True
        if not compiled and any(python_mends(p, candidate, s) for p, s in uncompiled):
            return False  # it finishes the statement the cursor is in, and Python finds nothing wrong near it
        if any(python_misindents(p, candidate, s) for p, s in uncompiled):
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


def finish_suggestion(raw: str, candidates: list[tuple[str, float]], prefix: str, ctx, *, selection: bool,
                      max_lines: int) -> str:
    """The text shown (or, for a selection, applied) for an engine answer. `prefix` is the prompt's prefix
    (the document before the hole from a stable anchor), `ctx` the request's `CodeContext` (its suffix
    window, indentation, language, whether the cursor's line has text after it)."""
    if len(candidates) > 1:
        raw = rank_by_syntax(candidates, prefix, ctx.suffix, ctx.language) or raw
    # a selection is never cut (issue 14.4): no block to stop at (indent ""), no line limit
    text = finish(raw, ctx.suffix, prefix=prefix, indent="" if selection else ctx.indent,
                  mid_line=ctx.mid_line and not selection,
                  rest_of_line=rest_of_line(ctx) and not selection,
                  max_lines=10_000 if selection else max_lines, reach_cut=not selection)
    if selection:
        return text
    return clean_cut(text, prefix, ctx.suffix, ctx.language, scope_window(prefix, ctx.suffix, ctx))
