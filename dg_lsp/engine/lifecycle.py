"""One infill request's life on the worker thread, the same for a request alone and for a row of a
cross-document batch (engine/batch.py):

    start:  tokenize (with token healing), build the canvas, encode the prompt, seed, deadline
    (denoise: `DenoiseLoop.run` alone, or the batch's shared steps)
    finish: choose the answer, retry once without healing where asked, time and count it
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass

import torch

from . import healing
from .alternatives import Alternatives
from .block_end import BlockEnd
from .canvas import InfillCanvas, build_prompt, fix_hole_length, length_candidates_canvas, pad_fill_canvas
from .columns import ColumnTexts
from .denoise import DenoiseLoop
from .outcome import DenoiseOutcome
from .prefix_cache import PrefixCache
from .runner import ModelRunner
from .spec import InfillSpec
from .types import InfillRequest, InfillResult


def ms(since: float) -> float:
    return (time.perf_counter() - since) * 1000.0


def new_stats() -> dict:
    return {"jobs": 0, "promptTokens": 0, "reusedTokens": 0, "encodeMs": 0.0, "denoiseMs": 0.0,
            "steps": 0, "deadlineHits": 0, "cancelled": 0,
            # cross-document batching: batches where documents shared forwards, jobs that shared one,
            # decoder forwards run by batches, and rows over those forwards
            "batches": 0, "batchedJobs": 0, "batchForwards": 0, "batchRowSteps": 0,
            "healMismatches": 0,
            # one-line answers weighed against alternatives (engine/alternatives.py), those an alternative won, and
            # the base passes they took
            "alternativeRuns": 0, "alternativeChosen": 0, "alternativePasses": 0,
            # base passes of a walk that alternatives' branches rode (alternatives.Riders)
            "alternativeRides": 0}


@dataclass
class StartedInfill:
    """A request made ready to denoise: its prompt and canvas, the encoder cache, its clock."""

    request: InfillRequest
    prompt: list[int]
    canvas: InfillCanvas
    heal: str  # the healing tail taken off the prefix
    cache: object  # the prompt's encoder cache (a decode view when it came from the prefix cache)
    reused: int  # prompt tokens whose encoder cache came from the prefix cache
    generator: torch.Generator
    deadline: float | None  # time.monotonic() past which the loop returns its best canvas
    t0: float  # time.perf_counter() at start
    timings: dict  # tokenize, encode (ms)
    riders: object = None  # alternatives.Riders: branches that ride the walk's base passes, or None


def first_open(out: DenoiseOutcome, row: int, hole: int, lead: int) -> int | None:
    """The first hole slot of a row that no step accepted (DenoiseLoop.unsettled), or None where there is none."""
    if out.unsettled is None:
        return None
    open_slots = torch.nonzero(out.unsettled[row, lead:lead + hole]).flatten()
    return None if open_slots.numel() == 0 else int(open_slots[0])


def complete_lines(text: str) -> str:
    """An unfinished answer's complete lines: its text up to and including its last line break ("" if none)."""
    return text[:text.rfind("\n") + 1]


