"""The adapter's merged inference weights (adapter.LoRALinear.merge): the same decoder pass as the unmerged deltas,
used only while fresh and never under autograd, and built by the engine's runner."""

from __future__ import annotations

import pytest
import torch

from dg_lsp.engine.gemma3 import adapter as A
from dg_lsp.engine.gemma3 import cache_view as C
from dg_lsp.engine.gemma3.tiny import build_tiny, tiny_config
from dg_lsp.engine.types import DenoiseParams, InfillRequest


def _adapted(seed=5):
    from transformers import DynamicCache, Gemma3ForCausalLM

    torch.manual_seed(seed)
    model = Gemma3ForCausalLM(tiny_config(384)).eval()
    ad = A.inject(model, rank=4, alpha=8.0, mask_id=3)
    with torch.no_grad():
        for m in ad.modules.values():
            m.lora_b.normal_(0, 0.3)  # large deltas, so a merge that dropped them would show
    ids = [2, 40, 41, 42, 43, 44]
    cache = DynamicCache(config=model.config)
    with torch.no_grad():
        A.encoder_pass(model, torch.tensor([ids]), cache)
    canvas = torch.tensor([[44, 3, 3, 3, 50]])
    width = canvas.shape[1]
    masks = {k: torch.ones(1, 1, width, len(ids) + width, dtype=torch.bool) for k in ("full_attention", "sliding_attention")}
    pos = torch.arange(len(ids), len(ids) + width)[None]

    def hidden():
        return A.decoder_hidden(model, ad, canvas, pos, C.ReadOnlyCache.of(cache), masks)

    return model, ad, hidden


def test_merged_pass_matches_the_unmerged_one_and_is_used():
    _, ad, hidden = _adapted()
    with torch.no_grad():
        want = hidden()
        ad.merge()
        got = hidden()
        assert all(m.merged is not None for m in ad.modules.values())  # still fresh after the pass
        for m in ad.modules.values():
            m.merged = torch.zeros_like(m.merged)  # proof that inference reads the merged copy
        broken = hidden()
    assert torch.allclose(want, got, atol=1e-5), float((want - got).abs().max())
    assert float((broken - want).abs().max()) > 1e-2


def test_a_merged_weight_goes_stale_when_the_deltas_change():
    _, ad, hidden = _adapted()
    with torch.no_grad():
        ad.merge()
        before = hidden()
        for m in ad.modules.values():
            m.lora_b.mul_(2.0)  # in place, as an optimizer step or a load does
        after = hidden()
        assert all(m.merged is None for m in ad.modules.values())  # dropped, not used stale
        ad.merge()
        remerged = hidden()
    assert float((after - before).abs().max()) > 1e-2
    assert torch.allclose(after, remerged, atol=1e-5), float((after - remerged).abs().max())


def test_training_never_reads_the_merged_weight():
    _, ad, hidden = _adapted()
    with torch.no_grad():
        want = hidden()
    ad.merge()
    for m in ad.modules.values():
        m.merged = torch.zeros_like(m.merged)  # a wrong merged weight: autograd must not see it
    out = hidden()
    assert torch.allclose(out, want, atol=1e-5)
    out.square().sum().backward()
    grads = [m.lora_b.grad for m in ad.modules.values()]
    assert all(g is not None and float(g.abs().sum()) > 0 for g in grads)


@pytest.fixture(scope="module")
def adapted_dir(tmp_path_factory):
    return build_tiny(tmp_path_factory.mktemp("tiny-merge"), delta_scale=0.3)


def test_the_engine_runs_merged_and_fills_as_the_unmerged_decoder(adapted_dir):
    from dg_lsp.engine import Engine

    engine = Engine.load(str(adapted_dir), device="cpu")
    try:
        mods = list(engine.runner.adapter.modules.values())
        assert mods and all(m.merged is not None for m in mods)
        req = InfillRequest(prefix="def f(x):\n    return ", suffix="\n", params=DenoiseParams(temperature=0))
        merged = engine.infill(req)
        assert all(m.merged is not None for m in mods)
        engine.runner.adapter.unmerge()
        engine.prefix_cache.clear()
        plain = engine.infill(InfillRequest(prefix=req.prefix, suffix=req.suffix, params=req.params))
        assert merged.text == plain.text and merged.steps == plain.steps
        engine.runner.set_dtype(torch.bfloat16)  # a cast re-merges in the new dtype
        assert all(m.merged is not None and m.merged.dtype == torch.bfloat16 for m in mods)
    finally:
        engine.close()


