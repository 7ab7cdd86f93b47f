"""Post-processing of a raw fill (completion/postprocess.py) and the production path through it
(`completion.postprocess.finish_suggestion` on a real `extract_context`, as `CompletionService` calls it)."""

from dg_lsp.completion.brackets import (block_end, ends_in_literal, line_closers, misaligned_closers, open_brackets,
                                        open_counts, open_spans)
from dg_lsp.completion.postprocess import (cut_to_block, drop_closers_the_suffix_has, finish, finish_suggestion,
                                           strip_control, trim_suffix_overlap)
from dg_lsp.context import extract_context
from dg_lsp.engine.healing import unheal


def shown(doc: str, line: int, column: int, raw: str) -> str:
    """What the server shows for the engine answer `raw` at (line, column) of `doc` (its production path)."""
    ctx = extract_context(doc, "python", line, column)
    offset = sum(len(x) + 1 for x in doc.split("\n")[:line]) + column
    return finish_suggestion(raw, [], doc[:offset], ctx, selection=False, max_lines=8)


def accept(doc: str, line: int, column: int, text: str) -> str:
    offset = sum(len(x) + 1 for x in doc.split("\n")[:line]) + column
    return doc[:offset] + text + doc[offset:]


def test_trim_text_that_repeats_the_start_of_the_suffix():
    # a tail of closing brackets only is left to drop_closers_the_suffix_has, which balances it
    assert trim_suffix_overlap("foo(a, b)", ")\n") == "foo(a, b)"
    assert finish("a, b)", ")\n", prefix="x = foo(") == "a, b"
    assert trim_suffix_overlap("a, b)", "b)\n") == "a, "
    assert trim_suffix_overlap("x + 1\n    return y", "\n    return y\n") == "x + 1"
    assert trim_suffix_overlap("abc", "xyz") == "abc"
    assert trim_suffix_overlap("y = 2\n    return y\n", "\n    return y\n") == "y = 2"


def test_closers_the_suffix_already_has_are_dropped_but_balanced_ones_kept():
    assert drop_closers_the_suffix_has("a, b)", ")") == "a, b"
    assert drop_closers_the_suffix_has("f(a))", "))", "g(h(") == "f(a)"
    assert drop_closers_the_suffix_has("f(a)", ")", "g(") == "f(a)"
    assert drop_closers_the_suffix_has("a]", ")") == "a]"
    assert drop_closers_the_suffix_has(", b)", ")\n", "foo(a") == ", b"


def test_closers_are_balanced_against_brackets_the_prefix_opened():
    # issue 14.6: the fill closes g(, the suffix closes f(; dropping the fill's ) gave f(g(ab)
    assert drop_closers_the_suffix_has("b)", ")", "y = f(g(a") == "b)"
    assert drop_closers_the_suffix_has("b))", ")", "y = f(g(a") == "b)"
    assert drop_closers_the_suffix_has("b]", "])", "y = f([g[a") == "b]"
    assert open_brackets("x = f('(', \"[\",  # (\n  g(") == ["(", "("]  # strings and comments do not count
    # a line comment by language: `#` starts a private name in JavaScript, `//` divides in Python
    assert open_brackets("this.#run({", "javascript") == ["(", "{"]
    assert open_brackets("n = (a // 2) + (b", "python") == ["("]
    assert open_brackets("f(x) // (", "javascript") == [] and open_brackets("f(x) # (", "python") == []
    doc = "y = f(g(a)\n"
    assert accept(doc, 0, 9, shown(doc, 0, 9, "b)")) == "y = f(g(ab))\n"


def test_cut_to_block_stops_at_dedent_and_line_limit():
    text = "x = 1\n    y = 2\nz = 3\n"
    assert cut_to_block(text, "    ", 8) == "x = 1\n    y = 2"
    assert cut_to_block("a\nb\nc\nd", "", 2) == "a\nb"


