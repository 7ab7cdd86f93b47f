"""Prepacked float32 weights (engine/gemma3/packed.py): the same products as the plain weights, used only where they
serve (float32 on the CPU, no autograd, few rows), dropped when the weights change, settled at warm-up."""

from __future__ import annotations

import pytest
import torch

from dg_lsp.engine.gemma3 import adapter as A
from dg_lsp.engine.gemma3 import packed as P
from dg_lsp.engine.gemma3.tiny import build_tiny
from dg_lsp.engine.types import DenoiseParams, InfillRequest

pytestmark = pytest.mark.skipif(P.unavailable() is not None, reason=str(P.unavailable()))


def test_a_packed_weight_computes_the_linear_product():
    gen = torch.Generator().manual_seed(0)
    w, b = torch.randn(48, 32, generator=gen), torch.randn(48, generator=gen)
    packed = P.PackedWeight(w)
    for shape in ((1, 32), (5, 32), (2, 7, 32), (200, 32)):
        x = torch.randn(*shape, generator=gen)
        for bias in (None, b):
            got, want = packed(x, bias), torch.nn.functional.linear(x, w, bias)
            assert got.shape == want.shape and got.dtype == torch.float32
            assert torch.allclose(got, want, rtol=1e-5, atol=1e-5), float((got - want).abs().max())
    # bfloat16 too (dtype auto on an AMX CPU): the same product as bfloat16's linear
    packed16 = P.PackedWeight(w.bfloat16())
    x = torch.randn(5, 32, generator=gen).bfloat16()
    got, want = packed16(x, b.bfloat16()), torch.nn.functional.linear(x, w.bfloat16(), b.bfloat16())
    assert got.dtype == torch.bfloat16 and torch.allclose(got.float(), want.float(), rtol=1e-2, atol=1e-2)
    with pytest.raises(ValueError, match="float32 or bfloat16 on the CPU"):
        P.PackedWeight(w.half())


def test_packed_serves_few_rows_without_autograd_only():
    rows = P.MAX_ROWS[torch.float32]
    x = torch.zeros(rows, 16)
    with torch.no_grad():
        assert P.fits(x) and P.fits(x[:1]) and P.fits(x.view(4, -1, 16))
        assert not P.fits(torch.zeros(rows + 1, 16))  # a long prompt's encoding takes the plain weight
        assert not P.fits(x.bfloat16()) and P.fits(x.bfloat16(), torch.bfloat16)  # a packed weight's own dtype
        # bfloat16 has its own limit (higher: packed pays for more rows there), float16 none (never packed)
        rows16 = P.MAX_ROWS[torch.bfloat16]
        assert rows16 > rows and P.fits(torch.zeros(rows16, 16, dtype=torch.bfloat16), torch.bfloat16)
        assert not P.fits(torch.zeros(rows16 + 1, 16, dtype=torch.bfloat16), torch.bfloat16)
        assert not P.fits(torch.zeros(1, 16, dtype=torch.float16), torch.float16)
    assert not P.fits(x)  # autograd on: training reads the plain weights


def _lora(seed=0):
    torch.manual_seed(seed)
    base = torch.nn.Linear(32, 48, bias=False)
    layer = A.LoRALinear(base, rank=4, alpha=8.0, state=A.AdapterState())
    with torch.no_grad():
        layer.lora_b.normal_(0, 0.3)
    return layer


def _counting(monkeypatch):
    calls = []
    real = P.PackedWeight.__call__

    def counted(self, x, bias=None):
        calls.append(x.shape)
        return real(self, x, bias)

    monkeypatch.setattr(P.PackedWeight, "__call__", counted)
    return calls


def test_a_packed_lora_layer_gives_the_base_and_merged_products_and_knows_when_not_to(monkeypatch):
    layer = _lora()
    x, long = torch.randn(3, 32), torch.randn(P.MAX_ROWS[torch.float32] + 4, 32)
    with torch.no_grad():
        base_want, long_want = layer(x), layer(long)
        layer.state.active = True
        dec_want = layer(x)
        layer.state.active = False
        layer.use_packed(True, base=True)
        assert layer.merged is None and layer.packed_merged is not None  # the packed copy replaces the merged one
        calls = _counting(monkeypatch)
        base_got, long_got = layer(x), layer(long)
        assert calls == [x.shape]  # the long input took the plain weight
        layer.state.active = True
        dec_got = layer(x)
        assert len(calls) == 2  # the decoder pass read the packed merged weight
        layer.state.active = False
    assert torch.allclose(base_got, base_want, atol=1e-5) and torch.allclose(long_got, long_want, atol=1e-5)
    assert torch.allclose(dec_got, dec_want, atol=1e-5)
    assert float((dec_want - base_want).abs().max()) > 1e-2  # the deltas count: a base product would show


