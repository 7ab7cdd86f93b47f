"""The fixed-shape runner gives the eager loop's tokens for the same seed (compile off, CPU)."""

import pytest
import torch

from dg_lsp.engine.canvas import length_candidates_canvas, pad_fill_canvas
from dg_lsp.engine.denoise import DenoiseLoop
from dg_lsp.engine.fast import FixedKVCache, StaticRunner, denoise_runner
from dg_lsp.engine.runner import ModelRunner
from dg_lsp.engine.types import DenoiseParams


def _run(runner, canvas, prompt, params, seed, noise_kind="uniform", mask_id=None):
    cache, _ = runner.encode(prompt)
    if canvas.batch_size > 1:
        cache.batch_repeat_interleave(canvas.batch_size)
    generator = torch.Generator().manual_seed(seed)
    return DenoiseLoop(runner, noise_kind, mask_id).run(canvas, cache, params, generator)


def _canvases(prompt):
    return {"pad-fill": pad_fill_canvas(prompt, [5, 6, 7], 16, 4, 0, 0),
            "length-search": length_candidates_canvas(prompt, [5, 6, 7, 8, 9], (2, 4, 8), 3, 0, 0)}


@pytest.mark.parametrize("kind", ["pad-fill", "length-search"])
@pytest.mark.parametrize("temperature,seed", [(0.8, 3), (0.2, 11), (0.0, 5)])
def test_fixed_shapes_match_eager_tokens(small_window_model, prompt, kind, temperature, seed):
    canvas = _canvases(prompt)[kind]
    params = DenoiseParams(max_steps=6, temperature=temperature)
    eager = _run(ModelRunner(small_window_model), canvas, prompt, params, seed)
    fast = _run(StaticRunner(small_window_model, capacity=32), canvas, prompt, params, seed)
    assert torch.equal(eager.canvas, fast.canvas)
    assert eager.steps == fast.steps
    assert torch.equal(eager.forwards_per_row, fast.forwards_per_row)
    # row padding of the length-search canvas is never read: its logits are free to differ
    valid = canvas.valid
    assert torch.allclose(eager.logits[valid], fast.logits[valid], atol=1e-3)


def test_width_buckets_and_capacity_growth_keep_tokens(small_window_model, prompt):
    runner = StaticRunner(small_window_model, capacity=8, width_buckets=(16, 24))  # prompt 20 > capacity 8
    params = DenoiseParams(max_steps=5, temperature=0.5)
    for kind, canvas in _canvases(prompt).items():
        eager = _run(ModelRunner(small_window_model), canvas, prompt, params, 2)
        fast = _run(runner, canvas, prompt, params, 2)
        assert torch.equal(eager.canvas, fast.canvas), kind
    assert runner.capacity >= len(prompt)
    assert sorted(runner._inputs) == [(1, 16), (3, 16)]  # widths 16 and 11 share the 16 bucket


def test_a_shorter_prompt_reuses_the_same_buffers(small_window_model, prompt):
    runner = StaticRunner(small_window_model, capacity=32)
    canvas_long, canvas_short = pad_fill_canvas(prompt, [], 16, 0, 0, 0), pad_fill_canvas(prompt[:5], [], 16, 0, 0, 0)
    params = DenoiseParams(max_steps=3, temperature=0.5)
    _run(runner, canvas_long, prompt, params, 1)
    buffers = runner._inputs[(1, 16)]
    short = _run(runner, canvas_short, prompt[:5], params, 1)
    assert runner._inputs[(1, 16)] is buffers
    assert torch.equal(short.canvas, _run(ModelRunner(small_window_model), canvas_short, prompt[:5], params, 1).canvas)


def test_fixed_cache_sees_what_a_dynamic_cache_keeps(small_window_model, prompt):
    runner = ModelRunner(small_window_model)
    dyn, _ = runner.encode(prompt)  # 20 tokens, window 8: sliding layers keep the last 7
    fixed = FixedKVCache(runner.text_config, 1, 32, torch.float32, torch.device("cpu")).load(dyn)
    masks = fixed.decoder_masks(torch.ones(1, 4, dtype=torch.bool))
    assert int(masks["sliding_attention"][0, 0, 0, :-4].sum()) == 7
    assert int(masks["full_attention"][0, 0, 0, :-4].sum()) == 20
    full_idx = runner.text_config.layer_types.index("full_attention")
    assert torch.equal(fixed.layers[full_idx].keys[:, :, :20], dyn.layers[full_idx].keys)


def test_denoise_runner_picks_the_fast_path_only_on_cuda(small_window_model):
    eager = ModelRunner(small_window_model)
    assert denoise_runner(eager) is eager  # the loaded model is on CPU
    forced = denoise_runner(eager, fast="on")
    assert isinstance(forced, StaticRunner) and forced.compiled is False  # no compile off CUDA
    with pytest.raises(ValueError):
        denoise_runner(eager, fast="sometimes")


def test_a_failing_compiled_step_falls_back_to_eager(small_window_model, prompt):
    runner = StaticRunner(small_window_model, capacity=32)

    def broken(*args):
        raise RuntimeError("inductor says no")

    runner._step, runner.compiled = broken, True
    canvas = _canvases(prompt)["pad-fill"]
    params = DenoiseParams(max_steps=3, temperature=0.5)
    got = _run(runner, canvas, prompt, params, 4)
    assert runner.compiled is False and runner._step == runner._forward
    assert torch.equal(got.canvas, _run(ModelRunner(small_window_model), canvas, prompt, params, 4).canvas)