def test_finish_mid_line_keeps_one_line_and_strips_controls():
    assert finish("bar(1)\nmore", "\n", mid_line=True) == "bar(1)"
    assert strip_control("a\x00b\x1bc\r\nd") == "abc\nd"
    assert finish("   \n  ", "") == ""


DOC = "def add(xs):\n    total = 0\n    for x in xs:\n        total += x\n    return total\n"


def test_whole_line_hole_keeps_its_newline_on_the_production_path():
    # issue 14.1: the cursor at column 0 before "    return total" (mid_line is true there); the engine's answer
    # (after unheal) is a whole line. It used to lose its newline: "    total += 1    return total".
    text = shown(DOC, 4, 0, "    total += 1\n")
    assert text == "    total += 1\n"
    assert accept(DOC, 4, 0, text).split("\n")[4:6] == ["    total += 1", "    return total"]


def test_whole_line_hole_in_the_indentation_keeps_the_next_texts_column():
    # the cursor after the indentation, before "return": the healed answer has no indentation of its own
    text = shown(DOC, 4, 4, "total += 1\n")
    assert accept(DOC, 4, 4, text).split("\n")[4:6] == ["    total += 1", "    return total"]


def test_whole_line_answer_keeps_only_its_first_line():
    text = shown(DOC, 4, 0, "    total += 1\n    total *= 2\n")
    assert text == "    total += 1\n"


def test_unheal_drops_the_next_lines_indentation_written_without_a_line_break():
    # issue 14.7: "\ny = 1   " (the model wrote the suffix's split indentation on its own line) gave "y = 1   "
    assert unheal("\ny = 1   ", "\n") == "y = 1"
    assert unheal("\ny = 1\n   ", "\n") == "y = 1\n"
    assert unheal("\n    y = 1 \t", "\n    ") == "y = 1"
    doc = "def f():\n    x = 0\n    return x\n"
    healed = unheal("\n    y = 1   ", "\n")
    assert finish(healed, "    return x\n", prefix="def f():\n    x = 0\n", mid_line=True) == "    y = 1"
    # without a line break the answer would join "    return x": not shown rather than "    y = 1       return x"
    assert shown(doc, 2, 0, healed) == ""


def test_trailing_blank_lines_and_double_spaces_at_the_join():
    doc = "def f():\n    y = \n    return y\n"
    assert shown(doc, 1, 8, " 1   ") == "1"
    doc = "def f():\n    pass\n\n\ndef g():\n    return 2\n"
    assert shown(doc, 1, 8, "\n    x = 1\n    \n  \n") == "\n    x = 1"


def test_no_lone_carriage_return_reaches_the_shown_text():
    """LSP breaks lines at \\r too: a lone \\r the model wrote is a line break, shown as \\n, so the editor's line
    index and the server's agree (issue 14, leftover 1)."""
    assert strip_control("a\rb\r\nc\r") == "a\nb\nc\n"
    assert strip_control("a\x85b\u2028c\u2029d") == "abcd"  # other line splitters' separators go
    assert finish("compute(1)\rprint(q)", "\n") == "compute(1)\nprint(q)"
    assert finish("bar(1)\rmore", "\n", mid_line=True) == "bar(1)"  # one line: cut at the \r
    doc = "def f(x):\n    y = x\n    return y\n"
    assert "\r" not in shown(doc, 2, 0, "\n    y += 1\r    z = 2\n   ")


