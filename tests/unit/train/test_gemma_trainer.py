"""The Gemma adaptation trainer on a tiny Gemma 3 (no download): --init-from an exported adapter (its vocabulary
and counters carry on), one optimisation step lowers nothing to NaN and changes the adapter, a checkpoint
resumes at the same step, and the export is a directory the engine loads."""

from __future__ import annotations

import math

import torch

from dg_lsp.engine.gemma3.tiny import build_tiny


def chunk_until(run, found, seeds=range(50)):
    """`run.chunk_loss()` under successive torch seeds until `found(loss, info)`: a chunk may hold no hole, or none
    of the rows a test checks (the files a run samples depend on where the venv lies). Returns the last (loss, info)."""
    for seed in seeds:
        torch.manual_seed(seed)
        loss, info = run.chunk_loss()
        if found(loss, info):
            break
    return loss, info


def test_init_from_step_checkpoint_resume_export(tmp_path):
    from dg_lsp.engine import Engine
    from dg_lsp.train.gemma.export import export_dir
    from dg_lsp.train.gemma.trainer import Options, Run

    adapted = build_tiny(tmp_path / "tiny", delta_scale=0.0)
    base = adapted.parent / "base"
    opts = Options(base=str(base), out=str(tmp_path / "run"), init_from=str(adapted), rank=4, alpha=8.0,
                   holes_per_chunk=4, chunk_tokens=96, head_tokens=4, lr=1e-2, warmup=1)
    run = Run(opts)
    assert len(run.vocab) == 384  # the exported adapter's vocabulary, not a new choice
    before = {k: v.clone() for k, v in run.adapter.state_dict().items()}
    # the files a run samples depend on where the venv lies (a capped package's files are taken in the order of
    # their paths' hashes), so a chunk may hold no hole here: step until one does
    for _ in range(20):
        info = run.step()
        if info["holes"] > 0:
            break
    assert math.isfinite(info["loss"]) and info["holes"] > 0
    after = run.adapter.state_dict()
    assert any(not torch.equal(before[k], after[k]) for k in before)
    run.save_checkpoint()

    resumed = Run(Options(**{**opts.__dict__, "resume": True, "init_from": ""}))
    assert resumed.state["step"] == run.state["step"] >= 1
    assert all(torch.equal(after[k], v) for k, v in resumed.adapter.state_dict().items())

    # the export needs the base's name only for the spec; point the exported spec at the tiny base to load it
    out = export_dir(tmp_path / "run", tmp_path / "exported")
    import json

    meta = json.loads((out / "dg_lsp.json").read_text())
    meta["base"] = {"name": "tiny", "path": str(base)}
    meta["adapter"]["hole_slots"] = 12
    (out / "dg_lsp.json").write_text(json.dumps(meta))
    engine = Engine.load(str(out), device="cpu")
    try:
        from dg_lsp.engine.types import DenoiseParams, InfillRequest

        res = engine.infill(InfillRequest(prefix="x = ", suffix="\n", params=DenoiseParams(temperature=0,
                                                                                          max_steps=2)))
        assert res.steps >= 1
    finally:
        engine.close()


