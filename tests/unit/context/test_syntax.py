"""Syntax error counts used to tie-break and score completions."""

from __future__ import annotations

import pytest

from dg_lsp.context import introduces_syntax_errors, syntax_error_count


@pytest.mark.parametrize(
    ("language", "valid", "broken"),
    [
        ("python", "def f(x):\n    return x\n", "def f(x:\n    return x\n"),
        ("javascript", "function f(x) { return x; }\n", "function f(x { return x; }\n"),
        ("typescript", "const x: number = 1;\n", "const x: number = ;\n"),
        ("tsx", "const a = <div>{x}</div>;\n", "const a = <div>{x</div>;\n"),
        ("go", "package m\nfunc f() int { return 1 }\n", "package m\nfunc f() int { return 1\n"),
        ("rust", "fn f() -> i32 { 1 }\n", "fn f() -> i32 { 1 \n"),
        ("java", "class A { int f() { return 1; } }\n", "class A { int f() { return 1 } }\n"),
        ("c", "int f(void) { return 1; }\n", "int f(void) { return 1 }\n"),
        ("cpp", "int f() { return 1; }\n", "int f() { return (1; }\n"),
    ],
)
def test_counts_errors_only_in_broken_code(language, valid, broken):
    assert syntax_error_count(valid, language) == 0
    assert syntax_error_count(broken, language) >= 1
    assert introduces_syntax_errors(valid, broken, language) is True
    assert introduces_syntax_errors(broken, valid, language) is False


def test_counts_missing_and_error_nodes():
    # One MISSING ")" and nothing else.
    assert syntax_error_count("print(1\n", "python") == 1
    assert syntax_error_count("x = (1,\ny = 2\nz = [3\n", "python") >= 2


def test_same_error_count_is_not_an_introduction():
    before = "def f(:\n    pass\n"
    after = "def f(:\n    return 1\n"
    assert syntax_error_count(before, "python") == syntax_error_count(after, "python") > 0
    assert introduces_syntax_errors(before, after, "python") is False


def test_unknown_language_is_error_free():
    assert syntax_error_count("{{{ ((( ", "plaintext") == 0
    assert syntax_error_count("{{{", None) == 0
    assert introduces_syntax_errors("", "{{{", "cobol") is False


def test_lsp_language_ids_are_accepted():
    assert syntax_error_count("const a = <b>{x</b>;", "typescriptreact") >= 1
    assert syntax_error_count("int f() { return 1; }", "c++") == 0


@pytest.mark.parametrize("prefix,text,suffix,mends", [
    # the statement being written, finished; the line after it is its body
    ("def f(v):\n    if v:\n        x = 1\n    elif v i", "s not None:", "\n        y = 2\n", True),
    # the window cut mid-statement lines below: Python's complaint there is past the text
    ("def f(v):\n    if v i", "s None:", "\n        y = 1\n        z = foo(1,\n", True),
    # still unfinished: the complaint stays on the cursor's line
    ("def f(v):\n    if v i", "s not", "\n        y = 1\n", False),
    # it finishes its own line but not the next one's: foo(a, c) then a line indented into nothing
    ("x = foo(a,", " c)", "\n      b)\n", False),
    # the window compiled without it: not a statement it finishes (clean_cut asks that it still compiles)
    ("x = 1", "0", "\n", False),
    # a complaint above the cursor: nothing to judge by
    ("def f(:\n    x = fo", "o(1)", "\n", False),
    # a text that adds a line: the complaint further down (`except` with no `try`) may be its own
    ("def f(d):\n", "    if d:\n", "        d = 1\n    except ValueError:\n        return 0\n", False),
])
def test_python_mends_a_statement_the_cursor_is_in(prefix, text, suffix, mends):
    from dg_lsp.context.python_syntax import python_mends

    assert python_mends(prefix, text, suffix) is mends


