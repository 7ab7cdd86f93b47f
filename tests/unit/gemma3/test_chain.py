"""The draft-chain head (engine/gemma3/chain.py) on a tiny adapted Gemma 3: how the walk reads it, that it only
drafts (the kept answer stays the base model's), and that its trainer (train/gemma/chain.py) learns and ships."""

from __future__ import annotations

import json
import shutil

import pytest
import torch

from dg_lsp.engine.gemma3 import adapter as A
from dg_lsp.engine.gemma3.chain import FILE, ChainHead
from dg_lsp.engine.gemma3.tiny import build_tiny
from dg_lsp.engine.types import DenoiseParams, InfillRequest
from dg_lsp.engine.verified import VerifiedWalk
from dg_lsp.train.gemma import chain as T

PREFIX = "def add(a, b):\n    return a"


@pytest.fixture(scope="module")
def adapted(tmp_path_factory):
    # a decoder that differs from the base model (delta 0.3), whose end head never ends the hole
    return build_tiny(tmp_path_factory.mktemp("tiny-chain"), delta_scale=0.3, end_bias=-50.0)


def _with_head(adapted, name: str, head: ChainHead):
    """A sibling of `adapted` (its base path stays valid) with `head` shipped in it."""
    out = adapted.parent / name
    if out.exists():
        shutil.rmtree(out)
    T.ship(adapted, out, head)
    return out


def _load(path):
    from dg_lsp.engine import Engine

    return Engine.load(str(path), device="cpu", dtype="float32")


def _fill(engine, weight, bound=1e9):
    params = DenoiseParams(temperature=0.0, max_steps=16, entropy_bound=bound, verify_weight=weight)
    return engine.run_infill(InfillRequest(prefix=PREFIX, suffix="\n", params=params, heal=False,
                                           reuse_prefix=False))


def _outcomes(engine, monkeypatch) -> list:
    outcomes = []
    run = engine.loop.run
    monkeypatch.setattr(engine.loop, "run", lambda *a, **k: outcomes.append(run(*a, **k)) or outcomes[-1])
    return outcomes


def _boosting(width: int, row: torch.Tensor, depth: int) -> ChainHead:
    """A head whose change is a large multiple of `row` (an output-head row): its column wins wherever it drafts."""
    head = ChainHead(width, 8, depth)
    with torch.no_grad():
        head.w2.bias.copy_(row.float() * (1000.0 / float(row.float().norm()) ** 2))
    return head


def test_a_model_without_a_head_has_none_and_an_untrained_head_changes_nothing(adapted, monkeypatch):
    plain = _load(adapted)
    chained = _load(_with_head(adapted, "untrained", ChainHead(64, 16, depth=2)))
    try:
        assert plain.runner.chain is None and chained.runner.chain is not None
        assert json.loads((adapted.parent / "untrained" / "dg_lsp.json").read_text())["chain"] == {
            "file": FILE, "hidden": 16, "depth": 2}
        seen = (_outcomes(plain, monkeypatch), _outcomes(chained, monkeypatch))
        runner, passes, calls = chained.runner, [], []
        decode, delta = runner.decode_with_hidden, runner.chain_delta
        monkeypatch.setattr(runner, "decode_with_hidden", lambda *a, **k: passes.append(decode(*a, **k)) or passes[-1])
        monkeypatch.setattr(runner, "chain_delta", lambda *a: calls.append((len(passes), a)) or delta(*a))
        for weight in (0.0, 1.0):
            a, b = _fill(plain, weight), _fill(chained, weight)
            assert a.text and (a.text, a.steps, a.generated_tokens) == (b.text, b.steps, b.generated_tokens)
        # W2 = 0: the decoder's own logits, to the bit
        for x, y in zip(*seen):
            assert torch.equal(x.logits, y.logits) and torch.equal(x.canvas, y.canvas)
        # the head read the rows that drafted f and f + 1 and f's draft: position j's logits are row j - 1's
        assert calls and all(n >= 1 for n, _ in calls)
        firsts = [(n, args) for i, (n, args) in enumerate(calls) if i == 0 or calls[i - 1][0] != n]
        for n, (h_prev, h_mask, ids) in firsts:
            logits, hidden = passes[n - 1]
            own = A.decoder_logits(runner.adapter, h_mask, runner._head, runner.pad_column)[0]
            j = next(j for j in range(1, logits.shape[1]) if torch.allclose(logits[0, j], own, atol=1e-5))
            assert torch.equal(h_prev, hidden[0, j - 2:j - 1]) and torch.equal(h_mask, hidden[0, j - 1:j])
            assert int(runner.columns_of(ids)[0]) == int(logits[0, j - 1].argmax())
    finally:
        plain.close()
        chained.close()


def test_chain_delta_is_the_change_in_the_decoders_logits(adapted):
    engine = _load(_with_head(adapted, "random", ChainHead(64, 16)))
    try:
        runner = engine.runner
        torch.manual_seed(0)
        with torch.no_grad():
            for p in runner.chain.parameters():
                p.normal_(0.0, 0.2)
            runner.adapter.end_row.normal_(0.0, 0.5)  # the end head reads the new state too
        h_prev, h_mask = torch.randn(3, 64), torch.randn(3, 64)
        ids = torch.tensor([5, 17, 40])

        def check():
            delta, state = runner.chain_delta(h_prev, h_mask, ids)
            token = ChainHead.token_features(A.text_model(runner.model).embed_tokens, ids)
            want = runner.chain(h_prev, h_mask, token)
            direct = (A.decoder_logits(runner.adapter, want, runner._head, runner.pad_column)
                      - A.decoder_logits(runner.adapter, h_mask, runner._head, runner.pad_column))
            assert torch.allclose(state, want, atol=1e-5)
            assert delta.shape == direct.shape and torch.allclose(delta, direct, atol=1e-4)
            assert float(direct[:, runner.pad_column].abs().max().detach()) > 0.01  # the end head's term is in there

        check()
        before = runner._head.shape[0]
        assert runner.add_columns(range(before, runner.output_vocab.full_size)) == 0  # all 384 are columns here
        runner._vocab = type(runner._vocab)(runner._vocab.ids.cpu().tolist()[:300], runner._vocab.full_size)
        runner.output_vocab = runner._vocab.to(runner.device)
        runner._build_head()  # a smaller head: the kept columns are rebuilt, not reused
        check()
        assert runner.add_columns([310, 311]) == 2  # grown: the new columns join the kept ones
        check()
    finally:
        engine.close()


