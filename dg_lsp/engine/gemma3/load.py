"""Load an adapted Gemma model directory: `dg_lsp.json` (architecture "gemma3-lora", the base model it
needs, the adapter's shape) and `adapter.safetensors` (LoRA deltas, `<mask>` embedding, output vocabulary).

Returns plain parts; engine/loader.py wraps them (this module does not import the loader).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from ..errors import ModelLoadError
from ..spec import SPEC_FILE
from . import adapter as A
from .build import build
from .vocab import OutputVocab

log = logging.getLogger(__name__)

ARCHITECTURE = "gemma3-lora"


def read_meta(path: Path) -> dict | None:
    f = Path(path) / SPEC_FILE
    if not f.is_file():
        return None
    try:
        meta = json.loads(f.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return meta if meta.get("architecture") == ARCHITECTURE else None


def is_adapter_dir(path: Path) -> bool:
    return read_meta(path) is not None


def load(path: Path, device: str, torch_dtype, quiet: bool = False):
    """(model, tokenizer, runner parts) for an adapter directory; engine/engine.py builds its Gemma3Runner."""
    meta = read_meta(path)
    weights = Path(path) / "adapter.safetensors"
    if meta is None or not weights.is_file():
        raise ModelLoadError(f"{path} is not an adapted Gemma model (dg_lsp.json + adapter.safetensors)")
    base_meta = meta["base"]
    # a local base directory (tests, a user's own checkpoint) or one built from the pinned package
    base = (Path(path) / base_meta["path"]).resolve() if "path" in base_meta else build(base_meta, quiet=quiet)
    try:
        from safetensors.torch import load_file
        from transformers import AutoModelForCausalLM, AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(str(base), local_files_only=True)
        model = AutoModelForCausalLM.from_pretrained(str(base), local_files_only=True, dtype=torch_dtype,
                                                     use_safetensors=True, attn_implementation="sdpa")
        ad = meta["adapter"]
        adapter = A.inject(model, int(ad["rank"]), float(ad["alpha"]), meta.get("mask_token_id"),
                           tuple(ad.get("targets", A.TARGETS)))
        tensors = load_file(str(weights))
        vocab = OutputVocab(tensors.pop("vocab_ids"), model.config.vocab_size)
        adapter.load_state_dict(tensors)
    except ModelLoadError:
        raise
    except Exception as exc:  # noqa: BLE001
        raise ModelLoadError(f"failed to load the adapted model from {path}: {type(exc).__name__}: {exc}") from exc
    model.to(device)
    model.eval()
    canvas_length = int(ad.get("hole_slots", 32)) + int(meta.get("suffix_head_tokens", 8))
    return model, tokenizer, {"adapter": adapter, "vocab": vocab, "canvas_length": canvas_length}
