"""Suffix-scored alternatives (engine/alternatives.py) on a tiny adapted Gemma 3: which answers they weigh, that a
line's score is the base model's log-probability of it and the suffix head, that the lines they write are the base
model's greedy lines after each branch token (drafting changes no token), and that the winner is the best score."""

from __future__ import annotations

import dataclasses

import time
from dataclasses import replace

import pytest
import torch

from dg_lsp.engine import alternatives as AL
from dg_lsp.engine.alternatives import after_heal, line_mode, lookup, suffix_head
from dg_lsp.engine.gemma3.tiny import build_tiny
from dg_lsp.engine.types import DenoiseParams, InfillRequest, InfillResult

PREFIX = "def add(a, b):\n    c = a\n    "
SUFFIX = "return c + b\n\nprint(add(1, 2))\n"


def test_line_mode_takes_one_line_answers_that_end_where_the_line_does():
    # a whole line inserted at a blank line's start, before the suffix's line
    assert line_mode("x = 1\n    ", "return x\n", "y = 2\n", False) == ("whole", "y = 2\n")
    # the rest of the cursor's line: the suffix starts with its line break (or the file ends)
    assert line_mode("x = foo(", "\nreturn x\n", "a, b)", False) == ("end", "a, b)")
    assert line_mode("x = foo(", "", "a, b)", False) == ("end", "a, b)")
    # only the first line is shown: that line
    assert line_mode("x = foo(", "\nreturn x\n", "a, b)\ny = 2", True) == ("end", "a, b)")
    assert line_mode("x\n", "    return x\n", "    y = 2\n    z = 3\n", True) == ("whole", "    y = 2\n")
    # several lines shown, text after the cursor on its line, code before a whole line, nothing written: none
    assert line_mode("x = foo(", "\nreturn x\n", "a, b)\ny = 2", False) is None
    assert line_mode("x\n", "    return x\n", "    y = 2\n    z = 3\n", False) is None
    assert line_mode("x = foo(", ")\n", "a, b", False) is None
    assert line_mode("x = 1", "return x\n", "y = 2\n", False) is None
    assert line_mode("x = foo(", "\n", "   ", False) is None
    # the suffix head: three lines after the answer's line, the cursor's own line break counted apart in "end"
    assert suffix_head("a\nb\nc\nd\n", "whole") == "a\nb\nc\n"
    assert suffix_head("\na\nb\nc\nd\n", "end") == "\na\nb\nc\n"


def test_lookup_drafts_what_followed_the_last_tokens_latest_occurrence():
    context = [5, 6, 7, 8, 9, 5, 6, 1, 2, 3, 4, 5, 6, 7, 2]
    assert lookup([0, 5, 6, 7], context, n=3) == [2]  # the last three, latest: 5 6 7 -> 2 (end of context)
    assert lookup([0, 9, 5, 6], context, n=3) == [1, 2, 3]  # 9 5 6 -> 1 2 3
    assert lookup([0, 3], context, n=2) == [4, 5]  # one token
    assert lookup([42], context) == [] and lookup([], context) == [] and lookup([5], []) == []


def test_after_heal_reads_a_walk_as_unheal_does():
    assert after_heal("\n    for x", "\n    ") == "for x"
    # one line break written where the tail has two (a blank line above the cursor): the line at the cursor
    assert after_heal("\n    for x", "\n\n") == "    for x" and after_heal("\n", "\n\n") == ""
    assert after_heal("\n\n\n    for x", "\n\n") == "\n    for x"
    # not (yet) the tail: nothing written after it
    assert after_heal("", "\n\n") is None and after_heal("x", "\n") is None and after_heal(" b", "de") is None
    assert after_heal("default", "de") == "fault" and after_heal("x", "") == "x"


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    from dg_lsp.engine import Engine

    # B = 0, a closed canvas gate and an end head that never ends the hole: the decoder is the base model, causal
    # over the canvas; the walk ends the line (line_only) at its first line break
    path = build_tiny(tmp_path_factory.mktemp("tiny-alternatives"), delta_scale=0.0, future_gate=-1e4, end_bias=-50.0)
    e = Engine.load(str(path), device="cpu", dtype="float32")
    yield e
    e.close()


