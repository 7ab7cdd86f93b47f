"""The `indent` field: the cursor line's own, or what the block expects on an empty line."""

from __future__ import annotations

import pytest

from dg_lsp.context import extract_context


@pytest.mark.parametrize(
    ("language", "source", "line", "indent"),
    [
        ("python", "def f():\n", 1, "    "),
        ("python", "def f():\n  x = 1\n", 2, "  "),
        ("python", "class A:\n    def m(self):\n        return 1\n", 3, "    "),
        ("python", "if x:\n\tpass\n\tfoo()\n", 3, "\t"),
        ("python", "x = [\n", 1, "    "),
        ("python", "def f():\n    x = 1\n\n\ndef g():\n    pass\n", 3, ""),
        ("javascript", "function f() {\n\n}\n", 1, "    "),
        ("javascript", "function f() {\n  if (x) {\n    a();\n  }\n", 4, "  "),
        ("javascript", "function f() {\n  if (x) {\n", 2, "    "),
        ("go", "package m\n\nfunc f() {\n", 3, "\t"),
        ("go", "package m\n\nfunc f() {\n\tif x {\n", 4, "\t\t"),
        ("c", "int f(void) {\n    return 1;\n}\n", 3, ""),
        ("java", "class A {\n    void m() {\n        int a = 1;\n", 3, "        "),
        (None, "  some text\n", 1, "  "),
    ],
)
def test_empty_line_gets_the_block_indentation(language, source, line, indent):
    assert extract_context(source, language, line, 0).indent == indent


def test_code_line_keeps_its_own_indentation():
    ctx = extract_context("def f():\n      x = 1\n", "python", 1, 9)
    assert ctx.indent == "      "


def test_whitespace_only_line_keeps_the_editor_indentation():
    ctx = extract_context("def f():\n    x = 1\n        \n", "python", 2, 8)
    assert ctx.indent == "        "


def test_indent_unit_follows_the_file():
    two_spaces = "function f() {\n  if (a) {\n    b();\n  }\n  if (c) {\n"
    ctx = extract_context(two_spaces, "javascript", 5, 0)
    assert ctx.indent == "    "


def test_comment_lines_do_not_skew_the_indent_unit():
    source = "/*\n * doc\n */\nint f(void) {\n    if (x) {\n"
    ctx = extract_context(source, "c", 5, 0)
    assert ctx.indent == "        "
