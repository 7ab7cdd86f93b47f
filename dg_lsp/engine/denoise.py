"""DenoiseLoop: the inner diffusion loop over one infill canvas, after generation_diffusion_gemma.py.

Differences from `model.generate()`, all of them needed for infill: pinned positions (the
suffix head) are never re-noised and always read back as themselves; entropy, acceptance and
the confidence test only consider hole positions; a cancel flag and a deadline are checked
between steps; temperature 0 means greedy. With nothing pinned and `reference_sampling` the loop draws the same
random numbers in the same order as `generate()` and reproduces it token for token.
"""

from __future__ import annotations

import threading

import torch

from . import sampler
from .block_end import BlockEnd
from .canvas import InfillCanvas
from .outcome import DenoiseOutcome, constrain, interrupted, token_biases
from .runner import ModelRunner
from .types import DenoiseParams
from .verified import VerifiedWalk


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
        best = self.runner.ids_of(sampler.argmax(processed))
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
        return token_biases(self.runner, canvas)

    def verifies(self, params: DenoiseParams) -> bool:
        """Whether `run` takes the AR-verified walk (engine/verified.py) for these params: a weight is set, the runner
        has a base model to check with (runner.verifies), and the noise is the [MASK] (open slots are told by it)."""
        return (params.verify_weight is not None and getattr(self.runner, "verifies", False)
                and self.noise_kind == "mask" and self.mask_id is not None)

    @torch.inference_mode()
    def run(self, canvas: InfillCanvas, cache, params: DenoiseParams, generator: torch.Generator | None,
            cancel: threading.Event | None = None, deadline: float | None = None,
            initial_canvas: torch.LongTensor | None = None, riders=None) -> DenoiseOutcome:
        """`riders` (alternatives.Riders): rows that ride an AR-verified walk's base passes (VerifiedWalk.run)."""
        if initial_canvas is None and self.verifies(params):
            return VerifiedWalk(self.runner, int(self.mask_id)).run(canvas, cache, params, generator, cancel, deadline,
                                                                    riders)
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
            cancelled, deadline_hit = interrupted(cancel, deadline, steps)
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
        spent = not (cancelled or deadline_hit or bool(finished.all()))
        return DenoiseOutcome(argmax, raw, steps, forwards, cancelled, deadline_hit, self.unsettled(current, pinned),
                              spent=spent)