@pytest.fixture
def unsure(engine, monkeypatch):
    """A random tiny model rarely ends a line, and is unsure everywhere: its base head (the walk's checks, the
    alternatives' writing and their scores alike) gets a bias towards the tokens that hold a line break, so its
    lines end within a few tokens, and any other best token starts an alternative (P_ALT 0)."""
    breaks = engine.lifecycle.columns.token_texts("\n", "in")
    real = engine.runner.head_logits
    monkeypatch.setattr(engine.runner, "head_logits", lambda hidden: real(hidden) + 1.0 * breaks.float())
    monkeypatch.setattr(AL, "P_ALT", 0.0)


def _forward(alt, seqs, lead, start, cache):
    """A causal base pass over `lead + seq` for each sequence, right-padded (the reference the scores are checked
    against): (hidden [B, W, H], the padded ids [B, W])."""
    width = max(len(lead) + len(s) for s in seqs)
    pad = alt.lc.pad_id if alt.lc.pad_id is not None else 0
    ids = torch.tensor([lead + s + [pad] * (width - len(lead) - len(s)) for s in seqs], dtype=torch.long)
    positions = torch.arange(start, start + ids.shape[1], dtype=torch.long).unsqueeze(0).expand(len(seqs), -1)
    return alt.runner.base_hidden(ids, cache, positions), ids


def _request(prefix=PREFIX, suffix=SUFFIX, alternatives=2):
    params = DenoiseParams(temperature=0.0, verify_weight=1.0, alternatives=alternatives)
    # no healing: the tiny model's tokens split the prompt's indentation its own way
    return InfillRequest(prefix=prefix, suffix=suffix, params=params, reuse_prefix=False, line_only=True, heal=False)


def _walk(engine, request):
    started = engine.lifecycle.start(request)
    out = engine.loop.run(started.canvas, started.cache, request.params, started.generator)
    return started, out, engine.lifecycle.choose(started.canvas, out, started.heal)


def test_a_lines_score_is_the_base_models_log_probability_of_it_and_the_suffix_head(engine):
    started = engine.lifecycle.start(_request())
    alt = engine.lifecycle.alternatives
    lead = started.canvas.canvas_ids[0, :started.canvas.lead].tolist()
    seqs = [alt._tokens(started.heal, line, "return c + b\n") for line in ("d = a + b\n", "c = c\n")]
    scores = alt._score(seqs, lead, len(started.prompt), started.cache)
    model = engine.runner.model
    for seq, score in zip(seqs, scores):
        ids = torch.tensor([started.prompt + lead + seq])
        with torch.no_grad():
            lp = torch.log_softmax(model(input_ids=ids).logits[0].float(), dim=-1)
        start = len(started.prompt) + len(lead)
        direct = sum(float(lp[j - 1, ids[0, j]]) for j in range(start, ids.shape[1]))
        assert score == pytest.approx(direct, abs=1e-3)
    assert scores[0] != pytest.approx(scores[1])
    # a token outside a restricted output vocabulary is scored with its own logit: the tied head's row, as the
    # full model computes it
    hidden, ids = _forward(alt, seqs[:1], lead, len(started.prompt), started.cache)
    with torch.no_grad():
        full = model(input_ids=torch.tensor([started.prompt + lead + seqs[0]])).logits[0, len(started.prompt):].float()
    own = engine.runner.token_logits(hidden, ids)
    assert torch.allclose(own[0], full.gather(-1, ids[0].unsqueeze(-1)).squeeze(-1), atol=1e-3)


