"""Prefix-cache reuse is exact: a completion over a reused cache gives the logits of a fresh encode.

The model here has a sliding window of 8 tokens, so prompts longer than the window exercise the
case transformers' sliding layers cannot cut back (they keep only the last window - 1 keys).
"""

import pytest
import torch

from dg_lsp.engine.loader import LoadedModel
from dg_lsp.engine.prefix_cache import PrefixCache, common_prefix_length
from dg_lsp.engine.runner import ModelRunner
from dg_lsp.engine.spec import InfillSpec

VOCAB, CANVAS, WINDOW = 96, 8, 8


@pytest.fixture(scope="module")
def runner():
    from transformers import DiffusionGemmaForBlockDiffusion

    from dg_lsp.engine.modelgen import make_config

    torch.manual_seed(0)
    model = DiffusionGemmaForBlockDiffusion(make_config(VOCAB, num_layers=3, canvas_length=CANVAS,
                                                        sliding_window=WINDOW)).eval()
    return ModelRunner(LoadedModel(model, None, InfillSpec(), "<memory>", "cpu", "float32"))


def _logits(runner, cache, prompt_len, batch=1):
    canvas = torch.arange(10, 10 + CANVAS).repeat(batch, 1)
    positions = torch.arange(prompt_len, prompt_len + CANVAS).unsqueeze(0)
    sc = torch.zeros(batch, CANVAS, VOCAB)
    sc[:, :, 5] = 3.0  # a self-conditioning signal, as on any step after the first
    return runner.decode(canvas, cache, positions, sc, None)


def _fresh(runner, prompt, batch=1):
    cache, _ = runner.encode(prompt)
    if batch > 1:
        cache.batch_repeat_interleave(batch)
    return _logits(runner, cache, len(prompt), batch)


def _prompt(n, seed):
    g = torch.Generator().manual_seed(seed)
    return [2] + torch.randint(4, VOCAB - 4, (n - 1,), generator=g).tolist()


def test_common_prefix_length():
    assert common_prefix_length([1, 2, 3], [1, 2, 4, 5]) == 2
    assert common_prefix_length([1, 2], [1, 2, 3]) == 2
    assert common_prefix_length([], [1]) == 0
    assert common_prefix_length([7], [8]) == 0


@pytest.mark.parametrize("length", [6, 30])  # inside the sliding window, and well beyond it
def test_reused_cache_gives_the_logits_of_a_fresh_encode(runner, length):
    pc = PrefixCache(runner)
    base = _prompt(length, 1)
    first = pc.encode("doc", base)
    assert first.reused == 0 and first.encoded == length
    torch.testing.assert_close(_logits(runner, first.cache, length), _fresh(runner, base), atol=1e-5, rtol=0)
    edits = [
        base + [40],  # one character typed: pure append
        base[:-1] + [41, 42],  # the last token retokenized
        base[:-3] + [43],  # a deletion
        base[:-3] + [43],  # the same prompt again: nothing to encode
        base[: length // 2] + [44] * 5,  # an edit far back, beyond the window
    ]
    previous = base
    for prompt in edits:
        out = pc.encode("doc", prompt)
        assert out.reused == common_prefix_length(previous, prompt) > 0
        assert out.encoded == len(prompt) - out.reused
        torch.testing.assert_close(_logits(runner, out.cache, len(prompt)), _fresh(runner, prompt),
                                   atol=1e-5, rtol=0)
        previous = prompt


def test_batching_the_view_leaves_the_stored_cache_intact(runner):
    pc = PrefixCache(runner)
    prompt = _prompt(20, 2)
    view = pc.encode("doc", prompt).cache
    view.batch_repeat_interleave(3)
    torch.testing.assert_close(_logits(runner, view, 20, batch=3), _fresh(runner, prompt, batch=3), atol=1e-5,
                               rtol=0)
    again = pc.encode("doc", prompt + [50])
    assert again.reused == 20 and again.encoded == 1
    torch.testing.assert_close(_logits(runner, again.cache, 21), _fresh(runner, prompt + [50]), atol=1e-5, rtol=0)


def test_entries_are_per_document_and_bounded(runner):
    pc = PrefixCache(runner, max_entries=2)
    a, b = _prompt(10, 3), _prompt(10, 4)
    pc.encode("a", a)
    pc.encode("b", b)
    assert pc.encode("a", a + [7]).reused == 10  # b's prompt never disturbed a's cache
    pc.encode("c", a)
    assert len(pc) == 2
    assert pc.encode("b", b).reused == 0  # the least recently used entry went
