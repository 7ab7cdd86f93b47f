"""The adapted-Gemma path on a tiny randomly initialised Gemma 3 (no download): conversion parity, the shifted
canvas, pad forcing, the restricted vocabulary, the engine end to end, and the training objective."""

from __future__ import annotations

import random

import pytest
import torch

from dg_lsp.engine.gemma3 import adapter as A
from dg_lsp.engine.gemma3 import cache_view as C
from dg_lsp.engine.gemma3.tiny import build_tiny, tiny_config
from dg_lsp.engine.gemma3.vocab import OutputVocab
from dg_lsp.engine.types import DenoiseParams, InfillRequest


@pytest.fixture(scope="module")
def adapted_dir(tmp_path_factory):
    return build_tiny(tmp_path_factory.mktemp("tiny-gemma3"))


def _fresh_pair(seed=3):
    from transformers import Gemma3ForCausalLM

    torch.manual_seed(seed)
    src = Gemma3ForCausalLM(tiny_config(384)).eval()
    torch.manual_seed(seed)
    dst = Gemma3ForCausalLM(tiny_config(384)).eval()
    return src, dst


def test_encoder_is_the_source_model_exactly():
    """Tolerance 0: with the adapter injected (and made non-zero), the encoder pass is the source model."""
    src, dst = _fresh_pair()
    ad = A.inject(dst, rank=4, alpha=8.0, mask_id=3)
    with torch.no_grad():
        for m in ad.modules.values():
            m.lora_b.normal_(0, 0.5)
    ids = torch.tensor([[2, 40, 41, 42, 43, 44, 45, 46]])
    with torch.no_grad():
        want = src(input_ids=ids).logits
        from transformers import DynamicCache

        out = A.encoder_pass(dst, ids, DynamicCache(config=dst.config))
        got = dst.lm_head(out.last_hidden_state)
    assert torch.equal(want, got)


def test_zero_adapter_lead_row_is_the_next_token_prediction():
    """A canvas holding only the lead (the prompt's last token), the adapter at zero: the decoder's row is the
    base model's next-token prediction (within 1e-5), so the shifted decoder starts from the AR skill."""
    src, dst = _fresh_pair()
    ad = A.inject(dst, rank=4, alpha=8.0, mask_id=3)
    ids = [2, 40, 41, 42, 43, 44]
    from transformers import DynamicCache

    with torch.no_grad():
        want = src(input_ids=torch.tensor([ids])).logits[0, -1]
        cache = DynamicCache(config=dst.config)
        A.encoder_pass(dst, torch.tensor([ids[:-1]]), cache)
        masks = {k: torch.ones(1, 1, 1, len(ids), dtype=torch.bool) for k in ("full_attention", "sliding_attention")}
        hidden = A.decoder_hidden(dst, ad, torch.tensor([[ids[-1]]]), torch.tensor([[len(ids) - 1]]),
                                  C.ReadOnlyCache.of(cache), masks)
        got = dst.lm_head(hidden)[0, 0]
    assert torch.allclose(want, got, atol=1e-5), float((want - got).abs().max())


