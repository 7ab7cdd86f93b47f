"""What the decoder's output columns write: each column's token text, and the columns that answer a question about
it (starts with a text, holds a line break, is the pad, may start a healed hole). Built once per set of columns and
kept; `grown` keeps the texts when a prompt's tokens join the columns (Gemma3Runner.add_columns).

`InfillLifecycle.columns` holds one; the canvas's column masks (engine/lifecycle.py `prepare`), token healing, the
alternatives and the AR baseline read it.
"""

from __future__ import annotations

import bisect

import torch

from . import healing
from .runner import ModelRunner


class ColumnTexts:
    def __init__(self, tokenizer, runner: ModelRunner, pad_id: int | None, eos_id: int | None):
        self.tokenizer, self.runner, self.pad_id, self.eos_id = tokenizer, runner, pad_id, eos_id
        self._cache: dict[tuple, object] = {}  # per question and set of ids (_cached)

    def _column_ids(self):
        ids = self.runner.output_ids
        return range(self.runner.vocab_size) if ids is None else ids.tolist()

    def _cached(self, name: tuple, ids, compute):
        """`compute()` once per question `name` and set of `ids` (told apart by their count and last id: columns only
        ever join at the end)."""
        key = (*name, len(ids), ids[-1] if len(ids) else None)
        if key not in self._cache:
            self._cache[key] = compute()
        return self._cache[key]

    def grown(self, added: int) -> None:
        """The columns have grown by their last `added`: every per-column table is for the old columns, so they go;
        the texts grow by the new ones' only."""
        ids = self._column_ids()
        texts = self.column_texts(ids[:-added]) + self.column_texts(ids[-added:])
        self._cache.clear()
        self._cache[("texts", len(ids), ids[-1])] = texts

    def piece_texts(self, ids: list[int]) -> list[str]:
        """Each token's own text (as `column_texts` reads it), not cached: any ids."""
        pieces = self.tokenizer.convert_ids_to_tokens(list(ids))
        return [self.tokenizer.convert_tokens_to_string([p]) if p is not None else "" for p in pieces]

    def starting_with(self, text: str, ids=None) -> torch.BoolTensor:
        """[len(ids)] whether each token's own text starts with `text`; `ids` default to the decoder's logit columns.
        A binary search in the texts sorted once per set of ids, so a new word costs no pass over the vocabulary
        and nothing is kept per word."""
        ids = self._column_ids() if ids is None else ids

        def index():
            texts = self.column_texts(ids)
            order = sorted((i for i, t in enumerate(texts) if t), key=lambda i: texts[i])
            return [texts[i] for i in order], torch.tensor(order, dtype=torch.long)

        sorted_texts, order = self._cached(("sorted",), ids, index)
        lo = bisect.bisect_left(sorted_texts, text)
        hi = bisect.bisect_left(sorted_texts, text + "\U0010ffff", lo)
        mask = torch.zeros(len(ids), dtype=torch.bool)
        mask[order[lo:hi]] = True
        return mask

    def pad_columns(self) -> torch.BoolTensor:
        """[V] the decoder's logit columns that hold the pad (where the runner ends a hole). Computed once."""
        ids = self._column_ids()
        return self._cached(("pad",), ids, lambda: torch.tensor([i == self.pad_id for i in ids], dtype=torch.bool))

    def opens_a_line(self) -> torch.BoolTensor:
        """[V] the decoder's logit columns whose token breaks the line before any text of its own ("\n", "  \n",
        "\n    "). Computed once."""
        return self._cached(("opens",), self._column_ids(), lambda: torch.tensor(
            [t is not None and "\n" in t and not t.split("\n", 1)[0].strip() for t in self.column_texts()],
            dtype=torch.bool))

    def first_columns(self, heal: str, ids=None) -> torch.BoolTensor:
        """Which of `ids` (default: the decoder's logit columns) a healing tail's first token may be. A healed space or
        word: tokens that start with it, and after a space also the pad and end tokens (the hole may end at once:
        nothing to insert). A line
        break's tail: tokens that start a line (an end or a bare indentation there never fits the tail), or every
        column where the vocabulary has none."""
        ids = self._column_ids() if ids is None else ids
        if not healing.constrained(heal):
            starts = self.token_texts("\n", "start", ids)
            return starts if bool(starts.any()) else torch.ones_like(starts)
        ends = self._cached(("ends",), ids, lambda: torch.isin(torch.as_tensor(list(ids)), torch.tensor(
            [t for t in (self.pad_id, self.eos_id) if t is not None], dtype=torch.long)))
        starts = self.starting_with(heal, ids)
        # a word's hole always starts with the word's token (as in training, where a hole after a complete word
        # starts with the next token): an end there would leave the cursor's word unwritten
        return starts | ends if heal.isspace() else starts

    def token_texts(self, text: str, how: str, ids=None) -> torch.BoolTensor:
        """[len(ids)] whether each token's own text starts with (`how` "start") or contains ("in") `text`; special
        and unknown ids: False. `ids` default to the decoder's logit columns. Computed once per question."""
        ids = self._column_ids() if ids is None else ids
        return self._cached((text, how), ids, lambda: torch.tensor(
            [t is not None and (t.startswith(text) if how == "start" else text in t) for t in self.column_texts(ids)],
            dtype=torch.bool))

    def column_texts(self, ids=None) -> tuple[str | None, ...]:
        """The text of each token of `ids` (default: the decoder's logit columns) on its own; None for special and
        unknown ids. Computed once."""
        ids = self._column_ids() if ids is None else ids

        def texts():
            listed = list(ids)
            known = len(self.tokenizer)
            pieces = self.tokenizer.convert_ids_to_tokens([i if i < known else 0 for i in listed])
            special = set(self.tokenizer.all_special_ids)
            return tuple(self.tokenizer.convert_tokens_to_string([piece]) if i < known and i not in special else None
                         for i, piece in zip(listed, pieces))

        return self._cached(("texts",), ids, texts)
