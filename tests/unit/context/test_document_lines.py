"""Document lines: LSP line breaks only, exact terminators, clamping, windowed splits."""

from __future__ import annotations

import random

import pytest

from dg_lsp.context import document
from dg_lsp.context.document import DocumentLines


def test_lf_lines_and_terminators():
    doc = DocumentLines("a\nbb\n\nccc")

    assert len(doc) == 4
    assert [doc.content(i) for i in range(4)] == ["a", "bb", "", "ccc"]
    assert [doc.eol(i) for i in range(4)] == ["\n", "\n", "\n", ""]
    assert doc.join(1, 3) == "bb\n\n"
    assert doc.join(0, 4) == "a\nbb\n\nccc"
    assert doc.is_last(3) and not doc.is_last(2)


def test_mixed_crlf_and_lf_keep_their_own_terminators():
    doc = DocumentLines("a\r\nb\nc\r\n")

    assert [doc.content(i) for i in range(4)] == ["a", "b", "c", ""]
    assert [doc.eol(i) for i in range(4)] == ["\r\n", "\n", "\r\n", ""]
    assert doc.join(0, 4) == "a\r\nb\nc\r\n"
    assert doc.raw(0) == "a\r\n"


def test_lone_cr_breaks_lines_and_other_unicode_breaks_do_not():
    text = "a\rb\x0bc\x0cd\u2028e\x85f\r\ng"
    doc = DocumentLines(text)

    assert [doc.content(i) for i in range(len(doc))] == ["a", "b\x0bc\x0cd\u2028e\x85f", "g"]
    assert [doc.eol(i) for i in range(len(doc))] == ["\r", "\r\n", ""]
    assert doc.join(0, len(doc)) == text


def test_clamp():
    doc = DocumentLines("abc\nde\n")

    assert doc.clamp(0, 2) == (0, 2)
    assert doc.clamp(1, 50) == (1, 2)
    assert doc.clamp(7, 1) == (2, 0)
    assert doc.clamp(-1, 5) == (0, 0)
    assert doc.clamp(0, -3) == (0, 0)


def test_previous_and_next_nonblank():
    doc = DocumentLines("x = 1\n\n   \n# note\ny = 2\n")

    assert doc.previous_nonblank(4) == 3
    assert doc.previous_nonblank(4, ("#",)) == 0
    assert doc.next_nonblank(0) == 3
    assert doc.previous_nonblank(0) is None


@pytest.mark.parametrize("eol", ["\n", "\r\n"])
def test_windowed_split_matches_the_full_split(monkeypatch, eol):
    rng = random.Random(7)
    lines = ["".join(rng.choice("ab \t") for _ in range(rng.randint(0, 12))) for _ in range(3000)]
    text = eol.join(lines) + eol
    monkeypatch.setattr(document, "WINDOWED_ABOVE_CHARS", 100)
    full = DocumentLines(text)

    for around in [(0, 0), (1500, 1502), (2999, 2999), (3000, 3000), (9000, 9000)]:
        doc = DocumentLines(text, around, (200, 100))
        assert len(doc) == len(full) == 3001
        assert doc.stop - doc.first <= 304
        for index in range(doc.first, doc.stop):
            assert doc.content(index) == full.content(index)
            assert doc.eol(index) == full.eol(index)
        assert doc.join(doc.first, doc.stop) == full.join(doc.first, doc.stop)
        assert doc.clamp(*around) == full.clamp(*around)


def test_windowed_split_only_materialises_lines_near_the_hole(monkeypatch):
    text = "".join(f"line {i}\n" for i in range(50_000))
    monkeypatch.setattr(document, "WINDOWED_ABOVE_CHARS", 1000)
    doc = DocumentLines(text, (30_000, 30_010), (100, 50))

    assert (doc.first, doc.stop) == (29_900, 30_061)
    assert doc.content(30_000) == "line 30000"
    assert doc.join(29_999, 30_001) == "line 29999\nline 30000\n"
    assert len(doc) == 50_001


@pytest.mark.parametrize("lines", [0, 1, 5, 999, 1000, 1001, 20_000])
def test_line_offset_bisection(lines):
    text = "".join(f"{i}\n" for i in range(20_000))
    expected = sum(len(f"{i}\n") for i in range(lines))
    assert document._line_offset(text, lines, 0) == expected
    assert document._line_offset(text, 20_001, 0) == -1
