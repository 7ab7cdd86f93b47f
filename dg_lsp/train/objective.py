"""The training objective: encoder next-token loss + block-diffusion loss on many canvases per pass.

The encoder runs once over the clean window and fills a `DynamicCache`; the decoder then
denoises all canvases of a row at once under a 4D mask in which canvas j sees the cached
clean keys `[0, s_j)` and its own canvas keys only (docs/ARCHITECTURE.md, section 3).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from transformers import DynamicCache

from ..engine.modelgen import PAD_ID
from .canvas import IGNORE, Batch


def softcapped_logits(model, hidden: torch.Tensor) -> torch.Tensor:
    """`lm_head` + the final soft-capping of `DiffusionGemmaForBlockDiffusion.forward`."""
    logits = model.lm_head(hidden).float()
    cap = model.final_logit_softcapping
    return torch.tanh(logits / cap) * cap if cap else logits


def canvas_mask(starts: torch.Tensor, n_cache: int, canvas_length: int) -> torch.Tensor:
    """Bool [B, 1, C*L, N + C*L]: canvas j's queries see cache keys [0, s_j) and their own canvas."""
    B, C = starts.shape
    L = canvas_length
    key = torch.arange(n_cache, device=starts.device)
    cache_part = key[None, None, :] < starts[:, :, None]  # [B, C, N]
    cache_part = cache_part.repeat_interleave(L, dim=1)  # [B, C*L, N]
    block = torch.arange(C * L, device=starts.device) // L
    own = block[:, None] == block[None, :]  # [C*L, C*L]
    full = torch.cat([cache_part, own[None].expand(B, -1, -1)], dim=2)
    return full[:, None]


def canvas_positions(starts: torch.Tensor, canvas_length: int) -> torch.Tensor:
    """[B, C*L] position ids: canvas j continues right after its clean prefix."""
    offs = torch.arange(canvas_length, device=starts.device)
    return (starts[:, :, None] + offs).flatten(1)


def encode(model, enc_ids: torch.Tensor):
    """Run the encoder over the clean window; returns (hidden [B, N, H], cache)."""
    cache = DynamicCache(config=model.config.get_text_config())
    out = model.model.encoder(input_ids=enc_ids, past_key_values=cache, use_cache=True)
    return out.last_hidden_state, cache


def decode(model, cache, canvas_ids, mask, positions, sc_logits=None, sc_mask=None) -> torch.Tensor:
    """Decoder logits [B, C*L, V] for the concatenated canvases."""
    out = model.model.decoder(
        decoder_input_ids=canvas_ids,
        past_key_values=cache,
        self_conditioning_logits=sc_logits,
        self_conditioning_mask=sc_mask,
        decoder_attention_mask={"full_attention": mask, "sliding_attention": mask},
        decoder_position_ids=positions,
    )
    return softcapped_logits(model, out.last_hidden_state)


def to_tensors(batch: Batch, device="cpu") -> dict[str, torch.Tensor]:
    return {k: torch.as_tensor(getattr(batch, k), device=device)
            for k in ("enc_ids", "ar_targets", "canvas_ids", "canvas_targets", "canvas_starts")}


def diffusion_ce(logits: torch.Tensor, targets: torch.Tensor, pad_weight: float = 1.0) -> torch.Tensor:
    """Mean cross-entropy over supervised canvas positions, pad targets weighted by `pad_weight`."""
    flat = targets.flatten()
    ce = F.cross_entropy(logits.flatten(0, 1), flat, ignore_index=IGNORE, reduction="none")
    w = (flat != IGNORE).float()
    if pad_weight != 1.0:
        w = torch.where(flat == PAD_ID, w * pad_weight, w)
    return (ce * w).sum() / w.sum().clamp(min=1e-6)


def training_loss(model, batch: Batch, canvas_length: int, generator: torch.Generator,
                  self_cond_prob: float = 0.5, pad_weight: float = 1.0) -> tuple[torch.Tensor, dict[str, float]]:
    """Total loss = encoder next-token CE + diffusion CE over all supervised canvas positions.

    `pad_weight` < 1 makes the pad tail of pad-fill canvases count less: pads are most of a canvas
    (a single-line middle is ~10 of 48 positions), and a model trained with them at full weight fills
    holes with an empty line (87% blank answers on HumanEval single-line at step 998, docs/results/)."""
    t = to_tensors(batch)
    hidden, cache = encode(model, t["enc_ids"])
    ar_logits = softcapped_logits(model, hidden)
    ar_loss = F.cross_entropy(ar_logits.flatten(0, 1), t["ar_targets"].flatten(), ignore_index=IGNORE)
    mask = canvas_mask(t["canvas_starts"], t["enc_ids"].shape[1], canvas_length)
    pos = canvas_positions(t["canvas_starts"], canvas_length)
    coin = torch.rand(t["enc_ids"].shape[0], generator=generator) < self_cond_prob
    sc_logits = None
    if coin.any():
        with torch.no_grad():
            sc_logits = decode(model, cache, t["canvas_ids"], mask, pos)
    logits = decode(model, cache, t["canvas_ids"], mask, pos, sc_logits, coin if sc_logits is not None else None)
    diff_loss = diffusion_ce(logits, t["canvas_targets"], pad_weight)
    stats = {"ar_loss": ar_loss.item(), "diff_loss": diff_loss.item(),
             "ar_tokens": int((t["ar_targets"] != IGNORE).sum()),
             "diff_tokens": int((t["canvas_targets"] != IGNORE).sum())}
    return ar_loss + diff_loss, stats