def test_the_best_scoring_line_wins_and_every_alternative_is_a_whole_line(engine, unsure):
    plain = engine.run_infill(_request(alternatives=0))
    line = plain.text.partition("\n")[0] + "\n"  # line_only: the answer's first line is what is shown
    assert "\n" in plain.text and line.strip()  # a whole line: alternatives apply
    result = engine.run_infill(_request())
    lines = [t for t, _ in result.alternatives]
    assert lines[0] == line and len(lines) >= 2  # the answer's line, then the alternatives
    assert all(t.endswith("\n") and t.count("\n") == 1 and t.strip() for t in lines)
    best = max(result.alternatives, key=lambda kv: (kv[1], kv[0] == line))[0]
    # a line that wins is shown alone; where the answer's line wins, the answer stays as it was
    assert result.text == (plain.text if best == line else best)
    assert result.tokens_per_forward < plain.tokens_per_forward  # the passes the alternatives took count


def test_alternatives_are_the_base_models_greedy_lines_and_drafting_changes_no_token(engine, unsure):
    started, out, result = _walk(engine, _request())
    alt = engine.lifecycle.alternatives
    lead = started.canvas.canvas_ids[0, :started.canvas.lead].tolist()
    ids, tops = alt._walked(out, started.canvas.lead, started.heal, result.text.partition("\n")[0] + "\n")
    assert all(t is not None for t in tops)  # the walk recorded the base model's view at every slot it kept

    def written(drafts: bool):
        branches = alt._branches(ids, tops, started.heal, 2)
        assert branches
        if not drafts:
            for b in branches:
                b.draft = []
        for _ in range(AL.MAX_LINE_TOKENS + 2):
            live = [b for b in branches if not b.done]
            if not live:
                break
            alt._extend(live, lead, len(started.prompt), started.cache, started.heal, "whole",
                        started.prompt if drafts else ())
        return [(b.ids, b.text) for b in branches]

    drafted = written(True)
    assert drafted == written(False) and any(text for _, text in drafted)
    # each finished alternative is the base model's greedy line after its branch token: checked one token at a time
    runner = engine.runner
    for ids_b, text in drafted:
        if not text:
            continue
        branch_at = next(i for i, (a, b) in enumerate(zip(ids_b, ids)) if a != b) + 1
        for k in range(branch_at, len(ids_b)):
            hidden, _ = _forward(alt, [ids_b[:k]], lead, len(started.prompt), started.cache)
            best = int(runner.ids_of(runner.head_logits(hidden)[0, -1].argmax()))
            assert best == ids_b[k]


def test_rows_that_hold_their_first_tokens_get_the_hidden_states_of_a_whole_pass(engine):
    # the alternatives' passes (cache_view.RowsCache): rows of different lengths hold their first tokens' keys and
    # values and are fed only the tokens after them, and get what one pass over each whole row gives
    started = engine.lifecycle.start(_request())
    runner, cache, start = engine.runner, started.cache, len(started.prompt)
    rows = [[5, 6, 7, 8, 9], [10, 11, 12]]
    whole = [runner.base_hidden(torch.tensor([r]), cache, torch.arange(start, start + len(r)).unsqueeze(0))[0]
             for r in rows]
    view = runner.rows_cache(cache, [None, None])
    first = runner.base_hidden(torch.tensor([[5, 6, 7], [10, 11, 0]]), view,
                               torch.tensor([[start, start + 1, start + 2]] * 2))
    assert torch.allclose(first[0], whole[0][:3], atol=1e-5) and torch.allclose(first[1, :2], whole[1][:2], atol=1e-5)
    held = [view.kept(0, 2), view.kept(1, 1)]  # row 0 holds 5 6, row 1 holds 10
    view = runner.rows_cache(cache, held)
    assert view.lengths == [2, 1]
    second = runner.base_hidden(torch.tensor([[7, 8, 9], [11, 12, 0]]), view,
                                torch.tensor([[start + 2, start + 3, start + 4], [start + 1, start + 2, start + 3]]))
    assert torch.allclose(second[0], whole[0][2:], atol=1e-5)
    assert torch.allclose(second[1, :2], whole[1][1:], atol=1e-5)


