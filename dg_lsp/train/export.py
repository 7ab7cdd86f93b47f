"""Write a loadable model directory: safetensors weights, tokenizer, configs, dg_lsp.json, MODEL.md."""

from __future__ import annotations

import json
import os
import platform
import shutil
import sys
from pathlib import Path

import torch

from ..engine.modelgen import MASK_ID
from ..engine.spec import InfillSpec
from .corpus import HELD_OUT_PACKAGES


def export_model(model, tokenizer, opts, state: dict, out_dir: str | Path, run_dir: str | Path) -> Path:
    out = Path(out_dir)
    if out.exists():
        for child in out.iterdir():  # keep the directory itself (it may be a package data dir)
            shutil.rmtree(child) if child.is_dir() else child.unlink()
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(out), safe_serialization=True)
    tokenizer.save_pretrained(str(out))
    InfillSpec(noise_kind=opts.noise, mask_token_id=MASK_ID if opts.noise == "mask" else None, pad_fill=True,
               suffix_head_tokens=opts.suffix_head, add_bos=True,
               # Canvas b of a training window sits after b * L clean tokens: longer prompts were never seen.
               max_prompt_tokens=(opts.n_canvases - 1) * opts.canvas_length).save(out)
    (out / "MODEL.md").write_text(model_card(model, opts, state, out, Path(run_dir)), encoding="utf-8")
    # What `--init-from` needs to continue from this export when the run directory is gone.
    write_json(out / "train_state.json", {"options": dict(vars(opts)),
                                          "state": {k: state.get(k) for k in ("step", "elapsed_s", "diff_tokens",
                                                                              "ar_tokens", "last_eval")}})
    return out


def _fmt_metrics(metrics: dict) -> str:
    if not metrics:
        return "(none recorded)"
    return "\n".join(f"- {k}: {v:.4f}" if isinstance(v, float) else f"- {k}: {v}" for k, v in metrics.items())


def model_card(model, opts, state: dict, out: Path, run_dir: Path) -> str:
    text_params = sum(p.numel() for n, p in model.named_parameters() if "vision" not in n)
    all_params = sum(p.numel() for p in model.parameters())
    size_mb = sum(f.stat().st_size for f in out.glob("*.safetensors")) / 1e6
    notes_path = run_dir / "card_notes.md"
    notes = notes_path.read_text(encoding="utf-8") if notes_path.is_file() else ""
    corpus = state.get("corpus", {})
    tc = model.config.text_config
    hours = state.get("elapsed_s", 0.0) / 3600
    return f"""# dg-lsp default model

A small DiffusionGemma (`DiffusionGemmaForBlockDiffusion`, transformers {_tf_version()}) trained from scratch
for Python code infill by `python -m dg_lsp.train` (package `dg_lsp.train`).

{notes}
## Size
- parameters: {all_params / 1e6:.2f}M in all, {text_params / 1e6:.2f}M in the text part (the rest is the
  minimal vision tower the architecture always builds); weights {size_mb:.1f} MB (float32 safetensors)
- text part: {tc.num_hidden_layers} layers, hidden {tc.hidden_size}, {tc.num_attention_heads} heads
  ({tc.num_key_value_heads} KV), head dim {tc.head_dim}, dense MLP {tc.intermediate_size}, MoE {tc.num_experts}
  experts top-{tc.top_k_experts} (expert width {tc.moe_intermediate_size}), vocabulary {tc.vocab_size}
  (byte-level BPE, {opts.vocab_size} target; the top 3 ids are unused image-token slots)
- canvas length {model.config.canvas_length}; pinned suffix head at most {opts.suffix_head} tokens

## Data and licence
- the Python {platform.python_version()} standard library ({corpus.get('stdlib', '?')}), all `.py` files
  except tests, site-packages and files over 400 kB, deduplicated by content hash
  {('plus ' + ', '.join(opts.extra_dirs)) if opts.extra_dirs else ''}
- files: {corpus.get('train_files', '?')} train ({corpus.get('train_tokens', '?')} tokens),
  {corpus.get('heldout_files', '?')} held out ({corpus.get('heldout_tokens', '?')} tokens)
- held-out stdlib packages, never trained on (nor used for the tokenizer): {', '.join(HELD_OUT_PACKAGES)}
- training data licence: Python Software Foundation License (the CPython standard library).
  The weights are distributed with dg-lsp.

## Recipe (the canvas: docs/ARCHITECTURE.md, section 3)
- windows of {opts.canvas_length * opts.n_canvases} tokens (`<bos>` + file tokens), encoded clean by the encoder
  (next-token cross-entropy, weight 1.0: the same weights run autoregressively);
  {opts.n_canvases} canvases of {opts.canvas_length} tokens per window, decoded in one pass under a 4D mask
  (canvas j sees the clean cache before its start and its own canvas)
- canvases: continuation (20%), whole lines from column 0 (35%, 30% of them 2-4 lines), rest of line
  (20%, with or without the newline), random spans (15%), multi-line from mid-line (10%);
  infill canvas = `[middle][<pad> x (k-m)][suffix head h]`, h = min(suffix, {opts.suffix_head}), k = L - h,
  suffix head pinned clean and unsupervised, pads supervised (pad-fill)
- noise: `{opts.noise}` (t ~ U(0.001, 1) per canvas; each supervised position replaced with probability t
  {'by `<mask>` (id 3)' if opts.noise == 'mask' else 'by a uniformly random token'});
  cross-entropy over all supervised positions (pad targets weighted {opts.pad_weight}); self-conditioning with
  p = 0.5 per window
- AdamW lr {opts.lr}, warmup {opts.warmup} steps, weight decay {opts.weight_decay}, grad clip 1.0,
  batch {opts.batch_size} windows, seed {opts.seed}

## Training run
- steps: {state.get('step', 0)}; wall time {hours:.2f} h
- supervised tokens: {state.get('diff_tokens', 0):,} diffusion + {state.get('ar_tokens', 0):,} next-token
- throughput (last logged): {state.get('throughput', {})}
- machine: {platform.machine()}, {os.cpu_count()} CPU cores (shared), torch {torch.__version__},
  Python {sys.version.split()[0]}

## Held-out metrics (latest evaluation, held-out packages)
{_fmt_metrics(state.get('last_eval', {}))}

Metric definitions: `heldout_diff_loss` diffusion cross-entropy at t ~ U(0.001, 1) without
self-conditioning; `heldout_ar_loss` encoder next-token cross-entropy; `line_acc_t1` one-step argmax
accuracy on the middle tokens of single whole-line holes from a fully noised canvas; `pad_acc_t1`
the same on the pad tail; `line_acc_8steps`/`pad_acc_8steps` the same after 8 confidence-ordered denoising
steps (self-conditioning on); `line_em_8steps` exact match of the whole hole after those steps.
"""


def _tf_version() -> str:
    import transformers
    return transformers.__version__


def write_json(path: Path, obj) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(obj, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)
