"""`python -m dg_lsp.bench.diagnostics.new_method`: a Ruby method (a Lua function) written with no `end` below it,
its right text through post-processing and the gate."""

from __future__ import annotations

from dg_lsp.bench.diagnostics import new_method

SOURCE = """class Stack
  def initialize
    @items = []
  end

  def push(item)
    @items.push(item)
    self
  end

  def pop
    @items.pop
  end
end
"""


def test_each_short_method_is_written_back_whole_with_its_end(tmp_path, capsys):
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "stack.rb").write_text(SOURCE, encoding="utf-8")
    (tmp_path / "notes.txt").write_text("def not_ruby\nend\n", encoding="utf-8")
    found = new_method.cases(str(tmp_path))
    assert {path.name for path, _, _ in found} == {"stack.rb"}
    assert sorted((first, last) for _, first, last in found) == [(1, 3), (5, 8), (10, 12)]
    assert new_method.run(str(tmp_path), 10, 0) == {"methods": 3, "shown": 3, "whole": 3, "valid": 3}
    assert new_method.main([str(tmp_path), "--n", "2"]) == 0
    assert capsys.readouterr().out.startswith("2 methods written with no end below: 2 shown, 2 shown whole")


LUA = """local Stack = {}

function Stack.new()
  return setmetatable({ items = {} }, { __index = Stack })
end

Stack.push = function(self, item)
  table.insert(self.items, item)
  return self
end

function Stack:pop()
  return table.remove(self.items)
end

return Stack
"""


def test_each_short_lua_function_declared_or_a_value_is_written_back_whole_with_its_end(tmp_path):
    (tmp_path / "stack.lua").write_text(LUA, encoding="utf-8")
    found = new_method.cases(str(tmp_path), "lua")
    assert sorted((first, last) for _, first, last in found) == [(2, 4), (6, 9), (11, 13)]
    assert new_method.run(str(tmp_path), 10, 0, "lua") == {"methods": 3, "shown": 3, "whole": 3, "valid": 3}