def test_alternatives_leave_the_answer_alone_where_they_do_not_apply(engine, unsure):
    alt = engine.lifecycle.alternatives
    # off
    started, out, result = _walk(engine, _request(alternatives=0))
    line = result.text
    assert alt.choose(started, result, out).alternatives == []
    # past the deadline
    started, out, result = _walk(engine, _request())
    started.deadline = time.monotonic() - 1.0
    assert alt.choose(started, result, out).alternatives == [] and result.text == line
    # nothing to read after the line
    started, out, result = _walk(engine, _request(suffix=""))
    assert alt.choose(started, result, out).alternatives == []
    # text after the cursor on its line: an answer that is not the rest of the line
    started, out, result = _walk(engine, _request(prefix="def add(a, b):\n    c = foo(", suffix="a)\n    return c\n"))
    before = result.text
    assert alt.choose(started, result, out).alternatives == [] and result.text == before
    # the walk recorded nothing (a plain loop, or an outcome without it)
    started, out, result = _walk(engine, _request())
    out.base_top = None
    assert alt.choose(started, result, out).alternatives == []
    runs = engine.stats["alternativeRuns"]
    started, out, result = _walk(engine, _request())
    alt.choose(started, result, out)
    assert engine.stats["alternativeRuns"] == runs + 1


def test_one_statement_answers_of_one_line_are_weighed_as_line_only_ones(engine):
    """Above code at the cursor's depth (postprocess.between_lines) one statement is shown: its first line alone when
    it opens no block. Such an answer is weighed like a line_only one; one that runs on into more lines is not."""
    alt = engine.lifecycle.alternatives
    # the cursor on a blank line: "    " before it, nothing after it on its line, `return` below at its depth
    request = dataclasses.replace(_request(suffix="\n    " + SUFFIX), line_only=False, one_statement=True,
                                  block_indent=5, block_lines=8)
    started, out, result = _walk(engine, request)
    for text, weighed in (("x = 1\n", True), ("x = 1", True), ("for x in y:\n        z = x\n", False)):
        result.text = text
        assert (alt.applies(started, result, out) is not None) == weighed, text
    # without one_statement, an answer with its line break is a block: not weighed
    started, out, result = _walk(engine, dataclasses.replace(request, one_statement=False))
    result.text = "x = 1\n"
    assert alt.applies(started, result, out) is None


def test_name_starts_open_a_block_before_deeper_code_and_assign_before_the_rest():
    top = "def f(l):\n"
    assert AL.name_starts(("m",), "    if l:\n", top, "    for e in l:\n        if e > m:\n") == ["    m ="]
    assert AL.name_starts(("op",), "    if x:\n", top, "\n        balance += op\n") == ["    for op in"]
    assert AL.name_starts(("i", "j"), "    x = 1\n", top, "        y = i + j\n") == [
        "    for i in", "    for j in", "    for i, j in"]
    assert AL.name_starts(("m",), "    m = 0\n", top, "    return m\n") == []  # the answer already binds it
    assert AL.name_starts((), "    x\n", top, "    m\n") == []
    # the cursor in a blank line's indentation (the answer's own indentation starts there), and before a line's
    # text (that text's indentation starts there too)
    assert AL.name_starts(("m",), "if l:", top + "    ", "\n    for e in l:\n") == ["m ="]
    assert AL.name_starts(("m",), "if l:", top + "    ", "\n        m += 1\n") == ["for m in"]
    assert AL.name_starts(("m",), "if l:\n", top + "    ", "for e in l:\n") == ["m ="]


def test_a_name_the_suffix_reads_is_weighed_as_a_line_that_binds_it(engine, unsure):
    plain = engine.run_infill(_request())
    named = engine.run_infill(replace(_request(), free_names=("total",)))
    assert not any("total" in t for t, _ in plain.alternatives)
    lines = [t for t, _ in named.alternatives]
    assert lines[0] == plain.alternatives[0][0]  # the same walk, the same answer's line first
    # at the answer's indentation (the random model's answer may start with spaces), the base model's line after it
    indent = lines[0][:len(lines[0]) - len(lines[0].lstrip(" "))]
    assert any(t.startswith(indent + "total =") and t.endswith("\n") and t.count("\n") == 1 for t in lines[1:])
    best = max(named.alternatives, key=lambda kv: (kv[1], kv[0] == lines[0]))[0]
    assert named.text == (plain.text if best == lines[0] else best)
    # the cursor in a blank line's indentation, the code below it (mode "end": the rest of the cursor's line)
    below = engine.run_infill(replace(_request(suffix="\n    return c + b\n"), free_names=("total",)))
    assert any(t.lstrip(" ").startswith("total =") and "\n" not in t for t, _ in below.alternatives[1:])


