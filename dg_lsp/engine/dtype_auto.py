"""dtype `auto` on CPU (issue 15.3): bfloat16 only where this CPU runs it faster and the model's outputs agree.

Two stages, at warm-up, on the engine's worker thread (no request runs meanwhile):
1. `matmul_probe`: a [64 x 640] x [640 x 2048] product (a decoder row block of a small Gemma) in float32 and in
   bfloat16, median of 5. A CPU without native bf16 (no AMX / avx512_bf16: it is emulated) is 3-40x slower in
   bf16, and the model stays in float32 with no further cost. Only if bfloat16 is at least `PROBE_MARGIN` times
   faster does stage 2 run.
2. `trial`: the model itself. One decoder step of a calibration canvas in float32 (reference logits, median time
   of 3), the weights cast to bfloat16 (a float32 copy kept aside), the same step again. bfloat16 is kept when
   its step is at least `STEP_MARGIN` times faster AND its greedy choice agrees with float32's on at least
   `AGREE` of the canvas rows; otherwise the float32 weights are put back exactly.

`Engine.status()["dtypeChoice"]` reports the figures and the reason.
"""

from __future__ import annotations

import statistics
import time

import torch

PROBE_MARGIN = 1.2
STEP_MARGIN = 1.1
AGREE = 0.9


def median_ms(fn, reps: int, warm: bool = True) -> float:
    """Median wall time of `reps` calls of `fn`, in ms (after one untimed call when `warm`)."""
    if warm:
        fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000.0)
    return statistics.median(times)


def matmul_probe(reps: int = 5) -> dict:
    gen = torch.Generator().manual_seed(0)
    a, w = torch.randn(64, 640, generator=gen), torch.randn(2048, 640, generator=gen)
    out = {}
    for dt in (torch.float32, torch.bfloat16):
        x, y = a.to(dt), w.to(dt)
        out[str(dt).replace("torch.", "") + "_ms"] = median_ms(lambda: torch.nn.functional.linear(x, y), reps)
    out["bfloat16_speedup"] = out["float32_ms"] / max(out["bfloat16_ms"], 1e-9)
    return out


def _step(engine, reps: int = 3):
    """(logits of one decoder step on the warm-up canvas, median ms of the step, its hole rows [L])."""
    from .types import InfillRequest

    prompt, canvas, _ = engine.prepare(InfillRequest(prefix="def mean(values):\n    total = 0\n    return ",
                                                     suffix="\n"))
    runner = engine.runner
    cache, _ = runner.encode(prompt)
    ids, pos = canvas.canvas_ids.to(runner.device), canvas.position_ids()
    logits = runner.decode(ids, cache, pos, None, None).float()
    return logits, median_ms(lambda: runner.decode(ids, cache, pos, None, None), reps), canvas.hole_mask[0]


@torch.inference_mode()
def choose(engine) -> dict:
    """Settle an `auto` CPU engine's dtype (the model loads in float32). Returns the record for status()."""
    probe = matmul_probe()
    record = {"asked": "auto", "probe": probe, "chosen": "float32"}
    if probe["bfloat16_speedup"] < PROBE_MARGIN:
        record["reason"] = (f"bfloat16 matmul {probe['bfloat16_ms']:.1f} ms vs float32 {probe['float32_ms']:.1f} ms "
                            f"on this CPU: not {PROBE_MARGIN}x faster")
        return record
    record.update(trial(engine))
    return record


def trial(engine) -> dict:
    runner = engine.runner
    ref, f32_ms, hole = _step(engine)
    saved = {k: v.detach().clone() for k, v in runner.model.state_dict().items()}
    runner.set_dtype(torch.bfloat16)
    engine.prefix_cache.clear()
    low, bf16_ms, _ = _step(engine)
    agree = float((ref.argmax(-1) == low.argmax(-1))[0, hole.to(ref.device)].float().mean())
    out = {"step_ms_float32": f32_ms, "step_ms_bfloat16": bf16_ms, "greedy_agreement": agree}
    if bf16_ms * STEP_MARGIN <= f32_ms and agree >= AGREE:
        out.update(chosen="bfloat16", reason=f"decoder step {bf16_ms:.0f} ms vs {f32_ms:.0f} ms, greedy agreement "
                                             f"{100 * agree:.0f}%")
        return out
    runner.set_dtype(torch.float32)
    runner.model.load_state_dict(saved)
    runner.refresh()
    engine.prefix_cache.clear()
    out.update(chosen="float32", reason=f"bfloat16 step {bf16_ms:.0f} ms vs {f32_ms:.0f} ms, greedy agreement "
                                        f"{100 * agree:.0f}% (needs {STEP_MARGIN}x and {100 * AGREE:.0f}%)")
    return out
