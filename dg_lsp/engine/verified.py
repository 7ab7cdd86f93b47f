"""The AR-verified walk: the diffusion decoder drafts, the base model keeps, left to right.

`DenoiseLoop.run` (engine/denoise.py) hands a request here when `DenoiseLoop.verifies` its params: a verify weight
is set, the runner has a base model to check with (`runner.verifies`) and the noise is the [MASK]. What the walk
keeps, and why every kept token had its true left context, is `VerifiedWalk.run`'s docstring and
docs/ARCHITECTURE.md, section 3.
"""

from __future__ import annotations

import threading
from dataclasses import replace

import torch

from . import sampler
from .active_hole import ActiveHole
from .block_end import BlockEnd
from .canvas import BANNED, InfillCanvas
from .outcome import DenoiseOutcome, constrain, interrupted, token_biases
from .runner import ModelRunner
from .types import DenoiseParams

BASE_TOP = 3  # the base model's best tokens an AR-verified walk records at each slot it keeps (engine/alternatives.py)


class VerifiedWalk:
    """One request's AR-verified walk over the runner's decoder and base model; `mask_id` marks the open slots."""

    def __init__(self, runner: ModelRunner, mask_id: int):
        self.runner = runner
        self.mask_id = mask_id

    @torch.inference_mode()
    def run(self, canvas: InfillCanvas, cache, params: DenoiseParams, generator: torch.Generator | None,
            cancel: threading.Event | None = None, deadline: float | None = None, riders=None) -> DenoiseOutcome:
        """AR-verified left-to-right decoding: the diffusion decoder drafts, the base model checks.

        A decoder pass over the canvas (bidirectional, the suffix head pinned, the slots not kept [MASK]) drafts
        the open slots from its argmax, from the left, as the entropy rule allows (sampler.left_to_right_accept
        with the step's bound; at least one). Each step then runs the base model causally over the canvas up to one
        past its last draft (`runner.verify`: a narrower forward after the same prompt cache) and keeps slots left
        to right from the first open one. The walk's first slot is the one place where the decoder saw the kept
        left context (right of it, it drafted beside [MASK]s), so there alone its view counts: that slot takes the
        argmax (or, sampling, a draw) of log p_base + w * log p_decoder (w = params.verify_weight, p_decoder from the
        pass that drafted), or the pad where the decoder's own argmax is the pad (the base model cannot see the
        suffix, so where the hole ends is the decoder's call). Every later slot of the walk takes the base model's
        own argmax (or draw), whose left context there is the agreed drafts, and a pad the decoder predicts there
        ends the step's walk, not the row. The base model's prediction at a slot is exact only while every slot on
        its left holds what was kept, so the walk goes on past a slot only where the token kept there is its draft:
        each step keeps at least one token, one more than the drafts it accepts (the slot after the last agreed draft,
        speculative decoding's bonus token), and every kept token was chosen with its true left context. Then,
        unless the row is done, the next decoder pass drafts again over the kept slots, so every draft the base
        model checks was made after everything on its left was kept. One decoder pass and one base pass a step;
        `steps` counts the steps, `forwards` both kinds of pass.
        A row stops when it keeps an end (a pad; a line break where `canvas.ends` and `end_slots` allow it), when
        its kept slots decide the block's end (`canvas.block_end`), or when its hole is all kept; the slots after
        an end are returned as pads. w = 0 gives the base model's greedy answer (restricted vocabulary), ended
        where the decoder ends the hole; any w gives the base model's choice everywhere but at a walk's first slot.
        With params.start_slots the decoder's passes see a narrowed hole until the walk nears its end
        (engine/active_hole.py); a one-row walk's base passes hold the kept slots' keys and values
        (runner.walk_cache), and carry the rows of `riders` (alternatives.Riders, through `runner.verify_riding`
        where `runner.verify_rides`), which see nothing of the walk's row nor it of theirs."""
        dev = self.runner.device
        pinned = canvas.pinned.to(dev)
        hole = ~pinned
        fixed = canvas.canvas_ids.to(dev)
        b, length = fixed.shape
        mask_tokens = torch.full_like(fixed, int(self.mask_id))
        current = torch.where(pinned, fixed, mask_tokens)
        positions = canvas.position_ids()
        mask = self.runner.decoder_mask(cache, canvas.valid)
        biases = token_biases(self.runner, canvas)
        layout = {"pinned": pinned} if self.runner.reads_pinned else {}
        weight = float(params.verify_weight)
        greedy = params.temperature <= 0
        pad_col = getattr(self.runner, "pad_column", None)
        pad_token = self.runner.pad_id if hasattr(self.runner, "pad_id") else None
        pad_id = None if pad_col is None else int(self.runner.ids_of(torch.tensor([pad_col], device=dev))[0])
        ends = None if canvas.ends is None else canvas.ends.to(dev)
        end_slots = None if canvas.end_slots is None else canvas.end_slots.to(dev)
        line_breaks = None if canvas.line_breaks is None else canvas.line_breaks.tolist()
        kept = torch.zeros_like(pinned)
        base_top = [{} for _ in range(b)] if params.alternatives else None  # only engine/alternatives.py reads it
        finished = torch.zeros(b, dtype=torch.bool, device=dev)
        forwards = torch.zeros(b, dtype=torch.int, device=dev)
        slots = [hole[r].nonzero().flatten().tolist() for r in range(b)]
        t_hi = max(params.temperature, 1e-6)
        view = ActiveHole.of(canvas, params.start_slots, self.runner)  # engine/active_hole.py
        walk = self.runner.walk_cache(cache) if b == 1 and hasattr(self.runner, "walk_cache") else None
        if walk is None or base_top is None or not getattr(self.runner, "verify_rides", False):
            riders = None

        def draft(remaining: int):
            """A decoder pass over the kept slots (the open ones [MASK]) and its drafts: (raw, decoder argmax
            columns, the canvas with the drafts in)."""
            nonlocal forwards
            forwards += (~finished).int()
            base_canvas = torch.where(kept | pinned, current, mask_tokens)
            if view is not None:
                view.widen_for(next((p for p in slots[0] if not bool(kept[0, p])), length))
            raw = None
            if view is not None and not view.whole:  # a narrowed pass, unless it ends the hole inside a line
                raw = constrain(view.decode(base_canvas, cache, positions, bool(layout)), canvas, biases, owned=True)
                if view.ends_mid_line(raw, base_canvas, kept, slots[0]):  # widened: this pass runs again, whole
                    forwards += (~finished).int()
                    raw = None
            if raw is None:
                raw = constrain(self.runner.decode(base_canvas, cache, positions, None, mask, **layout), canvas, biases,
                                owned=True)
            temp = sampler.step_temperature(greedy, remaining, params.max_steps, t_hi, t_hi * params.t_min_ratio)
            open_ = hole & ~kept & ~finished[:, None] & (view.open().to(dev) if view is not None else True)
            drafts = _drafted(raw, temp, open_, params.entropy_bound, params.reference_sampling)
            best_cols = sampler.argmax(raw)
            return raw, best_cols, torch.where(drafts, self.runner.ids_of(best_cols), base_canvas)

        raw, decoder_best, current = draft(params.max_steps)
        steps, cancelled, deadline_hit, stale = 0, False, False, False
        for remaining in range(params.max_steps, 0, -1):
            cancelled, deadline_hit = interrupted(cancel, deadline, steps)
            if cancelled or deadline_hit:
                break
            # the base pass reaches the first open slot, and one past the last drafted one: where every draft
            # agrees, the base model's prediction after the last one is kept too
            drafted = hole & ~kept & (current != self.mask_id)
            reach = torch.where(drafted, torch.arange(length, device=dev), torch.zeros_like(current)).amax()
            first_open = min((next((p for p in slots[r] if not bool(kept[r, p])), 0)
                              for r in range(b) if not bool(finished[r])), default=0)
            width = min(length, max(int(reach) + 2, first_open + 1))
            forwards += (~finished).int()  # a base pass is a forward too: tokens_per_forward counts both kinds
            rows = [] if riders is None else riders.rows(current[0].tolist(), kept[0].tolist(), base_top[0],
                                                          self.mask_id)
            if rows:
                base, ridden, rows_view = self.runner.verify_riding(current, positions, width, walk, rows)
                riders.take(ridden, rows_view)
            else:
                base = self.runner.verify(current, cache, positions, width, walk)
            base = constrain(base, _narrow(canvas, width), [(col, bias[:, :width]) for col, bias in biases], owned=True)
            steps += 1
            temp = sampler.step_temperature(greedy, remaining, params.max_steps, t_hi, t_hi * params.t_min_ratio)
            # greedy, the rows left of every row's first open slot are never read (sampling keeps every row's draws)
            lo = first_open if greedy else 0
            base_lp = torch.log_softmax(base[:, lo:], dim=-1)  # position lo + i at row i, as everything below
            # the decoder's say: at a walk's first slot, the one place where it saw the kept left context; right of
            # it the decoder drafted beside [MASK]s while the base model reads the agreed drafts, so there the base
            # model's prediction alone decides (the decoder only proposes)
            scores = (base_lp + weight * torch.log_softmax(raw[:, lo:width], dim=-1), base_lp)
            picks = []
            for score in scores:
                if pad_col is not None:
                    score[..., pad_col] = BANNED
                chosen = sampler.argmax(score) if greedy else sampler.sample_tokens(score / temp, generator, False)
                picks.append((self.runner.ids_of(chosen).tolist(), chosen.tolist()))
            decoder_pads = (decoder_best == pad_col).tolist() if pad_col is not None else None
            if base_top is not None:
                top_p, top_cols = base_lp.exp().topk(min(BASE_TOP, base_lp.shape[-1]), dim=-1)  # [B, width - lo, k]
                top_ids, top_p = self.runner.ids_of(top_cols).tolist(), top_p.tolist()
            read = current.tolist()
            for r in range(b):
                if bool(finished[r]):
                    continue
                first = True
                for p in slots[r]:
                    if bool(kept[r, p]):
                        continue
                    if p >= width:
                        break
                    (ids_r, cols_r) = picks[0] if first else picks[1]
                    tok, col = ids_r[r][p - lo], cols_r[r][p - lo]
                    if decoder_pads is not None and decoder_pads[r][p]:
                        # the decoder ends the hole here; it saw the true left context only at the walk's first
                        # slot (right of it, [MASK]s): there it ends the row, later it ends this step's walk
                        if not first:
                            break
                        # where the cursor ends a line of code, a line the answer is still writing ends where the
                        # base model ends it: the suffix starts the next line, so a decoder's pad mid-line there
                        # would leave the statement unfinished (`__version` for `__version__ = "0.1.0"`)
                        if not (line_breaks is not None and not line_breaks[picks[1][1][r][p - lo]]
                                and not self._breaks_line(current[r], slots[r], p, line_breaks)):
                            tok, col = pad_id, pad_col
                    first = False
                    current[r, p] = tok
                    kept[r, p] = True
                    if base_top is not None:
                        base_top[r][p] = (top_ids[r][p - lo], top_p[r][p - lo])
                    is_end = col == pad_col or (ends is not None and bool(ends[col])
                                                and (end_slots is None or bool(end_slots[p])))
                    if is_end:
                        after = [q for q in slots[r] if q > p]
                        kept[r, after] = True
                        current[r, after] = pad_token if pad_token is not None else fixed[r, p]
                        break
                    if tok != read[r][p]:  # not the draft this step read: the base logits right of it are stale
                        break
                if bool(kept[r][hole[r]].all()) or (canvas.block_end is not None and self._block_kept(
                        canvas.block_end, current[r], kept[r], slots[r])):
                    finished[r] = True
            if bool(finished.all()) or remaining == 1:
                stale = not bool(finished.all())  # no pass drafts again after these keeps
                break
            if walk is not None:  # the tokens fed up to the last kept one were all kept: their keys and values hold
                walk.commit(next(p for p in slots[0] if not bool(kept[0, p])) - 1 - walk.length)
            raw, decoder_best, current = draft(remaining - 1)
        best = torch.where(kept, current, self.runner.ids_of(decoder_best))
        best = torch.where(pinned, fixed, best)
        return DenoiseOutcome(best, raw, steps, forwards, cancelled, deadline_hit, hole & ~kept, base_top, stale,
                              spent=stale)

    def _breaks_line(self, row: torch.LongTensor, slots: list[int], p: int, line_breaks: list[bool]) -> bool:
        """Whether a row's hole slots left of `p` (all kept) hold a token with a line break."""
        left = slots[:slots.index(p)]
        return bool(left) and any(line_breaks[c] for c in self.runner.columns_of(row[left]).tolist())

    def _block_kept(self, block_end: BlockEnd, row: torch.LongTensor, kept: torch.BoolTensor,
                    slots: list[int]) -> bool:
        """Whether a row's leading kept slots already decide where its shown block ends (block_end.block_end_slot)."""
        return block_end.leading_end(kept[slots].tolist(), self.runner.columns_of(row[slots]).tolist()) is not None


