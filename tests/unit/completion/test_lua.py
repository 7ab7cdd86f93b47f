"""Lua: what the server shows for an engine answer in a Lua document (`finish_suggestion` on the request's context:
the windows, post-processing, the syntax gate with tree-sitter-lua and its `end` rules, `completion/gate_end_blocks.py`
and `context/lua_blocks.py`), in a small Neovim-plugin-style module."""

from __future__ import annotations

from dg_lsp.completion.postprocess import finish_suggestion
from dg_lsp.context import extract_context

from .holes import shown_at_hole

MODULE = """-- A counter of the buffers it sees (a comment with a ( and an end in it)
local M = {}

local Counter = {}
Counter.__index = Counter

function Counter:new(name)
  return setmetatable({ name = name, seen = {} }, self)
end

function Counter:add(buf)
  if self.seen[buf] then
    return false
  elseif buf < 0 then
    error("no buffer")
  end
  for _, other in ipairs(self.others or {}) do
    if other ~= self then
      other:add(buf)
    end
  end
  self.seen[buf] = true
  return true
end

function Counter:report()
  local lines = {}
  vim.tbl_map(function(buf)
    table.insert(lines, tostring(buf))
  end, vim.tbl_keys(self.seen))
  return table.concat(lines, "\\n")
end

M.Counter = Counter
return M
"""


def _shown(text: str, line: str, hole: str = "@@") -> str:
    """The shown text for the engine answer `text` where MODULE's line `line` (with its line break) is `hole`, in a
    method."""
    assert MODULE.count(line) == 1
    return shown_at_hole(MODULE.replace(line, hole), "lua", text)


def _shown_anywhere(text: str, line: str) -> str:
    """`_shown` with no method around the hole asked for (where a callback's `end` was, the parse gives the hole to
    the callback)."""
    assert MODULE.count(line) == 1
    prefix, suffix = MODULE.split(line)
    ctx = extract_context(prefix + suffix, "lua", prefix.count("\n"), 0)
    return finish_suggestion(text, [], prefix, ctx, selection=False, max_lines=8, document=prefix + suffix)


def test_functions_and_methods_are_the_scopes():
    lines = MODULE.split("\n")
    row = lines.index("    table.insert(lines, tostring(buf))")
    ctx = extract_context(MODULE, "lua", row, 4)
    assert ctx.language == "lua"
    assert [(s.kind, s.name) for s in ctx.scopes] == [("method", "Counter:report"), ("function", None)]
    assert lines[ctx.scopes[0].start_line] == "function Counter:report()"
    assert lines[ctx.scopes[0].end_line] == "end"


def test_a_blocks_end_where_it_was_is_shown_and_a_statement_there_is_not():
    # the hole is where the `for` loop's `end` was: its body above, the method's next statement below at its column
    line = "  end\n  self.seen[buf] = true\n"
    assert _shown("  end\n", line) == "  end\n"
    assert _shown("  self.count = 1\n", line) == ""  # the loop left open: each `end` below closes the wrong block
    assert _shown("  -- done\n", line) == ""


def test_a_header_where_it_was_is_shown_and_a_statement_there_is_not():
    line = "  for _, other in ipairs(self.others or {}) do\n"
    assert _shown("  for _, other in ipairs(self.others or {}) do\n", line) == \
        "  for _, other in ipairs(self.others or {}) do\n"
    assert _shown("  for _, o in pairs(self.others) do\n", line) == "  for _, o in pairs(self.others) do\n"
    # the loop's body and `end` below are left with no header
    assert _shown("  self.seen[buf] = true\n", line) == ""


def test_a_callbacks_header_goes_on_from_its_call_and_its_end_with_the_calls_rest():
    line = "  vim.tbl_map(function(buf)\n"
    assert _shown("  vim.tbl_map(function(buf)\n", line) == "  vim.tbl_map(function(buf)\n"
    assert _shown("  local n = #lines\n", line) == ""
    line = "  end, vim.tbl_keys(self.seen))\n"
    assert _shown_anywhere("  end, vim.tbl_keys(self.seen))\n", line) == "  end, vim.tbl_keys(self.seen))\n"
    assert _shown_anywhere("  return table.concat(lines)\n", line) == ""


def test_an_if_takes_elseif_and_else_and_a_loop_takes_neither():
    line = "  if self.seen[buf] then\n"
    assert _shown("  if self.seen[buf] then\n", line) == "  if self.seen[buf] then\n"
    assert _shown("  while self.seen[buf] do\n", line) == ""  # a loop over the `elseif` below
    line = "  elseif buf < 0 then\n"
    assert _shown("  elseif buf < 0 then\n", line) == "  elseif buf < 0 then\n"
    assert _shown("  else\n", line) == "  else\n"
    assert _shown("  local n = buf\n", line) == ""


def test_a_condition_of_several_lines_ends_with_its_then_and_a_clause_may_close_its_block():
    source = MODULE.replace("  if self.seen[buf] then\n", "  if self.seen[buf]\n    and buf > 0\n  @@\n")
    assert shown_at_hole(source, "lua", "then\n") == "then"
    assert shown_at_hole(source, "lua", "self.n = 1\n") == ""
    source = MODULE.replace("  elseif buf < 0 then\n    error(\"no buffer\")\n  end\n",
                            "@@")
    answer = "  elseif buf < 0 then error(\"no buffer\") end\n"
    assert shown_at_hole(source, "lua", answer) == answer