def test_closed_canvas_gate_makes_every_clean_row_the_next_token_prediction():
    """With the canvas gate closed (-1e4) and the adapter at zero, each clean canvas row sees only the cache and the
    rows on its left, so row j gives the base model's next-token logits after token j (within 1e-5), while masked
    rows follow it; fully open (0) the rows see the masks and differ. The gate is trainable: a loss reaches it."""
    src, dst = _fresh_pair()
    ad = A.inject(dst, rank=4, alpha=8.0, mask_id=3, future_gate=-1.0e4)
    ids = [2, 40, 41, 42, 43, 44, 45, 46]
    n_cached = 4
    from transformers import DynamicCache

    with torch.no_grad():
        want = src(input_ids=torch.tensor([ids])).logits[0, n_cached:]  # next-token logits after ids[4:]
        cache = DynamicCache(config=dst.config)
        A.encoder_pass(dst, torch.tensor([ids[:n_cached]]), cache)
    canvas = torch.tensor([ids[n_cached:] + [3, 3]])  # 4 clean rows, then 2 masked rows to their right
    width = canvas.shape[1]
    masks = {k: torch.ones(1, 1, width, n_cached + width, dtype=torch.bool) for k in ("full_attention", "sliding_attention")}
    pos = torch.arange(n_cached, n_cached + width)[None]

    def rows():
        return dst.lm_head(A.decoder_hidden(dst, ad, canvas, pos, C.ReadOnlyCache.of(cache), masks))[0, :4]

    with torch.no_grad():
        closed = rows()
        assert torch.allclose(want, closed, atol=1e-5), float((want - closed).abs().max())
        ad.future_bias.fill_(0.0)
        opened = rows()
    assert float((want - opened).abs().max()) > 1e-3
    ad.future_bias.data.fill_(-2.0)
    rows().logsumexp(-1).sum().backward()
    assert ad.future_bias.grad is not None and bool((ad.future_bias.grad != 0).all())
    assert torch.equal(ad.state_dict()["future_bias"], torch.full((dst.config.num_attention_heads,), -2.0))


def test_mask_gate_hides_the_masks_to_the_right_but_not_the_tokens():
    """A separate mask gate (-1e4) with the canvas gate fully open (0): no clean row reads a mask on its right, so
    the clean rows are the same however many masks follow (within 1e-5), while a clean row with a token on its
    right reads it (it differs from the base model's next-token prediction). Without the mask gate the masks are
    read and the rows change with their number. The mask gate is fixed: not trained, but saved and loaded."""
    src, dst = _fresh_pair()
    ad = A.inject(dst, rank=4, alpha=8.0, mask_id=3, future_gate=0.0, mask_gate=-1.0e4)
    ids = [2, 40, 41, 42, 43, 44, 45, 46]
    n_cached = 4
    from transformers import DynamicCache

    with torch.no_grad():
        want = src(input_ids=torch.tensor([ids])).logits[0, n_cached:]
        cache = DynamicCache(config=dst.config)
        A.encoder_pass(dst, torch.tensor([ids[:n_cached]]), cache)

    def rows(n_masks):
        canvas = torch.tensor([ids[n_cached:] + [3] * n_masks])
        width = canvas.shape[1]
        masks = {k: torch.ones(1, 1, width, n_cached + width, dtype=torch.bool)
                 for k in ("full_attention", "sliding_attention")}
        pos = torch.arange(n_cached, n_cached + width)[None]
        return dst.lm_head(A.decoder_hidden(dst, ad, canvas, pos, C.ReadOnlyCache.of(cache), masks))[0, :4]

    with torch.no_grad():
        two, six = rows(2), rows(6)
        assert torch.allclose(two, six, atol=1e-5), float((two - six).abs().max())
        assert float((want[2] - two[2]).abs().max()) > 1e-3  # row 2 reads the clean token on its right
        saved = ad.state_dict()["mask_bias"]
        ad.mask_bias = None  # the masks share the (open) canvas gate
        shared_two, shared_six = rows(2), rows(6)
    assert float((shared_two - shared_six).abs().max()) > 1e-3
    assert torch.equal(saved, torch.full((dst.config.num_attention_heads,), -1.0e4))
    ad2 = A.inject(_fresh_pair()[1], rank=4, alpha=8.0, mask_id=3, future_gate=0.0, mask_gate=-1.0e4)
    assert all(p is not ad2.mask_bias for p in ad2.parameters())
    ad3 = A.inject(_fresh_pair()[1], rank=4, alpha=8.0, mask_id=3, future_gate=0.0)
    ad3.load_state_dict({**ad.state_dict(), "mask_bias": saved})
    assert torch.equal(ad3.mask_bias, saved)


