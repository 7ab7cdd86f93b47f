"""The default (fast) sampling draws from the same distributions as the reference one."""

from __future__ import annotations

import torch

from dg_lsp.engine import sampler


def test_fast_sampling_follows_the_distribution():
    logits = torch.tensor([[[2.0, 1.0, 0.0, -1.0, -30.0]]]).expand(1, 4000, 5).contiguous()
    probs = torch.softmax(logits[0, 0], dim=-1)
    gen = torch.Generator().manual_seed(0)
    drawn = sampler.sample_tokens(logits, gen, greedy=False)
    assert drawn.shape == (1, 4000)
    freq = torch.bincount(drawn.flatten(), minlength=5).float() / drawn.numel()
    # 4,000 draws: standard error <= 0.8 percentage points; 3 points is over 3.7 sigma
    assert torch.allclose(freq, probs, atol=0.03), (freq, probs)
    assert freq[4] == 0  # a token with probability ~1e-14 never comes up
    ref = sampler.sample_tokens(logits, torch.Generator().manual_seed(0), greedy=False, reference=True)
    ref_freq = torch.bincount(ref.flatten(), minlength=5).float() / ref.numel()
    assert torch.allclose(freq, ref_freq, atol=0.04)


def test_fast_sampling_is_seeded_and_never_out_of_range():
    logits = torch.randn(2, 48, 300) * 4
    a = sampler.sample_tokens(logits, torch.Generator().manual_seed(5), greedy=False)
    b = sampler.sample_tokens(logits, torch.Generator().manual_seed(5), greedy=False)
    c = sampler.sample_tokens(logits, torch.Generator().manual_seed(6), greedy=False)
    assert torch.equal(a, b) and not torch.equal(a, c)
    peaked = torch.full((1, 8, 300), -1e4)
    peaked[..., 299] = 0.0  # all the mass on the last id: the CDF's rounding must not step past it
    assert (sampler.sample_tokens(peaked, torch.Generator().manual_seed(1), greedy=False) == 299).all()


def test_fast_entropy_equals_the_reference():
    logits = torch.randn(3, 48, 1000) * torch.tensor([0.1, 3.0, 30.0])[:, None, None]
    torch.testing.assert_close(sampler.token_entropy(logits), sampler.token_entropy(logits, reference=True),
                               atol=1e-4, rtol=1e-5)


def test_left_to_right_accept_takes_a_prefix_of_the_open_positions():
    none = torch.zeros(1, 6, dtype=torch.bool)
    #                      pinned  open  open  open  open  pinned
    entropy = torch.tensor([[9.0, 0.05, 0.04, 0.5, 0.0, 7.0]])
    eligible = torch.tensor([[False, True, True, True, True, False]])
    got = sampler.left_to_right_accept(entropy, 0.1, eligible, none)
    # before each open position: 0, 0.05, 0.09, 0.59 -> the first three; the low-entropy fourth one waits for them
    assert got.tolist() == [[False, True, True, True, False, False]]
    # the first open position is always taken, however unsure; EB order would rather take the sure one on the right
    unsure = torch.tensor([[0.0, 3.0, 2.0, 0.0]])
    lead_pinned = torch.tensor([[False, True, True, True]])
    no = torch.zeros(1, 4, dtype=torch.bool)
    assert sampler.left_to_right_accept(unsure, 0.1, lead_pinned, no).tolist() == [[False, True, False, False]]
    assert (sampler.entropy_bound_accept(unsure, 0.1, lead_pinned) & lead_pinned).tolist() == \
        [[False, False, True, True]]  # the sure one on the right, and the next-lowest
    # settled (already accepted) positions stay accepted and their entropy does not hold back the open ones:
    # slot 1 was accepted last step and is unsure now; slot 2 is the first open one, slot 3 follows at 0 before it
    settled = torch.tensor([[False, True, False, False]])
    assert sampler.left_to_right_accept(torch.tensor([[0.0, 3.0, 0.01, 0.0]]), 0.1, lead_pinned, settled).tolist() \
        == [[False, True, True, True]]
    # rows are independent
    two = torch.tensor([[0.0, 0.0, 0.0], [5.0, 0.0, 0.0]])
    assert sampler.left_to_right_accept(two, 0.1, torch.ones(2, 3, dtype=torch.bool),
                                        torch.zeros(2, 3, dtype=torch.bool)).tolist() == \
        [[True, True, True], [True, False, False]]
    # the sum before a position is not lost to rounding beside a large entropy: in float32 1e-8 + 1.03 - 1.03 is 0,
    # which would take the second position at a bound of 0
    tiny = torch.tensor([[1e-8, 1.03, 0.5]])
    assert sampler.left_to_right_accept(tiny, 0.0, torch.ones(1, 3, dtype=torch.bool),
                                        torch.zeros(1, 3, dtype=torch.bool)).tolist() == [[True, False, False]]


