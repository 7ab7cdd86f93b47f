"""The prompt's tokens that the output vocabulary lacks become writable columns (Gemma3Runner.add_columns), after the
vocabulary's own: nothing else moves, the old columns' logits stay exactly as they were, specials never join."""

from __future__ import annotations

import pytest
import torch

from dg_lsp.engine.gemma3 import adapter as A
from dg_lsp.engine.gemma3.tiny import build_tiny
from dg_lsp.engine.types import DenoiseParams, InfillRequest

KEEP = 300  # the tiny model's output vocabulary: ids 0..299 of its 384


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    from dg_lsp.engine import Engine

    e = Engine.load(str(build_tiny(tmp_path_factory.mktemp("tiny-columns"), vocab_keep=KEEP)), device="cpu",
                    dtype="float32")
    yield e
    e.close()


def _outside(engine, n=2):
    """Texts of `n` ordinary tokens the output vocabulary lacks, each one token on its own."""
    tok, out = engine.tokenizer, []
    special = set(tok.all_special_ids)
    for i in range(KEEP, len(tok)):
        text = tok.decode([i])
        if i not in special and text.strip() and tok(text, add_special_tokens=False)["input_ids"] == [i]:
            out.append((i, text))
        if len(out) == n:
            break
    assert len(out) == n
    return out


def test_a_prompts_missing_tokens_become_columns_and_nothing_else_moves(engine):
    runner = engine.runner
    (_, a_text), (_, b_text) = _outside(engine)
    before_ids, pad_col = runner.output_ids.clone(), runner.pad_column
    prompt, canvas, _ = engine.prepare(InfillRequest(prefix="x = 1\n", suffix="\n"))
    cache, _ = runner.encode(prompt)
    ids, pos = canvas.canvas_ids, canvas.position_ids()
    old_verify, old_decode = runner.verify(ids, cache, pos, ids.shape[1]), runner.decode(ids, cache, pos, None, None)
    texts_before = engine.lifecycle.columns.column_texts()

    prefix, suffix = f"x = 1\n{a_text} = 2\n", f"\nprint({b_text})\n"
    tokens = [i for text in (prefix, suffix) for i in engine.tokenizer(text, add_special_tokens=False)["input_ids"]]
    missing = sorted({i for i in tokens if runner.column_of(i) is None})
    assert missing
    plain = InfillRequest(prefix=prefix, suffix=suffix, params=DenoiseParams(temperature=0.0, max_steps=3))
    engine.run_infill(plain)  # plain diffusion (no verified walk): the vocabulary stays as it is
    assert all(runner.column_of(i) is None for i in missing)
    verified = InfillRequest(prefix=prefix, suffix=suffix,
                             params=DenoiseParams(temperature=0.0, max_steps=3, verify_weight=1.0))
    result = engine.run_infill(verified)
    assert not result.cancelled and result.steps >= 1  # a whole verified fill runs with the new columns
    cols = [runner.column_of(i) for i in missing]
    assert None not in cols and min(cols) >= len(before_ids)  # after the vocabulary's own
    assert [int(runner.ids_of(torch.tensor([c]))[0]) for c in cols] == missing
    assert torch.equal(runner.output_ids[:len(before_ids)], before_ids) and runner.pad_column == pad_col
    embed = A.text_model(runner.model).embed_tokens.weight
    assert torch.equal(runner._head[cols[0]], embed[missing[0]])
    assert torch.equal(runner._head, embed[runner.output_ids])  # every row: what a head built whole holds
    texts = engine.lifecycle.columns.column_texts()
    assert len(texts) == len(runner.output_ids) and texts[:len(texts_before)] == texts_before
    engine.lifecycle.columns._cache.clear()
    assert engine.lifecycle.columns.column_texts() == texts  # the grown texts: what a fresh reading gives
    new_verify, new_decode = runner.verify(ids, cache, pos, ids.shape[1]), runner.decode(ids, cache, pos, None, None)
    assert new_verify.shape[-1] == len(runner.output_ids)
    assert torch.equal(new_verify[..., :len(before_ids)], old_verify)  # the old columns' logits: exactly as before
    assert torch.equal(new_decode[..., :len(before_ids)], old_decode)
    assert runner.add_columns(missing) == 0  # known now: nothing changes


def test_specials_never_join_and_the_added_columns_have_a_ceiling(engine, monkeypatch):
    runner = engine.runner
    specials = [i for i in engine.tokenizer.all_special_ids if runner.column_of(i) is None]
    assert runner.add_columns(specials) == 0
    added = len(runner.output_ids) - runner._own_columns
    monkeypatch.setattr(type(runner), "MAX_ADDED_COLUMNS", added + 1)
    outside = [i for i in range(KEEP, len(engine.tokenizer)) if runner.column_of(i) is None
               and i not in set(engine.tokenizer.all_special_ids)]
    assert len(outside) >= 2
    assert runner.add_columns(outside) == 1 and runner.add_columns(outside) == 0