def test_suffix_gate_opens_the_suffix_head_but_not_the_slots_to_the_right():
    """The canvas gate shut (-1e4) and a suffix gate open (0): a clean hole row is the base model's next-token
    prediction whatever hole tokens lie to its right (within 1e-5), yet it reads the pinned suffix head (its output
    moves when the head's tokens change); without `pinned` (or without the gate) the head is shut like the rest.
    The suffix gate is fixed: not trained, but saved and loaded."""
    src, dst = _fresh_pair()
    ad = A.inject(dst, rank=4, alpha=8.0, mask_id=3, future_gate=-1.0e4, mask_gate=-1.0e4, suffix_gate=0.0)
    ids = [2, 40, 41, 42, 43, 44, 45, 46]
    n_cached = 4
    from transformers import DynamicCache

    with torch.no_grad():
        want = src(input_ids=torch.tensor([ids])).logits[0, n_cached:n_cached + 2]
        cache = DynamicCache(config=dst.config)
        A.encoder_pass(dst, torch.tensor([ids[:n_cached]]), cache)

    def rows(hole_right, head, pinned=True):
        canvas = torch.tensor([ids[n_cached:n_cached + 2] + hole_right + head])
        width = canvas.shape[1]
        masks = {k: torch.ones(1, 1, width, n_cached + width, dtype=torch.bool)
                 for k in ("full_attention", "sliding_attention")}
        pos = torch.arange(n_cached, n_cached + width)[None]
        mark = torch.zeros(1, width, dtype=torch.bool)
        mark[0, width - len(head):] = True
        hidden = A.decoder_hidden(dst, ad, canvas, pos, C.ReadOnlyCache.of(cache), masks, mark if pinned else None)
        return dst.lm_head(hidden)[0, :2]

    with torch.no_grad():
        a, b = rows([50, 51], [60, 61]), rows([52, 53], [60, 61])
        assert torch.allclose(a, b, atol=1e-5), float((a - b).abs().max())  # the hole to the right: shut
        c = rows([50, 51], [62, 63])
        assert float((a - c).abs().max()) > 1e-3  # the suffix head: read
        shut, shut2 = rows([50, 51], [60, 61], pinned=False), rows([50, 51], [62, 63], pinned=False)
        assert torch.allclose(shut, want, atol=1e-4) and torch.allclose(shut2, want, atol=1e-4)
    saved = ad.state_dict()["suffix_bias"]
    assert torch.equal(saved, torch.zeros(dst.config.num_attention_heads))
    assert all(p is not ad.suffix_bias for p in ad.parameters())
    ad2 = A.inject(_fresh_pair()[1], rank=4, alpha=8.0, mask_id=3, future_gate=-1.0e4)
    ad2.load_state_dict(ad.state_dict())
    assert torch.equal(ad2.suffix_bias, saved)


def test_engine_passes_the_pinned_suffix_head_to_the_suffix_gate(tmp_path, monkeypatch):
    """An exported adapter with the canvas gate shut and a suffix gate open: the engine's loop hands the runner the
    canvas's pinned positions on every forward, and with them the runner's logits at the first hole slot depend
    on the suffix head (two suffixes, two answers), while without them they do not."""
    from dg_lsp.engine import Engine

    engine = Engine.load(str(build_tiny(tmp_path, delta_scale=0.0, future_gate=-1.0e4, mask_gate=-1.0e4,
                                        suffix_gate=0.0)), device="cpu")
    try:
        runner = engine.runner
        assert runner.adapter.suffix_bias is not None and runner.reads_pinned
        seen = []
        real = runner.decode

        def spy(*args, **kwargs):
            seen.append(kwargs.get("pinned"))
            return real(*args, **kwargs)

        monkeypatch.setattr(runner, "decode", spy)
        engine.infill(InfillRequest(prefix="x =", suffix="\nprint(x)\n", params=DenoiseParams(temperature=0,
                                                                                                max_steps=2)))
        assert seen and all(p is not None and bool(p.any()) for p in seen)
        firsts = {}
        for suffix in ("\nprint(x)\n", "\nreturn y\n"):
            prompt, canvas, _ = engine.prepare(InfillRequest(prefix="x =", suffix=suffix))
            cache, _ = runner.encode(prompt)
            ids = canvas.canvas_ids.clone()
            ids[0, 1:canvas.length - canvas.suffix_head_len] = engine.spec.mask_token_id
            firsts[suffix] = (real(ids, cache, canvas.position_ids(), None, None, pinned=canvas.pinned)[0, 1],
                              real(ids, cache, canvas.position_ids(), None, None)[0, 1])
        (a, a_shut), (b, b_shut) = firsts.values()
        assert float((a - b).abs().max()) > 1e-3
        assert torch.allclose(a_shut, b_shut, atol=1e-5)
    finally:
        engine.close()


