"""Denoising loop behaviour on a tiny random model: pinned tokens, cancellation, noise kinds, deadline.

Where a test checks what the engine reports (steps, tokens, scores, the chosen row), it checks it against what
the loop really did, observed from outside: the decoder forwards counted at the runner, the final canvas and
logits the loop returned (`Capture`), not against the engine's own arithmetic on its own numbers."""

import dataclasses
import math
import threading

import pytest
import torch

from dg_lsp.engine import DenoiseParams, Engine, InfillRequest
from dg_lsp.engine import healing
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


class Capture:
    """Wraps an engine's denoising loop and its runner: each run's canvas and outcome, and every decoder
    forward's input canvas."""

    def __init__(self, engine, monkeypatch):
        self.runs, self.forwards = [], []
        loop, runner = engine.loop, engine.loop.runner
        run, decode = loop.run, runner.decode

        def capture_run(canvas, *args, **kwargs):
            out = run(canvas, *args, **kwargs)
            self.runs.append((canvas, out))
            return out

        def count_decode(canvas, *args, **kwargs):
            self.forwards.append(canvas.clone())
            return decode(canvas, *args, **kwargs)

        monkeypatch.setattr(loop, "run", capture_run)
        monkeypatch.setattr(runner, "decode", count_decode)


def _hole_tokens(engine, canvas, out, row=0) -> list[int]:
    """The row's hole tokens as an editor gets them: up to the end token, without pads and special tokens."""
    kept = []
    for t in out.canvas[row, canvas.lead:canvas.lead + canvas.hole_lengths[row]].tolist():
        if t == engine.eos_id:
            break
        if t != engine.pad_id and t not in engine.tokenizer.all_special_ids:
            kept.append(t)
    return kept


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


def test_a_mask_model_denoises_from_mask_tokens_end_to_end(tiny_mask_model_dir, monkeypatch):
    """Through `Engine.load` and `infill`: the model's spec reaches the loop (its first forward sees only [MASK]
    in the hole), and no [MASK] reaches the answer."""
    engine = Engine.load(tiny_mask_model_dir, device="cpu")
    try:
        assert engine.spec.noise_kind == "mask" and engine.spec.mask_token_id == 3
        seen = Capture(engine, monkeypatch)
        res = engine.infill(InfillRequest(prefix="def f(x):\n    return ", suffix="\n", params=DenoiseParams(max_steps=4)))
        (canvas, _), = seen.runs
        assert res.steps == len(seen.forwards) >= 1
        assert (seen.forwards[0][canvas.hole_mask] == 3).all()
        assert "<mask>" not in res.text and 3 not in engine.tokenize(res.text)
    finally:
        engine.close()


def test_deadline_returns_best_canvas_so_far(tiny_engine, monkeypatch):
    """A step budget that is spent at once stops a 48-step loop after its first forward, and the answer is that
    forward's canvas: the same text as a loop of one step from the same seed (the argmax does not depend on the
    temperature schedule)."""
    seen = Capture(tiny_engine, monkeypatch)
    res = tiny_engine.infill(InfillRequest(prefix="x = ", suffix="\n",
                                           params=DenoiseParams(max_steps=48, deadline_ms=0.0)))
    assert res.deadline_hit and not res.cancelled and len(seen.forwards) == 1
    one = tiny_engine.infill(InfillRequest(prefix="x = ", suffix="\n", params=DenoiseParams(max_steps=1)))
    assert not one.deadline_hit and len(seen.forwards) == 2
    assert res.text == one.text and res.generated_tokens == one.generated_tokens


def test_result_reports_every_timing(tiny_engine):
    res = tiny_engine.infill(InfillRequest(prefix="def add(a, b):\n    return ", suffix="\n",
                                           params=DenoiseParams(max_steps=5)))
    assert set(res.timings_ms) == {"tokenize", "encode", "denoise", "total"}


