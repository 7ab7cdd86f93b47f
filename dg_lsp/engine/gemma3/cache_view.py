"""Views of a prompt's KV cache for passes after it, none of which changes the cache: the base model's and the
adapted decoder's passes over a canvas (`ReadOnlyCache`), rows of different lengths that each hold their own first
tokens' keys and values (`RowsCache`, the suggested alternatives' lines), and a verified walk's kept canvas positions
(`WalkCache`, one such row). `open_masks` gives a pass's all-visible 4D masks over a view.

Used by the adapter's passes (adapter.py), the engine's Gemma 3 runner and the trainer.
"""

from __future__ import annotations

import torch


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


class RowsCache(ReadOnlyCache):
    """Rows of different lengths after one prompt (the suggested alternatives' lines, engine/alternatives.py): the
    prompt's keys and values, read only, then each row's own held ones (`held[r]`: per layer (keys [Hkv, n, D],
    values), or None), right-padded to the longest and hidden from the other rows (`key_visible`). A pass feeds each
    row only its tokens after those; `kept(r, count)` is row r's held keys and values with its first `count` new
    ones added."""

    def __init__(self, layers: list[tuple[torch.Tensor, torch.Tensor]], held: list[list | None]):
        super().__init__(layers)
        self.held = held
        self.lengths = [0 if h is None else h[0][0].shape[-2] for h in held]
        self.width = max(self.lengths, default=0)
        self._new: list[tuple[torch.Tensor, torch.Tensor] | None] = [None] * len(layers)

    @classmethod
    def of(cls, cache, held: list[list | None]) -> "RowsCache":
        return cls([(layer.keys, layer.values) for layer in cache.layers], held)

    def stored_length(self, layer_idx: int) -> int:
        return super().stored_length(layer_idx) + self.width

    def key_visible(self, layer_idx: int) -> torch.BoolTensor:
        """[B, stored] which stored keys each row sees: the prompt's, and its own held ones."""
        prompt = super().stored_length(layer_idx)
        seen = torch.ones(len(self.held), prompt + self.width, dtype=torch.bool)
        for r, n in enumerate(self.lengths):
            seen[r, prompt + n:] = False
        return seen

    def update(self, key_states, value_states, layer_idx, cache_kwargs=None):
        self._new[layer_idx] = (key_states, value_states)
        b = key_states.shape[0]
        k, v = self._layers[layer_idx]
        ks, vs = [k.to(key_states.dtype).expand(b, *k.shape[1:])], [v.to(value_states.dtype).expand(b, *v.shape[1:])]
        if self.width:
            shape = (b, key_states.shape[1], self.width, key_states.shape[-1])
            pk, pv = key_states.new_zeros(shape), value_states.new_zeros(shape)
            for r, h in enumerate(self.held):
                if h is not None:
                    pk[r, :, :self.lengths[r]], pv[r, :, :self.lengths[r]] = h[layer_idx]
            ks.append(pk)
            vs.append(pv)
        return torch.cat(ks + [key_states], dim=-2), torch.cat(vs + [value_states], dim=-2)

    def kept(self, row: int, count: int) -> list[tuple[torch.Tensor, torch.Tensor]] | None:
        """Row `row`'s held keys and values after its first `count` new ones of the last pass (fed as kept)."""
        held = self.held[row]
        if count <= 0 or any(new is None for new in self._new):
            return held
        out = []
        for i, (nk, nv) in enumerate(self._new):
            k, v = nk[row, :, :count], nv[row, :, :count]
            out.append((k, v) if held is None else (torch.cat([held[i][0], k], -2), torch.cat([held[i][1], v], -2)))
        return out


