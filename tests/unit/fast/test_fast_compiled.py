"""The compiled fixed-shape steps give the same tokens as the eager ones.

On CPU, inductor needs about a minute per graph on two cores, so those tests are `slow` and run
only with DG_LSP_SLOW=1. The `gpu` tests (CUDA graphs) are skipped without CUDA.
"""

import os

import pytest
import torch

from dg_lsp.engine.canvas import length_candidates_canvas, pad_fill_canvas
from dg_lsp.engine.denoise import DenoiseLoop
from dg_lsp.engine.fast import StaticRunner
from dg_lsp.engine.fast.ar import FixedAutoregressor
from dg_lsp.engine.fast.runner import graph_safe_experts
from dg_lsp.engine.loader import LoadedModel
from dg_lsp.engine.runner import ModelRunner
from dg_lsp.engine.types import DenoiseParams

slow = pytest.mark.skipif(not os.environ.get("DG_LSP_SLOW"), reason="inductor on CPU takes minutes: DG_LSP_SLOW=1")
gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")


def _on(loaded: LoadedModel, device: str) -> LoadedModel:
    return LoadedModel(loaded.model.to(device), None, loaded.spec, loaded.path, device, loaded.dtype)


def _denoise(runner, canvas, prompt, temperature, seed):
    cache, _ = runner.encode(prompt)
    if canvas.batch_size > 1:
        cache.batch_repeat_interleave(canvas.batch_size)
    generator = torch.Generator(device=runner.device).manual_seed(seed)
    return DenoiseLoop(runner).run(canvas, cache, DenoiseParams(max_steps=6, temperature=temperature), generator)


def _check_denoise(loaded, prompt, reference_runner):
    compiled = StaticRunner(loaded, capacity=32, width_buckets=(16,), compile=True)
    for canvas in (pad_fill_canvas(prompt, [5, 6, 7], 16, 4, 0, 0),
                   length_candidates_canvas(prompt, [5, 6, 7, 8, 9], (2, 4, 8), 3, 0, 0)):
        for temperature, seed in [(0.0, 1), (0.8, 3)]:
            want = _denoise(reference_runner, canvas, prompt, temperature, seed)
            got = _denoise(compiled, canvas, prompt, temperature, seed)
            assert torch.equal(want.canvas, got.canvas), (canvas.batch_size, temperature)
    assert compiled.compiled, "the compiled step failed and fell back to eager: nothing compiled was compared"


def _check_autoregressive(loaded, prompt):
    runner = ModelRunner(loaded)
    compiled = FixedAutoregressor(runner, compile=True)
    assert compiled.generate(prompt, 20) == FixedAutoregressor(runner).generate(prompt, 20)
    assert compiled.compiled, "the compiled step failed and fell back to eager: nothing compiled was compared"


@pytest.mark.slow
@slow
def test_compiled_denoise_matches_eager_on_cpu(small_window_model, prompt):
    _check_denoise(small_window_model, prompt, ModelRunner(small_window_model))


@pytest.mark.slow
@slow
def test_compiled_autoregressive_matches_eager_on_cpu(small_window_model, prompt):
    _check_autoregressive(small_window_model, prompt)


@pytest.mark.gpu
@gpu
def test_cuda_graphs_denoise_matches_fixed_eager(small_window_model, prompt):
    loaded = _on(small_window_model, "cuda")
    try:
        _check_denoise(loaded, prompt, StaticRunner(loaded, capacity=32, width_buckets=(16,)))
    finally:
        small_window_model.model.to("cpu")
        small_window_model.model.set_experts_implementation("grouped_mm")


@pytest.mark.gpu
@gpu
def test_cuda_graphs_autoregressive_matches_eager(small_window_model, prompt):
    try:
        _check_autoregressive(_on(small_window_model, "cuda"), prompt)
    finally:
        small_window_model.model.to("cpu")
        small_window_model.model.set_experts_implementation("grouped_mm")


def test_graph_safe_experts_only_for_cuda_graphs_of_non_bf16_weights(small_window_model, prompt):
    """float32 experts bound for CUDA graphs switch to batched_mm (grouped_mm's compiled fallback syncs with
    the host, which graph capture refuses); the switch keeps the encoder's output. The device is only read, so
    this runs on CPU."""
    model = small_window_model.model
    implementation = lambda: model.config.text_config._experts_implementation  # noqa: E731
    ids = torch.tensor([prompt])
    saved = {name: tensor.clone() for name, tensor in model.state_dict().items()}  # the fixture is shared
    with torch.no_grad():
        before = model.model.encoder.language_model(input_ids=ids).last_hidden_state
    try:
        graph_safe_experts(model, torch.device("cpu"))
        assert implementation() == "grouped_mm"
        graph_safe_experts(model, torch.device("cuda"))
        assert implementation() == "batched_mm"
        with torch.no_grad():
            after = model.model.encoder.language_model(input_ids=ids).last_hidden_state
        torch.testing.assert_close(after, before, atol=1e-5, rtol=1e-4)
        model.set_experts_implementation("grouped_mm")
        model.to(torch.bfloat16)
        graph_safe_experts(model, torch.device("cuda"))
        assert implementation() == "grouped_mm"
    finally:
        model.to(torch.float32)
        model.load_state_dict(saved)
        model.set_experts_implementation("grouped_mm")