def _drafted(raw: torch.Tensor, temp: float, open_: torch.BoolTensor, bound: float, reference: bool,
             first: int = 2) -> torch.BoolTensor:
    """The open slots a decoder pass drafts: `sampler.left_to_right_accept` over the entropies of `raw / temp` at
    `open_`, with each entropy computed only where the rule reads it. A slot is drafted while the
    entropies of the open slots on its left sum to at most `bound`, so once that sum passes the bound in every row, no
    later entropy changes the answer: they are computed a few columns at a time (`first`, then twice as many), and the
    rest stay 0. The same drafts as from every open slot's entropy; the walk reads one or two of a hole's 16. The
    stop reads the rule's own running sum (a running sum's later terms only add to it), and a row with no open slot
    left to compute is done."""
    cols = open_.any(dim=0).nonzero().flatten().tolist()
    entropy = torch.zeros(open_.shape, dtype=torch.float32, device=raw.device)
    zeros = torch.zeros_like(entropy)
    done, size = 0, first
    while done < len(cols):
        part = cols[done:done + size]
        entropy[:, part] = sampler.token_entropy(raw[:, part] / temp, reference).float()
        done, size = done + len(part), 2 * size
        passed = torch.cumsum(torch.where(open_, entropy, zeros), dim=-1)[:, -1] > bound
        if bool((passed | ~open_[:, cols[done:]].any(dim=-1)).all()):
            break
    return sampler.left_to_right_accept(entropy, bound, open_, torch.zeros_like(open_))


def _narrow(canvas: InfillCanvas, width: int) -> InfillCanvas:
    """The canvas's first `width` positions, for `constrain` on the base pass's logits (first slot and biases)."""
    return replace(canvas, canvas_ids=canvas.canvas_ids[:, :width], pinned=canvas.pinned[:, :width],
                   valid=canvas.valid[:, :width], token_bias={})
