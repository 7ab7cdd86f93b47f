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

The syntax gate (`clean_cut`, completion/gate.py): a suggestion that breaks the code around it is cut to its
longest clean run of leading lines, or not shown at all.
"""

from __future__ import annotations

import logging
import re

from dg_lsp.completion.brackets import PAIRS, ends_in_literal, open_brackets
from dg_lsp.completion.gate import clean_cut, rank_by_syntax
from dg_lsp.completion.gate_end_blocks import block_judge, with_its_end
from dg_lsp.completion.gate_windows import judge_window, scope_is_whole, scope_window
from dg_lsp.completion.unbound import without_unbound
from dg_lsp.context.bindings.jumps import text_strays
from dg_lsp.context.preprocessor import unbalances_conditionals
from dg_lsp.context.end_blocks import closes_only, reading
from dg_lsp.context.notebook import cut_at_cell_end, has_cells
from dg_lsp.context.syntax import breaks_document, literal_end_after, parses_clean_with
from dg_lsp.context.windows import cursor_offset

log = logging.getLogger(__name__)

# control characters, and the line separators LSP does not break at but other line splitters do (\x85 in the C1
# controls, U+2028, U+2029): a client's line index must stay the server's
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u2028\u2029\ufffd]")
_TRAILING_BLANK_LINES = re.compile(r"(?:\n[ \t]*)+\Z")


def strip_control(text: str) -> str:
    """Every line break as \\n (LSP breaks at \\r too: a lone \\r the model wrote is a line break, and the editor
    gets it as one), without control characters."""
    return _CONTROL.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))


def trim_suffix_overlap(text: str, suffix: str, language: str | None = None) -> str:
    """Remove the longest tail of `text` that the suffix starts with, and a duplicated next line. Not where that
    tail is only closing brackets, or in Ruby, Lua and Bash only `end`s: a text that closes its block before the suffix
    closes the outer one (`    end` over `  end`)."""
    if not text or not suffix:
        return text
    for k in range(min(len(text), len(suffix)), 0, -1):
        if text.endswith(suffix[:k]) and suffix[:k].strip():
            if not suffix[:k].strip(" \t\n)]}"):
                break  # only closing brackets: `drop_closers_the_suffix_has` balances them against the prefix
            if reading(language) is not None and closes_only(suffix[:k], language):
                break  # `end`s: the gate reads which block each closes (`end_blocks.end_faults`)
            return text[:-k]
    next_line = suffix.lstrip("\n").split("\n", 1)[0]
    if reading(language) is not None and closes_only(next_line, language):
        return text
    if next_line.strip(" \t)]}") and text.rstrip("\n").endswith(next_line) and text.rstrip("\n") != next_line:
        return text.rstrip("\n")[: -len(next_line)]
    return text


def _leading_closers(suffix: str) -> str:
    """The run of closing brackets the suffix starts with (blanks between them skipped), on its first line."""
    out = []
    for ch in suffix.split("\n", 1)[0]:
        if ch in " \t":
            continue
        if ch not in PAIRS:
            break
        out.append(ch)
    return "".join(out)


def _has_excess_closer(stack: list[str], closers: str) -> bool:
    """True if some closer of `closers` finds no matching opener on `stack` (the brackets open before it)."""
    stack = list(stack)
    for ch in closers:
        if not stack or stack[-1] != PAIRS[ch]:
            return True
        stack.pop()
    return False


def drop_closers_the_suffix_has(text: str, suffix: str, prefix: str = "", language: str | None = None) -> str:
    """A fill that ends with `)` while the suffix starts with `)` would close the bracket twice.

    Balanced against everything around the hole: the brackets the prefix leaves open, those the fill
    opens and closes, and the closers the suffix's line starts with. A trailing closer of the fill is
    dropped only while the suffix's leading closers then find no opener left for one of them, so
    `y = f(g(a` + `b)` + `)` keeps its `)`: the fill closes `g(`, the suffix closes `f(`. `language`: whose line
    comments the brackets skip (`brackets.open_brackets`)."""
    closers = _leading_closers(suffix)
    while True:
        stripped = text.rstrip(" \t")
        if not stripped or stripped[-1] not in PAIRS or not closers or closers[0] != stripped[-1]:
            return text
        if not _has_excess_closer(open_brackets(prefix + stripped, language), closers):
            return text
        text = stripped[:-1]


# a statement after which the lines of its block never run, and a line that control can still reach after it
_ENDS_FLOW = re.compile(r"(?:return|raise|break|continue)(?![\w.])")
_LABEL = re.compile(r"(?:case|default)\b|\w+:\s*$")


def _width(line: str) -> int:
    return len(line) - len(line.lstrip())


def cut_to_block(text: str, indent: str, max_lines: int, line_prefix: str = "", reach_cut: bool = True,
                 language: str | None = None) -> str:
    """Keep at most `max_lines` lines and stop before a line that dedents out of the cursor's block, or (with
    `reach_cut`) one that nothing reaches: a line of the block a `return`, `raise`, `break` or `continue` line
    ended (at its indentation; a `case` or a label is reached by a jump). `line_prefix`: the document's text
    before the cursor on its line (the first line's start); `language` as for `drop_closers_the_suffix_has`.
    Where `indent` is deeper than the first line (one statement: `shown_end`), a brace language's block stays the
    statement's: the `}` line back at the first line's depth that closes the `{` it ends with, or, written the
    Allman or GNU way, a `{` alone at that depth right under it and the `}` line that closes that; the `}` line
    ends the statement, unless it opens the next block (`} else {`)."""
    lines = text.split("\n")
    kept = [lines[0]]
    first = line_prefix + lines[0]
    ended = _width(first) if reach_cut and _ENDS_FLOW.match(first.lstrip()) else None  # a block ended there
    braces = language not in (None, "python") and _width(first) < len(indent)
    # the statement opened its block (`if (x) {`, or an Allman `{` line kept), and its `}` line is not yet written
    opened = braces and first.rstrip().endswith("{") and first.rstrip()[-2:] != "${"
    for line in lines[1:]:
        if len(kept) >= max_lines:
            break
        if line.strip() and _width(line) < len(indent):
            if braces and _width(line) == _width(first) and not opened and line.strip() == "{" \
                    and not any(k.strip() for k in kept[1:]):
                opened = True
                kept.append(line)
                continue
            if opened and _width(line) == _width(first) and line.strip().startswith("}"):
                kept.append(line)
                if line.rstrip().endswith("{"):
                    continue  # `} else {`: the statement goes on in its next block
            break
        stmt = line.lstrip()
        ends = reach_cut and bool(_ENDS_FLOW.match(stmt))
        # a statement starts here (no bracket left open above it)
        if stmt and (ended is not None or ends) and not open_brackets(line_prefix + "\n".join(kept), language):
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


def repeats_the_code_below(text: str, prefix: str, suffix: str) -> bool:
    """Whether a suggestion written at the start of a line (only blanks before the cursor on it) is the code right
    below it again: its lines, blank ones aside, are the next lines of the document after it, indentation and all.
    Where a user opens a line inside code to add one, the model often writes the line that comes next, which is
    already there (`return result` above `return result`); accepted, it doubles that code. The lines below are
    those after the cursor's line, or for a whole-line hole (code after the cursor on its line) that line's and
    the ones after it."""
    line_prefix = prefix.rsplit("\n", 1)[-1]
    if line_prefix.strip() or not text.strip():
        return False
    written = [line.rstrip() for line in (line_prefix + text).split("\n") if line.strip()]
    return written == _lines_below(line_prefix, suffix)[:len(written)]


def _lines_below(line_prefix: str, suffix: str) -> list[str]:
    """The non-blank lines of the document after a text written at the hole, right-stripped: those after the
    cursor's line, or where the cursor's line has code after it and only blanks before it (a whole-line hole) that
    line's and the ones after it."""
    rest_of_line, _, after = suffix.partition("\n")
    below = line_prefix + suffix if rest_of_line.strip() and not line_prefix.strip() else after
    return [line.rstrip() for line in below.split("\n") if line.strip()]


def trim_repeated_tail(text: str, prefix: str, suffix: str) -> str:
    """A text of several lines without the lines at its end that are the code right after the hole again (blank
    lines aside, indentation and all; the last one may stop short of its line's end), its first line kept: a fill
    that wrote its line and then ran on into the lines that follow (a selected `self.encoding = encoding` filled
    with it and the two lines below it, the last cut: `self.ato`)."""
    lines = text.split("\n")
    line_prefix = prefix.rsplit("\n", 1)[-1]
    if len(lines) < 2 or (suffix.partition("\n")[0].strip() and line_prefix.strip()):
        return text  # inside a line: its rest, not the lines below, follows the text
    below = _lines_below(line_prefix, suffix)
    for i in range(1, len(lines)):
        tail = [line.rstrip() for line in lines[i:] if line.strip()]
        if tail and len(tail) <= len(below) and tail[:-1] == below[:len(tail) - 1] \
                and below[len(tail) - 1].startswith(tail[-1]):
            return "\n".join(lines[:i]).rstrip()
    return text


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
           single_line: bool = False, rest_of_line: bool = False, max_lines: int = 8, reach_cut: bool = True,
           language: str | None = None) -> str:
    """The shown text for a raw fill between `prefix` (the document before the hole, or its window)
    and `suffix`. `mid_line`: the cursor's line has text after it; `single_line`: at most one line;
    `rest_of_line`: one line if the text writes any on the cursor's line (the cursor ends a line of code);
    `reach_cut`: end before a line that cannot run (not for a selection, which is never cut); `language`: the
    document's (its line comments, for counting brackets)."""
    text = strip_control(text)
    text = trim_suffix_overlap(text, suffix, language)
    # a whole-line hole keeps its line break: the text after the cursor moves to the next line
    whole_line = is_whole_line_hole(prefix, suffix)
    if single_line or mid_line or (rest_of_line and text.partition("\n")[0].strip()):
        head, newline, _ = text.partition("\n")
        new_line = whole_line and bool(newline) and bool(head.strip())
        text = head
    else:
        new_line = whole_line and "\n" in text.lstrip("\n")
        cut = cut_to_block(text, indent, max_lines, prefix.rsplit("\n", 1)[-1], reach_cut, language)
        kept = with_its_end(cut, text, prefix, suffix, language) if reading(language) is not None else cut
        text = trim_repeated_tail(kept, prefix, suffix)
    text = drop_closers_the_suffix_has(text, suffix, prefix, language)
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