def test_read_only_cache_is_not_changed():
    from transformers import DynamicCache

    _, dst = _fresh_pair()
    ad = A.inject(dst, rank=4, alpha=8.0, mask_id=3)
    cache = DynamicCache(config=dst.config)
    with torch.no_grad():
        A.encoder_pass(dst, torch.tensor([[2, 40, 41, 42]]), cache)
        before = [layer.keys.clone() for layer in cache.layers]
        masks = {k: torch.ones(2, 1, 3, 7, dtype=torch.bool) for k in ("full_attention", "sliding_attention")}
        A.decoder_hidden(dst, ad, torch.tensor([[42, 3, 3], [42, 3, 3]]), torch.tensor([[3, 4, 5]]).expand(2, -1),
                         C.ReadOnlyCache.of(cache, batch=2), masks)
    assert cache.get_seq_length() == 4
    assert all(torch.equal(b, layer.keys) for b, layer in zip(before, cache.layers))


def test_output_vocab_roundtrip():
    v = OutputVocab([0, 5, 9], full_size=12)
    assert v.to_rows(torch.tensor([5, 9, 7])).tolist() == [1, 2, -1]


def test_engine_shifted_canvas_and_pad_forcing(adapted_dir):
    from dg_lsp.engine import Engine

    engine = Engine.load(str(adapted_dir), device="cpu")
    try:
        req = InfillRequest(prefix="def f(x):\n    return ", suffix="\n", params=DenoiseParams(temperature=0))
        prompt, canvas, heal = engine.prepare(req)
        full = engine.tokenize(req.prefix)  # no healing tail: the prefix does not end a line
        assert canvas.lead == 1
        assert int(canvas.canvas_ids[0, 0]) == ([engine.bos_id] + full)[len(prompt)]
        assert bool(canvas.pinned[0, 0]) and not bool(canvas.pinned[0, 1])
        assert canvas.position_ids()[0, 0] == len(prompt)
        # a pad in the hole forces pads after it
        runner = engine.runner
        ids = canvas.canvas_ids.clone()
        ids[0, 3] = engine.pad_id
        cache, _ = runner.encode(prompt)
        logits = runner.decode(ids, cache, canvas.position_ids(), None, None)
        assert logits.shape == (1, canvas.length, len(runner.output_ids))
        after = runner.ids_of(logits[0, 4:].argmax(-1))
        assert bool((after == engine.pad_id).all())
        assert bool((logits[0, 1:4] > -1000).sum(-1).gt(1).all())  # before it: the model's own choice
        r1 = engine.infill(req)
        r2 = engine.infill(InfillRequest(prefix=req.prefix, suffix=req.suffix, params=req.params))
        assert r1.text == r2.text and r1.steps >= 1
        ar = engine.autoregressive("def f(x):\n    return ", max_new_tokens=4)
        assert ar.generated_tokens >= 1
    finally:
        engine.close()