def test_steps_and_tokens_per_forward_count_what_the_loop_did(tiny_engine, monkeypatch):
    """`steps` are the decoder forwards run (here 1 of 6: the step budget stops the loop), `generated_tokens` the
    hole's tokens without the pads (here the hole holds 3 tokens, then pads), and tokens per forward their ratio."""
    seen = Capture(tiny_engine, monkeypatch)
    res = tiny_engine.infill(InfillRequest(prefix="def add(a, b):\n    return ", suffix="\n", hole_tokens=3,
                                           params=DenoiseParams(max_steps=6, deadline_ms=0.0)))
    (canvas, out), = seen.runs
    kept = _hole_tokens(tiny_engine, canvas, out)
    assert res.steps == len(seen.forwards) == 1
    assert res.generated_tokens == len(kept) <= 3
    # the prompt stopped before the trailing space: the hole starts with it
    written = tiny_engine.tokenizer.decode(kept)
    assert written.startswith(" ") and res.text == healing.unheal(written, " ")
    assert res.tokens_per_forward == pytest.approx(len(kept) / len(seen.forwards))


def test_the_length_search_answers_with_its_most_likely_row(tiny_engine, monkeypatch):
    """Each candidate's score is the mean log-probability of its row's hole tokens under the last step's logits,
    recomputed here from the loop's outcome; the answer is the best row's text and length."""
    seen = Capture(tiny_engine, monkeypatch)
    search = tiny_engine.infill(InfillRequest(prefix="x = ", suffix="\n", length_strategy="search",
                                              hole_lengths=(2, 4, 8), params=DenoiseParams(max_steps=3)))
    (canvas, out), = seen.runs
    logp = torch.log_softmax(out.logits.float(), dim=-1)
    columns = tiny_engine.runner.columns_of(out.canvas)
    a = canvas.lead
    scores = [float(logp[r, a:a + k].gather(-1, columns[r, a:a + k, None]).mean())
              for r, k in enumerate(canvas.hole_lengths)]
    best = max(range(len(scores)), key=scores.__getitem__)
    assert len(set(scores)) == len(scores)  # a real choice
    assert [score for _, score in search.candidates] == pytest.approx(scores)
    assert (search.hole_length, search.score) == (canvas.hole_lengths[best], pytest.approx(scores[best]))
    written = tiny_engine.tokenizer.decode(_hole_tokens(tiny_engine, canvas, out, best))
    assert written.startswith(" ") and search.text == healing.unheal(written, " ")


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
    """Every step draws every hole position anew (accepted or re-noised), so the canvas each later step sees
    holds the previous step's draws: all 7 only if the bias was applied at that step too."""
    canvas = pad_fill_canvas([2, 50, 51], [40, 41], tiny_engine.canvas_length, 4, fill_id=0, pad_id=0)
    canvas.token_bias[7] = torch.where(canvas.pinned, 0.0, 1e4)  # token 7 wins at every hole position
    params = DenoiseParams(max_steps=3, temperature=0.0, stability_threshold=10)  # no early stop: 3 steps
    rec = Recorder(tiny_engine.runner)
    out = _run(tiny_engine, canvas, params, rec)
    hole = canvas.hole_mask[0]
    assert out.steps == len(rec.seen) == 3
    assert not (rec.seen[0][0][hole] == 7).all()  # the start: noise
    for seen in rec.seen[1:]:
        assert (seen[0][hole] == 7).all()
    assert (out.canvas[0][hole] == 7).all()
    assert out.canvas[0][~hole].tolist() == [40, 41]


def test_a_request_with_a_known_hole_length_fills_exactly_that_many_positions(tiny_engine, monkeypatch):
    seen = Capture(tiny_engine, monkeypatch)
    result = tiny_engine.infill(InfillRequest(prefix="def f(x):\n    return ", suffix="\n", hole_tokens=3,
                                              params=DenoiseParams(max_steps=4, temperature=0.0)))
    (canvas, out), = seen.runs
    hole = out.canvas[0, canvas.lead:canvas.lead + canvas.hole_lengths[0]].tolist()
    assert len(hole) > 3
    # pads after position 3 and no pad or end token before it: at most 3 tokens (special ids are dropped)
    assert set(hole[3:]) == {tiny_engine.pad_id}
    assert not {tiny_engine.pad_id, tiny_engine.eos_id} & set(hole[:3])
    assert 1 <= result.generated_tokens <= 3


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


