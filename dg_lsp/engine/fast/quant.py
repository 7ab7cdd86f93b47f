"""4-bit (bitsandbytes NF4) loading options for `load_model(quantization=...)`.

bitsandbytes replaces `nn.Linear` layers only. DiffusionGemma's MoE experts are 3D parameters
(`experts.gate_up_proj`, `experts.down_proj`), not `nn.Linear`, so they stay in the compute dtype:
on the 26B-A4B checkpoint that is about 23B of its 25B parameters, and NF4 then saves little
memory. `quantized_fraction()` reports the share actually quantized, which the loader logs.
"""

from __future__ import annotations

import importlib.util

from ..errors import ModelLoadError

QUANTIZATIONS = ("none", "nf4")


def quantization_kwargs(quantization: str, device: str, compute_dtype) -> dict:
    """Extra `from_pretrained` keyword arguments for a quantization; {} for "none".
    Raises ModelLoadError saying what is missing."""
    if quantization in (None, "", "none"):
        return {}
    if quantization not in QUANTIZATIONS:
        raise ModelLoadError(f"unknown quantization {quantization!r} ({'|'.join(QUANTIZATIONS)})")
    if not str(device).startswith("cuda"):
        raise ModelLoadError(f"quantization {quantization!r} needs a CUDA device (bitsandbytes 4-bit kernels), "
                             f"not {device!r}: pass --device cuda on a GPU machine, or quantization 'none'")
    missing = [name for name in ("bitsandbytes", "accelerate") if importlib.util.find_spec(name) is None]
    if missing:
        raise ModelLoadError(f"quantization {quantization!r} needs {' and '.join(missing)}: "
                             "pip install 'dg-lsp[gpu]'")
    from transformers import BitsAndBytesConfig

    config = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True,
                                bnb_4bit_compute_dtype=compute_dtype)
    return {"quantization_config": config, "device_map": {"": device}}


def quantized_fraction(model) -> float:
    """Share of the model's parameters held in 4-bit."""
    total = quantized = 0
    seen: set[int] = set()
    for module in model.modules():
        if type(module).__name__ == "Linear4bit":  # its packed weight's numel is not the parameter count
            quantized += module.in_features * module.out_features
            total += module.in_features * module.out_features
            seen.add(id(module.weight))
        for p in module.parameters(recurse=False):
            if id(p) not in seen:
                seen.add(id(p))
                total += p.numel()
    return quantized / max(1, total)
