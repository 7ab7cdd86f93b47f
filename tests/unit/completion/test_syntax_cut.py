"""Cutting a multi-line suggestion at the lines that break the file's syntax (pure function, tree-sitter)."""

from dg_lsp.completion.service import cut_at_syntax_errors

PREFIX = "def mean(values):\n    return sum(values) / len(values"
SUFFIX = "\n"


def test_a_right_first_line_is_kept_and_the_broken_lines_after_it_are_cut():
    text = ")\n    if = len(values(\n        rest))))"
    assert cut_at_syntax_errors(text, PREFIX, SUFFIX, "python") == ")"


def test_the_longest_clean_run_of_lines_is_kept():
    text = ")\n    x = 1\n    y = = 2 )"  # 2 errors where the window alone has 1
    assert cut_at_syntax_errors(text, PREFIX, SUFFIX, "python") == ")\n    x = 1"


def test_clean_text_single_lines_unknown_languages_and_hopeless_text_are_unchanged():
    clean = ")\n    x = 1"
    assert cut_at_syntax_errors(clean, PREFIX, SUFFIX, "python") == clean
    assert cut_at_syntax_errors(") ((", PREFIX, SUFFIX, "python") == ") (("  # one line: nothing to cut
    assert cut_at_syntax_errors(")\n  (((", PREFIX, SUFFIX, None) == ")\n  ((("
    hopeless = "((\n    ]]"  # no leading run of lines is clean
    assert cut_at_syntax_errors(hopeless, PREFIX, SUFFIX, "python") == hopeless