def test_a_line_starts_branch_forks_and_every_fork_writes_the_base_models_greedy_line(engine, unsure):
    """A line start's first written token forks into the base model's other likely tokens (P_ALT 0 here: every
    one of the FORKS best); each fork, fed from the keys and values of the start it shares, then writes the base
    model's greedy line, checked one token at a time against whole passes."""
    started = engine.lifecycle.start(_request())
    alt = engine.lifecycle.alternatives
    lead = started.canvas.canvas_ids[0, :started.canvas.lead].tolist()
    branches = alt._started(["total ="], started.heal)
    assert len(branches) == 1 and branches[0].fork
    start_ids = list(branches[0].ids)
    for _ in range(AL.MAX_LINE_TOKENS + 2):
        live = [b for b in branches if not b.done]
        if not live:
            break
        branches += alt._extend(live, lead, len(started.prompt), started.cache, started.heal, "whole")
    assert len(branches) == 1 + AL.FORKS
    assert len({b.ids[len(start_ids)] for b in branches}) == len(branches)  # each took another first token
    runner = engine.runner
    for b in branches:
        assert b.ids[:len(start_ids)] == start_ids and b.done
        for k in range(len(start_ids) + 1, len(b.ids)):
            hidden, _ = _forward(alt, [b.ids[:k]], lead, len(started.prompt), started.cache)
            assert int(runner.ids_of(runner.head_logits(hidden)[0, -1].argmax())) == b.ids[k]


def test_riding_mode_is_line_modes_mode_from_the_text_around_the_cursor():
    assert AL.riding_mode("x = 1\n    ", "return x\n") == "whole"
    assert AL.riding_mode("x = foo(", "\nreturn x\n") == "end" and AL.riding_mode("x = foo(", "") == "end"
    assert AL.riding_mode("x = 1", "return x\n") is None  # code before the cursor, text after it on its line
    for prefix, suffix, text in (("x = 1\n    ", "return x\n", "y = 2\n"), ("x = foo(", "\nreturn x\n", "a, b)")):
        assert line_mode(prefix, suffix, text, True)[0] == AL.riding_mode(prefix, suffix)


def test_branches_that_ride_the_walk_write_the_same_lines_in_fewer_passes_after_it(engine, unsure, monkeypatch):
    # riders (alternatives.Riders) ride the walk's base passes: the walk's answer, the lines weighed and their
    # scores are those of writing every branch after the walk, and fewer passes run after it
    def run(riding: bool):
        monkeypatch.setattr(engine.runner, "verify_rides", riding)
        before = dict(engine.stats)
        result = engine.run_infill(_request())
        return result, {k: engine.stats[k] - before[k] for k in ("alternativePasses", "alternativeRides")}

    alone, alone_counts = run(False)
    riding, riding_counts = run(True)
    assert alone_counts["alternativeRides"] == 0 and riding_counts["alternativeRides"] > 0
    assert riding.text == alone.text and len(alone.alternatives) >= 2
    assert [t for t, _ in riding.alternatives] == [t for t, _ in alone.alternatives]
    assert [s for _, s in riding.alternatives] == pytest.approx([s for _, s in alone.alternatives], abs=1e-4)
    assert riding_counts["alternativePasses"] < alone_counts["alternativePasses"]


