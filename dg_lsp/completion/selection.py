"""What a selection fill must pass besides the syntax gate, read on the whole document: `dgLsp.fillSelection`'s
answer is applied by the editor over the user's code, not shown for the user to take or leave.

`refusal` says why a fill is no fill, or None: the file would no longer compile (Python) or parse clean (the other
languages with a grammar), or the fill is only comments where code was selected."""

from __future__ import annotations

from dg_lsp.context.languages import get_parser
from dg_lsp.context.syntax import python_complaint


def refusal(document: str, start: tuple[int, int], end: tuple[int, int], text: str, language: str | None) -> str | None:
    """Why `text` over [start, end) of `document` ((line, column) positions, its line breaks `\n`) is no fill, or
    None."""
    if not selection_keeps_compiling(document, start, end, text, language):
        return "the file would no longer compile or parse"
    if replaces_code_with_comments(document, start, end, text, language):
        return "only comments over selected code"
    return None


def selection_keeps_compiling(document: str, start: tuple[int, int], end: tuple[int, int], text: str,
                               language: str | None) -> bool:
    """Whether a document (its line breaks `\n`) that compiles still does with `text` over [start, end) ((line,
    column) positions), read whole: Python by its compiler, a language with a tree-sitter grammar by the parse having
    no ERROR or MISSING node. The gate reads windows around the hole, and a fill whose last line opens a block over a
    blank line and code at its depth (`if not isinstance(bg, str):` with no body, click's termui.py) passed it. A
    selection fill is rare and asked for, so the whole file is read: one that compiled keeps compiling. A language
    without a grammar, and a document that did not compile: True."""
    if language == "python":
        def compiles(source: str) -> bool:  # not through python_complaint's cache: whole files would stay in it
            return python_complaint.__wrapped__(source) is None
    elif (parser := get_parser(language)) is not None:
        def compiles(source: str) -> bool:  # not through syntax's tree cache, for the same reason
            return not parser.parse(source.encode("utf-8")).root_node.has_error
    else:
        return True

    if not compiles(document):
        return True
    return compiles(document[:_offset(document, *start)] + text + document[_offset(document, *end):])


def _offset(document: str, line: int, column: int) -> int:
    """The index in `document` (its line breaks `\n`) of a (line, column) position."""
    at = 0
    for _ in range(line):
        at = document.index("\n", at) + 1
    return at + column


def only_comments(text: str, language: str | None) -> bool:
    """Whether `text`, read alone, is nothing but comments (at least one): tree-sitter finds no error in it and
    every node at its top is a comment. False in a language without a grammar."""
    parser = get_parser(language)
    if parser is None or not text.strip():
        return False
    root = parser.parse(text.encode("utf-8")).root_node
    return not root.has_error and all("comment" in node.type for node in root.named_children)


def replaces_code_with_comments(document: str, start: tuple[int, int], end: tuple[int, int], text: str,
                                language: str | None) -> bool:
    """A selection fill that is only comments over selected text that is not: applied, it deletes the user's code
    (npm's queryable.js: `this.#data = JSON.parse(obj.data)` selected, `// if the data is not a string, ...`
    written)."""
    selected = document[_offset(document, *start):_offset(document, *end)]
    return bool(selected.strip()) and only_comments(text, language) and not only_comments(selected, language)
