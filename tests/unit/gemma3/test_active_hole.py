"""The decoder's narrowed hole in an AR-verified walk (engine/active_hole.py) on a tiny adapted Gemma 3: a narrowed
pass is exactly a pass over the canvas built with that hole, the view widens before the walk runs out of room, and
a walk whose answer the decoder does not decide keeps the same tokens narrowed or not, past the narrow hole's end."""

from __future__ import annotations

import pytest
import torch

from dg_lsp.engine.active_hole import MARGIN, ActiveHole
from dg_lsp.engine.gemma3.tiny import build_tiny
from dg_lsp.engine.types import DenoiseParams, InfillRequest

PREFIX = "def add(a, b):\n    return a"
SUFFIX = "\n\nprint(add(1, 2), add(3, 4), add(5, 6))\n"
START = 6  # the tiny model's hole is 12 slots (its dg_lsp.json)


@pytest.fixture(scope="module")
def reading(tmp_path_factory):
    """A decoder that reads the whole canvas, the suffix head included (adapter deltas, open gates)."""
    from dg_lsp.engine import Engine

    e = Engine.load(str(build_tiny(tmp_path_factory.mktemp("tiny-active"), delta_scale=0.3)), device="cpu",
                    dtype="float32")
    yield e
    e.close()


@pytest.fixture(scope="module")
def causal(tmp_path_factory):
    """A decoder that never ends the hole (the end head's bias), so the base model writes every slot."""
    from dg_lsp.engine import Engine

    path = build_tiny(tmp_path_factory.mktemp("tiny-active-causal"), delta_scale=0.0, future_gate=-1e4,
                      end_bias=-50.0)
    e = Engine.load(str(path), device="cpu", dtype="float32")
    yield e
    e.close()


def _request(start=START, weight=1.0, **kw):
    params = DenoiseParams(temperature=0.0, max_steps=16, verify_weight=weight, start_slots=start)
    return InfillRequest(prefix=PREFIX, suffix=SUFFIX, params=params, heal=False, reuse_prefix=False, **kw)


def test_a_narrowed_pass_is_the_pass_over_a_canvas_built_with_that_hole(reading):
    whole = reading.lifecycle.start(_request())
    narrow = reading.lifecycle.start(_request(hole_slots=START))
    canvas = whole.canvas
    assert canvas.hole_lengths == [12] and narrow.canvas.hole_lengths == [START]
    view = ActiveHole.of(canvas, START, reading.runner)
    assert view is not None and not view.whole
    cols = view.columns()
    # the view's canvas is the narrow canvas, token for token and position for position
    assert torch.equal(canvas.canvas_ids[:, cols], narrow.canvas.canvas_ids)
    assert torch.equal(canvas.pinned[:, cols], narrow.canvas.pinned)
    runner = reading.runner
    raw = view.decode(canvas.canvas_ids, whole.cache, canvas.position_ids(), True)
    expected = runner.decode(narrow.canvas.canvas_ids, narrow.cache, narrow.canvas.position_ids(), None,
                             runner.decoder_mask(narrow.cache, narrow.canvas.valid), pinned=narrow.canvas.pinned)
    assert torch.allclose(raw[:, cols], expected, atol=1e-5)
    # the hole slots the view leaves out hold the pad and nothing else
    left_out = torch.arange(canvas.lead + START, canvas.lead + 12)
    assert bool((raw[0, left_out].argmax(-1) == runner.pad_column).all())
    assert not bool(view.open()[0, left_out].any()) and bool(view.open()[0, cols].all())


def test_the_view_widens_before_the_walk_runs_out_of_room(reading):
    canvas = reading.lifecycle.start(_request()).canvas
    view = ActiveHole(canvas, START, reading.runner)
    last_room = canvas.lead + START - MARGIN  # the last front with MARGIN open slots of the narrow hole left
    view.widen_for(last_room)
    assert not view.whole
    view.widen_for(last_room + 1)
    assert view.whole and bool(view.open().all())
    assert view.columns().tolist() == list(range(canvas.length))
    # no view: off, a hole not wider than the start and its margin, or several rows
    assert ActiveHole.of(canvas, 0, reading.runner) is None and ActiveHole.of(canvas, None, reading.runner) is None
    assert ActiveHole.of(canvas, 12 - MARGIN, reading.runner) is None


def test_a_walk_keeps_the_same_tokens_narrowed_and_writes_past_the_narrow_hole(causal, monkeypatch):
    narrow_passes = []
    real = ActiveHole.decode
    monkeypatch.setattr(ActiveHole, "decode", lambda self, *a: narrow_passes.append(self.slots) or real(self, *a))
    narrowed = causal.run_infill(_request(weight=0.0))
    assert narrow_passes and set(narrow_passes) == {START}  # the first passes saw the narrow hole
    assert narrowed.steps > len(narrow_passes)  # and the later ones the whole hole
    whole = causal.run_infill(_request(start=0, weight=0.0))
    # weight 0: the base model chooses every token and the decoder only drafts and ends the hole (never, here)
    assert narrowed.generated_tokens > START + 1
    assert narrowed.text == whole.text and narrowed.generated_tokens == whole.generated_tokens
    ar = causal.autoregressive(PREFIX, max_new_tokens=narrowed.generated_tokens, stop_at_newline=False, heal=False)
    assert narrowed.text == ar.text


def test_the_narrowed_walk_answers_through_the_server_settings():
    from dg_lsp.completion.service import params_from
    from dg_lsp.config import Settings

    assert params_from(Settings()).start_slots == Settings().start_slots > 0
    assert params_from(Settings(start_slots=0)).start_slots == 0


def test_a_narrowed_pass_that_ends_the_hole_inside_a_line_widens_the_hole(reading):
    runner = reading.runner
    canvas = reading.lifecycle.start(_request()).canvas
    breaks = canvas.break_columns
    assert breaks is not None and bool(breaks.any())
    slots = canvas.hole_mask[0].nonzero().flatten().tolist()
    word_col = next(c for c in range(len(breaks)) if not bool(breaks[c]) and c != runner.pad_column)
    break_col = next(c for c in range(len(breaks)) if bool(breaks[c]))
    ids, kept = canvas.canvas_ids.clone(), torch.zeros_like(canvas.pinned)
    kept[0, slots[0]] = True  # one hole token kept; the walk's first open slot is the next one
    raw = torch.zeros(1, canvas.length, len(breaks))
    raw[0, slots[1], runner.pad_column] = 1.0  # the narrowed decoder ends the hole there

    def view_after(col):
        ids[0, slots[0]] = int(runner.ids_of(torch.tensor([col]))[0])
        view = ActiveHole.of(canvas, START, runner)
        return view.ends_mid_line(raw, ids, kept, slots), view.whole

    assert view_after(word_col) == (True, True)  # inside a line: the pass runs again over the whole hole
    assert view_after(break_col) == (False, False)  # after a line break: the narrowed pass decides
    raw[0, slots[1], word_col] = 2.0  # no pad at the first open slot: nothing to check
    assert view_after(word_col) == (False, False)
    kept[0, slots[0]] = False
    raw[0, slots[0], runner.pad_column] = 3.0  # an empty answer (nothing kept yet) counts as inside a line
    assert view_after(word_col) == (True, True)