class PackedRows(ReadOnlyCache):
    """RowsCache's rows packed end to end into one sequence, without padding: a pass over rows of very different
    lengths (the alternatives' lines being written, a few tokens each, beside whole lines being scored) costs the
    tokens it feeds, not rows x the longest. The keys are the prompt's, then every row's held ones in turn, then the
    new tokens; `masks` lets a row's tokens see the prompt, its own held keys and its own tokens up to themselves.
    `kept(r, count)` is row r's held keys and values with its first `count` new ones added, as RowsCache's."""

    def __init__(self, layers: list[tuple[torch.Tensor, torch.Tensor]], held: list[list | None], fed: list[int]):
        super().__init__(layers)
        self.held = held
        self.lengths = [0 if h is None else h[0][0].shape[-2] for h in held]
        self.fed = fed  # new tokens of each row, in order
        self._new: list[tuple[torch.Tensor, torch.Tensor] | None] = [None] * len(layers)

    @classmethod
    def of(cls, cache, held: list[list | None], fed: list[int]) -> "PackedRows":
        return cls([(layer.keys, layer.values) for layer in cache.layers], held, fed)

    def stored_length(self, layer_idx: int) -> int:
        return super().stored_length(layer_idx) + sum(self.lengths)

    def update(self, key_states, value_states, layer_idx, cache_kwargs=None):
        self._new[layer_idx] = (key_states, value_states)
        k, v = self._layers[layer_idx]
        ks, vs = [k[:1].to(key_states.dtype)], [v[:1].to(value_states.dtype)]
        for h in self.held:
            if h is not None:
                ks.append(h[layer_idx][0].unsqueeze(0).to(key_states.dtype))
                vs.append(h[layer_idx][1].unsqueeze(0).to(value_states.dtype))
        return torch.cat(ks + [key_states], dim=-2), torch.cat(vs + [value_states], dim=-2)

    def masks(self, layer_types: list[str], device=None) -> dict[str, torch.Tensor]:
        """{kind: [1, 1, L, stored + L]} (L the tokens fed): each row's tokens see the prompt's keys, the row's own
        held ones and the row's own tokens, causally."""
        total = sum(self.fed)
        row_of = torch.repeat_interleave(torch.arange(len(self.fed)), torch.tensor(self.fed))  # [L]
        held_of = torch.repeat_interleave(torch.arange(len(self.held)), torch.tensor(self.lengths))  # [sum held]
        own = (row_of[:, None] == row_of[None, :]) & torch.ones(total, total, dtype=torch.bool).tril()
        masks = {}
        for kind in set(layer_types):
            prompt = super().stored_length(layer_types.index(kind))
            m = torch.cat([torch.ones(total, prompt, dtype=torch.bool), row_of[:, None] == held_of[None, :], own], 1)
            masks[kind] = m.view(1, 1, total, -1).to(device)
        return masks

    def kept(self, row: int, count: int) -> list[tuple[torch.Tensor, torch.Tensor]] | None:
        """Row `row`'s held keys and values after its first `count` new ones of the pass (fed as kept)."""
        held = self.held[row]
        if count <= 0 or any(new is None for new in self._new):
            return held
        at = sum(self.fed[:row])
        out = []
        for i, (nk, nv) in enumerate(self._new):
            k, v = nk[0, :, at:at + count], nv[0, :, at:at + count]
            out.append((k, v) if held is None else (torch.cat([held[i][0], k], -2), torch.cat([held[i][1], v], -2)))
        return out


class WalkCache:
    """An AR-verified walk's base-model cache (speculative decoding's): the keys and values of the canvas positions a
    one-row walk has kept, over the prompt's cache, so that a base pass runs only from the last kept token on. Each
    pass reads it through `view()` (a one-row RowsCache); `commit` keeps the first new positions of that pass."""

    def __init__(self, cache):
        self.cache = cache
        self.held: list[tuple[torch.Tensor, torch.Tensor]] | None = None
        self.length = 0  # canvas positions held, from the canvas's first
        self._view: RowsCache | None = None

    def view(self, riders: list = ()) -> RowsCache:
        """The walk's row (row 0), and after it rows that hold `riders` (RowsCache's `held`), riding the pass."""
        self._view = RowsCache.of(self.cache, [self.held, *riders])
        return self._view

    def commit(self, count: int) -> None:
        """Hold the first `count` positions of the last pass too (its tokens from `length` on, fed as kept). Without a
        pass through `view()` since the last commit, nothing changes (the next pass runs from `length` again)."""
        view, self._view = self._view, None
        if view is None or count <= 0:
            return
        held = view.kept(0, count)
        if held is not self.held:
            self.held, self.length = held, self.length + count


def pad_rows(rows: list[tuple[list[int], int]], pad: int) -> tuple[torch.LongTensor, torch.LongTensor]:
    """Rows of a causal pass over a RowsCache (tokens, first position), right-padded with `pad` to the longest:
    (ids [B, W], positions [B, W], each row's counting on from its first). A row's padding comes after its
    tokens, so in a causal pass it changes none of their states."""
    width = max(len(r) for r, _ in rows)
    ids = torch.tensor([r + [pad] * (width - len(r)) for r, _ in rows], dtype=torch.long)
    positions = torch.tensor([[p + j for j in range(width)] for _, p in rows], dtype=torch.long)
    return ids, positions


def open_masks(cache: ReadOnlyCache, layer_types: list[str], batch: int, length: int, device=None):
    """All-visible 4D masks {kind: [B, 1, L, stored + L]}: every canvas row sees every stored key of its layer
    (a sliding layer stores fewer; a RowsCache row only its own) and the whole canvas."""
    masks = {}
    for kind in set(layer_types):
        stored = cache.stored_length(layer_types.index(kind))
        masks[kind] = torch.ones(batch, 1, length, stored + length, dtype=torch.bool, device=device)
        if isinstance(cache, RowsCache):  # each row sees only its own held keys
            masks[kind][:, 0, :, :stored] = cache.key_visible(layer_types.index(kind)).to(device)[:, None, :]
    return masks
