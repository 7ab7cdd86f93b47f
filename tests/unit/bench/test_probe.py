"""The teacher-forced probe and the oracle-length baseline on a tiny random model."""

from __future__ import annotations

from dg_lsp.bench.diagnostics import probe
from dg_lsp.bench.quality.runners import OracleLengthRunner, RunSettings
from dg_lsp.bench.quality.tasks import Task

TASK = Task("t", "single-line", "python", "def f(x):\n", "    return x + 1\n", "    pass\n")


def test_oracle_length_counts_the_healed_tail_and_the_indent_the_suffix_head_leaves_out(tiny_engine):
    runner = OracleLengthRunner(tiny_engine, RunSettings(steps=2))
    request = runner.request(TASK)
    # heal "\n" + middle + the suffix's indentation but its last space (the pinned head starts at that space)
    expected = len(tiny_engine.tokenize("\n" + TASK.middle + "   "))
    assert request.hole_tokens == expected and request.length_strategy == "pad"
    completion = runner.complete(TASK)
    assert completion.error is None and completion.generated_tokens <= expected


def test_probe_scores_every_answer_token_in_every_mode(tiny_engine):
    import torch

    target = probe.target_tokens(tiny_engine, TASK.prefix, TASK.middle, TASK.suffix)
    out = probe.probe_task(tiny_engine, TASK, torch.Generator().manual_seed(0))
    assert set(out) == set(probe.MODES)
    for mode, scored in out.items():
        assert len(scored) == len(target), mode
        assert all(nll >= 0 for _, nll in scored)
    table = probe.summarize([out])
    assert table["ar"]["tokens"] == len(target) and 0 <= table["diffusion"]["acc"] <= 1


def test_probe_runs_on_a_mask_noise_model(tiny_mask_model_dir):
    import torch

    from dg_lsp.engine import Engine

    engine = Engine.load(tiny_mask_model_dir, device="cpu")
    try:
        out = probe.probe_task(engine, TASK, torch.Generator().manual_seed(0))
    finally:
        engine.close()
    assert len(out["diffusion"]) == len(probe.target_tokens(engine, TASK.prefix, TASK.middle, TASK.suffix)) > 0
