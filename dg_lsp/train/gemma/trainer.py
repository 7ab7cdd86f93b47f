"""The adaptation training loop: frozen base encoder, LoRA decoder, checkpoints that survive stops."""

from __future__ import annotations

import json
import logging
import random
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from safetensors.torch import load_file, save_file

from ...engine.gemma3 import adapter as A
from ...engine.gemma3 import cache_view as C
from ...engine.gemma3.vocab import OutputVocab, byte_token_ids, choose
from . import data, objective
from .teachers import DRAFT_STATS, LOGGED_STATS, POE_STATS, TEACHER_STATS, Teachers

log = logging.getLogger(__name__)


@dataclass
class Options:
    base: str = ""  # a built base model directory (config.json, model.safetensors, tokenizer)
    out: str = "runs/gemma"
    minutes: float = 0.0
    resume: bool = False
    init_from: str = ""  # an exported adapter directory to start from
    export: str = ""
    seed: int = 0
    threads: int = 1
    rank: int = 32
    alpha: float = 64.0
    lr: float = 3e-4
    future_gate: float = -6.0  # the canvas gate's start (adapter.py): nearly causal, so the AR skill is the start
    gate_lr: float = 0.02  # its own rate: Adam moves a parameter about lr per step, and the gate must travel ~6
    no_gate: bool = False  # fully bidirectional from the start (the first session's adapter)
    # a separate, fixed gate on future <mask> keys (adapter.py's mask gate), e.g. -1e4: a row never reads the masks
    # to its right, so the canvas gate only decides how much of the suffix head it reads; "" : none
    mask_gate: str = ""
    # set the canvas gate to this bias after --init-from (e.g. -3, to open it from a shut start); "": keep
    reset_gate: str = ""
    # a trained end head (adapter.py): its own score on the pad's output column, the hole's end; zero at the start.
    # Its row learns at `end_lr`, its bias at `end_bias_lr` (a scalar that may have to travel several nats)
    end_head: bool = False
    end_lr: float = 1e-3
    end_bias_lr: float = 0.02
    # a fixed gate on the suffix head's keys (adapter.py's suffix gate), e.g. 0: read fully while the canvas gate
    # keeps the accepted slots to the right shut; "": none (the suffix head shares the canvas gate)
    suffix_gate: str = ""
    ltr_noise: float = 0.0  # share of canvases noised as left-to-right decoding sees them (objective.build)
    # weight of KL(base || decoder) on each canvas's first masked slot, whose left context is clean: there the base
    # model's next-token distribution is the right answer, so the decoder keeps the pretrained AR skill
    ar_distill: float = 0.0
    # weight of the cross-entropy of AR-verified decoding's own score, log p_base + poe_weight * log p_decoder
    # (engine/verified.py VerifiedWalk.run; the pad left out, as there), on the first masked slot of the canvases masked
    # left to right (a walk's first slot, the one place where the engine lets the decoder's weight count), unless
    # it is the hole's end: the decoder learns what to add to the base model's prediction there. 0: off
    poe: float = 0.0
    poe_weight: float = 1.0  # the decoder's weight in that score: the engine's default verifyWeight
    # weight of KL(base || decoder) on the masked slots right of the first one in the canvases masked left to right:
    # there the engine's drafts are made beside [MASK]s, and a verified step keeps a draft only where it is the base
    # model's argmax after the true left context, so the decoder learns the base model's prediction there. 0: off
    # (its figures, draft agreement included, are logged whenever the base model's pass runs)
    draft_distill: float = 0.0
    # with --draft-distill, the KL only on this many masked slots right of the first one (0: on all of them)
    draft_slots: int = 0
    warmup: int = 30
    holes_per_chunk: int = 16
    chunks_per_step: int = 1
    chunk_tokens: int = 256
    head_tokens: int = 8
    dtype: str = "float32"  # bfloat16 only where the CPU has native bf16 (AMX / avx512_bf16) or on a GPU
    device: str = "cpu"
    vocab_size: int = 32768
    ckpt_minutes: float = 5.0
    eval_minutes: float = 30.0
    eval_problems: int = 20
    eval_order: str = "left_to_right"  # the in-training eval's unmasking order (evaluate.greedy_infill)
    no_eval: bool = False  # no in-training eval (a machine without HumanEval's files, e.g. the lent GPU)
    corpus: str = ""  # a corpus file data.write_corpus wrote, instead of this machine's source trees (gpu.py)
    log_every: int = 10


