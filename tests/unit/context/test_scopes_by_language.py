"""Enclosing scopes and windows at the interesting places, for each language."""

from __future__ import annotations

import pytest

from dg_lsp.context import extract_context

from .helpers import after, at, offset_of
from .samples import SAMPLES

LANGUAGES = sorted(SAMPLES)


@pytest.mark.parametrize("name", LANGUAGES)
def test_cursor_on_first_body_line_is_inside_the_function(name):
    sample = SAMPLES[name]
    line, column = at(sample.source, sample.body_needle)
    ctx = extract_context(sample.source, sample.language_id, line, column)

    assert ctx.scopes == sample.chain
    assert ctx.enclosing == sample.chain[-1]
    assert ctx.mid_line is True
    assert ctx.line_suffix.startswith(sample.body_needle)
    # Whole document fits the default budgets: exact split at the cursor.
    split = offset_of(sample.source, line, column)
    assert ctx.prefix == sample.source[:split]
    assert ctx.suffix == sample.source[split:]
    assert (ctx.prefix_start_line, ctx.prefix_truncated, ctx.suffix_truncated) == (0, False, False)
    header = sample.source.split("\n")[sample.chain[-1].start_line]
    assert header in ctx.prefix


@pytest.mark.parametrize("name", LANGUAGES)
def test_cursor_after_the_function_ends_is_outside_it(name):
    sample = SAMPLES[name]
    ctx = extract_context(sample.source, sample.language_id, sample.after_line, 0)

    assert ctx.scopes == sample.after_chain
    assert ctx.enclosing == (sample.after_chain[-1] if sample.after_chain else None)
    lines = sample.source.split("\n")
    assert ctx.prefix == "\n".join(lines[: sample.after_line]) + "\n"
    assert ctx.line_prefix == ""
    assert ctx.mid_line is False


@pytest.mark.parametrize("name", LANGUAGES)
def test_mid_line_cursor_cuts_exactly(name):
    sample = SAMPLES[name]
    line, column = at(sample.source, sample.mid_needle)
    ctx = extract_context(sample.source, sample.language_id, line, column)

    assert ctx.scopes == sample.mid_chain
    assert ctx.mid_line is True
    assert ctx.line_suffix.startswith(sample.mid_needle)
    assert ctx.suffix.startswith(sample.mid_needle)
    cursor_line = sample.source.split("\n")[line]
    assert ctx.prefix.endswith("\n" + cursor_line[:column])
    assert ctx.prefix + ctx.suffix == sample.source


@pytest.mark.parametrize("name", LANGUAGES)
def test_empty_file(name):
    ctx = extract_context("", SAMPLES[name].language_id, 0, 0)

    assert (ctx.prefix, ctx.suffix, ctx.indent) == ("", "", "")
    assert ctx.enclosing is None and ctx.scopes == ()
    assert ctx.mid_line is False
    assert (ctx.prefix_start_line, ctx.suffix_end_line) == (0, 0)
    assert ctx.language == name


@pytest.mark.parametrize("name", LANGUAGES)
def test_end_of_file(name):
    sample = SAMPLES[name]
    last_line = sample.source.count("\n")
    ctx = extract_context(sample.source, sample.language_id, last_line, 0)

    assert ctx.prefix == sample.source
    assert ctx.suffix == ""
    assert ctx.enclosing is None
    assert ctx.suffix_end_line == last_line
    assert ctx.suffix_truncated is False


@pytest.mark.parametrize("name", LANGUAGES)
def test_broken_code_still_finds_the_enclosing_function(name):
    sample = SAMPLES[name]
    line, column = after(sample.broken, sample.broken_after)
    ctx = extract_context(sample.broken, sample.language_id, line, column)

    assert ctx.enclosing is not None
    assert (ctx.enclosing.kind, ctx.enclosing.name) == sample.broken_innermost
    assert ctx.enclosing.start_line <= line <= ctx.enclosing.end_line
    assert ctx.prefix + ctx.suffix == sample.broken


@pytest.mark.parametrize("name", LANGUAGES)
def test_cursor_at_end_of_header_line_is_inside(name):
    sample = SAMPLES[name]
    function = sample.chain[-1]
    header = sample.source.split("\n")[function.start_line]
    ctx = extract_context(sample.source, sample.language_id, function.start_line, len(header))

    assert ctx.enclosing == function
    assert ctx.mid_line is False


@pytest.mark.parametrize("name", LANGUAGES)
def test_cursor_before_the_header_is_outside_the_function(name):
    sample = SAMPLES[name]
    function = sample.chain[-1]
    header = sample.source.split("\n")[function.start_line]
    column = len(header) - len(header.lstrip())
    ctx = extract_context(sample.source, sample.language_id, function.start_line, column)

    assert ctx.scopes == sample.chain[:-1]


def test_closing_brace_line_end_is_outside_but_before_it_is_inside():
    source = SAMPLES["javascript"].source  # `}` of add is line 5
    inside = extract_context(source, "javascript", 5, 0)
    outside = extract_context(source, "javascript", 5, 1)

    assert inside.enclosing is not None and inside.enclosing.name == "add"
    assert outside.enclosing is None


def test_javascriptreact_uses_the_javascript_grammar_with_jsx():
    source = "function App() {\n  return <div>{items.map((i) => <b>{i}</b>)}</div>;\n}\n"
    line, column = at(source, "{i}")
    ctx = extract_context(source, "javascriptreact", line, column)

    assert ctx.language == "javascript"
    assert [(scope.kind, scope.name) for scope in ctx.scopes] == [
        ("function", "App"),
        ("function", None),
    ]
