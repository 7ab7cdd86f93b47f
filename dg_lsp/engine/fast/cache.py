"""FixedKVCache: prompt keys/values in buffers whose shapes never change, for compiled steps.

The eager path keeps the prompt in a `DynamicCache`, whose tensors grow with the prompt, so every
new prompt length is a new shape. Here each layer owns one buffer allocated once:

- full-attention layers: `capacity` slots, slot = absolute position;
- sliding-window layers: a ring of `min(sliding_window, capacity)` slots, slot = position % ring.

Which slots hold which position is bookkept on the host (`slot_positions`), and validity goes
into explicit 4D boolean masks, so a prompt of any length up to `capacity` runs the same graph.
The masks reproduce what the eager path sees: the decoder reads the whole prompt in full layers and
the last `sliding_window - 1` prompt tokens in sliding layers (what `DynamicSlidingWindowLayer`
keeps), plus the valid canvas keys; an encoder step at position q reads positions `<= q`, limited
to `(q - sliding_window, q]` in sliding layers.

It quacks like a transformers `Cache` where the model touches it: the decoder reads
`layers[i].keys/values` and concatenates the canvas (`is_compileable` is False on purpose: the
static branch of `append_to_cache` mis-places canvas keys once a sliding layer has wrapped); the
encoder calls `update()`, which writes at the slots of `write_slots` (a device tensor, so a
compiled step does not recompile per position).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

KINDS = ("full_attention", "sliding_attention")


@dataclass
class _LayerBuffers:
    keys: torch.Tensor  # [B, H_kv, slots, D]
    values: torch.Tensor  # [B, H_kv, slots, D_v]
    kind: str


class FixedKVCache:
    is_compileable = False  # makes the decoder concatenate (see module docstring)

    def __init__(self, text_config, batch_size: int, capacity: int, dtype: torch.dtype, device: torch.device):
        self.text_config = text_config
        self.batch_size = batch_size
        self.capacity = capacity
        self.window = int(text_config.sliding_window)
        self.device = torch.device(device)
        self.slots = {"full_attention": capacity, "sliding_attention": min(self.window, capacity)}
        self.layers: list[_LayerBuffers] = []
        for idx, kind in enumerate(text_config.layer_types):
            per_layer = text_config.per_layer_config[idx]
            heads, dim = per_layer.num_key_value_heads, per_layer.head_dim
            shape = (batch_size, heads, self.slots[kind], dim)
            self.layers.append(_LayerBuffers(torch.zeros(shape, dtype=dtype, device=self.device),
                                             torch.zeros(shape, dtype=dtype, device=self.device), kind))
        self.is_sliding = [layer.kind == "sliding_attention" for layer in self.layers]
        # position held by each slot, -1 when empty (host side: masks are built from it)
        self.slot_positions = {k: torch.full((n,), -1, dtype=torch.long) for k, n in self.slots.items()}
        self.write_slots = {k: torch.zeros(1, dtype=torch.long, device=self.device) for k in KINDS}
        self.length = 0  # tokens of the sequence held (the next position to write)

    def __len__(self) -> int:
        return len(self.layers)

    def mark_static(self) -> None:
        """Tell dynamo the buffers keep their addresses, so CUDA graphs do not copy them on each replay."""
        for layer in self.layers:
            torch._dynamo.mark_static_address(layer.keys)
            torch._dynamo.mark_static_address(layer.values)
        for slots in self.write_slots.values():
            torch._dynamo.mark_static_address(slots)

    def get_seq_length(self, layer_idx: int = 0) -> int:
        return self.length

    def _slot_of(self, kind: str, positions: torch.Tensor) -> torch.Tensor:
        return positions % self.slots[kind] if kind == "sliding_attention" else positions

    # -- filling -------------------------------------------------------------------------------
    def load(self, cache) -> "FixedKVCache":
        """Copy a prompt held in a transformers `DynamicCache` (batch 1 or `batch_size`)."""
        full = [i for i, layer in enumerate(self.layers) if layer.kind == "full_attention"]
        length = cache.layers[full[0]].keys.shape[-2] if full else int(cache.get_seq_length())
        if length > self.capacity:
            raise ValueError(f"prompt of {length} tokens does not fit a cache of capacity {self.capacity}")
        for kind in KINDS:
            self.slot_positions[kind].fill_(-1)
        for idx, layer in enumerate(self.layers):
            src_k, src_v = cache.layers[idx].keys, cache.layers[idx].values
            held = src_k.shape[-2]
            if layer.kind == "sliding_attention":  # what a fresh DynamicCache keeps: the last window - 1
                held = min(held, self.window - 1, self.slots[layer.kind])
                src_k, src_v = src_k[:, :, src_k.shape[-2] - held:], src_v[:, :, src_v.shape[-2] - held:]
            elif held != length:
                raise ValueError(f"layer {idx} holds {held} keys for a prompt of {length}")
            positions = torch.arange(length - held, length)
            slots = self._slot_of(layer.kind, positions).to(self.device)
            layer.keys.index_copy_(2, slots, src_k.to(layer.keys.dtype).expand(self.batch_size, -1, -1, -1))
            layer.values.index_copy_(2, slots, src_v.to(layer.values.dtype).expand(self.batch_size, -1, -1, -1))
            self.slot_positions[layer.kind][self._slot_of(layer.kind, positions)] = positions
        self.length = length
        return self

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, layer_idx: int, *args, **kwargs):
        """Encoder write of one step's tokens at `write_slots`; returns the whole buffers (masked by the caller)."""
        layer = self.layers[layer_idx]
        slots = self.write_slots[layer.kind]
        layer.keys.index_copy_(2, slots, key_states)
        layer.values.index_copy_(2, slots, value_states)
        return layer.keys, layer.values

    def prepare_write(self, count: int = 1) -> None:
        """Host side of an encoder step of `count` tokens at the next positions: set slots, bookkeep."""
        positions = torch.arange(self.length, self.length + count)
        if self.length + count > self.capacity:
            raise ValueError(f"cache capacity {self.capacity} exceeded")
        for kind in KINDS:
            slots = self._slot_of(kind, positions)
            if self.write_slots[kind].shape[0] != count:
                self.write_slots[kind] = torch.zeros(count, dtype=torch.long, device=self.device)
            self.write_slots[kind].copy_(slots)
            self.slot_positions[kind][slots] = positions

    def advance(self, count: int = 1) -> None:
        self.length += count

    # -- masks ---------------------------------------------------------------------------------
    def _cache_visible(self, kind: str, query_pos: int, decoder: bool) -> torch.Tensor:
        """[slots] bool: which cached slots a query at `query_pos` reads."""
        pos = self.slot_positions[kind]
        visible = pos >= 0
        if decoder:  # canvas queries read the prompt [0, length), sliding layers its last window - 1 tokens
            visible &= pos < self.length
            if kind == "sliding_attention":
                visible &= pos >= self.length - (self.window - 1)
        else:
            visible &= pos <= query_pos
            if kind == "sliding_attention":
                visible &= pos > query_pos - self.window
        return visible

    def decoder_masks(self, canvas_valid: torch.BoolTensor) -> dict[str, torch.Tensor]:
        """{kind: [B, 1, W, slots + W]}: every canvas query sees the visible prompt and the valid canvas keys."""
        b, width = canvas_valid.shape
        masks = {}
        for kind in set(self.text_config.layer_types):
            cached = self._cache_visible(kind, self.length, decoder=True)
            row = torch.cat([cached.expand(b, -1), canvas_valid.cpu()], dim=1)  # [B, slots + W]
            masks[kind] = row[:, None, None, :].expand(b, 1, width, row.shape[1]).to(self.device)
        return masks

    def encoder_step_masks(self) -> dict[str, torch.Tensor]:
        """{kind: [B, 1, 1, slots]} for one encoder token at position `length` (after `prepare_write`)."""
        masks = {}
        for kind in set(self.text_config.layer_types):
            visible = self._cache_visible(kind, self.length, decoder=False)
            masks[kind] = visible.view(1, 1, 1, -1).expand(self.batch_size, 1, 1, -1).to(self.device)
        return masks
