"""Brackets in code text, outside strings and comments: which are still open at the end of a text.

Shared by post-processing's string rules (completion/postprocess.py: closers the suffix already has, where a
statement ends) and the syntax gate (completion/gate.py: how far the scope reaches for a block a text opens, whether a
text gives back the opener its hole lost, whether it closes a block early)."""

from __future__ import annotations

import functools
import itertools
import re

from dg_lsp.completion.bash_brackets import bash_brackets

PAIRS = {")": "(", "]": "[", "}": "{"}  # each closer's opener
QUOTES = ('"""', "'''", '"', "'", "`")  # the string delimiters `open_brackets` skips over, longest first
# where a line comment starts, by canonical language name (context/languages.py); any other language, or none: both
# (`#` starts a private name in JavaScript and a preprocessor line in C, `//` divides in Python)
LINE_COMMENTS = {"python": ("#",), **{name: ("//",) for name in
                                       ("javascript", "typescript", "tsx", "go", "rust", "java", "c", "cpp",
                                        "csharp")}, "php": ("//", "#"), "ruby": ("#",), "lua": ("--",),
                 "bash": ("#",)}
ANY_COMMENTS = ("#", "//")
REGEX_LANGUAGES = ("javascript", "typescript", "tsx")  # a `/` may start a regex literal (`_regex_end`)
# after these a `/` starts an operand (a regex), after anything else it divides
_REGEX_AFTER = set("(,=:[!&|?{};+-*%<>~^")
_REGEX_KEYWORDS = ("return", "typeof", "case", "do", "else", "in", "of", "new", "delete", "void", "throw", "yield",
                   "await")


def open_brackets(text: str, language: str | None = None) -> list[str]:
    """The brackets still open at the end of `text`, outermost first. Brackets inside string literals
    (one-line quotes, triple quotes, backticks) and line comments (`#` in Python, `//` in the brace languages,
    both for any other language or none) do not count; a closer with no opener is ignored (it closes something
    before `text`)."""
    return _scan(text, [], language)[0]


def open_counts(text: str, offsets: list[int], language: str | None = None, recover: bool = False) -> list[int]:
    """How many brackets are open (as `open_brackets` counts them) at each of the ascending `offsets` of `text`:
    `len(open_brackets(text[:k], language))` for each k, in one pass over `text`. With `recover`, a closer that
    does not match the innermost open bracket closes the nearest one it matches, and those inside it with it (as a
    parser recovers: the `}` under `if (by` closes the `(` and the block), where `open_brackets` ignores it."""
    return _scan(text, offsets, language, recover=recover)[1]


def misaligned_closers(text: str, language: str | None = None, start: int = 0, deeper: bool = False) -> int:
    """How many `}` that start their line close no `{`, or a `{` whose line is indented otherwise: block closers out
    of line with their openers, as where a block's opening line is missing and its `}` closes the block around it
    (or, at the start of a text, nothing) instead. Only the closers from offset `start` on count (the brackets
    before it still open what they open). With `deeper`, only those indented deeper than their `{`'s line (or that
    close none): a block closed early, or one whose opener is missing, not a `{` at the end of a condition's
    continuation line, indented deeper than the statement's `}`."""
    return _scan(text, [], language, start, deeper=deeper)[2]


def open_spans(text: str, language: str | None = None) -> list[tuple[str, int, int]]:
    """The brackets still open at the end of `text` (as `open_brackets` finds them), outermost first, each as
    (bracket, its offset in `text`, the indentation of its line for a `{`, else 0)."""
    return _scan(text, [], language, spans=True)[0]


def ends_in_literal(text: str, language: str | None = None) -> bool:
    """Whether `text` ends inside a string literal or a line comment, as `open_brackets` reads them (a bracket put
    at its end would not count)."""
    return next(reversed(list(_brackets(text + "(", language))), None) != (len(text), "(")


def first_unopened_closer(text: str, start: int, language: str | None = None) -> int | None:
    """The offset of the first closer from offset `start` on that meets nothing open (as `open_brackets` scans `text`
    from its start): in a window that starts inside a block, the closer of a block opened above it."""
    return next((i for i, ch, _, met in _meetings(text, language) if ch in PAIRS and met is None and i >= start), None)


