"""Denoising loop behaviour on a tiny random model: pinned tokens, cancellation, noise kinds, deadline."""

import threading

import torch

from dg_lsp.engine import DenoiseParams, Engine, InfillRequest
from dg_lsp.engine.canvas import length_candidates_canvas, pad_fill_canvas
from dg_lsp.engine.denoise import DenoiseLoop


class Recorder:
    """Wraps the runner's decode to record every canvas the model sees."""

    def __init__(self, runner, after=None):
        self.runner, self.seen, self.after = runner, [], after
        self._decode = runner.decode

    def __call__(self, canvas, *args, **kwargs):
        self.seen.append(canvas.clone())
        if self.after:
            self.after(len(self.seen))
        return self._decode(canvas, *args, **kwargs)


def _run(engine, canvas, params, recorder, cancel=None, kind="uniform", mask_id=None):
    engine.runner.decode = recorder
    try:
        cache, _ = engine.runner.encode(canvas.prompt_ids)
        if canvas.batch_size > 1:
            cache.batch_repeat_interleave(canvas.batch_size)
        loop = DenoiseLoop(engine.runner, kind, mask_id)
        return loop.run(canvas, cache, params, torch.Generator().manual_seed(0), cancel)
    finally:
        engine.runner.decode = recorder._decode


def test_pinned_tokens_never_change(tiny_engine):
    suffix = [40, 41, 42, 43]
    canvas = pad_fill_canvas([2, 50, 51], suffix, tiny_engine.canvas_length, 4, fill_id=0, pad_id=0)
    rec = Recorder(tiny_engine.runner)
    out = _run(tiny_engine, canvas, DenoiseParams(max_steps=10, temperature=0.8), rec)
    assert len(rec.seen) == out.steps == 10
    for seen in rec.seen:
        assert seen[0, -4:].tolist() == suffix
    assert out.canvas[0, -4:].tolist() == suffix
    # the hole was really re-noised between steps
    assert any(not torch.equal(rec.seen[i][0, :-4], rec.seen[i + 1][0, :-4]) for i in range(len(rec.seen) - 1))


def test_pinned_tokens_in_a_length_candidate_batch(tiny_engine):
    canvas = length_candidates_canvas([2, 50], [40, 41, 42], (2, 5, 9), 3, fill_id=0, pad_id=0)
    rec = Recorder(tiny_engine.runner)
    out = _run(tiny_engine, canvas, DenoiseParams(max_steps=5), rec)
    for seen in rec.seen:
        assert torch.equal(seen[canvas.pinned], canvas.canvas_ids[canvas.pinned])
    assert out.canvas.shape == (3, 12)


def test_cancel_stops_within_one_step(tiny_engine):
    cancel = threading.Event()
    canvas = pad_fill_canvas([2, 50], [40], tiny_engine.canvas_length, 4, fill_id=0, pad_id=0)
    rec = Recorder(tiny_engine.runner, after=lambda n: cancel.set() if n == 3 else None)
    out = _run(tiny_engine, canvas, DenoiseParams(max_steps=40), rec, cancel=cancel)
    assert out.cancelled and out.steps == 3


def test_mask_noise_starts_from_mask_tokens_and_remasks(tiny_engine):
    canvas = pad_fill_canvas([2, 50], [40, 41], tiny_engine.canvas_length, 4, fill_id=3, pad_id=0)
    rec = Recorder(tiny_engine.runner)
    _run(tiny_engine, canvas, DenoiseParams(max_steps=4, temperature=0.8), rec, kind="mask", mask_id=3)
    assert (rec.seen[0][0, :-2] == 3).all()
    assert all((s[0, :-2] == 3).any() for s in rec.seen[1:])  # unaccepted positions go back to [MASK]
    assert all(s[0, -2:].tolist() == [40, 41] for s in rec.seen)


def test_mask_model_end_to_end(tiny_mask_model_dir):
    engine = Engine.load(tiny_mask_model_dir, device="cpu")
    try:
        assert engine.spec.noise_kind == "mask" and engine.spec.mask_token_id == 3
        res = engine.infill(InfillRequest(prefix="def f(x):\n    return ", suffix="\n", params=DenoiseParams(max_steps=4)))
        assert res.steps >= 1 and res.timings_ms["total"] > 0
    finally:
        engine.close()


