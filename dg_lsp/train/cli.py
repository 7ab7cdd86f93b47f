"""`python -m dg_lsp.train`: options, argparse, and the top-level flow (prepare, train, export)."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field, fields
from pathlib import Path

# Options a resumed run may change; everything else comes from the run's saved options.
RESUMABLE_OVERRIDES = {"steps", "minutes", "threads", "ckpt_minutes", "eval_every", "log_every", "export", "lr",
                       "eval_batches", "warmup", "progress", "cooldown_steps", "pad_weight"}
# Options that describe one invocation, never the run: a resumed run takes them from this command line (or the
# defaults), so an --export given once is not repeated by every later resume.
PER_INVOCATION = {"minutes", "export"}


@dataclass
class TrainOptions:
    out: str = "runs/default"
    steps: int = 1_000_000  # total steps target of the run
    minutes: float = 0.0  # wall budget of this invocation (0 = none)
    resume: bool = False
    export: str = ""
    init_from: str = ""  # a new run starts from this exported model's weights, tokenizer and architecture
    seed: int = 0
    threads: int = 2
    # data
    extra_dirs: list[str] = field(default_factory=list)
    no_stdlib: bool = False
    vocab_size: int = 8192
    # objective
    noise: str = "mask"
    canvas_length: int = 48
    n_canvases: int = 6
    suffix_head: int = 16
    batch_size: int = 8
    self_cond_prob: float = 0.5
    pad_weight: float = 1.0  # loss weight of pad targets in pad-fill canvases (a resumed run may change it)
    # model
    hidden_size: int = 256
    num_layers: int = 4
    num_heads: int = 4
    num_kv_heads: int = 2
    head_dim: int = 64
    intermediate_size: int = 512
    num_experts: int = 4
    top_k_experts: int = 2
    moe_intermediate_size: int = 256
    # optimiser
    lr: float = 1e-3
    warmup: int = 200
    cooldown_steps: int = 0  # linear decay over the last N steps before --steps (a resumed run may add it)
    weight_decay: float = 0.1
    # bookkeeping
    ckpt_minutes: float = 3.0
    eval_every: int = 500
    eval_batches: int = 4
    log_every: int = 10
    progress: bool = True


def parse_args(argv: list[str] | None) -> tuple[TrainOptions, set[str]]:
    parser = argparse.ArgumentParser(prog="python -m dg_lsp.train", description=__doc__)
    for f in fields(TrainOptions):
        flag = "--" + f.name.replace("_", "-")
        if f.name.startswith("no_"):
            # a switch that is itself a negation (`--no-stdlib`): argparse's BooleanOptionalAction reads any flag
            # that starts with `--no-` as False, so `--no-stdlib` read the standard library after all
            parser.add_argument(flag, action="store_true", default=None)
        elif f.type == "bool" or isinstance(f.default, bool):
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, default=None)
        elif f.name == "extra_dirs":
            parser.add_argument("extra_dirs", nargs="*", default=None, help="extra source directories")
        else:
            typ = type(f.default)
            parser.add_argument(flag, type=typ, default=None, choices=["mask", "uniform"] if f.name == "noise" else None)
    ns = vars(parser.parse_args(argv))
    given = {k for k, v in ns.items() if v is not None and not (k == "extra_dirs" and v == [])}
    opts = TrainOptions(**{k: ns[k] for k in given})
    return opts, given


def resolve_options(opts: TrainOptions, given: set[str]) -> TrainOptions:
    """On --resume, the run's saved options win except for the resumable overrides."""
    saved = Path(opts.out) / "options.json"
    if not (opts.resume and saved.is_file()):
        return opts
    base = json.loads(saved.read_text(encoding="utf-8"))
    known = {f.name for f in fields(TrainOptions)}
    merged = {k: v for k, v in base.items() if k in known}
    for k in given & RESUMABLE_OVERRIDES | {"resume", "out"} | PER_INVOCATION:
        merged[k] = getattr(opts, k)
    ignored = sorted(given - RESUMABLE_OVERRIDES - {"resume", "out"})
    if ignored:
        print(f"resume: keeping the run's saved values for {ignored}", file=sys.stderr)
    return TrainOptions(**merged)


def main(argv: list[str] | None = None) -> int:
    opts, given = parse_args(argv)
    opts = resolve_options(opts, given)
    from .trainer import Trainer

    trainer = Trainer(opts)
    summary = trainer.run()
    print(json.dumps(summary, indent=2))
    return 0