def block_end(text: str, at: int, language: str | None = None) -> tuple[int, tuple[str, int] | None] | None:
    """The first closer after offset `at` that meets the brackets open at `at`, not one opened after it (the end of the
    innermost block `at` lies in, whatever the closer matches), as (its offset, what it meets: as
    `line_closers` gives it). None where `text` has none."""
    depth = None
    for i, ch, open_before, met in _meetings(text, language):
        if depth is None and i >= at:
            depth = open_before
        if ch in PAIRS and open_before == depth:
            return i, met
    return None


def line_closers(text: str, at: int, language: str | None = None) -> list[tuple[int, str, tuple[str, int] | None]]:
    """Each closer from offset `at` to the end of its line, with the bracket it meets there (as `open_brackets`
    scans: a mismatched closer closes nothing), as (offset, closer, (bracket, indentation of its line for a `{`,
    else 0)); None where nothing is open. A closer inside a string or comment is none."""
    end = text.find("\n", at)
    end = len(text) if end < 0 else end
    return [(i, ch, met) for i, ch, _, met in itertools.takewhile(lambda m: m[0] < end, _meetings(text, language))
            if ch in PAIRS and i >= at]


def _meetings(text: str, language: str | None):
    """Each bracket of `text` (`_brackets`) as (offset, bracket, how many were open before it, what a closer meets:
    the innermost open bracket as (bracket, indentation of its line for a `{`, else 0), None where nothing is open
    or for an opener). A closer closes what it meets where it matches it, else nothing (as `open_brackets`)."""
    stack: list[tuple[str, int]] = []
    for i, ch in _brackets(text, language):
        if ch in "([{":
            yield i, ch, len(stack), None
            stack.append((ch, _line_indent(text, i) if ch == "{" else 0))
            continue
        met = stack[-1] if stack else None
        yield i, ch, len(stack), met
        if met is not None and met[0] == PAIRS[ch]:
            stack.pop()


def lost_opener(prefix: str, suffix: str, language: str,
                 prefix_truncated: bool) -> tuple[int, tuple[str, int | None]] | None:
    """The line-leading closer that ends the block the hole lies in, as (its offset in `prefix + suffix`, the opener it
    must meet: (bracket, the indentation of a `{`'s line, or None for any)), where the hole lost that block's opener
    or left a bracket open: the closer meets a bracket of another kind (`  ]` under a class's `{`: `static params = [`
    was at the hole; `}` under a call's `(` the hole left open: where the hole's line heads the block, a `{` on
    a line at the `}`'s depth), a `}` is indented deeper than the `{` it closes (a
    block's around it: `if (json) {` or `new Class({` was at the hole), or nothing is open there: in a window that
    starts the file (`class InstallTest extends Install {`), or in one that starts inside a block whose closer this
    is, where the code line above the hole is indented no deeper than the closer (the block's body is below the
    hole, not around it: `public View getView() {` under `@Override`). A text must then give that opener back
    (`gives_back`).
    None where the block's end stands, lies past the window, or does not start its line, and in Python. A `}` indented
    less than its `{` is a block still being written (`if (x) {` typed over a function's `}`): not this."""
    if language == "python":
        return None
    whole = prefix + suffix
    end, meets = block_end(whole, len(prefix), language) or (0, None)
    closer = whole[end:end + 1]
    if closer not in PAIRS or end < len(prefix):
        return None
    if whole[whole.rfind("\n", 0, end) + 1:end].strip() and not (
            closer in ")]" and meets is not None and meets[0] != PAIRS[closer]
            and ("\n" in whole[len(prefix):end] or prefix.endswith("\n"))):
        return None  # not line-leading: only a `)` or `]` that meets a `{`, on a line below the hole's or a
        # whole-line hole's (the last line of a call whose first was at the hole: `EXPECT_EQ(` over `  args);`)
    indent = end - whole.rfind("\n", 0, end) - 1
    # a lost block's body lies between the hole and its closer, indented deeper than the closer (its first line that
    # is no preprocessor directive: `#if` sits at column 0 inside a function)
    lines = whole[len(prefix):end].split("\n")  # from the hole on; the first is the rest of its line, if it has text
    body = next((line for line in lines[0 if prefix.endswith("\n") or not prefix else 1:]
                 if line.strip() and not _directive(line, language)), "")
    body_deeper = indent_width(body) > indent
    if meets is not None and meets[0] != PAIRS[closer]:
        # a `}` at the depth of the hole's line, over that body: the line heads the block, whose `{` must come back
        # at that depth (`foreach ($selectedCho` + `ices as $k => $v)` closed the `(` and left the `}` to the
        # function's `{`); else any `{` (prettier's `? {` puts an object's `}` deeper than its `{`'s line)
        line = prefix[prefix.rfind("\n") + 1:]
        if closer == "}" and line.strip() and indent_width(line) == indent and body_deeper:
            return end, ("{", indent)
        return end, (PAIRS[closer], None)
    # where the body is not deeper, the block lost its opener elsewhere (a brace deleted lines above), and the hole
    # need not give it back
    if not body_deeper:
        return None
    if meets is None:  # nothing open: in a window that starts the file, nothing at all; else opened above it
        above = next((line for line in reversed(prefix.split("\n")[:-1]) if line.strip()), None)
        if prefix_truncated and (above is None or len(above) - len(above.lstrip(" \t")) > indent):
            return None  # the hole lies in that block's body, under the lines above it
        return end, (PAIRS[closer], None)
    if closer == "}" and indent > meets[1]:
        return end, ("{", indent)
    return None


