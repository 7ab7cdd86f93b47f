"""CI smoke test of `python -m dg_lsp.train`: 3 steps on a tiny corpus, checkpoint, resume, export, load."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from dg_lsp.train.cli import main

TINY = ["--no-stdlib", "--vocab-size", "320", "--hidden-size", "32", "--num-layers", "2", "--num-heads", "2",
        "--num-kv-heads", "1", "--head-dim", "16", "--intermediate-size", "64", "--moe-intermediate-size", "32",
        "--canvas-length", "16", "--n-canvases", "3", "--suffix-head", "4", "--batch-size", "2",
        "--eval-batches", "1", "--log-every", "1", "--no-progress", "--threads", "1"]

SOURCES = {
    "geometry.py": """
        import math


        class Point:
            def __init__(self, x, y):
                self.x = x
                self.y = y

            def norm(self):
                return math.sqrt(self.x ** 2 + self.y ** 2)
        """,
    "util.py": """
        def clamp(value, low, high):
            if value < low:
                return low
            if value > high:
                return high
            return value


        def chunks(items, size):
            for i in range(0, len(items), size):
                yield items[i:i + size]
        """,
    "cli.py": """
        import argparse
        import sys


        def main(argv=None):
            parser = argparse.ArgumentParser()
            parser.add_argument("--count", type=int, default=3)
            args = parser.parse_args(argv)
            for i in range(args.count):
                print(i)
            return 0


        if __name__ == "__main__":
            sys.exit(main())
        """,
}


@pytest.fixture()
def corpus(tmp_path: Path) -> Path:
    src = tmp_path / "src"
    src.mkdir()
    for name, text in SOURCES.items():
        (src / name).write_text(textwrap.dedent(text).lstrip() * 4, encoding="utf-8")
    return src


@pytest.mark.timeout(120)
def test_train_resume_export_load(tmp_path: Path, corpus: Path, capsys) -> None:
    run, export = tmp_path / "run", tmp_path / "export"
    assert main(["--out", str(run), "--steps", "3", str(corpus), *TINY]) == 0
    first = json.loads(capsys.readouterr().out)
    assert first["step"] == 3 and (run / "ckpt.pt").is_file()
    assert first["diff_tokens"] > 0 and first["ar_tokens"] > 0
    # `--no-stdlib` reads the corpus alone (argparse once read every `--no-` flag as False, and the standard library
    # was read after all)
    read = json.loads((run / "files.json").read_text())
    assert sorted(Path(path).name for path in read["train"]) == sorted(SOURCES) and read["heldout"] == []

    assert main(["--out", str(run), "--resume", "--steps", "5", "--export", str(export), *TINY]) == 0
    second = json.loads(capsys.readouterr().out)
    assert second["step"] == 5 and second["trained_steps"] == 2
    assert "line_acc_t1" in second["last_eval"]

    for name in ("model.safetensors", "config.json", "generation_config.json", "tokenizer.json", "dg_lsp.json",
                 "MODEL.md"):
        assert (export / name).is_file(), name
    spec = json.loads((export / "dg_lsp.json").read_text())
    assert spec["noise_kind"] == "mask" and spec["mask_token_id"] == 3 and spec["pad_fill"] is True

    # The export holds the checkpoint's weights, loaded the way a user loads them, offline, in a fresh process.
    ckpt = torch.load(run / "ckpt.pt", map_location="cpu", weights_only=False)["model"]
    probe = "model.decoder.layers.0.self_attn.q_proj.weight"
    torch.save(ckpt[probe], tmp_path / "probe.pt")
    script = f"""
import torch
from transformers import AutoTokenizer, DiffusionGemmaForBlockDiffusion
model = DiffusionGemmaForBlockDiffusion.from_pretrained({str(export)!r})
tok = AutoTokenizer.from_pretrained({str(export)!r})
sd = model.state_dict()
assert torch.equal(sd[{probe!r}], torch.load({str(tmp_path / 'probe.pt')!r}))
assert torch.equal(sd["model.encoder.language_model.layers.0.self_attn.q_proj.weight"], sd[{probe!r}])
ids = tok("def clamp(value):", add_special_tokens=False)["input_ids"]
assert tok.decode(ids) == "def clamp(value):"
print("ok")
"""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=100)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().endswith("ok")


def test_a_new_run_continues_from_an_export(tmp_path: Path, corpus: Path, capsys) -> None:
    """When the run directory is gone, `--init-from` carries on from the shipped weights and tokenizer."""
    run, export, again = tmp_path / "run", tmp_path / "export", tmp_path / "again"
    assert main(["--out", str(run), "--steps", "2", "--export", str(export), str(corpus), *TINY]) == 0
    capsys.readouterr()
    state = json.loads((export / "train_state.json").read_text())
    assert state["state"]["step"] == 2
    # architecture flags are taken from the export, whatever the command line says
    other = list(TINY)
    other[other.index("--hidden-size") + 1] = "64"
    assert main(["--out", str(again), "--init-from", str(export), "--steps", "3", str(corpus), *other]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["step"] == 3 and out["trained_steps"] == 1
    ckpt = torch.load(again / "ckpt.pt", map_location="cpu", weights_only=False)
    assert ckpt["options"]["hidden_size"] == 32 and ckpt["state"]["init_from"] == str(export)
    assert (again / "tokenizer" / "tokenizer.json").read_text() == (export / "tokenizer.json").read_text()
