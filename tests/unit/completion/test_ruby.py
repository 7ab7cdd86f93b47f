"""Ruby: what the server shows for an engine answer in a Ruby document (`finish_suggestion` on the request's context:
the windows, post-processing, the syntax gate with tree-sitter-ruby and its `end` rules, `completion/gate_end_blocks.py`
and `context/ruby_blocks.py`), in a small Rack-style middleware."""

from __future__ import annotations

from dg_lsp.completion.postprocess import finish_suggestion
from dg_lsp.context import extract_context

from .holes import shown_at_hole

CLASS = """# frozen_string_literal: true

module Demo
  # Counts the requests it passes on (a comment with a ( and an end in it)
  class Counter
    def initialize(app)
      @app = app
      @count = 0
    end

    def call(env)
      @count += 1
      env.each do |key, value|
        log(key, value)
      end
      @app.call(env)
    end

    def log(key, value)
      warn "#{key}: #{value}"
    end
  end
end
"""


def _shown(text: str, line: str, hole: str = "@@") -> str:
    """The shown text for the engine answer `text` where CLASS's line `line` (with its line break) is `hole`."""
    assert CLASS.count(line) == 1
    return shown_at_hole(CLASS.replace(line, hole), "ruby", text)


def test_the_module_class_and_method_are_the_scopes():
    lines = CLASS.split("\n")
    row = lines.index("      @app.call(env)")
    ctx = extract_context(CLASS, "ruby", row, 6)
    assert ctx.language == "ruby"
    assert [(s.kind, s.name) for s in ctx.scopes] == [("module", "Demo"), ("class", "Counter"), ("method", "call")]
    assert lines[ctx.scopes[-1].start_line] == "    def call(env)"
    assert lines[ctx.scopes[-1].end_line] == "    end"


def test_the_blocks_end_where_it_was_is_shown_and_a_statement_or_comment_there_is_not():
    # the hole is where the `do` block's `end` was: its body above, the method's next statement below at its column
    line = "      end\n"
    assert _shown("      end\n", line) == "      end\n"
    assert _shown("      @count -= 1\n", line) == ""  # the block left open: each `end` below closes the wrong block
    assert _shown("      # done\n", line) == ""
    assert _shown("      log(:done, 1)\n", line) == ""


def test_an_end_the_suffix_has_too_is_kept_where_it_closes_a_deeper_block():
    # `      end` over the suffix's `    end` closes the `do` block, not the method: not a repeat of the next line
    line = "      end\n      @app.call(env)\n"
    assert _shown("      end\n", line) == "      end\n"


def test_a_header_where_it_was_is_shown_and_a_statement_there_is_not():
    line = "      env.each do |key, value|\n"
    assert _shown("      env.each do |key, value|\n", line) == "      env.each do |key, value|\n"
    assert _shown("      env.each_pair do |k, v|\n", line) == "      env.each_pair do |k, v|\n"
    # the block's body and `end` below are left with no header
    assert _shown("      @count += 1\n", line) == ""
    assert _shown("      # each pair\n", line) == ""


def test_a_stray_end_is_not_shown():
    # tree-sitter-ruby reads an `end` that closes nothing as a name, with no error node
    line = "      @app.call(env)\n"
    assert _shown("    end\n", line, line + "@@") == ""
    assert _shown("      @count\n", line, line + "@@") == "      @count\n"


def test_a_setter_and_a_block_header_with_a_hash_in_its_string_are_headers():
    assert _shown("ue", "    def log(key, value)\n", "    def count=(val@@)\n") == "ue"
    assert _shown(" |key, value|", "      env.each do |key, value|\n", "      it \"logs #each pair\" do@@\n") == \
        " |key, value|"


def test_an_empty_line_under_a_header_or_a_do_gets_its_body_indentation():
    lines = CLASS.split("\n")
    for header in ("    def call(env)", "      env.each do |key, value|"):
        row = lines.index(header) + 1
        document = "\n".join(lines[:row] + [""] + lines[row:])
        assert extract_context(document, "ruby", row, 0).indent == " " * (len(header) - len(header.lstrip()) + 2)
    # after a plain statement, the statement's own
    row = lines.index("      @count += 1") + 1
    document = "\n".join(lines[:row] + [""] + lines[row:])
    assert extract_context(document, "ruby", row, 0).indent == "      "


def test_a_header_must_take_the_clause_below_its_body():
    source = CLASS.replace("      @count += 1\n", "      if env.empty?\n        @count += 1\n      else\n        @count -= 1\n"
                                                  "      end\n")
    line = "      if env.empty?\n"
    assert shown_at_hole(source.replace(line, "@@"), "ruby", "      unless env.empty?\n") == \
        "      unless env.empty?\n"
    # a method's body cannot go on with `else` (ruby -c: "else without rescue is useless")
    assert shown_at_hole(source.replace(line, "@@"), "ruby", "      def reset\n") == ""
    assert shown_at_hole(source.replace(line, "@@"), "ruby", "      env.each do |pair|\n") == ""


def test_a_module_whose_body_runs_past_the_windows_still_needs_its_header():
    methods = "".join(f"  def method_{i}(value)\n    value + {i}\n  end\n\n" for i in range(150))
    prefix, suffix = "# frozen_string_literal: true\n\n", methods + "end\n"

    def shown(text):
        ctx = extract_context(prefix + suffix, "ruby", 2, 0)
        assert len(ctx.suffix) < len(suffix)  # the window ends before the module does
        return finish_suggestion(text, [], prefix, ctx, selection=False, max_lines=8, document=prefix + suffix)

    assert shown("module Numbers\n") == "module Numbers\n"
    assert shown("# frozen_string_literal: true\n") == ""
    assert shown("require 'set'\n") == ""


