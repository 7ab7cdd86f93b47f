"""The training run: corpus and tokenizer preparation, model, optimisation loop, checkpoints.

A run directory holds `options.json`, `tokenizer/`, `corpus.npz`, `ckpt.pt` (atomic
replace), `log.jsonl` (one line per log interval or evaluation). Batch `i` depends only on
(seed, i), so a resumed run continues the same data stream.
"""

from __future__ import annotations

import json
import math
import os
import signal
import sys
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch

from ..engine.modelgen import make_config, train_tokenizer
from .canvas import CanvasSampler
from .corpus import collect_files, newline_table, stdlib_dir, tokenize_files
from .evaluate import heldout_loss, line_infill
from .export import export_model, write_json
from .objective import training_loss


def _save_tokens(path: Path, arrays: list[np.ndarray]) -> dict[str, np.ndarray]:
    offsets = np.cumsum([0] + [len(a) for a in arrays])
    flat = np.concatenate(arrays) if arrays else np.zeros(0, np.int32)
    return {f"{path}_tokens": flat, f"{path}_offsets": offsets}


def _load_tokens(npz, name: str) -> list[np.ndarray]:
    flat, offsets = npz[f"{name}_tokens"], npz[f"{name}_offsets"]
    return [flat[offsets[i]:offsets[i + 1]] for i in range(len(offsets) - 1)]


