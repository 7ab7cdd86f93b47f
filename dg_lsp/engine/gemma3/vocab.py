"""The output vocabulary of the adapted model: the token ids the decoder may write.

Gemma's 262,144-row output head costs more per canvas position than the whole 270M trunk. Code uses a small
part of it, so the decoder scores only a chosen subset: the most frequent tokens of the training corpus, plus
the 256 byte-fallback tokens (any text can still be written, byte by byte) and the specials the canvas needs
(pad ends the hole). Inputs (prompt, pinned suffix) keep the full vocabulary; only outputs are restricted.
"""

from __future__ import annotations

from collections import Counter

import torch


def byte_token_ids(tokenizer) -> list[int]:
    ids = []
    for b in range(256):
        tid = tokenizer.convert_tokens_to_ids(f"<0x{b:02X}>")
        if isinstance(tid, int) and tid != tokenizer.unk_token_id:
            ids.append(tid)
    return ids


def choose(tokenizer, texts, size: int, always: tuple[int, ...]) -> tuple[list[int], float]:
    """The `size` most frequent token ids over `texts`, with `always` and the byte tokens added.
    Returns (sorted ids, share of the counted tokens the set covers)."""
    counts: Counter[int] = Counter()
    for i in range(0, len(texts), 64):
        for ids in tokenizer(list(texts[i:i + 64]), add_special_tokens=False)["input_ids"]:
            counts.update(ids)
    keep = set(always) | set(byte_token_ids(tokenizer))
    for tid, _ in counts.most_common():
        if len(keep) >= size:
            break
        keep.add(tid)
    total = sum(counts.values())
    covered = sum(n for tid, n in counts.items() if tid in keep)
    return sorted(keep), covered / max(1, total)


class OutputVocab:
    """Maps between full token ids and rows of the restricted head."""

    def __init__(self, ids: list[int] | torch.Tensor, full_size: int):
        self.ids = torch.as_tensor(ids, dtype=torch.long)  # [V'] sorted full ids
        self.full_size = full_size
        self.index = torch.full((full_size,), -1, dtype=torch.long)
        self.index[self.ids] = torch.arange(len(self.ids))

    def __len__(self) -> int:
        return len(self.ids)

    def head_weight(self, embed_weight: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
        """Rows of the tied embedding matrix that form the restricted head: [V', H] (written into `out` where given)."""
        return torch.index_select(embed_weight, 0, self.ids.to(embed_weight.device), out=out)

    def to_rows(self, full_ids: torch.LongTensor) -> torch.LongTensor:
        """Full ids -> head rows (-1 where the id is outside the vocabulary)."""
        return self.index[full_ids.to(self.index.device)].to(full_ids.device)

    def to(self, device) -> "OutputVocab":
        """The same vocabulary with its tables on `device` (the denoising loop indexes them every step)."""
        self.ids, self.index = self.ids.to(device), self.index.to(device)
        return self