def between_lines(ctx) -> str | None:
    """Whether the cursor is on a blank line opened inside a run of code, and how: nothing but blanks on its line,
    and the line right below it is code indented deeper than the cursor's block (`ctx.indent`): "deeper" (the
    cursor's line heads those lines), or at its depth: "same"; else None. The text written there goes between lines
    that are already there, and the cursor's block ran on into them: the body of a `for` whose body is the next
    lines, statements that repeat the next ones. So one line is shown above deeper lines, and one statement (its
    first line, and the lines indented under it: a loop and its body) above lines at the cursor's depth. Seen from
    a blank line (`dg-lsp bench humaneval --cursor blank-line`), HumanEval-Infilling's seeded 300 single-line holes
    went from pass@1 28.0% to 39.3% (docs/results/blank-line.md). Below a blank line, a dedent or nothing, the
    cursor's block is still shown: the end of a body, a new function."""
    if ctx.mid_line or ctx.line_prefix.strip():
        return None
    below = ctx.suffix.split("\n", 2)
    if len(below) < 2 or not below[1].strip():
        return None
    depth = len(below[1]) - len(below[1].lstrip())
    return "deeper" if depth > len(ctx.indent) else "same" if depth == len(ctx.indent) else None


def shown_end(ctx, selection: bool, max_lines: int) -> dict:
    """Where `finish` ends the shown text of a request at `ctx` (a CodeContext), as InfillRequest fields, so a
    left-to-right fill can stop once it has written that far: one line where the cursor's line has text after it,
    or where it is a blank line above deeper code (`between_lines`) (`line_only`); one statement where it is a blank
    line above code at its depth (`one_statement`, and `block_indent` one deeper than the cursor's block); else the
    cursor's block and at most `max_lines` lines (`block_indent`, `block_lines`: the dedent and line-count rules of
    `cut_to_block`), and after code on the cursor's line, the end of that line where the answer writes text on it
    (`rest_of_line`). A selection fill stays in the selection's block (`selection_end`)."""
    if selection:
        return selection_end(ctx)
    between = between_lines(ctx)
    if ctx.mid_line or between == "deeper":
        return {"line_only": True}
    if between == "same":  # one statement: a later line back at the cursor's depth ends it
        return {"block_indent": len(ctx.indent) + 1, "block_lines": max_lines, "one_statement": True}
    ends = {"block_indent": len(ctx.indent), "block_lines": max_lines}
    return {**ends, "rest_of_line": True} if rest_of_line(ctx) else ends