def test_the_adapter_state_switches_between_packed_and_plain_copies_kept_side_by_side(monkeypatch):
    layer = _lora()
    layer.use_packed(True, keep_merged=True)
    assert layer.merged is not None and layer.packed_merged is not None and layer.packed_base is None
    calls = _counting(monkeypatch)
    x = torch.randn(2, 32)
    with torch.no_grad():
        layer.state.active = True
        layer.state.packed = False
        plain = layer(x)
        assert calls == []  # switched off: the plain merged copy
        layer.state.packed = True
        packed = layer(x)
        assert len(calls) == 1
    assert torch.allclose(plain, packed, atol=1e-5)
    layer.release_merged()
    assert layer.merged is None and layer.packed_merged is not None


def test_packed_weights_go_stale_when_the_weights_change_and_training_never_reads_them(monkeypatch):
    layer = _lora()
    layer.use_packed(True, base=True)
    x = torch.randn(2, 32)
    calls = _counting(monkeypatch)
    layer.state.active = True
    with torch.no_grad():
        layer.lora_b.mul_(2.0)  # in place, as an optimizer step or a load does
        got = layer(x)
    assert calls == [] and layer.packed_base is None and layer.packed_merged is None  # dropped, not used stale
    want = layer.base(x) + (x @ layer.lora_a.t()) @ layer.lora_b.t() * layer.scale
    assert torch.allclose(got, want.detach(), atol=1e-5)
    layer.use_packed(True, base=True)
    out = layer(x)  # autograd on
    out.square().sum().backward()
    assert calls == [] and layer.lora_b.grad is not None and float(layer.lora_b.grad.abs().sum()) > 0
    layer.use_packed(False)
    assert layer.packed_base is None and layer.merged is not None  # off: the plain merged copy is back


@pytest.fixture(scope="module")
def adapted_dir(tmp_path_factory):
    return build_tiny(tmp_path_factory.mktemp("tiny-packed"), delta_scale=0.3, future_gate=-2.0, end_bias=-1.0)


def test_the_runner_passes_and_a_fill_are_the_same_packed(adapted_dir):
    from dg_lsp.engine import Engine

    engine = Engine.load(str(adapted_dir), device="cpu", dtype="float32")
    try:
        r = engine.runner
        prompt, canvas, _ = engine.prepare(InfillRequest(prefix="def f(x):\n    return ", suffix="\n"))
        ids, pos = canvas.canvas_ids, canvas.position_ids()
        req = dict(prefix="def f(x):\n    return ", suffix="\n", params=DenoiseParams(temperature=0))

        def run():
            cache, enc = r.encode(prompt)
            hidden = r.base_hidden(ids[:, :3], cache, pos[:, :3])
            engine.prefix_cache.clear()
            return (enc, r.decode(ids, cache, pos, None, None), r.verify(ids, cache, pos, 5), r.head_logits(hidden),
                    engine.infill(InfillRequest(**req)))

        plain = run()
        r.use_packed(True)  # the decoder's weights only: the base passes and the head stay plain
        assert r.packed == "decoder" and r._head_packed is None
        assert all(m.packed_base is None and m.packed_merged is not None and m.merged is None
                   for m in r.adapter.modules.values())
        decoder = run()
        r.use_packed(True, base=True)
        assert r.packed == "all" and r._head_packed is not None
        assert all(m.packed_base is not None for m in r.adapter.modules.values())
        packed = run()
        for got in (decoder, packed):
            for a, b in zip(plain[:4], got[:4]):
                assert torch.allclose(a, b, rtol=1e-4, atol=1e-4), float((a - b).abs().max())
            assert got[4].text == plain[4].text and got[4].steps == plain[4].steps
        assert torch.equal(decoder[0], plain[0]) and torch.equal(decoder[2], plain[2])  # base passes: plain weights
        r.add_columns([300, 301])  # added output columns: the packed head is rebuilt with them
        assert r._head_packed.out_features == r._head.shape[0]
        r.set_dtype(torch.bfloat16)  # a cast to bfloat16 packs the cast weights again; the head stays plain
        assert r.packed == "all" and r._head_packed is None
        assert all(m.packed_merged.dtype == torch.bfloat16 and m.packed_base.dtype == torch.bfloat16
                   for m in r.adapter.modules.values())
        r.adapter.state.packed = False
        plain16 = run()
        r.adapter.state.packed = True
        packed16 = run()
        for a, b in zip(plain16[:4], packed16[:4]):
            assert torch.allclose(a.float(), b.float(), rtol=2e-2, atol=2e-2), float((a - b).float().abs().max())
        assert packed16[4].text == plain16[4].text
        r.set_dtype(torch.float16)  # a dtype packing does not serve ends it
        assert not r.packed and r._head_packed is None
        assert all(m.packed_merged is None and m.merged is not None for m in r.adapter.modules.values())
        with pytest.raises(ValueError, match="float32 or bfloat16 on the CPU"):
            r.use_packed(True)
    finally:
        engine.close()


