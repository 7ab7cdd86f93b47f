"""Prepacked float32 weights on CPU: the same products, through oneDNN's blocked weight layout.

A pass of the 270M trunk over a few tokens is mostly its linears (`aten::mm`, 73-82% of a pass). torch's plain CPU
`linear` is fast for one row (a matrix-vector product that streams each weight once) but, for 2 to ~12 rows, costs
almost twice as much as for one: the AR-verified walk's base passes (2-10 tokens) and its decoder passes (25-41
rows) sit exactly there. oneDNN's linear with the weight reordered once into its blocked layout
(`torch.ops.mkldnn._reorder_linear_weight`, then `torch.ops.mkldnn._linear_pointwise`, the kernels torch's own
compiler uses for frozen CPU linears) streams the weight once for all rows. Measured here (AMD EPYC, AVX2, one
thread), 80 linears 2048 x 640 whose weights do not fit in cache, ms per sweep
(`python -m dg_lsp.bench.diagnostics.packed_kernels`, docs/results/packed-kernels.json):

| rows | 1 | 2 | 3 | 5 | 8 | 12 | 25 | 48 | 64 | 96 | 128 | 200 |
|---|---|---|---|---|---|---|---|---|---|---|---|---|
| `linear` | 29.5 | 52.3 | 62.6 | 64.9 | 65.4 | 76.4 | 115.4 | 169.0 | 200.3 | 263.1 | 366.2 | 528.6 |
| packed | 25.8 | 30.8 | 33.8 | 39.7 | 47.7 | 63.0 | 93.3 | 152.0 | 197.3 | 279.1 | 359.6 | 545.7 |

`DG_LSP_PACKED` (environment):
- `off`, the default in float32: the plain weights.
- `all`: the decoder's merged weights (`LoRALinear.merge`) packed in place of their plain copy, a packed copy of the
  base weights for the base model's passes of at most `MAX_ROWS` rows for the dtype (the walk's verification, the
  alternatives' branches and scored lines, the AR twin's tokens; in float32 a prompt's encoding keeps the plain
  weights, in bfloat16 one of up to 320 tokens takes the packed ones), and a packed restricted output head.
  On HumanEval single-line the diffusion requests took 0.914x the time, with the same answers. But the base weights
  then exist twice: resident memory grew by about 0.5 GB at warm-up and about 1.1 GB over a few hundred requests
  (docs/results/packed-weights.md). So in float32 it is asked for, not the default.
- `auto`, the default in bfloat16: `all` where warm-up timing shows it faster (`choose`).
In bfloat16 (dtype `auto` on a CPU with AMX, engine/dtype_auto.py) the same packing pays more and costs less
(docs/results/riding-passes.md, session 30, Xeon with AMX, one thread): 80 linears 2048 x 640 took 18.3-18.8 ms
packed against 23.5-26.4 plain for 1 to 10 rows (0.72-0.78x), 23.0 against 27.9 for 25; on HumanEval single-line
a diffusion request took 0.83x the time and the AR twin's 0.95x, every answer the same; the packed base weights add
about 210 MB (the trunk's 100M weights in bfloat16). The head stays plain in bfloat16 (`Gemma3Runner._build_head`).
Packing the decoder's weights alone adds no memory, but measured nothing (0.994x on the same 300 tasks), so it is
not offered (`Gemma3Runner.use_packed(True)` without `base` still does it, for measurements).
The results are the same products summed in another order: float32 rounding apart (a relative difference of about
1e-6), the same numbers. Whether packing pays is measured on the engine's own passes at warm-up (`choose`), as
dtype `auto` is (engine/dtype_auto.py), because it depends on the CPU; `Engine.status()["packing"]` reports it.

Only for float32 and bfloat16 weights on the CPU, without autograd (training runs the plain weights, so gradients
flow).
"""

from __future__ import annotations

import os
import statistics

import torch

from ..dtype_auto import median_ms

# a pass of more rows than this takes the plain weight: float32, packed is no faster there (table above); bfloat16
# (Xeon with AMX, one thread, 126 linears of the trunk's shapes, ms a sweep, the row count new to oneDNN each time /
# seen before): plain against packed 49.0 / 36.9 at 70 rows, 64.2 / 52.4 at 150, 79.7 / 73.1 at 256, 101.5 / 91.4
# at 320, 143.6 / 144.0 at 400 and 181.9 / 210.5 at 700 (docs/results/request-time-s32.md)
MAX_ROWS = {torch.float32: 64, torch.bfloat16: 320}
STEP_MARGIN = 1.05  # packed is kept when the calibration passes are at least this much faster
AGREE = 1.0  # ... and the greedy choice agrees with float32's plain product on this share of the canvas rows
SETTING = "DG_LSP_PACKED"  # off (float32's default); all; auto (bfloat16's): all, where warm-up timing shows it faster
CHOICES = ("off", "all", "auto")
ROUNDS = 5  # interleaved timing rounds of `choose` (plain, then packed, each round)


def unavailable() -> str | None:
    """Why packed weights cannot be used in this torch, or None when they can."""
    ops = getattr(torch.ops, "mkldnn", None)
    try:
        ops._reorder_linear_weight, ops._linear_pointwise  # noqa: B018 - resolving the ops is the check
    except (AttributeError, RuntimeError):
        return "this torch build has no oneDNN linear (mkldnn._linear_pointwise)"
    if not torch.backends.mkldnn.is_available():
        return "oneDNN is not available in this torch build"
    return None