def test_the_walk_redrafts_the_slot_after_the_first_open_one(adapted):
    engine = _load(_with_head(adapted, "boost", ChainHead(64, 8)))
    try:
        runner = engine.runner
        walk = VerifiedWalk(runner, int(engine.loop.mask_id))
        target = 77
        length, vocab = 10, runner._head.shape[0]
        torch.manual_seed(1)
        hidden = torch.randn(1, length, 64)
        open_ = torch.zeros(1, length, dtype=torch.bool)
        open_[0, 4:8] = True  # f = 4

        def run(depth, first_col=3, pad_at=None):
            runner.chain = _boosting(64, runner._head[target], depth)
            runner._chain_cols = None
            raw = torch.randn(1, length, vocab)
            raw[0, 4, first_col] = 50.0  # f's draft
            if pad_at is not None:
                raw[0, pad_at, runner.pad_column] = 50.0  # the decoder ends the hole there
            before = raw.clone()
            walk._chain(raw, hidden, open_)
            return before, raw

        before, raw = run(1)
        assert int(raw[0, 5].argmax()) == target and int(before[0, 5].argmax()) != target
        changed = (raw != before).any(-1)[0]
        assert changed.tolist() == [i == 5 for i in range(length)]
        before, raw = run(2)
        assert (raw != before).any(-1)[0].tolist() == [i in (5, 6) for i in range(length)]
        # f's draft ends the hole: nothing after it is redrafted
        before, raw = run(2, first_col=runner.pad_column)
        assert torch.equal(raw, before)
        # the decoder ends the hole at f + 1 (or f + 2): the head leaves that end, and what follows, alone
        before, raw = run(2, pad_at=5)
        assert torch.equal(raw, before)
        before, raw = run(2, pad_at=6)
        assert (raw != before).any(-1)[0].tolist() == [i == 5 for i in range(length)]
        assert int(raw[0, 6].argmax()) == runner.pad_column
        # the slot after f is not open (kept, pinned or outside a narrowed view): nothing
        open_[0, 5:] = False
        before, raw = run(2)
        assert torch.equal(raw, before)
    finally:
        engine.close()


def test_a_head_that_drafts_badly_cannot_change_the_base_models_answer(adapted):
    plain = _load(adapted)
    ar = plain.autoregressive(PREFIX, max_new_tokens=12, stop_at_newline=False, heal=False)
    greedy = _fill(plain, 0.0)
    plain.close()
    row = None
    engine = _load(_with_head(adapted, "bad", ChainHead(64, 8, depth=3)))
    try:
        runner = engine.runner
        row = runner._head[runner.column_of(7)]
        runner.chain = _boosting(64, row, 3)  # drafts token 7 after every first open slot
        runner._chain_cols = None
        out = _fill(engine, 0.0)
        assert out.text == greedy.text and greedy.text.startswith(ar.text[:len(greedy.text)])
        assert out.steps >= greedy.steps  # worse drafts: the same answer, in as many steps or more
    finally:
        engine.close()


def test_the_trainer_learns_f_plus_one_from_f_and_ships_the_head(adapted):
    engine = _load(adapted)
    try:
        runner = engine.runner
        torch.manual_seed(0)
        n = 1200
        g0 = torch.randint(10, 200, (n,))
        rows = {"h_prev": torch.randn(n, 64) * 0.1, "h_mask": torch.randn(n, 64) * 0.1, "g0": g0, "g1": g0,
                "d0": g0, "d1": torch.randint(10, 200, (n,)), "family": torch.arange(n) // 4}
        path = adapted.parent / "rows.pt"
        torch.save(rows, path)
        loaded = T.load_rows([str(path)], runner)
        head, figures = T.train(runner, loaded, hidden=64, epochs=6, depth=1, lr=3e-3, seed=0, log=lambda m: None)
        # f + 1's token is f's (a function of f's token alone): learnable from its embedding, not by chance
        assert figures["chain_f+1_held_back"] > 60.0 > figures["decoder_f+1_held_back"] + 40.0
        assert figures["epoch"] >= 1
        out = adapted.parent / "trained"
        if out.exists():
            shutil.rmtree(out)
        shutil.copytree(adapted, out)
        (out / "MODEL.md").write_text("# tiny\n\n## Training data\nnone\n")
        for _ in range(2):  # shipped again: the card's section is replaced, not repeated
            T.ship(out, out, head, T.card_section(figures, [str(path)]))
        card = (out / "MODEL.md").read_text()
        assert card.count(T.CARD_SECTION) == 1 and card.startswith("# tiny\n\n## Training data\nnone\n")
        assert f"{figures['chain_f+1_held_back']}% of the time" in card and "rows.pt" in card
    finally:
        engine.close()
    reloaded = _load(out)
    try:
        for k, v in head.state_dict().items():
            assert torch.equal(reloaded.runner.chain.state_dict()[k], v)
    finally:
        reloaded.close()
