"""Names the code after the cursor reads that nothing before it binds: `m` in

    def max_element(l):
        <cursor>
        for e in l:
            if e > m:

A line that assigns such a name is a likely answer at a blank line (`m = l[0]`), and one the base model, which
reads only the prefix, cannot think of: it never saw the name. The engine's suffix-scored alternatives
(engine/alternatives.py) try a line that starts `name =` for each (InfillRequest.free_names) and let the
likelihood of the code after it decide.

A lexical reading of Python, not a parse: the suffix's first lines are read in order, strings and comments blanked;
a word is bound on a line that assigns it (`x =`, `x, y =`, `x +=` does not bind), loops over it (`for x in`),
defines it (`def`, `class`, `import`, `as`, `lambda`), and read where it appears otherwise. A name counts when its
first appearance is a read, it is no builtin or keyword, no attribute (after a dot) or keyword argument (`f(x=1)`),
and the prefix never mentions it. Other languages: none.
"""

from __future__ import annotations

import builtins
import keyword
import re

LINES = 6  # suffix lines read
LIMIT = 2  # names returned at most, in order of appearance

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_STRING = re.compile(r"\"\"\"|'''|\"(?:\\.|[^\"\\])*\"|'(?:\\.|[^'\\])*'")
_BINDERS = [re.compile(p) for p in (
    r"^\s*([A-Za-z_][\w\s,()\[\]]*?)\s*(?::[^=]*)?=(?!=)",  # x = / x, y = / (a, b) = / x: int =
    r"\bfor\s+([\w\s,()]+?)\s+in\b",  # loops and comprehensions
    r"^\s*(?:async\s+)?(?:def|class)\s+(\w+)",
    r"^\s*import\s+([\w\s,.]+)",
    r"\bimport\s+([\w\s,]+)$",  # from m import a, b
    r"\bas\s+(\w+)",
    r"\blambda\s*([\w\s,*]*):",
    r"^\s*(?:global|nonlocal)\s+([\w\s,]+)",
)]
_RESERVED = frozenset(dir(builtins)) | frozenset(keyword.kwlist) | frozenset(keyword.softkwlist) | {"self", "cls"}


def _code(line: str) -> str:
    """The line with its strings blanked and its comment dropped."""
    line = _STRING.sub('""', line)
    return line.split("#", 1)[0]


def free_names(prefix: str, suffix: str, language: str | None, lines: int = LINES, limit: int = LIMIT) -> tuple[str, ...]:
    """The names (at most `limit`) that the first `lines` lines of `suffix` read before binding them and `prefix`
    never mentions; () outside Python or where code precedes the cursor on its line (no whole line goes there)."""
    if language != "python" or prefix.rsplit("\n", 1)[-1].strip():
        return ()
    known = set(_WORD.findall(prefix))
    bound: set[str] = set()
    found: list[str] = []
    for line in suffix.split("\n")[:lines]:
        code = _code(line)
        here: set[str] = set()
        for binder in _BINDERS:
            for match in binder.finditer(code):
                here.update(_WORD.findall(match.group(1)))
        for match in _WORD.finditer(code):
            word = match.group(0)
            before, after = code[:match.start()].rstrip(), code[match.end():].lstrip()
            if before.endswith(".") or (after.startswith("=") and not after.startswith("==") and "(" in before):
                continue  # an attribute, or a keyword argument
            if word in _RESERVED or word in known or word in bound or word in here or word in found:
                continue
            found.append(word)
            if len(found) == limit:
                return tuple(found)
        bound |= here
    return tuple(found)
