"""The DiffusionGemma-26B-A4B architecture, for building it with random weights (benchmarks).

The text part is Gemma-4 26B-A4B's text config, as published in `google/gemma-4-26B-A4B-it`'s
config.json. Copied from the copy of that file in AI-Hypercomputer/maxtext,
`src/maxtext/checkpoint_conversion/utils/hf_model_configs.py` (`gemma4_26b_dict["text_config"]`,
commit 060d567d45ba3f0793de13eb8e399d524ae35467), cross-checked against the DiffusionGemma test
fixtures of other public ports (same sizes). Keys DiffusionGemma's config does not take are
dropped: `enable_moe_block` (always on in DiffusionGemma), `attention_k_eq_v` (its full-attention
layers always share K and V), `num_kv_shared_layers` / `hidden_size_per_layer_input` (0 here).
"""

from __future__ import annotations

import time

GEMMA4_26B_A4B_TEXT = {
    "attention_bias": False,
    "attention_dropout": 0.0,
    "bos_token_id": 2,
    "eos_token_id": 1,
    "pad_token_id": 0,
    "final_logit_softcapping": 30.0,
    "global_head_dim": 512,
    "head_dim": 256,
    "hidden_activation": "gelu_pytorch_tanh",
    "hidden_size": 2816,
    "initializer_range": 0.02,
    "intermediate_size": 2112,
    "layer_types": (["sliding_attention"] * 5 + ["full_attention"]) * 5,
    "max_position_embeddings": 262144,
    "moe_intermediate_size": 704,
    "num_attention_heads": 16,
    "num_experts": 128,
    "num_global_key_value_heads": 2,
    "num_hidden_layers": 30,
    "num_key_value_heads": 8,
    "rms_norm_eps": 1e-06,
    "rope_parameters": {
        "full_attention": {"partial_rotary_factor": 0.25, "rope_theta": 1_000_000.0, "rope_type": "proportional"},
        "sliding_attention": {"rope_theta": 10_000.0, "rope_type": "default"},
    },
    "sliding_window": 1024,
    "tie_word_embeddings": True,
    "top_k_experts": 8,
    "use_bidirectional_attention": "vision",
    "vocab_size": 262144,
}

# The smallest Gemma-4 vision tower: text-only benchmarks never run it, but the model always builds one.
TINY_VISION = dict(model_type="gemma4_vision", hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                   num_attention_heads=2, num_key_value_heads=1, head_dim=8)

SCALES = {
    # the real thing: 30 layers, 128 experts top-8, about 25B parameters (50 GB in bf16)
    "full": {},
    # full widths, one 5:1 period of layers (6 of 30): same per-layer cost, a fifth of the layers
    "mid": {"num_hidden_layers": 6, "layer_types": ["sliding_attention"] * 5 + ["full_attention"]},
    # a plumbing check that runs on CPU in seconds
    "small": {"hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 3,
              "layer_types": ["sliding_attention", "sliding_attention", "full_attention"],
              "num_attention_heads": 4, "num_key_value_heads": 2, "num_global_key_value_heads": 1,
              "head_dim": 64, "global_head_dim": 128, "num_experts": 8, "top_k_experts": 2,
              "moe_intermediate_size": 128, "vocab_size": 8192, "sliding_window": 128},
}


def diffusion_gemma_config(scale: str = "full", canvas_length: int = 256, **overrides):
    """A DiffusionGemmaConfig with the 26B-A4B text part (or a scaled variant) and a tiny vision tower."""
    from transformers import DiffusionGemmaConfig

    if scale not in SCALES:
        raise ValueError(f"unknown scale {scale!r} ({'|'.join(SCALES)})")
    text = {**GEMMA4_26B_A4B_TEXT, **SCALES[scale], **overrides}
    vocab = text["vocab_size"]
    ids = {"boi_token_id": 255999, "eoi_token_id": 258882, "image_token_id": 258880} if vocab == 262144 else \
        {"boi_token_id": vocab - 3, "eoi_token_id": vocab - 2, "image_token_id": vocab - 1}
    return DiffusionGemmaConfig(text_config=text, vision_config=dict(TINY_VISION), canvas_length=canvas_length, **ids)


def build_random_model(config, device: str, dtype):
    """Instantiate the model with random weights directly on `device` (no checkpoint, no CPU copy).

    The decoder's layers are allocated before they are tied to the encoder's, so building needs
    about twice the weights' memory for a moment (about 100 GB at full size in bf16)."""
    import torch
    from transformers import DiffusionGemmaForBlockDiffusion

    t0 = time.perf_counter()
    with torch.device(device):
        model = DiffusionGemmaForBlockDiffusion._from_config(config, dtype=dtype)
    model.eval().requires_grad_(False)
    if str(device).startswith("cuda"):
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
    return model, time.perf_counter() - t0


class IdsOnlyTokenizer:
    """A random-weight model's tokenizer: its special token ids and nothing else (an engine over it is driven with
    token ids: `Engine.encode_ids`, `fixed_step_fill`, `greedy_ids`, `decoder_forward`)."""

    def __init__(self, text_config):
        self.pad_token_id = text_config.pad_token_id
        self.bos_token_id = text_config.bos_token_id
        self.eos_token_id = text_config.eos_token_id
        self.all_special_ids = [t for t in (self.pad_token_id, self.bos_token_id, self.eos_token_id) if t is not None]

    def encode(self, text, add_special_tokens=False):
        raise NotImplementedError("a random-weight model has no tokenizer: give the engine token ids")

    def decode(self, ids):
        raise NotImplementedError("a random-weight model has no tokenizer: read token ids")


def random_loaded_model(scale: str, device: str, dtype, canvas_length: int = 256):
    """(LoadedModel, build seconds): the architecture at `scale` with random weights built on `device`, the default
    infill spec and an `IdsOnlyTokenizer`, named `random:<scale>`, for an `Engine` (`dg-lsp bench gpu`)."""
    from ..loader import LoadedModel
    from ..spec import InfillSpec

    model, build_s = build_random_model(diffusion_gemma_config(scale, canvas_length=canvas_length), device, dtype)
    tokenizer = IdsOnlyTokenizer(model.config.get_text_config(decoder=True))
    loaded = LoadedModel(model, tokenizer, InfillSpec(), f"random:{scale}", str(device),
                         str(dtype).replace("torch.", ""))
    return loaded, build_s


def _unique_parameters(model):
    return {id(p): p for p in model.parameters()}.values()  # tied weights once


def parameter_count(model) -> int:
    return sum(p.numel() for p in _unique_parameters(model))


def parameter_bytes(model) -> int:
    return sum(p.numel() * p.element_size() for p in _unique_parameters(model))