def selection_end(ctx) -> dict:
    """Where a selection fill ends, as `shown_end`'s fields: where it dedents below the selection's block
    (`CodeContext.selection_indent`: a selection of `return total\n\nprint(...)` spans the top level and keeps
    both), with no line limit; within one line with text after it, that line (`line_only`); within one line after
    code, the rest of that line where the fill writes on it (`rest_of_line`). A fill of one selected statement
    otherwise ran on into the next method or function (`    def get_resource(...):`, left open), which the
    editor then applied over the user's code."""
    if ctx.selection_indent is None:
        return {}
    one_line = ctx.start[0] == ctx.end[0]
    if one_line and ctx.mid_line:
        return {"line_only": True}
    ends = {"block_indent": ctx.selection_indent, "block_lines": None}
    return {**ends, "rest_of_line": True} if one_line and ctx.line_prefix.strip() else ends


# -- the one path ---------------------------------------------------------------------------------------------
def finish_suggestion(raw: str, candidates: list[tuple[str, float]], prefix: str, ctx, *, selection: bool,
                      max_lines: int, document: str | None = None, names: bool = True, cell: bool = False) -> str:
    """The text shown (or, for a selection, applied) for an engine answer. `prefix` is the prompt's prefix
    (the document before the hole from a stable anchor), `ctx` the request's `CodeContext` (its suffix
    window, indentation, language, whether the cursor's line has text after it). With the whole `document`
    (`ctx`'s positions are in it), a shown suggestion is also read on it (`gate_suggestion`: a file that parsed clean
    still must, and with `names`, the name check; a selection fill's checks are `selection.refusal`). In a notebook's
    `cell`, or a script of cells (`# %%`) around the hole, the answer ends where another cell starts."""
    script = not cell and has_cells(ctx.prefix + ctx.suffix)
    if cell or script:
        raw = cut_at_cell_end(raw, script)
        candidates = [(cut_at_cell_end(t, script), s) for t, s in candidates]
    if len(candidates) > 1:
        raw = rank_by_syntax(candidates, prefix, ctx.suffix, ctx.language) or raw
    # cut where `shown_end` told the engine the shown text ends; a selection fill only at its block's end (issue
    # 14.4: no line limit, no cut after a `return`)
    ends = shown_end(ctx, selection, max_lines)
    text = finish(raw, ctx.suffix, prefix=prefix, indent=" " * ends.get("block_indent", 0),
                  single_line=ends.get("line_only", False), rest_of_line=ends.get("rest_of_line", False),
                  max_lines=10_000 if selection else max_lines, reach_cut=not selection, language=ctx.language)
    if not selection and repeats_the_code_below(text, prefix, ctx.suffix):
        return ""
    gated = gate_suggestion(text, prefix, ctx, None if selection else document, names)
    if selection and gated != text:
        # the editor applies a fill over the user's code: whole and clean, or not at all (no cut of it)
        log.info("selection fill refused: it would break the code around it (%d chars)", len(text))
        return ""
    return gated


