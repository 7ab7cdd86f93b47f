"""Which model the typing benchmark runs: the one given, the embedded default, or, when neither
exists, a randomly initialised model of the training configuration's size (speed does not
depend on the weights, only on the shapes)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def package_sources(limit_bytes: int = 3_000_000) -> list[Path]:
    """The package's own Python files: real code, present wherever dg-lsp is installed."""
    root = Path(__file__).resolve().parents[2]
    files, total = [], 0
    for path in sorted(root.rglob("*.py")):
        size = path.stat().st_size
        if size < 2_000:
            continue
        files.append(path)
        total += size
        if total > limit_bytes:
            break
    return files


def training_size_model(out_dir: str | Path | None = None) -> Path:
    """A random model shaped like `python -m dg_lsp.train`'s defaults (built once, then reused)."""
    from dg_lsp.engine.modelgen import MASK_ID, make_config, train_tokenizer
    from dg_lsp.engine.spec import InfillSpec
    from dg_lsp.train.cli import TrainOptions

    out = Path(out_dir or Path(tempfile.gettempdir()) / f"dg-lsp-training-size-{os.getuid()}")
    if (out / "dg_lsp.json").is_file():
        return out
    import torch
    from transformers import DiffusionGemmaForBlockDiffusion

    o = TrainOptions()
    out.mkdir(parents=True, exist_ok=True)
    texts = [p.read_text(encoding="utf-8", errors="replace") for p in package_sources()]
    train_tokenizer(texts, o.vocab_size, out)
    from transformers import AutoTokenizer

    vocab = len(AutoTokenizer.from_pretrained(str(out)))
    torch.manual_seed(o.seed)
    cfg = make_config(vocab + 3, hidden_size=o.hidden_size, num_layers=o.num_layers, num_heads=o.num_heads,
                      num_kv_heads=o.num_kv_heads, head_dim=o.head_dim, intermediate_size=o.intermediate_size,
                      num_experts=o.num_experts, top_k_experts=o.top_k_experts,
                      moe_intermediate_size=o.moe_intermediate_size, canvas_length=o.canvas_length)
    DiffusionGemmaForBlockDiffusion(cfg).eval().save_pretrained(str(out))
    InfillSpec(noise_kind=o.noise, mask_token_id=MASK_ID if o.noise == "mask" else None, pad_fill=True,
               suffix_head_tokens=o.suffix_head, add_bos=True).save(out)
    return out


def resolve_model(model: str | None) -> tuple[str, str]:
    """(model directory, kind) with kind one of given | embedded | fresh-training-size."""
    from dg_lsp.engine.loader import DEFAULT_MODEL_DIR

    if model:
        return model, "given"
    from dg_lsp.engine.gemma3.load import is_adapter_dir

    if (DEFAULT_MODEL_DIR / "config.json").is_file() or is_adapter_dir(DEFAULT_MODEL_DIR):
        return str(DEFAULT_MODEL_DIR), "embedded"
    return str(training_size_model()), "fresh-training-size"
