"""engine/block_end.py: where the block rule of the shown text (postprocess.cut_to_block) is decided, token by
token, and that a fill stopped there shows what the whole fill shows."""

from __future__ import annotations

import itertools

import pytest

from dg_lsp.completion.postprocess import cut_to_block
from dg_lsp.engine.block_end import block_end_slot


@pytest.mark.parametrize("pieces,heal,indent,lines,expected", [
    # the README demo: `return ` then the next function; decided by the `d` of `def`, at column 0
    ([" a", " +", " b", "\n\n", "def", " add"], " ", 4, 8, 4),
    # a blank line and indentation that is still growing decide nothing until the first character
    ([" x", "\n", "  ", "  ", "y", "\n", "z"], " ", 4, 8, 6),
    # the healing tail is the hole's own first line break: the answer's first line is not a "later" line
    (["\n", "    return", " x", "\n", "\n", "class"], "\n", 4, 8, 5),
    (["\n    ", "return", " x", "\n", "x"], "\n    ", 4, 8, 4),
    # max_lines: decided by the line break that ends the last shown line
    (["a", "\n", "b", "\n", "c"], "", 0, 2, 3),
    # a text that does not start with the tail is left to healing.unheal: no decision
    (["return", "\n", "x"], "\n", 4, 8, None),
    # the pad (None) ends the hole first
    ([" a", None, "\n", "x"], " ", 4, 8, None),
    # nothing decided yet
    ([" a", " +", "\n", "    b"], " ", 4, 8, None),
])
def test_the_slot_that_decides_the_block_end(pieces, heal, indent, lines, expected):
    assert block_end_slot(pieces, heal, indent, lines) == expected


@pytest.mark.parametrize("answer,indent,lines", [
    (" a + b\n\ndef add(a, b):\n    return a +", 4, 8),
    ("\n    x = 1\n    y = 2\n  z\nq", 4, 8),
    ("\n    if x:\n        y\n    else:\n        z\n\nw = 1", 4, 3),
    (" total\n    more\n        deeper\n    x = 2\n", 4, 3),
])
def test_a_fill_cut_where_the_end_is_decided_shows_the_same_block(answer, indent, lines):
    """What cut_to_block keeps of the whole answer equals what it keeps of the pieces up to the deciding one (each
    character a piece, the worst case), so stopping there changes nothing that is shown."""
    heal = answer[0] if answer[0] in " \n" else ""
    k = block_end_slot(list(answer), heal, indent, lines)
    assert k is not None
    body = answer[len(heal):]
    whole = cut_to_block(body, " " * indent, lines)
    cut = answer[:k + 1][len(heal):]
    assert cut_to_block(cut, " " * indent, lines) == whole, (cut, whole)
    assert len(cut) < len(body)


@pytest.mark.parametrize("pieces,heal,expected", [
    # the cursor ends a line of code: a first line with text is decided by its line break
    (["f", ".agents", ":\n", "        if"], "sel", None),  # the word tail "sel" is not written: left to unheal
    (["self", ".agents", ":\n", "        if"], "sel", 2),
    (["xs", ")", "\n"], "", 2),
    # an answer that starts a new line (the line was done) keeps the block rule
    (["\n", "    x", " = 1", "\n", "    y"], "", None),
    (["\n", "    x", "\n", "z"], "", 3),
])
def test_rest_of_line_is_decided_by_the_first_line_break_after_text(pieces, heal, expected):
    assert block_end_slot(pieces, heal, 4, 8, rest_of_line=True) == expected
    from dg_lsp.engine.block_end import BlockEnd

    assert BlockEnd((), heal, 4, 8, True).end_slot(pieces) == expected


def test_a_rest_of_line_fill_cut_where_the_end_is_decided_shows_the_same_text():
    """finish(rest_of_line=True) keeps of the whole answer what it keeps of the pieces up to the deciding one."""
    from dg_lsp.completion.postprocess import finish

    prefix, suffix = "def f(agents):\n    for agent in sel", "\n        if agent:\n            pass\n"
    answer = "self.agents:\n        x = 1\n        y = 2"
    k = block_end_slot(list(answer), "sel", 4, 8, rest_of_line=True)
    assert k is not None and k < len(answer) - 1
    whole = finish(answer[3:], suffix, prefix=prefix, indent="    ", rest_of_line=True)
    cut = finish(answer[:k + 1][3:], suffix, prefix=prefix, indent="    ", rest_of_line=True)
    assert whole == cut == "f.agents:"


@pytest.mark.parametrize("answer,expected", [
    # one statement at a blank line (block indent one deeper than its first line, at 2): the block it opens goes on
    # through its `}` line back at the first line's depth, and the line after that decides
    ("if (n < 0) {\n    n = -n;\n  }\n  return n;", "if (n < 0) {\n    n = -n;\n  }"),
    # `} else {` opens the statement's next block
    ("if (n) {\n    a();\n  } else {\n    b();\n  }\n  c();", "if (n) {\n    a();\n  } else {\n    b();\n  }"),
    # the Allman way: a `{` line right under the first line, at its depth
    ("if (n < 0)\n  {\n    n = -n;\n  }\n  return n;", "if (n < 0)\n  {\n    n = -n;\n  }"),
    # a statement with no block ends at the next line at its depth
    ("n = -n;\n  return n;", "n = -n;"),
    # a `{` line after other lines is not the statement's
    ("if (n < 0)\n    n = -n;\n  {\n  }", "if (n < 0)\n    n = -n;"),
])
def test_one_statement_keeps_its_block_through_the_closing_brace(answer, expected):
    """`braces`: the engine stops where cut_to_block (language JavaScript) ends the statement, and not before."""
    k = block_end_slot(list(answer), "", 3, 8, braces=True)
    assert k is not None
    whole = cut_to_block(answer, "   ", 8, "  ", True, "javascript")
    assert whole == expected
    assert cut_to_block(answer[:k + 1], "   ", 8, "  ", True, "javascript") == whole
    # without braces (the rule as it was) the statement ends before its `}` or `{` line
    assert block_end_slot(list(answer), "", 3, 8) <= k
    # Python never reads braces so: its statement ends at the first later line at the first line's depth
    head, *rest = answer.split("\n")
    deeper = list(itertools.takewhile(lambda line: len(line) - len(line.lstrip()) >= 3, rest))
    assert cut_to_block(answer, "   ", 8, "  ", True, "python") == "\n".join([head, *deeper])