def test_end_head_trains_from_zero_resumes_and_exports(tmp_path):
    """--end-head on --init-from an adapter without one: the head starts at zero, a step moves it (the hole-end
    targets reach it), a resume restores it, and the export carries it into the engine."""
    from dg_lsp.engine import Engine
    from dg_lsp.train.gemma.export import export_dir
    from dg_lsp.train.gemma.trainer import Options, Run

    adapted = build_tiny(tmp_path / "tiny", delta_scale=0.0)
    opts = Options(base=str(adapted.parent / "base"), out=str(tmp_path / "run"), init_from=str(adapted), rank=4,
                   alpha=8.0, holes_per_chunk=4, chunk_tokens=96, head_tokens=4, lr=1e-2, warmup=1, end_head=True)
    run = Run(opts)
    ad = run.adapter
    assert ad.end_bias.item() == 0.0 and ad.end_row.detach().abs().sum().item() == 0.0
    groups = [[id(p) for p in g["params"]] for g in run.opt.param_groups]
    assert any(id(ad.end_bias) in g for g in groups) and any(id(ad.end_row) in g for g in groups)
    for _ in range(20):  # until a step's holes reach the end head (a chunk may hold none)
        run.step()
        if ad.end_bias.item() != 0.0:
            break
    assert ad.end_bias.item() != 0.0 and ad.end_row.detach().abs().sum().item() > 0.0
    run.save_checkpoint()
    resumed = Run(Options(**{**opts.__dict__, "resume": True, "init_from": ""}))
    assert torch.equal(resumed.adapter.end_row, ad.end_row) and torch.equal(resumed.adapter.end_bias, ad.end_bias)

    import json

    out = export_dir(tmp_path / "run", tmp_path / "exported")
    meta = json.loads((out / "dg_lsp.json").read_text())
    meta["base"] = {"name": "tiny", "path": str(adapted.parent / "base")}
    meta["adapter"]["hole_slots"] = 12
    (out / "dg_lsp.json").write_text(json.dumps(meta))
    engine = Engine.load(str(out), device="cpu")
    try:
        loaded = engine.runner.adapter
        assert torch.allclose(loaded.end_row, ad.end_row.detach(), rtol=1e-2, atol=1e-3)  # bfloat16 in the export
        assert torch.allclose(loaded.end_bias, ad.end_bias.detach(), rtol=1e-2, atol=1e-3)
    finally:
        engine.close()


def test_ar_teacher_is_the_base_model_on_the_frontier_rows(tmp_path):
    """With zero deltas and the canvas gate shut, a canvas's first masked slot sees exactly what the base model sees
    after the same clean tokens, so the teacher's KL is 0 and both cross-entropies agree: the teacher's rows,
    positions and masks line up with the decoder's. Non-zero deltas make the KL positive, and a step with
    --ar-distill stays finite."""
    from dg_lsp.train.gemma.trainer import Options, Run

    adapted = build_tiny(tmp_path / "tiny", delta_scale=0.0)
    opts = Options(base=str(adapted.parent / "base"), out=str(tmp_path / "run"), init_from=str(adapted), rank=4,
                   alpha=8.0, holes_per_chunk=4, chunk_tokens=96, head_tokens=4, lr=1e-2, warmup=1,
                   ar_distill=1.0, ltr_noise=0.5)
    run = Run(opts)
    run.adapter.future_bias.data.fill_(-1e4)
    # a chunk can yield no hole, or no frontier row (the files depend on the venv's path)
    _, info = chunk_until(run, lambda loss, info: "kl" in info)
    assert info["kl"] < 1e-4, info
    assert abs(info["front"] - info["front_base"]) < 1e-3, info
    with torch.no_grad():
        for m in run.adapter.modules.values():
            m.lora_b.normal_(0, 0.5)
    _, info = chunk_until(run, lambda loss, info: "kl" in info)
    assert info["kl"] > 1e-3, info
    for _ in range(20):  # a step whose chunks happen to hold no frontier row has no KL to report: draw again
        out = run.step()
        if "kl" in out:
            break
    assert math.isfinite(out["loss"]) and math.isfinite(out["kl"]), out
    assert math.isfinite(out["end_loss"])
    # the KL leaves the hole's end to the decoder: moving the decoder's pad logit alone does not change it, while
    # moving another column does
    seen = {}
    teacher = run.teachers.ar
    run.teachers.ar = lambda *a: seen.update(args=a) or teacher(*a)  # the last call's arguments
    # until a chunk yields holes with frontier rows (the teacher is called then)
    _, info = chunk_until(run, lambda loss, info: "kl" in info, seeds=range(1, 50))
    run.teachers.ar = teacher
    batch, ro, head, logits, loss = seen["args"]
    kl = teacher(batch, ro, head, logits, loss)[0].item()
    bumped = logits.clone()
    bumped[:, run.pad_row] += 5.0
    assert abs(teacher(batch, ro, head, bumped, loss)[0].item() - kl) < 1e-5
    other = logits.clone()
    other[:, (run.pad_row + 1) % logits.shape[1]] += 5.0
    assert abs(teacher(batch, ro, head, other, loss)[0].item() - kl) > 1e-3
    # the hole's end (the first pad) is left to the decoder: canvases whose only target is it get no KL row
    import random

    from transformers import DynamicCache

    from dg_lsp.engine.gemma3 import adapter as A
    from dg_lsp.engine.gemma3 import cache_view as C
    from dg_lsp.train.gemma import objective
    from dg_lsp.train.gemma.data import Hole

    # a chunk can yield no hole (the corpus differs between machines); draw until one does
    for _ in range(50):
        ids, holes = run.maker.holes(4)
        if holes:
            break
    empty = [Hole("empty", h.prompt_ids, [], h.head_ids, "") for h in holes]
    assert empty
    batch = objective.build(empty, len(ids), run.layer_kinds, run.mask_id, run.pad_id, run.vocab.to_rows,
                            random.Random(0))
    assert bool(batch.frontier.all())  # one scored slot per canvas, the pad, and it is the frontier
    with torch.no_grad():
        cache = DynamicCache(config=run.cfg)
        A.encoder_pass(run.model, torch.tensor([ids]), cache)
    ro = C.ReadOnlyCache.of(cache, batch=len(empty))
    dummy = torch.zeros(len(batch.targets), len(run.vocab))
    assert run.teachers.ar(batch, ro, None, dummy, dummy[:, 0]) is None


