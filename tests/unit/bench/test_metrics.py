"""Scores of one completion and summaries of many."""

from __future__ import annotations

import pytest

from dg_lsp.bench.metrics import edit_similarity, exact_match, levenshtein, percentile, summarize, syntax_valid


def test_exact_match_ignores_trailing_whitespace_only():
    assert exact_match("    return x  \n", "    return x\n")
    assert not exact_match("    return x", "    return x\n")  # a missing newline joins two lines
    assert not exact_match("return x\n", "    return x\n")


def test_edit_similarity():
    assert edit_similarity("", "") == 1.0
    assert edit_similarity("abc", "abc") == 1.0
    assert edit_similarity("", "abcd") == 0.0
    assert edit_similarity("kitten", "sitting") == pytest.approx(1 - 3 / 7)
    assert levenshtein("flaw", "lawn") == 2


def test_syntax_valid_counts_only_new_errors():
    original = "def f(x):\n    return x\n"
    assert syntax_valid(original, "def f(x):\n    return (x\n", "python") is False
    assert syntax_valid(original, "def f(x):\n    return x + 1\n", "python") is True
    broken = "def f(x:\n    return x\n"
    assert syntax_valid(broken, broken, "python") is True
    assert syntax_valid("x", "y", "cobol") is None
    # tree-sitter-python accepts an empty block; Python does not.
    assert syntax_valid(original + "\ny = 1\n", "def f(x):\n\ny = 1\n", "python") is False
    assert syntax_valid("function f() {\n  return 1;\n}\n", "function f() {\n}\n", "javascript") is True


def test_percentile_matches_numpy_linear():
    assert percentile([1, 2, 3, 4], 50) == 2.5
    assert percentile([10], 95) == 10
    assert percentile([], 50) is None
    assert percentile(list(range(101)), 95) == 95


def _sample(**kw):
    base = dict(exact_match=False, edit_similarity=0.5, passed=None, syntax_valid=True, latency_ms=100.0,
                encode_ms=10.0, denoise_ms=80.0, steps=4, tokens_per_forward=2.0, generated_tokens=8, error=None)
    base.update(kw)
    return base


def test_summarize():
    row = summarize([_sample(exact_match=True, passed=True, latency_ms=100.0),
                     _sample(passed=False, latency_ms=300.0, error="boom")])
    assert row["n"] == 2 and row["exact_match"] == 0.5 and row["pass_at_1"] == 0.5 and row["errors"] == 1
    assert row["latency_ms"]["p50"] == 200.0 and row["latency_ms"]["max"] == 300.0
    assert row["tokens_per_s"] == pytest.approx(16 / 0.4)
    assert summarize([_sample()])["pass_at_1"] is None