def _open_runs_are_a_suffix(canvas, forwards, mask_id) -> list[bool]:
    """Per decoder forward: are the hole's open ([MASK]) positions all to the right of its accepted ones?"""
    out = []
    for seen in forwards:
        hole = seen[0][canvas.hole_mask[0]]
        is_mask = (hole == mask_id).int()
        out.append(bool((is_mask[1:] >= is_mask[:-1]).all()))
    return out


@pytest.fixture
def ltr_model_dir(tiny_mask_model_dir, tmp_path):
    """The tiny mask-noise model with `unmask_order: left_to_right` in its dg_lsp.json."""
    import json
    import shutil

    ltr_dir = tmp_path / "ltr"
    shutil.copytree(tiny_mask_model_dir, ltr_dir)
    spec = json.loads((ltr_dir / "dg_lsp.json").read_text())
    (ltr_dir / "dg_lsp.json").write_text(json.dumps({**spec, "unmask_order": "left_to_right"}))
    return ltr_dir


def _unsure(real, favourite=lambda length: 40 + torch.arange(length),
            runner_up=lambda length: 41 + torch.arange(length)):
    """A decode that wraps `real`: at every position p the token favourite(L)[p] leads runner_up(L)[p] by a
    gap sure enough to be accepted left to right (p = 0.9 / 0.1 once tempered at the greedy acceptance
    temperature) but never below the confidence threshold (about 0.33 nats per slot); every other token far
    behind. So a left-to-right loop takes one slot a step."""
    from dg_lsp.engine import sampler

    gap = math.log(9.0) * sampler.GREEDY_ACCEPT_TEMPERATURE

    def decode(canvas, *args, **kwargs):
        logits = torch.full_like(real(canvas, *args, **kwargs), -30.0)
        length = logits.shape[1]
        logits[:, torch.arange(length), favourite(length)] = gap
        logits[:, torch.arange(length), runner_up(length)] = 0.0
        return logits

    return decode


def _line_break_engine(ltr_model_dir, monkeypatch, breaks: tuple[int, ...]):
    """The left-to-right tiny model with a decode (_unsure: one slot a step) whose favourite at hole slot k is token
    40 + lead + k, or a line break at the slots in `breaks`; the runner-up is 200 + lead + k. Returns the engine,
    the line break's id and `lead`, a dict whose "a" the caller sets to the hole's first canvas position."""
    engine = Engine.load(str(ltr_model_dir), device="cpu")
    newline = engine.tokenizer.encode("\n", add_special_tokens=False)
    assert len(newline) == 1
    runner = engine.loop.runner
    lead = {}

    def favourite(length):
        best = 40 + torch.arange(length)
        for k in breaks:
            best[lead["a"] + k] = newline[0]
        return best

    monkeypatch.setattr(runner, "decode",
                        _unsure(runner.decode, favourite, lambda length: 200 + torch.arange(length)))
    return engine, newline[0], lead


