"""The syntax gate's structure rules (`gate.clean_cut` runs them before every reading of the window): eight rules,
outside Python and where the hole is not inside a string or comment (the first two read the code as `brackets`
scans it):
- where the hole lost the opener of the block it lies in (the closer that ends that block meets another kind of
  bracket, a `}` is indented deeper than the `{` it closes, or closes nothing in a window that starts the file:
  `class X extends Y {`, `if (json) {`, `static params = [` or `new Class({` was at the hole), a text must give that
  opener back (`brackets.lost_opener`, `brackets.gives_back`). The file without the text is broken there, and a
  text that leaves it as broken adds no error, so no error count refuses it;
- a text must leave no more line-leading `}` from the hole on indented deeper than the `{` they close, or closing
  none, than there were (`misaligned_closers(deeper=True)`): a `}` that ends a block early, which the window's error
  count misses where the lines below, past the block, read as valid code;
- in the languages whose blocks indent their bodies (not C and C++: `namespace x {`), a text must not end its line
  opening a `{` over a next line indented no deeper that does not close it (`_opens_a_block_over_its_level`);
- in JavaScript and TypeScript, a text must add no early error that tree-sitter parses as valid code, in the window
  or in the scope's lines alone: a name declared again in its block where one declaration is `let`, `const` or
  `class` (or over a parameter), a `const` with no value, a reserved word as a name, `await` as a name where it is
  a keyword (`bindings.early_errors`; npm's `const from = from.name` over the parameter `from`). Node and tsc
  refuse the whole file. In C, C++ and Java, likewise a local declared again in its block or over a parameter; in
  Java, a statement after a `return`, `throw`, `break` or `continue` (javac: "unreachable statement"); in Go, a
  name declared again in its block, or a `:=` with no new name; in Go and Java, a `return` with the wrong count
  of values; in Rust, `self` in a function that takes none (rustc's E0424) and a value (`self.thread_id`) left as
  the last expression of a function that returns nothing (E0308); in all of them and PHP, a `break` or `continue`
  with no loop (or switch) around it in its function (`bindings.jumps`);
- a statement the text starts, in a block, must not take in the code line after the text, indented no deeper than
  the line it starts on (`takes_the_next_line`): `if (cls != null)` or `final` alone over the user's next line
  make that line part of them (javac: "variable declaration not allowed here");
- a text must not open a `/*` comment it does not close (`opens_block_comment`);
- outside Go, a line the text ends, over a `{` alone on the next line at its indentation (GNU and Allman styles),
  must head that block: with the text it must not parse as a block standing alone (`leaves_a_bare_block`);
- no ERROR node may start inside the text (`_error_inside`): a text that does not parse where it stands is refused
  however many errors elsewhere it mends (`sync function run() {` in a class body).
"""

from __future__ import annotations

import re

from dg_lsp.completion.brackets import (ends_in_literal, gives_back, indent_width, lost_opener, misaligned_closers,
                                        open_spans)
from dg_lsp.completion.gate_end_blocks import block_judge
from dg_lsp.context.bindings import early_errors
from dg_lsp.context.document import leading_whitespace
from dg_lsp.context.end_blocks import reading
from dg_lsp.context.syntax import error_spans, parsed

# brace languages whose code indents a block's body (C and C++ leave `namespace x {` and `extern "C" {` bodies
# unindented)
_INDENTED = ("javascript", "typescript", "tsx", "java", "go", "rust", "csharp", "php")


