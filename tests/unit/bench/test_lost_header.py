"""`python -m dg_lsp.bench.diagnostics.lost_header`: a Ruby or Lua block's header line answered with a line of its
body, and with itself, through post-processing and the gate."""

from __future__ import annotations

from dg_lsp.bench.diagnostics import lost_header

LUA = """local M = {}

function M.sum(items)
  local total = 0
  for _, item in ipairs(items) do
    total = total + item
  end
  return total
end

return M
"""


def test_each_header_is_shown_where_it_was_and_a_bodys_line_there_is_not(tmp_path, capsys):
    (tmp_path / "m.lua").write_text(LUA, encoding="utf-8")
    (tmp_path / "notes.txt").write_text("function x()\n  y()\nend\n", encoding="utf-8")
    assert sorted(row for _, row in lost_header.cases(str(tmp_path), "lua")) == [2, 4]
    assert lost_header.run(str(tmp_path), "lua", 10, 0) == {"headers": 2, "right_whole": 2, "wrong_shown": 0,
                                                           "wrong_broken": 0}
    assert lost_header.main([str(tmp_path), "--language", "lua"]) == 0
    assert capsys.readouterr().out.startswith("2 headers: 2 shown whole where they were; a body's line there: 0")


BASH = """sum() {
  local total=0
  for item in "$@"; do
    total=$((total + item))
  done
  echo "$total"
}
"""


def test_bash_headers_in_sh_and_bash_files(tmp_path):
    (tmp_path / "sum.sh").write_text(BASH, encoding="utf-8")
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "sum.bash").write_text(BASH, encoding="utf-8")
    assert sorted((path.name, row) for path, row in lost_header.cases(str(tmp_path), "bash")) == \
        [("sum.bash", 2), ("sum.sh", 2)]  # the loop's header; a function's `{` is a bracket
    assert lost_header.run(str(tmp_path), "bash", 10, 0) == {"headers": 2, "right_whole": 2, "wrong_shown": 0,
                                                            "wrong_broken": 0}
