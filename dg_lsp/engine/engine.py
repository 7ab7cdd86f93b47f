"""Engine: the public API for infill and autoregressive completion on a warm model.

    engine = Engine.load(model=None, device="auto", dtype="auto")
    result = engine.infill(InfillRequest(prefix="def f(x):\\n    return ", suffix="\\n"))
    future = engine.submit(request)   # runs on the engine's single worker thread
"""

from __future__ import annotations

import dataclasses
import threading
import time
from concurrent.futures import Future

import torch

from .canvas import InfillCanvas, build_prompt, length_candidates_canvas, pad_fill_canvas
from .denoise import DenoiseLoop
from .fast import denoise_runner
from .loader import LoadedModel, load_model
from .prefix_cache import PrefixCache
from .runner import ModelRunner
from .types import DenoiseParams, InfillRequest, InfillResult
from .worker import Job, Worker


def _ms(since: float) -> float:
    return (time.perf_counter() - since) * 1000.0


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
                      "batches": 0, "batchedJobs": 0, "batchForwards": 0, "batchRowSteps": 0}
        tok = self.tokenizer
        self.pad_id = tok.pad_token_id if tok.pad_token_id is not None else self.runner.text_config.pad_token_id
        self.eos_id = tok.eos_token_id
        self.bos_id = tok.bos_token_id if loaded.spec.add_bos else None
        self.last_latency_ms: float | None = None

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
            job.batch_key, job.batch_rows, job.payload = key, request.batch_rows, request
            job.batch_fn = self._run_batch
        return self.worker.submit(job)

    def _run_batch(self, ctx) -> None:
        from .batch import BatchRun

        BatchRun(self, ctx, ctx.first.payload.params).run()

    def batch_key(self, request: InfillRequest):
        """Requests with equal keys can share decoder forwards (one pad-fill row each, same loop settings);
        None when this one cannot. The fixed-shape GPU path (engine/fast) runs requests one at a time."""
        if request.batch_rows <= 1 or self.loop.runner is not self.runner:
            return None
        strategy = request.length_strategy
        if strategy == "auto":
            strategy = "pad" if self.spec.pad_fill else "search"
        if strategy != "pad":
            return None
        return ("pad", dataclasses.replace(request.params, seed=0, deadline_ms=None))

    def infill(self, request: InfillRequest) -> InfillResult:
        return self.submit(request).result()

    def autoregressive(self, prefix: str, max_new_tokens: int = 64, stop_at_newline: bool = True,
                       max_prompt_tokens: int = 1024) -> InfillResult:
        job = Job(fn=lambda: self.run_autoregressive(prefix, max_new_tokens, stop_at_newline, max_prompt_tokens),
                  doc_key=None, cancel=threading.Event(),
                  superseded=lambda: InfillResult(text="", cancelled=True))
        return self.worker.submit(job).result()

    def warmup(self) -> InfillResult:
        return self.infill(InfillRequest(prefix="def f(x):\n    return ", suffix="\n", params=DenoiseParams(max_steps=2)))

    def status(self) -> dict:
        return {"model": self.loaded.path, "device": self.loaded.device, "dtype": self.loaded.dtype,
                "busy": self.worker.busy, "queue": self.worker.queue_length, "lastLatencyMs": self.last_latency_ms,
                "engine": dict(self.stats)}

    def close(self) -> None:
        self.worker.close()

    # -- work done on the worker thread --------------------------------------------------------
    def _tokens(self, text: str) -> list[int]:
        return self.tokenizer.encode(text, add_special_tokens=False) if text else []

    def _build_canvas(self, request: InfillRequest, prompt: list[int], suffix_ids: list[int]) -> InfillCanvas:
        fill = self.spec.mask_token_id if self.spec.noise_kind == "mask" else self.pad_id
        strategy = request.length_strategy
        if strategy == "auto":
            strategy = "pad" if self.spec.pad_fill else "search"
        if strategy == "pad":
            return pad_fill_canvas(prompt, suffix_ids, self.canvas_length, self.spec.suffix_head_tokens, fill,
                                   self.pad_id)
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

    def run_infill(self, request: InfillRequest) -> InfillResult:
        request.started_at = time.monotonic()
        t0 = time.perf_counter()
        params = request.params
        prefix_ids = self._tokens(request.prefix)
        suffix_ids = self._tokens(request.suffix) if request.use_suffix else []
        prompt = build_prompt(prefix_ids, self.prompt_budget(request.max_prompt_tokens), self.bos_id)
        canvas = self._build_canvas(request, prompt, suffix_ids)
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
        result = self._choose(canvas, out)
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

    def _choose(self, canvas: InfillCanvas, out) -> InfillResult:
        if out.cancelled or out.logits is None:
            return InfillResult(text="", steps=out.steps, cancelled=out.cancelled, deadline_hit=out.deadline_hit)
        logp = torch.log_softmax(out.logits.float(), dim=-1)
        chosen = logp.gather(-1, out.canvas.unsqueeze(-1)).squeeze(-1)  # [B, L]
        candidates = []
        for row, hole in enumerate(canvas.hole_lengths):
            text, n = self._hole_text(out.canvas[row], hole)
            score = float(chosen[row, :hole].mean())
            forwards = max(1, int(out.forwards_per_row[row]))
            candidates.append((text, score, n, hole, n / forwards))
        best = max(candidates, key=lambda c: c[1])
        return InfillResult(text=best[0], steps=out.steps, tokens_per_forward=best[4], generated_tokens=best[2],
                            hole_length=best[3], score=best[1], deadline_hit=out.deadline_hit,
                            candidates=[(c[0], c[1]) for c in candidates])

    @torch.inference_mode()
    def run_autoregressive(self, prefix: str, max_new_tokens: int, stop_at_newline: bool,
                           max_prompt_tokens: int) -> InfillResult:
        """Greedy next-token decoding with the encoder (same weights) on the prefix alone."""
        t0 = time.perf_counter()
        prompt = build_prompt(self._tokens(prefix), self.prompt_budget(max_prompt_tokens), self.bos_id)
        t_tok = _ms(t0)
        t1 = time.perf_counter()
        cache, hidden = self.runner.encode(prompt)
        t_enc = _ms(t1)
        t2 = time.perf_counter()
        out: list[int] = []
        text = ""
        for _ in range(max_new_tokens):
            nxt = int(self.runner.lm_logits(hidden[:, -1:]).argmax(dim=-1))
            if nxt == self.eos_id or nxt == self.pad_id:
                break
            out.append(nxt)
            text = self.tokenizer.decode(out)
            if stop_at_newline and "\n" in text:
                text = text[: text.index("\n") + 1]
                break
            cache, hidden = self.runner.encode([nxt], cache)
        t_gen = _ms(t2)
        result = InfillResult(text=text, steps=len(out), tokens_per_forward=1.0 if out else 0.0,
                              generated_tokens=len(out))
        result.timings_ms = {"tokenize": t_tok, "encode": t_enc, "denoise": t_gen, "total": _ms(t0)}
        return result
