"""dtype `auto` on CPU (issue 15.3, engine/dtype_auto.py): float32 unless bfloat16 is measured faster and agrees;
a rejected trial puts the float32 weights back exactly."""

from __future__ import annotations

import pytest
import torch

from dg_lsp.engine import DenoiseParams, Engine, InfillRequest
from dg_lsp.engine import dtype_auto


TWO_STEPS = DenoiseParams(max_steps=2)  # bfloat16 is emulated (slow) on CPUs without it


@pytest.fixture
def engine(tiny_model_dir):
    eng = Engine.load(tiny_model_dir, device="cpu")
    yield eng
    eng.close()


def _weights(engine):
    return {k: v.detach().clone() for k, v in engine.runner.model.state_dict().items()}


def test_probe_measures_both_dtypes():
    probe = dtype_auto.matmul_probe(reps=2)
    assert probe["float32_ms"] > 0 and probe["bfloat16_ms"] > 0
    assert probe["bfloat16_speedup"] == pytest.approx(probe["float32_ms"] / probe["bfloat16_ms"])


def test_slow_bfloat16_keeps_float32_without_a_trial(engine, monkeypatch):
    monkeypatch.setattr(dtype_auto, "matmul_probe", lambda: {"float32_ms": 1.0, "bfloat16_ms": 5.0,
                                                             "bfloat16_speedup": 0.2})
    monkeypatch.setattr(dtype_auto, "trial", lambda e: pytest.fail("no trial when the probe says bf16 is slow"))
    engine.warmup()
    choice = engine.status()["dtypeChoice"]
    assert choice["chosen"] == "float32" and "not 1.2x faster" in choice["reason"]
    assert engine.status()["dtype"] == "float32"


def test_a_trial_that_fails_restores_the_float32_weights_exactly(engine, monkeypatch):
    before = _weights(engine)
    want = engine.infill(InfillRequest(prefix="def f(x):\n    return ", suffix="\n")).text
    monkeypatch.setattr(dtype_auto, "matmul_probe", lambda: {"float32_ms": 2.0, "bfloat16_ms": 1.0,
                                                             "bfloat16_speedup": 2.0})
    monkeypatch.setattr(dtype_auto, "AGREE", 1.01)  # agreement can never pass
    choice = engine.settle_dtype()
    assert choice["chosen"] == "float32" and "greedy agreement" in choice["reason"]
    after = _weights(engine)
    assert all(after[k].dtype == torch.float32 and torch.equal(after[k], before[k]) for k in before)
    assert engine.infill(InfillRequest(prefix="def f(x):\n    return ", suffix="\n")).text == want


def test_a_failed_trial_leaves_the_rotary_buffers_exactly_as_they_were(engine, monkeypatch):
    """The rotary embeddings' inverse frequencies are buffers outside the state dict: the cast keeps them float32
    (ModelRunner.set_dtype), so after a rejected trial they are the loaded ones to the bit."""
    def buffers():
        return {k: v.detach().clone() for k, v in engine.runner.model.named_buffers() if k.endswith("inv_freq")}

    before = buffers()
    assert before
    monkeypatch.setattr(dtype_auto, "matmul_probe", lambda: {"float32_ms": 2.0, "bfloat16_ms": 1.0,
                                                             "bfloat16_speedup": 2.0})
    monkeypatch.setattr(dtype_auto, "AGREE", 1.01)
    assert engine.settle_dtype()["chosen"] == "float32"
    after = buffers()
    assert all(after[k].dtype == torch.float32 and torch.equal(after[k], before[k]) for k in before)


def test_a_trial_that_passes_runs_in_bfloat16_and_the_gemma_runner_refreshes_its_head(tmp_path, monkeypatch):
    from dg_lsp.engine.gemma3.tiny import build_tiny

    eng = Engine.load(str(build_tiny(tmp_path)), device="cpu")
    try:
        monkeypatch.setattr(dtype_auto, "matmul_probe", lambda: {"float32_ms": 2.0, "bfloat16_ms": 1.0,
                                                                 "bfloat16_speedup": 2.0})
        monkeypatch.setattr(dtype_auto, "STEP_MARGIN", 0.0)
        monkeypatch.setattr(dtype_auto, "AGREE", 0.0)
        choice = eng.settle_dtype()
        assert choice["chosen"] == "bfloat16" and 0.0 <= choice["greedy_agreement"] <= 1.0
        assert next(eng.runner.model.parameters()).dtype == torch.bfloat16
        assert eng.runner._head.dtype == torch.bfloat16 and eng.status()["dtype"] == "bfloat16"
        assert eng.infill(InfillRequest(prefix="def f(x):\n    return ", suffix="\n", params=TWO_STEPS)).steps >= 1
    finally:
        eng.close()
