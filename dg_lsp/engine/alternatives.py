"""Suffix-scored alternatives: a one-line answer checked against the lines the base model nearly wrote, by what
each makes of the code after the cursor.

The AR-verified walk (VerifiedWalk.run) writes the base model's line, with the diffusion decoder's say at
each walk's first slot and over where the hole ends. The decoder sees the suffix but is a weak model; the base model
is strong but writes from the prefix alone. Where the base model hesitates between tokens (`return '0'` or
`return '1'`, `n % i` or `i % 2`), the suffix often tells them apart, and the base model itself can read it: the
likelihood of the code after the cursor, after each line. So, for an answer that is one line
(`line_mode`), after the walk:

1. Branch: the walk recorded the base model's best tokens at each slot it kept (DenoiseOutcome.base_top, from the
   pass that kept it). At the line's first `params.alternatives` tokens where the base model gave another token at
   least `P_ALT` probability, that token starts an alternative line; where it never hesitated, nothing more runs.
   The base model writes the rest of each alternative greedily, with the rest of the answer as its draft
   (speculative decoding: one pass checks every drafted token, keeps those it agrees with and one more), all
   alternatives in one batch per pass, `MAX_PASSES` passes at most after the walk. A branch found while the walk
   goes on already rides its base passes (`Riders`).
2. Score: a causal base pass over the prompt cache, the canvas lead and the tokens of `heal + line + suffix head`
   (the document as it would read, up to `alternative_lines.SUFFIX_LINES` lines after the line), a row per line,
   the answer's among them, gives log p(line, suffix head | prefix). A line finished while others are still written rides their next
   pass (packed beside them, `runner.base_packed`); one more pass scores what finished last.
3. Keep the best: the argmax over lines of p(line | prefix) p(suffix head | prefix, line), that is of
   p(line | prefix, suffix head). The answer wins ties.

Where only the answer's first line is shown (InfillRequest.line_only; rest_of_line where the line has code;
one_statement where the answer is one line) that line is the one weighed; where another line wins, the result is
that line alone (what followed the answer's line was written after it). Nothing here changes an answer shown as
several lines, an answer inside a line (text after the cursor on its line, other than the line a whole-line answer
is inserted before), an answer without code after it to read, or a request cancelled or past its deadline: those
keep the walk's answer.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch

from . import healing, sampler
from .alternative_lines import after_heal, line_mode, lookup, name_starts, riding_mode, suffix_head

P_ALT = 0.15  # an alternative token needs at least this base probability where the answer's token was written
MAX_PASSES = 12  # base passes writing the alternatives
MAX_LINE_TOKENS = 48  # an alternative longer than this is dropped
REALIGN = 3  # a branch's token found this few tokens further in the answer's draft takes the draft on from there
FORKS = 2  # a line start's branch forks into at most this many other tokens after the start


@dataclass
class _Branch:
    ids: list[int]  # tokens of heal + line so far
    draft: list[int]  # what the answer wrote after the branch point: the next pass checks it
    text: str | None = None  # the finished line (the answer's part, unhealed)
    done: bool = False
    held: list | None = None  # the base model's keys and values of the row's first tokens (lead + ids), per layer
    fork: bool = False  # a line start's branch: its first written token forks (Alternatives._extend)

    @property
    def n_held(self) -> int:
        """How many tokens `held` covers: a pass feeds the row from there."""
        return 0 if self.held is None else self.held[0][0].shape[-2]


class Riders:
    """Branches written during the walk: from the base pass after the one that kept a branch's token, each live
    branch rides the walk's base passes as more rows of the same pass (runner.verify_riding), so that its line
    is partly or wholly written when the walk ends. The branches are `Alternatives._branches` of the tokens the walk
    has kept so far (where the base model hesitated: the same rule, the same order, the same limit), each drafting
    from the walk's tokens after its branch point; a rider's row changes nothing of the walk's row, and a branch's
    text is the base model's greedy line whatever its drafts, so the answers are those of writing the branches after
    the walk, in fewer passes after it (up to the rounding of a pass of another shape in bfloat16, and a branch that
    MAX_PASSES no longer cuts: 293 of the seeded 300 answers the same, docs/results/riding-passes.md).
    `Alternatives.choose` takes over the branches it also finds, as they stand."""

    def __init__(self, alternatives: "Alternatives", started, mode: str, head: str):
        self.alt = alternatives
        self.mode, self.heal = mode, started.heal
        self.lead_len = started.canvas.lead
        self.lead = started.canvas.canvas_ids[0, :self.lead_len].tolist()
        self.hole = int((~started.canvas.pinned[0, self.lead_len:]).long().cumprod(0).sum())  # slots after the lead
        self.start = len(started.prompt)
        self.limit = started.request.params.alternatives
        self.context = started.prompt + self.lead + alternatives.lc.tokenize(head)
        self.branches: dict[tuple, _Branch] = {}  # by the tokens a branch started with
        self.live: list[_Branch] = []
        self.rides = 0  # base passes of the walk the branches rode

    def rows(self, row: list[int], kept: list[bool], base_top: dict, mask_id: int) -> list:
        """The riding rows of the walk's next base pass (runner.base_rows's), given the walk's row (its tokens, which
        of them are kept, the base model's best tokens where kept); [] where no branch is live."""
        hole = row[self.lead_len:self.lead_len + self.hole]
        done = kept[self.lead_len:self.lead_len + self.hole]
        n = next((i for i, k in enumerate(done) if not k), len(done))
        ids, tops = hole[:n], [base_top.get(self.lead_len + i) for i in range(n)]
        for b in self.alt._branches(ids, tops, self.heal, self.limit):
            key = tuple(b.ids)
            if key not in self.branches:
                after = hole[len(b.ids):]
                b.draft = after[:after.index(mask_id)] if mask_id in after else after
                self.branches[key] = b
        self.live = [b for b in self.branches.values() if not b.done]
        for b in self.live:
            if not b.draft:
                b.draft = lookup(b.ids, self.context)
        return self.alt._row_specs(self.live, self.lead, self.start)

    def take(self, logits: torch.Tensor, view) -> None:
        """Keep what the pass wrote for the riding rows (their logits [R, W, V'], rows 1.. of `view`)."""
        self.alt._keep(self.live, logits, view, 1, self.lead, self.heal, self.mode)
        self.rides += 1
        self.alt.lc.stats["alternativeRides"] += 1


