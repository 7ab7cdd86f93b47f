"""Resumed runs keep the run's options but take per-invocation ones (export, minutes) from the command line."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

from dg_lsp.train.cli import TrainOptions, parse_args, resolve_options


def _saved_run(tmp_path: Path, **overrides) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    opts = asdict(TrainOptions(out=str(run), **overrides))
    (run / "options.json").write_text(json.dumps(opts), encoding="utf-8")
    return run


def test_resume_does_not_repeat_an_earlier_export(tmp_path: Path) -> None:
    run = _saved_run(tmp_path, export="somewhere/else", minutes=5.0, hidden_size=128, noise="uniform")
    opts = resolve_options(*parse_args(["--out", str(run), "--resume"]))
    assert opts.export == "" and opts.minutes == 0.0
    assert opts.hidden_size == 128 and opts.noise == "uniform"


def test_resume_takes_export_and_resumable_overrides_from_the_command_line(tmp_path: Path) -> None:
    run = _saved_run(tmp_path, hidden_size=128, lr=1e-3)
    opts = resolve_options(*parse_args(["--out", str(run), "--resume", "--export", "x", "--lr", "0.0005",
                                        "--hidden-size", "512"]))
    assert opts.export == "x" and opts.lr == 0.0005
    assert opts.hidden_size == 128  # architecture is the run's, not the command line's


def test_pad_weight_scales_only_pad_targets():
    import torch

    from dg_lsp.engine.modelgen import PAD_ID
    from dg_lsp.train.canvas import IGNORE
    from dg_lsp.train.objective import diffusion_ce

    torch.manual_seed(0)
    logits = torch.randn(1, 4, 10)
    targets = torch.tensor([[5, PAD_ID, PAD_ID, IGNORE]])
    ce = torch.nn.functional.cross_entropy(logits[0], targets[0].clamp(min=0), reduction="none")
    full = diffusion_ce(logits, targets)
    torch.testing.assert_close(full, ce[:3].mean())
    torch.testing.assert_close(diffusion_ce(logits, targets, 0.5), (ce[0] + 0.5 * ce[1] + 0.5 * ce[2]) / 2.0)
    assert diffusion_ce(logits, targets, 0.0) == ce[0]
