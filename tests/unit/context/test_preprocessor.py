"""Conditional directives read on the whole document (context/preprocessor.py), and the gate that reads them."""

from __future__ import annotations

from dg_lsp.completion.postprocess import finish_suggestion
from dg_lsp.context import extract_context
from dg_lsp.context.preprocessor import conditional_errors, unbalances_conditionals

_SOURCE = ("#include <stdio.h>\n"
           "\n"
           "#ifdef _WIN32\n"
           "#  include <io.h>\n"
           "#else\n"
           "#  include <unistd.h>\n"
           "#endif\n"
           "\n"
           "int main(void) {\n"
           "    puts(\"hi\");\n"
           "@@\n"
           "    return 0;\n"
           "}\n")


def test_conditional_errors_count_what_closes_nothing_and_what_stays_open():
    assert conditional_errors(_SOURCE) == 0
    assert conditional_errors("#if A\n#if B\n#endif\n") == 1  # one left open
    assert conditional_errors("#endif\n#else\nint x;\n") == 2  # neither has an #if
    assert conditional_errors("  #  ifndef X\n  # endif\n#region a\n#endregion\n") == 0  # spaces; C#'s regions
    assert conditional_errors("#endregion\n#if A\n#endif\n") == 1


def _shown(language: str, text: str, source: str = _SOURCE) -> str:
    prefix, suffix = source.split("@@")
    lines = prefix.split("\n")
    document = prefix + suffix
    ctx = extract_context(document, language, len(lines) - 1, len(lines[-1]))
    return finish_suggestion(text, [], prefix, ctx, selection=False, max_lines=8, document=document)


def test_a_suggestion_that_opens_or_closes_a_conditional_alone_is_not_shown():
    # tree-sitter takes `#ifdef _WIN32` as a conditional running on to the file's end, with no error in the windows;
    # the compiler: "unterminated #ifdef"
    at = _SOURCE.index("@@")
    document = _SOURCE.replace("@@", "")
    assert unbalances_conditionals(document, at, at, "#ifdef _WIN32", "c")
    assert unbalances_conditionals(document, at, at, "#endif", "cpp")
    assert not unbalances_conditionals(document, at, at, "#ifdef _WIN32\n    fflush(stdout);\n#endif", "c")
    assert not unbalances_conditionals(document, at, at, "#ifdef _WIN32", "java")  # no preprocessor
    assert _shown("c", "    fflush(stdout);") == "    fflush(stdout);"
    # between the includes, a stray `#endif` or `#else` parses clean in every window (fmt's header-only test)
    top = "// configuration test\n\n#include \"fmt/base.h\"\n@@#include \"gtest/gtest.h\"\n\nint x;\n"
    assert _shown("cpp", "#endif\n", top) == ""
    assert _shown("cpp", "#else\n", top) == ""
    assert _shown("cpp", "#include <vector>\n", top) == "#include <vector>\n"
    # a document already unbalanced (the user's own `#if`, not closed yet) takes texts that leave it so
    unclosed = "#if DEBUG\nint x;\n"
    assert not unbalances_conditionals(unclosed, len(unclosed), len(unclosed), "int y;\n", "c")
    assert unbalances_conditionals(unclosed, len(unclosed), len(unclosed), "#else\n#else\n", "c")