def test_verified_score_loss_is_the_engines_score_on_left_to_right_rows(tmp_path):
    """--poe trains AR-verified decoding's own score, log p_base + w * log p_decoder, without the pad, on each
    left-to-right canvas's first masked slot: at w = 0 its
    cross-entropy is the base model's alone (the teacher's rows line up with the targets); the decoder's pad logit
    does not move it (the engine leaves the end to the decoder's argmax), another column does; only canvases masked
    from a cut are scored (with --ltr-noise 0 there is nothing to score); and a step with it stays finite and moves
    the adapter."""
    from dg_lsp.train.gemma.trainer import Options, Run

    adapted = build_tiny(tmp_path / "tiny", delta_scale=0.0)
    opts = Options(base=str(adapted.parent / "base"), out=str(tmp_path / "run"), init_from=str(adapted), rank=4,
                   alpha=8.0, holes_per_chunk=4, chunk_tokens=96, head_tokens=4, lr=1e-2, warmup=1,
                   ltr_noise=1.0, poe=1.0, poe_weight=0.0)
    run = Run(opts)
    draw = torch.Generator().manual_seed(0)  # the adapter's draw, whatever earlier tests left in the global RNG
    with torch.no_grad():
        for m in run.adapter.modules.values():
            m.lora_b.normal_(0, 0.5, generator=draw)
    seen = {}
    scorer = run.teachers.verified_score_loss
    run.teachers.verified_score_loss = lambda *a: seen.update(args=a) or scorer(*a)  # the last call's arguments
    # a chunk can yield no hole: draw until one does
    _, info = chunk_until(run, lambda loss, info: "poe" in info)
    run.teachers.verified_score_loss = scorer
    assert abs(info["poe"] - info["poe_base"]) < 1e-4, info  # w = 0: the base model's cross-entropy
    assert info["poe_acc"] == info["poe_base_acc"], info
    batch, ro, head, logits = seen["args"]
    assert bool(batch.ltr.all())
    # the first masked slot of each canvas only (a verified walk's first slot): one row per canvas that does not end
    # there
    sel = batch.ltr & batch.frontier & (batch.targets != run.pad_row)
    assert 0 < int(sel.sum()) <= int(batch.frontier.sum()) == len(set((batch.rows // batch.ids.shape[1]).tolist()))
    run.teachers.poe_weight = 1.0
    ce = scorer(batch, ro, head, logits)[0].item()
    assert ce != info["poe"]
    # w = 1: the mean of the two log-probabilities, renormalised (the engine's argmax, without double counting)
    import torch.nn.functional as F

    sel = batch.ltr & batch.frontier & (batch.targets != run.pad_row)
    keep = torch.arange(logits.shape[1]) != run.pad_row
    base_lp = F.log_softmax(run.teachers.logits(batch, ro, head, batch.rows[sel])[:, keep], dim=-1)
    dec_lp = F.log_softmax(logits[sel][:, keep], dim=-1)
    tgt = batch.targets[sel] - (batch.targets[sel] > run.pad_row).long()
    assert abs(F.cross_entropy((base_lp + dec_lp) / 2, tgt).item() - ce) < 1e-4
    # poe_dec is the decoder's own cross-entropy on those rows, and the decoder (LoRA B drawn above) is another model
    # than the base: compared as distributions, not as two cross-entropies that can lie close by chance
    assert abs(F.nll_loss(dec_lp, tgt).item() - info["poe_dec"]) < 1e-4, info
    assert (dec_lp - base_lp).abs().max().item() > 1e-2
    bumped = logits.clone()
    bumped[:, run.pad_row] += 5.0
    assert abs(scorer(batch, ro, head, bumped)[0].item() - ce) < 1e-5
    other = logits.clone()
    other[:, (run.pad_row + 1) % logits.shape[1]] += 5.0
    assert abs(scorer(batch, ro, head, other)[0].item() - ce) > 1e-4
    before = [p.detach().clone() for p in run.adapter.parameters()]
    for _ in range(20):
        out = run.step()
        if "poe" in out:
            break
    assert math.isfinite(out["loss"]) and math.isfinite(out["poe"]), out
    assert any(not torch.equal(b, p) for b, p in zip(before, run.adapter.parameters()))
    # random masking only: no canvas is left to right, nothing is scored
    run.opts.ltr_noise = 0.0
    loss, info = chunk_until(run, lambda loss, info: loss is not None)
    assert loss is not None and "poe" not in info


def test_draft_distillation_is_the_base_model_right_of_the_frontier(tmp_path):
    """--draft-distill: KL(base || decoder), without the pad, on the masked slots right of the first one in the
    canvases masked left to right (where the engine's drafts are made beside [MASK]s); the agreement figures count
    where the two argmaxes are the same. Decoder logits equal to the teacher's give KL 0 and agreement 1; the pad
    column does not move it; a step with it stays finite and moves the adapter; without a base pass and with the
    option off, nothing is computed."""
    import torch.nn.functional as F

    from dg_lsp.train.gemma.trainer import Options, Run

    adapted = build_tiny(tmp_path / "tiny", delta_scale=0.0)
    opts = Options(base=str(adapted.parent / "base"), out=str(tmp_path / "run"), init_from=str(adapted), rank=4,
                   alpha=8.0, holes_per_chunk=4, chunk_tokens=96, head_tokens=4, lr=1e-2, warmup=1,
                   ltr_noise=1.0, draft_distill=1.0)
    run = Run(opts)
    with torch.no_grad():
        for m in run.adapter.modules.values():
            m.lora_b.normal_(0, 0.5)
    seen = {}
    drafter = run.teachers.draft
    run.teachers.draft = lambda *a: seen.update(args=a) or drafter(*a)  # the last call's arguments
    # a chunk can yield no hole, or holes of one token: draw until one has slots to draft
    _, info = chunk_until(run, lambda loss, info: "draft_kl" in info)
    run.teachers.draft = drafter
    assert "draft_kl" in info and info["draft_kl"] > 1e-4, info
    batch, ro, head, logits = seen["args"]
    right = batch.ltr & ~batch.frontier & (batch.targets != run.pad_row)
    assert bool(right.any())
    keep = torch.arange(logits.shape[1]) != run.pad_row
    t_lp = F.log_softmax(run.teachers.logits(batch, ro, head, batch.rows[right])[:, keep], dim=-1)
    s_lp = F.log_softmax(logits[right][:, keep], dim=-1)
    expected = (t_lp.exp() * (t_lp - s_lp)).sum(-1).mean().item()
    assert abs(info["draft_kl"] - expected) < 1e-4
    assert abs(info["draft_agree"] - (t_lp.argmax(-1) == s_lp.argmax(-1)).float().mean().item()) < 1e-6
    # the teacher's own logits on every scored row: nothing to learn, full agreement
    taught = run.teachers.logits(batch, ro, head, batch.rows)
    kl, figures = drafter(batch, ro, head, taught)
    assert abs(kl.item()) < 1e-5 and figures["draft_agree"] == 1.0, figures
    bumped = logits.clone()
    bumped[:, run.pad_row] += 5.0
    assert abs(drafter(batch, ro, head, bumped)[0].item() - info["draft_kl"]) < 1e-5
    before = [p.detach().clone() for p in run.adapter.parameters()]
    for _ in range(20):
        out = run.step()
        if "draft_kl" in out:
            break
    assert math.isfinite(out["loss"]) and math.isfinite(out["draft_kl"]), out
    assert any(not torch.equal(b, p) for b, p in zip(before, run.adapter.parameters()))
    run.opts.draft_distill = 0.0  # off, and no other loss runs the base model: no figures
    loss, info = chunk_until(run, lambda loss, info: loss is not None)
    assert loss is not None and "draft_kl" not in info
    run.opts.poe = 1.0  # --poe runs the base model's pass: the figures come with it, whatever the order
    _, info = chunk_until(run, lambda loss, info: "draft_kl" in info)
    assert "draft_kl" in info and "poe" in info


def test_draft_slots_limit_the_draft_distillation_to_the_slots_after_the_frontier(tmp_path):
    """--draft-slots k: the draft KL only on the k masked slots right of each left-to-right canvas's first masked one
    (a walk drafts a few slots past its first); the distance counts slots within a canvas, 0 on the frontier."""
    import torch.nn.functional as F

    from dg_lsp.train.gemma.teachers import frontier_distance
    from dg_lsp.train.gemma.trainer import Options, Run

    adapted = build_tiny(tmp_path / "tiny", delta_scale=0.0)
    opts = Options(base=str(adapted.parent / "base"), out=str(tmp_path / "run"), init_from=str(adapted), rank=4,
                   alpha=8.0, holes_per_chunk=4, chunk_tokens=96, head_tokens=4, lr=1e-2, warmup=1,
                   ltr_noise=1.0, draft_distill=1.0, draft_slots=1)
    run = Run(opts)
    assert run.teachers.draft_slots == 1
    with torch.no_grad():
        for m in run.adapter.modules.values():
            m.lora_b.normal_(0, 0.5)
    seen = {}
    drafter = run.teachers.draft
    run.teachers.draft = lambda *a: seen.update(args=a) or drafter(*a)
    def far(batch):  # rows the KL would read without the limit and does not with it
        return batch.ltr & ~batch.frontier & (batch.targets != run.pad_row) & (frontier_distance(batch) >= 2)

    # draw until a canvas has a scored slot (not the hole's end) two or more right of its frontier, so the limit
    # leaves something out
    _, info = chunk_until(run, lambda loss, info: "draft_kl" in info and bool(far(seen["args"][0]).any()))
    run.teachers.draft = drafter
    batch, ro, head, logits = seen["args"]
    dist = frontier_distance(batch)
    assert bool(far(batch).any()), "no canvas with a scored slot two right of its frontier in 50 chunks"
    canvas = batch.rows // batch.ids.shape[1]
    for m in set(canvas.tolist()):  # left to right: a canvas's masked slots run on from its frontier, one apart
        rows = canvas == m
        assert sorted(dist[rows].tolist()) == list(range(int(rows.sum())))
        assert bool((dist[rows & batch.frontier] == 0).all())
    near = batch.ltr & ~batch.frontier & (batch.targets != run.pad_row) & (dist == 1)
    keep = torch.arange(logits.shape[1]) != run.pad_row
    t_lp = F.log_softmax(run.teachers.logits(batch, ro, head, batch.rows[near])[:, keep], dim=-1)
    s_lp = F.log_softmax(logits[near][:, keep], dim=-1)
    expected = (t_lp.exp() * (t_lp - s_lp)).sum(-1).mean().item()
    assert abs(info["draft_kl"] - expected) < 1e-4
    run.teachers.draft_slots = 0  # every slot right of the frontier: another mean here
    assert abs(drafter(batch, ro, head, logits)[0].item() - expected) > 1e-6
