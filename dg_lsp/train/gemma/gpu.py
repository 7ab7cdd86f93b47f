"""Adaptation training on a lent GPU: pack what the run needs here, carry it in parts, train there.

The lent GPU machine (docs/GPU.md) reaches no package index, and a call carries at most 64 MiB with the working
tree, while the base model's GGUF is 253 MB and the training corpus is this machine's site-packages. So:

1. Here, `python -m dg_lsp.train.gemma.gpu pack` writes a bundle, split into parts that each fit one call
   (`.gpu-pack/0`, `.gpu-pack/1`, ...). The bundle holds:
   - the base's tensors as the GGUF stores them (the quantized blocks, byte for byte), with only the embedding
     rows the training can read: every token of the corpus tokenized file by file, the tokens whose text is a
     prefix or suffix of one of those (a hole cut inside a word), the output vocabulary, the byte tokens and the
     control tokens. With each tensor goes the SHA256 of the float32 tensor this machine's built base holds;
   - the built base's config and tokenizer; the training corpus (`data.write_corpus`); the adapter the run
     continues (the shipped one, so the calls' tree can leave the weight files out); the wheels the GPU's image
     lacks (transformers 5.23, regex, gguf).
2. There, one call per part: `python3 -m dg_lsp.train.gemma.gpu stage .gpu-pack/K` keeps the part in `.gpu-stash/`
   (ignored, so the machine keeps it between calls while it stays warm).
3. The last call: `python3 -m dg_lsp.train.gemma.gpu run --minutes 6`. It joins the parts and checks their SHA256,
   installs the wheels into a folder, builds the base (dequantized with gguf, the norms' stored `1 + w` undone, each
   tensor's SHA256 checked against this machine's), and continues the shipped adapter's training on CUDA in
   bfloat16 with the recipe in its `train_state.json` (`python -m dg_lsp.train.gemma --init-from` the bundle's
   adapter).
   It writes the exported adapter, the log and a summary under `$OUT`.

Embedding rows left out are zeros in the built base; a chunk or hole that holds such a token is skipped and counted
(`data.HoleMaker.allowed`). The bundle itself (its layout, the parts, the rebuild) is `gpu_bundle.py`; this module is
the command and the run. Both import only the standard library at the top: `stage` and `run` work before the wheels
are installed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from .gpu_bundle import PART_NAME, build, embed_rows, join, pack_bundle, split, stage

PACK_DIR = ".gpu-pack"
STASH_DIR = ".gpu-stash"
# a call carries 64 MiB with the tree; the tree without what LEFT_OUT names (docs/GPU.md) is about 1.5 MiB
PART_MIB = 46
WORK_DIR = "/tmp/dg-lsp-gpu"
CARRY_MIB = 63.0  # what one call may carry, with a little room (the limit is 64 MiB)
WEIGHT_FILES = ("dg_lsp/model/gemma/adapter.safetensors", "dg_lsp/model/small/model.safetensors")
# left out of a call's tree (untracked for the calls, docs/GPU.md): the two weight files (the adapter travels in the
# bundle) and the measurements' folder (15 MiB of JSON and plots that nothing run there reads, growing each session)
LEFT_OUT = WEIGHT_FILES + ("docs/results/",)
SHIPPED = "dg_lsp/model/gemma"
# the shipped run's options that a continued run keeps (the adapter's parameters and its losses); the rest
# (device, batch, time, paths) is the GPU run's own
RECIPE_KEYS = ("rank", "alpha", "lr", "future_gate", "gate_lr", "no_gate", "mask_gate", "end_head", "end_lr",
               "end_bias_lr", "suffix_gate", "ltr_noise", "ar_distill", "poe", "poe_weight", "draft_distill",
               "holes_per_chunk", "chunk_tokens", "head_tokens", "vocab_size")
GPU_DEFAULTS = {"device": "cuda", "dtype": "bfloat16", "chunks_per_step": 8, "threads": 4, "ckpt_minutes": 2.0,
                "log_every": 20, "warmup": 30, "no_eval": True}


def _say(msg: str) -> None:
    print(f"dg-lsp gpu: {msg}", file=sys.stderr, flush=True)


def pack(args) -> int:
    import importlib
    import tempfile

    from safetensors.torch import load_file
    from transformers import AutoTokenizer

    from ...engine.gemma3 import build as B
    from ...engine.gemma3.load import read_meta
    from ...engine.gemma3.vocab import byte_token_ids
    from . import data

    meta = read_meta(Path(args.adapter))
    if meta is None:
        raise SystemExit(f"{args.adapter} is not an adapted Gemma model directory")
    base = meta["base"]
    base_dir = B.build(base)
    tok = AutoTokenizer.from_pretrained(str(base_dir), local_files_only=True)
    files = data.collect("train")
    _say(f"corpus: {len(files)} files, {sum(len(f.text) for f in files) / 1e6:.1f} M characters")
    vocab = load_file(str(Path(args.adapter) / "adapter.safetensors"))["vocab_ids"].tolist()
    always = set(vocab) | set(byte_token_ids(tok)) | set(tok.all_special_ids) | set(range(256))
    n_rows = json.loads((base_dir / "config.json").read_text())["vocab_size"]
    rows = embed_rows(tok, [f.text for f in files], always, n_rows)
    _say(f"embedding rows carried: {len(rows)} of {len(tok)}")
    pkg = importlib.import_module(base["module"])
    with tempfile.TemporaryDirectory() as tmp:
        gguf_path = pkg.assemble(Path(tmp) / base["file"])
        wheels = sorted(Path(args.wheels).glob("*.whl")) if args.wheels else []
        bundle = Path(tmp) / "bundle"
        pack_bundle(bundle, gguf_path, base_dir, rows, files, wheels, adapter=Path(args.adapter))
        out = Path(args.out)
        if out.exists():
            shutil.rmtree(out)
        parts = split(bundle, out, args.part_mib)
    sizes = ", ".join(f"{p.name}: {(p / PART_NAME).stat().st_size / 2**20:.1f} MiB" for p in parts)
    _say(f"{len(parts)} parts in {out} ({sizes}); wheels: {', '.join(w.name for w in wheels) or 'none'}")
    tree = tree_mib()
    if tree is not None:
        worst = tree + max((p / PART_NAME).stat().st_size for p in parts) / 2**20
        _say(f"a call carries the tree without {', '.join(LEFT_OUT)} ({tree:.1f} MiB) and one part: {worst:.1f} MiB of "
             f"64" + ("" if worst <= CARRY_MIB else f"; too much: pack again with --part-mib {CARRY_MIB - tree:.0f}"))
    return 0




def tree_mib() -> float | None:
    """MiB of the files a call's tree holds once LEFT_OUT is left out of it (docs/GPU.md): git's tracked files and
    its untracked, not ignored ones; None outside a git checkout."""
    try:
        listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
                                capture_output=True, check=True).stdout.decode().split("\0")
    except (OSError, subprocess.CalledProcessError):
        return None
    kept = [f for f in listed if f and not any(f == out or out.endswith("/") and f.startswith(out) for out in LEFT_OUT)]
    return sum(os.path.getsize(f) for f in kept if os.path.isfile(f)) / 2**20


def train_argv(shipped: Path, base: Path, corpus: Path, out: Path, export: Path, minutes: float,
               overrides: dict) -> list[str]:
    """`python -m dg_lsp.train.gemma` arguments: the shipped adapter's recipe (RECIPE_KEYS of its
    train_state.json), GPU_DEFAULTS, then `overrides`."""
    saved = json.loads((shipped / "train_state.json").read_text()).get("options", {})
    opts = {k: saved[k] for k in RECIPE_KEYS if k in saved}
    opts.update(GPU_DEFAULTS)
    opts.update(overrides)
    opts.update({"base": str(base), "corpus": str(corpus), "out": str(out), "export": str(export),
                 "init_from": str(shipped), "minutes": minutes})
    argv = []
    for k, v in opts.items():
        flag = "--" + k.replace("_", "-")
        if isinstance(v, bool):
            argv += [flag] if v else []
        elif v is not None and v != "":
            argv.append(f"{flag}={v}")  # one word: a value such as -1e4 is not taken for an option
    return argv


def run(args) -> int:
    """Join, install, build, train; every phase's seconds and the outcome in `$OUT/gpu-run.json`."""
    out = Path(args.out or os.environ.get("OUT") or "gpu-out")
    out.mkdir(parents=True, exist_ok=True)
    work = Path(args.work)
    summary: dict = {"minutes": args.minutes, "phases": {}}

    def phase(name, fn):
        t0 = time.monotonic()
        try:
            return fn()
        finally:
            summary["phases"][name] = round(time.monotonic() - t0, 1)
            (out / "gpu-run.json").write_text(json.dumps(summary, indent=1))

    bundle = phase("join", lambda: join(Path(args.stash), work))
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    repo = str(Path(__file__).resolve().parents[3])
    paths = [repo, env.get("PYTHONPATH", "")]
    if not args.skip_install:
        site = work / "site"
        wheels = sorted(str(p) for p in (bundle / "wheels").glob("*.whl"))
        phase("install", lambda: subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index",
                                                 "--no-deps", "--no-compile", "--no-cache-dir", "--target",
                                                 str(site), *wheels], check=True))
        paths.insert(0, str(site))
    env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    base = work / "base"
    phase("build", lambda: subprocess.run([sys.executable, "-m", "dg_lsp.train.gemma.gpu", "build",
                                           str(bundle), str(base)], env=env, check=True))
    overrides = {}
    for kv in args.set:
        k, v = kv.split("=", 1)
        overrides[k.replace("-", "_")] = {"true": True, "false": False}.get(v.lower(), v)
    shipped = Path(args.shipped) if args.shipped else bundle / "adapter"
    argv = train_argv(shipped, base, bundle / "corpus.jsonl.xz", work / "run", out / "adapter",
                      args.minutes, overrides)
    summary["train_argv"] = argv
    with open(out / "train.log", "w") as log:
        proc = phase("train", lambda: subprocess.run([sys.executable, "-m", "dg_lsp.train.gemma", *argv], env=env,
                                                     stdout=log, stderr=subprocess.STDOUT))
    summary["train_exit"] = proc.returncode
    (out / "gpu-run.json").write_text(json.dumps(summary, indent=1))
    tail = (out / "train.log").read_text(errors="replace").splitlines()[-15:]
    print("\n".join(tail), flush=True)
    return proc.returncode


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m dg_lsp.train.gemma.gpu", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("pack", help="here: write the bundle's parts")
    a.add_argument("--out", default=PACK_DIR)
    a.add_argument("--adapter", default=SHIPPED, help="the adapter to continue; its base and vocabulary are packed")
    a.add_argument("--wheels", default=".whl", help="a folder of wheels to carry ('' for none)")
    a.add_argument("--part-mib", type=float, default=PART_MIB)
    a = sub.add_parser("stage", help="there: keep one part in the stash")
    a.add_argument("part")
    a.add_argument("--stash", default=STASH_DIR)
    a = sub.add_parser("build", help="there: build the base from a joined bundle")
    a.add_argument("bundle")
    a.add_argument("dest")
    a = sub.add_parser("run", help="there: join, install the wheels, build, train, export")
    a.add_argument("--stash", default=STASH_DIR)
    a.add_argument("--work", default=WORK_DIR)
    a.add_argument("--out", default="", help="default: $OUT")
    a.add_argument("--minutes", type=float, default=6.0)
    a.add_argument("--shipped", default="", help="the adapter to continue (default: the bundle's)")
    a.add_argument("--skip-install", action="store_true", help="use this Python's packages (a CPU dry run)")
    a.add_argument("--set", action="append", default=[], metavar="OPTION=VALUE",
                   help="a training option over the recipe, e.g. --set device=cpu --set dtype=float32")
    args = p.parse_args(argv)
    if args.cmd == "pack":
        return pack(args)
    if args.cmd == "stage":
        dest = stage(Path(args.part), Path(args.stash))
        _say(f"staged {dest}: {sorted(d.name for d in Path(args.stash).iterdir())}")
        return 0
    if args.cmd == "build":
        _say(f"built {build(Path(args.bundle), Path(args.dest))}")
        return 0
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