class Run:
    def __init__(self, opts: Options):
        from transformers import AutoModelForCausalLM, AutoTokenizer

        torch.set_num_threads(opts.threads)
        self.opts = opts
        self.out = Path(opts.out)
        self.out.mkdir(parents=True, exist_ok=True)
        self.tok = AutoTokenizer.from_pretrained(opts.base, local_files_only=True)
        self.model = AutoModelForCausalLM.from_pretrained(opts.base, local_files_only=True, dtype=getattr(torch, opts.dtype),
                                                          attn_implementation="sdpa").to(opts.device)
        self.model.eval()
        if opts.device.startswith("cuda"):
            log.info("device %s, torch %s", torch.cuda.get_device_name(), torch.__version__)
        self.cfg = self.model.config
        self.mask_id = self.tok.convert_tokens_to_ids("<mask>")
        self.pad_id = self.tok.pad_token_id
        self.adapter = A.inject(self.model, opts.rank, opts.alpha, self.mask_id,
                                future_gate=None if opts.no_gate else opts.future_gate,
                                mask_gate=float(opts.mask_gate) if opts.mask_gate and not opts.no_gate else None,
                                end_head=opts.end_head,
                                suffix_gate=float(opts.suffix_gate) if opts.suffix_gate and not opts.no_gate else None)
        self.train_files = data.collect("train", opts.corpus or None)
        self.vocab = self._vocab()
        self.in_vocab = set(self.vocab.ids.tolist())
        self.pad_row = int(self.vocab.to_rows(torch.tensor([self.pad_id]))[0])  # the pad's output row
        self.teachers = Teachers(self.model, self.pad_row, opts.poe_weight, opts.draft_slots)
        self._byte = {b: tid for b, tid in enumerate(byte_token_ids(self.tok))}
        rows = Path(opts.base) / data.EMBED_ROWS  # a base built with part of its embedding (gpu.py): only those ids
        allowed = set(json.loads(rows.read_text())) if rows.is_file() else None
        self.maker = data.HoleMaker(self.tok, self.train_files, opts.chunk_tokens, head_tokens=opts.head_tokens,
                                    seed=opts.seed, allowed=allowed)
        self.rng = random.Random(opts.seed + 1)
        ad = self.adapter
        gate = [ad.future_bias] if ad.future_bias is not None else []
        end = [ad.end_row, ad.end_bias] if opts.end_head else []
        rest = [p for p in ad.parameters() if all(p is not g for g in gate + end)]
        groups = [{"params": rest, "base_lr": opts.lr}] + ([{"params": gate, "base_lr": opts.gate_lr}] if gate else [])
        groups += [{"params": [ad.end_row], "base_lr": opts.end_lr},
                   {"params": [ad.end_bias], "base_lr": opts.end_bias_lr}] if end else []
        self.opt = torch.optim.AdamW(groups, lr=opts.lr, weight_decay=0.0, betas=(0.9, 0.99))
        # cpu_seconds: this process's CPU time (the CPU runs' budget); gpu_seconds: wall time of steps on a GPU
        self.state = {"step": 0, "holes": 0, "scored_tokens": 0, "cpu_seconds": 0.0, "gpu_seconds": 0.0, "evals": []}
        if opts.resume and (self.out / "adapter.safetensors").is_file():
            self._load_checkpoint()
        elif opts.init_from:
            tensors = load_file(str(Path(opts.init_from) / "adapter.safetensors"))
            tensors.pop("vocab_ids", None)
            self.adapter.load_state_dict(tensors)
            prev = Path(opts.init_from) / "train_state.json"
            if prev.is_file():  # counters carry on, so the model card reports the whole training
                saved = json.loads(prev.read_text())
                self.state.update({k: saved[k] for k in ("step", "holes", "scored_tokens", "cpu_seconds", "gpu_seconds",
                                                         "evals")
                                   if k in saved})
            log.info("initialised from %s", opts.init_from)
            if opts.reset_gate and self.adapter.future_bias is not None:  # a new run only, never on --resume
                with torch.no_grad():
                    self.adapter.future_bias.fill_(float(opts.reset_gate))
                log.info("canvas gate set to %s", opts.reset_gate)
        self.layer_kinds = set(self.cfg.layer_types)

    # -- vocabulary ---------------------------------------------------------------------------
    def _vocab(self) -> OutputVocab:
        path = self.out / "vocab.json"
        init = Path(self.opts.init_from) / "adapter.safetensors" if self.opts.init_from else None
        init_ids = load_file(str(init)).get("vocab_ids") if init is not None and init.is_file() else None
        if path.is_file():
            ids = json.loads(path.read_text())["ids"]
        elif init_ids is not None:
            ids = init_ids.tolist()  # an exported adapter's own vocabulary
            path.write_text(json.dumps({"ids": ids, "from": str(init)}))
        else:
            rng = random.Random(0)
            sample = rng.sample([f.text for f in self.train_files], min(1200, len(self.train_files)))
            specials = (self.tok.pad_token_id, self.tok.eos_token_id, self.tok.bos_token_id)
            ids, cover = choose(self.tok, sample, self.opts.vocab_size, specials)
            path.write_text(json.dumps({"ids": ids, "train_coverage": cover}))
            log.info("output vocabulary: %d ids, %.4f of training tokens", len(ids), cover)
        return OutputVocab(ids, self.cfg.vocab_size)

    def byte_ids_of(self, tid: int) -> list[int]:
        return [self._byte[b] for b in self.tok.decode([tid]).encode("utf-8")]

    def remap(self, hole: data.Hole) -> data.Hole:
        hole.hole_ids = objective.to_vocab(hole.hole_ids, self.in_vocab, self.byte_ids_of)
        return hole

    # -- one step -----------------------------------------------------------------------------
    def chunk_loss(self) -> tuple[torch.Tensor | None, dict]:
        ids, holes = self.maker.holes(self.opts.holes_per_chunk)
        holes = [h for h in (self.remap(h) for h in holes) if len(h.hole_ids) <= objective.BUCKETS[-1] - 1]
        if not holes:
            return None, {}
        from transformers import DynamicCache

        with torch.no_grad():
            cache = DynamicCache(config=self.cfg)
            A.encoder_pass(self.model, torch.tensor([ids], device=self.opts.device), cache)
        ro = C.ReadOnlyCache.of(cache, batch=len(holes))
        batch = objective.build(holes, len(ids), self.layer_kinds, self.mask_id, self.pad_id, self.vocab.to_rows,
                                self.rng, ltr=self.opts.ltr_noise).to(self.opts.device)
        hidden = A.decoder_hidden(self.model, self.adapter, batch.ids, batch.positions, ro, batch.masks, batch.pinned)
        flat = hidden.reshape(-1, hidden.shape[-1]).index_select(0, batch.rows)
        head = self.vocab.head_weight(A.text_model(self.model).embed_tokens.weight)
        logits = A.decoder_logits(self.adapter, flat, head, self.pad_row)
        loss = F.cross_entropy(logits, batch.targets, reduction="none")
        end = batch.targets == self.pad_row
        info = {"n": len(batch.targets), "holes": len(holes), "ce": loss.mean().item(),
                "end": loss[end].detach().mean().item() if bool(end.any()) else None,
                "hi": loss[batch.noise > 0.8].detach().mean().item() if bool((batch.noise > 0.8).any()) else None,
                "slot1": loss[batch.slot == 1].detach().mean().item() if bool((batch.slot == 1).any()) else None}
        total = loss.mean()
        if self.opts.ar_distill > 0:
            taught = self.teachers.ar(batch, ro, head, logits, loss)
            if taught is not None:
                kl, base_ce, front_ce = taught
                total = total + self.opts.ar_distill * kl
                info.update({"kl": kl.item(), "front_base": base_ce, "front": front_ce})
        if self.opts.poe > 0:
            scored = self.teachers.verified_score_loss(batch, ro, head, logits)
            if scored is not None:
                ce, figures = scored
                total = total + self.opts.poe * ce
                info.update(figures)
        # after the losses that run the base model's pass, so its figures come with either of them
        if self.opts.draft_distill > 0 or batch.teacher is not None:
            drafted = self.teachers.draft(batch, ro, head, logits)
            if drafted is not None:
                kl, figures = drafted
                if self.opts.draft_distill > 0:
                    total = total + self.opts.draft_distill * kl
                info.update(figures)
        return total, info

    def lr_at(self, step: int, base: float | None = None) -> float:
        return (self.opts.lr if base is None else base) * min(1.0, (step + 1) / max(1, self.opts.warmup))

    def gate(self) -> list[float]:
        fb = self.adapter.future_bias
        return [] if fb is None else [round(v, 2) for v in fb.detach().tolist()]

    def end_head(self) -> str:
        """The end head for the log line: its bias and its row's norm ("" without one)."""
        ad = self.adapter
        if ad.end_row is None:
            return ""
        return f" | end head bias {ad.end_bias.item():.2f} row {ad.end_row.detach().norm().item():.2f}"

    def step(self) -> dict:
        t0, w0 = time.process_time(), time.monotonic()
        for g in self.opt.param_groups:
            g["lr"] = self.lr_at(self.state["step"], g.get("base_lr"))
        total, n, holes, his, s1, ends = 0.0, 0, 0, [], [], []
        teach: dict[str, list[float]] = {k: [] for k in LOGGED_STATS}
        for _ in range(self.opts.chunks_per_step):
            loss, info = self.chunk_loss()
            if loss is None:
                continue
            (loss / self.opts.chunks_per_step).backward()
            for k, vals in teach.items():
                if k in info:
                    vals.append(info[k])
            total += info["ce"] * info["n"]
            n += info["n"]
            holes += info["holes"]
            if info["hi"] is not None:
                his.append(info["hi"])
            if info["slot1"] is not None:
                s1.append(info["slot1"])
            if info["end"] is not None:
                ends.append(info["end"])
        torch.nn.utils.clip_grad_norm_(self.adapter.parameters(), 1.0)
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)
        self.state["step"] += 1
        self.state["holes"] += holes
        self.state["scored_tokens"] += n
        if self.opts.device.startswith("cuda"):
            torch.cuda.synchronize()
            self.state["gpu_seconds"] += time.monotonic() - w0
        else:
            self.state["cpu_seconds"] += time.process_time() - t0
        teacher = {k: sum(v) / len(v) for k, v in teach.items() if v}
        return {**teacher, "loss": total / max(1, n), "hi_noise_loss": sum(his) / max(1, len(his)),
                "slot1_loss": sum(s1) / max(1, len(s1)), "end_loss": sum(ends) / max(1, len(ends)), "holes": holes}

    # -- checkpoints --------------------------------------------------------------------------
    def save_checkpoint(self) -> None:
        tmp = self.out / "adapter.safetensors.tmp"
        save_file(self.adapter.state_dict(), str(tmp))
        tmp.replace(self.out / "adapter.safetensors")
        torch.save(self.opt.state_dict(), self.out / "optimizer.pt.tmp")
        (self.out / "optimizer.pt.tmp").replace(self.out / "optimizer.pt")
        meta = {**self.state, "options": asdict(self.opts), "rank": self.opts.rank, "alpha": self.opts.alpha}
        (self.out / "train_state.json").write_text(json.dumps(meta, indent=1))

    def _load_checkpoint(self) -> None:
        self.adapter.load_state_dict(load_file(str(self.out / "adapter.safetensors")))
        opt_path = self.out / "optimizer.pt"
        if opt_path.is_file():
            try:
                self.opt.load_state_dict(torch.load(opt_path, weights_only=True))
            except ValueError as exc:  # the parameter groups changed (e.g. --end-head added on a resume)
                log.warning("optimizer state not restored (%s); Adam starts afresh", exc)
        saved = json.loads((self.out / "train_state.json").read_text())
        self.state = {k: saved.get(k, v) for k, v in self.state.items()}
        log.info("resumed at step %d", self.state["step"])

    # -- the loop -----------------------------------------------------------------------------
    def train(self, evaluate) -> None:
        start = time.monotonic()
        last_ckpt = last_eval = start
        if not self.state["evals"] and not self.opts.no_eval:
            self.state["evals"].append(evaluate(self))
            log.info("eval %s", self.state["evals"][-1])
        acc = {"loss": 0.0, "hi": 0.0, "s1": 0.0, "end": 0.0, "n": 0}
        teach: dict[str, list[float]] = {}
        t_log = time.monotonic()
        while True:
            if self.opts.minutes and time.monotonic() - start > self.opts.minutes * 60:
                break
            info = self.step()
            acc["loss"] += info["loss"]
            acc["hi"] += info["hi_noise_loss"]
            acc["s1"] += info["slot1_loss"]
            acc["end"] += info["end_loss"]
            acc["n"] += 1
            for k in LOGGED_STATS:
                if k in info:
                    teach.setdefault(k, []).append(info[k])
            if self.state["step"] % self.opts.log_every == 0:
                dt = time.monotonic() - t_log
                log.info("step %d loss %.3f hi-noise %.3f slot1 %.3f hole-end %.3f | %.2f s/step, holes %d, %.2f CPU-h"
                         ", %.1f GPU-min, skipped %d | gate %s%s", self.state["step"], acc["loss"] / acc["n"],
                         acc["hi"] / acc["n"], acc["s1"] / acc["n"], acc["end"] / acc["n"],
                         dt / acc["n"], self.state["holes"], self.state["cpu_seconds"] / 3600,
                         self.state["gpu_seconds"] / 60, self.maker.dropped, self.gate(), self.end_head())
                if all(k in teach for k in TEACHER_STATS):  # the AR teacher: decoder vs base CE on frontier rows, KL
                    log.info("  frontier CE %.3f (base %.3f), KL %.3f",
                             *(sum(teach[k]) / len(teach[k]) for k in TEACHER_STATS))
                if all(k in teach for k in POE_STATS):  # the verified score vs each model alone, same rows
                    log.info("  verified score CE %.3f (base alone %.3f, decoder alone %.3f), top-1 %.3f (%.3f, %.3f)",
                             *(sum(teach[k]) / len(teach[k]) for k in POE_STATS))
                if all(k in teach for k in DRAFT_STATS):  # drafts beside [MASK]s against the base model
                    log.info("  drafts right of the frontier: KL %.3f, decoder argmax = base's %.3f (frontier %.3f)",
                             *(sum(teach[k]) / len(teach[k]) for k in DRAFT_STATS))
                acc = {"loss": 0.0, "hi": 0.0, "s1": 0.0, "end": 0.0, "n": 0}
                teach = {}
                t_log = time.monotonic()
            now = time.monotonic()
            if now - last_ckpt > self.opts.ckpt_minutes * 60:
                self.save_checkpoint()
                last_ckpt = now
            if now - last_eval > self.opts.eval_minutes * 60 and not self.opts.no_eval:
                self.state["evals"].append(evaluate(self))
                log.info("eval %s", self.state["evals"][-1])
                self.save_checkpoint()
                last_eval = last_ckpt = time.monotonic()
        self.save_checkpoint()