def test_cut_to_block_stops_where_the_lines_can_no_longer_run():
    """HumanEval 21/L2 and 87/L1: diffusion repeating `return` lines; nothing after the first one runs."""
    assert cut_to_block("    return m\n\n    return m\n", "", 8) == "    return m\n"
    assert cut_to_block("    return\n    return\n    return", "", 8) == "    return"
    assert cut_to_block(" x\n    y = 2", "", 8, line_prefix="    return") == " x"  # the cursor's own line
    assert cut_to_block("        break\n        x = 1", "    ", 8) == "        break"
    # still reached: a dedent after the block's end, a case label, the rest of a bracketed return
    assert cut_to_block("    if a:\n        return 1\n    return 2", "", 8) == "    if a:\n        return 1\n    return 2"
    assert cut_to_block("    return 1;\n    case 2:", "", 8) == "    return 1;\n    case 2:"
    assert cut_to_block("    return (\n        a,\n    )\n    y", "", 8) == "    return (\n        a,\n    )"
    assert cut_to_block("    returned = 1\n    x = 2", "", 8) == "    returned = 1\n    x = 2"
    assert cut_to_block("    return\n    x = 1", "", 8, reach_cut=False) == "    return\n    x = 1"  # a selection


def test_the_production_path_cuts_unreachable_lines_but_never_a_selection_fill():
    doc = "def f(a):\n    \n"
    ctx = extract_context(doc, "python", 1, 4)
    raw = "return a\n    return a\n    x = 1"
    assert finish_suggestion(raw, [], doc[:14], ctx, selection=False, max_lines=8) == "return a"
    assert finish_suggestion(raw, [], doc[:14], ctx, selection=True, max_lines=8) == raw


def test_code_before_the_cursor_at_a_line_end_shows_the_rest_of_that_line_only():
    """The statement being written is finished on its line: the lines after it are the document's own."""
    doc = "def f(agents, ua):\n    for agent in sel\n        if agent == '*':\n            return True\n"
    raw = "f.agents:\n        if agent.startswith(ua):\n            return True"
    assert shown(doc, 1, len("    for agent in sel"), raw) == "f.agents:"
    # an answer that starts a new line (the cursor's line was done) keeps the cursor's block
    done = "def f(xs):\n    for x in xs:\n    return 1\n"
    assert shown(done, 1, len("    for x in xs:"), "\n        print(x)\n        y = x") == "\n        print(x)\n        y = x"
    # a blank line at the end of a block still gets the cursor's block
    blank = "def f(xs):\n    total = 0\n    for x in xs:\n        \n    return total\n"
    assert shown(blank, 3, 8, "total += x\n        print(x)") == "total += x\n        print(x)"


def test_a_blank_line_between_lines_of_code_shows_one_statement():
    """Where the line right below the cursor's blank line is code, the answer goes between lines that are there:
    above deeper lines one line (the cursor's line heads them: HumanEval/18/L2 seen from a blank line got the loop's
    body written again above the body its header already has); above lines at the cursor's depth one statement, its
    first line and the lines indented under it (a loop and its body, not the lines after it)."""
    same = "def f(xs):\n    total = 0\n    \n    return total\n"
    assert shown(same, 2, 4, "total = sum(xs)\n    print(total)") == "total = sum(xs)"
    assert shown(same, 2, 4, "for x in xs:\n        total += x\n    print(total)") == "for x in xs:\n        total += x"
    deeper = "def f(s):\n    times = 0\n    \n        if s[i] == 'a':\n            times += 1\n    return times\n"
    raw = "for i in range(len(s)):\n        if s[i] == 'a':\n            times += 1"
    assert shown(deeper, 2, 4, raw) == "for i in range(len(s)):"
    # an empty line (no blanks typed) takes the block's indentation for its depth
    empty = same.replace("\n    \n", "\n\n")
    assert shown(empty, 2, 0, "    total = sum(xs)\n    print(total)") == "    total = sum(xs)"
    # a blank line, or a dedent, below the cursor's line: the cursor's block
    for doc, line in (("def f(xs):\n    total = 0\n    \n\n    return total\n", 2),
                      ("def f(xs):\n    for x in xs:\n        \n    return xs\n", 2)):
        column = len(doc.split("\n")[line])
        assert shown(doc, line, column, "y = 1\n" + " " * column + "z = 2") == "y = 1\n" + " " * column + "z = 2"


