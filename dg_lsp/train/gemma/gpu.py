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
(`data.HoleMaker.allowed`). This module imports only the standard library at the top: `stage` and `run` work before
the wheels are installed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import lzma
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

FORMAT = 1
PACK_DIR = ".gpu-pack"
STASH_DIR = ".gpu-stash"
PART_NAME = "bundle.tar.part"
PART_META = "part.json"
# a call carries 64 MiB with the tree; the tree without its two weight files (docs/GPU.md) is about 15.7 MiB
PART_MIB = 46
WORK_DIR = "/tmp/dg-lsp-gpu"
SHIPPED = "dg_lsp/model/gemma"
ADAPTER_FILES = ("dg_lsp.json", "adapter.safetensors", "train_state.json", "MODEL.md", "NOTICE")
# the shipped run's options that a continued run keeps (the adapter's parameters and its losses); the rest
# (device, batch, time, paths) is the GPU run's own
RECIPE_KEYS = ("rank", "alpha", "lr", "future_gate", "gate_lr", "no_gate", "mask_gate", "end_head", "end_lr",
               "end_bias_lr", "suffix_gate", "ltr_noise", "ar_distill", "poe", "poe_weight", "draft_distill",
               "holes_per_chunk", "chunk_tokens", "head_tokens", "vocab_size")
GPU_DEFAULTS = {"device": "cuda", "dtype": "bfloat16", "chunks_per_step": 8, "threads": 4, "ckpt_minutes": 2.0,
                "log_every": 20, "warmup": 30, "no_eval": True}
_LAYER = {"attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
          "attn_output": "self_attn.o_proj", "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj",
          "ffn_down": "mlp.down_proj", "attn_norm": "input_layernorm", "ffn_norm": "pre_feedforward_layernorm",
          "post_attention_norm": "post_attention_layernorm", "post_ffw_norm": "post_feedforward_layernorm",
          "attn_q_norm": "self_attn.q_norm", "attn_k_norm": "self_attn.k_norm"}
EMBED = "model.embed_tokens.weight"


def _say(msg: str) -> None:
    print(f"dg-lsp gpu: {msg}", file=sys.stderr, flush=True)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            h.update(block)
    return h.hexdigest()


def hf_name(gguf_name: str) -> str:
    """The transformers name of a Gemma 3 GGUF tensor (ValueError for one this mapping does not know)."""
    if gguf_name == "token_embd.weight":
        return EMBED
    if gguf_name == "output_norm.weight":
        return "model.norm.weight"
    m = re.fullmatch(r"blk\.(\d+)\.(\w+)\.weight", gguf_name)
    if not m or m[2] not in _LAYER:
        raise ValueError(f"unknown GGUF tensor {gguf_name}")
    return f"model.layers.{m[1]}.{_LAYER[m[2]]}.weight"


def _float_sha(tensor) -> str:
    return hashlib.sha256(tensor.float().contiguous().numpy().tobytes()).hexdigest()


# -- here: the bundle ---------------------------------------------------------------------------------------

def embed_rows(tok, texts, always, rows: int) -> list[int]:
    """The token ids below `rows` (the embedding's) a run on `texts` can meet: each text tokenized whole, every
    token whose text is a proper prefix or suffix of one of those tokens' text (a prompt or a suffix cut inside a
    word), and `always`."""
    seen: set[int] = set()
    for text in texts:
        seen.update(tok.encode(text, add_special_tokens=False))
    pieces = tok.convert_ids_to_tokens(list(range(rows)))
    parts: set[str] = set()
    for tid in seen:
        s = pieces[tid]
        for k in range(1, len(s)):
            parts.add(s[:k])
            parts.add(s[k:])
    seen.update(i for i, s in enumerate(pieces) if s in parts)
    return sorted(i for i in seen | set(always) if 0 <= i < rows)


