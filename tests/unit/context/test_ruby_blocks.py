"""Ruby's `end`s that tree-sitter-ruby's parse leaves unsaid (`context/end_blocks.py`), as the syntax checks count
them (`context/syntax.py`)."""

from __future__ import annotations

from dg_lsp.context.syntax import error_spans, parses_clean_with

CLEAN = """class Counter
  def call(env)
    total = if env.empty? then 0 else env.size end
    value = if total > 1
              total
            else
              1
            end
    env.each do |key, value|
      warn key
    end
    foo(1,
        2) do |x|
      x
    end
    range.end
  end

  def end; end
end
"""


def _ends(text: str) -> list[str]:
    data = text.encode("utf-8")
    return [data[start:end].decode() for kind, start, end in error_spans(text, "ruby") if kind == "END"]


def test_a_clean_class_has_no_fault():
    # one-line blocks, an `end` under its `if`, a `do` block under its call's first line, `range.end`, `def end`
    assert error_spans(CLEAN, "ruby") == []
    assert parses_clean_with(CLEAN, 0, 0, "", "ruby")


def test_a_stray_end_is_a_fault_though_the_parse_has_no_error():
    text = CLEAN.replace("    range.end\n", "    range.end\n    end\n")
    assert _ends(text) != []
    at = CLEAN.index("    range.end\n")
    assert not parses_clean_with(CLEAN, at, at, "    end\n", "ruby")
    assert parses_clean_with(CLEAN, at, at, "    range.begin\n", "ruby")


def test_an_end_that_closes_the_wrong_block_is_a_fault():
    # the `do` line dropped: its `end` closes the method, the method's closes the class, the class's is stray
    text = CLEAN.replace("    env.each do |key, value|\n", "")
    assert len(_ends(text)) >= 2
    assert error_spans(text.replace("    range.end\n", ""), "ruby") != []


def test_other_languages_do_not_count_ends():
    assert error_spans("end = 1\nprint(end)\n", "python") == []