def _directive(line: str, language: str) -> bool:
    """Whether `line` is a C, C++ or C# preprocessor directive, which sits at column 0 inside a body."""
    return language in ("c", "cpp", "csharp") and line.lstrip().startswith("#")


def gives_back(text: str, at: int, opener: tuple[str, int | None], language: str) -> bool:
    """Whether the closer at offset `at` of `text` (a text in its hole) meets `opener` (`lost_opener`: a bracket of
    its kind, a `{` at the given indentation), and each closer after it on its line one of its own kind: `foo({` over
    `})`, not `if (x) {`. Not where the text put that closer inside a string or comment."""
    closers = line_closers(text, at, language)
    if not closers or closers[0][0] != at:
        return False
    (_, _, meets), *rest = closers
    return (meets is not None and meets[0] == opener[0] and opener[1] in (None, meets[1])
            and all(met is not None and met[0] == PAIRS[closer] for _, closer, met in rest))


def _brackets(text: str, language: str | None):
    """Each bracket of `text` outside string literals, line comments and (JavaScript, TypeScript) regex literals, as
    (offset, bracket), in order. In Rust a `'` starts a char literal only where one closes it (`'{'`, `'\\n'`): else
    it is a lifetime or a label (`Bound<'_, PyModule>`), not a string."""
    if language == "bash":
        yield from bash_brackets(text)
        return
    comments = LINE_COMMENTS.get(language, ANY_COMMENTS)
    regex = language in REGEX_LANGUAGES
    marks = _marks(comments, regex)
    i = 0
    while True:
        m = marks.search(text, i)
        if m is None:
            return
        i = m.start()
        ch = text[i]
        if ch in "([{)]}":
            yield i, ch
            i += 1
            continue
        if ch == "#" and language == "php" and text.startswith("#[", i):  # an attribute, not a comment
            i += 1
            continue
        if any(text.startswith(c, i) for c in comments):
            i = text.find("\n", i)
            if i < 0:
                return
            continue
        if ch == "/" and regex:
            end = _regex_end(text, i)
            if end is not None:
                i = end
                continue
        quote = next((q for q in QUOTES if text.startswith(q, i)), None)
        if quote == '"' and language == "csharp" and text[i - 1:i] == "@":  # a verbatim string: `\` escapes nothing
            i = _verbatim_end(text, i)
            continue
        if quote == "'" and language == "rust":  # a char literal, or a lifetime or label (`'_`, `'a:`) that opens none
            char = _RUST_CHAR.match(text, i)
            i = char.end() if char else i + 1
            continue
        i = i + 1 if quote is None else _string_end(text, i, quote)


_RUST_CHAR = re.compile(r"'(?:\\(?:u\{[0-9a-fA-F]{1,6}\}|x[0-9a-fA-F]{2}|.)|[^'\\\n])'")


@functools.cache
def _marks(comments: tuple[str, ...], regex: bool) -> re.Pattern:
    """Where `_brackets` has something to look at: a bracket, a quote, a comment's first character, a `/`."""
    chars = set("()[]{}") | {q[0] for q in QUOTES} | {c[0] for c in comments} | ({"/"} if regex else set())
    return re.compile("[" + re.escape("".join(sorted(chars))) + "]")


@functools.cache
def _string_stops(quote: str) -> re.Pattern:
    """Where a string opened with `quote` may end: its quote, a backslash, or (one-line quotes) a line break."""
    multi = len(quote) == 3 or quote == "`"
    return re.compile("[" + re.escape(quote[0] + "\\" + ("" if multi else "\n")) + "]")