def test_a_heredocs_lines_are_text_not_blocks():
    # the heredoc's `def` and `end` at the method's column are its text: the line after it still ends the method
    source = CLASS.replace("    def log(key, value)\n", "    def render\n      <<~RUBY\n    def generated\n    end\n"
                                                        "      RUBY\n    end\n\n    def log(key, value)\n")
    line = "      RUBY\n    end\n"
    assert shown_at_hole(source.replace(line, "      RUBY\n@@"), "ruby", "    end\n") == "    end"  # on the blank line
    assert shown_at_hole(source.replace(line, "      RUBY\n@@"), "ruby", "    render_more\n") == ""


def test_a_clause_heads_deeper_lines_or_stands_over_the_end_it_goes_on_to():
    source = CLASS.replace("      @count += 1\n", "      if env.empty?\n        @count += 1\n      end\n")
    # `e` typed where the if's `end` was: `lse` would leave the if without its `end`
    assert shown_at_hole(source.replace("      end\n      env.each", "      e@@\n      env.each"), "ruby", "lse") == ""
    assert shown_at_hole(source.replace("      end\n      env.each", "      e@@\n      env.each"), "ruby", "nd") == "nd"
    # over the if's `end`, or over deeper lines, an `else` is the block going on
    assert shown_at_hole(source.replace("      end\n      env.each", "      e@@\n      end\n      env.each"), "ruby",
                         "lse") == "lse"
    assert shown_at_hole(source.replace("        @count += 1\n", "      e@@\n        @count += 1\n"), "ruby",
                         "lse") == "lse"


def test_a_bracket_left_open_over_a_line_of_its_level_is_not_shown_where_ends_are_missing():
    # a file being written, its `end`s not there yet: tree-sitter-ruby reads it as one ERROR node, in which no error
    # count sees a `(` the text leaves open; the line after it does not go on with the call
    prefix = "module Demo\n    def assign(headers)\n      headers.merge!(@headers) if @headers\n"
    suffix = "\n    class Iterator\n      attr_reader :path, :ranges, :options"
    text = "      headers.merge!(@headers) if @headers\n      headers.merge!(@headers"
    ctx = extract_context(prefix + suffix, "ruby", 3, 0)
    shown = finish_suggestion(text, [], prefix, ctx, selection=False, max_lines=8, document=prefix + suffix)
    assert shown == "      headers.merge!(@headers) if @headers"  # its clean first line


def test_the_data_after_end_is_text():
    # after `__END__` the file is data: a `def` line there heads nothing, so a line back at its column ends nothing
    prefix = CLASS + "__END__\ndef listed\n  row one\n"
    suffix = "\nthe last row\n"
    ctx = extract_context(prefix + suffix, "ruby", prefix.count("\n"), 0)
    shown = finish_suggestion("more rows\n", [], prefix, ctx, selection=False, max_lines=8, document=prefix + suffix)
    assert shown == "more rows"


def test_without_the_grammar_a_ruby_document_is_served_ungated_not_failed(monkeypatch):
    # a broken install (tree-sitter-ruby missing): Ruby reads as a language with no grammar, which the gate passes
    from dg_lsp.context import languages

    monkeypatch.setitem(languages._GRAMMARS, "ruby", ("tree_sitter_ruby_not_installed", "language"))
    languages.get_language.cache_clear()
    monkeypatch.setattr(languages._local, "parsers", {}, raising=False)
    try:
        assert languages.get_parser("ruby") is None
        prefix, suffix = CLASS.split("      @app.call(env)\n")
        ctx = extract_context(prefix + suffix, "ruby", prefix.count("\n"), 0)
        shown = finish_suggestion("      @app.call(env)\n", [], prefix, ctx, selection=False, max_lines=8,
                                  document=prefix + suffix)
        assert shown == "      @app.call(env)\n"
    finally:
        languages.get_language.cache_clear()


def test_a_method_written_with_no_end_below_gets_its_end_with_its_body():
    prefix = CLASS.split("    def log(key, value)\n")[0] + "    def reset\n      "
    below = "\n    def log(key, value)\n" + CLASS.split("    def log(key, value)\n")[1]
    answer = "@count = 0\n    end\n\n    def other\n"
    ctx = extract_context(prefix + below, "ruby", prefix.count("\n"), 6)
    shown = finish_suggestion(answer, [], prefix, ctx, selection=False, max_lines=8, document=prefix + below)
    assert shown == "@count = 0\n    end"  # the body and the method's `end`, not the next method
    # where the method's `end` is there already, the body alone
    below = "\n    end\n" + below
    ctx = extract_context(prefix + below, "ruby", prefix.count("\n"), 6)
    assert finish_suggestion(answer, [], prefix, ctx, selection=False, max_lines=8, document=prefix + below) == \
        "@count = 0"


def test_a_bodys_line_where_its_header_was_is_not_shown():
    # deeper than the line above, which heads nothing: the block's body and its `end` are left with no header
    line = "      env.each do |key, value|\n"
    assert _shown("        log(key, value)\n", line) == ""
    assert _shown("        @count -= 1\n", line) == ""
    # a method chain's next line may be deeper
    source = CLASS.replace("      @app.call(env)\n", "      @app.call(env)\n@@")
    assert shown_at_hole(source, "ruby", "        .tap { |r| r }\n") == "        .tap { |r| r }\n"