def test_step_time_diagnostic_times_the_unmerged_adapter_too(adapted_dir, tmp_path, capsys):
    import json

    from dg_lsp.bench.diagnostics import step_time

    out = tmp_path / "st.json"
    assert step_time.main(["--model", str(adapted_dir), "--widths", "8", "--rounds", "1", "--steps", "2",
                           "--prompt-tokens", "12", "--ar-tokens", "2", "--unmerged", "--profile", "8",
                           "--json", str(out)]) == 0
    medians = json.loads(out.read_text())["median_ms"]
    assert {"step_8", "forward_8", "step_8_unmerged", "forward_8_unmerged"} <= set(medians)
    assert all(v > 0 for v in medians.values())
    printed = capsys.readouterr().out
    assert "canvas 8, LoRA unmerged" in printed
    assert "one loop run, canvas 8, 2 steps" in printed and "aten::" in printed


# dtype int8 (engine/gemma3/int8.py): an int8 copy of each merged weight and of the decoder's head, for decoder
# passes only


def test_int8_linear_is_near_the_float_product():
    from dg_lsp.engine.gemma3.int8 import Int8Linear

    gen = torch.Generator().manual_seed(0)
    w, x = torch.randn(48, 32, generator=gen), torch.randn(3, 5, 32, generator=gen)
    w[7] = 0.0  # an all-zero row: its scale is clamped, its outputs stay 0
    got, want = Int8Linear(w)(x), x @ w.t()
    assert got.shape == (3, 5, 48) and got.dtype == torch.float32
    rel = float((got - want).norm() / want.norm())
    assert 0 < rel < 0.05, rel
    assert float(got[..., 7].abs().max()) == 0.0


def test_int8_decoder_passes_stay_near_and_base_passes_exact():
    model, ad, hidden = _adapted()
    ids = torch.tensor([[2, 40, 41, 42, 43]])

    def base():
        from transformers import DynamicCache

        return A.encoder_pass(model, ids, DynamicCache(config=model.config)).last_hidden_state

    with torch.no_grad():
        ad.merge()
        want, base_want = hidden(), base()
        ad.pack_int8()
        got, base_got = hidden(), base()
        assert all(m.int8 is not None for m in ad.modules.values())  # still fresh after the pass
        for m in ad.modules.values():
            m.lora_b.mul_(2.0)  # the deltas change: the int8 copies go stale
        stale = hidden()
        assert all(m.int8 is None for m in ad.modules.values())
        ad.unmerge()
        unmerged = hidden()
    rel = float((got - want).norm() / want.norm())
    assert 0 < rel < 0.1, rel  # the decoder pass ran in int8: near float32, not equal
    assert torch.equal(base_got, base_want)  # the encoder (base model) never reads the int8 copies
    assert torch.allclose(stale, unmerged, atol=1e-5)  # stale: the float path, with the new deltas


def test_the_engine_loads_int8_for_its_decoder_only(adapted_dir, tiny_model_dir):
    from dg_lsp.engine import Engine
    from dg_lsp.engine.errors import ModelLoadError
    from dg_lsp.engine.loader import load_model, pick_dtype

    with pytest.raises(ModelLoadError, match="CPU only"):
        pick_dtype("int8", "cuda")
    with pytest.raises(ModelLoadError, match="adapted Gemma"):
        load_model(str(tiny_model_dir), device="cpu", dtype="int8")  # a DiffusionGemma checkpoint
    plain = Engine.load(str(adapted_dir), device="cpu", dtype="float32")
    packed = Engine.load(str(adapted_dir), device="cpu", dtype="int8")
    try:
        assert packed.status()["dtype"] == "int8" and plain.status()["dtype"] == "float32"
        assert packed.runner._head_int8 is not None and plain.runner._head_int8 is None
        prompt, canvas, _ = packed.prepare(InfillRequest(prefix="def f(x):\n    return ", suffix="\n"))
        outs = []
        for engine in (plain, packed):
            r = engine.runner
            cache, enc = r.encode(prompt)
            ids, pos = canvas.canvas_ids, canvas.position_ids()
            outs.append((enc, r.verify(ids, cache, pos, ids.shape[1]), r.decode(ids, cache, pos, None, None)))
        (enc0, ver0, dec0), (enc1, ver1, dec1) = outs
        assert torch.equal(enc0, enc1) and torch.equal(ver0, ver1)  # the base model's passes: float32, unchanged
        hole = canvas.hole_mask[0]
        rel = float((dec1[0, hole] - dec0[0, hole]).norm() / dec0[0, hole].norm())
        assert 0 < rel < 0.1, rel
        result = packed.infill(InfillRequest(prefix="def f(x):\n    return ", suffix="\n",
                                             params=DenoiseParams(temperature=0)))
        assert result.steps >= 1 and not result.cancelled  # a whole fill runs on the packed decoder
        assert all(m.int8 is not None for m in packed.runner.adapter.modules.values())  # and leaves it packed
    finally:
        plain.close()
        packed.close()
