"""C#: what the server shows for an engine answer in a C# document (`finish_suggestion` on the request's context: the
windows, post-processing, the syntax gate with tree-sitter-c-sharp), in the Allman style C# code is written in."""

from __future__ import annotations

from .holes import shown_at_hole

CLASS = """using System;

namespace Demo
{
    public class Calc
    {
#if DEBUG
        private int _calls;
#endif
        public int Add(int a, int b)
        {
            int total = @@
            return total;
        }

        public string Name(int n)
        {
            @@
            return "n";
        }
    }
}
"""


def _shown(text: str, hole: int = 0) -> str:
    """The shown text for the engine answer `text` at the `hole`-th @@ of CLASS (the others removed)."""
    return shown_at_hole(CLASS, "csharp", text, hole)


def test_a_clean_rest_of_line_is_shown_and_text_that_repeats_the_next_line_is_dropped():
    assert _shown("a + b;") == "a + b;"
    assert _shown("a + b;\n            return total;") == "a + b;"


def test_broken_text_is_not_shown_or_cut_to_its_clean_start():
    assert _shown('Format("{0}, a;') == ""  # a string it does not close
    assert _shown("a + (b;") == ""  # a bracket it leaves open on the statement's only line
    assert _shown("a + b; }") == ""  # a closer that would end the method early (no clean start of its line ends
    # in a `;`, and C# needs one)


def test_a_block_statement_at_a_blank_line_is_shown_through_its_closing_brace():
    """At a blank line above code at its depth one statement is shown: a block statement whole, its `}` line (back
    at the statement's depth) included, written the Allman way (C#'s) or with the `{` on the header's line."""
    allman = "if (n < 0)\n            {\n                n = -n;\n            }"
    assert _shown(allman + "\n            return n.ToString();", hole=1) == allman
    same_line = "if (n < 0) {\n                n = -n;\n            }"
    assert _shown(same_line + "\n            return n.ToString();", hole=1) == same_line
    # the header alone, or a block left open, would take in the user's `return`: not shown
    assert _shown("if (n < 0)\n", hole=1) == ""
    assert _shown("if (n < 0) {\n", hole=1) == ""
    assert _shown("n = Math.Abs(n);\n            return n.ToString();", hole=1) == "n = Math.Abs(n);"


def test_a_verbatim_string_ends_at_its_quote_whatever_backslashes_it_holds():
    """`@"C:\\dir\\"` is a whole string in C# (no escapes in a verbatim string; `""` is a quote): the bracket scan
    reads on after it, where a regular string's `\\"` would have kept it open."""
    from dg_lsp.completion.brackets import ends_in_literal, open_brackets

    assert open_brackets('f(@"C:\\dir\\", (x', "csharp") == ["(", "("]
    assert open_brackets('f(@"a""(b", x', "csharp") == ["("]
    assert ends_in_literal('path = @"C:\\dir\\" + name', "csharp") is False
    assert ends_in_literal('path = @"C:\\dir', "csharp") is True
    assert ends_in_literal('path = "C:\\dir\\" + name', "csharp") is True  # a regular string: `\\"` is an escape
    assert _shown('Path.Combine(@"C:\\temp\\", "x");') == 'Path.Combine(@"C:\\temp\\", "x");'