def test_a_suggestion_that_is_the_code_right_below_it_again_is_not_shown():
    """A user opens a line inside code to add one, and the model writes the line that comes next, which is already
    there (jinja2's utils.py: `return result` above `return result`, click's utils.py: `self.encoding = encoding`
    above itself, an `if` and its body above themselves). Blank lines aside, indentation and all."""
    doc = "def f(xs):\n    result = list(xs)\n    \n    if not result:\n        return None\n    return result\n"
    assert shown(doc, 2, 4, "if not result:\n        return None") == ""
    assert shown(doc, 2, 4, "if not result:\n        return []") == "if not result:\n        return []"
    assert shown(doc, 2, 4, "result.sort()") == "result.sort()"
    # a whole-line hole (the cursor at the start of `    return result`): that line is below the suggestion
    whole = "def f(xs):\n    result = list(xs)\n    return result\n"
    assert shown(whole, 2, 4, "return result\n    ") == ""
    # another indentation is another line; code before the cursor on its line is no line start
    from dg_lsp.completion.postprocess import repeats_the_code_below

    assert repeats_the_code_below("return None", "    if not result:\n        ", "\n        return None\n")
    assert not repeats_the_code_below("return None", "    if not result:\n    ", "\n        return None\n")
    assert not repeats_the_code_below("None", "    return ", "\n    return None\n")


def test_a_multi_line_text_loses_the_lines_at_its_end_that_the_code_below_already_has():
    """Its first line is kept; the last repeated line may stop short (the canvas ended inside it); blank lines
    aside; a line at another indentation, or lines that are not the next ones, stay."""
    from dg_lsp.completion.postprocess import trim_repeated_tail

    prefix = "class F:\n    def __init__(self, encoding, errors, atomic):\n        "
    suffix = "\n        self.errors = errors\n\n        self.atomic = atomic\n        self.name = None\n"
    ran_on = "self.encoding = encoding\n        self.errors = errors\n        self.atomic = ato"
    assert trim_repeated_tail(ran_on, prefix, suffix) == "self.encoding = encoding"
    assert trim_repeated_tail("self.errors = errors\n        self.x = 1", prefix, suffix) == \
        "self.errors = errors\n        self.x = 1"
    assert trim_repeated_tail("x = 1\n    self.errors = errors", prefix, suffix) == "x = 1\n    self.errors = errors"
    assert trim_repeated_tail("x = 1\n        self.atomic = atomic", prefix, suffix) == \
        "x = 1\n        self.atomic = atomic"  # not the next line
    # through the production path, at a blank line above a blank line (the cursor's block is shown)
    doc = "def f(a):\n    b = a\n    \n\n    return b\n"
    assert shown(doc, 2, 4, "c = b\n\n    return b") == "c = b"


def test_shown_end_asks_a_left_to_right_fill_to_stop_where_the_shown_text_ends():
    from dg_lsp.completion.postprocess import shown_end

    for doc, line, col, expected in [("x = foo(a)\n", 0, 5, {"line_only": True}),
                                     ("    for agent in sel\n", 0, 20, {"block_indent": 4, "block_lines": 8,
                                                                        "rest_of_line": True}),
                                     ("def f():\n    \n", 1, 4, {"block_indent": 4, "block_lines": 8}),
                                     ("def f():\n    x = 1\n    \n    return x\n", 2, 4,
                                      {"block_indent": 5, "block_lines": 8, "one_statement": True}),
                                     ("def f(a):\n    \n        return a\n", 1, 4, {"line_only": True})]:
        ctx = extract_context(doc, "python", line, col)
        assert shown_end(ctx, False, 8) == expected
        assert shown_end(ctx, True, 8) == {}