@pytest.mark.parametrize("setting", [None, "all", "off", "auto", "sometimes"])
def test_warm_up_settles_packing_and_status_reports_it(adapted_dir, monkeypatch, setting):
    from dg_lsp.engine import Engine

    if setting is None:
        monkeypatch.delenv(P.SETTING, raising=False)  # the default: off
    else:
        monkeypatch.setenv(P.SETTING, setting)
    engine = Engine.load(str(adapted_dir), device="cpu", dtype="float32")
    try:
        engine.warmup()
        record = engine.status()["packing"]
        assert record["asked"] == (setting or "off") and record["chosen"] in ("all", "off") and record["reason"]
        assert engine.runner.packed == (False if record["chosen"] == "off" else record["chosen"])
        mods = engine.runner.adapter.modules.values()
        if record["chosen"] != "off":  # the packed copies serve; the plain merged ones the timing kept are gone
            assert all(m.packed_merged is not None and m.merged is None for m in mods)
            assert all((m.packed_base is not None) == (record["chosen"] == "all") for m in mods)
        else:
            assert all(m.packed_merged is None and m.merged is not None for m in mods)
        assert engine.runner.adapter.state.packed
        if setting in (None, "all", "off"):
            assert record["chosen"] == (setting or "off")
        if setting is None:
            assert "(the default)" in record["reason"]
        if setting == "auto":  # measured: both timings and the agreement are in the record
            assert record["passes_ms_plain"] > 0 and record["passes_ms_packed"] > 0
            assert 0.0 <= record["greedy_agreement"] <= 1.0
        if setting == "sometimes":
            assert record["chosen"] == "off" and "expected off, all, auto" in record["reason"]
        result = engine.infill(InfillRequest(prefix="def f(x):\n    return ", suffix="\n",
                                             params=DenoiseParams(temperature=0)))
        assert not result.cancelled and result.steps >= 1
    finally:
        engine.close()


def test_step_time_diagnostic_times_prepacked_weights_beside_plain_ones(adapted_dir, tmp_path, capsys):
    import json

    from dg_lsp.bench.diagnostics import step_time

    out = tmp_path / "st.json"
    assert step_time.main(["--model", str(adapted_dir), "--widths", "8", "--rounds", "1", "--steps", "2",
                           "--prompt-tokens", "12", "--ar-tokens", "2", "--packed", "all", "--json", str(out)]) == 0
    medians = json.loads(out.read_text())["median_ms"]
    assert {"step_8", "forward_8", "ar_token", "step_8_packed", "forward_8_packed", "ar_token_packed"} <= set(medians)
    assert all(v > 0 for v in medians.values())
    printed = capsys.readouterr().out
    assert "canvas 8, weights prepacked (packed/plain" in printed and "AR token, weights prepacked" in printed


def test_the_kernel_diagnostic_prints_both_kernels_by_rows(tmp_path, capsys):
    import json

    from dg_lsp.bench.diagnostics import packed_kernels

    out = tmp_path / "k.json"
    assert packed_kernels.main(["--layers", "2", "--rows", "1,3", "--reps", "1", "--json", str(out)]) == 0
    rows = json.loads(out.read_text())["rows"]
    assert [r["rows"] for r in rows] == [1, 3] and all(r["linear_ms"] > 0 and r["packed_ms"] > 0 for r in rows)
    assert "| rows | linear | packed | packed/linear |" in capsys.readouterr().out


def test_packing_is_auto_by_default_in_bfloat16_and_off_in_float32(monkeypatch):
    monkeypatch.delenv(P.SETTING, raising=False)
    assert P.wanted(torch.bfloat16) == "auto" and P.wanted(torch.float32) == "off" and P.wanted() == "off"
    monkeypatch.setenv(P.SETTING, "off")
    assert P.wanted(torch.bfloat16) == "off"  # asked for: as asked