def test_entropy_of_tempered_logits_is_unchanged():
    """Most of a tempered vocabulary lies where float32 exp underflows (the slow path ENTROPY_FLOOR avoids); the
    floored entropy equals the plain formula bit for bit here, and a fully confident row, banned columns and -inf
    logits stay exact too."""
    logits = torch.tanh(torch.randn(2, 48, 8195, generator=torch.Generator().manual_seed(1)) * 2) * 30 / 0.2
    logp = torch.log_softmax(logits, dim=-1)
    expected = -(logp.exp() * logp).sum(dim=-1)  # the formula before the floor
    assert (logp < -87.33654).float().mean() > 0.3  # most of the vocabulary is below exp's normal range
    assert torch.equal(sampler.token_entropy(logits), expected)
    edge = torch.full((1, 3, 100), -1.0e4)  # BANNED everywhere but one column: entropy 0
    edge[0, :, 7] = 0.0
    edge[0, 1, 8] = 0.0  # two equal columns: log 2
    edge[0, 2, 50:] = float("-inf")
    got = sampler.token_entropy(edge)
    torch.testing.assert_close(got, torch.tensor([[0.0, 0.6931472, 0.0]]), atol=1e-7, rtol=0)
    wide = torch.randn(4, 16, 32768, generator=torch.Generator().manual_seed(2)) * torch.tensor([1.0, 10.0, 40.0, 200.0])[:, None, None]
    wide_logp = torch.log_softmax(wide, dim=-1)
    plain = -(wide_logp.exp() * wide_logp).sum(dim=-1)
    assert float((sampler.token_entropy(wide) - plain).abs().max()) < 1e-20  # left-out columns: under 8e-27 nats


def test_head_logits_flattens_a_strided_slice_and_keeps_its_shape():
    """The AR twin's head runs on `hidden[:, -1:]` of a long encode (a view with the long tensor's batch stride);
    head_logits gives the same numbers as the plain 3D call, in the input's leading shape."""
    import torch

    from dg_lsp.engine.runner import head_logits

    torch.manual_seed(0)
    head = torch.nn.Linear(8, 5, bias=False)
    hidden = torch.randn(2, 7, 8)
    last = hidden[:, -1:]
    assert last.stride()[0] == 7 * 8
    out = head_logits(head, last)
    assert out.shape == (2, 1, 5)
    torch.testing.assert_close(out, head(last))
    torch.testing.assert_close(head_logits(head, hidden), head(hidden))


def test_argmax_is_torchs_argmax_ties_included():
    gen = torch.Generator().manual_seed(0)
    for dtype in (torch.float32, torch.bfloat16):
        x = torch.randint(0, 3, (2, 9, 5000), generator=gen).to(dtype)  # many tied maxima in every row
        x[0, 3] = float("-inf")  # a row of nothing but -inf (every column banned)
        x[1, 4, 17] = float("nan")
        assert torch.equal(sampler.argmax(x), x.argmax(dim=-1))
        assert torch.equal(sampler.argmax(x[0, 0]), x[0, 0].argmax(dim=-1))  # one row, as the AR twin's token


def test_constrain_copies_unless_the_caller_owns_the_logits():
    # outcome.constrain adds the canvas's biases; a pass's fresh logits (owned) are changed in place, anything else is
    # copied first, and the values are the same either way
    from dg_lsp.engine.canvas import BANNED, pad_fill_canvas
    from dg_lsp.engine.outcome import constrain

    canvas = pad_fill_canvas([1, 2], [7, 8], 6, 2, fill_id=3, pad_id=0, lead_ids=[2])
    bias = torch.zeros(1, canvas.canvas_ids.shape[1])
    bias[0, 2] = BANNED
    raw = torch.randn(1, canvas.canvas_ids.shape[1], 10, generator=torch.Generator().manual_seed(0))
    before = raw.clone()
    copied = constrain(raw, canvas, [(5, bias)])
    assert torch.equal(raw, before) and copied is not raw
    assert copied[0, 2, 5] == before[0, 2, 5] + BANNED and torch.equal(copied[0, :2], before[0, :2])
    owned = constrain(raw, canvas, [(5, bias)], owned=True)
    assert owned is raw and torch.equal(owned, copied)
    # nothing to add: the same tensor back, unchanged
    plain = torch.randn(1, 3, 10)
    assert constrain(plain, pad_fill_canvas([1], [7], 3, 1, fill_id=3, pad_id=0), []) is plain
