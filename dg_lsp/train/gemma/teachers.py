"""The frozen base Gemma as teacher: the losses that compare the decoder with the base model on a training batch
(objective.CanvasBatch), each with the figures the training log shows. The base model's causal pass over the
batch's clean canvases runs once per batch, for whichever of them run (`Teachers.logits`)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ...engine.gemma3 import adapter as A

TEACHER_STATS = ("front", "front_base", "kl")  # the AR teacher's figures (Teachers.ar), in the log line's order
# the verified score's figures (Teachers.verified_score_loss), likewise: cross-entropy, then top-1 accuracy
POE_STATS = ("poe", "poe_base", "poe_dec", "poe_acc", "poe_base_acc", "poe_dec_acc")
# Teachers.draft's figures: the KL right of the frontier, and how often the decoder's argmax is the base model's
# there and at the frontier (a verified step's draft acceptance, were the drafts on the left right)
DRAFT_STATS = ("draft_kl", "draft_agree", "front_agree")
LOGGED_STATS = TEACHER_STATS + POE_STATS + DRAFT_STATS


class Teachers:
    """The losses against the base model `model` (adapters off in its pass), for an output head whose pad row is
    `pad_row`; `poe_weight` the decoder's weight in the verified score."""

    def __init__(self, model, pad_row: int, poe_weight: float, draft_slots: int = 0):
        self.model, self.pad_row, self.poe_weight = model, pad_row, poe_weight
        self.draft_slots = draft_slots  # `draft`'s reach right of the frontier (0: every masked slot there)

    def without_pad(self, logits: torch.Tensor) -> torch.BoolTensor:
        """[V'] every output column but the pad's: the teachers' and the verified score's distributions leave the
        hole's end out (the base model never learnt it; the engine leaves it to the decoder's own argmax)."""
        keep = torch.ones(logits.shape[-1], dtype=torch.bool, device=logits.device)
        keep[self.pad_row] = False
        return keep

    def logits(self, batch, ro, head, rows: torch.LongTensor) -> torch.Tensor:
        """The base model's logits (the restricted head, float32, no gradient) at flat `rows` of the batch's clean
        canvases: its causal pass after the same cache view, run once per batch (kept in `batch.teacher`)."""
        with torch.no_grad():
            if batch.teacher is None:
                batch.teacher = A.base_causal_hidden(self.model, batch.clean_ids, batch.positions, ro, batch.masks)
            hidden = batch.teacher
            return (hidden.reshape(-1, hidden.shape[-1]).index_select(0, rows) @ head.t()).float()

    def verified_score_loss(self, batch, ro, head, logits) -> tuple[torch.Tensor, dict] | None:
        """Cross-entropy of AR-verified decoding's score on the first masked slot of each left-to-right canvas whose
        target is not the hole's end: softmax over log p_base + w * log p_decoder, both over every column but the
        pad's (the engine bans the pad in that score and leaves the end to the decoder's own argmax). That slot is a
        verified walk's first: both models read the clean hole so far on its left, the decoder [MASK]s and the
        suffix head on its right, as in the engine's drafting pass. The score is divided by 1 + w, a geometric mean
        of the two distributions: the engine's argmax is unchanged, and the loss does not punish the plain sum for
        counting twice what both models read on the left. Returns (the loss, figures on those rows: the
        cross-entropy in nats and the top-1 accuracy of the score, of the base model alone, of the decoder alone)."""
        sel = batch.ltr & batch.frontier & (batch.targets != self.pad_row)
        if not bool(sel.any()):
            return None
        base = self.logits(batch, ro, head, batch.rows[sel])
        keep = self.without_pad(base)
        targets = batch.targets[sel]
        targets = targets - (targets > self.pad_row).long()  # column index once the pad's column is left out
        base_lp = F.log_softmax(base[:, keep], dim=-1)
        dec_lp = F.log_softmax(logits[sel][:, keep], dim=-1)
        w = self.poe_weight
        score = (base_lp + w * dec_lp) / (1.0 + w)
        ce = F.cross_entropy(score, targets)

        def top1(lp):
            return (lp.detach().argmax(dim=-1) == targets).float().mean().item()

        figures = {"poe": ce.item(), "poe_base": F.nll_loss(base_lp, targets).item(),
                   "poe_dec": F.nll_loss(dec_lp.detach(), targets).item(),
                   "poe_acc": top1(score), "poe_base_acc": top1(base_lp), "poe_dec_acc": top1(dec_lp)}
        return ce, figures

    def draft(self, batch, ro, head, logits) -> tuple[torch.Tensor, dict] | None:
        """KL(base || decoder) over the masked slots right of the first one in the canvases masked left to right
        (with `draft_slots` k > 0, only the k slots after it: a walk drafts a few slots past its first, and a
        draft counts only where those on its left were kept), whose target is not the hole's end, on the
        distributions over every column but the pad's (as `ar`).
        The base model reads the clean hole on the left of each slot, the decoder [MASK]s: the engine's drafts right
        of a walk's first slot. Returns (the KL, figures: the KL, and the share of those slots, and of the
        left-to-right canvases' first masked slots, where the decoder's argmax is the base model's)."""
        right = batch.ltr & ~batch.frontier & (batch.targets != self.pad_row)
        if self.draft_slots > 0:
            right = right & (frontier_distance(batch) <= self.draft_slots)
        front = batch.ltr & batch.frontier & (batch.targets != self.pad_row)
        if not bool(right.any()):
            return None
        sel = right | front
        t_logits = self.logits(batch, ro, head, batch.rows[sel])
        keep = self.without_pad(t_logits)
        t_cond = F.log_softmax(t_logits[:, keep], dim=-1)
        s_cond = F.log_softmax(logits[sel][:, keep], dim=-1)
        is_right = right[sel]
        kl = (t_cond.exp() * (t_cond - s_cond)).sum(-1)[is_right].mean()
        agree = (t_cond.argmax(dim=-1) == s_cond.detach().argmax(dim=-1)).float()
        figures = {"draft_kl": kl.item(), "draft_agree": agree[is_right].mean().item()}
        if bool((~is_right).any()):
            figures["front_agree"] = agree[~is_right].mean().item()
        return kl, figures

    def ar(self, batch, ro, head, logits, loss) -> tuple[torch.Tensor, float, float] | None:
        """KL(base || decoder) over the frontier rows (objective.CanvasBatch.frontier) whose target is not the hole's
        end (the first pad: the base model never learnt that token, the decoder must), on the distributions over every
        column but the pad's; and the cross-entropy there of the base model and of the decoder (the AR skill kept, in
        nats per token)."""
        front = batch.frontier & (batch.targets != self.pad_row)
        if not bool(front.any()):
            return None
        rows = batch.rows[front]
        t_logits = self.logits(batch, ro, head, rows)
        t_logp = F.log_softmax(t_logits, dim=-1)
        # the KL compares the two given that the hole goes on: the pad column is left out of both. The base model
        # never ends a hole (log p(pad) about -40 on code), so a KL over the whole row taught the decoder never to
        # end one either, on every frontier row, against the cross-entropy on the few rows that do end
        keep = self.without_pad(t_logits)
        s_cond = F.log_softmax(logits[front][:, keep], dim=-1)
        t_cond = F.log_softmax(t_logits[:, keep], dim=-1)
        kl = (t_cond.exp() * (t_cond - s_cond)).sum(-1).mean()
        base_ce = F.nll_loss(t_logp, batch.targets[front]).item()
        return kl, base_ce, loss[front].detach().mean().item()


def frontier_distance(batch) -> torch.LongTensor:
    """[S] how many slots each scored row lies right of its canvas's first masked slot (0 on that slot): canvas
    m's rows are m * W + slot - 1 (objective.build), and each canvas has one frontier row."""
    canvas = batch.rows // batch.ids.shape[1]
    front_slot = torch.zeros(batch.ids.shape[0], dtype=torch.long, device=batch.slot.device)
    front_slot[canvas[batch.frontier]] = batch.slot[batch.frontier]
    return batch.slot - front_slot[canvas]
