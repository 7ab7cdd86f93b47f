"""The server's line index (issue 14.5): LSP's line breaks only, and incremental edits."""

from __future__ import annotations

import random
import time

import pytest
from lsprotocol import types
from pygls.workspace import PositionCodec

from dg_lsp.server import lines as lines_mod
from dg_lsp.server.documents import apply_change, new_document
from dg_lsp.server.lines import LspDocument, split_lines


def _doc(text: str) -> LspDocument:
    return new_document("file:///x.py", text, 1, "python", PositionCodec())


def _change(l1, c1, l2, c2, text):
    return types.TextDocumentContentChangePartial(
        range=types.Range(start=types.Position(line=l1, character=c1), end=types.Position(line=l2, character=c2)),
        text=text)


def _lsp_lines(text: str) -> list[str]:
    """A reference splitter written from the LSP specification: breaks at \\n, \\r\\n, \\r only."""
    out, cur, i = [], "", 0
    while i < len(text):
        ch = text[i]
        cur += ch
        if ch == "\r" and i + 1 < len(text) and text[i + 1] == "\n":
            cur += "\n"
            i += 1
        if ch in "\r\n":
            out.append(cur)
            cur = ""
        i += 1
    if cur:
        out.append(cur)
    return out


@pytest.mark.parametrize("sep", ["\x0c", "\u2028", "\u2029", "\x85", "\x1c", "\x1d", "\x1e", "\x0b"])
def test_only_lsp_line_breaks_split_lines(sep):
    text = f"# a{sep}b\ndef add(a, b):\n    return a\r\nx\ry"
    assert split_lines(text) == [f"# a{sep}b\n", "def add(a, b):\n", "    return a\r\n", "x\r", "y"]
    assert len(text.splitlines(True)) == 6  # what pygls used: one line too many


def test_an_edit_below_a_form_feed_lands_where_the_editor_put_it():
    """The issue's repro: after a keystroke the server's copy read `def Xadd(a, b):`."""
    doc = _doc("# page\x0cbreak\ndef add(a, b):\n    return a + b\n")
    apply_change(doc, _change(1, 4, 1, 4, "X"))  # the editor: line 1 is "def add(a, b):"
    assert doc.source == "# page\x0cbreak\ndef Xadd(a, b):\n    return a + b\n"


def test_random_edits_agree_with_a_reference_model():
    rng = random.Random(7)
    alphabet = ["a", "b", " ", "\n", "\r", "\r\n", "\x0c", "\u2028", "\x85", "😋"]
    text = "".join(rng.choice(alphabet) for _ in range(60))
    doc = _doc(text)
    for _ in range(400):
        ref = _lsp_lines(text)
        assert doc.lines == ref and doc.source == text
        l1 = rng.randrange(len(ref) + 1)
        l2 = rng.randrange(l1, len(ref) + 1)

        def clamp(line):
            if line >= len(ref):
                return "", len(text)
            body = ref[line].rstrip("\r\n")
            return body, sum(len(x) for x in ref[:line])

        body1, base1 = clamp(l1)
        body2, base2 = clamp(l2)
        c1 = rng.randrange(len(body1) + 1)
        c2 = rng.randrange(len(body2) + 1) if l2 > l1 else rng.randrange(c1, len(body1) + 1)
        new = "".join(rng.choice(alphabet) for _ in range(rng.randrange(4)))
        codec = PositionCodec()
        apply_change(doc, _change(l1, codec.client_num_units(body1[:c1]), l2, codec.client_num_units(body2[:c2]),
                                  new))
        start = base1 + c1 if l1 < len(ref) else len(text)
        end = base2 + c2 if l2 < len(ref) else len(text)
        text = text[:start] + new + text[end:]
    assert doc.lines == _lsp_lines(text) and doc.source == text


def test_a_keystroke_in_a_huge_document_resplits_only_its_line(monkeypatch):
    chunk = "def f_{0}(x):\n    return x * {0}  # padding padding padding\n\n"
    text = "".join(chunk.format(i) for i in range(13_800_000 // len(chunk.format(0)) + 1))
    doc = _doc(text)
    seen = []
    real = lines_mod.split_lines
    monkeypatch.setattr(lines_mod, "split_lines", lambda t: seen.append(len(t)) or real(t))
    n = len(doc.lines)
    before = doc.lines[n // 2]
    t0 = time.perf_counter()
    apply_change(doc, _change(n // 2, 4, n // 2, 4, "y"))
    elapsed = time.perf_counter() - t0
    assert seen and max(seen) < 200, seen  # the edited line, not 13.8 MB
    assert len(doc.lines) == n and doc.lines[n // 2] == before[:4] + "y" + before[4:]
    assert elapsed < 0.05, elapsed  # pygls took 90 ms re-splitting; a list splice is well under a millisecond
