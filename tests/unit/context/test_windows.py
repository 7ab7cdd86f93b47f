"""Prefix/suffix windows: budgets, line-boundary cuts, selections, clamping, encodings.

The prefix window starts at a stable anchor (context/windows.py; tests/unit/context/test_prefix_window.py): the
first line start at or after `cursor - budget` rounded up to a multiple of the stride (budget / 4), the budget
3.5 characters a token. The suffix window takes whole lines after the hole within its token budget."""

from __future__ import annotations

from dg_lsp.context import extract_context

from .helpers import at, line_start, offset_of

# Every line is 34 characters plus "\n": exactly 10 tokens by the default estimate.
FILLER = [f"value_{i:03d} = {i:03d}  # filler line xxx" for i in range(30)]
FUNCTION = [
    "def target(first, second, third_):",
    *[f"    s_{i:02d} = first + second * {100 + i}  #" for i in range(12)],
    "    return s_11 + third_  # done!!",
]
TAIL = [f"after_{i:03d} = {i:03d}  # filler line xxx" for i in range(30)]
LINES = FILLER + FUNCTION + [""] + TAIL
SOURCE = "\n".join(LINES) + "\n"
DEF_LINE = len(FILLER)  # 30
RETURN_LINE = DEF_LINE + len(FUNCTION) - 1  # 43


def test_fixture_lines_cost_ten_tokens_each():
    assert {len(line) + 1 for line in FILLER + FUNCTION + TAIL} == {35}


def test_prefix_budget_keeps_whole_lines_above_the_cursor():
    cursor_line = 20  # offset 700; budget 55 tokens = 192 characters, stride 48: 700 - 192 = 508 -> 528 -> line 16
    ctx = extract_context(SOURCE, "python", cursor_line, 0, prefix_budget=55, suffix_budget=0)

    assert ctx.prefix_start_line == 16
    assert ctx.prefix == "".join(line + "\n" for line in LINES[16:20])
    assert ctx.prefix_truncated is True
    assert ctx.cursor == offset_of(SOURCE, cursor_line, 0)


def test_tight_prefix_budget_grows_up_from_the_cursor_by_whole_lines():
    cursor = (DEF_LINE + 8, 4)
    ctx = extract_context(SOURCE, "python", *cursor, prefix_budget=31)

    assert ctx.prefix_start_line == cursor[0] - 2  # 31 - 4/3.5 leaves room for two lines
    assert ctx.prefix == SOURCE[line_start(SOURCE, cursor[0] - 2) : offset_of(SOURCE, *cursor)]
    assert ctx.prefix_truncated is True


def test_generous_prefix_budget_grows_past_the_function_head():
    cursor = (DEF_LINE + 8, 4)
    ctx = extract_context(SOURCE, "python", *cursor, prefix_budget=125)

    # offset 1334; 437 characters, stride 109: 897 -> 981 -> line 29, the filler line above the function
    assert ctx.prefix_start_line == DEF_LINE - 1
    assert ctx.prefix.startswith(FILLER[-1] + "\n" + FUNCTION[0])


def test_suffix_keeps_the_rest_of_the_function_then_following_lines():
    cursor = (DEF_LINE + 8, 4)
    rest_cost = (len(LINES[cursor[0]]) - 4 + 1) / 3.5 + (RETURN_LINE - cursor[0]) * 10
    exact = extract_context(SOURCE, "python", *cursor, suffix_budget=int(rest_cost) + 1)
    more = extract_context(SOURCE, "python", *cursor, suffix_budget=int(rest_cost) + 21)

    assert exact.suffix_end_line == RETURN_LINE
    assert exact.suffix == SOURCE[offset_of(SOURCE, *cursor) : line_start(SOURCE, RETURN_LINE + 1)]
    assert exact.suffix.endswith("    return s_11 + third_  # done!!\n")
    assert exact.suffix_truncated is True
    assert more.suffix_end_line == RETURN_LINE + 2  # blank line (~0.3) + one 10-token line
    assert more.suffix.endswith(TAIL[0] + "\n")


