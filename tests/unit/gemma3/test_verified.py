"""AR-verified decoding (VerifiedWalk.run) on a tiny adapted Gemma 3: the decoder drafts, the base model
keeps. With weight 0 the kept answer is the base model's greedy continuation, token for token, however the drafts
went; a draft that agrees with it lets a step keep several tokens; where the decoder ends the hole, the answer
ends."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch

from dg_lsp.engine.gemma3.tiny import build_tiny
from dg_lsp.engine.types import DenoiseParams, InfillRequest

PREFIX = "def add(a, b):\n    return a"


@pytest.fixture(scope="module")
def causal_dir(tmp_path_factory):
    # B = 0 and a closed canvas gate: the decoder is the base model, causal over the canvas, so its drafts are the
    # base model's own guesses (a Jacobi iteration); the end head's bias keeps it from ever ending the hole
    return build_tiny(tmp_path_factory.mktemp("tiny-verified"), delta_scale=0.0, future_gate=-1e4, end_bias=-50.0)


@pytest.fixture(scope="module")
def ending_dir(tmp_path_factory):
    return build_tiny(tmp_path_factory.mktemp("tiny-verified-end"), delta_scale=0.3, end_bias=50.0)


@pytest.fixture(scope="module")
def engine(causal_dir):
    from dg_lsp.engine import Engine

    e = Engine.load(str(causal_dir), device="cpu", dtype="float32")
    yield e
    e.close()


def _fill(engine, weight, bound=1e9, suffix="\n", **kw):
    params = DenoiseParams(temperature=0.0, max_steps=16, entropy_bound=bound, verify_weight=weight)
    return engine.run_infill(InfillRequest(prefix=PREFIX, suffix=suffix, params=params, heal=False,
                                           reuse_prefix=False, **kw))


def _record_outcomes(engine, monkeypatch) -> list:
    """The DenoiseOutcome of each of the engine's loop runs from here on, in order."""
    outcomes = []
    run = engine.loop.run
    monkeypatch.setattr(engine.loop, "run", lambda *a, **k: outcomes.append(run(*a, **k)) or outcomes[-1])
    return outcomes


def test_weight_zero_keeps_the_base_models_greedy_answer_and_drafts_save_steps(engine):
    drafted = _fill(engine, 0.0)
    assert drafted.generated_tokens > 4  # the end head never ends it: the hole fills
    ar = engine.autoregressive(PREFIX, max_new_tokens=drafted.generated_tokens, stop_at_newline=False, heal=False)
    assert drafted.text == ar.text and ar.generated_tokens == drafted.generated_tokens
    # drafts the base model agreed with saved steps
    assert drafted.steps < drafted.generated_tokens
    # without drafts past the first open slot (bound 0 keeps one draft) the answer is the same
    one = _fill(engine, 0.0, bound=0.0)
    assert one.text == ar.text


def test_the_suffix_changes_nothing_at_weight_zero(engine):
    a = _fill(engine, 0.0, suffix="\nprint(add(1, 2))\n")
    b = _fill(engine, 0.0, suffix="\n")
    # the longer suffix pins more of the canvas (suffix head), so its hole is shorter: the same tokens, fewer
    assert a.text and b.text.startswith(a.text) and a.generated_tokens < b.generated_tokens


def test_a_row_whose_decoder_ends_the_hole_answers_empty_in_one_step(ending_dir):
    from dg_lsp.engine import Engine

    e = Engine.load(str(ending_dir), device="cpu", dtype="float32")
    try:
        out = _fill(e, 1.0)
        assert out.text == "" and out.steps == 1
    finally:
        e.close()


def test_verified_requests_never_share_a_batch(engine):
    req = InfillRequest(prefix=PREFIX, params=DenoiseParams(verify_weight=0.5), batch_rows=4)
    assert engine.batch_key(req) is None


