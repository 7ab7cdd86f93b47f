"""Conditional directives (`#if` ... `#endif`, C#'s `#region` ... `#endregion`) in C, C++ and C#, read on the whole
document: a suggestion must leave them no less balanced than they were.

Tree-sitter reads a conditional as a node around the code it guards, and recovers from one left open or closing
nothing without always adding an error the gate's windows count: a `#ifdef _WIN32` line put where a statement was
leaves a conditional open to the file's end, a `#else` or `#endif` where none is open closes nothing, and the
compiler refuses the file ("unterminated #ifdef", "#else without #if"). The windows cannot judge this, since they
start and end inside conditionals, so the whole document is read, with the text and without.
"""

from __future__ import annotations

import re

_LANGUAGES = frozenset({"c", "cpp", "csharp"})
_DIRECTIVE = re.compile(r"^[ \t]*#[ \t]*([a-z]+)", re.MULTILINE)
_IFS = frozenset({"if", "ifdef", "ifndef"})
_BRANCHES = frozenset({"elif", "elifdef", "elifndef", "else"})


def conditional_errors(text: str) -> int:
    """How many conditional directives of `text` close or branch none that is open (`#endif`, `#else`, `#elif`,
    `#endregion` with no `#if` or `#region` open; an `#else` or `#elif` after its `#if`'s `#else`), plus how many
    are left open at its end."""
    ifs: list[bool] = []  # each open `#if`: whether its `#else` came
    regions = 0
    errors = 0
    for match in _DIRECTIVE.finditer(text):
        word = match.group(1)
        if word in _IFS:
            ifs.append(False)
        elif word == "region":
            regions += 1
        elif word == "endif" and ifs:
            ifs.pop()
        elif word == "endregion" and regions:
            regions -= 1
        elif word in ("endif", "endregion") or (word in _BRANCHES and (not ifs or ifs[-1])):
            errors += 1
        elif word == "else":
            ifs[-1] = True
    return errors + len(ifs) + regions


def unbalances_conditionals(document: str, at: int, to: int, text: str, language: str | None) -> bool:
    """Whether `text` over [`at`, `to`) of `document` (character offsets) leaves the document's conditional
    directives less balanced than they were (`conditional_errors`). Read only where a line the text touches holds
    a `#`; False in a language without the preprocessor's conditionals."""
    if language not in _LANGUAGES:
        return False
    line_start = document.rfind("\n", 0, at) + 1
    line_end = document.find("\n", to)
    touched = document[line_start:at] + text + document[to:line_end if line_end >= 0 else len(document)]
    if "#" not in touched and "#" not in document[at:to]:
        return False
    return conditional_errors(document[:at] + text + document[to:]) > conditional_errors(document)
