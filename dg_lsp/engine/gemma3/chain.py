"""The draft-chain head: a small MLP that redrafts the slot after a verified walk's first open slot.

In a walk's decoder pass (engine/verified.py) the first open slot f has its true left context (every slot left of it
is kept), so its draft is good (80% the base model's choice on HumanEval, docs/results/draft-ceiling.md). The slot
f + 1 is drafted beside a [MASK] at f: the decoder does not know what f holds, and its draft there is the base
model's choice half as often as a drafter that knew f could be (48% against a ceiling of 95%). The chain head
gives the f + 1 row what it lacks: from the decoder's hidden state at the row that drafts f (`h_prev`), the one
that drafts f + 1 (`h_mask`) and f's drafted token, it predicts a new hidden state for f + 1,

    h' = h_mask + W2 silu(W1 LayerNorm([h_prev, h_mask, e(token at f) / rms]))

read through the decoder's own output head (and end head). W2 starts at zero, so an untrained head is the
decoder's own prediction. The walk adds the change, W2 read through the head (`output_columns`), to the decoder's
logits at f + 1. Applied again with the head's f + 1 state, the decoder's f + 2 row and f + 1's draft, it drafts
f + 2 (`depth` 2).

The head is trained with everything else frozen (dg_lsp/train/gemma/chain.py) on rows that
`python -m dg_lsp.bench.diagnostics.drafts --corpus train --save-rows` takes from the adapter's training corpus,
with the base model's greedy token at f + 1 as the target. It ships as `chain.safetensors` beside the adapter, named
in `dg_lsp.json` under "chain" ({"file", "hidden", "depth"}); a model without it drafts as before.
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

FILE = "chain.safetensors"


class ChainHead(nn.Module):
    def __init__(self, width: int, hidden: int, depth: int = 1):
        super().__init__()
        self.depth = int(depth)  # slots redrafted right of f: 1 (f + 1) or more (the head applied again)
        self.norm = nn.LayerNorm(3 * width)
        self.w1 = nn.Linear(3 * width, hidden)
        self.w2 = nn.Linear(hidden, width)
        nn.init.zeros_(self.w2.weight)
        nn.init.zeros_(self.w2.bias)  # untrained: the decoder's own f + 1 hidden state

    @staticmethod
    def token_features(table: nn.Embedding, ids: torch.LongTensor) -> torch.Tensor:
        """The tied embedding's rows of `ids`, each scaled to unit root mean square (float32)."""
        e = table(ids).float()
        return e / e.pow(2).mean(-1, keepdim=True).add(1e-6).sqrt()

    def inner(self, h_prev: torch.Tensor, h_mask: torch.Tensor, token: torch.Tensor) -> torch.Tensor:
        """The hidden units silu(W1 LayerNorm(...)) [..., hidden]; `token` is token_features of f's token."""
        x = torch.cat([h_prev.float(), h_mask.float(), token.float()], -1)
        return nn.functional.silu(self.w1(self.norm(x)))

    def forward(self, h_prev: torch.Tensor, h_mask: torch.Tensor, token: torch.Tensor) -> torch.Tensor:
        """The new hidden state [..., H] of the row that drafts f + 1."""
        return h_mask.float() + self.w2(self.inner(h_prev, h_mask, token))

    def output_columns(self, head: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """W2 read through an output head `head` [V', H]: (W2^T head^T [hidden, V'], head b2 [V']), float32, so that
        inner(...) @ the first + the second is the head's logits of the new hidden state less those of h_mask
        (what Gemma3Runner.chain_delta adds to the decoder's own logits: 64 x V' products instead of 640 x V')."""
        head = head.detach().float()
        return self.w2.weight.detach().t() @ head.t(), head @ self.w2.bias.detach()

    def save(self, directory: Path) -> dict:
        """Write `chain.safetensors` into `directory`; returns the "chain" entry of dg_lsp.json."""
        from safetensors.torch import save_file

        save_file({k: v.detach().contiguous().cpu() for k, v in self.state_dict().items()}, str(Path(directory) / FILE))
        return {"file": FILE, "hidden": self.w1.out_features, "depth": self.depth}

    @classmethod
    def load(cls, directory: Path, entry: dict, width: int) -> "ChainHead":
        """The head `entry` (dg_lsp.json's "chain") names in `directory`, in eval mode, float32."""
        from safetensors.torch import load_file

        head = cls(width, int(entry["hidden"]), int(entry.get("depth", 1)))
        head.load_state_dict(load_file(str(Path(directory) / entry.get("file", FILE))))
        return head.eval()
