"""The Gemma adaptation trainer on a tiny Gemma 3 (no download): --init-from an exported adapter (its vocabulary
and counters carry on), one optimisation step lowers nothing to NaN and changes the adapter, a checkpoint
resumes at the same step, and the export is a directory the engine loads."""

from __future__ import annotations

import math

import torch

from dg_lsp.engine.gemma3.tiny import build_tiny


def test_init_from_step_checkpoint_resume_export(tmp_path):
    from dg_lsp.engine import Engine
    from dg_lsp.train.gemma.export import export_dir
    from dg_lsp.train.gemma.trainer import Options, Run

    adapted = build_tiny(tmp_path / "tiny", delta_scale=0.0)
    base = adapted.parent / "base"
    opts = Options(base=str(base), out=str(tmp_path / "run"), init_from=str(adapted), rank=4, alpha=8.0,
                   holes_per_chunk=4, chunk_tokens=96, head_tokens=4, lr=1e-2, warmup=1)
    run = Run(opts)
    assert len(run.vocab) == 384  # the exported adapter's vocabulary, not a new choice
    before = {k: v.clone() for k, v in run.adapter.state_dict().items()}
    info = run.step()
    assert math.isfinite(info["loss"]) and info["holes"] > 0
    after = run.adapter.state_dict()
    assert any(not torch.equal(before[k], after[k]) for k in before)
    run.save_checkpoint()

    resumed = Run(Options(**{**opts.__dict__, "resume": True, "init_from": ""}))
    assert resumed.state["step"] == 1
    assert all(torch.equal(after[k], v) for k, v in resumed.adapter.state_dict().items())

    # the export needs the base's name only for the spec; point the exported spec at the tiny base to load it
    out = export_dir(tmp_path / "run", tmp_path / "exported")
    import json

    meta = json.loads((out / "dg_lsp.json").read_text())
    meta["base"] = {"name": "tiny", "path": str(base)}
    meta["adapter"]["hole_slots"] = 12
    (out / "dg_lsp.json").write_text(json.dumps(meta))
    engine = Engine.load(str(out), device="cpu")
    try:
        from dg_lsp.engine.types import DenoiseParams, InfillRequest

        res = engine.infill(InfillRequest(prefix="x = ", suffix="\n", params=DenoiseParams(temperature=0,
                                                                                          max_steps=2)))
        assert res.steps >= 1
    finally:
        engine.close()
