"""Greedy decoding through the encoder with a fixed-shape cache gives the eager loop's tokens."""

import torch

from dg_lsp.engine.fast.ar import FixedAutoregressor
from dg_lsp.engine.runner import ModelRunner


@torch.inference_mode()
def _eager_greedy(runner, prompt, n):
    cache, hidden = runner.encode(prompt)
    out = []
    for _ in range(n):
        token = int(runner.lm_logits(hidden[:, -1:]).argmax(dim=-1))
        out.append(token)
        cache, hidden = runner.encode([token], cache)
    return out


def test_fixed_autoregressor_matches_eager_past_the_window(small_window_model, prompt):
    runner = ModelRunner(small_window_model)
    ar = FixedAutoregressor(runner)
    expected = _eager_greedy(runner, prompt, 30)  # window 8: the ring wraps several times
    assert ar.generate(prompt, 30) == expected
    assert ar.last_timings["decode_steps"] == 29
    assert ar.generate(prompt[:9], 12) == _eager_greedy(runner, prompt[:9], 12)  # buffers reused


def test_fixed_autoregressor_stops_at_a_stop_token(small_window_model, prompt):
    runner = ModelRunner(small_window_model)
    tokens = _eager_greedy(runner, prompt, 10)
    stop = tokens[4]
    got = FixedAutoregressor(runner).generate(prompt, 10, stop_ids=(stop,))
    assert got == tokens[: tokens.index(stop)]
