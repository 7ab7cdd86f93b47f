"""Token healing: a prefix that ends at a line break (and indentation) leaves that tail to the model."""

from __future__ import annotations

import pytest
import torch

from dg_lsp.engine.denoise import DenoiseOutcome
from dg_lsp.engine.engine import Engine
from dg_lsp.engine.types import InfillRequest


@pytest.mark.parametrize("prefix,tail", [
    ("def f(x):\n", "\n"),
    ("def f(x):\n    ", "\n    "),
    ("x = 1\n\n", "\n\n"),
    ("x = 1\n  \n\t", "\n\t"),  # only the last run of line breaks and the current line's indentation
    ("x = 1", ""),
    ("x = (1,\n     2", ""),
    ("\n", ""),  # nothing left to prompt with
])
def test_healing_tail(prefix, tail):
    assert Engine.healing_tail(prefix) == tail


def test_unheal():
    assert Engine.unheal("\n    return x", "\n") == "    return x"
    assert Engine.unheal("\n    return x", "\n    ") == "return x"
    assert Engine.unheal("    return x", "\n") is None
    assert Engine.unheal("abc", "") == "abc"


def test_prompt_stops_before_the_tail_and_the_answer_starts_after_it(tiny_engine):
    tok = tiny_engine.tokenizer
    req = InfillRequest(prefix="def f(x):\n", suffix="\n", length_strategy="pad")
    prompt, canvas, heal = tiny_engine.prepare(req)
    assert heal == "\n"
    assert prompt == [tiny_engine.bos_id] + tok.encode("def f(x):", add_special_tokens=False)
    unhealed, _, none = tiny_engine.prepare(InfillRequest(prefix="def f(x):\n", heal=False, length_strategy="pad"))
    assert none == "" and unhealed == [tiny_engine.bos_id] + tok.encode("def f(x):\n", add_special_tokens=False)

    hole = canvas.hole_lengths[0]
    written = tok.encode("\n    return x", add_special_tokens=False)
    assert len(written) <= hole
    row = torch.full((1, canvas.length), tiny_engine.pad_id, dtype=torch.long)
    row[0, :len(written)] = torch.tensor(written)
    out = DenoiseOutcome(row, torch.zeros(1, canvas.length, tiny_engine.runner.vocab_size), 3, torch.tensor([3]),
                         False, False)
    assert tiny_engine.lifecycle.choose(canvas, out, "\n").text == "    return x"
    before = tiny_engine.stats["healMismatches"]
    assert tiny_engine.lifecycle.choose(canvas, out, "\n\t").text == ""  # it wrote another indentation: nothing fits
    assert tiny_engine.stats["healMismatches"] == before + 1


def test_autoregressive_with_healing_stops_at_the_end_of_its_line(tiny_engine):
    for prefix in ("def f(x):\n", "def f(x):\n    ", "class A:\n\n"):
        healed = tiny_engine.autoregressive(prefix, max_new_tokens=8)
        plain = tiny_engine.autoregressive(prefix, max_new_tokens=8, heal=False)
        assert "\n" not in healed.text.rstrip("\n")  # one line at most
        assert "\n" not in plain.text.rstrip("\n")


def test_suffix_side_healing_keeps_the_last_space_of_the_next_lines_indentation(tiny_engine):
    tok = tiny_engine.tokenizer
    req = InfillRequest(prefix="def f(x):\n", suffix="    return y\n", length_strategy="pad")
    _, canvas, heal = tiny_engine.prepare(req)
    head = canvas.canvas_ids[0, canvas.hole_lengths[0]:canvas.hole_lengths[0] + canvas.suffix_head_len].tolist()
    assert tok.decode(head).startswith(" return y")
    assert Engine.unheal("\n    x = 1\n   ", heal) == "    x = 1\n"  # the suffix brings its own indentation
    # mid-line holes keep their suffix as it is
    _, canvas, heal = tiny_engine.prepare(InfillRequest(prefix="x = f(", suffix="  1)\n", length_strategy="pad"))
    head = canvas.canvas_ids[0, canvas.hole_lengths[0]:canvas.hole_lengths[0] + canvas.suffix_head_len].tolist()
    assert heal == "" and tok.decode(head).startswith("  1)")


def test_an_explicit_request_is_retried_without_healing_when_the_answer_does_not_fit(tiny_engine):
    def run(**kw):
        return tiny_engine.infill(InfillRequest(prefix="def f(x):\n    ", suffix="\n", length_strategy="pad", **kw))

    healed = run()
    assert healed.heal_mismatch and healed.text == ""  # the random tiny model does not write "\n    " first
    plain = run(heal=False)
    retried = run(heal_retry=True)
    assert not retried.heal_mismatch and retried.text == plain.text and plain.text
