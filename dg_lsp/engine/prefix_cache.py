"""PrefixCache: the encoder KV cache of each document's last prompt, reused exactly while the user types.

Typing at the cursor changes only the end of the prompt, so the next prompt of a document
shares a long token prefix with the previous one: the stored cache is cut back to that
common prefix and only the rest is encoded.

Sliding-window layers need care. transformers' `DynamicSlidingWindowLayer` keeps only the last
`window - 1` keys, so once a prompt is longer than the window the layer cannot be cut back.
Stored caches therefore record their sliding layers' past (`activate_past_recording`): the
encoder then attends exactly as over a plain cache (the layer hands it the same last keys) but
every key is kept, so any cut is valid. The decoder reads all the keys a layer holds, so it
gets a *view*: a new cache object whose sliding layers hold what a fresh encode keeps (the last
`window - 1` keys) and whose full layers share the stored tensors. Batching the view
(`batch_repeat_interleave` rebinds its tensors) never touches the stored cache.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

import torch


def common_prefix_length(a: list[int], b: list[int]) -> int:
    n = min(len(a), len(b))
    if n == 0:
        return 0
    if a[:n] == b[:n]:
        return n
    diff = (torch.tensor(a[:n]) != torch.tensor(b[:n])).nonzero()
    return int(diff[0, 0])


@dataclass
class _Entry:
    ids: list[int]
    cache: object  # DynamicCache with past recording on its sliding layers


@dataclass
class EncodeOutcome:
    cache: object  # decode view: what a fresh encode of the prompt would hold
    reused: int  # prompt tokens taken from the stored cache
    encoded: int  # prompt tokens run through the encoder


class PrefixCache:
    def __init__(self, runner, max_entries: int = 8):
        self.runner = runner
        self.max_entries = max_entries
        self._entries: OrderedDict[object, _Entry] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        self._entries.clear()

    def _new_cache(self):
        cache = self.runner.new_cache()
        for layer in cache.layers:
            if getattr(layer, "is_sliding", False):
                layer.activate_past_recording()
        return cache

    @staticmethod
    def _cut(cache, length: int) -> None:
        """Keep the first `length` positions of every layer (valid because every key was recorded)."""
        for layer in cache.layers:
            if not layer.is_initialized:
                continue
            layer.keys = layer.keys[..., :length, :]
            layer.values = layer.values[..., :length, :]
            if hasattr(layer, "cumulative_length"):
                layer.cumulative_length = length

    def encode(self, key, prompt_ids: list[int]) -> EncodeOutcome:
        """Encode `prompt_ids` for document `key`, reusing that document's last cache where it agrees."""
        entry = self._entries.pop(key, None)  # popped: a failure below must not leave a half-cut entry
        reused = 0
        if entry is not None:
            reused = common_prefix_length(entry.ids, prompt_ids)
        if reused == 0:
            cache = self._new_cache()
        else:
            cache = entry.cache
            if reused < len(entry.ids):
                self._cut(cache, reused)
        rest = prompt_ids[reused:]
        if rest:
            self.runner.encode(rest, cache)
        self._entries[key] = _Entry(list(prompt_ids), cache)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)
        return EncodeOutcome(self.decode_view(cache), reused, len(rest))

    def decode_view(self, cache):
        """A cache holding exactly what a fresh encode keeps, sharing tensors with `cache`."""
        view = self.runner.new_cache()
        for src, dst in zip(cache.layers, view.layers):
            if not src.is_initialized:
                continue
            keys, values = src.keys, src.values
            if getattr(dst, "is_sliding", False):
                keep = dst.sliding_window - 1
                keys, values = keys[..., -keep:, :], values[..., -keep:, :]
            dst.lazy_initialization(keys, values)
            dst.keys, dst.values = keys, values
            if hasattr(dst, "cumulative_length"):
                dst.cumulative_length = src.get_seq_length()
        return view