def test_an_int8_head_grows_with_the_columns(tmp_path):
    from dg_lsp.engine import Engine

    engine = Engine.load(str(build_tiny(tmp_path, vocab_keep=KEEP)), device="cpu", dtype="int8")
    try:
        runner = engine.runner
        prompt, canvas, _ = engine.prepare(InfillRequest(prefix="x = 1\n", suffix="\n"))
        cache, _ = runner.encode(prompt)
        ids, pos = canvas.canvas_ids, canvas.position_ids()
        before = runner.decode(ids, cache, pos, None, None)
        outside = [i for i in range(KEEP, len(engine.tokenizer)) if i not in set(engine.tokenizer.all_special_ids)]
        assert runner.add_columns(outside[:3]) == 3
        after = runner.decode(ids, cache, pos, None, None)
        assert runner._head_int8.out_features == len(runner.output_ids) == after.shape[-1] == before.shape[-1] + 3
        assert torch.equal(after[..., :before.shape[-1]], before)  # int8 rows are per row: the old ones unchanged
    finally:
        engine.close()


def test_the_head_grows_in_its_room_and_is_rebuilt_past_it(tmp_path):
    """Added columns' rows go into the head buffer's room (the head stays a view of it: no 32k-row copy); where no
    room is left the head is built whole. Either way it is the embedding's rows of the output ids, in order."""
    from dg_lsp.engine import Engine

    engine = Engine.load(str(build_tiny(tmp_path, vocab_keep=KEEP)), device="cpu", dtype="float32")
    try:
        runner = engine.runner
        embed = A.text_model(runner.model).embed_tokens.weight
        outside = [i for i in range(KEEP, len(engine.tokenizer)) if i not in set(engine.tokenizer.all_special_ids)]
        assert runner.add_columns(outside[:2]) == 2
        assert runner._head.data_ptr() == runner._head_rows.data_ptr() and runner._head.is_contiguous()
        assert torch.equal(runner._head, embed[runner.output_ids])
        runner._head_rows = runner._head_rows[:len(runner.output_ids)]  # no room left
        assert runner.add_columns(outside[2:4]) == 2
        assert runner._head_rows.shape[0] > len(runner.output_ids)  # rebuilt, with room again
        assert torch.equal(runner._head, embed[runner.output_ids])
    finally:
        engine.close()


def test_a_packed_bfloat16_engine_grows_its_plain_head_in_its_room(tmp_path):
    """Packed weights in bfloat16 leave the head plain (Gemma3Runner._build_head), so an added column is copied into
    the head's room as without packing, not the whole head built again."""
    from dg_lsp.engine import Engine
    from dg_lsp.engine.gemma3 import packed as P

    if P.unavailable():
        pytest.skip(P.unavailable())
    engine = Engine.load(str(build_tiny(tmp_path, vocab_keep=KEEP)), device="cpu", dtype="bfloat16")
    try:
        runner = engine.runner
        runner.use_packed(True, base=True)
        assert runner.packed == "all" and runner._head_packed is None
        buffer = runner._head_rows.data_ptr()
        outside = [i for i in range(KEEP, len(engine.tokenizer)) if i not in set(engine.tokenizer.all_special_ids)]
        assert runner.add_columns(outside[:2]) == 2
        assert runner._head_rows.data_ptr() == buffer and runner._head.data_ptr() == buffer
        embed = A.text_model(runner.model).embed_tokens.weight
        assert torch.equal(runner._head, embed[runner.output_ids])
    finally:
        engine.close()


@pytest.mark.parametrize("built_in_inference_mode", [True, False])
def test_the_head_grows_whether_or_not_it_was_built_in_inference_mode(tmp_path, built_in_inference_mode):
    """A head built under inference mode (the dtype trial casts the model inside a worker job) is an inference
    tensor that takes writes only there, while requests add columns outside it, and the other way round: both
    grow the head, and the vocabulary with it."""
    from dg_lsp.engine import Engine

    engine = Engine.load(str(build_tiny(tmp_path, vocab_keep=KEEP)), device="cpu", dtype="float32")
    try:
        runner = engine.runner
        embed = A.text_model(runner.model).embed_tokens.weight
        with torch.inference_mode(built_in_inference_mode):
            runner.refresh()
        assert runner._head_rows.is_inference() == built_in_inference_mode
        outside = [i for i in range(KEEP, len(engine.tokenizer)) if i not in set(engine.tokenizer.all_special_ids)]
        with torch.inference_mode(not built_in_inference_mode):
            assert runner.add_columns(outside[:3]) == 3
        assert runner._head.shape[0] == len(runner.output_ids) and torch.equal(runner._head, embed[runner.output_ids])
        result = engine.run_infill(InfillRequest(prefix="x = 1\n", suffix="\n", params=DenoiseParams(
            temperature=0.0, max_steps=2, verify_weight=1.0)))
        assert not result.cancelled
    finally:
        engine.close()
