from dg_lsp.completion.postprocess import (cut_to_block, drop_closers_the_suffix_has, finish, strip_control,
                                           trim_suffix_overlap)


def test_trim_text_that_repeats_the_start_of_the_suffix():
    assert trim_suffix_overlap("foo(a, b)", ")\n") == "foo(a, b"
    assert trim_suffix_overlap("x + 1\n    return y", "\n    return y\n") == "x + 1"
    assert trim_suffix_overlap("abc", "xyz") == "abc"
    assert trim_suffix_overlap("y = 2\n    return y\n", "\n    return y\n") == "y = 2"


def test_closers_the_suffix_already_has_are_dropped_but_balanced_ones_kept():
    assert drop_closers_the_suffix_has("a, b)", ")") == "a, b"
    assert drop_closers_the_suffix_has("f(a))", "))") == "f(a)"
    assert drop_closers_the_suffix_has("f(a)", ")") == "f(a)"
    assert drop_closers_the_suffix_has("a]", ")") == "a]"


def test_cut_to_block_stops_at_dedent_and_line_limit():
    text = "x = 1\n    y = 2\nz = 3\n"
    assert cut_to_block(text, "    ", 8) == "x = 1\n    y = 2"
    assert cut_to_block("a\nb\nc\nd", "", 2) == "a\nb"


def test_finish_mid_line_keeps_one_line_and_strips_controls():
    assert finish("bar(1)\nmore", "\n", mid_line=True) == "bar(1)"
    assert strip_control("a\x00b\x1bc\r\nd") == "abc\nd"
    assert finish("   \n  ", "") == ""


def test_finish_whole_line_hole_keeps_its_newline():
    # Cursor at column 0 of a non-empty line: the answer is a new line before it.
    assert finish("    total += x\n", "    return total\n", indent="    ") == "    total += x\n"