def test_a_riding_row_changes_nothing_of_the_walks_row(engine):
    # runner.verify_riding: the walk's logits are those of its pass alone, and each riding row's logits those of a
    # pass over its row alone (runner.base_rows)
    started = engine.lifecycle.start(_request())
    runner, cache, start = engine.runner, started.cache, len(started.prompt)
    canvas = started.canvas.canvas_ids.clone()
    positions = started.canvas.position_ids()
    width = min(canvas.shape[1], 6)
    alone = runner.verify(canvas, cache, positions, width, runner.walk_cache(cache))
    rows = [([5, 6, 7, 8, 9, 10, 11, 12], start, None), ([13], start, None)]
    walk = runner.walk_cache(cache)
    logits, ridden, view = runner.verify_riding(canvas, positions, width, walk, rows)
    assert torch.allclose(logits, alone, atol=1e-5)
    for i, (ids, first, _) in enumerate(rows):
        own, _ = runner.base_rows([(ids, first, None)], cache)
        assert torch.allclose(ridden[i, :len(ids)], runner.head_logits(own)[0], atol=1e-4)
    walk.commit(2)  # the walk's row keeps what it held, the riding rows nothing of it
    assert walk.length == 2 and view.kept(1, 3)[0][0].shape[-2] == 3


def test_rows_packed_into_one_sequence_get_what_padded_rows_get(engine):
    # runner.base_packed (cache_view.PackedRows): rows of different lengths, some holding their first tokens' keys
    # and values, packed end to end without padding, get the hidden states and kept keys and values of base_rows
    started = engine.lifecycle.start(_request())
    runner, cache, start = engine.runner, started.cache, len(started.prompt)
    first, view = runner.base_rows([([5, 6, 7], start, None), ([10], start, None)], cache)
    held = [view.kept(0, 2), None, view.kept(1, 1)]  # 5 6 held; nothing; 10 held
    rows = [([7, 8, 9], start + 2, held[0]), ([20, 21, 22, 23, 24, 25, 26], start, None), ([11], start + 1, held[2])]
    padded, padded_view = runner.base_rows(rows, cache)
    packed, packed_view = runner.base_packed(rows, cache)
    assert packed.shape == padded.shape
    for i, (ids, _, _) in enumerate(rows):
        assert torch.allclose(packed[i, :len(ids)], padded[i, :len(ids)], atol=1e-5)
        assert not packed[i, len(ids):].any()  # nothing after a row's own tokens
        for (pk, pv), (qk, qv) in zip(packed_view.kept(i, len(ids)), padded_view.kept(i, len(ids))):
            assert torch.allclose(pk, qk, atol=1e-5) and torch.allclose(pv, qv, atol=1e-5)
    # a row sees nothing of another: changing one row's tokens leaves the others' states as they were
    other, _ = runner.base_packed([rows[0], ([30, 31, 32, 33, 34, 35, 36], start, None), rows[2]], cache)
    assert torch.allclose(other[0], packed[0], atol=1e-6) and torch.allclose(other[2], packed[2], atol=1e-6)


def test_lines_scored_riding_the_branch_passes_get_their_own_passs_scores(engine, unsure, monkeypatch):
    # the answer's line and the lines finished early are scored in the passes that write the others (packed beside
    # them); each line's score is still the one a pass over that line alone gives
    monkeypatch.setattr(engine.runner, "verify_rides", False)  # branches written after the walk: passes to ride
    packed, real = [], engine.runner.base_packed
    monkeypatch.setattr(engine.runner, "base_packed", lambda rows, cache: packed.append(len(rows)) or real(rows, cache))
    result = engine.run_infill(_request())
    assert len(result.alternatives) >= 2 and packed  # lines rode at least one pass
    started = engine.lifecycle.start(_request())
    alt = engine.lifecycle.alternatives
    lead = started.canvas.canvas_ids[0, :started.canvas.lead].tolist()
    head = suffix_head(SUFFIX, "whole")
    for text, score in result.alternatives:
        alone = alt._score([alt._tokens(started.heal, text, head)], lead, len(started.prompt), started.cache)[0]
        assert score == pytest.approx(alone, abs=1e-4)
