"""A suggestion that reads a name nothing binds (Python, JavaScript, TypeScript, PHP): `self.rfc2109 = r` written
where no `r` is, a helper the model made up (`node_concat(head, values)`), a method called without its `self.`, a PHP
variable its function never sets (`$response` in a function that has `$request`). Run, the line raises NameError
(JavaScript: ReferenceError; TypeScript's compiler: "Cannot find name"; PHP warns "Undefined variable" and reads
null). In Python a function's
own name read before anything binds it (`logger = logger(msg)`) counts too, and an attribute read on a method's
`self` that nothing binds (`return self._copy()` in a class with no `_copy`: an AttributeError). The names are read
on the whole document with the suggestion applied (`context.bindings.python.unbound_reads`,
`context.bindings.python_attributes.unbound_attributes`, `context.bindings.script_names.unbound_script_reads`,
`context.bindings.php_names.unbound_php_reads`).

An inline suggestion keeps its whole lines before the first line that reads one, where those lines are clean by
themselves (the syntax gate leaves them whole), else it is not shown; a selection fill that reads one, or after
which the code around it reads one it did not, is no fill (`selection.refusal`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from dg_lsp.context.bindings.php_names import php_unbound, unbound_php_reads
from dg_lsp.context.bindings.python import parse, unbound_reads
from dg_lsp.context.bindings.python_attributes import unbound_attributes
from dg_lsp.context.bindings.script_names import LANGUAGES, script_unbound, unbound_script_reads
from dg_lsp.context.windows import cursor_offset


def _applied(document: str, start: tuple[int, int], end: tuple[int, int], text: str) -> tuple[int, int, str]:
    """(start offset, end offset, the document with `text` over [start, end))."""
    at, to = cursor_offset(document, *start), cursor_offset(document, *end)
    return at, to, document[:at] + text + document[to:]


def _unbound(source: str, start: int, end: int) -> list[tuple[str, int]]:
    """The names and `self` attributes read in `source[start:end]` that nothing binds, in source order."""
    tree = parse(source)
    if tree is None:
        return []
    return sorted(unbound_reads(source, start, end, tree) + unbound_attributes(source, start, end, tree),
                  key=lambda read: read[1])


def unbound_names(document: str, start: tuple[int, int], end: tuple[int, int], text: str,
                  language: str | None) -> list[tuple[str, int]]:
    """(name, offset in `text`) of each name `text`, put over [start, end) of `document` ((line, column) positions),
    reads (or finishes) where nothing binds it; [] outside Python, JavaScript, TypeScript and PHP, or where nothing is
    known."""
    if (language not in ("python", "php") and language not in LANGUAGES) or not text.strip():
        return []
    at, _, applied = _applied(document, start, end, text)
    if language == "python":
        reads = _unbound(applied, at, at + len(text))
    elif language == "php":
        reads = unbound_php_reads(applied, at, at + len(text))
    else:
        reads = unbound_script_reads(applied, at, at + len(text), language)
    # a name typed before the cursor and finished by `text` starts before it: at 0
    return [(name, max(0, offset - at)) for name, offset in reads]


def fill_names(document: str, start: tuple[int, int], end: tuple[int, int], text: str,
               language: str | None) -> tuple[list[str], list[str]]:
    """For a selection fill `text` over [start, end) of `document`: the names it reads (or finishes) where nothing
    binds them, once each; where there are none, the names the code around it reads unbound more often than without
    it (jinja2's `url_quote`: `rv = quote_from_bytes(obj, safe)` selected and replaced, so `rv = rv.replace(...)`
    below reads `rv` before anything binds it). The document with the fill is read once, the document without it
    only where the code around the fill reads a name unbound. ([], []) outside Python, JavaScript, TypeScript and
    PHP, or where nothing is known."""
    if language in LANGUAGES:
        return _fill_names_by(document, start, end, text, lambda s, a, b: unbound_script_reads(s, a, b, language),
                                  lambda s: script_unbound(s, language))
    if language == "php":
        return _fill_names_by(document, start, end, text, unbound_php_reads, php_unbound)
    if language != "python":
        return [], []
    at, to, applied = _applied(document, start, end, text)
    tree = parse(applied)
    if tree is None:
        return [], []
    reads = unbound_reads(applied, 0, len(applied), tree)
    # in the fill: it starts before the fill's end and ends after its start (a word typed before it, finished in it)
    inside = [name for name, offset in reads if offset < at + len(text) and offset + len(name) > at]
    inside += [name for name, _ in unbound_attributes(applied, at, at + len(text), tree)]
    if inside:
        return list(dict.fromkeys(inside)), []
    after = Counter(name for name, _ in reads + unbound_attributes(applied, 0, len(applied), tree))
    if not after:
        return [], []
    before = Counter(name for name, offset in _unbound(document, 0, len(document)) if not at <= offset < to)
    return [], sorted(after - before)


def _fill_names_by(document: str, start: tuple[int, int], end: tuple[int, int], text: str,
                       reads_in: Callable[[str, int, int], list[tuple[str, int]]],
                       unbound_all: Callable[[str], list[tuple[str, int]] | None]) -> tuple[list[str], list[str]]:
    """`fill_names` in JavaScript, TypeScript and PHP: the names the fill reads unbound (`reads_in`: a span's), else
    those the code around it reads unbound more often than without it (`unbound_all`: a whole document's; the fill
    dropped a declaration they need)."""
    at, to, applied = _applied(document, start, end, text)
    inside = reads_in(applied, at, at + len(text))
    if inside:
        return list(dict.fromkeys(name for name, _ in inside)), []
    after = unbound_all(applied)
    if not after:
        return [], []
    # the fill's own reads (a word it finishes too) are judged above, or not known: only the code around it counts
    around = Counter(name for name, offset in after if not (offset < at + len(text) and offset + len(name) > at))
    before = unbound_all(document)
    if not around or before is None:
        return [], []
    return [], sorted(around - Counter(name for name, offset in before
                                       if not (offset < to and offset + len(name) > at)))


def without_unbound(text: str, document: str, start: tuple[int, int], end: tuple[int, int], language: str | None,
                    clean: Callable[[str], bool]) -> str:
    """`text` where it reads no unbound name; else its whole lines before the first line that reads one (with the
    last one's line break where `text` ends in one), where there are any and `clean` passes them; else ""."""
    reads = unbound_names(document, start, end, text, language)
    if not reads:
        return text
    cut = text.rfind("\n", 0, reads[0][1])
    # a text that ends its lines (a whole-line hole's) keeps its last line break; one that starts them does not
    kept = "" if cut < 0 else text[:cut + 1] if text.endswith("\n") else text[:cut]
    return kept if kept.strip() and clean(kept) else ""
