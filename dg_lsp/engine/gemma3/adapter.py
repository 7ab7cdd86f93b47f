"""The diffusion adapter of a pretrained Gemma 3: low-rank deltas that act only in the decoder pass.

The encoder is the pretrained causal model, untouched: the prompt's KV cache, the prefix cache and the
autoregressive twin are the base model's. The decoder is the same weights plus LoRA deltas, attending
bidirectionally over that cache and the canvas. One switch (`AdapterState.active`) turns the deltas on for
decoder passes only, so one set of weights serves both roles. A learned `<mask>` embedding replaces the
base model's (which pretraining never used).

Used by the trainer (dg_lsp/train/gemma/) and by the engine's Gemma 3 runner, so both run the same code.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
from torch import nn

TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


@dataclass
class AdapterState:
    active: bool = False


class LoRALinear(nn.Module):
    """y = base(x) + (x A^T B^T) * scale while `state.active`; base weights frozen."""

    def __init__(self, base: nn.Linear, rank: int, alpha: float, state: AdapterState):
        super().__init__()
        self.base = base
        self.state = state
        self.scale = alpha / rank
        dev, dt = base.weight.device, torch.float32
        self.lora_a = nn.Parameter(torch.empty(rank, base.in_features, device=dev, dtype=dt))
        self.lora_b = nn.Parameter(torch.zeros(base.out_features, rank, device=dev, dtype=dt))
        nn.init.kaiming_uniform_(self.lora_a, a=math.sqrt(5))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.base(x)
        if not self.state.active:
            return y
        a, b = self.lora_a.to(x.dtype), self.lora_b.to(x.dtype)
        return y + (x @ a.t()) @ b.t() * self.scale


@dataclass
class Adapter:
    """What an adapted model carries besides the base weights."""

    state: AdapterState
    modules: dict[str, LoRALinear] = field(default_factory=dict)
    mask_embedding: nn.Parameter | None = None  # [H], the decoder's <mask> input (already scaled)
    mask_id: int | None = None
    rank: int = 0
    alpha: float = 0.0

    def parameters(self) -> list[nn.Parameter]:
        ps = [p for m in self.modules.values() for p in (m.lora_a, m.lora_b)]
        return ps + ([self.mask_embedding] if self.mask_embedding is not None else [])

    def state_dict(self) -> dict[str, torch.Tensor]:
        out = {}
        for name, m in self.modules.items():
            out[f"{name}.lora_a"] = m.lora_a.detach().contiguous()
            out[f"{name}.lora_b"] = m.lora_b.detach().contiguous()
        if self.mask_embedding is not None:
            out["mask_embedding"] = self.mask_embedding.detach().contiguous()
        return out

    def load_state_dict(self, tensors: dict[str, torch.Tensor]) -> None:
        missing = []
        with torch.no_grad():
            for name, m in self.modules.items():
                for part in ("lora_a", "lora_b"):
                    key = f"{name}.{part}"
                    if key not in tensors:
                        missing.append(key)
                        continue
                    getattr(m, part).copy_(tensors[key].to(torch.float32))
            if self.mask_embedding is not None and "mask_embedding" in tensors:
                self.mask_embedding.copy_(tensors["mask_embedding"].to(self.mask_embedding.dtype))
        if missing:
            raise KeyError(f"adapter is missing {len(missing)} tensors, e.g. {missing[0]}")


def inject(model: nn.Module, rank: int, alpha: float, mask_id: int | None,
           targets: tuple[str, ...] = TARGETS) -> Adapter:
    """Wrap every target linear of a Gemma3 text model's layers in a LoRALinear (inactive by default)."""
    state = AdapterState()
    adapter = Adapter(state=state, mask_id=mask_id, rank=rank, alpha=alpha)
    text = text_model(model)
    for li, layer in enumerate(text.layers):
        for parent_name, parent in (("self_attn", layer.self_attn), ("mlp", layer.mlp)):
            for t in targets:
                base = getattr(parent, t, None)
                if isinstance(base, nn.Linear):
                    wrapped = LoRALinear(base, rank, alpha, state)
                    setattr(parent, t, wrapped)
                    adapter.modules[f"layers.{li}.{parent_name}.{t}"] = wrapped
    for p in model.parameters():
        p.requires_grad_(False)
    for p in adapter.parameters():
        p.requires_grad_(True)
    if mask_id is not None:
        with torch.no_grad():
            init = text.embed_tokens(torch.tensor([mask_id], device=text.embed_tokens.weight.device))[0]
        adapter.mask_embedding = nn.Parameter(init.detach().to(torch.float32).clone())
    return adapter