def pack_bundle(bundle: Path, gguf_path: Path, base_dir: Path, rows: list[int], corpus_files, wheels=(),
                keep=lambda name: True, adapter: Path | None = None, xz_preset: int = 6) -> dict:
    """Write the bundle directory: `tensors.bin` (the GGUF tensors `keep(hf_name)` selects, the embedding's
    `rows` only), `manifest.json`, the base's config and tokenizer files, `corpus.jsonl.xz`, `wheels/`, and
    `adapter/` (ADAPTER_FILES of `adapter`, if given). The tokenizer and corpus are xz-compressed at `xz_preset`.
    Each tensor is rebuilt here from the bytes written and checked equal to the built base's before its SHA256
    is recorded (AssertionError otherwise)."""
    import gguf
    import numpy as np
    import torch
    from safetensors import safe_open

    from . import data

    bundle.mkdir(parents=True, exist_ok=True)
    reader = gguf.GGUFReader(str(gguf_path))
    built = safe_open(str(base_dir / "model.safetensors"), "pt")
    entries, offset = [], 0
    with open(bundle / "tensors.bin", "wb") as out:
        for t in reader.tensors:
            name = hf_name(t.name)
            if not keep(name):
                continue
            raw = np.ascontiguousarray(t.data)
            if name == EMBED:
                raw = np.ascontiguousarray(raw[np.asarray(rows)])
            blob = raw.tobytes()
            entry = {"gguf": t.name, "name": name, "qtype": int(t.tensor_type), "dtype": str(raw.dtype),
                     "raw_shape": list(raw.shape), "offset": offset, "nbytes": len(blob),
                     "minus_one": name.endswith("norm.weight")}
            rebuilt = _dequantize(entry, blob)
            ref = built.get_tensor(name)
            ref = ref[torch.tensor(rows)] if name == EMBED else ref
            rebuilt = rebuilt.reshape(ref.shape)
            assert torch.equal(rebuilt, ref.float()), f"{name}: the GGUF's tensor differs from the built base's"
            entry["shape"] = list(ref.shape)
            entry["sha256"] = _float_sha(rebuilt)
            out.write(blob)
            offset += len(blob)
            entries.append(entry)
    for name in ("config.json", "generation_config.json", "tokenizer_config.json"):
        if (base_dir / name).is_file():
            shutil.copy2(base_dir / name, bundle / name)
    tokenizer = (base_dir / "tokenizer.json").read_bytes()
    (bundle / "tokenizer.json.xz").write_bytes(lzma.compress(tokenizer, preset=xz_preset))
    data.write_corpus(corpus_files, bundle / "corpus.jsonl.xz", xz_preset)
    (bundle / "wheels").mkdir(exist_ok=True)
    for w in wheels:
        shutil.copy2(w, bundle / "wheels" / Path(w).name)
    if adapter is not None:
        (bundle / "adapter").mkdir(exist_ok=True)
        for name in ADAPTER_FILES:
            if (Path(adapter) / name).is_file():
                shutil.copy2(Path(adapter) / name, bundle / "adapter" / name)
    built_json = json.loads((base_dir / "built.json").read_text()) if (base_dir / "built.json").is_file() else {}
    manifest = {"format": FORMAT, "base": built_json, "tensors": entries, "embed_rows": rows,
                "vocab_size": int(built.get_slice(EMBED).get_shape()[0]), "corpus_files": len(corpus_files)}
    (bundle / "manifest.json").write_text(json.dumps(manifest))
    return manifest