class Alternatives:
    """The module's steps for the lifecycle's requests (InfillLifecycle.finish, after the walk)."""

    def __init__(self, lifecycle):
        self.lc = lifecycle
        self.runner = lifecycle.runner

    def riders(self, started) -> Riders | None:
        """Riders for a request's walk, where alternatives may apply to its answer (`applies`, so far as the request
        alone tells: the mode comes from the text around the cursor), else None."""
        request = started.request
        if not request.params.alternatives or not getattr(self.runner, "verify_rides", False):
            return None
        if not self.lc.loop.verifies(request.params) or started.canvas.lead < 1 or started.canvas.batch_size != 1:
            return None
        if not request.use_suffix:
            return None
        mode = riding_mode(request.prefix, request.suffix)
        head = None if mode is None else suffix_head(request.suffix, mode)
        if not (head and head.strip()):
            return None
        return Riders(self, started, mode, head)

    def applies(self, started, result, out=None) -> tuple[str, str] | None:
        """(mode, line) for a result alternatives may change (line_mode), else None."""
        request = started.request
        if out is None or out.base_top is None:
            return None
        if not request.params.alternatives or not getattr(self.runner, "scores_lines", False):
            return None
        if not self.lc.loop.verifies(request.params) or result.cancelled or result.deadline_hit:
            return None
        if started.canvas.lead < 1 or started.canvas.batch_size != 1 or not request.use_suffix:
            return None
        one_line = (request.line_only or (request.rest_of_line and bool(result.text.partition("\n")[0].strip()))
                    or (request.one_statement and "\n" not in result.text.rstrip("\n")))
        found = line_mode(request.prefix, request.suffix, result.text, one_line)
        if found is None or not suffix_head(request.suffix, found[0]).strip():
            return None
        return found

    @torch.inference_mode()
    def choose(self, started, result, out=None):
        """The result with its text replaced by the best-scoring line, where that is not the answer's line; the scores
        in `result.alternatives` (the answer's line first). Unchanged where alternatives do not apply, where the
        base model never hesitated on the line (no pass is run), or where time runs out. `out`: the walk's
        DenoiseOutcome (its tokens, and the base model's best tokens at each slot it kept)."""
        found = self.applies(started, result, out)
        if found is None or self._out_of_time(started):
            return result
        mode, line = found
        request, heal = started.request, started.heal
        head = suffix_head(request.suffix, mode)
        line_seq = self._tokens(heal, line, head)
        if line_seq is None:  # no safe token boundary: the answer's line cannot be scored, so nothing weighs against it
            return result
        lead = started.canvas.canvas_ids[0, :started.canvas.lead].tolist()
        start = len(started.prompt)
        walked = self._walked(out, started.canvas.lead, heal, line)
        if walked is None:
            return result
        ids, tops = walked
        # 1. where the base model hesitated, the lines it would have written (those that rode the walk as far as
        # they got); and lines that bind a name the suffix reads and the prefix never mentions
        # (InfillRequest.free_names), which the base model cannot think of
        branches = self._branches(ids, tops, heal, request.params.alternatives)
        riders = started.riders if started.riders is not None and started.riders.mode == mode else None
        if riders is not None:
            branches = [riders.branches.get(tuple(b.ids), b) for b in branches]
        # (names come only where blanks alone precede the cursor on its line: a whole line goes there)
        branches += self._started(name_starts(request.free_names, line, request.prefix, request.suffix), heal)
        if not branches:
            return result
        # where a branch's next tokens may already be
        context = riders.context if riders is not None else started.prompt + lead + self.lc.tokenize(head)
        passes = 0
        lines = {line: line_seq}  # every finished line's tokens (None: not scored), the answer's first
        done_scores: dict[str, float] = {}  # lines already scored, riding a pass that wrote the others
        while passes < MAX_PASSES and not self._out_of_time(started):
            live = [b for b in branches if not b.done]
            if not live:
                break
            riding = self._unscored(branches, lines, done_scores, heal, head)
            branches += self._extend(live, lead, start, started.cache, heal, mode, context, riding, done_scores)
            passes += 1
            self.lc.stats["alternativePasses"] += 1
        texts = list(dict.fromkeys(b.text for b in branches if b.done and b.text and b.text != line))
        if not texts or self._out_of_time(started):
            return result
        # 2 and 3. every line scored with the suffix head, the answer's among them (those not scored yet in one more
        # pass); the best kept
        self._unscored(branches, lines, done_scores, heal, head)
        seqs = [(t, lines[t]) for t in [line] + texts if lines[t] is not None]
        rest = [(t, seq) for t, seq in seqs if t not in done_scores]
        if rest:
            done_scores.update(zip([t for t, _ in rest], self._score([seq for _, seq in rest], lead, start,
                                                                     started.cache)))
            passes += 1
            self.lc.stats["alternativePasses"] += 1
        scored = {t: done_scores[t] for t, _ in seqs}
        best = max(scored, key=lambda t: (scored[t], t == line))
        self.lc.stats["alternativeRuns"] += 1
        forwards = result.generated_tokens / result.tokens_per_forward if result.tokens_per_forward else 0.0
        result.tokens_per_forward = result.generated_tokens / (forwards + passes) if forwards + passes else 0.0
        result.alternatives = sorted(scored.items(), key=lambda kv: (kv[0] != line, -kv[1]))
        if best != line:  # the answer's line lost: the line that won, alone (what followed was written after another)
            self.lc.stats["alternativeChosen"] += 1
            result.text = best
        return result

    def _walked(self, out, lead: int, heal: str, line: str) -> tuple[list[int], list] | None:
        """The walk's first tokens that write the healing tail and the answer's `line` (the last may run past its
        end: a line break's token with the next line's indentation) and the base model's best tokens at each of
        them; None where the walk's tokens do not start with that text."""
        ids, body = [], None
        for tid in out.canvas[0, lead:].tolist():
            if body is not None and len(body) >= len(line):
                break
            ids.append(tid)
            body = after_heal(self.lc.tokenizer.decode(ids), heal)
        if body is None or not body.startswith(line):
            return None
        tops = [out.base_top[0].get(lead + i) for i in range(len(ids))]
        return ids, tops

    def _out_of_time(self, started) -> bool:
        request = started.request
        return request.cancel.is_set() or (started.deadline is not None and time.monotonic() >= started.deadline)

    def _tokens(self, heal: str, line: str, head: str) -> list[int] | None:
        """The tokens of `heal + line + head`; None where the tokens' own texts do not add up to the text (a
        byte-level split: no safe boundary)."""
        text = heal + line + head
        ids = self.lc.tokenize(text)
        return ids if "".join(self.lc.columns.piece_texts(ids)) == text else None

    def _started(self, starts: list[str], heal: str) -> list[_Branch]:
        """A branch per line start (text after the healing tail), where its tokens add up to its text."""
        out = []
        for start in starts:
            ids = self._tokens(heal, start, "")
            if ids is not None and len(ids) < MAX_LINE_TOKENS:
                out.append(_Branch(ids, [], fork=True))
        return out

    @staticmethod
    def _row_specs(live: list[_Branch], lead: list[int], start: int) -> list[tuple[list[int], int, list | None]]:
        """Each live branch's row of a base pass: (its tokens lead + ids + draft after those it holds keys and values
        for, the position of the first, what it holds)."""
        return [((lead + b.ids + b.draft)[b.n_held:], start + b.n_held, b.held) for b in live]

    def _forward_held(self, live: list[_Branch], lead: list[int], start: int, cache):
        """One causal base pass feeding each branch its tokens (lead + ids + draft) after those it holds keys and
        values for (cache_view.RowsCache): (hidden [B, W, H], the cache view)."""
        return self.runner.base_rows(self._row_specs(live, lead, start), cache)

    def _score(self, seqs: list[list[int]], lead: list[int], start: int, cache):
        """log p(seq | prompt, lead) under the base model for each sequence (float), from one pass over the rows
        `lead + seq` packed end to end (`runner.base_packed`: no row padded to the longest). A token outside the
        restricted vocabulary is scored with its own logit beside the restricted ones (the normaliser then lacks the
        rest of the full vocabulary, a small overestimate)."""
        hidden, _ = self.runner.base_packed([(lead + seq, start, None) for seq in seqs], cache)
        rows = self._scored_rows(hidden, seqs, lead)
        return self._scores(self.runner.head_logits(rows), rows, seqs)

    @staticmethod
    def _scored_rows(hidden: torch.Tensor, seqs: list[list[int]], lead: list[int]) -> torch.Tensor:
        """The hidden states [N, H] of the rows that predict the sequences' tokens, in order, from a pass's
        [B, W', H] over `lead + seq` rows (W' at least each row's length): the rows `_scores` reads."""
        first = len(lead) - 1  # the row that predicts a sequence's first token
        return torch.cat([hidden[b, first:first + len(seq)] for b, seq in enumerate(seqs)])

    def _scores(self, logits: torch.Tensor, rows: torch.Tensor, seqs: list[list[int]]) -> list[float]:
        """`_score` from the `_scored_rows` (`rows` [N, H]) and their logits [N, V'], row i predicting the i-th of the
        sequences' tokens end to end."""
        targets = torch.tensor([t for seq in seqs for t in seq], dtype=torch.long, device=rows.device)
        cols = self.runner.output_vocab.to_rows(targets)
        inside = cols >= 0
        own = torch.where(inside, logits.gather(-1, cols.clamp(min=0).unsqueeze(-1)).squeeze(-1),
                          self.runner.token_logits(rows, targets))
        norm = torch.logsumexp(logits, dim=-1)
        norm = torch.where(inside, norm, torch.logaddexp(norm, own))
        token_lp = (own - norm).tolist()
        out, at = [], 0
        for seq in seqs:
            out.append(float(sum(token_lp[at:at + len(seq)])))
            at += len(seq)
        return out

    def _branches(self, ids: list[int], tops: list, heal: str, limit: int) -> list[_Branch]:
        """Where the base model gave another token at least P_ALT at one of the line's tokens (`tops`: its best
        tokens there, from the walk; after the healing tail is written): the first `limit` such positions, one
        branch per such token."""
        column_texts = self.lc.columns.column_texts()
        out, positions, covered = [], 0, False
        for i, tid in enumerate(ids):
            if positions >= limit:
                break
            covered = covered or after_heal(self.lc.tokenizer.decode(ids[:i]), heal) is not None
            if not covered or tops[i] is None:
                continue
            found = False
            for alt, p in zip(*tops[i]):
                col = self.runner.column_of(alt)
                if p < P_ALT or alt == tid or col is None or column_texts[col] is None:
                    continue
                out.append(_Branch(ids[:i] + [alt], ids[i + 1:]))
                found = True
            positions += int(found)
        return out

    def _unscored(self, branches: list[_Branch], lines: dict, done_scores: dict, heal: str,
                  head: str) -> list[tuple[str, list[int]]]:
        """The finished lines not scored yet, as (text, tokens of heal + line + head), the answer's first; `lines`
        takes the tokens of each newly finished line (None where they do not add up to its text: never scored)."""
        for b in branches:
            if b.done and b.text and b.text not in lines:
                lines[b.text] = self._tokens(heal, b.text, head)
        return [(t, seq) for t, seq in lines.items() if seq is not None and t not in done_scores]

    def _extend(self, live: list[_Branch], lead: list[int], start: int, cache, heal: str, mode: str,
                context: list[int] = (), riding: list[tuple[str, list[int]]] = (),
                done_scores: dict | None = None) -> list[_Branch]:
        """One pass for every live branch: keep its drafted tokens the base model agrees with, and one more. A branch
        with nothing left to draft from the answer drafts what followed its last tokens in `context` (the prompt
        and the suffix head: code repeats its names), prompt-lookup decoding. A line start's branch (`fork`) also
        starts a branch at each other token the base model gives at least P_ALT after the start (`m = 0`,
        `m = []`, `m = l[0]`: the suffix tells them apart, the base model's greedy choice cannot); returns those.
        `riding`: finished lines (text, tokens) scored in the same pass (`_score`'s rows, packed beside the branches'
        so that none is padded to another's length), their scores put in `done_scores`."""
        for b in live:
            if not b.draft:
                b.draft = lookup(b.ids, context)
        if not riding:
            hidden, view = self._forward_held(live, lead, start, cache)
            return self._keep(live, self.runner.head_logits(hidden), view, 0, lead, heal, mode)
        rows = self._row_specs(live, lead, start) + [(lead + seq, start, None) for _, seq in riding]
        hidden, view = self.runner.base_packed(rows, cache)
        n, width = len(live), max(len(r) for r, _, _ in rows[:len(live)])
        seqs = [seq for _, seq in riding]
        scored = self._scored_rows(hidden[n:], seqs, lead)
        # one head product for the branches' rows and the scored lines' (the head's weights streamed once)
        logits = self.runner.head_logits(torch.cat([hidden[:n, :width].reshape(n * width, -1), scored]))
        forks = self._keep(live, logits[:n * width].view(n, width, -1), view, 0, lead, heal, mode)
        scores = self._scores(logits[n * width:], scored, seqs)
        done_scores.update(zip([t for t, _ in riding], scores))
        return forks

    def _keep(self, live: list[_Branch], logits: torch.Tensor, view, offset: int, lead: list[int], heal: str,
              mode: str) -> list[_Branch]:
        """`_extend`'s keeping, from a pass whose rows `offset`, `offset + 1`, ... of the cache `view` fed the live
        branches (`_row_specs`), their logits [n, W, V'] (row j predicting token j + 1); returns the forks it
        starts."""
        best_cols = sampler.argmax(logits)
        best = self.runner.ids_of(best_cols).tolist()
        texts = self.lc.columns.column_texts()
        forks = []
        for i, (b, row, cols) in enumerate(zip(live, best, best_cols.tolist())):
            fed = len(lead) + len(b.ids)  # the row's tokens before its draft
            k = fed - 1 - b.n_held  # the fed row that predicts the token after b.ids
            if b.fork:
                b.fork = False
                forks += self._forks(b, logits[i, k], cols[k], view.kept(offset + i, fed - b.n_held), heal, mode)
            q = 0  # drafted tokens kept so far
            while True:
                if texts[cols[k + q]] is None:  # an end or special token: the line ends here
                    self._finish(b, heal, mode, ended=True)
                    break
                tid = row[k + q]
                b.ids.append(tid)
                self._finish(b, heal, mode)
                if b.done:
                    break
                if q < len(b.draft) and b.draft[q] == tid:
                    q += 1
                    continue
                # another token than the draft's (or one past it): the rest of the answer still drafts what follows,
                # after this token where it comes a little later in the answer (the branch wrote less), else after
                # the token it replaced; a draft whose first token was refused is dropped (a line that went its
                # own way seldom comes back to the answer's, and each drafted token costs a row position)
                rest = b.draft[q:]
                later = rest[1:1 + REALIGN].index(tid) + 1 if tid in rest[1:1 + REALIGN] else 0
                b.draft = rest[later + 1:] if q > 0 or later > 0 else []
                break
            if not b.done:  # the tokens fed as kept: the answer's, its own and the agreed drafts
                b.held = view.kept(offset + i, fed + q - b.n_held)
        return forks

    def _forks(self, b: _Branch, logits: torch.Tensor, best: int, held, heal: str, mode: str) -> list[_Branch]:
        """A branch per other output column with at least P_ALT probability in `logits` (a line start's next token),
        at most FORKS, holding `held` (the keys and values of the start's tokens)."""
        probs, cols = torch.softmax(logits.float(), dim=-1).topk(min(FORKS + 1, logits.shape[-1]))
        texts, out = self.lc.columns.column_texts(), []
        for p, col, tid in zip(probs.tolist(), cols.tolist(), self.runner.ids_of(cols).tolist()):
            if p < P_ALT or col == best or texts[col] is None:
                continue
            fork = _Branch(b.ids + [tid], [], held=held)
            self._finish(fork, heal, mode)
            out.append(fork)
        return out

    def _finish(self, b: _Branch, heal: str, mode: str, ended: bool = False) -> None:
        """Mark a branch done where its text ends the line (mode "whole": after the line break; "end": before it),
        with its line; dropped (done, no text) where it cannot be a line of this mode."""
        body = after_heal(self.lc.tokenizer.decode(b.ids), heal)
        if body is None:
            b.done, b.text = True, None
            return
        if mode == "whole" and "\n" in body:
            cut = body[:body.index("\n") + 1]
        elif mode == "end" and ("\n" in body or "\r" in body):
            cut = body[:min(i for i in (body.find("\n"), body.find("\r")) if i >= 0)]
        elif ended and mode == "end":  # the rest of a line may end where the text does
            cut = body
        elif not ended and len(b.ids) <= MAX_LINE_TOKENS:
            return  # still writing its line
        else:  # a whole line that never broke, or a line too long
            b.done, b.text = True, None
            return
        line = healing.unheal(heal + cut, heal)
        b.done, b.text = True, (line if line and line.strip() else None)
