"""Bash's brackets, for `completion/brackets.py`: Bash's strings span lines, its `#` starts a comment only at a word's
start, a here-document's lines are text and a `case` pattern's `)` closes nothing, so its brackets are read by a scanner
of their own."""

from __future__ import annotations

import re

# where `bash_brackets` has something to look at; the delimiter of a here-document (`<<EOF`, `<<-'END'`,
# `<< "X"`: a word that starts with a letter or `_`, so `$(( 1 << 2 ))` shifts, as `$(( 1 << n ))` does inside its
# `((`); the characters after which a `#`
# starts a comment (a word's start: `$#`, `${#list[@]}` and `${name#prefix}` are no comments)
_MARKS = re.compile(r"[()\[\]{}'\"`\\#<\n]")
_HEREDOC = re.compile(r"<<(-?)[ \t]*(?:'([A-Za-z_][^'\n]*)'|\"([A-Za-z_][^\"\n]*)\"|\\?([A-Za-z_][\w.-]*))")
_WORD_BREAKS = " \t\n;&|()<>"


def bash_brackets(text: str):
    """Each bracket of a Bash `text` outside its strings, comments and here-documents, as (offset, bracket), in order
    (as `brackets._brackets` gives another language's). Strings span lines: `'...'` (no escapes), `$'...'` and
    `"..."` (with `\\` escapes), backticks; a `\\` outside them escapes the next character (`\\(` in `find`); a `#`
    starts a comment only at a word's start; a here-document's lines are text. A `)` with no `(` open is a `case`
    pattern's (`a|b)`), not a closer. `"$(cmd "$x")"` reads as two strings around `$x`: the brackets between its
    quotes are skipped, as a whole."""
    i, n, parens, heredocs = 0, len(text), 0, []
    while True:
        m = _MARKS.search(text, i)
        if m is None:
            return
        i = m.start()
        ch = text[i]
        if ch in "([{":
            parens += ch == "("
            yield i, ch
        elif ch in ")]}":
            if ch != ")" or parens:
                parens -= ch == ")"
                yield i, ch
        elif ch == "\\":
            i += 1
        elif ch == "'":
            if text[i - 1:i] == "$":
                i = _quoted_end(text, i, "'")
                continue
            end = text.find("'", i + 1)
            i = n if end < 0 else end
        elif ch in "\"`":
            i = _quoted_end(text, i, ch)
            continue
        elif ch == "#":
            if i == 0 or text[i - 1] in _WORD_BREAKS:
                end = text.find("\n", i)
                if end < 0:
                    return
                i = end
                continue
        elif ch == "<":
            heredoc = _HEREDOC.match(text, i)
            if heredoc is not None and not text.startswith("<<<", i) and not _in_arithmetic(text, i):
                heredocs.append((heredoc.group(1) == "-", next(g for g in heredoc.groups()[1:] if g is not None)))
                i = heredoc.end()
                continue
        elif ch == "\n" and heredocs:
            i = _heredocs_end(text, i + 1, heredocs)
            heredocs = []
            continue
        i += 1


def _in_arithmetic(text: str, i: int) -> bool:
    """Whether offset `i` lies inside a `((` its line opened before it and has not closed (`$(( 1 << bits ))`: a
    shift, not a here-document)."""
    line = text[text.rfind("\n", 0, i) + 1:i]
    return line.count("((") > line.count("))")


def _quoted_end(text: str, i: int, quote: str) -> int:
    """The offset after the Bash string that `quote` opens at offset `i` (`\\` escapes; line breaks are the
    string's); the text's end for one never closed."""
    i += 1
    while i < len(text):
        if text[i] == "\\":
            i += 2
        elif text[i] == quote:
            return i + 1
        else:
            i += 1
    return len(text)


def _heredocs_end(text: str, i: int, heredocs: list[tuple[bool, str]]) -> int:
    """Where the code goes on after the here-documents whose bodies start at offset `i`, each up to a line that is its
    delimiter alone (after tabs, with `<<-`); the text's end where one has none."""
    for tabs, delimiter in heredocs:
        while i < len(text):
            end = text.find("\n", i)
            end = len(text) if end < 0 else end
            line = text[i:end]
            i = end + 1
            if (line.lstrip("\t") if tabs else line) == delimiter:
                break
        else:
            return len(text)
    return min(i, len(text))