def test_a_left_to_right_model_only_ever_extends_a_clean_prefix(tiny_mask_model_dir, ltr_model_dir, monkeypatch):
    """`unmask_order: left_to_right` in dg_lsp.json reaches the loop through `Engine.load`: every forward sees the
    hole as accepted tokens followed by [MASK]s, and each forward after the first sees one accepted position more
    than the one before it, at least, until the hole is full. The same request on the same model in the default (entropy) order does accept
    positions out of order, so the check tells the two apart."""
    # no healed space: both orders choose the first slot freely
    request = dict(prefix="def f(x):\n    return", suffix="\n",
                   params=DenoiseParams(max_steps=8, temperature=0.8, entropy_bound=2.0))
    patterns = {}
    for name, path in (("entropy", tiny_mask_model_dir), ("left_to_right", ltr_model_dir)):
        engine = Engine.load(str(path), device="cpu")
        try:
            seen = Capture(engine, monkeypatch)
            engine.infill(InfillRequest(**request))
            (canvas, _), = seen.runs
            patterns[name] = _open_runs_are_a_suffix(canvas, seen.forwards, 3)
            if name == "left_to_right":
                assert len(seen.forwards) >= 2
                accepted = [int((f[0][canvas.hole_mask[0]] != 3).sum()) for f in seen.forwards]
                width = int(canvas.hole_mask[0].sum())
                assert accepted[0] == 0
                assert all(b >= min(a + 1, width) for a, b in zip(accepted, accepted[1:])), accepted
        finally:
            engine.close()
    assert all(patterns["left_to_right"]), patterns
    assert not all(patterns["entropy"]), patterns


def test_an_unknown_unmask_order_is_refused():
    from dg_lsp.engine.spec import InfillSpec

    with pytest.raises(ValueError, match="unmask_order"):
        InfillSpec(unmask_order="random")
    with pytest.raises(ValueError, match="needs noise_kind 'mask'"):
        InfillSpec(unmask_order="left_to_right")  # uniform noise: accepted and open positions look alike


def test_left_to_right_stops_once_the_hole_is_full_and_stable(tiny_mask_model_dir, ltr_model_dir, monkeypatch):
    """A model sure enough to be accepted but never below the confidence threshold (about 0.33 nats per slot at
    the greedy acceptance temperature): left to right it takes one slot a step and stops at the step that fills
    the hole, its argmax unchanged from the step before; the same model in the default order never passes the
    confidence test and runs every step."""
    steps = {}
    for name, path in (("entropy", tiny_mask_model_dir), ("left_to_right", ltr_model_dir)):
        engine = Engine.load(str(path), device="cpu")
        runner = engine.loop.runner
        monkeypatch.setattr(runner, "decode", _unsure(runner.decode))
        try:
            seen = Capture(engine, monkeypatch)
            res = engine.infill(InfillRequest(prefix="x = ", suffix="\n", params=DenoiseParams(temperature=0,
                                                                                             max_steps=60)))
            (canvas, _), = seen.runs
            steps[name] = (res.steps, int(canvas.hole_mask[0].sum()))
        finally:
            engine.close()
    taken, width = steps["left_to_right"]
    assert taken == width, steps
    assert steps["entropy"][0] == 60, steps


def test_left_to_right_stopped_inside_its_answer_shows_only_finished_lines(tiny_mask_model_dir, ltr_model_dir,
                                                                         monkeypatch):
    """A left-to-right loop that ends with open slots (here its step budget: 3 steps at one slot a step) reads the
    slots its steps accepted plus the first open one (what the next step would take first; the slots after it,
    guessed with [MASK]s on their left, are left out). With no end among them it stopped inside its answer, so only
    the complete lines of those 4 tokens are shown: none here (no line break), so nothing. The entropy order
    answers with its whole argmax canvas, as before."""
    answers = {}
    for name, path in (("entropy", tiny_mask_model_dir), ("left_to_right", ltr_model_dir)):
        engine = Engine.load(str(path), device="cpu")
        runner = engine.loop.runner
        monkeypatch.setattr(runner, "decode", _unsure(runner.decode))
        try:
            seen = Capture(engine, monkeypatch)
            res = engine.infill(InfillRequest(prefix="x =", suffix="\n", params=DenoiseParams(temperature=0,
                                                                                            max_steps=3)))
            (canvas, out), = seen.runs
            a, width = canvas.lead, int(canvas.hole_mask[0].sum())
            answers[name] = (res.generated_tokens, width, res.text,
                             engine.tokenizer.decode(list(range(40 + a, 40 + a + 4))),
                             out.canvas[0, a:a + 4].tolist() == list(range(40 + a, 40 + a + 4)))
        finally:
            engine.close()
    read, width, text, first_four, written = answers["left_to_right"]
    assert width > 4 and read == 4 and written, answers
    assert "\n" not in first_four and text == "", answers
    assert answers["entropy"][0] == answers["entropy"][1], answers  # the whole hole


