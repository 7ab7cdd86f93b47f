"""Multi-megabyte documents: same answers as small ones (timing is the bench's job)."""

from __future__ import annotations

import pytest

from dg_lsp.context import document, extract_context

from .helpers import line_start, offset_of

FUNCTIONS = 12_000  # 10 lines each: 120k lines, about 5 MB


def _function(index: int) -> list[str]:
    return [
        f"def handler_{index:05d}(request, response, *, retries=3, timeout=30.0):",
        f'    """Handle request number {index} and write a response, retrying on failure."""',
        "    attempt = 0",
        "    while attempt < retries:",
        f"        status = request.send(payload={{'id': {index}, 'try': attempt}}, t=timeout)",
        "        if status.ok:",
        "            return response.write(status.body)",
        "        attempt += 1",
        "    raise RuntimeError('gave up after ' + str(retries) + ' attempts')",
        "",
    ]


@pytest.fixture(scope="module")
def huge_source() -> str:
    lines = [line for index in range(FUNCTIONS) for line in _function(index)]
    return "\n".join(lines) + "\n"


def test_fixture_is_about_five_megabytes(huge_source):
    assert 5_000_000 <= len(huge_source) <= 10_000_000
    assert huge_source.count("\n") == FUNCTIONS * 10


def test_cursor_deep_in_a_huge_file(huge_source):
    target = 9_876
    line, column = target * 10 + 4, 8  # `status = ...` inside handler_09876
    ctx = extract_context(huge_source, "python", line, column)

    assert ctx.enclosing is not None
    assert (ctx.enclosing.kind, ctx.enclosing.name) == ("function", f"handler_{target:05d}")
    assert (ctx.enclosing.start_line, ctx.enclosing.end_line) == (target * 10, target * 10 + 8)
    cursor = offset_of(huge_source, line, column)
    assert ctx.prefix == huge_source[line_start(huge_source, ctx.prefix_start_line) : cursor]
    assert huge_source[cursor:].startswith(ctx.suffix)
    assert ctx.suffix.startswith("status = request.send(")
    assert ctx.prefix_truncated and ctx.suffix_truncated
    assert ctx.prefix_start_line <= target * 10  # the whole function head fits


def test_huge_file_windowed_and_full_splits_agree(huge_source, monkeypatch):
    positions = [(0, 0), (5, 3), (60_000, 12), (119_999, 0), (120_000, 0), (500_000, 9)]
    windowed = [extract_context(huge_source, "python", *pos) for pos in positions]
    monkeypatch.setattr(document, "WINDOWED_ABOVE_CHARS", 10**12)
    full = [extract_context(huge_source, "python", *pos) for pos in positions]

    assert windowed == full


def test_past_the_end_of_a_huge_file_clamps_to_its_end(huge_source):
    ctx = extract_context(huge_source, "python", 10**7, 10**7)

    assert ctx.start == (FUNCTIONS * 10, 0)
    assert ctx.suffix == "" and not ctx.suffix_truncated
    assert huge_source.endswith(ctx.prefix)
    assert ctx.enclosing is None


def test_selection_across_a_huge_span(huge_source):
    ctx = extract_context(huge_source, "python", 100, 0, end=(110_002, 4))

    assert 0 < ctx.prefix_start_line < 100
    start = line_start(huge_source, ctx.prefix_start_line)
    assert ctx.prefix == huge_source[start : line_start(huge_source, 100)]
    assert ctx.suffix.startswith("attempt = 0\n")
    assert ctx.end == (110_002, 4)
    assert ctx.enclosing is None  # too big to parse; no function spans it anyway


@pytest.mark.parametrize(("calls", "parsed"), [(300_000, False), (5_000, True)])
def test_one_long_minified_line(calls, parsed):
    line = "function wrap(x){var a=[" + ",".join(f"f{i}(x)" for i in range(calls)) + "];return a}"
    source = "'use strict';\n" + line + "\n"
    column = len(line) // 2
    ctx = extract_context(source, "javascript", 1, column, prefix_budget=100, suffix_budget=20)

    assert line[:column].endswith(ctx.prefix) and 350 - 87 < len(ctx.prefix) <= 350  # 100 tokens, stride 87
    assert ctx.suffix == line[column : column + 70]
    assert (ctx.prefix_start_line, ctx.suffix_end_line) == (1, 1)
    # A megabyte line is past the parse cap: windows still work, scopes are skipped.
    assert (ctx.enclosing.name if ctx.enclosing else None) == ("wrap" if parsed else None)