def test_every_agreed_draft_keeps_the_token_after_it_too(engine, monkeypatch):
    # An oracle decoder and base model: both put most of their weight on one fixed answer, whatever the canvas.
    # With the entropy bound at 0 each decoder pass drafts one slot; the base model agrees with it, and its
    # prediction after that draft is exact too, so every step keeps two tokens (the draft and the one after it),
    # with one decoder pass and one base pass.
    runner = engine.loop.runner
    words = engine.tokenizer(" b + c * d - e + f * g - h + i * j - k + l * m - n + o", add_special_tokens=False)
    answer = [runner.column_of(t) for t in words["input_ids"]]
    assert None not in answer and runner.pad_column not in answer
    seen = {"decode": 0, "verify": 0}

    def oracle(shape, lead):
        logits = torch.zeros(shape)
        for j in range(shape[1]):
            logits[:, j, answer[(j - lead) % len(answer)]] = 8.0  # the argmax, with entropy above the bound 0
        return logits

    real_decode = runner.decode

    inputs = []

    def decode(canvas, *args, **kwargs):
        seen["decode"] += 1
        inputs.append(canvas.clone())
        real = real_decode(canvas, *args, **kwargs)
        return oracle(real.shape, 1)

    def verify(canvas, cache, positions, width, walk=None):
        seen["verify"] += 1
        return oracle((canvas.shape[0], width, len(runner.output_ids)), 1)

    monkeypatch.setattr(runner, "decode", decode)
    monkeypatch.setattr(runner, "verify", verify)
    params = DenoiseParams(temperature=0.0, max_steps=64, entropy_bound=0.0, verify_weight=0.0)
    out = engine.run_infill(InfillRequest(prefix=PREFIX, suffix="\n", params=params, heal=False, reuse_prefix=False))
    n = out.generated_tokens
    assert n >= 5
    assert out.text == engine.tokenizer.decode([int(runner.ids_of(torch.tensor(c))) for c in answer[:n]])
    assert out.steps == math.ceil(n / 2) == seen["verify"] == seen["decode"]
    assert out.tokens_per_forward == pytest.approx(n / (seen["verify"] + seen["decode"]))  # both kinds of pass
    # each decoder pass reads the kept tokens and [MASK]s after them, never a stale draft: the k-th one drafts
    # after the 2 * (k - 1) tokens kept by then
    mask_id = engine.loop.mask_id
    for k, seen_canvas in enumerate(inputs):
        row = seen_canvas[0, 1:1 + n].tolist()
        kept_ids = [int(runner.ids_of(torch.tensor(c))) for c in answer[:2 * k]]
        assert row[:2 * k] == kept_ids and set(row[2 * k:]) == {mask_id}, (k, row)


def test_the_decoder_ends_the_hole_only_where_it_saw_what_was_kept(engine, monkeypatch):
    # An oracle decoder that predicts the answer where every hole slot on its left holds a token, and the end (the
    # pad) where one of them is still [MASK]; it ends for real after three tokens. Its blind pads right of the
    # first open slot must not end the row: the answer is exactly the three tokens.
    runner = engine.loop.runner
    mask_id = engine.loop.mask_id
    words = engine.tokenizer(" b + c * d - e + f", add_special_tokens=False)["input_ids"]
    answer = [runner.column_of(t) for t in words]
    width = len(runner.output_ids)

    def decode(canvas, *args, **kwargs):
        logits = torch.zeros(canvas.shape[0], canvas.shape[1], width)
        for j in range(canvas.shape[1]):
            blind = any(int(t) == mask_id for t in canvas[0, 1:j])
            col = runner.pad_column if blind or j - 1 >= 3 else answer[(j - 1) % len(answer)]
            logits[:, j, col] = 8.0
        return logits

    def verify(canvas, cache, positions, w, walk=None):
        logits = torch.zeros(canvas.shape[0], w, width)
        for j in range(w):
            logits[:, j, answer[(j - 1) % len(answer)]] = 8.0
        return logits

    monkeypatch.setattr(runner, "decode", decode)
    monkeypatch.setattr(runner, "verify", verify)
    params = DenoiseParams(temperature=0.0, max_steps=16, entropy_bound=1e9, verify_weight=0.0)
    out = engine.run_infill(InfillRequest(prefix=PREFIX, suffix="\n", params=params, heal=False, reuse_prefix=False))
    assert out.text == engine.tokenizer.decode(words[:3])
    assert out.steps == 4  # a token a step (the blind pad stops each walk after its first slot), then the end


