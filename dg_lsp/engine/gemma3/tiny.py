"""A tiny randomly initialised Gemma 3 and an adapter for it, saved as directories the engine loads.

For tests (no download, no GGUF): `build_tiny(out)` writes `out/base` (a transformers Gemma3ForCausalLM with a
tiny byte-level BPE tokenizer) and `out/adapted` (dg_lsp.json pointing at `../base`, adapter.safetensors).
"""

from __future__ import annotations

import json
from pathlib import Path

from ..modelgen import MASK_ID, TINY_CORPUS, train_tokenizer
from ..spec import SPEC_FILE
from . import adapter as A
from .load import ARCHITECTURE


def tiny_config(vocab_size: int):
    from transformers import Gemma3TextConfig

    return Gemma3TextConfig(vocab_size=vocab_size, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                            num_attention_heads=2, num_key_value_heads=1, head_dim=32, sliding_window=512,
                            layer_types=["sliding_attention", "full_attention"], max_position_embeddings=2048,
                            pad_token_id=0, eos_token_id=1, bos_token_id=2, tie_word_embeddings=True,
                            attn_implementation="sdpa")


def build_tiny(out_dir: str | Path, seed: int = 0, vocab_size: int = 384, rank: int = 4,
               delta_scale: float = 0.02, vocab_keep: int | None = None, future_gate: float | None = None,
               end_bias: float | None = None, mask_gate: float | None = None,
               suffix_gate: float | None = None) -> Path:
    """Returns the adapter directory. `delta_scale` 0 gives an adapter that changes nothing (B = 0);
    `vocab_keep` restricts the output vocabulary to the first N ids (default: all); `future_gate` gives the
    adapter a canvas gate at that bias (and `mask_gate`, `suffix_gate` those gates), `end_bias` an end head (zero
    row) with that bias (adapter.py)."""
    import torch
    from safetensors.torch import save_file
    from transformers import Gemma3ForCausalLM

    out = Path(out_dir)
    base, adapted = out / "base", out / "adapted"
    base.mkdir(parents=True, exist_ok=True)
    adapted.mkdir(parents=True, exist_ok=True)
    train_tokenizer(TINY_CORPUS * 4, vocab_size, base)
    torch.manual_seed(seed)
    model = Gemma3ForCausalLM(tiny_config(vocab_size)).eval()
    model.save_pretrained(str(base))
    ad = A.inject(model, rank, 2.0 * rank, MASK_ID, future_gate=future_gate, end_head=end_bias is not None,
                  mask_gate=mask_gate, suffix_gate=suffix_gate)
    with torch.no_grad():
        for m in ad.modules.values():
            m.lora_b.normal_(0.0, delta_scale) if delta_scale else m.lora_b.zero_()
        if end_bias is not None:
            ad.end_bias.fill_(float(end_bias))
    tensors = ad.state_dict()
    n = vocab_keep or vocab_size
    tensors["vocab_ids"] = torch.arange(n, dtype=torch.int32)
    save_file(tensors, str(adapted / "adapter.safetensors"))
    meta = {"architecture": ARCHITECTURE, "noise_kind": "mask", "mask_token_id": MASK_ID, "pad_fill": True,
            "suffix_head_tokens": 4, "add_bos": True, "ar_shift": True,
            "base": {"name": "tiny-gemma3", "path": "../base"},
            "adapter": {"rank": rank, "alpha": 2.0 * rank, "targets": list(A.TARGETS), "hole_slots": 12}}
    (adapted / SPEC_FILE).write_text(json.dumps(meta, indent=2))
    return adapted
