import pytest
import torch

from dg_lsp.engine.canvas import BANNED, build_prompt, fix_hole_length, length_candidates_canvas, pad_fill_canvas

PAD, FILL = 0, 3


def test_prompt_keeps_bos_and_the_end_of_the_prefix():
    assert build_prompt([10, 11, 12, 13], max_tokens=3, bos_id=2) == [2, 12, 13]
    assert build_prompt([10, 11], max_tokens=10, bos_id=2) == [2, 10, 11]
    assert build_prompt([10, 11], max_tokens=10, bos_id=None) == [10, 11]
    assert build_prompt([], max_tokens=4, bos_id=2) == [2]


def test_pad_fill_layout_pins_the_suffix_head():
    c = pad_fill_canvas([2, 5, 6], suffix_ids=[20, 21, 22, 23, 24, 25], canvas_length=8, suffix_head_tokens=4,
                        fill_id=FILL, pad_id=PAD)
    assert c.canvas_ids.tolist() == [[FILL] * 4 + [20, 21, 22, 23]]
    assert c.pinned.tolist() == [[False] * 4 + [True] * 4]
    assert c.hole_lengths == [4] and c.suffix_head_len == 4
    assert c.valid.all()
    assert c.position_ids().tolist() == [[3, 4, 5, 6, 7, 8, 9, 10]]  # continue right after the prompt


def test_pad_fill_short_suffix_gives_a_longer_hole_and_no_suffix_gives_a_full_hole():
    c = pad_fill_canvas([2], suffix_ids=[20], canvas_length=8, suffix_head_tokens=4, fill_id=FILL, pad_id=PAD)
    assert c.hole_lengths == [7] and c.canvas_ids[0, 7] == 20 and int(c.pinned.sum()) == 1
    c = pad_fill_canvas([2], suffix_ids=[], canvas_length=8, suffix_head_tokens=4, fill_id=FILL, pad_id=PAD)
    assert c.hole_lengths == [8] and not c.pinned.any()


def test_length_candidates_one_row_per_length_with_padding_masked():
    c = length_candidates_canvas([2, 5], suffix_ids=[20, 21, 22], hole_lengths=(4, 2, 4), suffix_head_tokens=2,
                                 fill_id=FILL, pad_id=PAD)
    assert c.hole_lengths == [2, 4]  # sorted, deduplicated
    assert c.canvas_ids.tolist() == [[FILL, FILL, 20, 21, PAD, PAD], [FILL, FILL, FILL, FILL, 20, 21]]
    assert c.pinned.tolist() == [[False, False, True, True, True, True], [False] * 4 + [True, True]]
    assert c.valid.tolist() == [[True] * 4 + [False, False], [True] * 6]
    assert c.position_ids().tolist() == [[2, 3, 4, 5, 6, 7]]
    with pytest.raises(ValueError):
        length_candidates_canvas([2], [], (0,), 2, FILL, PAD)


def test_selection_is_the_same_layout_prefix_before_suffix_after():
    # "replace this range": prefix = text before the range, suffix = text after it; the hole is the range.
    before, after = [2, 7, 8], [30, 31]
    c = pad_fill_canvas(before, after, canvas_length=6, suffix_head_tokens=4, fill_id=FILL, pad_id=PAD)
    assert c.prompt_ids == before and c.canvas_ids[0, -2:].tolist() == after and c.hole_lengths == [4]
    assert torch.equal(c.hole_mask, ~c.pinned)


def test_prompt_start_moves_in_jumps_while_the_prefix_grows():
    starts = []
    for n in range(20, 60):
        prompt = build_prompt(list(range(100, 100 + n)), max_tokens=17, bos_id=2)  # room 16, stride 4
        assert prompt[0] == 2 and 12 < len(prompt) - 1 <= 16 and prompt[-1] == 100 + n - 1
        starts.append(prompt[1])
    assert len(set(starts)) == 11  # one jump per 4 tokens typed, not one per token
    assert build_prompt(list(range(10)), max_tokens=5, bos_id=None, stride=3) == [6, 7, 8, 9]


def test_model_spec_caps_the_prompt_budget(tiny_model_dir, tmp_path):
    import shutil

    from dg_lsp.engine import Engine, InfillSpec

    capped = tmp_path / "capped"
    shutil.copytree(tiny_model_dir, capped)
    spec = InfillSpec.load(capped)
    InfillSpec(**{**spec.__dict__, "max_prompt_tokens": 8}).save(capped)
    engine = Engine.load(str(capped), device="cpu")
    try:
        assert engine.prompt_budget(1024) == 8 and engine.prompt_budget(4) == 4
    finally:
        engine.close()


def test_a_hole_of_known_length_pins_pads_after_it_and_bans_them_before():
    c = pad_fill_canvas([2], suffix_ids=[20, 21], canvas_length=8, suffix_head_tokens=4, fill_id=FILL, pad_id=PAD)
    fix_hole_length(c, 2, PAD, end_ids=(1,))
    assert c.pinned.tolist() == [[False, False] + [True] * 6]
    assert c.canvas_ids.tolist() == [[FILL, FILL, PAD, PAD, PAD, PAD, 20, 21]]
    for tid in (PAD, 1):
        assert (c.token_bias[tid][0, :2] == BANNED).all() and (c.token_bias[tid][0, 2:] == 0).all()
    fix_hole_length(c, 0, PAD)  # at least one position stays open
    assert c.pinned[0].tolist() == [False] + [True] * 7