def structure_judge(prefix: str, suffix: str, language: str, prefix_truncated: bool,
                     scope: tuple[str, str] | None = None):
    """The eight rules of the module's docstring, as a test of a text: it leaves the hole's block without the opener
    the hole lost (`brackets.lost_opener` of the window without it), closes a block early (more closers out of line
    than the window has without it), opens a block over lines of its own level, adds an early error (JavaScript,
    TypeScript; a local declared twice in C, C++, Java, C#, Go; Java's unreachable code; a `return` with the wrong count
    of values in Go and Java; Rust's `self` outside a method and a value ending a function of `()`; a stray `break`
    or `continue`, PHP's too), starts a
    statement that takes in the next line, opens a `/*` comment it does not close, leaves the `{` alone on the line
    below a bare block, or does not parse where it stands.
    None in Python, and where the hole is inside a string or comment (there the scan reads the text after the hole
    as the literal's, which the text may end)."""
    if language == "python" or ends_in_literal(prefix, language):
        return None
    lost = lost_opener(prefix, suffix, language, prefix_truncated)
    aligned = misaligned_closers(prefix + suffix, language, len(prefix), deeper=True)
    # the window, and the scope's lines alone, where a window cut inside a function leaves its block broken
    regions = [(prefix, suffix)] + ([scope] if scope is not None and scope != (prefix, suffix) else [])
    early = [early_errors(p + s, language) for p, s in regions]
    keyword_blocks = block_judge(prefix, suffix, language) if reading(language) is not None else None

    def breaks(text: str) -> bool:
        whole = prefix + text + suffix
        if lost is not None and not gives_back(whole, lost[0] + len(text), lost[1], language):
            return True
        if misaligned_closers(whole, language, len(prefix), deeper=True) > aligned:
            return True
        if language in _INDENTED and _opens_a_block_over_its_level(prefix, text, suffix, language):
            return True
        if keyword_blocks is not None:
            if keyword_blocks(text):
                return True
        elif takes_the_next_line(prefix, text, suffix, language) or opens_block_comment(prefix, text, language) \
                or language != "go" and leaves_a_bare_block(prefix, text, suffix, language):
            return True
        if any(early_errors(p + text + s, language) - n for (p, s), n in zip(regions, early)):
            return True  # JavaScript, TypeScript, C, C++, Java, C#, Go, Rust and PHP only
        return _error_inside(prefix, text, suffix, language)
    return breaks


def opens_block_comment(prefix: str, text: str, language: str) -> bool:
    """Whether `text` (after `prefix`) starts a `/*` comment it does not close, outside a string or line comment: it
    would take in the code below it up to some later `*/`. Tree-sitter reads most such texts as a comment running on
    (`syntax.opens_unclosed_literal`), but PHP's grammar reads an unclosed `/**` as stray tokens, and in a window
    already broken there (a method's header line missing) those can count as fewer errors than without it. A `\\/*`
    is no comment (an escaped slash in a JavaScript regex)."""
    at = text.rfind("/*")
    return at >= 0 and text[at - 1:at] != "\\" and "*/" not in text[at + 2:] and \
        not ends_in_literal(prefix + text[:at], language)


def _error_inside(prefix: str, text: str, suffix: str, language: str) -> bool:
    """Whether tree-sitter puts an ERROR node that starts inside `text` (after its first character) in the window
    with it: the text itself does not parse where it stands (`sync function run() {` in a class body), however many
    errors elsewhere it mends."""
    start = len(prefix.encode("utf-8"))
    end = start + len(text.rstrip().encode("utf-8"))
    return any(kind == "ERROR" and start < a < end for kind, a, _ in error_spans(prefix + text + suffix, language))


def _opens_a_block_over_its_level(prefix: str, text: str, suffix: str, language: str) -> bool:
    """Whether `text` ends its line opening a `{` (left open after it) over a next code line that is indented no deeper
    and does not close it: a block header put over statements of its own level (`qrcode.modules.forEach(function
    (row) {` over `var borderTop = ...`, `edTarget) {` over the next `if`), whose `}` nothing in its place gives."""
    head = (prefix + text).rstrip()
    if not head.endswith("{") or heads_deeper_lines(prefix, text, suffix):
        return False
    spans = open_spans(head, language)
    if not spans or spans[-1][1] != len(head) - 1:
        return False  # the `{` is in a string or comment, or closed
    rest, *lines = (prefix + text + suffix)[len(head):].split("\n")
    if rest.strip():
        return False  # the line goes on after the `{` (an auto-paired `}` or `)`): not a block's header alone
    below = next((line for line in lines if line.strip()), None)
    return below is not None and not below.lstrip().startswith("}")


# where a statement stands among others: a function's body, a block (a file's top level and a class body are not
# read, where an annotation, a decorator or an attribute alone on its line rightly heads the declaration below it)
_STATEMENT_LISTS = frozenset({"block", "compound_statement", "statement_block", "statement_list",
                              "switch_block_statement_group", "constructor_body", "switch_case", "switch_default",
                              "case_statement", "expression_case", "default_case", "switch_section"})


_CODE = re.compile(r"\S")