def wanted(dtype: torch.dtype = torch.float32) -> str:
    """The `DG_LSP_PACKED` setting (CHOICES); unset, `auto` for a bfloat16 model and `off` for a float32 one."""
    default = "auto" if dtype == torch.bfloat16 else "off"
    value = os.environ.get(SETTING, default).strip().lower() or default
    if value not in CHOICES:
        raise ValueError(f"{SETTING}={value!r}: expected {', '.join(CHOICES)}")
    return value


DTYPES = (torch.float32, torch.bfloat16)


class PackedWeight:
    """A float32 or bfloat16 CPU weight [out, in] reordered for oneDNN's linear; calling it on an input of its dtype
    is `linear(x, weight, bias)`."""

    def __init__(self, weight: torch.Tensor):
        w = weight.detach()
        if w.dtype not in DTYPES or w.device.type != "cpu":
            raise ValueError(f"packed weights are float32 or bfloat16 on the CPU, not {w.dtype} on {w.device}")
        self.packed = torch.ops.mkldnn._reorder_linear_weight(w.contiguous(), None)
        self.dtype = w.dtype
        self.out_features, self.in_features = w.shape

    def __call__(self, x: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
        return torch.ops.mkldnn._linear_pointwise(x.contiguous(), self.packed, bias, "none", [], "")


def fits(x: torch.Tensor, dtype: torch.dtype = torch.float32) -> bool:
    """Whether a packed weight of `dtype` serves input `x` [..., in]: `dtype` on the CPU, no autograd, at most
    MAX_ROWS[dtype] rows."""
    return (x.dtype == dtype and x.device.type == "cpu" and not torch.is_grad_enabled()
            and x.numel() <= MAX_ROWS.get(dtype, 0) * x.shape[-1])


def _passes(engine):
    """A function of no arguments that runs one decoder pass and one base pass over the canvas's first 6 positions on
    the warm-up canvas, returning their logits side by side (the base pass's position 0, the lead's own row, left
    out), and the canvas's hole rows [6]."""
    from ..types import InfillRequest

    prompt, canvas, _ = engine.prepare(InfillRequest(prefix="def mean(values):\n    total = 0\n    return ",
                                                     suffix="\n"))
    runner = engine.runner
    cache, _ = runner.encode(prompt)
    ids, pos = canvas.canvas_ids.to(runner.device), canvas.position_ids()
    width = min(6, ids.shape[1])

    def both() -> torch.Tensor:
        dec, base = runner.decode(ids, cache, pos, None, None).float(), runner.verify(ids, cache, pos, width).float()
        return torch.cat([dec[:, :width], base[:, 1:]], dim=1)

    return both, canvas.hole_mask[0, :width]


@torch.inference_mode()
def choose(engine) -> dict:
    """Settle packed weights for a float32 or bfloat16 CPU engine whose runner can pack (`runner.use_packed`):
    `DG_LSP_PACKED` off (float32's default) or all decides; auto (bfloat16's default) packs all (keeping the plain
    merged weights meanwhile), then times the warm-up canvas's passes plain and packed, interleaved over ROUNDS
    rounds (a busy machine slows both alike), and keeps packing when the packed median is at least STEP_MARGIN times
    faster and the greedy choices agree (AGREE).
    Returns the record for status()."""
    runner = engine.runner
    try:
        asked = wanted(runner.model.dtype)
    except ValueError as exc:
        return {"asked": os.environ.get(SETTING), "chosen": "off", "reason": f"{exc}; left off"}
    record = {"asked": asked, "chosen": "off"}
    why = unavailable()
    if why is not None:
        record["reason"] = why
        return record
    if asked != "auto":
        if asked == "all":  # off: the runner is plain already
            runner.use_packed(True, base=True)
        default = " (the default)" if SETTING not in os.environ else ""
        record.update(chosen=asked, reason=f"{SETTING}={asked}{default}")
        return record
    both, hole = _passes(engine)
    state = runner.adapter.state
    runner.use_packed(True, keep_merged=True, base=True)
    plain, packed = [], []
    try:
        state.packed = False
        ref = both()
        state.packed = True
        got = both()
        for _ in range(ROUNDS):
            state.packed = False
            plain.append(median_ms(both, 1, warm=False))
            state.packed = True
            packed.append(median_ms(both, 1, warm=False))
    finally:
        state.packed = True
    plain_ms, packed_ms = statistics.median(plain), statistics.median(packed)
    rows = torch.cat([hole, hole[1:]]).to(ref.device)
    agree = float((ref.argmax(-1) == got.argmax(-1))[0, rows].float().mean())
    record.update(passes_ms_plain=plain_ms, passes_ms_packed=packed_ms, greedy_agreement=agree,
                  max_abs_diff=float((ref - got).abs().max()), rounds=ROUNDS)
    if packed_ms * STEP_MARGIN <= plain_ms and agree >= AGREE:
        runner.adapter.release_merged()
        record.update(chosen="all", reason=f"a decoder and a base pass {packed_ms:.0f} ms packed vs {plain_ms:.0f} ms "
                                          f"(medians of {ROUNDS} interleaved rounds)")
        return record
    runner.use_packed(False)
    record["reason"] = (f"packed passes {packed_ms:.0f} ms vs {plain_ms:.0f} ms (medians of {ROUNDS} interleaved "
                        f"rounds), greedy agreement {100 * agree:.0f}% (needs {STEP_MARGIN}x and {100 * AGREE:.0f}%)")
    return record