def test_engine_loads_and_applies_the_canvas_gate(tmp_path):
    """An exported adapter with a closed gate and zero deltas: the engine's runner carries the gate, and its
    decode of a canvas whose right part is masked gives, at the first hole position, the base model's own
    next-token choice over the output vocabulary (the masks on the right are invisible); an open gate sees
    them and the logits move."""
    from dg_lsp.engine import Engine

    engine = Engine.load(str(build_tiny(tmp_path, delta_scale=0.0, future_gate=-1.0e4)), device="cpu")
    try:
        runner = engine.runner
        assert runner.adapter.future_bias is not None
        assert torch.equal(runner.adapter.future_bias, torch.full_like(runner.adapter.future_bias, -1.0e4))
        req = InfillRequest(prefix="def f(x):\n    return ", suffix="\n", params=DenoiseParams(temperature=0))
        prompt, canvas, _ = engine.prepare(req)
        cache, _ = runner.encode(prompt)
        ids = canvas.canvas_ids.clone()
        ids[0, 1:canvas.length - canvas.suffix_head_len] = engine.spec.mask_token_id
        closed = runner.decode(ids, cache, canvas.position_ids(), None, None)[0, 1]
        with torch.no_grad():
            full = runner.model(input_ids=torch.tensor([prompt + [int(ids[0, 0])]])).logits[0, -1]
        want = full[runner.output_ids]
        assert torch.allclose(closed, want, atol=1e-4), float((closed - want).abs().max())
        runner.adapter.future_bias.data.fill_(0.0)
        opened = runner.decode(ids, cache, canvas.position_ids(), None, None)[0, 1]
        assert float((opened - want).abs().max()) > 1e-3
    finally:
        engine.close()


def test_engine_loads_and_applies_the_end_head(tmp_path):
    """An exported end head at zero changes no logit (the frozen head, exactly); its bias moves the pad's column
    alone, and a large one makes the pad every hole slot's choice, so the engine returns an empty completion."""
    from dg_lsp.engine import Engine

    plain = Engine.load(str(build_tiny(tmp_path / "plain", delta_scale=0.0)), device="cpu")
    ended = Engine.load(str(build_tiny(tmp_path / "ended", delta_scale=0.0, end_bias=0.0)), device="cpu")
    try:
        runner = ended.runner
        assert plain.runner.adapter.end_row is None and runner.adapter.end_row is not None
        req = InfillRequest(prefix="def f(x):\n    return ", suffix="\n", params=DenoiseParams(temperature=0))
        prompt, canvas, _ = ended.prepare(req)
        cache, _ = runner.encode(prompt)
        ids = canvas.canvas_ids.clone()
        hole = slice(1, canvas.length - canvas.suffix_head_len)
        ids[0, hole] = ended.spec.mask_token_id
        want = plain.runner.decode(ids, cache, canvas.position_ids(), None, None)
        got = runner.decode(ids, cache, canvas.position_ids(), None, None)
        assert torch.equal(got, want)
        runner.adapter.end_bias.data.fill_(3.0)
        moved = runner.decode(ids, cache, canvas.position_ids(), None, None)
        others = torch.ones(moved.shape[-1], dtype=torch.bool)
        others[runner.pad_column] = False
        assert torch.equal(moved[..., others], want[..., others])
        assert torch.allclose(moved[..., runner.pad_column], want[..., runner.pad_column] + 3.0, atol=1e-5)
        assert plain.infill(InfillRequest(prefix=req.prefix, suffix="\n", params=req.params)).text != ""
        runner.adapter.end_bias.data.fill_(1e3)
        argmax = runner.decode(ids, cache, canvas.position_ids(), None, None)[0, hole].argmax(-1)
        assert bool((argmax == runner.pad_column).all())
        assert ended.infill(InfillRequest(prefix=req.prefix, suffix="\n", params=req.params)).text == ""
    finally:
        plain.close()
        ended.close()