def _window_after_a_literal(document: str, at: int, prefix: str, language: str | None) -> str:
    """`prefix` (the text before offset `at` of `document`) from the line after the construct (a call, a statement,
    a function) that holds the string or comment its first character lies inside, where the bracket scan reads its
    end as inside a literal and the whole document's parse does not: a window that starts inside a long raw string
    reads itself inside out, and the gate's structure rules stand down. Else `prefix`."""
    start = at - len(prefix)
    if start <= 0 or document[start:at] != prefix or not ends_in_literal(prefix, language):
        return prefix
    end = literal_end_after(document, start, language, before=at)
    if end is None or end >= at or literal_end_after(document, at, language) is not None:
        return prefix
    line = document.find("\n", end, at)
    if line < 0 or document[end:line].strip(" \t;,"):
        return prefix  # the construct ends inside a line (the hole is in the call the literal is an argument of)
    return prefix[line + 1 - start:]


def gate_suggestion(text: str, prefix: str, ctx, document: str | None = None, names: bool = True) -> str:
    """The syntax gate (`gate.clean_cut`) on a shaped suggestion, in the gate's windows of the request `ctx`: its own
    window after the hole (`gate_windows.judge_window`, the model's and more) and the enclosing scope's lines. With
    the whole `document`, then (`names`) the name check (`unbound.without_unbound`: Python, JavaScript, TypeScript,
    PHP), whose cut the gate judges again, and last the whole file's parse: outside Python (whose gate reads its
    blocks exactly), a text after which a document that parsed clean no longer does is not shown
    (`syntax.breaks_document`), nor one with a `break` or `continue` that nothing in its function takes
    (`bindings.jumps.text_strays`: a window cut inside a long function does not show its loops), nor, in C, C++ and
    C#, one that leaves the document's `#if`/`#endif` (and `#region`) less balanced (`preprocessor`); in Ruby and
    Lua, one that breaks the block rules read on the whole document (`gate_end_blocks`)."""
    clean_with = None
    if document is not None and ctx.language != "python":
        at, to = cursor_offset(document, *ctx.start), cursor_offset(document, *ctx.end)
        clean_with = lambda candidate: parses_clean_with(document, at, to, candidate, ctx.language)  # noqa: E731
        prefix = _window_after_a_literal(document, at, prefix, ctx.language)
    suffix, truncated = judge_window(prefix, ctx)
    gated = clean_cut(text, prefix, suffix, ctx.language, scope_window(prefix, suffix, ctx), truncated,
                      prefix_truncated=ctx.prefix_truncated or prefix != ctx.prefix,
                      whole_scope=scope_is_whole(prefix, suffix, ctx), clean_with=clean_with)
    if document is None or not gated:
        return gated
    if names:
        gated = without_unbound(gated, document, ctx.start, ctx.end, ctx.language,
                                lambda kept: gate_suggestion(kept, prefix, ctx) == kept)
    if gated and ctx.language != "python":  # `at`, `to`: the hole's offsets, read above
        if breaks_document(document, at, to, gated, ctx.language):
            log.info("suggestion not shown: the file would no longer parse (%d chars)", len(gated))
            return ""
        if text_strays(document, at, to, gated, ctx.language):
            log.info("suggestion not shown: a break or continue that nothing in its function takes")
            return ""
        if unbalances_conditionals(document, at, to, gated, ctx.language):
            log.info("suggestion not shown: it leaves an #if, #else or #endif unmatched")
            return ""
        if reading(ctx.language) is not None and block_judge(document[:at], document[to:], ctx.language)(gated):
            # the block rules again on the whole document: a header's body and its `end` can run past the windows
            log.info("suggestion not shown: it leaves a block without its header or its end")
            return ""
    return gated
