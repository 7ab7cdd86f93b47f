"""Lua's lines as `context/lua_blocks.py` reads them (which open, continue or close a block), and the `end`s at a column
their opener does not give, which the syntax checks count (`end_blocks.end_faults`, `context/syntax.py`)."""

from __future__ import annotations

import pytest

from dg_lsp.context import lua_blocks
from dg_lsp.context.syntax import error_spans, parses_clean_with


@pytest.mark.parametrize("line, kind", [
    ("local function walk(node)", "function"),
    ("M.setup = function(opts)", "function"),
    ("vim.schedule(function()", "function"),
    ("end, function(err)", "function"),  # closes the callback above, opens the next
    ("if ok then", "if"),
    ("for i = 1, #items do", "do"),
    ("while node do", "do"),
    ("do", "do"),
    ("repeat", "repeat"),
    ("elseif x > 0 then", "elseif"),
    ("else", "else"),
    ("if a and", "if"),  # a condition of several lines: its `then` below
    ("then", "then"),
    ("for k, v in pairs(t)", "do"),
    ("elseif x then y = 1 end", None),  # a clause that closes its block on its line
    ("if a then x = 1 elseif b then x = 2 end", None),
    ("if ok then return end", None),
    ("local f = function(x) return x end", None),
    ("for _, v in ipairs(t) do print(v) end", None),
    ("print('if then do function')", None),  # keywords in a string
    ("x = 1 -- if this then", None),  # and in a comment
    ("local s = [[ function ]]", None),  # and in a long string
    ("end", None),
    ("until done", None),
])
def test_block_kind(line, kind):
    assert lua_blocks.block_kind(lua_blocks.code_of(line)) == kind


def test_code_of_drops_the_comment_outside_strings():
    assert lua_blocks.code_of("local s = '--' .. x -- a note  ") == "local s = '--' .. x"
    assert lua_blocks.code_of('local s = "a \\" -- b" ') == 'local s = "a \\" -- b"'
    assert lua_blocks.code_of("local s = [[ -- ]] -- note") == "local s = [[ -- ]]"


def test_an_if_takes_elseif_else_and_then_a_loop_its_do_and_other_blocks_no_clause():
    assert lua_blocks.takes_clause("if", "else") and lua_blocks.takes_clause("elseif", "elseif")
    assert lua_blocks.takes_clause("then", "else") and lua_blocks.takes_clause("if", "then")
    assert lua_blocks.takes_clause("do", "do") and not lua_blocks.takes_clause("function", "do")
    assert not lua_blocks.takes_clause("function", "else") and not lua_blocks.takes_clause("do", "elseif")
    assert not lua_blocks.takes_clause("else", "else")


SOURCE = """local function walk(node)
  for _, child in ipairs(node) do
    if child.leaf then
      visit(child)
    end
  end
end
"""


def test_an_end_at_its_openers_column_is_no_error_and_one_at_another_column_is():
    assert error_spans(SOURCE, "lua") == []
    # the `if` line dropped: read by count, the `if`'s `end` (column 4) closes the loop (column 2), the loop's
    # closes the function, and only the last `end` is an error to tree-sitter-lua
    broken = SOURCE.replace("    if child.leaf then\n", "")
    kinds = [kind for kind, _, _ in error_spans(broken, "lua")]
    assert "END" in kinds


def test_a_callbacks_end_may_line_up_with_its_calls_line():
    source = "vim.schedule(\n  function()\n    run()\n  end)\nfoo(bar,\n  function()\nend)\n"
    assert error_spans(source, "lua") == []


def test_a_document_with_a_misaligned_end_does_not_parse_clean():
    start = SOURCE.index("      visit(child)")
    assert parses_clean_with(SOURCE, start, start, "", "lua")
    at = SOURCE.index("    end\n  end")
    assert not parses_clean_with(SOURCE, at, at + len("    end"), "end", "lua")


def test_a_keyword_read_as_a_name_is_an_error():
    # tree-sitter-lua's recovery from a table field's line in an `if` takes the `else` below for the list's next
    # name (and the `if`'s `end` with it), with no ERROR node; luac: "unexpected symbol near 'else'"
    source = "local function f()\n  if ok then\n    env = env,\n  else\n    r = 1\n  end\nend\n"
    assert [(kind, source[a:b]) for kind, a, b in error_spans(source, "lua")] == [("END", "else")]


def test_the_faults_of_a_text_read_again_are_the_same_and_its_own():
    from dg_lsp.context import end_blocks

    broken = SOURCE.replace("    if child.leaf then\n", "")
    first = error_spans(broken, "lua")
    first.append(("END", 0, 0))  # the caller's list is its own
    assert error_spans(broken, "lua") == first[:-1]
    for k in range(end_blocks._FAULTS_KEPT + 1):  # older texts make way; each still reads its own faults
        assert error_spans(SOURCE + f"-- {k}\n", "lua") == []
    assert error_spans(broken, "lua") == first[:-1]
    assert len(end_blocks._FAULTS) <= end_blocks._FAULTS_KEPT