def takes_the_next_line(prefix: str, text: str, suffix: str, language: str) -> bool:
    """Whether a statement that starts in `text`, in a block, takes in the next code line after the text's last
    line, indented no deeper than the line it starts on: a header with no braces (`if (cls != null)` over the
    user's `final Class<?> cls = ...`: javac's "variable declaration not allowed here") or a modifier alone (`final`
    over `d = ...`) makes the user's next line part of it, and a line of JavaScript without its semicolon runs into
    a next line that starts with `(` or `[`. Not where code follows the text on its own line, nor over a `{` on a
    line of its own (GNU and Allman styles), nor a block the text opens, a label or an ERROR node (the other rules
    read those)."""
    whole = prefix + text + suffix
    start, end = len(prefix), len(prefix) + len(text.rstrip())
    line_end = whole.find("\n", end)
    if end == start or line_end < 0 or whole[end:line_end].strip():
        return False
    below = _CODE.search(whole, line_end)
    if below is None or below.group() == "{":
        return False  # a block's `{` on a line of its own (GNU and Allman styles) is the header's
    at, begin = len(whole[:below.start()].encode("utf-8")), len(prefix.encode("utf-8"))
    node = parsed(whole, language).root_node.descendant_for_byte_range(at, at + 1)  # _error_inside's parse too
    while node is not None and node.start_byte >= at:  # the innermost node that starts before the next line
        node = node.parent
    while node is not None and node.parent is not None and node.type not in _STATEMENT_LISTS \
            and node.parent.type not in _STATEMENT_LISTS:
        node = node.parent  # the statement it is part of
    if node is None or node.parent is None or node.start_byte < begin \
            or node.type in _STATEMENT_LISTS or node.type in ("ERROR", "labeled_statement"):
        return False  # a block the text opens is `_opens_a_block_over_its_level`'s; Go's list starts at its first line
    head = len(whole.encode("utf-8")[:node.start_byte].decode("utf-8", "replace"))
    return indent_width(whole[whole.rfind("\n", 0, below.start()) + 1:below.start()]) \
        <= indent_width(whole[whole.rfind("\n", 0, head) + 1:head])


# a `{` ... `}` that stands alone as a statement, and what holds such statements
_BARE_BLOCKS = frozenset({"block", "compound_statement", "statement_block"})
_BLOCK_HOLDERS = frozenset({"program", "translation_unit", "compilation_unit", "source_file", "global_statement",
                            "block", "compound_statement", "statement_block", "declaration_list", "class_body",
                            "expression_statement"})


def leaves_a_bare_block(prefix: str, text: str, suffix: str, language: str) -> bool:
    """Whether the line `text` ends (with the rest of it after the text) is followed by a `{` alone on its line, at
    that line's indentation, that parses as a block standing alone with the text: the line heads that block in the
    GNU and Allman styles (`public class Ping`, `var c = new Container(cfg =>`), and a text that heads none there
    (`using System.Threading;`, a statement) leaves the block's lines a bare block, which the window's error count
    misses: the file was as broken without it. (Where the parse puts that `{` in an ERROR, nothing is read: a window
    cut inside a class does so for right answers too.) Not in Go, where a `{` alone on its line is a bare block."""
    whole = prefix + text + suffix
    start, end = len(prefix), len(prefix) + len(text.rstrip())
    line_end = whole.find("\n", end)
    if end == start or line_end < 0:
        return False
    below = _CODE.search(whole, line_end)
    if below is None or below.group() != "{":
        return False
    below_end = whole.find("\n", below.start())
    if whole[below.start() + 1:below_end if below_end >= 0 else len(whole)].strip() \
            or whole[whole.rfind("\n", 0, below.start()) + 1:below.start()] != \
            leading_whitespace(whole[whole.rfind("\n", 0, end) + 1:line_end]):
        return False  # code after the `{` on its line, or the `{` at another indentation than the text's line
    at = len(whole[:below.start()].encode("utf-8"))
    node = parsed(whole, language).root_node.descendant_for_byte_range(at, at + 1)
    block = node.parent if node is not None else None
    if block is None:
        return False
    return block.type in _BARE_BLOCKS and block.parent is not None and block.parent.type in _BLOCK_HOLDERS


def heads_deeper_lines(prefix: str, text: str, suffix: str) -> bool:
    """Whether the next line with code after the one `text` ends on (its last code, with the rest of that line) is
    indented deeper than it: the text heads lines already below (`} el` + `se {` over the else's body)."""
    end = len((prefix + text).rstrip())
    if end == 0:
        return False
    whole = prefix + text + suffix
    head, *rest = whole[whole.rfind("\n", 0, end) + 1:].split("\n")
    below = next((line for line in rest if line.strip()), None)
    return below is not None and indent_width(below) > indent_width(head)
