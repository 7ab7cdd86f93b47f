"""The prefix window starts at a stable anchor, so typing at the cursor only appends to the prompt."""

import random

from dg_lsp.context.windows import cursor_offset, line_start, stable_prefix


def _doc(lines=400, seed=0):
    rnd = random.Random(seed)
    return "".join("    " * rnd.randint(0, 3) + "x" * rnd.randint(0, 60) + "\n" for _ in range(lines))


def test_line_start_and_cursor_offset_agree_with_splitting():
    text = _doc() * 200  # over the bisecting threshold
    parts = text.split("\n")
    for line in (0, 1, 77, 5000, len(parts) - 1):
        assert line_start(text, line) == sum(len(p) + 1 for p in parts[:line])
    assert line_start(text, len(parts) + 5) == len(text)
    assert cursor_offset("ab\r\ncd\n", 0, 99) == 2  # clamped before the \r\n
    assert cursor_offset("ab\r\ncd\n", 1, 1) == 5
    assert cursor_offset("ab", 7, 0) == 2
    # LSP lines: a lone \r ends a line too
    assert [line_start("a\rb\r\nc\nd", k) for k in range(5)] == [0, 2, 5, 7, 8]
    assert cursor_offset("a\rb", 0, 9) == 1 and cursor_offset("a\rb", 1, 9) == 3


def test_window_ends_at_the_cursor_and_starts_at_a_line_within_the_budget():
    text = _doc()
    for line in (0, 3, 100, 399):
        prefix, cursor = stable_prefix(text, line, 2, budget=1000, stride=250)
        assert text[:cursor].endswith(prefix)
        assert len(prefix) <= 1000 + 80
        start = cursor - len(prefix)
        assert start == 0 or text[start - 1] == "\n"
        if start > 0:
            assert len(prefix) > 1000 - 250 - 80


def test_typing_at_the_cursor_only_appends_to_the_window():
    text = _doc()
    line = 200
    start = cursor_offset(text, line, 0)
    typed = "result = compute(alpha, beta) + 1"
    anchors = []
    for k in range(len(typed) + 1):
        doc = text[:start] + typed[:k] + text[start:]
        prefix, cursor = stable_prefix(doc, line, k, budget=1000, stride=250)
        anchors.append(cursor - len(prefix))
        assert prefix.endswith(typed[:k])
    assert len(set(anchors)) <= 2  # at most one jump over 34 characters with a stride of 250
