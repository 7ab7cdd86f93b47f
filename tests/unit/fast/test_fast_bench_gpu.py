"""`dg-lsp bench gpu` runs end to end on CPU with tiny sizes and writes a valid report; the
full-size config is Gemma-4 26B-A4B's."""

import json

import torch

from dg_lsp.bench.cli import main as bench_main
from dg_lsp.engine.fast.arch import diffusion_gemma_config, parameter_count

TINY = ["--scale", "small", "--device", "cpu", "--prompt-tokens", "48", "--canvases", "8,16", "--e2e-canvas", "16",
        "--steps", "2,3", "--ar-tokens", "4", "--repeats", "1"]


def test_small_scale_runs_on_cpu_and_writes_json(tmp_path, capsys):
    assert bench_main(["gpu", *TINY, "--compile", "off,fixed", "--out", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "gpu-bench.json").read_text())
    assert report["schema"] == "dg-lsp-bench-gpu/1" and report["complete"] is True
    records = report["records"]
    assert not [r for r in records if "error" in r or "skipped" in r]
    kinds = {(r["compile"], r["kind"]) for r in records}
    for mode in ("off", "fixed"):
        assert {(mode, "denoise"), (mode, "autoregressive"), (mode, "forward")} <= kinds
    denoise = [r for r in records if r["kind"] == "denoise"]
    assert sorted(r["steps"] for r in denoise) == [2, 2, 3, 3]
    assert all(r["tokens_per_s"] > 0 and r["e2e_ms"] > r["ms"] for r in denoise)
    assert sorted(r["canvas"] for r in records if r["kind"] == "forward") == [8, 8, 16, 16]
    md = (tmp_path / "gpu-bench.md").read_text()
    assert "plumbing check" in md and "| one decoder forward, canvas 16 (ms) |" in md
    assert "plumbing check" in capsys.readouterr().out


def test_budget_skips_measurements_but_still_reports(tmp_path):
    assert bench_main(["gpu", *TINY, "--compile", "off", "--budget-s", "0", "--out", str(tmp_path)]) == 0
    records = json.loads((tmp_path / "gpu-bench.json").read_text())["records"]
    assert records and all(r.get("skipped") == "budget" for r in records)


def test_full_scale_is_gemma4_26b_a4b():
    config = diffusion_gemma_config("full")
    text = config.text_config
    assert (text.hidden_size, text.num_hidden_layers, text.num_experts, text.top_k_experts) == (2816, 30, 128, 8)
    assert (text.moe_intermediate_size, text.intermediate_size, text.vocab_size) == (704, 2112, 262144)
    assert text.layer_types.count("full_attention") == 5 and text.layer_types[-1] == "full_attention"
    full = text.per_layer_config[5]
    assert (full.head_dim, full.num_key_value_heads) == (512, 2)
    from transformers import DiffusionGemmaForBlockDiffusion

    with torch.device("meta"):
        model = DiffusionGemmaForBlockDiffusion(config)
    assert 25.0e9 < parameter_count(model) < 25.5e9  # "26B" total, tied encoder/decoder


def test_the_gpu_bench_measures_through_the_engines_public_api():
    """Issue 12: the suite builds an `Engine` over the random-weight model and times its public methods; it does
    not assemble a second engine from the engine's parts."""
    import ast
    from pathlib import Path

    import dg_lsp.bench.gpu.suite as suite

    tree = ast.parse(Path(suite.__file__).read_text(encoding="utf-8"))
    engine_imports = {node.module for node in ast.walk(tree)
                      if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("dg_lsp.engine")}
    assert engine_imports == {"dg_lsp.engine.engine", "dg_lsp.engine.fast.arch", "dg_lsp.engine.loader"}
    private = {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)
               and isinstance(node.value, ast.Attribute) and node.value.attr == "engine" and node.attr.startswith("_")}
    assert not private