def _verbatim_end(text: str, i: int) -> int:
    """The offset after C#'s verbatim string literal (`@"..."`, `$@"..."`) whose quote is at offset `i`: no escapes,
    `""` is a quote, line breaks are the string's (past the text's end for one never closed)."""
    i += 1
    while True:
        k = text.find('"', i)
        if k < 0:
            return len(text) + 1
        if not text.startswith('""', k):
            return k + 1
        i = k + 2


def _string_end(text: str, i: int, quote: str) -> int:
    """The offset after the string literal that `quote` opens at offset `i` (after the line break that ends an
    unclosed one-line string; past the text's end for one never closed)."""
    stops = _string_stops(quote)
    i += len(quote)
    while True:
        m = stops.search(text, i)
        if m is None:
            return len(text) + len(quote)
        i = m.start()
        if text[i] == "\\":
            i += 2
        elif text[i] == "\n" or text.startswith(quote, i):
            return i + len(quote)
        else:
            i += 1


def _regex_end(text: str, i: int) -> int | None:
    """Where the JavaScript regex literal that starts with the `/` at offset `i` ends (after its flags), or None where
    that `/` divides (it follows an operand: a name, a number, a closing `)` or `]`) or no closing `/` ends the line.
    So `/^https?:\\/\\//` does not read as a `//` comment, nor `/[{(]/` as brackets."""
    j = i - 1
    while j >= 0 and text[j] in " \t\r\n":
        j -= 1
    if j >= 0 and text[j] not in _REGEX_AFTER:
        if not (text[j].isalpha() and any(text.endswith(k, 0, j + 1) and (j < len(k) or not _word(text[j - len(k)]))
                                          for k in _REGEX_KEYWORDS)):
            return None
    k, in_class, n = i + 1, False, len(text)
    if k < n and text[k] in "/*":
        return None  # a comment
    while k < n and text[k] != "\n":
        ch = text[k]
        if ch == "\\":
            k += 2
            continue
        if ch == "[":
            in_class = True
        elif ch == "]":
            in_class = False
        elif ch == "/" and not in_class:
            k += 1
            while k < n and _word(text[k]):
                k += 1
            return k
        k += 1
    return None


def _word(ch: str) -> bool:
    return ch.isalnum() or ch in "_$"


def _scan(text: str, offsets: list[int], language: str | None, start: int = 0,
          spans: bool = False, recover: bool = False, deeper: bool = False) -> tuple[list, list[int], int]:
    """The brackets open at the end of `text` (with `spans`, `open_spans`' tuples), how many are open at each of the
    ascending `offsets`, and how many line-leading `}` from offset `start` on close no `{` or one of another
    indentation. With `recover`, `open_counts`' reading of a closer that meets another open bracket."""
    stack: list[tuple[str, int, int]] = []  # (bracket, indentation of its line, offset)
    counts: list[int] = []
    misaligned = 0
    for i, ch in _brackets(text, language):
        while len(counts) < len(offsets) and offsets[len(counts)] <= i:
            counts.append(len(stack))  # an offset inside a string or comment: what was open where it began
        if ch in "([{":
            stack.append((ch, _line_indent(text, i) if ch == "{" else 0, i))
            continue
        matched = bool(stack) and stack[-1][0] == PAIRS[ch]
        if ch == "}" and i >= start and not text[text.rfind("\n", 0, i) + 1:i].strip():  # a line-leading `}`
            indent = _line_indent(text, i)
            misaligned += not matched or (stack[-1][1] < indent if deeper else stack[-1][1] != indent)
        if matched:
            stack.pop()
        elif recover and any(b == PAIRS[ch] for b, _, _ in stack):
            while stack.pop()[0] != PAIRS[ch]:
                pass
    counts += [len(stack)] * (len(offsets) - len(counts))
    if spans:
        return [(c, offset, indent) for c, indent, offset in stack], counts, misaligned
    return [c for c, _, _ in stack], counts, misaligned


def indent_width(line: str) -> int:
    """How many blanks (spaces, tabs) a line starts with."""
    return len(line) - len(line.lstrip(" \t"))


def _line_indent(text: str, i: int) -> int:
    """The indentation width of the line of `text` that holds offset `i`."""
    return indent_width(text[text.rfind("\n", 0, i) + 1:i])
