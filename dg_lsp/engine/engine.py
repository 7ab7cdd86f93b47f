"""Engine: the public API for infill and autoregressive completion on a warm model.

    engine = Engine.load(model=None, device="auto", dtype="auto")
    result = engine.infill(InfillRequest(prefix="def f(x):\\n    return ", suffix="\\n"))
    future = engine.submit(request)   # runs on the engine's single worker thread

The parts: `ModelRunner` owns the model and the device, `DenoiseLoop` the denoising steps,
`InfillLifecycle` a request's path before and after them (engine/lifecycle.py), `BatchRun` the
cross-document batches and when they pay (engine/batch.py), `Worker` the one thread all model work
runs on, `healing` the token-healing string rules.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future

from . import batch, healing, speed
from .autoregressive import run_autoregressive
from .canvas import InfillCanvas
from .denoise import DenoiseLoop
from .fast import denoise_runner
from .lifecycle import InfillLifecycle
from .loader import LoadedModel, load_model
from .prefix_cache import PrefixCache
from .runner import ModelRunner
from .types import DenoiseParams, InfillRequest, InfillResult
from .worker import Job, Worker


def make_runner(loaded: LoadedModel) -> ModelRunner:
    """The runner of a loaded model's kind: DiffusionGemma's, or an adapted Gemma 3's (engine/gemma3)."""
    if loaded.kind == "gemma3-lora":
        from .gemma3.runner import Gemma3Runner

        return Gemma3Runner(loaded, loaded.parts["adapter"], loaded.parts["vocab"], loaded.parts["canvas_length"])
    return ModelRunner(loaded)


def _superseded() -> InfillResult:
    return InfillResult(text="", cancelled=True)