def split(bundle: Path, out: Path, part_mib: float) -> list[Path]:
    """Tar the bundle and cut the tar into parts of at most `part_mib` MiB: `out/K/bundle.tar.part` with
    `out/K/part.json` (its index, the count, its SHA256 and the whole tar's)."""
    out.mkdir(parents=True, exist_ok=True)
    tar_path = out / "bundle.tar"
    with tarfile.open(tar_path, "w") as tar:
        tar.add(bundle, arcname="bundle")
    whole = _sha256(tar_path)
    size = int(part_mib * 2**20)
    n = max(1, -(-tar_path.stat().st_size // size))
    parts = []
    with open(tar_path, "rb") as f:
        for k in range(n):
            d = out / str(k)
            d.mkdir(exist_ok=True)
            (d / PART_NAME).write_bytes(f.read(size))
            meta = {"format": FORMAT, "index": k, "count": n, "sha256": _sha256(d / PART_NAME), "tar_sha256": whole}
            (d / PART_META).write_text(json.dumps(meta))
            parts.append(d)
    tar_path.unlink()
    return parts


def pack(args) -> int:
    import tempfile

    from transformers import AutoTokenizer

    from ...engine.gemma3 import build as B
    from ...engine.gemma3.vocab import byte_token_ids
    from . import data

    base = json.loads((Path(args.adapter) / "dg_lsp.json").read_text())["base"]
    base_dir = B.build(base)
    tok = AutoTokenizer.from_pretrained(str(base_dir), local_files_only=True)
    files = data.collect("train")
    _say(f"corpus: {len(files)} files, {sum(len(f.text) for f in files) / 1e6:.1f} M characters")
    from safetensors.torch import load_file

    vocab = load_file(str(Path(args.adapter) / "adapter.safetensors"))["vocab_ids"].tolist()
    always = set(vocab) | set(byte_token_ids(tok)) | set(tok.all_special_ids) | set(range(256))
    n_rows = json.loads((base_dir / "config.json").read_text())["vocab_size"]
    rows = embed_rows(tok, [f.text for f in files], always, n_rows)
    _say(f"embedding rows carried: {len(rows)} of {len(tok)}")
    import importlib

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
        _say(f"a call carries the tree without its weight files ({tree:.1f} MiB) and one part: {worst:.1f} MiB of "
             f"64" + ("" if worst <= CARRY_MIB else f"; too much: pack again with --part-mib {CARRY_MIB - tree:.0f}"))
    return 0


CARRY_MIB = 63.0  # what one call may carry, with a little room (the limit is 64 MiB)
WEIGHT_FILES = ("dg_lsp/model/gemma/adapter.safetensors", "dg_lsp/model/small/model.safetensors")


def tree_mib() -> float | None:
    """MiB of the files a call's tree holds once WEIGHT_FILES are left out of it (docs/GPU.md): git's tracked
    files and its untracked, not ignored ones; None outside a git checkout."""
    try:
        listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
                                capture_output=True, check=True).stdout.decode().split("\0")
    except (OSError, subprocess.CalledProcessError):
        return None
    return sum(os.path.getsize(f) for f in listed if f and f not in WEIGHT_FILES and os.path.isfile(f)) / 2**20


# -- there: stage, join, build, train ----------------------------------------------------------------------

def stage(part_dir: Path, stash: Path) -> Path:
    """Check one part's SHA256 and keep it in `stash` (ValueError if it does not match its part.json)."""
    meta = json.loads((part_dir / PART_META).read_text())
    if _sha256(part_dir / PART_NAME) != meta["sha256"]:
        raise ValueError(f"{part_dir}: the part's SHA256 does not match {PART_META}")
    stash.mkdir(parents=True, exist_ok=True)
    dest = stash / str(meta["index"])
    dest.mkdir(exist_ok=True)
    shutil.copy2(part_dir / PART_META, dest / PART_META)
    shutil.copy2(part_dir / PART_NAME, dest / PART_NAME)
    return dest


def join(stash: Path, work: Path) -> Path:
    """The bundle directory, extracted under `work` from the staged parts (ValueError if one is missing or the
    joined tar's SHA256 is not the packed one)."""
    metas = {}
    for d in stash.iterdir() if stash.is_dir() else ():
        if (d / PART_META).is_file():
            m = json.loads((d / PART_META).read_text())
            metas[m["index"]] = (d, m)
    if not metas:
        raise ValueError(f"no staged parts in {stash}")
    count = next(iter(metas.values()))[1]["count"]
    missing = [k for k in range(count) if k not in metas]
    if missing:
        raise ValueError(f"parts missing from {stash}: {missing} of {count}")
    work.mkdir(parents=True, exist_ok=True)
    tar_path = work / "bundle.tar"
    with open(tar_path, "wb") as out:
        for k in range(count):
            out.write((metas[k][0] / PART_NAME).read_bytes())
    if _sha256(tar_path) != metas[0][1]["tar_sha256"]:
        raise ValueError("the joined bundle's SHA256 is not the packed one (parts from different packs?)")
    if (work / "bundle").exists():
        shutil.rmtree(work / "bundle")
    with tarfile.open(tar_path) as tar:
        tar.extractall(work, filter="data")
    tar_path.unlink()
    return work / "bundle"


def _dequantize(entry: dict, blob: bytes):
    import gguf
    import numpy as np
    import torch

    raw = np.frombuffer(blob, dtype=np.dtype(entry["dtype"])).reshape(entry["raw_shape"])
    values = gguf.quants.dequantize(raw, gguf.GGMLQuantizationType(entry["qtype"]))
    t = torch.from_numpy(np.array(values, dtype=np.float32))
    return t - 1 if entry["minus_one"] else t


def build(bundle: Path, dest: Path) -> Path:
    """A transformers directory under `dest` from the bundle: float32 tensors rebuilt from the GGUF's bytes (the
    embedding's missing rows zero), each checked against the SHA256 the packing machine's base gave; its config and
    tokenizer; `embed_rows.json` (data.EMBED_ROWS) with the rows carried. ValueError on any mismatch."""
    import torch
    from safetensors.torch import save_file

    manifest = json.loads((bundle / "manifest.json").read_text())
    rows = manifest["embed_rows"]
    tensors = {}
    with open(bundle / "tensors.bin", "rb") as f:
        blob = f.read()
    for e in manifest["tensors"]:
        t = _dequantize(e, blob[e["offset"]:e["offset"] + e["nbytes"]]).reshape(e["shape"])
        if _float_sha(t) != e["sha256"]:
            raise ValueError(f"{e['name']}: rebuilt tensor differs from the packing machine's base")
        if e["name"] == EMBED:
            full = torch.zeros(manifest["vocab_size"], t.shape[1], dtype=torch.float32)
            full[torch.tensor(rows)] = t
            t = full
        tensors[e["name"]] = t.contiguous()
    dest.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(dest / "model.safetensors"), metadata={"format": "pt"})
    for name in ("config.json", "generation_config.json", "tokenizer_config.json"):
        if (bundle / name).is_file():
            shutil.copy2(bundle / name, dest / name)
    (dest / "tokenizer.json").write_bytes(lzma.decompress((bundle / "tokenizer.json.xz").read_bytes()))
    (dest / "embed_rows.json").write_text(json.dumps(rows))
    (dest / "built.json").write_text(json.dumps({**manifest["base"], "partial_embedding": len(rows)}, indent=1))
    return dest


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
    site = work / "site"
    if not args.skip_install:
        wheels = sorted(str(p) for p in (bundle / "wheels").glob("*.whl"))
        phase("install", lambda: subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index",
                                                 "--no-deps", "--no-compile", "--no-cache-dir", "--target",
                                                 str(site), *wheels], check=True))
        env["PYTHONPATH"] = os.pathsep.join([str(site), repo, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    else:
        env["PYTHONPATH"] = os.pathsep.join([repo, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
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
