"""The GPU training bundle (dg_lsp/train/gemma/gpu.py, gpu_bundle.py): parts that fit a call survive staging and join
only when whole and unaltered; the base rebuilt from the GGUF's bytes is the built base bit for bit (the real
GGUF, a few tensors); the trainer reads a carried corpus and skips what the carried embedding rows cannot embed;
the GPU run's training arguments parse into the shipped recipe."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from dg_lsp.train.gemma import gpu
from dg_lsp.train.gemma import gpu_bundle as GB

GEMMA = Path(__file__).parents[3] / "dg_lsp" / "model" / "gemma"


def test_parts_stage_and_join_only_whole_and_unaltered(tmp_path):
    bundle = tmp_path / "bundle"
    (bundle / "wheels").mkdir(parents=True)
    payload = bytes(range(256)) * 40
    (bundle / "tensors.bin").write_bytes(payload)
    (bundle / "manifest.json").write_text('{"format": 1}')
    parts = GB.split(bundle, tmp_path / "pack", part_mib=3000 / 2**20)
    assert len(parts) >= 4 and all((p / GB.PART_NAME).stat().st_size <= 3000 for p in parts)
    stash = tmp_path / "stash"
    for p in parts[:-1]:
        GB.stage(p, stash)
    with pytest.raises(ValueError, match="missing"):
        GB.join(stash, tmp_path / "work")
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / GB.PART_META).write_text((parts[-1] / GB.PART_META).read_text())
    data = bytearray((parts[-1] / GB.PART_NAME).read_bytes())
    data[-1] ^= 1
    (broken / GB.PART_NAME).write_bytes(bytes(data))
    with pytest.raises(ValueError, match="SHA256"):
        GB.stage(broken, stash)
    GB.stage(parts[-1], stash)
    joined = GB.join(stash, tmp_path / "work")
    assert (joined / "tensors.bin").read_bytes() == payload
    assert (joined / "manifest.json").read_text() == '{"format": 1}'


@pytest.mark.timeout(900)
@pytest.mark.skipif(not (GEMMA / "dg_lsp.json").is_file(), reason="no adapted Gemma model in this tree")
def test_base_rebuilt_from_the_gguf_bytes_is_the_built_base(tmp_path):
    """Layer 0, the final norm and 300 embedding rows: packed from the real GGUF (its quantized blocks), rebuilt as
    the GPU machine rebuilds them, equal to the built base's tensors; the other embedding rows are zero; a
    changed byte fails the SHA256 check."""
    import importlib

    from safetensors import safe_open
    from safetensors.torch import load_file

    from dg_lsp.engine.gemma3 import build as B
    from dg_lsp.train.gemma.data import SourceFile

    base = json.loads((GEMMA / "dg_lsp.json").read_text())["base"]
    base_dir = B.build(base, quiet=True)
    gguf_path = importlib.import_module(base["module"]).assemble(tmp_path / base["file"])
    rows = sorted({0, 1, 2, 4, 107, 2000, 262143} | set(range(5000, 5293)))
    keep = lambda name: name.startswith("model.layers.0.") or name in ("model.norm.weight", GB.EMBED)  # noqa: E731
    files = [SourceFile("a.py", "stdlib", "x = 1\n" * 40)]
    bundle = tmp_path / "bundle"
    manifest = GB.pack_bundle(bundle, gguf_path, base_dir, rows, files, keep=keep, xz_preset=0)
    assert {e["name"] for e in manifest["tensors"]} >= {GB.EMBED, "model.norm.weight",
                                                         "model.layers.0.self_attn.q_proj.weight"}
    assert len(manifest["tensors"]) == 2 + 13
    built = GB.build(bundle, tmp_path / "rebuilt")
    got = load_file(str(built / "model.safetensors"))
    ref = safe_open(str(base_dir / "model.safetensors"), "pt")
    for name, t in got.items():
        r = ref.get_tensor(name)
        if name == GB.EMBED:
            idx = torch.tensor(rows)
            assert torch.equal(t[idx], r[idx])
            rest = torch.ones(t.shape[0], dtype=torch.bool)
            rest[idx] = False
            assert not t[rest].any()
        else:
            assert torch.equal(t, r), name
    assert json.loads((built / "embed_rows.json").read_text()) == rows
    assert (built / "tokenizer.json").read_bytes() == (base_dir / "tokenizer.json").read_bytes()
    blob = bytearray((bundle / "tensors.bin").read_bytes())
    blob[100] ^= 0x40
    (bundle / "tensors.bin").write_bytes(bytes(blob))
    with pytest.raises(ValueError, match="differs"):
        GB.build(bundle, tmp_path / "rebuilt2")


def test_trainer_reads_the_carried_corpus_and_skips_rows_it_lacks(tmp_path):
    from dg_lsp.engine.gemma3.tiny import build_tiny
    from dg_lsp.train.gemma import data
    from dg_lsp.train.gemma.trainer import Options, Run

    adapted = build_tiny(tmp_path / "tiny", delta_scale=0.0)
    base = adapted.parent / "base"
    text = "".join(f"def f{i}(a, b):\n    return a + b * {i}{' # zebra' if i % 12 == 5 else ''}\n\n\n"
                   for i in range(60))
    corpus = data.write_corpus([data.SourceFile("m.py", "stdlib", text)], tmp_path / "corpus.jsonl.xz")
    opts = Options(base=str(base), out=str(tmp_path / "run"), init_from=str(adapted), rank=4, alpha=8.0,
                   holes_per_chunk=4, chunk_tokens=96, head_tokens=4, lr=1e-2, warmup=1, corpus=str(corpus),
                   no_eval=True)
    run = Run(opts)
    assert [f.text for f in run.train_files] == [text]
    assert run.maker.allowed is None  # a full base: nothing to skip
    # a base that carries only some embedding rows: a chunk or pinned head with another token is skipped
    tok = run.tok
    allowed = set(tok.encode(text, add_special_tokens=False)) | {tok.bos_token_id}
    banned = tok.convert_tokens_to_ids("z")  # the tiny tokenizer spells words by letters; only "zebra" has a z
    assert text.count("z") == 5 and banned in allowed
    (base / data.EMBED_ROWS).write_text(json.dumps(sorted(allowed - {banned})))
    run = Run(Options(**{**opts.__dict__, "out": str(tmp_path / "run2")}))
    assert run.maker.allowed == allowed - {banned}
    kept = 0
    for _ in range(30):
        ids, holes = run.maker.holes(4)
        for h in holes:
            kept += 1
            assert banned not in h.head_ids and banned not in h.prompt_ids
        if holes:
            assert banned not in ids
    assert run.maker.dropped > 0
    info = None
    for _ in range(20):
        info = run.step()
        if info["holes"]:
            break
    assert info["holes"] > 0 and torch.isfinite(torch.tensor(info["loss"]))
    assert run.state["gpu_seconds"] == 0.0 and run.state["cpu_seconds"] > 0


@pytest.mark.skipif(not (GEMMA / "train_state.json").is_file(), reason="no adapted Gemma model in this tree")
def test_gpu_training_arguments_parse_into_the_shipped_recipe(tmp_path):
    from dg_lsp.train.gemma.cli import parse

    saved = json.loads((GEMMA / "train_state.json").read_text())["options"]
    argv = gpu.train_argv(GEMMA, tmp_path / "base", tmp_path / "c.xz", tmp_path / "run", tmp_path / "adapter", 6.0,
                          {"chunks_per_step": "4"})
    opts = parse(argv)
    for key in gpu.RECIPE_KEYS:
        if key in saved:
            assert getattr(opts, key) == saved[key], key
    assert opts.mask_gate == saved["mask_gate"]  # a value such as -1e4 is not read as an option
    assert (opts.device, opts.dtype, opts.no_eval, opts.minutes) == ("cuda", "bfloat16", True, 6.0)
    assert opts.chunks_per_step == 4 and opts.init_from == str(GEMMA) and opts.corpus == str(tmp_path / "c.xz")


def test_a_part_and_the_tree_still_fit_one_call():
    """The documented calls carry the tree without what gpu.LEFT_OUT names (the two weight files, docs/results/) plus
    one part of at most PART_MIB: as the repository grows, this says when PART_MIB (and the pack) must shrink to stay
    under the 64 MiB a call carries."""
    tree = gpu.tree_mib()
    if tree is None:
        pytest.skip("not a git checkout")
    assert 0.5 < tree and tree + gpu.PART_MIB <= gpu.CARRY_MIB, (tree, gpu.PART_MIB)