class InfillLifecycle:
    """Prepares, finishes and counts infill requests; owns the engine's counters."""

    def __init__(self, tokenizer, spec: InfillSpec, runner: ModelRunner, loop: DenoiseLoop,
                 prefix_cache: PrefixCache):
        self.tokenizer, self.spec, self.runner, self.loop, self.prefix_cache = (
            tokenizer, spec, runner, loop, prefix_cache)
        self.stats = new_stats()
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else runner.text_config.pad_token_id
        self.eos_id = tokenizer.eos_token_id
        self.bos_id = tokenizer.bos_token_id if spec.add_bos else None
        self.last_latency_ms: float | None = None
        self.columns = ColumnTexts(tokenizer, runner, self.pad_id, self.eos_id)  # what each output column writes
        self.alternatives = Alternatives(self)

    # -- preparing ----------------------------------------------------------------------------
    def tokenize(self, text: str) -> list[int]:
        return self.tokenizer.encode(text, add_special_tokens=False) if text else []

    def strategy(self, request: InfillRequest) -> str:
        """"pad" or "search": "auto" means pad-fill when the model was trained for it."""
        if request.length_strategy == "auto":
            return "pad" if self.spec.pad_fill else "search"
        return request.length_strategy

    def prompt_budget(self, asked: int) -> int:
        """The request's prompt budget, capped by what the model was trained on (dg_lsp.json)."""
        cap = self.spec.max_prompt_tokens
        return min(asked, cap) if cap else asked

    def build_canvas(self, request: InfillRequest, prompt: list[int], suffix_ids: list[int]) -> InfillCanvas:
        """The canvas after `prompt`. A shifted model (spec.ar_shift) gets the prompt's last token as the
        canvas's pinned lead, and the encoder prompt stops before it."""
        fill = self.spec.mask_token_id if self.spec.noise_kind == "mask" else self.pad_id
        lead: list[int] = []
        if self.spec.ar_shift and len(prompt) > 1:
            prompt, lead = prompt[:-1], prompt[-1:]
        if self.strategy(request) == "pad":
            canvas = pad_fill_canvas(prompt, suffix_ids, self.canvas_length(request, suffix_ids),
                                     self.spec.suffix_head_tokens, fill, self.pad_id, lead)
            if request.hole_tokens is not None:
                fix_hole_length(canvas, request.hole_tokens, self.pad_id,
                                tuple(t for t in (self.eos_id,) if t is not None))
            return canvas
        return length_candidates_canvas(prompt, suffix_ids, request.hole_lengths, self.spec.suffix_head_tokens,
                                        fill, self.pad_id, lead)

    def canvas_length(self, request: InfillRequest, suffix_ids: list[int]) -> int:
        """The pad-fill canvas (hole + suffix head): the model's whole canvas, or `request.hole_slots` hole
        positions plus the suffix head's size, never more than the model's canvas."""
        full = self.runner.canvas_length
        if request.hole_slots is None:
            return full
        # the suffix head's full size, whatever this suffix's length: a shorter suffix leaves its room to the hole
        # (as on the whole canvas), so every request of one size has one canvas width and can share a batch
        return min(full, max(1, int(request.hole_slots)) + min(self.spec.suffix_head_tokens, full - 1))

    def prepare(self, request: InfillRequest) -> tuple[list[int], InfillCanvas, str]:
        """The encoder prompt, the canvas, and the healing tail taken off the prefix."""
        prefix_ids, heal = self.heal_prefix(request.prefix, request.heal)
        suffix = healing.split_suffix(request.suffix, heal)[1]
        suffix_ids = self.tokenize(suffix) if request.use_suffix else []
        prompt = build_prompt(prefix_ids, self.prompt_budget(request.max_prompt_tokens), self.bos_id)
        # the prompt's tokens the output vocabulary lacks become writable (Gemma3Runner.add_columns), before anything
        # per column is built for this request; only where the walk verifies, which never shares a batch
        if self.loop.verifies(request.params):
            self.add_columns(prompt + suffix_ids)
        canvas = self.build_canvas(request, prompt, suffix_ids)
        if heal:
            canvas.first_columns = self.columns.first_columns(heal)
        if request.line_only and "\n" not in heal:
            # only the answer's first line is shown: a first token that breaks the line before any text would show
            # nothing, so the first slot writes on the cursor's line (or ends the hole: the pad stays allowed)
            on_line = ~self.columns.opens_a_line()
            canvas.first_columns = on_line if canvas.first_columns is None else canvas.first_columns & on_line
        if request.params.start_slots and self.loop.verifies(request.params):
            canvas.break_columns = self.columns.token_texts("\n", "in")
        if request.rest_of_line and not request.line_only and self.loop.verifies(request.params):
            canvas.line_breaks = self.columns.token_texts("\n", "in")
        if self.loop.left_to_right:
            if request.line_only:
                canvas.ends = self.columns.token_texts("\n", "in")
                if "\n" in heal:  # the first hole token starts with the prefix's own line break (first_columns)
                    canvas.end_slots = torch.arange(canvas.length) != canvas.lead
            if self.runner.ends_at_first_pad:
                pads = self.columns.pad_columns()
                canvas.ends = pads if canvas.ends is None else canvas.ends | pads
            if request.block_indent is not None and not request.line_only:
                canvas.block_end = BlockEnd(self.columns.column_texts(), heal, int(request.block_indent),
                                            request.block_lines, request.rest_of_line, request.one_statement)
        return canvas.prompt_ids, canvas, heal

    def add_columns(self, ids) -> int:
        """The tokens of `ids` that the output columns lack join them (Gemma3Runner.add_columns) and the column texts
        grow with them; how many joined (0 for a runner without a restricted vocabulary)."""
        added = self.runner.add_columns(ids) if hasattr(self.runner, "add_columns") else 0
        if added:
            self.columns.grown(added)
        return added

    def heal_prefix(self, prefix: str, heal: bool = True) -> tuple[list[int], str]:
        """The prefix's tokens that the prompt keeps, and the healing tail the hole writes back (engine/healing.py):
        the line break and indentation or the space the prefix ends with, else the end of the word the cursor is
        in, backed off at the prefix's own token boundaries: the longest back-off whose text some token of the
        decoder's columns starts with. A prefix whose word no token can write keeps its tokens (no tail)."""
        tail = healing.healing_tail(prefix) if heal else ""
        if tail or not heal or not healing.ends_in_word(prefix):
            return self.tokenize(prefix[:len(prefix) - len(tail)]), tail
        ids = self.tokenize(prefix)
        pieces = self.columns.piece_texts(ids[-(healing.MAX_WORD_TOKENS + 1):])
        for k in healing.word_backoffs(pieces):
            word = "".join(pieces[-k:])
            if prefix.endswith(word) and self.columns.starting_with(word).any():
                return ids[:-k], word
        return ids, ""

    def encode_prompt(self, prompt: list[int], doc_key, reuse: bool):
        """The prompt's encoder cache (a decode view when reused) and how many tokens came from the prefix cache."""
        if not reuse:
            cache, _ = self.runner.encode(prompt)
            return cache, 0
        out = self.prefix_cache.encode(doc_key, prompt)
        return out.cache, out.reused

    def start(self, request: InfillRequest) -> StartedInfill:
        request.started_at = time.monotonic()
        t0 = time.perf_counter()
        prompt, canvas, heal = self.prepare(request)
        t_tok = ms(t0)
        t1 = time.perf_counter()
        cache, reused = self.encode_prompt(prompt, request.doc_key, request.reuse_prefix)
        if canvas.batch_size > 1:
            cache.batch_repeat_interleave(canvas.batch_size)  # the view's own tensors: the stored cache stays
        t_enc = ms(t1)
        generator = torch.Generator(device=self.runner.device).manual_seed(request.params.seed)
        deadline = None
        if request.params.deadline_ms is not None:
            deadline = time.monotonic() + max(0.0, request.params.deadline_ms / 1000.0 - (time.perf_counter() - t0))
        return StartedInfill(request, prompt, canvas, heal, cache, reused, generator, deadline, t0,
                             {"tokenize": t_tok, "encode": t_enc})

    # -- one request alone --------------------------------------------------------------------
    def run(self, request: InfillRequest) -> InfillResult:
        started = self.start(request)
        t2 = time.perf_counter()
        started.riders = self.alternatives.riders(started)
        out = self.loop.run(started.canvas, started.cache, request.params, started.generator, request.cancel,
                            started.deadline, riders=started.riders)
        return self.finish(started, out, denoise_ms=ms(t2))

    # -- finishing ----------------------------------------------------------------------------
    def finish(self, started: StartedInfill, out: DenoiseOutcome, denoise_ms: float | None = None,
               batch_rows: int = 1) -> InfillResult:
        """The answer of a denoised request, timed and counted. `denoise_ms` None: all time after encoding."""
        request = started.request
        result = self.choose(started.canvas, out, started.heal)
        if result.heal_mismatch and request.heal_retry and not (out.cancelled or request.cancel.is_set()):
            # an explicit request gets an answer if the model has one: once more, alone, without healing
            return self.run(dataclasses.replace(request, heal=False, heal_retry=False))
        result = self.alternatives.choose(started, result, out)
        total = ms(started.t0)
        done = started.timings["tokenize"] + started.timings["encode"]
        result.timings_ms = {**started.timings, "denoise": total - done if denoise_ms is None else denoise_ms,
                             "total": total}
        result.prompt_tokens, result.reused_tokens = len(started.prompt), started.reused
        result.batch_rows = batch_rows
        self.count(result)
        if not result.cancelled:
            self.last_latency_ms = total
        return result

    def count(self, result: InfillResult) -> None:
        st = self.stats
        st["jobs"] += 1
        st["promptTokens"] += result.prompt_tokens
        st["reusedTokens"] += result.reused_tokens
        st["encodeMs"] += result.timings_ms["encode"]
        st["denoiseMs"] += result.timings_ms["denoise"]
        st["steps"] += result.steps
        st["deadlineHits"] += int(result.deadline_hit)
        st["cancelled"] += int(result.cancelled)

    def answer_slots(self, out: DenoiseOutcome, row: int, hole: int, lead: int) -> tuple[int, bool]:
        """How many of a row's hole slots its answer reads, and whether the answer is unfinished. It reads all of
        them, or, left to right, up to and including the first slot no step accepted (DenoiseLoop.unsettled): later
        ones were guessed with [MASK]s on their left. Unfinished: its loop stopped (its steps or its deadline spent)
        with slots open and no end (the end token, or the pad where the runner ends a hole there) among the slots it
        reads. Those are then the kept ones and the first open slot's argmax, unless that is stale
        (DenoiseOutcome.stale_guess): then the kept ones only. The kept slots end wherever the stop fell, often inside
        a word (`return n_` for `return n_vowels`), so an unfinished answer shows only its complete lines: a line
        whose break is kept or comes next (`'one': 1,` then a line break)."""
        first = first_open(out, row, hole, lead)
        if first is None:
            return hole, False
        read = first + (0 if out.stale_guess else 1)
        ends = {self.eos_id} | ({self.pad_id} if self.runner.ends_at_first_pad else set())
        if any(t in ends for t in out.canvas[row, lead:lead + read].tolist()):
            return first + 1, False
        return read, True

    def hole_ids_text(self, row: torch.LongTensor, hole: int, lead: int = 0) -> tuple[str, int]:
        """The text of a row's hole (pads and special tokens dropped, cut at end-of-text, and at the first pad where
        the runner ends a hole there) and its token count."""
        ids = []
        cut_at_pad = self.runner.ends_at_first_pad
        for t in row[lead:lead + hole].tolist():
            if t == self.eos_id or (cut_at_pad and t == self.pad_id):
                break
            if t != self.pad_id and t not in self.tokenizer.all_special_ids:
                ids.append(t)
        return self.tokenizer.decode(ids), len(ids)

    def choose(self, canvas: InfillCanvas, out: DenoiseOutcome, heal: str = "") -> InfillResult:
        """The best row of a denoised canvas by mean log-probability of its hole tokens."""
        if out.cancelled or out.logits is None:
            return InfillResult(text="", steps=out.steps, cancelled=out.cancelled, deadline_hit=out.deadline_hit)
        logp = torch.log_softmax(out.logits.float(), dim=-1)
        columns = self.runner.columns_of(out.canvas.to(logp.device))
        chosen = logp.gather(-1, columns.unsqueeze(-1)).squeeze(-1)  # [B, L]
        candidates, mismatches = [], 0
        for row, hole in enumerate(canvas.hole_lengths):
            read, unfinished = self.answer_slots(out, row, hole, canvas.lead)
            text, n = self.hole_ids_text(out.canvas[row], read, canvas.lead)
            if unfinished:  # stopped (step budget, deadline) inside the answer: its complete lines, else nothing
                text = complete_lines(text)
            # a healed space's hole may also end at once (pad or end token first): nothing to insert, not a mismatch;
            # nor is an unfinished answer that has not written the tail's line yet
            healed = "" if text == "" and healing.constrained(heal) else healing.unheal(text, heal)
            if healed is None and unfinished:
                healed = ""
            if healed is None:  # the model did not write the prefix's own tail: nothing fits the cursor
                self.stats["healMismatches"] += 1
                mismatches += 1
                healed = ""
            score = float(chosen[row, canvas.lead:canvas.lead + hole].mean())
            forwards = max(1, int(out.forwards_per_row[row]))
            candidates.append((healed, score, n, hole, n / forwards, unfinished))
        best = max(candidates, key=lambda c: c[1])
        return InfillResult(text=best[0], steps=out.steps, tokens_per_forward=best[4], generated_tokens=best[2],
                            hole_length=best[3], score=best[1], deadline_hit=out.deadline_hit,
                            candidates=[(c[0], c[1]) for c in candidates],
                            heal_mismatch=mismatches == len(candidates),
                            cut_short=best[5] and (out.deadline_hit or out.spent))