def test_objective_canvas_layout():
    from dg_lsp.train.gemma import objective
    from dg_lsp.train.gemma.data import Hole

    holes = [Hole("single-line", [2, 10, 11, 12], [20, 21, 22], [30, 31], "x"),
             Hole("empty", [2, 10], [], [], "")]
    b = objective.build(holes, n_cached=6, layer_kinds={"full_attention"}, mask_id=3, pad_id=0,
                        vocab_rows=lambda t: t, rng=random.Random(0), noise=1.0)
    w = b.ids.shape[1]
    assert b.ids[0, 0] == 12 and b.ids[1, 0] == 10  # the lead is the prompt's last token
    assert b.ids[0, 1:4].tolist() == [3, 3, 3]  # fully masked
    assert b.positions[0, 0] == 3 and b.positions[1, 0] == 1
    m = b.masks["full_attention"]
    assert m[0, 0, 0, :3].all() and not m[0, 0, 0, 3:6].any()  # cached keys before the lead only
    assert not m[1, 0, 0, 1:6].any()
    # row 0 targets: slots 1..4 = 20, 21, 22, first pad; predicted by rows 0..3
    rows0 = [r for r in b.rows.tolist() if r < w]
    assert rows0 == [0, 1, 2, 3]
    assert b.targets[:4].tolist() == [20, 21, 22, 0]
    # the empty hole scores only its first pad
    assert b.targets[4:].tolist() == [0] and b.rows[4:].tolist() == [w]
    # `pinned` marks the suffix head alone, [lead][k slots][30, 31]; the empty hole has no head
    marked = b.pinned[0].nonzero().flatten().tolist()
    assert len(marked) == 2 and marked[1] == marked[0] + 1 and b.ids[0, marked].tolist() == [30, 31]
    assert marked[0] - 1 in (8, 16, 32)  # right after a bucket's slots
    assert not b.pinned[1].any()


def test_left_to_right_noise_masks_from_a_cut_to_the_end():
    """`ltr=1`: every canvas is clean up to a cut and masked from it to its last slot (pads included), the masked
    share of the scored slots follows the canvas's noise level, and only masked slots up to the first pad are
    scored."""
    from dg_lsp.train.gemma import objective
    from dg_lsp.train.gemma.data import Hole

    middle = [20, 21, 22, 23, 24, 25, 26]
    holes = [Hole("single-line", [2, 10, 11], middle, [30, 31], "x") for _ in range(12)]
    b = objective.build(holes, n_cached=5, layer_kinds={"full_attention"}, mask_id=3, pad_id=0,
                        vocab_rows=lambda t: t, rng=random.Random(1), ltr=1.0, pad_extra=0.0)
    w = b.ids.shape[1]
    cuts = []
    for i in range(len(holes)):
        slots = b.ids[i, 1:1 + 8].tolist()  # 7 middle tokens + 1 pad: the 8 bucket
        is_mask = [t == 3 for t in slots]
        cut = is_mask.index(True)
        assert all(is_mask[cut:]) and not any(is_mask[:cut]), slots
        assert slots[:cut] == (middle + [0])[:cut]
        cuts.append(cut)
        scored = sorted(r - i * w for r in b.rows.tolist() if i * w <= r < (i + 1) * w)
        assert scored == list(range(cut, 8))  # row j predicts slot j + 1: slots cut+1..8 (the pad is slot 8)
        t = float(b.noise[[k for k, r in enumerate(b.rows.tolist()) if i * w <= r < (i + 1) * w][0]])
        assert 8 - cut == max(1, round(t * 8))
    assert len(set(cuts)) > 2  # stratified noise: cuts spread over the hole
    assert b.ids[:, 9:11].tolist() == [[30, 31]] * len(holes)  # the suffix head stays clean


def test_greedy_stops_before_max_steps(adapted_dir, monkeypatch):
    """Issue 15.1: at temperature 0 the acceptance and stop tests read tempered entropies
    (sampler.GREEDY_ACCEPT_TEMPERATURE), so a confident, self-consistent model stops early; read untempered (the
    old 1.0) the same model runs every step. The model: the tiny runner with its decode replaced by fixed logits,
    each position favouring one token by 10 nats over 383 others (p = 0.98, entropy about 0.1 nats at 1.0:
    never below the stop threshold; about 0 at 0.2)."""
    from dg_lsp.engine import Engine, sampler

    engine = Engine.load(str(adapted_dir), device="cpu")
    runner = engine.runner
    real = runner.decode

    def confident(canvas, cache, positions, sc, mask, sc_mask=None, **kwargs):
        logits = torch.zeros_like(real(canvas, cache, positions, sc, mask))
        b, length, _ = logits.shape
        logits[:, torch.arange(length), 40 + torch.arange(length)] = 10.0
        return logits

    monkeypatch.setattr(runner, "decode", confident)
    try:
        req = dict(prefix="def f(x):\n    return x", suffix="\n", params=DenoiseParams(temperature=0, max_steps=12))
        fast = engine.infill(InfillRequest(**req))
        monkeypatch.setattr(sampler, "GREEDY_ACCEPT_TEMPERATURE", 1.0)
        slow = engine.infill(InfillRequest(**req))
    finally:
        engine.close()
    assert fast.steps < 12, fast.steps
    assert slow.steps == 12, slow.steps