def test_the_decoder_weighs_in_only_at_a_walks_first_slot(engine, monkeypatch):
    # An oracle decoder that wants answer A everywhere and an oracle base model that wants B, with a weight so large
    # that the decoder would win every slot of the sum. Only a walk's first slot is the decoder's to sway (it drafted
    # the rest beside [MASK]s): there A is kept and agrees with its draft, so the walk goes on to the next slot,
    # where the base model's own B is kept, differs from the draft A and ends the walk. The answer alternates.
    runner = engine.loop.runner
    a_ids = engine.tokenizer(" b + c * d - e + f * g", add_special_tokens=False)["input_ids"]
    b_ids = a_ids[1:] + a_ids[:1]  # every slot wants another token than A's
    n = min(len(a_ids), len(b_ids))
    a_cols, b_cols = [runner.column_of(t) for t in a_ids[:n]], [runner.column_of(t) for t in b_ids[:n]]
    assert None not in a_cols + b_cols and all(x != y for x, y in zip(a_cols, b_cols))
    width = len(runner.output_ids)

    def oracle(shape, cols):
        logits = torch.zeros(shape)
        for j in range(1, shape[1]):
            logits[:, j, cols[(j - 1) % n]] = 8.0
        return logits

    monkeypatch.setattr(runner, "decode", lambda canvas, *a, **k: oracle((canvas.shape[0], canvas.shape[1], width),
                                                                         a_cols))
    monkeypatch.setattr(runner, "verify", lambda canvas, cache, positions, w, walk=None: oracle((canvas.shape[0], w, width),
                                                                                      b_cols))
    outcomes = _record_outcomes(engine, monkeypatch)
    params = DenoiseParams(temperature=0.0, max_steps=6, entropy_bound=1e9, verify_weight=10.0)
    out = engine.run_infill(InfillRequest(prefix=PREFIX, suffix="\n", params=params, heal=False, reuse_prefix=False))
    kept = [a_ids[j] if j % 2 == 0 else b_ids[j] for j in range(min(n, 12))]
    assert out.steps == 6 and out.generated_tokens >= 12  # two kept a step, and the answer reads one more
    (outcome,) = outcomes
    walked = outcome.canvas[0, 1:13].tolist()  # after the lead (the prompt's last token)
    assert walked == kept
    assert walked != a_ids[:12]  # the decoder did not win every slot
    assert out.text == ""  # the step budget ran out inside the line: nothing is shown


def test_where_the_cursor_ends_a_line_of_code_the_base_model_ends_the_line(engine, monkeypatch):
    # An oracle decoder that ends the hole after one token, and an oracle base model that writes the answer and then
    # a line break. Plainly the answer is the one token; where the cursor ends a line of code (rest_of_line) the
    # decoder's pad on the cursor's line is overruled while the base model's next token does not break the line,
    # so the answer runs to the base model's line break. Once the line is broken, the decoder ends the hole again.
    runner = engine.loop.runner
    words = engine.tokenizer(" b + c", add_special_tokens=False)["input_ids"]
    newline = engine.tokenizer("\n", add_special_tokens=False)["input_ids"]
    answer = [runner.column_of(t) for t in words + newline + words]
    assert None not in answer
    width = len(runner.output_ids)

    def decode(canvas, *args, **kwargs):
        logits = torch.zeros(canvas.shape[0], canvas.shape[1], width)
        for j in range(canvas.shape[1]):
            logits[:, j, answer[0] if j == 1 else runner.pad_column] = 8.0
        return logits

    def verify(canvas, cache, positions, w, walk=None):
        logits = torch.zeros(canvas.shape[0], w, width)
        for j in range(w):
            logits[:, j, answer[min(j - 1, len(answer) - 1)] if j >= 1 else answer[0]] = 8.0
        return logits

    monkeypatch.setattr(runner, "decode", decode)
    monkeypatch.setattr(runner, "verify", verify)
    params = DenoiseParams(temperature=0.0, max_steps=16, entropy_bound=1e9, verify_weight=0.0)

    def fill(**kw):
        return engine.run_infill(InfillRequest(prefix=PREFIX, suffix="\n", params=params, heal=False,
                                               reuse_prefix=False, **kw))

    assert fill().text == engine.tokenizer.decode(words[:1])
    ends = dict(block_indent=4, block_lines=8)
    assert fill(**ends).text == engine.tokenizer.decode(words[:1])  # a block: the decoder ends it
    line = fill(rest_of_line=True, **ends)
    # the line, up to the base model's line break, and not the base model's next line
    assert line.text.rstrip("\n") == engine.tokenizer.decode(words)


