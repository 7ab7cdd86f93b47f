"""Engine: the public API for infill and autoregressive completion on a warm model.

    engine = Engine.load(model=None, device="auto", dtype="auto")
    result = engine.infill(InfillRequest(prefix="def f(x):\\n    return ", suffix="\\n"))
    future = engine.submit(request)   # runs on the engine's single worker thread
"""

from __future__ import annotations

import dataclasses
import re
import statistics
import threading
import time
from concurrent.futures import Future

import torch

from .canvas import InfillCanvas, build_prompt, fix_hole_length, length_candidates_canvas, pad_fill_canvas
from .denoise import DenoiseLoop
from .fast import denoise_runner
from .loader import LoadedModel, load_model
from .prefix_cache import PrefixCache
from .runner import ModelRunner
from .types import DenoiseParams, InfillRequest, InfillResult
from .worker import Job, Worker


def _ms(since: float) -> float:
    return (time.perf_counter() - since) * 1000.0


# Automatic cross-document batching (request.batch_rows == 0) is on when a decoder forward of 2 rows costs
# less than this many 1-row forwards on this machine, i.e. when a shared forward is nearly free (a GPU on
# the eager path, or a model big enough to be memory-bound; the fixed-shape CUDA path runs one request at a
# time). Otherwise the rows of documents still being typed, superseded a keystroke later, take time from
# the suggestion someone is waiting for: on 2 CPU cores with the 8M default model 2 rows cost 1.4-1.7
# forwards, and always batching made the final suggestion 1.8-1.9x slower while four documents were typed
# at once (docs/results/typing.md). The threshold is a judgement from those measurements, with a margin:
# the break-even lies somewhere between 1.0 and 1.4.
BATCH_PAYS_BELOW = 1.1
AUTO_BATCH_ROWS = 4

_HEALING_TAIL = re.compile(r"\n+[ \t]*\Z")
_TRAILING_INDENT = re.compile(r"(?<=\n)[ \t]+\Z")

_CALIBRATION_TEXT = "def mean(values):\n    total = 0\n    for value in values:\n        total += value\n" \
                    "    return total / len(values)\n\n\n"