def test_an_end_the_suffix_has_too_is_kept_where_it_closes_a_deeper_block():
    # `    end` over the suffix's `  end` closes the `if`, not the loop: not a repeat of the next line
    line = "    end\n  end\n  self.seen"
    assert _shown("    end\n", line, "@@  end\n  self.seen") == "    end\n"


def test_a_stray_end_is_not_shown():
    line = "  self.seen[buf] = true\n"
    assert _shown("  self.seen[buf] = true\n", line) == "  self.seen[buf] = true\n"
    assert _shown("  end\n", line) == ""


def test_an_empty_line_under_a_header_is_indented_one_deeper():
    source = MODULE.replace("  return table.concat(lines, \"\\n\")\n", "  if #lines > 0 then\n\n  end\n")
    lines = source.split("\n")
    row = lines.index("  if #lines > 0 then") + 1
    ctx = extract_context(source, "lua", row, 0)
    assert ctx.indent == "    "


def test_a_function_written_with_no_end_below_gets_its_end_with_its_body():
    prefix = MODULE.split("M.Counter = Counter\n")[0] + "function Counter:reset()\n  "
    below = "\nM.Counter = Counter\nreturn M\n"
    answer = "self.seen = {}\nend\n\nfunction Counter:size()\n"
    ctx = extract_context(prefix + below, "lua", prefix.count("\n"), 2)
    shown = finish_suggestion(answer, [], prefix, ctx, selection=False, max_lines=8, document=prefix + below)
    assert shown == "self.seen = {}\nend"
    # where the `end` is there already, the body alone
    below = "\nend\n" + below
    ctx = extract_context(prefix + below, "lua", prefix.count("\n"), 2)
    shown = finish_suggestion(answer, [], prefix, ctx, selection=False, max_lines=8, document=prefix + below)
    assert shown == "self.seen = {}"


def test_a_long_string_and_a_long_comment_are_text():
    # a `function` line inside a long string heads nothing: the line below it, back at its column, ends nothing
    source = MODULE.replace("M.Counter = Counter\n", "M.help = [[\nfunction usage\n  text\n@@]]\nM.Counter = Counter\n")
    prefix, suffix = source.split("@@")
    ctx = extract_context(prefix + suffix, "lua", prefix.count("\n"), 0)
    shown = finish_suggestion("more text\n", [], prefix, ctx, selection=False, max_lines=8, document=prefix + suffix)
    assert shown == "more text\n"


def test_a_callbacks_header_must_be_inside_the_call_its_end_closes():
    # `end, vim.tbl_keys(...))` below closes the call the header line opens: a function declared there opens none
    line = "  vim.tbl_map(function(buf)\n"
    assert _shown("  local function add(buf)\n", line) == ""


# a callback being written (`vim.keymap.set(..., function()` and Enter), its `end` not in the document yet: the
# editor's auto-closed `)` on the line below (VS Code, nvim-autopairs), or nothing there
CALLBACK = "local M = {}\n\nfunction M.setup()\n  vim.keymap.set('n', 'x', function()\n    "
AUTOCLOSED = "\n  )\nend\n\nreturn M\n"
OPEN = "\nend\n\nreturn M\n"


def _in_callback(text: str, below: str) -> str:
    ctx = extract_context(CALLBACK + below, "lua", CALLBACK.count("\n"), 4)
    return finish_suggestion(text, [], CALLBACK, ctx, selection=False, max_lines=8, document=CALLBACK + below)


def test_a_callbacks_body_is_shown_in_a_block_the_document_has_not_closed():
    # the `end` the document lacks is missing after the text as it was before it: no new error
    assert _in_callback("vim.cmd('w')\n", AUTOCLOSED) == "vim.cmd('w')"
    assert _in_callback("vim.cmd('w')\n", OPEN) == "vim.cmd('w')"


def test_a_callbacks_end_keeps_the_bracket_it_closes_where_nothing_below_closes_it():
    assert _in_callback("vim.cmd('w')\n  end)\nend\n", OPEN) == "vim.cmd('w')\n  end)"
    # the editor's `)` below closes the call: the `end` alone
    assert _in_callback("vim.cmd('w')\n  end)\nend\n", AUTOCLOSED) == "vim.cmd('w')\n  end"


def test_no_start_of_a_line_that_leaves_a_string_open_is_shown():
    # the whole line is refused (`y z`); the starts of it that end inside the string it opens read as one error
    # node swallowing the rest of the file, fewer errors than the `end` the window lacks
    assert _in_callback("print('x', y z)\n", AUTOCLOSED) == ""


def test_a_bodys_line_where_its_header_was_is_not_shown():
    # deeper than the line above, which heads nothing: the loop's body and its `end` are left with no header
    line = "  for _, other in ipairs(self.others or {}) do\n"
    assert _shown("    if other ~= self then\n", line) == ""
    assert _shown("    self.count = 1\n", line) == ""
    assert _shown("  for _, other in ipairs(self.others) do\n", line) == "  for _, other in ipairs(self.others) do\n"
    # a line that goes on from the one above it may be deeper
    source = MODULE.replace("  return table.concat(lines, \"\\n\")\n", "  return #lines > 0\n@@")
    assert shown_at_hole(source, "lua", "    and lines[1] ~= ''\n") == "    and lines[1] ~= ''\n"