def test_a_suggestion_that_finishes_the_cursors_statement_is_shown_where_tree_sitter_misreads_the_window():
    """`elif value i|` leaves no window that compiles or parses cleanly across the hole; tree-sitter recovers the
    lines around it differently once the line is finished, which read as an added error and hid the right answer
    (2 of the 6 empty held-out line-rest answers). Python finds nothing wrong with it up to the next line."""
    doc = ("def parse(items, value):\n    for key in items:\n        if key:\n            if value:\n"
           "                if not value:\n                    return\n            else:\n                items.append(key)\n"
           "        elif value i\n            items.append(value)\n            seen = True\n        else:\n"
           "            return\n    return items\n")
    column = len("        elif value i")
    assert shown(doc, 8, column, "s not None:\n            if x") == "s not None:"
    assert shown(doc, 8, column, "s not (:\n") == ""  # still broken: nothing
    assert shown(doc, 8, column, "s None\n") == ""  # no colon: Python complains on the cursor's line


def test_python_floor_division_is_not_a_comment_when_closers_are_balanced():
    # `range(n // 2)` above: with `//` read as a comment its `)` went uncounted, a `(` stayed open, and a fill's `)`
    # that the suffix also has was kept (`f(x))`)
    prefix = "for i in range(n // 2):\n    total += f("
    assert drop_closers_the_suffix_has("x)", ")\n", prefix, "python") == "x"
    assert drop_closers_the_suffix_has("x)", ")\n", "total += f(", "python") == "x"
    doc = prefix + ")\n"
    assert accept(doc, 1, len("    total += f("), shown(doc, 1, len("    total += f("), "x)")) == doc[:-2] + "x)\n"


def test_a_block_closer_out_of_line_with_its_opener_is_counted():
    aligned = "f() {\n  if (a) {\n    x()\n  } else {\n    y()\n  }\n}\n"
    assert misaligned_closers(aligned, "javascript") == 0
    # `} el`: the else's `}` closes the if's block, the if's `}` the function's, and the function's nothing
    assert misaligned_closers(aligned.replace("} else {", "} el"), "javascript") == 2
    # closers inside a line, and brackets in strings and comments, do not count
    assert misaligned_closers("f({\n    a: 1 })\ng('}')  // }\n", "javascript") == 0
    # from an offset on: the closers before it do not count, though the brackets before it still match
    broken = aligned.replace("} else {", "} el")
    assert misaligned_closers(broken, "javascript", broken.index("} el") + 1) == 2
    assert misaligned_closers(broken, "javascript", broken.index("    y()")) == 2
    assert misaligned_closers(broken, "javascript", len(broken) - 2) == 1  # the function's `}`: it closes nothing


def test_only_closers_deeper_than_their_opener_count_where_asked():
    # a condition continued over lines: its `{` is on a line indented deeper than the if's `}`
    text = "f() {\n  if (a &&\n      b) {\n    x()\n  }\n}\n"
    assert misaligned_closers(text, "javascript") == 1
    assert misaligned_closers(text, "javascript", deeper=True) == 0
    # a block closed early: the function's `}` then closes nothing, and the if's closes the function's `{`
    early = "f() {\n  if (a) {\n  }\n    x()\n  }\n}\n"
    assert misaligned_closers(early, "javascript", deeper=True) == 2


def test_where_a_text_ends_inside_a_string_or_comment():
    assert ends_in_literal("output.standard(`${ite", "javascript")
    assert ends_in_literal("x = 1  // note (", "javascript")
    assert ends_in_literal("s = 'abc", "python")
    assert not ends_in_literal("f(a, 'b', ", "javascript")
    assert not ends_in_literal("x = a / b", "javascript")


def test_a_recovering_count_lets_a_closer_close_the_brackets_left_open_inside_it():
    text = "f() {\n  if (by\n  }\n"
    assert open_counts(text, [len(text)], "javascript") == [2]  # the `}` meets the `(` and is ignored
    assert open_counts(text, [len(text)], "javascript", recover=True) == [0]  # it closes the `(` and the `{`
    assert open_counts("a) {\n", [5], "javascript", recover=True) == [1]  # a closer with nothing to close: ignored