class Engine:
    # token healing, pure string rules (engine/healing.py)
    healing_tail = staticmethod(healing.healing_tail)
    split_suffix = staticmethod(healing.split_suffix)
    unheal = staticmethod(healing.unheal)

    def __init__(self, loaded: LoadedModel):
        self.loaded = loaded
        self.tokenizer = loaded.tokenizer
        self.spec = loaded.spec
        self.runner = make_runner(loaded)
        if loaded.dtype_asked == "int8":  # loaded in float32 (loader.pick_dtype); engine/gemma3/int8.py
            self.runner.use_int8()
            loaded.dtype = "int8"
        # On CUDA the loop's decoder steps take the fixed-shape compiled path (engine/fast); elsewhere this runner
        self.loop = DenoiseLoop(denoise_runner(self.runner), loaded.spec.noise_kind, loaded.spec.mask_token_id,
                                loaded.spec.unmask_order)
        self.worker = Worker()
        self.prefix_cache = PrefixCache(self.runner)
        self.lifecycle = InfillLifecycle(self.tokenizer, self.spec, self.runner, self.loop, self.prefix_cache)
        self.stats = self.lifecycle.stats
        self.pad_id, self.eos_id, self.bos_id = self.lifecycle.pad_id, self.lifecycle.eos_id, self.lifecycle.bos_id
        self.batch_calibration: dict | None = None  # measure_batch_step() at warm-up; decides automatic batching
        self.dtype_choice: dict | None = None  # dtype "auto" on CPU, settled at warm-up (engine/dtype_auto.py)
        self.packing: dict | None = None  # prepacked float32 weights on CPU (DG_LSP_PACKED), settled at warm-up

    @classmethod
    def load(cls, model: str | None = None, device: str = "auto", dtype: str = "auto",
             trust_remote_code: bool = False) -> "Engine":
        return cls(load_model(model, device, dtype, trust_remote_code))

    @property
    def canvas_length(self) -> int:
        return self.runner.canvas_length

    @property
    def last_latency_ms(self) -> float | None:
        return self.lifecycle.last_latency_ms

    # -- requests -----------------------------------------------------------------------------
    def submit(self, request: InfillRequest) -> Future:
        job = Job(fn=lambda: self.lifecycle.run(request), doc_key=request.doc_key, cancel=request.cancel,
                  superseded=_superseded)
        key = self.batch_key(request)
        if key is not None:
            job.batch_key, job.batch_rows, job.payload = key, self.batch_rows_for(request), request
            job.batch_fn = lambda ctx: batch.BatchRun(self.lifecycle, ctx, ctx.first.payload.params).run()
        return self.worker.submit(job)

    def infill(self, request: InfillRequest) -> InfillResult:
        return self.submit(request).result()

    def autoregressive(self, prefix: str, max_new_tokens: int = 64, stop_at_newline: bool = True,
                       max_prompt_tokens: int = 1024, heal: bool = True, head: str = "full") -> InfillResult:
        job = Job(fn=lambda: run_autoregressive(self.lifecycle, prefix, max_new_tokens, stop_at_newline,
                                                max_prompt_tokens, heal, head),
                  doc_key=None, cancel=threading.Event(), superseded=_superseded)
        return self.worker.submit(job).result()

    def run_infill(self, request: InfillRequest) -> InfillResult:
        """One request, alone, on the calling thread (benchmarks and tests; editors go through submit)."""
        return self.lifecycle.run(request)

    # -- what a request becomes ---------------------------------------------------------------
    def tokenize(self, text: str) -> list[int]:
        """The model's tokens of a text, without special tokens."""
        return self.lifecycle.tokenize(text)

    def prepare(self, request: InfillRequest) -> tuple[list[int], InfillCanvas, str]:
        """The encoder prompt, the canvas, and the healing tail taken off the prefix."""
        return self.lifecycle.prepare(request)

    def hole_text(self, prefix: str, middle: str, suffix: str, heal: bool = True) -> str:
        """What the pad-fill hole must hold for the answer `middle` (the oracle-length baseline, the probe): the
        healing tail this engine takes off the prefix (a word's depends on its vocabulary), the answer, and the part
        of the next line's indentation the pinned suffix head leaves out."""
        tail = self.lifecycle.heal_prefix(prefix, heal)[1]
        return tail + middle + healing.split_suffix(suffix, tail)[0]

    def prompt_budget(self, asked: int) -> int:
        return self.lifecycle.prompt_budget(asked)

    # -- cross-document batching --------------------------------------------------------------
    def batch_rows_for(self, request: InfillRequest) -> int:
        return batch.batch_rows_for(request, self.batch_calibration)

    def batch_key(self, request: InfillRequest):
        if self.loop.verifies(request.params):  # AR-verified decoding runs one request at a time (its walk is per row)
            return None
        return batch.batch_key(request, self.batch_rows_for(request), self.lifecycle.strategy(request),
                               fixed_shape=self.loop.runner is not self.runner)

    def measure_batch_step(self, rows: int = 2, reps: int = 5, prompt_tokens: int = 256) -> dict:
        return batch.measure_batch_step(self.lifecycle, rows, reps, prompt_tokens)

    # -- life of the engine -------------------------------------------------------------------
    def warmup(self, calibrate: bool = True) -> InfillResult:
        """dtype `auto` on CPU settled (engine/dtype_auto.py), then on a float32 CPU engine whether its weights are
        prepacked (`DG_LSP_PACKED`, engine/gemma3/packed.py; off by default), a dummy fill (so the first real request
        pays no allocation cost), then, where batching is possible, the measurement that decides automatic batching."""
        if calibrate and self.loaded.dtype_asked == "auto" and self.loaded.device == "cpu" \
                and self.loaded.dtype == "float32" and self.dtype_choice is None:
            self.dtype_choice = self.worker.submit(Job(fn=self.settle_dtype, doc_key=None, cancel=threading.Event(),
                                                       superseded=lambda: None)).result()
        if calibrate and self.packing is None and self.loaded.device == "cpu" \
                and self.loaded.dtype in ("float32", "bfloat16") and hasattr(self.runner, "use_packed"):
            self.packing = self.worker.submit(Job(fn=self.settle_packing, doc_key=None, cancel=threading.Event(),
                                                  superseded=lambda: None)).result()
        result = self.infill(InfillRequest(prefix="def f(x):\n    return ", suffix="\n",
                                           params=DenoiseParams(max_steps=2)))
        if calibrate and self.loop.runner is self.runner:
            job = Job(fn=self.measure_batch_step, doc_key=None, cancel=threading.Event(), superseded=lambda: None)
            self.batch_calibration = self.worker.submit(job).result()
        return result

    def settle_dtype(self) -> dict:
        from . import dtype_auto

        record = dtype_auto.choose(self)
        self.loaded.dtype = record["chosen"]
        return record

    def settle_packing(self) -> dict:
        from .gemma3 import packed

        return packed.choose(self)

    def status(self) -> dict:
        return {"model": self.loaded.path, "device": self.loaded.device, "dtype": self.loaded.dtype,
                "dtypeChoice": self.dtype_choice, "packing": self.packing,
                "busy": self.worker.busy, "queue": self.worker.queue_length, "lastLatencyMs": self.last_latency_ms,
                "engine": dict(self.stats), "batchCalibration": self.batch_calibration}

    def close(self) -> None:
        self.worker.close()

    # -- speed on token ids, for `dg-lsp bench gpu` (engine/speed.py, docs/GPU.md) ------------------------------
    # A random-weight model has no tokenizer and never converges: these take token ids and fixed step counts, and
    # run on the calling thread (the benchmark has the engine to itself; the worker stays idle).
    @property
    def vocab_size(self) -> int:
        """Token ids run from 0 to `vocab_size - 1`."""
        return self.runner.vocab_size

    def use_fast_path(self, fast: str, **options) -> None:
        """The denoising loop's decoder runner from now on, as `engine.fast.denoise_runner(runner, fast, **options)`
        picks it: "off" the eager runner; "on" the fixed-shape `StaticRunner`, `options` going to it (compile,
        compile_mode, capacity, width_buckets); "auto" the fixed-shape path, compiled, on CUDA only."""
        self.loop.runner = denoise_runner(self.runner, fast, **options)

    def encode_ids(self, prompt_ids: list[int]) -> None:
        """Encode a prompt of token ids into a fresh cache (no prefix cache): the encoder prefill, to time."""
        self.runner.encode(prompt_ids)

    def decoder_forward(self, prompt_ids: list[int], canvas_width: int):
        """A function of no arguments that runs one decoder forward of the loop's runner over a canvas of
        `canvas_width` after the encoded prompt (self-conditioning on), to time. It has run 3 times already, so a
        compiled runner has compiled and captured its graph."""
        return speed.decoder_forward(self.loop.runner, prompt_ids, canvas_width)

    def fixed_step_fill(self, prompt_ids: list[int], steps: int, canvas_width: int | None = None,
                        temperature: float = 0.8, seed: int = 0) -> dict:
        """Encode the token ids, then denoise a pad-fill canvas of `canvas_width` (default: the model's) with no
        suffix for exactly `steps` steps, no early stop, on the loop's runner. Returns {"prefill_ms",
        "denoise_ms", "steps"}, device-synchronised."""
        return speed.fixed_step_fill(self.loop, prompt_ids, steps, canvas_width or self.canvas_length, temperature,
                                     seed)

    def greedy_ids(self, prompt_ids: list[int], max_new_tokens: int, fixed_shape: bool = False,
                   compile: bool = False, compile_mode: str = "reduce-overhead") -> dict:
        """`max_new_tokens` greedy tokens after the token ids through the encoder (the AR baseline's path, eager on
        a DynamicCache; or `fixed_shape`: `FixedAutoregressor`, compiled if asked, timed after a short untimed
        run). Returns {"prefill_ms", "decode_ms"}, device-synchronised."""
        return speed.greedy(self.runner, prompt_ids, max_new_tokens, fixed_shape, compile, compile_mode)