def test_a_walk_cache_gives_the_same_base_predictions_from_the_last_kept_token(engine):
    # the walk's base passes (runner.verify with runner.walk_cache) run from the last kept token on: the positions
    # after it get the predictions a pass over the whole canvas gives
    params = DenoiseParams(temperature=0.0, verify_weight=0.0)
    started = engine.lifecycle.start(InfillRequest(prefix=PREFIX, suffix="\n", params=params, heal=False,
                                                   reuse_prefix=False))
    runner, canvas = engine.runner, started.canvas
    ids = canvas.canvas_ids.clone()
    words = engine.tokenizer(" b + c * d - e + f", add_special_tokens=False)["input_ids"][:8]
    ids[0, 1:1 + len(words)] = torch.tensor(words)
    positions = canvas.position_ids()
    full = runner.verify(ids, started.cache, positions, 9)
    walk = runner.walk_cache(started.cache)
    first = runner.verify(ids, started.cache, positions, 5, walk)  # nothing held yet: from the canvas's start
    assert torch.allclose(first[:, 1:5], full[:, 1:5], atol=1e-4)
    walk.commit(3)  # positions 0-2 were fed as kept
    second = runner.verify(ids, started.cache, positions, 9, walk)
    assert walk.length == 3 and bool((second[:, :4] == 0).all())
    assert torch.allclose(second[:, 4:], full[:, 4:], atol=1e-4)
    walk.commit(2)
    third = runner.verify(ids, started.cache, positions, 9, walk)
    assert walk.length == 5 and torch.allclose(third[:, 6:], full[:, 6:], atol=1e-4)
    walk.commit(1)
    walk.commit(1)  # no pass since the last commit: nothing changes
    assert walk.length == 6


@pytest.mark.parametrize("prefix, budget", [(PREFIX, {"deadline_ms": 0.0}), ("x\n", {"max_steps": 3})])
def test_a_walk_stopped_inside_its_answer_shows_only_the_lines_it_finished(engine, monkeypatch, prefix, budget):
    """A deadline spent at once stops the walk after one step, and a budget of 3 steps after three, inside the
    answer (the end head never ends it). The kept tokens are the base model's greedy ones, but where the stop
    fell is chance, often inside a word: the answer is shown only up to its last line break (here: nothing, then
    one line). The walk without a budget writes on past it, with the same start."""
    outcomes = _record_outcomes(engine, monkeypatch)
    params = dataclasses.replace(DenoiseParams(temperature=0.0, max_steps=16, entropy_bound=1e9, verify_weight=0.0),
                                 **budget)
    cut = engine.run_infill(InfillRequest(prefix=prefix, suffix="\n", params=params, heal=False, reuse_prefix=False))
    assert cut.deadline_hit == ("deadline_ms" in budget)
    assert cut.cut_short  # what a selection fill refuses to apply (server.fill_selection)
    open_slots = outcomes[-1].unsettled[0, 1:].nonzero().flatten().tolist()
    first = open_slots[0]  # slots after the lead (the prompt's last token)
    kept = engine.autoregressive(prefix, max_new_tokens=first, stop_at_newline=False, heal=False)
    assert engine.tokenizer.decode(outcomes[-1].canvas[0, 1:1 + first].tolist()) == kept.text  # the greedy tokens
    assert not kept.text.endswith("\n")  # the stop fell inside a line
    if "\n" in kept.text:  # the kept tokens finished a line: it is shown, and only up to a line break
        assert cut.text.endswith("\n") and kept.text.startswith(cut.text)
    else:
        assert cut.text == ""
    assert (cut.text == "") == ("deadline_ms" in budget)
    whole = engine.run_infill(InfillRequest(prefix=prefix, suffix="\n", heal=False, reuse_prefix=False,
                                            params=dataclasses.replace(params, deadline_ms=None, max_steps=16)))
    assert not whole.deadline_hit and whole.generated_tokens > first
    assert not whole.cut_short  # it ended inside its 16 steps
    assert whole.text.startswith(cut.text) and whole.text.startswith(kept.text)


@pytest.mark.parametrize("after, budget, shown", [("\n", {"deadline_ms": 0.0}, " + b\n"),
                                                   (" c", {"deadline_ms": 0.0}, ""),
                                                   ("\n", {"max_steps": 1}, "")])