@pytest.mark.parametrize("prefix,text,suffix,leaves", [
    # continuation lines whose call starts at the hole: a comment there leaves them dangling, the call's start not
    ("def f(p):\n    if p:\n", "        # p is set\n", "            'no p')\n    return p\n", True),
    ("def f(p):\n    if p:\n", "        raise ValueError(\n", "            'no p')\n    return p\n", False),
    # dict entries under a missing `ops = {`: Python's complaint is at the closing brace, lines below the hole
    ("def g():\n    pass\n\n", "# the ops\n", '    "a": 1,\n    "b": 2,\n    }\n\nx = 1\n', True),
    ("def g():\n    pass\n\n", "ops = {\n", '    "a": 1,\n    "b": 2,\n    }\n\nx = 1\n', False),
    # it mends one line and not the next: the bytes go on over two more lines
    ("x = 1\n", "for c in b'ab':\n", "          b'cd'\n          b'ef'):\n    m[c] = c\n", True),
    ("x = 1\n", "for c in (b'ab'\n", "          b'cd'\n          b'ef'):\n    m[c] = c\n", False),
    # the cursor's own statement, left unfinished by the text
    ("class A(Base", ":", "\n    x = 1\n", True),
    ("class A(Base", "):", "\n    x = 1\n", False),
    # the window's own cut: a block with no body on its last line says nothing about the hole
    ("def f(x):\n", "    y = 1\n", "    if x:\n", False),
    # a complaint above the cursor's line: nothing to judge by
    ("def f(:\n    x = 1\n", "    # why\n", "        y)\n", False),
    # a complaint further below than REACH lines is not the hole's
    ("x = 1\n", "# note\n", "y = 2\n" * 10 + "  z = 3\n", False),
    # the window starts at the cursor's clause: its `if` is not in it
    ("e", "lse:", "\n    x = 1\n", False),
])
def test_python_leaves_error_where_the_code_under_the_hole_lacks_its_start(prefix, text, suffix, leaves):
    from dg_lsp.context.python_syntax import python_leaves_error

    assert python_leaves_error(prefix, text, suffix) is leaves


CUT_CLASS = ("class S:\n    OK = (200, 'OK',\n        'Request fulfilled')\n",
             "        'Document created')\n    ACCEPTED = (202, 'Accepted',\n        'Request accepted")


@pytest.mark.parametrize("prefix,text,suffix,fixes", [
    # the first line of a call continued under the hole, in a window cut inside a later string: the complaint that
    # is left is the cut's
    (*CUT_CLASS[:1], "    CREATED = (201, 'Created',\n", CUT_CLASS[1], True),
    # a string the text itself leaves open is its own
    (*CUT_CLASS[:1], "    CREATED = (201, 'Created\n", CUT_CLASS[1], False),
    # the complaint under the hole stays where it was
    (*CUT_CLASS[:1], "    # created\n", CUT_CLASS[1], False),
    # the `}` of a dict opened above the hole
    ("d = {\n    'a': 1,\n", "}\n", "print(d)\n", True),
    # a complaint above the hole, about something else: nothing the text could fix
    ("def f(:\n    x = 1\n", "    y = 2\n", "        z = 3\n", False),
    # nothing to fix
    ("x = 1\n", "y = 2\n", "z = 3\n", False),
])
def test_python_fixes_what_the_window_lacked(prefix, text, suffix, fixes):
    from dg_lsp.context.python_syntax import python_fixes

    assert python_fixes(prefix, text, suffix) is fixes


CLASS = ("class Tree {\n  before (spec) {\n    const { before, exclude } = this.options\n    \n"
         "    return before\n  }\n\n  after (spec) {\n    return spec\n  }\n}\n")


def test_a_text_after_which_a_clean_file_no_longer_parses_breaks_it():
    """`breaks_document` reads the whole file, where the gate reads windows whose blocks it closes at their ends."""
    from dg_lsp.context.syntax import breaks_document

    at = CLASS.index("    \n") + 4
    assert breaks_document(CLASS, at, at, "if (exclude) {\n      return exclude", "javascript")
    assert not breaks_document(CLASS, at, at, "if (exclude) {\n      return exclude\n    }", "javascript")
    assert not breaks_document(CLASS, at, at, "const n = exclude.size", "typescript")
    # a file that does not parse clean already: nothing known
    assert not breaks_document(CLASS + "}\n", at, at, "if (exclude) {", "javascript")
    # no grammar, and a text with no UTF-8 form (a lone surrogate)
    assert not breaks_document(CLASS, at, at, "if (exclude) {", "cobol")
    assert not breaks_document(CLASS, at, at, "if ('\ud800') {", "javascript")


def test_a_missing_closer_before_blanks_at_the_hole_is_the_holes_own():
    # a function whose `}` the document does not have yet: tree-sitter puts the MISSING `}` after the `{`, and
    # after a text in the body, after the text; with only blanks between it and the hole it is the same error
    from dg_lsp.context.syntax import insertion_breaks_syntax

    prefix, suffix = "function foo(a) {\n  ", "\n"
    assert not insertion_breaks_syntax(prefix, "return a + 1;", suffix, "javascript")
    assert insertion_breaks_syntax(prefix, "return a +;", suffix, "javascript")
    # code between the MISSING node and the hole: not the hole's
    assert insertion_breaks_syntax("function foo(a) {\n  a++;\n  ", "a b", suffix, "javascript")