def test_a_line_only_left_to_right_fill_stops_at_its_first_accepted_line_break(ltr_model_dir, monkeypatch):
    """One slot a step (sure enough to be accepted, never confident), with a line break as the third slot's
    favourite: a `line_only` request stops at the step that accepts it (3) and answers with its first line, while
    the same request without `line_only` runs until its hole is (about) full. Accepted slots never change, so the first
    line is the one the full run writes."""
    engine, _, lead = _line_break_engine(ltr_model_dir, monkeypatch, (2,))
    runner = engine.loop.runner
    try:
        seen = Capture(engine, monkeypatch)
        runs = {}
        for line_only in (True, False):
            prepared = engine.prepare(InfillRequest(prefix="x =", suffix="\n", line_only=line_only))[1]
            lead["a"] = prepared.lead
            res = engine.infill(InfillRequest(prefix="x =", suffix="\n", line_only=line_only,
                                              params=DenoiseParams(temperature=0, max_steps=60)))
            runs[line_only] = (res.steps, res.text, int(seen.runs[-1][0].hole_mask[0].sum()))
        first_line = engine.tokenizer.decode([40 + lead["a"], 41 + lead["a"]])
    finally:
        engine.close()
    steps, text, _ = runs[True]
    assert steps == 3 and text.split("\n")[0] == first_line, runs
    full_steps, full_text, width = runs[False]
    assert width - 2 <= full_steps <= width and full_text.split("\n")[0] == first_line, runs


def test_a_line_only_fill_after_a_line_break_ends_at_the_answers_own_line_break(ltr_model_dir, monkeypatch):
    """A whole-line hole (the prefix ends in a line break, text follows the cursor): token healing leaves that line
    break to the hole's first token, so it ends nothing. The fill stops at the next accepted line break, the end of
    the answer's line (slot 3), not at the first slot's, and answers with the line between them. The first step
    takes two slots (the healed one is certain: every token that does not start a line is banned there), so the
    stop comes at step 3; without `line_only` the fill runs on until its hole is (about) full."""
    engine, _, lead = _line_break_engine(ltr_model_dir, monkeypatch, (0, 3))
    runner = engine.loop.runner
    request = dict(prefix="x = 1\n", suffix="y = 2\n", line_only=True)
    try:
        prepared = engine.prepare(InfillRequest(**request))
        assert prepared[2] == "\n"  # the healing tail
        lead["a"] = prepared[1].lead
        params = DenoiseParams(temperature=0, max_steps=60)
        res = engine.infill(InfillRequest(**request, params=params))
        later = engine.infill(InfillRequest(**request, params=dataclasses.replace(params, settle_steps=5)))
        full = engine.infill(InfillRequest(**{**request, "line_only": False}, params=params))
        line = engine.tokenizer.decode([41 + lead["a"], 42 + lead["a"]])
    finally:
        engine.close()
    assert res.steps == 3 and res.text.split("\n")[0] == line, res
    # settle_steps=5: the argmax up to the line break must equal the last five steps' (it never changes here), so
    # the first step that can stop is the sixth
    assert later.steps == 6 and later.text.split("\n")[0] == line, later
    assert full.steps > 6 and full.text.split("\n")[0] == line, full