def text_model(model: nn.Module) -> nn.Module:
    """The Gemma3TextModel inside a causal-LM wrapper (or the model itself)."""
    return model.model if hasattr(model, "model") and hasattr(model.model, "layers") else model


class ReadOnlyCache:
    """Presents an encoder cache to a decoder pass without changing it: each layer's update returns the stored
    keys and values followed by the new ones and stores nothing (the canvas is re-run every step)."""

    is_compileable = False

    def __init__(self, layers: list[tuple[torch.Tensor, torch.Tensor]]):
        self._layers = layers  # per layer (keys [B, Hkv, T, D], values [B, Hkv, T, D])

    @classmethod
    def of(cls, cache, batch: int | None = None) -> "ReadOnlyCache":
        layers = []
        for layer in cache.layers:
            k, v = layer.keys, layer.values
            if batch is not None and k.shape[0] != batch:
                k, v = k.expand(batch, *k.shape[1:]), v.expand(batch, *v.shape[1:])
            layers.append((k, v))
        return cls(layers)

    def stored_length(self, layer_idx: int) -> int:
        return self._layers[layer_idx][0].shape[-2]

    def get_seq_length(self, layer_idx: int = 0) -> int:
        return self.stored_length(layer_idx)

    def update(self, key_states, value_states, layer_idx, cache_kwargs=None):
        k, v = self._layers[layer_idx]
        k, v = k.to(key_states.dtype), v.to(value_states.dtype)
        return torch.cat([k, key_states], dim=-2), torch.cat([v, value_states], dim=-2)


def open_masks(cache: ReadOnlyCache, layer_types: list[str], batch: int, length: int, device=None):
    """All-visible 4D masks {kind: [B, 1, L, stored + L]}: every canvas row sees every stored key of its layer
    (a sliding layer stores fewer) and the whole canvas."""
    masks = {}
    for kind in set(layer_types):
        stored = cache.stored_length(layer_types.index(kind))
        masks[kind] = torch.ones(batch, 1, length, stored + length, dtype=torch.bool, device=device)
    return masks


def decoder_embeddings(model: nn.Module, adapter: Adapter, ids: torch.LongTensor) -> torch.Tensor:
    """Input embeddings of a canvas [B, L] -> [B, L, H]: the base model's, with the learned <mask>."""
    text = text_model(model)
    emb = text.embed_tokens(ids)
    if adapter.mask_embedding is not None:
        is_mask = (ids == adapter.mask_id).unsqueeze(-1)
        emb = torch.where(is_mask, adapter.mask_embedding.to(emb.dtype), emb)
    return emb


def decoder_hidden(model: nn.Module, adapter: Adapter, ids: torch.LongTensor, positions: torch.LongTensor,
                   cache: ReadOnlyCache, masks: dict[str, torch.Tensor]) -> torch.Tensor:
    """One decoder pass: adapters on, bidirectional 4D masks over cache + canvas. Returns final-norm hidden
    states [B, L, H]."""
    text = text_model(model)
    adapter.state.active = True
    try:
        out = text(inputs_embeds=decoder_embeddings(model, adapter, ids), position_ids=positions,
                   past_key_values=cache, attention_mask=masks, use_cache=False)
    finally:
        adapter.state.active = False
    return out.last_hidden_state


def encoder_pass(model: nn.Module, ids: torch.LongTensor, cache, positions: torch.LongTensor | None = None):
    """The base model, causal, adapters off: writes the prompt's KV into `cache` (a transformers Cache)."""
    text = text_model(model)
    return text(input_ids=ids, past_key_values=cache, position_ids=positions, use_cache=True)
