"""Canvas sized to the request (issue 15.2): the per-trigger hole sizes, and the engine building a pad-fill canvas
of that many hole slots (never more than the model's), with batches only among equal sizes."""

from __future__ import annotations

from dg_lsp.completion import buckets
from dg_lsp.engine import InfillRequest


def test_hole_slots_per_trigger():
    assert buckets.hole_slots("def f(x):\n    return ", automatic=True) == buckets.MID_LINE_SLOTS
    assert buckets.hole_slots("def f(x):\n    ", automatic=True) == buckets.LINE_SLOTS
    assert buckets.hole_slots("", automatic=True) == buckets.LINE_SLOTS
    assert buckets.hole_slots("x = 1\n", automatic=True) == buckets.LINE_SLOTS
    assert buckets.hole_slots("def f(x):\n    return ", automatic=False) is None
    assert buckets.hole_slots("def f(x):\n    return ", automatic=True, selection=True) is None


def test_engine_builds_the_requested_hole(tiny_engine):
    full = tiny_engine.canvas_length
    prefix, suffix = "def f(x):\n    return ", "\n\ndef g(y):\n    return y * 2\n"
    _, whole, _ = tiny_engine.prepare(InfillRequest(prefix=prefix, suffix=suffix))
    head = whole.suffix_head_len
    assert whole.length == whole.lead + full and whole.hole_lengths == [full - head]
    _, small, _ = tiny_engine.prepare(InfillRequest(prefix=prefix, suffix=suffix, hole_slots=4))
    assert small.hole_lengths == [4] and small.suffix_head_len == head
    assert small.length == small.lead + 4 + head
    assert small.canvas_ids[0, small.lead + 4:].tolist() == whole.canvas_ids[0, whole.lead + full - head:].tolist()
    _, capped, _ = tiny_engine.prepare(InfillRequest(prefix=prefix, suffix=suffix, hole_slots=10 * full))
    assert capped.length == whole.length and capped.hole_lengths == whole.hole_lengths
    result = tiny_engine.infill(InfillRequest(prefix=prefix, suffix=suffix, hole_slots=4, length_strategy="pad"))
    assert result.hole_length == 4 and result.generated_tokens <= 4


def test_one_size_has_one_width_whatever_the_suffix(tiny_engine):
    """Rows of one size share a batch, so their canvases must stack: a short suffix leaves its room to the hole."""
    widths = set()
    for suffix in ("", "\n", "\n\ndef g(y):\n    return y * 2\n"):
        _, canvas, _ = tiny_engine.prepare(InfillRequest(prefix="x = ", suffix=suffix, hole_slots=4))
        widths.add(canvas.length)
        assert canvas.hole_lengths[0] >= 4
    assert len(widths) == 1
    rows = [InfillRequest(prefix=f"v{i} = ", suffix=s, batch_rows=4, length_strategy="pad", hole_slots=4)
            for i, s in enumerate(("", "\n", "\n\ndef g(y):\n    return y * 2\n"))]
    futures = [tiny_engine.submit(r) for r in rows]
    assert all(f.result().steps >= 1 for f in futures)


def test_only_equal_sizes_share_a_batch(tiny_engine):
    a = InfillRequest(prefix="x = ", batch_rows=4, length_strategy="pad", hole_slots=8)
    b = InfillRequest(prefix="y = ", batch_rows=4, length_strategy="pad", hole_slots=8)
    c = InfillRequest(prefix="z = ", batch_rows=4, length_strategy="pad", hole_slots=16)
    assert tiny_engine.batch_key(a) == tiny_engine.batch_key(b) != tiny_engine.batch_key(c)
