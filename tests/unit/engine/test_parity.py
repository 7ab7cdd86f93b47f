"""The denoising loop reproduces transformers' `model.generate()` when nothing is pinned."""

import torch

from dg_lsp.engine.canvas import InfillCanvas
from dg_lsp.engine.denoise import DenoiseLoop
from dg_lsp.engine.types import DenoiseParams


def _full_canvas(prompt, length):
    return InfillCanvas(prompt_ids=list(prompt), canvas_ids=torch.zeros(1, length, dtype=torch.long),
                        pinned=torch.zeros(1, length, dtype=torch.bool), valid=torch.ones(1, length, dtype=torch.bool),
                        hole_lengths=[length], suffix_head_len=0)


def _reference(model, prompt, seed, max_steps):
    torch.manual_seed(seed)
    out = model.generate(torch.tensor([prompt]), max_new_tokens=model.config.canvas_length,
                         max_denoising_steps=max_steps, t_max=0.8, t_min=0.4,
                         stability_threshold=1, confidence_threshold=0.005)
    return out.sequences[0, len(prompt):], float(out.tokens_per_forward[0])


def _ours(engine, prompt, seed, max_steps):
    runner = engine.runner
    loop = DenoiseLoop(runner)  # uniform noise, as DiffusionGemma
    cache, _ = runner.encode(prompt)
    torch.manual_seed(seed)
    params = DenoiseParams(max_steps=max_steps, temperature=0.8, t_min_ratio=0.5, entropy_bound=0.1,
                           stability_threshold=1, confidence_threshold=0.005, reference_sampling=True)
    out = loop.run(_full_canvas(prompt, runner.canvas_length), cache, params, torch.default_generator)
    return out.canvas[0], out


def test_loop_matches_generate_token_for_token(tiny_engine):
    model = tiny_engine.runner.model
    prompt = [2] + tiny_engine.tokenizer.encode("def add(a, b):\n    return", add_special_tokens=False)
    for seed, steps in [(0, 8), (1, 16), (7, 48)]:
        ref, ref_tpf = _reference(model, prompt, seed, steps)
        ours, out = _ours(tiny_engine, prompt, seed, steps)
        assert torch.equal(ref, ours), (seed, ref.tolist(), ours.tolist())
        non_pad = int((ours != model.config.text_config.pad_token_id).sum())
        assert abs(ref_tpf - non_pad / int(out.forwards_per_row[0])) < 1e-6


def test_same_seed_same_output_and_different_seed_differs(tiny_engine):
    from dg_lsp.engine import InfillRequest

    def run(seed):
        req = InfillRequest(prefix="x = [1, 2", suffix="]\n", params=DenoiseParams(seed=seed, max_steps=6))
        return tiny_engine.infill(req)

    a, b, c = run(3), run(3), run(4)
    assert a.text == b.text and a.steps == b.steps
    assert (a.text, a.score) != (c.text, c.score)