def test_custom_token_counter_bounds_the_suffix_window():
    def words(text: str) -> int:
        return len(text.split())

    cursor = (DEF_LINE + 6, 4)
    ctx = extract_context(
        SOURCE, "python", *cursor, prefix_budget=40, suffix_budget=25, count_tokens=words
    )

    assert words(ctx.suffix) <= 25
    assert words(ctx.suffix + LINES[ctx.suffix_end_line + 1]) > 25
    assert SOURCE.index(ctx.prefix) == line_start(SOURCE, ctx.prefix_start_line)  # the prefix: whole lines


def test_cursor_line_longer_than_the_budget_is_cut_inside_the_line():
    line = "data = '" + "abcdefghij" * 200 + "'"
    source = "import os\n" + line + "\nprint(data)\n"
    ctx = extract_context(source, "python", 1, 1500, prefix_budget=100, suffix_budget=10)

    # 350 characters = 100 tokens; the anchor rounded up to a multiple of the stride (87) inside the line
    assert line[:1500].endswith(ctx.prefix) and 350 - 87 < len(ctx.prefix) <= 350
    assert (ctx.cursor - len(ctx.prefix)) % 87 == 0
    assert ctx.suffix == line[1500 : 1500 + 35]
    assert (ctx.prefix_start_line, ctx.suffix_end_line) == (1, 1)
    assert ctx.prefix_truncated is True and ctx.suffix_truncated is True


def test_zero_budgets_give_empty_windows():
    ctx = extract_context(SOURCE, "python", DEF_LINE + 3, 6, prefix_budget=0, suffix_budget=0)

    assert (ctx.prefix, ctx.suffix) == ("", "")
    assert ctx.line_prefix == LINES[DEF_LINE + 3][:6]


def test_selection_prefix_before_start_suffix_after_end():
    start, end = (DEF_LINE + 2, 4), (DEF_LINE + 4, 11)
    ctx = extract_context(SOURCE, "python", *start, end=end, suffix_budget=1024)

    assert ctx.prefix == SOURCE[: offset_of(SOURCE, *start)]
    assert ctx.suffix == SOURCE[offset_of(SOURCE, *end) :]
    assert ctx.line_prefix == "    "
    assert ctx.line_suffix == LINES[DEF_LINE + 4][11:]
    assert (ctx.start, ctx.end) == (start, end)
    assert ctx.enclosing is not None and ctx.enclosing.name == "target"
    assert ctx.mid_line is True


def test_reversed_selection_is_normalised():
    start, end = (DEF_LINE + 2, 4), (DEF_LINE + 4, 11)
    forward = extract_context(SOURCE, "python", *start, end=end)
    backward = extract_context(SOURCE, "python", *end, end=start)

    assert backward == forward


def test_selection_spanning_two_functions_has_no_enclosing_function():
    source = "def a():\n    return 1\n\n\ndef b():\n    return 2\n"
    ctx = extract_context(source, "python", 1, 4, end=(5, 4))

    assert ctx.enclosing is None
    assert ctx.prefix == "def a():\n    "
    assert ctx.suffix == "return 2\n"


def test_positions_past_the_end_clamp():
    past_document = extract_context(SOURCE, "python", 10_000, 3)
    past_line = extract_context(SOURCE, "python", 2, 999)
    negative = extract_context(SOURCE, "python", -4, -2)

    assert past_document.start == (len(LINES), 0)  # the empty line after the final "\n"
    assert past_document.suffix == "" and past_document.prefix.endswith(TAIL[-1] + "\n")
    assert past_line.start == (2, len(LINES[2]))
    assert past_line.line_prefix == LINES[2] and past_line.suffix.startswith("\n" + LINES[3])
    assert negative.start == (0, 0) and negative.prefix == ""


def test_selection_end_past_the_end_clamps_to_document_end():
    ctx = extract_context(SOURCE, "python", 3, 0, end=(99_999, 99_999))

    assert ctx.end == (len(LINES), 0)
    assert ctx.suffix == ""
    assert ctx.suffix_truncated is False