def test_a_left_to_right_fill_stops_where_its_block_ends(ltr_model_dir, monkeypatch):
    """`block_indent`: a line break in slot 2 and a token at column 0 in slot 3, after a cursor whose block is
    indented: the shown text ends before that line (postprocess.cut_to_block), so the fill stops at the step that
    accepts slot 3 (step 3: the step that takes slot 2's line break takes slot 3 with it), with the same first line
    as the fill without the rule, which runs on until its hole is (about) full."""
    engine, _, lead = _line_break_engine(ltr_model_dir, monkeypatch, (2,))
    runner = engine.loop.runner
    params = DenoiseParams(temperature=0, max_steps=60)
    try:
        lead["a"] = engine.prepare(InfillRequest(prefix="x =", suffix="\n"))[1].lead
        texts = engine.lifecycle.columns.column_texts()
        col = runner.column_of(int(40 + lead["a"] + 3))
        assert texts[col] and not texts[col][0].isspace()  # slot 3 starts a line at column 0
        block = engine.infill(InfillRequest(prefix="x =", suffix="\n", block_indent=4, block_lines=8, params=params))
        flat = engine.infill(InfillRequest(prefix="x =", suffix="\n", block_indent=0, block_lines=8, params=params))
        full = engine.infill(InfillRequest(prefix="x =", suffix="\n", params=params))
        first_line = engine.tokenizer.decode([40 + lead["a"], 41 + lead["a"]])
    finally:
        engine.close()
    assert block.steps == 3 and block.text.split("\n")[0] == first_line, block
    assert full.steps > 6 and full.text.split("\n")[0] == first_line, full
    assert flat.steps > 6, flat  # at indentation 0 no line dedents: the rule decides nothing here


def test_a_line_only_fill_never_starts_by_breaking_the_line(ltr_model_dir, monkeypatch):
    """Only a line-only answer's first line is shown, so a first token that breaks the line before any text would
    show nothing: there the first slot takes its best token that stays on the line. Without `line_only` the
    model's favourite, the line break, comes first."""
    engine, newline, lead = _line_break_engine(ltr_model_dir, monkeypatch, (0,))
    runner = engine.loop.runner
    params = DenoiseParams(temperature=0, max_steps=60)
    try:
        lead["a"] = engine.prepare(InfillRequest(prefix="x =", suffix=")\n"))[1].lead
        opens = engine.lifecycle.columns.opens_a_line()
        assert bool(opens[runner.column_of(newline)]) and int(opens.sum()) < len(opens) // 2
        on_line = engine.infill(InfillRequest(prefix="x =", suffix=")\n", line_only=True, params=params))
        free = engine.infill(InfillRequest(prefix="x =", suffix=")\n", params=params))
        runner_up = engine.tokenizer.decode([200 + lead["a"]])
    finally:
        engine.close()
    assert free.text.startswith("\n"), free
    assert on_line.text.startswith(runner_up) and not on_line.text.startswith("\n"), on_line


def test_a_loop_that_spends_its_steps_before_its_rows_finish_says_so(tiny_engine, monkeypatch):
    """`DenoiseOutcome.spent`: the step budget ran out with a row unfinished (one step of a fill that has not
    converged), not a deadline (that is `deadline_hit`), and not a loop whose rows all stopped inside it (the stop
    test made to pass at once: one step of 48)."""
    seen = Capture(tiny_engine, monkeypatch)
    tiny_engine.infill(InfillRequest(prefix="x = ", suffix="\n", params=DenoiseParams(max_steps=1)))
    tiny_engine.infill(InfillRequest(prefix="x = ", suffix="\n", params=DenoiseParams(max_steps=48, deadline_ms=0.0)))
    monkeypatch.setattr(tiny_engine.loop, "stop", lambda history, current, *a, **k: torch.ones(
        current.shape[0], dtype=torch.bool, device=current.device))
    tiny_engine.infill(InfillRequest(prefix="x = ", suffix="\n", params=DenoiseParams(max_steps=48)))
    (_, one), (_, timed), (_, stopped) = seen.runs
    assert one.spent and not one.deadline_hit
    assert timed.deadline_hit and not timed.spent
    assert stopped.steps == 1 and not stopped.spent