def test_a_left_to_right_fill_stops_once_the_hole_end_is_accepted(tmp_path, monkeypatch):
    """The Gemma runner ends a hole at its first pad (every later slot is forced to pad), so a left-to-right fill
    stops at the step that accepts that pad, with the answer up to it, instead of running two more forwards until
    the forced pads are accepted and stable. The model: the decoder's logits replaced (before the runner's shift
    and pad forcing) by one favourite per position, sure enough to be accepted one slot a step and never confident,
    with the pad the third slot's favourite. With the runner's flag off (the old stop tests only) the same fill
    runs 5 steps and gives the same answer."""
    import json
    import math

    from dg_lsp.engine import Engine, sampler

    adapted = build_tiny(tmp_path / "tiny", delta_scale=0.0)
    meta = json.loads((adapted / "dg_lsp.json").read_text())
    (adapted / "dg_lsp.json").write_text(json.dumps({**meta, "unmask_order": "left_to_right"}))
    engine = Engine.load(str(adapted), device="cpu")
    runner = engine.runner
    gap = math.log(9.0) * sampler.GREEDY_ACCEPT_TEMPERATURE

    def logits_by_position(length):
        best = 40 + torch.arange(length)
        best[3] = runner.pad_id  # position 3: the third hole slot (the lead is position 0)
        return best

    def designed(adapter, hidden, head, end_column, head_int8=None):
        b, length = hidden.shape[:2]
        out = torch.full((b, length, head.shape[0]), -30.0)
        pos = torch.arange(1, length + 1)  # row j predicts position j + 1
        out[:, torch.arange(length), logits_by_position(length + 1)[pos]] = gap
        out[:, torch.arange(length), 200 + pos] = 0.0
        return out

    monkeypatch.setattr(A, "decoder_logits", designed)
    try:
        assert runner.ends_at_first_pad
        req = dict(prefix="x =", suffix="\n", params=DenoiseParams(temperature=0, max_steps=12))
        early = engine.infill(InfillRequest(**req))
        monkeypatch.setattr(runner, "ends_at_first_pad", False)
        late = engine.infill(InfillRequest(**req))
        answer = engine.tokenizer.decode([41, 42])
    finally:
        engine.close()
    assert early.steps == 3 and early.text == answer, early
    assert late.steps == 5 and late.text == answer, late


def test_head_product_is_the_plain_product_for_sliced_and_batched_rows():
    """A.head_product (the restricted head over any rows) gives the plain product's values and shape, for a slice of
    a longer pass (`hidden[:, -1:]`, whose batch stride is not rows x H) and for batched rows of a slice."""
    gen = torch.Generator().manual_seed(0)
    head = torch.randn(50, 8, generator=gen)
    long = torch.randn(2, 7, 8, generator=gen)
    for hidden in (long[:1, -1:], long[:, :-1], long[:, 2:5], long[0]):
        out = A.head_product(hidden, head)
        assert out.shape == (*hidden.shape[:-1], 50)
        torch.testing.assert_close(out, hidden.contiguous() @ head.t())


