"""DenoiseLoop: the inner diffusion loop over one infill canvas, after generation_diffusion_gemma.py.

Differences from `model.generate()`, all of them needed for infill: pinned positions (the
suffix head) are never re-noised and always read back as themselves; entropy, acceptance and
the confidence test only consider hole positions; a cancel flag and a deadline are checked
between steps; temperature 0 means greedy. With nothing pinned and `reference_sampling` the loop draws the same
random numbers in the same order as `generate()` and reproduces it token for token.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, replace

import torch

from . import sampler
from .active_hole import ActiveHole
from .block_end import BlockEnd
from .canvas import BANNED, InfillCanvas
from .runner import ModelRunner
from .types import DenoiseParams

BASE_TOP = 3  # the base model's best tokens an AR-verified walk records at each slot it keeps (engine/alternatives.py)


@dataclass
class DenoiseOutcome:
    canvas: torch.LongTensor  # [B, L] final argmax canvas, pinned positions restored
    logits: torch.Tensor | None  # [B, L, V] raw logits of the last step (for scoring)
    steps: int  # decoder forwards run
    forwards_per_row: torch.Tensor  # [B] decoder forwards each row needed before it stopped
    cancelled: bool
    deadline_hit: bool
    # [B, L] hole slots no step accepted when the loop ended (left to right only; else None)
    unsettled: torch.BoolTensor | None = None
    # verified, with params.alternatives: per row, {canvas position: (token ids, probabilities)} of the base model's
    # best `BASE_TOP` tokens at each kept slot, from the pass that kept it (its left context exact); else None
    base_top: list[dict[int, tuple[list[int], list[float]]]] | None = None
    # the argmax at the first open slot is from a pass made before the last slots were kept (a verified walk whose
    # step budget ran out): it says nothing about what follows them (InfillLifecycle.answer_slots)
    stale_guess: bool = False


def constrain(raw: torch.Tensor, canvas: InfillCanvas, biases: list[tuple[int, torch.Tensor]]) -> torch.Tensor:
    """A step's raw logits [B, L, V] with the canvas's token biases added and its first hole slot kept to
    `canvas.first_columns` (every other column BANNED there). Returns `raw` itself when neither applies."""
    if not biases and canvas.first_columns is None:
        return raw
    raw = raw.clone()
    for col, bias in biases:
        raw[..., col] += bias.to(raw.dtype)
    if canvas.first_columns is not None:
        allowed = canvas.first_columns.to(raw.device)
        raw[:, canvas.lead, :] = raw[:, canvas.lead, :].masked_fill(~allowed, BANNED)
    return raw


class DenoiseLoop:
    def __init__(self, runner: ModelRunner, noise_kind: str = "uniform", mask_id: int | None = None,
                 unmask_order: str = "entropy"):
        self.runner = runner
        self.noise_kind = noise_kind
        self.mask_id = mask_id
        self.left_to_right = unmask_order == "left_to_right"  # InfillSpec.unmask_order (mask noise only)

    def _noise(self, shape, generator):
        return sampler.noise_tokens(shape, self.runner.vocab_size, generator, self.runner.device,
                                    self.noise_kind, self.mask_id)

    def update(self, processed: torch.Tensor, current: torch.LongTensor, pinned: torch.BoolTensor,
               fixed: torch.LongTensor, params: DenoiseParams, generator, greedy: bool):
        """One step's canvas update from the step's tempered logits: sample, accept the low-entropy hole
        positions (EB-sampler, anywhere or from the left: InfillSpec.unmask_order), re-noise the rest.
        Returns (processed, new canvas, argmax canvas, entropy)."""
        best = self.runner.ids_of(processed.argmax(dim=-1))
        # greedy draws the argmax: computed once (sample_tokens would repeat it)
        drawn = best if greedy else self.runner.ids_of(sampler.sample_tokens(processed, generator, greedy,
                                                                             params.reference_sampling))
        new_argmax = torch.where(pinned, fixed, best)
        entropy = sampler.token_entropy(processed, params.reference_sampling)
        if self.left_to_right:  # positions not [MASK] in this step's input were accepted by the last one
            settled = ~pinned & (current != self.mask_id)
            accept = sampler.left_to_right_accept(entropy, params.entropy_bound, ~pinned, settled) | pinned
        else:
            accept = sampler.entropy_bound_accept(entropy, params.entropy_bound, ~pinned) | pinned
        accepted = torch.where(accept, drawn, current)
        accepted = torch.where(pinned, fixed, accepted)
        noise = self._noise(tuple(fixed.shape), generator)
        return processed, torch.where(accept, accepted, noise), new_argmax, entropy

    def unsettled(self, current: torch.LongTensor, pinned: torch.BoolTensor) -> torch.BoolTensor | None:
        """Left to right: the hole slots no step accepted (still [MASK] in the canvas the next step would read).
        Their argmax was predicted with [MASK]s on its left, so the answer stops after the first of them
        (`InfillLifecycle.choose`): the one the next step would have accepted first."""
        if not self.left_to_right:
            return None
        return ~pinned & (current == self.mask_id)

    def stop(self, history: list[torch.LongTensor], new_current: torch.LongTensor, new_argmax: torch.LongTensor,
             entropy: torch.Tensor, hole: torch.BoolTensor, params: DenoiseParams,
             ends: torch.BoolTensor | None = None, end_slots: torch.BoolTensor | None = None,
             block_end: BlockEnd | None = None) -> torch.BoolTensor:
        """Rows that stop after this step: stable and confident (sampler.stable_and_confident; `history` is updated
        in place). Left to right, also a row whose every hole slot is accepted and whose argmax did not change over
        the last `params.settle_steps` steps: each slot passed the entropy bound when it was taken, with clean slots
        on its left. And, with
        `ends` (InfillCanvas.ends), a row whose answer up to its first end is accepted and stable (answer_settled); an
        end counts only where `end_slots` [L] (InfillCanvas.end_slots) allows it, when given. And, with `block_end`,
        a row whose accepted slots already decide where its shown block ends, stable up to there (block_settled)."""
        # the argmax canvases of the last `settle_steps` steps, before this one (LTR stops: the answer kept its argmax)
        pasts = history[-params.settle_steps:] if len(history) >= params.settle_steps else []
        done = sampler.stable_and_confident(history, new_argmax, entropy, hole, params.stability_threshold,
                                            params.confidence_threshold, keep=params.settle_steps)
        if self.left_to_right and pasts:
            unchanged = torch.stack([past == new_argmax for past in pasts]).all(dim=0)  # [B, L]
            full = ((new_current != self.mask_id) | ~hole).all(dim=-1)
            done = done | (full & unchanged.all(dim=-1))
            if ends is not None:
                done = done | self.answer_settled(unchanged, new_current, new_argmax, hole, ends, end_slots)
            if block_end is not None:
                done = done | self.block_settled(unchanged, new_current, new_argmax, hole, block_end)
        return done

    def answer_settled(self, unchanged: torch.BoolTensor, new_current: torch.LongTensor,
                       new_argmax: torch.LongTensor, hole: torch.BoolTensor, ends: torch.BoolTensor,
                       end_slots: torch.BoolTensor | None = None) -> torch.BoolTensor:
        """Rows whose accepted slots hold an end (a line break of a line-only request, or the pad that ends the
        hole) and whose slots up to the first one kept their argmax (`unchanged` [B, L]: over the last settle_steps
        steps): the loop's own stop test (accepted and stable) on the only part that will be shown. The answer reads the argmax canvas, so the
        first end must also be the argmax there (a sampled end need not be), or the answer would run on past it."""
        accepted = hole & (new_current != self.mask_id)
        breaks = accepted & ends.to(new_current.device)[self.runner.columns_of(new_current)]
        if end_slots is not None:
            breaks = breaks & end_slots.to(new_current.device)
        first = breaks.int().argmax(dim=-1, keepdim=True)  # the first break's position (0 when there is none)
        upto = torch.arange(hole.shape[-1], device=hole.device).unsqueeze(0) <= first
        same = (unchanged | ~hole | ~upto).all(dim=-1)
        kept = (new_argmax.gather(-1, first) == new_current.gather(-1, first)).squeeze(-1)
        return breaks.any(dim=-1) & same & kept

    def block_settled(self, unchanged: torch.BoolTensor, new_current: torch.LongTensor, new_argmax: torch.LongTensor,
                      hole: torch.BoolTensor, block_end: BlockEnd) -> torch.BoolTensor:
        """Rows whose leading accepted slots already hold the end of the shown block (block_end.block_end_slot) and
        kept their argmax up to it (`unchanged`), where the argmax is the accepted token: as answer_settled, with the
        end found in the text rather than in one token."""
        done = torch.zeros(new_current.shape[0], dtype=torch.bool, device=new_current.device)
        accepted = (hole & (new_current != self.mask_id)).cpu()
        columns = self.runner.columns_of(new_argmax).cpu()
        same = (unchanged & (new_argmax == new_current)).cpu()
        hole = hole.cpu()
        for row in range(new_current.shape[0]):
            slots = hole[row].nonzero().squeeze(-1).tolist()  # left to right, accepted slots are the leading ones
            k = block_end.leading_end(accepted[row, slots].tolist(), columns[row, slots].tolist())
            if k is not None and bool(same[row, slots[:k + 1]].all()):
                done[row] = True
        return done

    def biases(self, canvas: InfillCanvas) -> list[tuple[int, torch.Tensor]]:
        """The canvas's token biases as (logit column, [B, L] bias on the device); tokens the head lacks dropped."""
        biases = [(self.runner.column_of(tid), bias.to(self.runner.device)) for tid, bias in canvas.token_bias.items()]
        return [(col, bias) for col, bias in biases if col is not None]

    def verifies(self, params: DenoiseParams) -> bool:
        """Whether `run` takes the AR-verified loop (run_verified) for these params: a weight is set, the runner has
        a base model to check with (runner.verifies), and the noise is the [MASK] (open slots are told by it)."""
        return (params.verify_weight is not None and getattr(self.runner, "verifies", False)
                and self.noise_kind == "mask" and self.mask_id is not None)

    @torch.inference_mode()
    def run(self, canvas: InfillCanvas, cache, params: DenoiseParams, generator: torch.Generator | None,
            cancel: threading.Event | None = None, deadline: float | None = None,
            initial_canvas: torch.LongTensor | None = None) -> DenoiseOutcome:
        if initial_canvas is None and self.verifies(params):
            return self.run_verified(canvas, cache, params, generator, cancel, deadline)
        dev = self.runner.device
        pinned = canvas.pinned.to(dev)
        hole = ~pinned
        fixed = canvas.canvas_ids.to(dev)
        start = self._noise(tuple(fixed.shape), generator) if initial_canvas is None else initial_canvas.to(dev)
        current = torch.where(pinned, fixed, start)
        argmax = current
        positions = canvas.position_ids()
        mask = self.runner.decoder_mask(cache, canvas.valid)
        greedy = params.temperature <= 0
        t_max = max(params.temperature, 1e-6)
        t_min = t_max * params.t_min_ratio
        sc_logits, raw = None, None
        finished = torch.zeros(fixed.shape[0], dtype=torch.bool, device=dev)
        forwards = torch.zeros(fixed.shape[0], dtype=torch.int, device=dev)
        history: list[torch.LongTensor] = []
        biases = self.biases(canvas)
        layout = {"pinned": pinned} if self.runner.reads_pinned else {}
        steps, cancelled, deadline_hit = 0, False, False
        for remaining in range(params.max_steps, 0, -1):
            cancelled, deadline_hit = _interrupted(cancel, deadline, steps)
            if cancelled or deadline_hit:
                break
            forwards += (~finished).int()
            raw = constrain(self.runner.decode(current, cache, positions, sc_logits, mask, **layout), canvas, biases)
            steps += 1
            temp = sampler.step_temperature(greedy, remaining, params.max_steps, t_max, t_min)
            processed, new_current, new_argmax, entropy = self.update(raw / temp, current, pinned, fixed, params,
                                                                      generator, greedy)
            if finished.any():  # rows that stopped keep their state, as generate() does
                new_argmax = torch.where(finished[:, None], argmax, new_argmax)
                new_current = torch.where(finished[:, None], current, new_current)
                processed = torch.where(finished[:, None, None], sc_logits, processed)
                entropy = sampler.token_entropy(processed, params.reference_sampling)
            finished |= self.stop(history, new_current, new_argmax, entropy, hole, params, canvas.ends,
                                  canvas.end_slots, canvas.block_end)
            current, argmax = new_current, new_argmax
            sc_logits = processed.to(self.runner.logits_dtype)
            if bool(finished.all()):
                break
        return DenoiseOutcome(argmax, raw, steps, forwards, cancelled, deadline_hit, self.unsettled(current, pinned))

    @torch.inference_mode()
    def run_verified(self, canvas: InfillCanvas, cache, params: DenoiseParams, generator: torch.Generator | None,
                     cancel: threading.Event | None = None, deadline: float | None = None) -> DenoiseOutcome:
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
        (runner.walk_cache)."""
        dev = self.runner.device
        pinned = canvas.pinned.to(dev)
        hole = ~pinned
        fixed = canvas.canvas_ids.to(dev)
        b, length = fixed.shape
        mask_tokens = torch.full_like(fixed, int(self.mask_id))
        current = torch.where(pinned, fixed, mask_tokens)
        positions = canvas.position_ids()
        mask = self.runner.decoder_mask(cache, canvas.valid)
        biases = self.biases(canvas)
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
                raw = constrain(view.decode(base_canvas, cache, positions, bool(layout)), canvas, biases)
                if view.ends_mid_line(raw, base_canvas, kept, slots[0]):  # widened: this pass runs again, whole
                    forwards += (~finished).int()
                    raw = None
            if raw is None:
                raw = constrain(self.runner.decode(base_canvas, cache, positions, None, mask, **layout), canvas, biases)
            temp = sampler.step_temperature(greedy, remaining, params.max_steps, t_hi, t_hi * params.t_min_ratio)
            entropy = sampler.token_entropy(raw / temp, params.reference_sampling)
            open_ = hole & ~kept & ~finished[:, None] & (view.open().to(dev) if view is not None else True)
            drafts = sampler.left_to_right_accept(entropy, params.entropy_bound, open_, torch.zeros_like(open_)) & open_
            best_cols = raw.argmax(dim=-1)
            return raw, best_cols, torch.where(drafts, self.runner.ids_of(best_cols), base_canvas)

        raw, decoder_best, current = draft(params.max_steps)
        steps, cancelled, deadline_hit, stale = 0, False, False, False
        for remaining in range(params.max_steps, 0, -1):
            cancelled, deadline_hit = _interrupted(cancel, deadline, steps)
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
            base = constrain(self.runner.verify(current, cache, positions, width, walk), _narrow(canvas, width),
                             [(col, bias[:, :width]) for col, bias in biases])
            steps += 1
            temp = sampler.step_temperature(greedy, remaining, params.max_steps, t_hi, t_hi * params.t_min_ratio)
            base_lp = torch.log_softmax(base, dim=-1)
            # the decoder's say: at a walk's first slot, the one place where it saw the kept left context; right of
            # it the decoder drafted beside [MASK]s while the base model reads the agreed drafts, so there the base
            # model's prediction alone decides (the decoder only proposes)
            scores = (base_lp + weight * torch.log_softmax(raw[:, :width], dim=-1), base_lp)
            picks = []
            for score in scores:
                if pad_col is not None:
                    score[..., pad_col] = BANNED
                chosen = score.argmax(dim=-1) if greedy else sampler.sample_tokens(score / temp, generator, False)
                picks.append((self.runner.ids_of(chosen).tolist(), chosen.tolist()))
            decoder_pads = (decoder_best == pad_col).tolist() if pad_col is not None else None
            if base_top is not None:
                top_p, top_cols = base_lp.exp().topk(min(BASE_TOP, base_lp.shape[-1]), dim=-1)  # [B, width, k]
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
                    tok, col = ids_r[r][p], cols_r[r][p]
                    if decoder_pads is not None and decoder_pads[r][p]:
                        # the decoder ends the hole here; it saw the true left context only at the walk's first
                        # slot (right of it, [MASK]s): there it ends the row, later it ends this step's walk
                        if not first:
                            break
                        # where the cursor ends a line of code, a line the answer is still writing ends where the
                        # base model ends it: the suffix starts the next line, so a decoder's pad mid-line there
                        # would leave the statement unfinished (`__version` for `__version__ = "0.1.0"`)
                        if not (line_breaks is not None and not line_breaks[picks[1][1][r][p]]
                                and not self._breaks_line(current[r], slots[r], p, line_breaks)):
                            tok, col = pad_id, pad_col
                    first = False
                    current[r, p] = tok
                    kept[r, p] = True
                    if base_top is not None:
                        base_top[r][p] = (top_ids[r][p], top_p[r][p])
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
        return DenoiseOutcome(best, raw, steps, forwards, cancelled, deadline_hit, hole & ~kept, base_top, stale)

    def _breaks_line(self, row: torch.LongTensor, slots: list[int], p: int, line_breaks: list[bool]) -> bool:
        """Whether a row's hole slots left of `p` (all kept) hold a token with a line break."""
        left = slots[:slots.index(p)]
        return bool(left) and any(line_breaks[c] for c in self.runner.columns_of(row[left]).tolist())

    def _block_kept(self, block_end: BlockEnd, row: torch.LongTensor, kept: torch.BoolTensor,
                    slots: list[int]) -> bool:
        """Whether a row's leading kept slots already decide where its shown block ends (block_end.block_end_slot)."""
        return block_end.leading_end(kept[slots].tolist(), self.runner.columns_of(row[slots]).tolist()) is not None


def _interrupted(cancel: threading.Event | None, deadline: float | None, steps: int) -> tuple[bool, bool]:
    """(cancelled, deadline hit) before a step: the cancel flag is set, or the deadline (time.monotonic()) has
    passed and at least one step ran."""
    if cancel is not None and cancel.is_set():
        return True, False
    return False, deadline is not None and steps > 0 and time.monotonic() >= deadline


def _narrow(canvas: InfillCanvas, width: int) -> InfillCanvas:
    """The canvas's first `width` positions, for `constrain` on the base pass's logits (first slot and biases)."""
    return replace(canvas, canvas_ids=canvas.canvas_ids[:, :width], pinned=canvas.pinned[:, :width],
                   valid=canvas.valid[:, :width], token_bias={})