class Engine:
    def __init__(self, loaded: LoadedModel):
        self.loaded = loaded
        self.tokenizer = loaded.tokenizer
        self.spec = loaded.spec
        self.runner = ModelRunner(loaded)
        # On CUDA the loop's decoder steps take the fixed-shape compiled path (engine/fast); elsewhere this runner
        self.loop = DenoiseLoop(denoise_runner(self.runner), loaded.spec.noise_kind, loaded.spec.mask_token_id)
        self.worker = Worker()
        self.prefix_cache = PrefixCache(self.runner)
        self.stats = {"jobs": 0, "promptTokens": 0, "reusedTokens": 0, "encodeMs": 0.0, "denoiseMs": 0.0,
                      "steps": 0, "deadlineHits": 0, "cancelled": 0,
                      # cross-document batching: batches where documents shared forwards, jobs that shared one,
                      # decoder forwards run by batches, and rows over those forwards
                      "batches": 0, "batchedJobs": 0, "batchForwards": 0, "batchRowSteps": 0,
                      "healMismatches": 0}
        tok = self.tokenizer
        self.pad_id = tok.pad_token_id if tok.pad_token_id is not None else self.runner.text_config.pad_token_id
        self.eos_id = tok.eos_token_id
        self.bos_id = tok.bos_token_id if loaded.spec.add_bos else None
        self.last_latency_ms: float | None = None
        self.batch_calibration: dict | None = None  # measure_batch_step() at warm-up; decides automatic batching

    @classmethod
    def load(cls, model: str | None = None, device: str = "auto", dtype: str = "auto",
             trust_remote_code: bool = False) -> "Engine":
        return cls(load_model(model, device, dtype, trust_remote_code))

    @property
    def canvas_length(self) -> int:
        return self.runner.canvas_length

    # -- public API ---------------------------------------------------------------------------
    def submit(self, request: InfillRequest) -> Future:
        job = Job(fn=lambda: self.run_infill(request), doc_key=request.doc_key, cancel=request.cancel,
                  superseded=lambda: InfillResult(text="", cancelled=True))
        key = self.batch_key(request)
        if key is not None:
            job.batch_key, job.batch_rows, job.payload = key, self.batch_rows_for(request), request
            job.batch_fn = self._run_batch
        return self.worker.submit(job)

    def _run_batch(self, ctx) -> None:
        from .batch import BatchRun

        BatchRun(self, ctx, ctx.first.payload.params).run()

    def batch_key(self, request: InfillRequest):
        """Requests with equal keys can share decoder forwards (one pad-fill row each, same loop settings);
        None when this one cannot. The fixed-shape GPU path (engine/fast) runs requests one at a time."""
        if (self.batch_rows_for(request) <= 1 or self.loop.runner is not self.runner
                or self._strategy(request) != "pad" or request.hole_tokens is not None):
            return None
        return ("pad", dataclasses.replace(request.params, seed=0, deadline_ms=None))

    def infill(self, request: InfillRequest) -> InfillResult:
        return self.submit(request).result()

    def autoregressive(self, prefix: str, max_new_tokens: int = 64, stop_at_newline: bool = True,
                       max_prompt_tokens: int = 1024, heal: bool = True) -> InfillResult:
        job = Job(fn=lambda: self.run_autoregressive(prefix, max_new_tokens, stop_at_newline, max_prompt_tokens,
                                                     heal),
                  doc_key=None, cancel=threading.Event(),
                  superseded=lambda: InfillResult(text="", cancelled=True))
        return self.worker.submit(job).result()

    def warmup(self, calibrate: bool = True) -> InfillResult:
        """A dummy fill (so the first real request pays no allocation cost), then, where batching is possible,
        the measurement that decides automatic cross-document batching."""
        result = self.infill(InfillRequest(prefix="def f(x):\n    return ", suffix="\n",
                                           params=DenoiseParams(max_steps=2)))
        if calibrate and self.loop.runner is self.runner:
            job = Job(fn=self.measure_batch_step, doc_key=None, cancel=threading.Event(), superseded=lambda: None)
            self.batch_calibration = self.worker.submit(job).result()
        return result

    @torch.inference_mode()
    def measure_batch_step(self, rows: int = 2, reps: int = 5, prompt_tokens: int = 256) -> dict:
        """Median time of one decoder forward for 1 row and for `rows` rows (alternating, same prompt)."""
        ids = self._tokens(_CALIBRATION_TEXT * 40)[: max(1, self.prompt_budget(prompt_tokens) - 1)]
        prompt = ([self.bos_id] if self.bos_id is not None else []) + ids
        length = self.canvas_length
        positions = torch.arange(len(prompt), len(prompt) + length).unsqueeze(0)
        one_cache, _ = self.runner.encode(prompt)
        many_cache, _ = self.runner.encode(prompt)
        many_cache.batch_repeat_interleave(rows)
        gen = torch.Generator(device=self.runner.device).manual_seed(0)
        canvas = torch.randint(0, self.runner.vocab_size, (rows, length), generator=gen, device=self.runner.device)
        times: dict[int, list[float]] = {1: [], rows: []}
        for rep in range(reps + 1):
            for n, cache in ((1, one_cache), (rows, many_cache)):
                t0 = time.perf_counter()
                self.runner.decode(canvas[:n], cache, positions, None, None)
                if rep:  # the first round warms up
                    times[n].append(_ms(t0))
        one, many = statistics.median(times[1]), statistics.median(times[rows])
        ratio = many / max(one, 1e-9)
        return {"rows": rows, "step_ms_1": one, f"step_ms_{rows}": many, "cost_in_single_forwards": ratio,
                "batch_pays": ratio < BATCH_PAYS_BELOW}

    def batch_rows_for(self, request: InfillRequest) -> int:
        """Rows this request may share: its own batch_rows, or for 0 (automatic) the calibration's verdict."""
        if request.batch_rows == 0:
            pays = self.batch_calibration is not None and self.batch_calibration["batch_pays"]
            return AUTO_BATCH_ROWS if pays else 1
        return request.batch_rows

    def status(self) -> dict:
        return {"model": self.loaded.path, "device": self.loaded.device, "dtype": self.loaded.dtype,
                "busy": self.worker.busy, "queue": self.worker.queue_length, "lastLatencyMs": self.last_latency_ms,
                "engine": dict(self.stats), "batchCalibration": self.batch_calibration}

    def close(self) -> None:
        self.worker.close()

    # -- work done on the worker thread --------------------------------------------------------
    def _tokens(self, text: str) -> list[int]:
        return self.tokenizer.encode(text, add_special_tokens=False) if text else []

    def _strategy(self, request: InfillRequest) -> str:
        """"pad" or "search": "auto" means pad-fill when the model was trained for it."""
        if request.length_strategy == "auto":
            return "pad" if self.spec.pad_fill else "search"
        return request.length_strategy

    def _build_canvas(self, request: InfillRequest, prompt: list[int], suffix_ids: list[int]) -> InfillCanvas:
        fill = self.spec.mask_token_id if self.spec.noise_kind == "mask" else self.pad_id
        if self._strategy(request) == "pad":
            canvas = pad_fill_canvas(prompt, suffix_ids, self.canvas_length, self.spec.suffix_head_tokens, fill,
                                     self.pad_id)
            if request.hole_tokens is not None:
                fix_hole_length(canvas, request.hole_tokens, self.pad_id,
                                tuple(t for t in (self.eos_id,) if t is not None))
            return canvas
        return length_candidates_canvas(prompt, suffix_ids, request.hole_lengths, self.spec.suffix_head_tokens,
                                        fill, self.pad_id)

    def _hole_text(self, row: torch.LongTensor, hole: int) -> tuple[str, int]:
        ids = []
        for t in row[:hole].tolist():
            if t == self.eos_id:
                break
            if t != self.pad_id and t not in self.tokenizer.all_special_ids:
                ids.append(t)
        return self.tokenizer.decode(ids), len(ids)

    def encode_prompt(self, prompt: list[int], doc_key, reuse: bool):
        """The prompt's encoder cache (a decode view when reused) and how many tokens came from the prefix cache."""
        if not reuse:
            cache, _ = self.runner.encode(prompt)
            return cache, 0
        out = self.prefix_cache.encode(doc_key, prompt)
        return out.cache, out.reused

    def prompt_budget(self, asked: int) -> int:
        """The request's prompt budget, capped by what the model was trained on (dg_lsp.json)."""
        cap = self.spec.max_prompt_tokens
        return min(asked, cap) if cap else asked

    @staticmethod
    def healing_tail(prefix: str) -> str:
        """The line breaks and indentation the prefix ends with (the cursor at the start of a line, or in
        its indentation); else "".

        The byte-level BPE merges a newline with the next line's indentation ("\n   " + " return"), so a
        prompt that stops right after "\n" ends in a token split the model never saw in training (the
        HumanEval single-line holes all start at column 0). Token healing: the prompt stops before this
        tail, the model writes it as part of the hole, and the answer is what follows it."""
        m = _HEALING_TAIL.search(prefix)
        return m.group(0) if m and m.start() > 0 else ""

    @staticmethod
    def split_suffix(suffix: str, heal: str) -> tuple[str, str]:
        """(what the hole writes of the suffix, what the pinned head starts with).

        With a healing tail the hole ends a line, and a suffix that starts the next one with its indentation
        is split: BPE puts all but the last space of it in the line break's token ("\n   " + " next"), so the
        pinned head starts at that last space and the model ends the hole with the line break (unheal drops
        the rest)."""
        if not (heal and suffix.startswith(" ")):
            return "", suffix
        cut = len(suffix) - len(suffix.lstrip(" ")) - 1
        return suffix[:cut], suffix[cut:]

    def hole_text(self, prefix: str, middle: str, suffix: str, heal: bool = True) -> str:
        """What the pad-fill hole must hold for the answer `middle` (the oracle-length baseline, the probe)."""
        tail = self.healing_tail(prefix) if heal else ""
        return tail + middle + self.split_suffix(suffix, tail)[0]

    def prepare(self, request: InfillRequest) -> tuple[list[int], InfillCanvas, str]:
        """The encoder prompt, the canvas, and the healing tail taken off the prefix."""
        heal = self.healing_tail(request.prefix) if request.heal else ""
        prefix_ids = self._tokens(request.prefix[:len(request.prefix) - len(heal)])
        suffix = self.split_suffix(request.suffix, heal)[1]
        suffix_ids = self._tokens(suffix) if request.use_suffix else []
        prompt = build_prompt(prefix_ids, self.prompt_budget(request.max_prompt_tokens), self.bos_id)
        return prompt, self._build_canvas(request, prompt, suffix_ids), heal

    @staticmethod
    def unheal(text: str, heal: str) -> str | None:
        """The part of a generated text after the healing tail, without indentation after its last line
        break (the suffix has its own); None if the text does not start with the tail."""
        if not heal:
            return text
        if not text.startswith(heal):
            return None
        return _TRAILING_INDENT.sub("", text[len(heal):])

    def run_infill(self, request: InfillRequest) -> InfillResult:
        request.started_at = time.monotonic()
        t0 = time.perf_counter()
        params = request.params
        prompt, canvas, heal = self.prepare(request)
        t_tok = _ms(t0)
        t1 = time.perf_counter()
        cache, reused = self.encode_prompt(prompt, request.doc_key, request.reuse_prefix)
        if canvas.batch_size > 1:
            cache.batch_repeat_interleave(canvas.batch_size)  # the view's own tensors: the stored cache stays
        t_enc = _ms(t1)
        t2 = time.perf_counter()
        generator = torch.Generator(device=self.runner.device).manual_seed(params.seed)
        deadline = None
        if params.deadline_ms is not None:
            deadline = time.monotonic() + max(0.0, params.deadline_ms / 1000.0 - (time.perf_counter() - t0))
        out = self.loop.run(canvas, cache, params, generator, request.cancel, deadline)
        t_den = _ms(t2)
        result = self._choose(canvas, out, heal)
        if result.heal_mismatch and request.heal_retry and not request.cancel.is_set():
            # an explicit request gets an answer if the model has one: once more without healing
            return self.run_infill(dataclasses.replace(request, heal=False, heal_retry=False))
        result.timings_ms = {"tokenize": t_tok, "encode": t_enc, "denoise": t_den, "total": _ms(t0)}
        result.prompt_tokens, result.reused_tokens = len(prompt), reused
        self._count(result)
        if not result.cancelled:
            self.last_latency_ms = result.timings_ms["total"]
        return result

    def _count(self, result: InfillResult) -> None:
        st = self.stats
        st["jobs"] += 1
        st["promptTokens"] += result.prompt_tokens
        st["reusedTokens"] += result.reused_tokens
        st["encodeMs"] += result.timings_ms["encode"]
        st["denoiseMs"] += result.timings_ms["denoise"]
        st["steps"] += result.steps
        st["deadlineHits"] += int(result.deadline_hit)
        st["cancelled"] += int(result.cancelled)

    def _choose(self, canvas: InfillCanvas, out, heal: str = "") -> InfillResult:
        if out.cancelled or out.logits is None:
            return InfillResult(text="", steps=out.steps, cancelled=out.cancelled, deadline_hit=out.deadline_hit)
        logp = torch.log_softmax(out.logits.float(), dim=-1)
        chosen = logp.gather(-1, out.canvas.unsqueeze(-1)).squeeze(-1)  # [B, L]
        candidates, mismatches = [], 0
        for row, hole in enumerate(canvas.hole_lengths):
            text, n = self._hole_text(out.canvas[row], hole)
            healed = self.unheal(text, heal)
            if healed is None:  # the model did not write the prefix's own tail: nothing fits the cursor
                self.stats["healMismatches"] += 1
                mismatches += 1
                healed = ""
            text = healed
            score = float(chosen[row, :hole].mean())
            forwards = max(1, int(out.forwards_per_row[row]))
            candidates.append((text, score, n, hole, n / forwards))
        best = max(candidates, key=lambda c: c[1])
        return InfillResult(text=best[0], steps=out.steps, tokens_per_forward=best[4], generated_tokens=best[2],
                            hole_length=best[3], score=best[1], deadline_hit=out.deadline_hit,
                            candidates=[(c[0], c[1]) for c in candidates],
                            heal_mismatch=mismatches == len(candidates))

    @torch.inference_mode()
    def run_autoregressive(self, prefix: str, max_new_tokens: int, stop_at_newline: bool,
                           max_prompt_tokens: int, heal: bool = True) -> InfillResult:
        """Greedy next-token decoding with the encoder (same weights) on the prefix alone, with the same token
        healing as infill: the text starts after the prefix's healing tail, and stops at the end of its line."""
        t0 = time.perf_counter()
        tail = self.healing_tail(prefix) if heal else ""
        prompt = build_prompt(self._tokens(prefix[:len(prefix) - len(tail)]), self.prompt_budget(max_prompt_tokens),
                              self.bos_id)
        t_tok = _ms(t0)
        t1 = time.perf_counter()
        cache, hidden = self.runner.encode(prompt)
        t_enc = _ms(t1)
        t2 = time.perf_counter()
        out: list[int] = []
        text = ""
        for _ in range(max_new_tokens + len(self._tokens(tail))):
            nxt = int(self.runner.lm_logits(hidden[:, -1:]).argmax(dim=-1))
            if nxt == self.eos_id or nxt == self.pad_id:
                break
            out.append(nxt)
            generated = self.tokenizer.decode(out)
            if len(generated) < len(tail) and tail.startswith(generated):
                cache, hidden = self.runner.encode([nxt], cache)
                continue  # still writing the tail
            body = self.unheal(generated, tail)
            if body is None:  # it wrote something else than the prefix's own tail
                self.stats["healMismatches"] += 1
                text = ""
                break
            text = body
            if stop_at_newline and "\n" in text:
                text = text[: text.index("\n") + 1]
                break
            cache, hidden = self.runner.encode([nxt], cache)
        t_gen = _ms(t2)
        result = InfillResult(text=text, steps=len(out), tokens_per_forward=1.0 if out else 0.0,
                              generated_tokens=len(out))
        result.timings_ms = {"tokenize": t_tok, "encode": t_enc, "denoise": t_gen, "total": _ms(t0)}
        return result