def test_unknown_language_gives_plain_windows():
    for language_id in ("plaintext", None, "cobol"):
        ctx = extract_context(SOURCE, language_id, DEF_LINE + 3, 4, prefix_budget=22)

        assert ctx.language is None
        assert ctx.scopes == () and ctx.enclosing is None
        assert ctx.prefix == LINES[DEF_LINE + 1] + "\n" + LINES[DEF_LINE + 2] + "\n    "
        assert ctx.indent == "    "


def test_non_bmp_characters_count_as_one_column():
    source = (
        'def greet(name):\n    msg = "h\u00e9llo \U0001f600 w\u00f6rld \U0001f389"; n = len(msg)\n'
        "    return n\n"
    )
    line, column = at(source, "n = len")
    ctx = extract_context(source, "python", line, column + 1)

    assert ctx.line_prefix.endswith("\U0001f389\"; n")
    assert ctx.line_suffix == " = len(msg)"
    assert ctx.prefix + ctx.suffix == source
    assert ctx.enclosing is not None and ctx.enclosing.name == "greet"


def test_scopes_after_many_astral_characters_use_byte_offsets_correctly():
    emoji_line = "# " + "\U0001f600" * 300
    source = emoji_line + "\n" + "def after():\n    x = '\U0001f680\U0001f680'; y = 1\n"
    line, column = at(source, "y = 1")
    inside = extract_context(source, "python", line, column)
    header_end = extract_context(source, "python", 1, len("def after():"))
    comment_end = extract_context(source, "python", 0, len(emoji_line))

    assert inside.enclosing is not None and inside.enclosing.name == "after"
    assert inside.enclosing.start_line == 1
    assert header_end.enclosing == inside.enclosing
    assert comment_end.enclosing is None


def test_crlf_line_endings():
    from .samples import PYTHON

    source = PYTHON.replace("\n", "\r\n")
    line, column = at(PYTHON, "total = a + b")
    ctx = extract_context(source, "python", line, column)
    line_end = extract_context(source, "python", line, 100)
    tight = extract_context(source, "python", line, column, prefix_budget=10)

    assert ctx.enclosing is not None and ctx.enclosing.name == "add"
    assert ctx.line_suffix == "total = a + b"
    assert ctx.suffix.startswith("total = a + b\r\n        return total\r\n")
    assert ctx.prefix + ctx.suffix == source
    assert line_end.line_prefix == "        total = a + b" and line_end.mid_line is False
    assert line_end.suffix.startswith("\r\n")
    assert tight.prefix == "        "  # 35 characters, stride 8: the anchor is rounded up to the cursor's line
    assert tight.prefix_start_line == line


def test_lone_carriage_returns_are_line_breaks_but_form_feeds_are_not():
    source = "a = 1\rb = 2\x0cc = 3\rd = 4"
    ctx = extract_context(source, "python", 1, 7)

    assert ctx.line_prefix == "b = 2\x0cc"
    assert ctx.prefix == "a = 1\rb = 2\x0cc"
    assert ctx.suffix == " = 3\rd = 4"


def test_the_gates_window_holds_the_suffix_and_reaches_further():
    cursor = (DEF_LINE + 8, 4)
    ctx = extract_context(SOURCE, "python", *cursor, suffix_budget=30, judge_budget=200)
    assert ctx.suffix_truncated and ctx.judge_suffix.startswith(ctx.suffix)
    assert ctx.judge_suffix.endswith("    return s_11 + third_  # done!!\n" + "\n" + "\n".join(TAIL[:14]) + "\n")
    # the document's end: both windows end with it
    whole = extract_context(SOURCE, "python", *cursor, suffix_budget=30, judge_budget=10_000)
    assert not whole.judge_truncated and SOURCE.endswith(whole.judge_suffix)
    # a judge budget below the model's never gives a shorter window than the model's
    short = extract_context(SOURCE, "python", *cursor, suffix_budget=30, judge_budget=5)
    assert short.judge_suffix == short.suffix and short.judge_truncated
