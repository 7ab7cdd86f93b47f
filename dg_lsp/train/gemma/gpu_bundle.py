"""The GPU training bundle (gpu.py): what a machine without the package index needs to train, packed here in parts
that fit a call, checked and rebuilt there.

`pack_bundle` writes the bundle directory (the base's GGUF tensors byte for byte, with part of the embedding's rows;
the base's config and tokenizer; the corpus; the adapter to continue; wheels), `split` cuts its tar into parts,
`stage` keeps a checked part, `join` puts the parts back together, `build` rebuilds the base as a transformers
directory. Only the standard library is imported at the top: `stage` and `join` run before the wheels are installed.
"""

from __future__ import annotations

import hashlib
import json
import lzma
import re
import shutil
import tarfile
from pathlib import Path

FORMAT = 1
PART_NAME = "bundle.tar.part"
PART_META = "part.json"
ADAPTER_FILES = ("dg_lsp.json", "adapter.safetensors", "train_state.json", "MODEL.md", "NOTICE")
_LAYER = {"attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
          "attn_output": "self_attn.o_proj", "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj",
          "ffn_down": "mlp.down_proj", "attn_norm": "input_layernorm", "ffn_norm": "pre_feedforward_layernorm",
          "post_attention_norm": "post_attention_layernorm", "post_ffw_norm": "post_feedforward_layernorm",
          "attn_q_norm": "self_attn.q_norm", "attn_k_norm": "self_attn.k_norm"}
EMBED = "model.embed_tokens.weight"


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
    tokenizer; data.EMBED_ROWS with the rows carried. ValueError on any mismatch."""
    import torch
    from safetensors.torch import save_file

    from .data import EMBED_ROWS

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
    (dest / EMBED_ROWS).write_text(json.dumps(rows))
    (dest / "built.json").write_text(json.dumps({**manifest["base"], "partial_embedding": len(rows)}, indent=1))
    return dest
