"""Token healing: a prefix that ends at a line break (and indentation), in one space after a word, or inside a
word, leaves that tail to the model."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from dg_lsp.engine import DenoiseParams, healing
from dg_lsp.engine.outcome import DenoiseOutcome
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
    ("def f(x):\n    return ", " "),  # BPE writes the space inside the next word's token
    ("x = ", " "),
    ("x =  ", ""),  # two spaces: the user's own layout, left as it is
    ("x\t", ""),
    (" ", ""),
])
def test_healing_tail(prefix, tail):
    assert Engine.healing_tail(prefix) == tail


def test_unheal():
    assert Engine.unheal("\n    return x", "\n") == "    return x"
    assert Engine.unheal("\n    return x", "\n    ") == "return x"
    assert Engine.unheal("    return x", "\n") is None
    assert Engine.unheal("abc", "") == "abc"


def test_unheal_takes_a_line_written_with_fewer_blank_lines_than_the_prefix_has():
    # after a blank line the tail is "\n\n"; a model that writes one line break means the line itself
    assert Engine.unheal("\n    for b in x:", "\n\n") == "    for b in x:"
    assert Engine.unheal("\n    for b in x:", "\n\n    ") == "for b in x:"
    assert Engine.unheal("\n\n\n    y", "\n\n") == "\n    y"  # more line breaks: the extra one is inserted
    assert Engine.unheal("\n  y", "\n\n    ") is None  # another indentation still fits nothing
    assert Engine.unheal("    y", "\n\n") is None  # no line break at all
    assert Engine.unheal("\n", "\n\n") == ""  # only a line break: nothing to insert


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


def test_a_line_break_tail_keeps_the_first_hole_token_to_tokens_that_start_a_line(tiny_engine):
    # an end (or an indentation alone) first could never match the tail: the answer would be lost as a mismatch
    tok = tiny_engine.tokenizer
    _, canvas, heal = tiny_engine.prepare(InfillRequest(prefix="x = 1\n\n", suffix="", length_strategy="pad"))
    assert heal == "\n\n" and canvas.first_columns is not None
    ids = tiny_engine.lifecycle.columns._column_ids()
    allowed = {t for t, ok in zip(ids, canvas.first_columns.tolist()) if ok}
    assert allowed and tiny_engine.pad_id not in allowed
    assert all(tok.decode([t]).startswith("\n") for t in allowed)
    assert not any(tok.decode([t]).startswith("\n") for t in set(ids) - allowed)  # every such token is allowed
    _, spaced, _ = tiny_engine.prepare(InfillRequest(prefix="x = [1]", suffix="", length_strategy="pad"))
    assert spaced.first_columns is None  # no tail (no word either): nothing constrained
    res = tiny_engine.infill(InfillRequest(prefix="x = 1\n\n", suffix="", length_strategy="pad",
                                           params=DenoiseParams(max_steps=4)))
    assert res.heal_mismatch is False


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


def test_only_a_healed_space_constrains_the_first_token():
    assert healing.constrained(" ")
    assert not healing.constrained("") and not healing.constrained("\n    ")
    assert healing.split_suffix("    y", " ") == ("", "    y")  # a mid-line hole keeps its suffix whole
    assert Engine.unheal(" a + b  ", " ") == "a + b" and Engine.unheal("a + b", " ") is None


def test_a_prefix_ending_in_a_space_gets_an_answer_whose_first_token_starts_with_it(tiny_engine, monkeypatch):
    """The prompt stops before the space and the first hole slot may only take tokens whose text starts with a
    space, so the random tiny model, which would write anything there, always fits the cursor."""
    tok = tiny_engine.tokenizer
    req = InfillRequest(prefix="def add(a, b):\n    return ", suffix="\n", length_strategy="pad")
    prompt, canvas, heal = tiny_engine.prepare(req)
    assert heal == " " and prompt[-1:] != tok.encode(" ", add_special_tokens=False)
    allowed = canvas.first_columns
    ids = tiny_engine.runner.ids_of(torch.nonzero(allowed).squeeze(-1)).tolist()
    assert 0 < len(ids) < allowed.numel()
    ends = {tiny_engine.pad_id, tiny_engine.eos_id} - {None}
    assert ends <= set(ids)  # the hole may also end at once: nothing to insert
    assert all(tok.decode([i]).startswith(" ") for i in ids if i not in ends)
    banned = torch.nonzero(~allowed).squeeze(-1).tolist()
    assert not any(tok.decode([i]).startswith(" ") for i in banned if i < len(tok)
                   and i not in tok.all_special_ids)
    before = tiny_engine.stats["healMismatches"]
    outcomes, run = [], tiny_engine.loop.run
    monkeypatch.setattr(tiny_engine.loop, "run", lambda *a, **kw: outcomes.append(run(*a, **kw)) or outcomes[-1])
    for seed in range(4):
        res = tiny_engine.infill(InfillRequest(prefix=req.prefix, suffix="\n", length_strategy="pad",
                                               params=DenoiseParams(temperature=0.8, seed=seed, max_steps=4)))
        first = int(outcomes[-1].canvas[0, canvas.lead])
        assert tok.decode([first]).startswith(" ") or first in ends
        assert not res.heal_mismatch
    assert tiny_engine.stats["healMismatches"] == before
    ar = tiny_engine.autoregressive(req.prefix, max_new_tokens=6)
    assert ar.generated_tokens >= 1 and tiny_engine.stats["healMismatches"] == before


@pytest.mark.parametrize("pieces,counts", [
    (["    ", "self", ".", "set", "_", "def", "aul"], [4, 3, 2, 1]),  # back to the word's start at most, 4 tokens
    ([".", "set", "_", "def", "aul"], [4, 3, 2, 1]),
    (["x", " =", " get", "att", "ribut"], [3, 2, 1]),  # " get" starts the word: no further
    (["    ", "return", " fo"], [1]),
    (["    ", "self"], [1]),
    (["value"], []),  # never the whole prefix: the prompt keeps a token
    (["x", "("], []),
    (["x", " =", " 1"], [1]),
])
def test_a_word_tail_backs_off_word_pieces_to_the_words_start(pieces, counts):
    assert healing.word_backoffs(pieces) == counts


def test_a_prefix_inside_a_word_backs_off_its_last_tokens_and_the_first_slot_writes_them(tiny_engine):
    """The prompt stops at one of the prefix's own token boundaries inside the word, the tail is the text after it,
    and the first hole slot may only take tokens that start with that text (or end the hole), so the random tiny
    model, which would write anything there, always fits the cursor."""
    life, tok = tiny_engine.lifecycle, tiny_engine.tokenizer
    for prefix in ("self.set_defaul", "    return fo", "x = foo.ba", "x = 1"):
        req = InfillRequest(prefix=prefix, suffix=")\n", length_strategy="pad")
        prompt, canvas, heal = tiny_engine.prepare(req)
        ids = life.tokenize(prefix)
        assert heal and prefix.endswith(heal) and healing.constrained(heal)
        assert prompt == [tiny_engine.bos_id] + ids[:len(prompt) - 1] and len(prompt) - 1 < len(ids)
        assert "".join(life.columns.piece_texts(ids[len(prompt) - 1:])) == heal  # whole tokens of the prefix, backed off
        columns = tiny_engine.runner.ids_of(torch.nonzero(canvas.first_columns).squeeze(-1)).tolist()
        assert columns and all(tok.decode([i]).startswith(heal) for i in columns)  # no end: the word is written
        before = tiny_engine.stats["healMismatches"]
        res = tiny_engine.infill(dataclasses.replace(req, params=DenoiseParams(max_steps=4)))
        assert not res.heal_mismatch
        ar = tiny_engine.autoregressive(prefix, max_new_tokens=6)
        assert tiny_engine.stats["healMismatches"] == before  # neither wrote something else than the tail
        assert "\n" not in ar.text.rstrip("\n")


def test_a_word_no_token_can_write_keeps_the_prefix_whole(tiny_engine, monkeypatch):
    life = tiny_engine.lifecycle
    monkeypatch.setattr(life.columns, "starting_with", lambda text, ids=None: torch.zeros(1, dtype=torch.bool))
    assert life.heal_prefix("self.set_defaul") == (life.tokenize("self.set_defaul"), "")
    assert life.heal_prefix("self.set_defaul", heal=False) == (life.tokenize("self.set_defaul"), "")


def test_starting_with_finds_exactly_the_tokens_that_start_with_a_text(tiny_engine):
    life = tiny_engine.lifecycle
    for text in (" ", "de", "a", "\n", "zzzz-no-such-token"):
        assert torch.equal(life.columns.starting_with(text), life.columns.token_texts(text, "start"))
    full = range(tiny_engine.runner.vocab_size)  # the AR head's columns are token ids
    assert torch.equal(life.columns.starting_with("s", full), life.columns.token_texts("s", "start", full))