class Trainer:
    def __init__(self, opts):
        self.dir = Path(opts.out)
        self.dir.mkdir(parents=True, exist_ok=True)
        ckpt = self.dir / "ckpt.pt"
        resuming = opts.resume and ckpt.is_file()
        self.init_from = Path(opts.init_from) if opts.init_from and not resuming else None
        prior: dict = {}  # the export's train_state.json, when starting from one
        if self.init_from is not None:
            saved = self.init_from / "train_state.json"
            prior = json.loads(saved.read_text(encoding="utf-8")) if saved.is_file() else {}
            opts = self._options_of_export(opts, self.init_from, prior.get("options", {}))
        self.opts = opts
        torch.set_num_threads(opts.threads)
        self.tokenizer, train, heldout, corpus_info = self._prepare_corpus()
        self.model = self._build_model()
        V = self.model.config.text_config.vocab_size
        assert opts.canvas_length * opts.n_canvases < self.model.config.text_config.sliding_window, \
            "the sliding-window cache would truncate the training window"
        newline = newline_table(self.tokenizer, V)
        common = dict(canvas_length=opts.canvas_length, n_canvases=opts.n_canvases, suffix_head=opts.suffix_head,
                      noise_kind=opts.noise)
        self.sampler = CanvasSampler(train, newline, V, seed=opts.seed, **common)
        self.heldout = CanvasSampler(heldout or train, newline, V, seed=opts.seed + 1, **common)
        decay = [p for n, p in self.model.named_parameters() if p.ndim >= 2]
        no_decay = [p for n, p in self.model.named_parameters() if p.ndim < 2]
        self.optim = torch.optim.AdamW([{"params": decay, "weight_decay": opts.weight_decay},
                                        {"params": no_decay, "weight_decay": 0.0}], lr=opts.lr, betas=(0.9, 0.95))
        # warmup_from: the step the learning-rate warmup counts from (a run from an export warms up anew)
        self.state = {"step": 0, "elapsed_s": 0.0, "diff_tokens": 0, "ar_tokens": 0, "corpus": corpus_info,
                      "last_eval": {}, "throughput": {}, "warmup_from": 0}
        if self.init_from is not None:  # counters carry on; the optimiser starts fresh (warmup runs again)
            self.state.update({k: v for k, v in prior.get("state", {}).items() if v is not None and k != "last_eval"})
            self.state["init_from"] = str(self.init_from)
            self.state["warmup_from"] = self.state["step"]
        if resuming:
            blob = torch.load(ckpt, map_location="cpu", weights_only=False)
            self.model.load_state_dict(blob["model"])
            self.optim.load_state_dict(blob["optim"])
            self.state.update(blob["state"])
            self.state["corpus"] = corpus_info
        self._stop = False

    # -- preparation -------------------------------------------------------------------------
    @staticmethod
    def _options_of_export(opts, model_dir: Path, prior: dict):
        """A run that starts from an export takes its architecture and objective from it (and from the run
        options saved beside it, `prior`)."""
        from dataclasses import replace

        from transformers import AutoConfig

        from ..engine.spec import InfillSpec

        if not (model_dir / "config.json").is_file():
            raise SystemExit(f"--init-from {model_dir}: no config.json there (not an exported model)")
        cfg = AutoConfig.from_pretrained(str(model_dir))
        tc = cfg.get_text_config(decoder=True)
        spec = InfillSpec.load(model_dir)
        keep = {k: prior[k] for k in ("n_canvases", "batch_size", "self_cond_prob", "vocab_size", "weight_decay")
                if k in prior}
        return replace(opts, **keep, noise=spec.noise_kind, canvas_length=cfg.canvas_length,
                       suffix_head=spec.suffix_head_tokens, hidden_size=tc.hidden_size,
                       num_layers=tc.num_hidden_layers, num_heads=tc.num_attention_heads,
                       num_kv_heads=tc.num_key_value_heads, head_dim=tc.head_dim,
                       intermediate_size=tc.intermediate_size, num_experts=tc.num_experts,
                       top_k_experts=tc.top_k_experts, moe_intermediate_size=tc.moe_intermediate_size)

    def _prepare_corpus(self):
        from transformers import AutoTokenizer

        tok_dir, cache = self.dir / "tokenizer", self.dir / "corpus.npz"
        if not (tok_dir.is_dir() and cache.is_file()):
            files = collect_files(self.opts.extra_dirs, use_stdlib=not self.opts.no_stdlib)
            train_texts = [f.text for f in files if not f.held_out]
            if self.init_from is not None:  # the export's own tokenizer, so its weights keep their meaning
                AutoTokenizer.from_pretrained(str(self.init_from)).save_pretrained(str(tok_dir))
            else:
                train_tokenizer(train_texts, self.opts.vocab_size, tok_dir)
            tok = AutoTokenizer.from_pretrained(str(tok_dir))
            train = tokenize_files(tok, train_texts)
            heldout = tokenize_files(tok, [f.text for f in files if f.held_out])
            np.savez(cache, **_save_tokens("train", train), **_save_tokens("heldout", heldout))
            write_json(self.dir / "files.json", {"train": [f.path for f in files if not f.held_out],
                                                 "heldout": [f.path for f in files if f.held_out]})
        tok = AutoTokenizer.from_pretrained(str(tok_dir))
        with np.load(cache) as npz:
            train, heldout = _load_tokens(npz, "train"), _load_tokens(npz, "heldout")
        info = {"stdlib": "none" if self.opts.no_stdlib else str(stdlib_dir()),
                "train_files": len(train), "train_tokens": int(sum(map(len, train))),
                "heldout_files": len(heldout), "heldout_tokens": int(sum(map(len, heldout)))}
        return tok, train, heldout, info

    def _build_model(self):
        from transformers import DiffusionGemmaForBlockDiffusion

        o = self.opts
        if self.init_from is not None:
            return DiffusionGemmaForBlockDiffusion.from_pretrained(str(self.init_from), dtype=torch.float32)
        # Three spare ids on top of the tokenizer's: make_config parks the image tokens there.
        cfg = make_config(len(self.tokenizer) + 3, hidden_size=o.hidden_size, num_layers=o.num_layers,
                          num_heads=o.num_heads, num_kv_heads=o.num_kv_heads, head_dim=o.head_dim,
                          intermediate_size=o.intermediate_size, num_experts=o.num_experts,
                          top_k_experts=o.top_k_experts, moe_intermediate_size=o.moe_intermediate_size,
                          canvas_length=o.canvas_length)
        torch.manual_seed(o.seed)
        return DiffusionGemmaForBlockDiffusion(cfg)

    # -- loop --------------------------------------------------------------------------------
    def _lr(self, step: int) -> float:
        """Linear warmup, constant, then (with --cooldown-steps) a linear decay to 10% ending at --steps."""
        o = self.opts
        lr = o.lr * min(1.0, (step - self.state["warmup_from"] + 1) / max(1, o.warmup))
        if o.cooldown_steps > 0:
            lr *= max(0.1, min(1.0, (o.steps - step) / o.cooldown_steps))
        return lr

    def save(self) -> None:
        blob = {"model": self.model.state_dict(), "optim": self.optim.state_dict(), "state": self.state,
                "options": asdict(self.opts)}
        tmp = self.dir / "ckpt.pt.tmp"
        torch.save(blob, tmp)
        os.replace(tmp, self.dir / "ckpt.pt")

    def log(self, record: dict) -> None:
        with open(self.dir / "log.jsonl", "a", encoding="utf-8") as fh:
            fh.write(json.dumps(record) + "\n")

    def evaluate(self) -> dict:
        self.model.eval()
        bs = min(8, self.opts.batch_size)
        metrics = heldout_loss(self.model, self.heldout, self.opts.eval_batches, bs)
        metrics.update(line_infill(self.model, self.heldout, self.opts.eval_batches, bs))
        self.model.train()
        self.state["last_eval"] = {"step": self.state["step"], **metrics}
        self.log({"eval": True, **self.state["last_eval"]})
        return metrics

    def _on_signal(self, signum, frame):
        print(f"signal {signum}: stopping after this step and saving a checkpoint", file=sys.stderr, flush=True)
        self._stop = True

    def run(self) -> dict:
        from tqdm import tqdm

        o, st = self.opts, self.state
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)
        start, last_ckpt = time.time(), time.time()
        budget = o.minutes * 60 if o.minutes > 0 else math.inf
        if st["step"] < o.steps:  # export-only and compare calls leave the run's saved options alone
            write_json(self.dir / "options.json", asdict(o))
        self.model.train()
        bar = tqdm(total=o.steps, initial=min(st["step"], o.steps), disable=not o.progress, file=sys.stderr,
                   dynamic_ncols=True)
        win = {"t": time.time(), "diff": 0, "ar": 0, "loss": [], "diff_loss": [], "ar_loss": []}
        trained = 0
        while st["step"] < o.steps and time.time() - start < budget and not self._stop:
            step = st["step"]
            for g in self.optim.param_groups:
                g["lr"] = self._lr(step)
            batch = self.sampler.batch(step, o.batch_size)
            gen = torch.Generator().manual_seed(o.seed * 1_000_003 + step)
            t0 = time.time()
            loss, stats = training_loss(self.model, batch, o.canvas_length, gen, o.self_cond_prob, o.pad_weight)
            self.optim.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
            self.optim.step()
            st["step"] += 1
            st["elapsed_s"] += time.time() - t0
            st["diff_tokens"] += stats["diff_tokens"]
            st["ar_tokens"] += stats["ar_tokens"]
            trained += 1
            win["diff"] += stats["diff_tokens"]; win["ar"] += stats["ar_tokens"]
            win["loss"].append(loss.item()); win["diff_loss"].append(stats["diff_loss"])
            win["ar_loss"].append(stats["ar_loss"])
            bar.update(1)
            bar.set_postfix(diff=f"{stats['diff_loss']:.3f}", ar=f"{stats['ar_loss']:.3f}")
            if st["step"] % o.log_every == 0:
                dt = time.time() - win["t"]
                st["throughput"] = {"diff_tok_s": round(win["diff"] / dt, 1), "ar_tok_s": round(win["ar"] / dt, 1),
                                    "s_per_step": round(dt / len(win["loss"]), 3)}
                self.log({"step": st["step"], "loss": float(np.mean(win["loss"])),
                          "diff_loss": float(np.mean(win["diff_loss"])), "ar_loss": float(np.mean(win["ar_loss"])),
                          "lr": self._lr(step), **st["throughput"], "time": time.time()})
                win = {"t": time.time(), "diff": 0, "ar": 0, "loss": [], "diff_loss": [], "ar_loss": []}
            if o.eval_every and st["step"] % o.eval_every == 0:
                self.evaluate()
            if time.time() - last_ckpt > o.ckpt_minutes * 60:
                self.save()
                last_ckpt = time.time()
        bar.close()
        if trained:
            self.save()
        if o.export:
            if not st["last_eval"] or st["last_eval"].get("step") != st["step"]:
                self.evaluate()
                if trained:  # an export-only call must not race a run that is training in this directory
                    self.save()
            export_model(self.model, self.tokenizer, o, st, o.export, self.dir)
        return {"step": st["step"], "trained_steps": trained, "elapsed_s": round(st["elapsed_s"], 1),
                "diff_tokens": st["diff_tokens"], "ar_tokens": st["ar_tokens"], "throughput": st["throughput"],
                "last_eval": st["last_eval"], "out": str(self.dir), "export": o.export or None}