def test_a_javascript_regex_literal_is_no_comment_and_holds_no_brackets():
    # npm's `/^https?:\/\//.test(w)`: read as a `//` comment, its line's `(` and `{` were lost to the scan
    assert open_brackets("if (/^https?:\\/\\//.test(w)) {", "javascript") == ["{"]
    assert open_brackets("path.replace(/^package\\//, '')", "typescript") == []
    assert open_brackets("return /[{(]/.test(x)", "javascript") == []  # a `/` after `return` starts a regex
    # after an operand a `/` divides, and `//` is still a comment
    assert open_brackets("x = a / b / (c", "javascript") == ["("]
    assert open_brackets("f(x) / 2 + (", "javascript") == ["("]
    assert open_brackets("a = b // c (", "javascript") == []
    # other languages have no regex literals: there the brackets count (the `]` meets the `(` and is ignored)
    assert open_brackets("x = /[(]/", "javascript") == []
    assert open_brackets("x = /[(]/", "python") == ["[", "("]


def test_a_rust_lifetime_is_no_string_and_a_char_literal_holds_no_bracket():
    # pydantic-core's `fn module_init(m: &Bound<'_, PyModule>) -> PyResult<()> {`: read as a string from `'_`, its
    # `{` was lost to the scan
    assert open_brackets("fn f(m: &Bound<'_, PyModule>) -> R<()> {", "rust") == ["{"]
    assert open_brackets("'outer: loop {", "rust") == ["{"]
    assert open_brackets("let c = '{'; let n = '\\n'; let u = '\\u{1F600}'; f(", "rust") == ["("]
    # elsewhere a `'` still opens a string
    assert open_brackets("x = '{' + f(", "javascript") == ["("]


def test_a_blocks_end_and_the_bracket_its_closer_meets():
    text = "f() {\n  if (a) {\n    x(1)\n  }\n  y()\n}\n"
    at = text.index("    x(1)")
    # the call's `)` closes what opened after `at`: the end is the if's `}`, which meets its `{` on a line indented 2
    assert block_end(text, at, "javascript") == (text.index("  }") + 2, ("{", 2))
    assert line_closers(text, text.index("  }") + 2, "javascript") == [(text.index("  }") + 2, "}", ("{", 2))]
    assert block_end(text, text.index("y()"), "javascript") == (len(text) - 2, ("{", 0))
    assert block_end("f(a\n}", 2, "javascript") == (4, ("(", 0))
    assert block_end("a\n}", 1, "javascript") == (2, None)
    assert line_closers("a)\n}", 3, "javascript") == [(3, "}", None)]  # nothing open: the `)` closed nothing either
    # each closer to the line's end; a mismatch meets the `(`, and closes nothing
    assert line_closers("f(a, {\n  b\n})\n}", 11, "javascript") == [(11, "}", ("{", 0)), (12, ")", ("(", 0))]
    assert line_closers("f(a\n}) x", 4, "javascript") == [(4, "}", ("(", 0)), (5, ")", ("(", 0))]
    assert line_closers("f(`a\n}`) x", 5, "javascript") == [(7, ")", ("(", 0))]  # the `}` is in a string
    assert block_end("f(a, b)", 0, "javascript") is None


def test_open_spans_give_each_open_brackets_offset_and_its_lines_indentation():
    text = "class A {\n  f(a, [b,\n    c]) {\n    g(\n"
    spans = [("{", text.index("{"), 0), ("{", text.index(") {") + 2, 4), ("(", text.index("g(") + 1, 0)]
    assert open_spans(text, "javascript") == spans
    assert [b for b, _, _ in open_spans(text, "javascript")] == open_brackets(text, "javascript")
    assert open_spans("x = '{'  # {\n", "python") == []