def test_deadline_returns_best_canvas_so_far(tiny_engine):
    res = tiny_engine.infill(InfillRequest(prefix="x = ", suffix="\n",
                                           params=DenoiseParams(max_steps=48, deadline_ms=0.0)))
    assert res.deadline_hit and res.steps == 1 and not res.cancelled


def test_result_reports_timings_steps_and_tokens_per_forward(tiny_engine):
    res = tiny_engine.infill(InfillRequest(prefix="def add(a, b):\n    return ", suffix="\n",
                                           params=DenoiseParams(max_steps=5)))
    assert set(res.timings_ms) == {"tokenize", "encode", "denoise", "total"}
    assert 1 <= res.steps <= 5
    assert res.tokens_per_forward == res.generated_tokens / res.steps
    search = tiny_engine.infill(InfillRequest(prefix="x = ", suffix="\n", length_strategy="search",
                                              hole_lengths=(2, 4), params=DenoiseParams(max_steps=3)))
    assert len(search.candidates) == 2 and search.hole_length in (2, 4)
    assert search.score == max(score for _, score in search.candidates)


def test_autoregressive_baseline_stops_at_newline(tiny_engine):
    res = tiny_engine.autoregressive("def add(a, b):\n    return ", max_new_tokens=12)
    assert res.generated_tokens <= 12
    assert "\n" not in res.text[:-1]


def test_worker_supersedes_queued_request_of_the_same_document(tiny_engine):
    gate = threading.Event()
    from dg_lsp.engine.worker import Job

    blocker = tiny_engine.worker.submit(Job(fn=gate.wait, doc_key="other", cancel=threading.Event(),
                                            superseded=lambda: None))
    first = tiny_engine.submit(InfillRequest(prefix="a", doc_key="doc1", params=DenoiseParams(max_steps=2)))
    second = tiny_engine.submit(InfillRequest(prefix="ab", doc_key="doc1", params=DenoiseParams(max_steps=2)))
    assert first.result(timeout=5).cancelled  # resolved at once, while the worker is still blocked
    gate.set()
    blocker.result(timeout=5)
    assert not second.result(timeout=30).cancelled


def test_token_bias_is_applied_at_every_step(tiny_engine):
    canvas = pad_fill_canvas([2, 50, 51], [40, 41], tiny_engine.canvas_length, 4, fill_id=0, pad_id=0)
    canvas.token_bias[7] = torch.where(canvas.pinned, 0.0, 1e4)  # token 7 wins at every hole position
    params = DenoiseParams(max_steps=3, temperature=0.0)
    out = _run(tiny_engine, canvas, params, Recorder(tiny_engine.runner))
    hole = canvas.hole_mask[0]
    assert (out.canvas[0][hole] == 7).all()
    assert out.canvas[0][~hole].tolist() == [40, 41]


def test_a_request_with_a_known_hole_length_fills_exactly_that_many_positions(tiny_engine):
    result = tiny_engine.infill(InfillRequest(prefix="def f(x):\n    return ", suffix="\n", hole_tokens=3,
                                              params=DenoiseParams(max_steps=4, temperature=0.0)))
    # pads after position 3 and no pad or end token before it: at most 3 tokens (special ids are dropped)
    assert 1 <= result.generated_tokens <= 3 and result.hole_length == tiny_engine.canvas_length - 1


def test_banned_positions_keep_a_finite_entropy_and_get_accepted(tiny_engine):
    from dg_lsp.engine import sampler
    from dg_lsp.engine.canvas import fix_hole_length

    canvas = pad_fill_canvas([2, 50, 51], [40], tiny_engine.canvas_length, 4, fill_id=0, pad_id=0)
    fix_hole_length(canvas, 2, pad_id=0)
    logits = torch.zeros(1, canvas.length, tiny_engine.runner.vocab_size)
    logits[..., 0] += canvas.token_bias[0]
    entropy = sampler.token_entropy(logits)
    assert torch.isfinite(entropy).all()
    # a generous bound accepts every open position: none is stuck as NaN
    accepted = sampler.entropy_bound_accept(entropy, 1e9, canvas.hole_mask)
    assert accepted[0, :2].all()