def test_a_stopped_walk_keeps_its_line_where_the_decoder_ends_it_next(engine, monkeypatch, after, budget, shown):
    """Oracles that both write ` + b` then `after`: one step keeps ` +` (the draft agreed) and ` b` (the base model's
    token after it). A deadline spent at once stops the walk at the next step, after the decoder drafted again
    over what was kept: the answer reads one slot more, that pass's argmax at the first open slot. Where that is a
    line break the line is finished and shown with it; where it is more of the line (` c`) nothing is shown. A
    budget of one step stops the walk right after the keeps, before any pass saw them: the argmax there is stale,
    so nothing is shown though it is a line break."""
    runner = engine.loop.runner
    ids = engine.tokenizer(" + b" + after + " d e f g", add_special_tokens=False)["input_ids"]
    cols = [runner.column_of(t) for t in ids]
    assert None not in cols and engine.tokenizer.decode(ids[:2]) == " + b"
    width = len(runner.output_ids)

    def oracle(shape):
        logits = torch.zeros(shape)
        for j in range(1, shape[1]):
            logits[:, j, cols[min(j - 1, len(cols) - 1)]] = 8.0
        return logits

    monkeypatch.setattr(runner, "decode", lambda canvas, *a, **k: oracle((canvas.shape[0], canvas.shape[1], width)))
    monkeypatch.setattr(runner, "verify", lambda canvas, cache, positions, w, walk=None: oracle((canvas.shape[0], w,
                                                                                                width)))
    params = dataclasses.replace(DenoiseParams(temperature=0.0, max_steps=16, entropy_bound=0.0, verify_weight=1.0),
                                 **budget)
    out = engine.run_infill(InfillRequest(prefix=PREFIX, suffix="\n", params=params, heal=False, reuse_prefix=False))
    assert out.steps == 1 and out.text == shown
    assert out.generated_tokens == 2 + ("deadline_ms" in budget)  # the kept tokens, and the fresh guess


def _entropy_at(raw: torch.Tensor, temp: float, at: torch.BoolTensor, reference: bool) -> torch.Tensor:
    """The reference for the walk's drafting rule: sampler.token_entropy of `raw / temp` at every position some row
    of `at` marks, 0 at the others."""
    from dg_lsp.engine import sampler

    cols = at.any(dim=0).nonzero().flatten()
    out = torch.zeros(at.shape, dtype=torch.float32)
    if len(cols):
        out[:, cols] = sampler.token_entropy(raw[:, cols] / temp, reference).float()
    return out


def test_the_walks_entropy_is_the_samplers_at_the_positions_it_reads():
    # the reference helper above: the same values as sampler.token_entropy over the whole canvas at the open slots
    from dg_lsp.engine import sampler

    raw = torch.randn(2, 9, 50, generator=torch.Generator().manual_seed(0)) * 4
    at = torch.zeros(2, 9, dtype=torch.bool)
    at[0, 2:5], at[1, 4:7] = True, True
    for reference in (False, True):
        whole = sampler.token_entropy(raw / 0.3, reference)
        got = _entropy_at(raw, 0.3, at, reference)
        cols = at.any(0)
        assert torch.equal(got[:, cols], whole[:, cols].float()) and not got[:, ~cols].any()


@pytest.mark.parametrize("bound", [0.0, 0.1, 1.0, 3.0, 100.0])
def test_the_walks_drafts_are_the_rules_over_every_open_slots_entropy(bound):
    # verified._drafted computes the entropies a few open slots at a time and stops once every row's sum passed the
    # bound: the drafts must be those of left_to_right_accept over the entropy of every open slot
    from dg_lsp.engine import sampler
    from dg_lsp.engine.verified import _drafted

    gen = torch.Generator().manual_seed(1)
    for trial in range(40):
        b, length = (1, 2)[trial % 2], 12
        # sharp and flat rows mixed, so that sums pass the bound at different slots in each row
        raw = torch.randn(b, length, 40, generator=gen) * torch.rand(b, length, 1, generator=gen) * 30
        open_ = torch.rand(b, length, generator=gen) < 0.7
        open_[:, :2] = False  # the lead and a kept slot
        for reference in (False, True):
            want = sampler.left_to_right_accept(_entropy_at(raw, 0.5, open_, reference), bound, open_,
                                                torch.zeros_like(open_)) & open_
            for first in (1, 2, 5):
                assert torch.equal(_drafted(raw, 0.5, open_, bound, reference, first), want), (trial, first)
    # a finished row (no open slot) beside an open one: the open row's drafts, the finished row's none
    raw = torch.randn(2, 8, 40, generator=gen) * 5
    open_ = torch.zeros(2, 8, dtype=torch.bool)
    open_[0, 1:] = True
    want = sampler.left_to_right_accept(_entropy_at(raw, 0.5, open_, False), bound, open_,
                                        torch.zeros_like(open_)) & open_
    assert torch.equal(_drafted(raw, 0.5, open_, bound, False, 1), want) and not want[1].any()
    # nothing open: nothing drafted
    none = torch.zeros(1, 5, dtype=torch.bool)
    assert not _drafted(torch.randn(1, 5, 40), 0.5, none, 0.1, False).any()