def test_a_model_cast_to_bfloat16_is_the_model_loaded_in_bfloat16(adapted_dir):
    """dtype `auto` casts a float32 engine (ModelRunner.set_dtype). The cast keeps in float32 what a load in
    bfloat16 does (the rotary inverse frequencies, the LoRA factors), so both engines give the same decoder and
    base logits to the bit."""
    from dg_lsp.engine import Engine

    logits = {}
    for how in ("loaded", "cast"):
        engine = Engine.load(str(adapted_dir), device="cpu", dtype="bfloat16" if how == "loaded" else "float32")
        try:
            runner = engine.runner
            if how == "cast":
                runner.set_dtype(torch.bfloat16)
            inv = [b for name, b in runner.model.named_buffers() if name.endswith("inv_freq")]
            assert inv and all(b.dtype == torch.float32 for b in inv)
            assert all(p.dtype == torch.float32 for p in runner.float32_parameters())
            prompt, canvas, _ = engine.prepare(InfillRequest(prefix="def f(x):\n    y = x + 1\n    return ",
                                                             suffix="\n"))
            cache, _ = runner.encode(prompt)
            ids, pos = canvas.canvas_ids, canvas.position_ids()
            logits[how] = (runner.decode(ids, cache, pos, None, None), runner.verify(ids, cache, pos, ids.shape[1]))
        finally:
            engine.close()
    assert all(torch.equal(a, b) for a, b in zip(logits["loaded"], logits["cast"]))


def _greedy_oracle(model, prompt: list[int], allowed: set[int], stops: set[int], n: int) -> tuple[list[int], float]:
    """Greedy tokens of `model` after `prompt` over the `allowed` ids only, each step recomputed from scratch, and
    the smallest margin between the best and second-best allowed logit on the way."""
    ids, out, margin = list(prompt), [], float("inf")
    keep = torch.full((model.config.vocab_size,), float("-inf"))
    keep[sorted(allowed)] = 0.0
    with torch.no_grad():
        for _ in range(n):
            logits = model(torch.tensor([ids])).logits[0, -1].float() + keep
            top = logits.topk(2).values
            margin = min(margin, float(top[0] - top[1]))
            nxt = int(logits.argmax())
            if nxt in stops:
                break
            out.append(nxt)
            ids.append(nxt)
    return out, margin


def test_restricted_autoregressive_is_greedy_over_the_columns(tmp_path):
    """The AR twin's two heads against a from-scratch greedy decode of the base model: head "full" over every
    token, head "restricted" (`--baseline ar-restricted`) over the output columns and the prompt's own tokens
    (Gemma3Runner.add_columns), on a tiny model whose columns are every other token id, so column c is not token c.
    An unknown head is refused."""
    from safetensors.torch import load_file, save_file
    from transformers import Gemma3ForCausalLM

    from dg_lsp.engine import Engine

    adapted = build_tiny(tmp_path)
    columns = sorted(set(range(8)) | set(range(8, 384, 2)))
    tensors = load_file(str(adapted / "adapter.safetensors"))
    tensors["vocab_ids"] = torch.tensor(columns, dtype=torch.int32)
    save_file(tensors, str(adapted / "adapter.safetensors"))
    base = Gemma3ForCausalLM.from_pretrained(str(tmp_path / "base")).eval()
    engine = Engine.load(str(adapted), device="cpu")
    try:
        stops = {t for t in (engine.eos_id, engine.pad_id) if t is not None}
        compared = 0
        for prefix in ("def f(x):\n    return", "x = [1, 2, 3]\nfor i in", "class A:\n    def"):
            prompt = [engine.bos_id] + engine.tokenize(prefix)
            for head, allowed in (("full", set(range(384))), ("restricted", set(columns) | set(prompt))):
                want, margin = _greedy_oracle(base, prompt, allowed, stops, 6)
                got = engine.autoregressive(prefix, max_new_tokens=6, stop_at_newline=False, heal=False, head=head)
                if margin > 1e-3:  # no near-tie that a cached pass's rounding could flip
                    assert got.text == engine.tokenizer.decode(want), (prefix, head)
                    compared += head == "restricted"
        assert compared >= 2
        with pytest.raises(ValueError, match="unknown AR head"):
            engine.autoregressive("x = ", head="tiny")
    finally:
        engine.close()
