"""dtype `int8` on CPU: the adapted Gemma's decoder passes with int8 weights; the base model stays float32.

On a 2-core CPU a pass of the 270M model over a few tokens streams its weights once and costs about that: a float32
pass of one token was ~55 ms here, 73% of it in `aten::mm`. Weights held in int8 are a quarter of the bytes. Each
weight matrix gets one symmetric scale per output row (max |w| / 127, so 0 stays exact) and runs through torch's
quantized CPU linear (fbgemm `quantized::linear_dynamic`), which quantizes each input to 8 bits on the fly (one
scale per call, 7-bit range: without it AVX2's 16-bit pair sums saturate) and accumulates in int32; float32 out.
Measured on an AVX2 machine without bfloat16, 40 linears 640 x 2048: 15.2 ms in float32 against 4.7 ms for one row,
40.5 against 12.3 for 16 rows, 169 against 80 for 111 rows.

Where it applies: only the decoder's passes (`LoRALinear.pack_int8`: the merged copy of each adapted weight, and the
decoder's restricted output head, `Gemma3Runner.use_int8`). The encoder, the AR-verified walk's base passes, the
suggested alternatives and the AR twin read the float32 weights, unchanged. That split is measured, not a guess
(docs/results/int8.md): with every linear in int8 the base model's next-token choice agreed with float32's on only
70% of HumanEval positions (one input scale per call cannot follow Gemma's outlier channels), and HumanEval
single-line pass@1 fell from 44% to 29%; with the decoder alone in int8, 92 of 100 answers stayed the same
(pass@1 44% to 43%) at 0.87x the latency, and on held-out holes 84 of 100 (ES 48.2 to 46.3) at 0.92x. The
decoder only drafts and has its say at the walk's first slot and at the hole's end; the base model checks every
other token.

The kernels are torch's quantized CPU backend, which torch marks deprecated (a warning when a quantized tensor is
made, which `Int8Linear` silences). `unavailable()` says why int8 cannot run in a torch build; the loader refuses
the dtype with that reason. Not chosen by `auto`: it trades a little quality for speed, so a user asks for it.
"""

from __future__ import annotations

import warnings

import torch


def unavailable() -> str | None:
    """Why int8 cannot run in this torch, or None when it can."""
    ops = getattr(torch.ops, "quantized", None)
    try:
        ops.linear_dynamic, ops.linear_prepack  # noqa: B018 - resolving the ops is the check
    except (AttributeError, RuntimeError):
        return "this torch build has no quantized CPU linear (quantized::linear_dynamic)"
    engines = set(torch.backends.quantized.supported_engines)
    if not engines & {"fbgemm", "x86", "onednn"}:
        return f"no x86 quantized engine in this torch (it has: {', '.join(sorted(engines)) or 'none'})"
    return None


class Int8Linear:
    """`x @ weight^T` with `weight` [out, in] held in int8, one scale per output row; float32 out."""

    def __init__(self, weight: torch.Tensor):
        w = weight.detach().float().cpu()
        scale = (w.abs().amax(dim=1) / 127.0).clamp(min=1e-12)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch's deprecation notice for quantized tensors
            q = torch.quantize_per_channel(w, scale.double(), torch.zeros(w.shape[0], dtype=torch.long), 0,
                                           torch.qint8)
            self.packed = torch.ops.quantized.linear_prepack(q, None)
        self.out_features, self.in_features = w.shape

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        flat = x.reshape(-1, x.shape[-1]).float().contiguous()
        out = torch.ops.quantized.linear_dynamic(flat, self.packed, True)  # reduce_range: fbgemm's safe mode
        return out.view(*x.shape[:-1], self.out_features)
