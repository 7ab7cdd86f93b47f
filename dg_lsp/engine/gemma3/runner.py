"""Gemma3Runner: the engine's model runner for an adapted Gemma 3 (a drop-in for `ModelRunner`).

- encode: the base model, causal, adapters off (so the prefix cache and the AR twin are the base model's);
- decode: the same weights with the adapter on, bidirectional over the cached prompt and the canvas, the
  cache read only (`ReadOnlyCache`);
- the model keeps the autoregressive shift (dg_lsp.json `ar_shift`): the canvas starts with the prompt's last
  token (the engine moves it there, engine/lifecycle.py) and row j predicts position j+1, so the runner returns
  logits realigned to the position they predict;
- outputs come from the restricted vocabulary (vocab.py): logit column c is token `output_ids[c]`, which the
  denoising loop maps back (ModelRunner.ids_of);
- the hole ends at its first pad: once a pad is in a row's canvas, every later position is a pad (the
  training objective never scores after it).
"""

from __future__ import annotations

import torch

from ..canvas import BANNED
from ..runner import ModelRunner, head_logits
from . import adapter as A
from . import cache_view as C
from . import packed as P
from .int8 import Int8Linear
from .vocab import OutputVocab


class Gemma3Runner(ModelRunner):
    supports_static = False  # the fixed-shape/compiled path (engine/fast) is DiffusionGemma's
    ends_at_first_pad = True  # decode() forces every slot after a row's first pad to pad
    reads_pinned = True  # decode() takes the canvas's pinned positions (the adapter's suffix gate)

    def __init__(self, loaded, adapter: A.Adapter, vocab: OutputVocab, canvas_length: int):
        self.loaded = loaded
        self.model = loaded.model
        self.adapter = adapter
        self.device = torch.device(loaded.device)
        self.text_config = self.model.config.get_text_config(decoder=True)
        self.vocab_size = self.text_config.vocab_size
        self.canvas_length = canvas_length
        self.pad_id = self.text_config.pad_token_id or 0
        self._vocab = vocab
        self.int8 = False  # dtype int8 (use_int8)
        self.packed: str | bool = False  # prepacked float32 weights: "decoder", "all" or False (use_packed)
        self._own_columns = len(vocab)  # the vocabulary's own columns; add_columns adds after them
        self._special = set(loaded.tokenizer.all_special_ids)
        self.refresh()
        self.output_vocab = vocab.to(self.device)  # decode() returns logits over its columns only
        pad_col = self.column_of(self.pad_id)
        if pad_col is None:
            raise ValueError("the output vocabulary lacks the pad token")
        self.pad_column = pad_col

    def float32_parameters(self) -> list:
        """The adapter's LoRA factors: created in float32 by a load in any dtype, and merged in float32
        (adapter.LoRALinear.merge), so a cast keeps them as a load would."""
        return [p for m in self.adapter.modules.values() for p in (m.lora_a, m.lora_b)]

    def refresh(self) -> None:
        """After a load or a dtype cast: the restricted output head, and the adapter's merged inference weights
        (adapter.LoRALinear.merge: one matmul per adapted linear in a decoder pass)."""
        self.adapter.merge()
        if self.int8:
            self.adapter.pack_int8()
        if self.packed and not self._can_pack():
            self.packed = False  # a cast to a dtype packing does not serve ends it (to bfloat16 it packs again)
        if self.packed:
            self.adapter.use_packed(True, base=self.packed == "all")
        self._build_head()

    def _build_head(self) -> None:
        """The restricted output head [V', H] from the vocabulary's rows of the tied embedding, and with dtype int8
        its int8 copy (the decoder's). The head is the first V' rows of a buffer with room for the columns
        add_columns may still add, so that adding them copies their rows only (a whole new head is a 32k-row copy:
        18-41 ms on one core)."""
        embed = A.text_model(self.model).embed_tokens.weight
        n = len(self._vocab)
        room = max(0, self._own_columns + self.MAX_ADDED_COLUMNS - n)
        self._head_rows = embed.new_empty(n + room, embed.shape[1])
        self._vocab.head_weight(embed, out=self._head_rows[:n])
        self._head = self._head_rows[:n]
        self._head_int8 = Int8Linear(self._head) if self.int8 else None
        # packed in float32 only: in bfloat16 the plain product of a few rows is as fast, and a packed head would be
        # packed whole again for each added column
        packs_head = self.packed == "all" and self._head.dtype == torch.float32
        self._head_packed = P.PackedWeight(self._head) if packs_head else None

    MAX_ADDED_COLUMNS = 4096  # output columns add_columns may add in all, after the vocabulary's own

    def add_columns(self, ids) -> int:
        """Make the tokens of `ids` that the output vocabulary lacks writable: each becomes a column after the others
        (its row of the tied embedding in the head; no column moves, the pad's included), up to MAX_ADDED_COLUMNS in
        all, special tokens never. A prompt spells a rare name with tokens the 32k most frequent lack (`owels` of
        `n_vowels`): without its token the walk spells the name otherwise and the base model, reading a split it never
        saw, goes wrong (docs/results/output-vocab.md). Returns how many columns it added (0: nothing changed)."""
        vocab = self.output_vocab
        room = self.MAX_ADDED_COLUMNS - (len(vocab) - self._own_columns)
        ids = torch.as_tensor(list(ids), dtype=torch.long)
        ids = ids[(ids >= 0) & (ids < vocab.full_size)]
        missing = ids[vocab.index.cpu()[ids] < 0].unique().tolist()
        new = [i for i in missing if i not in self._special][:max(0, room)]
        if not new:
            return 0
        n, m = len(vocab), len(vocab) + len(new)
        grown = OutputVocab(vocab.ids.cpu().tolist() + new, vocab.full_size)
        if self.int8 or self._head_packed is not None or m > self._head_rows.shape[0]:
            self._vocab = grown
            self._build_head()  # the int8 and packed copies are built whole
        else:  # the new columns' rows after the others, in the buffer's room: no row moves
            embed = A.text_model(self.model).embed_tokens.weight
            rows = embed.index_select(0, torch.tensor(new, dtype=torch.long, device=embed.device))
            # a buffer made under inference mode (a load or dtype cast inside a worker job) takes writes only there;
            # one made outside it, only outside
            with torch.inference_mode(self._head_rows.is_inference()):
                self._head_rows[n:m] = rows
            self._head, self._vocab = self._head_rows[:m], grown
        self.output_vocab = self._vocab.to(self.device)  # last: a failure above leaves vocabulary and head as they were
        return len(new)

    def use_int8(self) -> None:
        """dtype int8 (engine/gemma3/int8.py): decoder passes run their linears and output head with int8 weights
        from here on; the base model's passes (encoder, verification, alternatives, AR twin) stay in float32, which
        the model must be in."""
        if self.model.dtype != torch.float32:
            raise ValueError(f"int8 packs float32 weights, not {self.model.dtype}")
        self.int8 = True
        self.refresh()

    def _can_pack(self) -> bool:
        return self.device.type == "cpu" and self.model.dtype in P.DTYPES and P.unavailable() is None

    def use_packed(self, on: bool, keep_merged: bool = False, base: bool = False) -> None:
        """Prepacked weights (engine/gemma3/packed.py) from here on (`on`), or the plain weights again: the decoder's
        (in place of its plain merged copy), and with `base` also the base model's linears and, in float32, the
        restricted output head (a second copy of the trunk's weights). Needs the model in float32 or bfloat16 on the
        CPU (`set_dtype` packs the cast weights again where it can, and ends packing where it cannot).
        `keep_merged`: the plain merged weights stay too, so `adapter.state.packed` can switch between both
        (packed.choose's timing)."""
        if on and not self._can_pack():
            raise ValueError(f"packed weights need float32 or bfloat16 on the CPU and oneDNN "
                             f"({P.unavailable() or 'here: '}{self.model.dtype} on {self.device})")
        self.packed = "all" if on and base else "decoder" if on else False
        self.adapter.use_packed(on, keep_merged, base)
        self._build_head()

    @property
    def logits_dtype(self):
        return torch.float32

    @torch.inference_mode()
    def encode(self, prompt_ids: list[int], cache=None):
        cache = self.new_cache() if cache is None else cache
        start = cache.get_seq_length()
        ids = torch.tensor([prompt_ids], dtype=torch.long, device=self.device)
        positions = torch.arange(start, start + ids.shape[1], device=self.device).unsqueeze(0)
        out = A.encoder_pass(self.model, ids, cache, positions)
        return out.past_key_values, out.last_hidden_state

    @torch.inference_mode()
    def decode(self, canvas: torch.LongTensor, cache, position_ids: torch.LongTensor,
               self_conditioning_logits: torch.Tensor | None, mask,
               self_conditioning_mask: torch.BoolTensor | None = None,
               pinned: torch.BoolTensor | None = None) -> torch.Tensor:
        """Logits [B, L, V'] (float32, over `output_ids`) for the canvas [B, L]; no self-conditioning. `pinned`
        [B, L]: the canvas's pinned positions, for the adapter's suffix gate (without it the suffix head takes the
        canvas gate)."""
        return self.decode_with_hidden(canvas, cache, position_ids, mask, pinned)[0]

    @torch.inference_mode()
    def decode_with_hidden(self, canvas: torch.LongTensor, cache, position_ids: torch.LongTensor, mask,
                           pinned: torch.BoolTensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """decode()'s logits and the pass's final-norm hidden states [B, L, H] (row j, whose logits are position
        j + 1's; bench/diagnostics/drafts.py reads them)."""
        b, length = canvas.shape
        canvas = canvas.to(self.device)
        if mask is None:
            mask = C.open_masks(C.ReadOnlyCache.of(cache), self.text_config.layer_types, b, length, self.device)
        positions = position_ids.to(self.device).expand(b, -1)
        ro = C.ReadOnlyCache.of(cache, batch=b)
        if pinned is not None:
            pinned = pinned.to(self.device).expand(b, -1)
        hidden = A.decoder_hidden(self.model, self.adapter, canvas, positions, ro, mask, pinned)  # [B, L, H]
        # [B, L, V'] row j -> j+1
        kernel = self._head_int8 if self._head_int8 is not None else self._head_kernel(hidden)
        small = A.decoder_logits(self.adapter, hidden, self._head, self.pad_column, kernel)
        shifted = torch.cat([small[:, :1], small[:, :-1]], dim=1)  # position j <- row j-1 (j=0 is the pinned lead)
        logits = shifted
        # after the first pad of a row, only pads
        is_pad = canvas == self.pad_id
        is_pad[:, 0] = False
        after = (torch.cumsum(is_pad.int(), dim=1) - is_pad.int()) > 0  # strictly after the first pad
        if bool(after.any()):
            forced = torch.full((logits.shape[-1],), BANNED, device=self.device)
            forced[self.pad_column] = 0.0
            logits = torch.where(after.unsqueeze(-1), forced, logits)
        return logits, hidden

    verifies = True  # verify(): the base model's causal logits over a canvas (VerifiedWalk)
    verify_rides = True  # verify_riding(): more rows in a walk's verify pass (alternatives.Riders)

    def walk_cache(self, cache) -> C.WalkCache:
        """A one-row verified walk's growing base cache over the prompt's `cache` (for `verify`)."""
        return C.WalkCache(cache)

    @torch.inference_mode()
    def verify(self, canvas: torch.LongTensor, cache, position_ids: torch.LongTensor, width: int,
               walk: C.WalkCache | None = None) -> torch.Tensor:
        """The base model (adapters off), causal over the canvas's first `width` positions after the same cache view
        as a decoder pass: logits [B, width, V'] (float32, over `output_ids`), realigned as decode()'s, so position j
        holds the pretrained next-token prediction after the canvas up to j - 1 (position 0, the pinned lead, holds
        the lead's own row and is never read). The AR twin's prediction, exact wherever the tokens left of j are the
        answer's. With `walk` (walk_cache, holding the canvas's first `walk.length` positions) the pass runs from
        there: positions up to `walk.length` hold zeros (the walk has kept them), and the positions after hold the
        same predictions."""
        b = canvas.shape[0]
        start = 0 if walk is None else walk.length
        hidden = self.base_hidden(canvas[:, start:width], cache if walk is None else walk.view(),
                                  position_ids[:, start:width].expand(b, -1))
        return self._placed(self.head_logits(hidden), width, start, walk is not None)

    @torch.inference_mode()
    def verify_riding(self, canvas: torch.LongTensor, position_ids: torch.LongTensor, width: int,
                      walk: C.WalkCache, riders: list) -> tuple[torch.Tensor, torch.Tensor, C.RowsCache]:
        """`verify` for a one-row walk, with more rows in the same pass, as `base_rows` takes them (the suggested
        alternatives' lines, engine/alternatives.py Riders): (the walk's logits, the riders' logits [R, W, V'] over
        the restricted vocabulary, row j of a rider predicting its token j + 1; rows 1.. of the pass's view). Each row
        sees only the prompt, what it holds and its own tokens, so the walk's row is what `verify` gives. One head
        product serves every row: the head's 32k x 640 weights are streamed once, not once for the walk and once for
        the riders (about 4.5 ms each time on one core, bfloat16)."""
        start = walk.length
        own = (canvas[0, start:width].tolist(), int(position_ids[0, start]), None)
        view = walk.view([h for _, _, h in riders])
        logits = self.head_logits(self._padded_pass([own] + riders, view))
        return self._placed(logits[:1, :width - start], width, start, True), logits[1:], view

    @staticmethod
    def _placed(small: torch.Tensor, width: int, start: int, walked: bool) -> torch.Tensor:
        """A verify pass's logits from canvas position `start` on (row i predicting position start + i + 1) -> its
        logits [B, width, V'] (realigned; `walked`: a walk's pass, whose positions up to `start` hold zeros)."""
        if not walked:
            return torch.cat([small[:, :1], small[:, :-1]], dim=1)
        out = small.new_zeros(small.shape[0], width, small.shape[-1])
        out[:, start + 1:] = small[:, :width - start - 1]
        return out

    scores_lines = True  # base_hidden/head_logits/token_logits: the base model scores a line (engine/alternatives.py)

    def rows_cache(self, cache, held: list) -> C.RowsCache:
        """A base-pass cache view: the prompt's `cache`, then each row's held keys and values (cache_view.RowsCache)."""
        return C.RowsCache.of(cache, held)

    @torch.inference_mode()
    def base_rows(self, rows: list[tuple[list[int], int, list | None]], cache) -> tuple[torch.Tensor, C.RowsCache]:
        """One causal base pass over rows of different lengths after the prompt's `cache`: each row (its tokens,
        the position of the first, the keys and values it holds or None; RowsCache) right-padded (pad_rows).
        Returns (hidden [B, W, H], the cache view, whose `kept` gives a row's keys and values after the pass)."""
        view = self.rows_cache(cache, [h for _, _, h in rows])
        return self._padded_pass(rows, view), view

    def _padded_pass(self, rows: list[tuple[list[int], int, list | None]], view) -> torch.Tensor:
        """A causal base pass over `rows` (their tokens and first positions; what each holds is in `view`),
        right-padded to the longest (cache_view.pad_rows): hidden [B, W, H]."""
        ids, positions = C.pad_rows([(r, p) for r, p, _ in rows], self.pad_id)
        return self.base_hidden(ids, view, positions)

    @torch.inference_mode()
    def base_packed(self, rows: list[tuple[list[int], int, list | None]], cache) -> tuple[torch.Tensor, C.PackedRows]:
        """`base_rows` with the rows packed into one sequence (cache_view.PackedRows): the pass feeds only their
        tokens, no padding. Returns the same (hidden [B, W, H], row r's states at [r, :len(tokens)], zeros after;
        the cache view, whose `kept` gives a row's keys and values after the pass)."""
        fed = [len(r) for r, _, _ in rows]
        view = C.PackedRows.of(cache, [h for _, _, h in rows], fed)
        ids = torch.tensor([[t for r, _, _ in rows for t in r]], dtype=torch.long, device=self.device)
        positions = torch.tensor([[p + j for r, p, _ in rows for j in range(len(r))]], dtype=torch.long,
                                 device=self.device)
        packed = A.base_causal_hidden(self.model, ids, positions, view,
                                      view.masks(self.text_config.layer_types, self.device))[0]
        hidden = packed.new_zeros(len(rows), max(fed), packed.shape[-1])
        at = 0
        for i, n in enumerate(fed):
            hidden[i, :n] = packed[at:at + n]
            at += n
        return hidden, view

    @torch.inference_mode()
    def base_hidden(self, ids: torch.LongTensor, cache, position_ids: torch.LongTensor) -> torch.Tensor:
        """The base model (adapters off), causal over `ids` [B, W] at `position_ids` [B, W] after the cache (read
        only): final-norm hidden states [B, W, H], row j the pretrained prediction of token j + 1."""
        b, width = ids.shape
        ro = cache if isinstance(cache, C.ReadOnlyCache) else C.ReadOnlyCache.of(cache, batch=b)
        masks = C.open_masks(ro, self.text_config.layer_types, b, width, self.device)
        return A.base_causal_hidden(self.model, ids.to(self.device), position_ids.to(self.device), ro, masks)

    def _head_kernel(self, hidden: torch.Tensor):
        """The packed restricted head, where it serves `hidden` (packed.fits), else None (the plain product)."""
        if self._head_packed is None or not self.adapter.state.packed:
            return None
        return self._head_packed if P.fits(hidden, self._head_packed.dtype) else None

    def head_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """The base model's logits over the restricted output vocabulary (columns), float32: [..., V']."""
        packed = self._head_kernel(hidden)
        if packed is not None:
            return packed(hidden)
        return A.head_product(hidden, self._head).float()

    def token_logits(self, hidden: torch.Tensor, ids: torch.LongTensor) -> torch.Tensor:
        """The base model's logit of token `ids` [B, W] (any id, in the restricted vocabulary or not) at each row
        of `hidden` [B, W, H], float32 [B, W]: the tied output head's row of that token."""
        rows = A.text_model(self.model).embed_tokens.weight[ids.to(self.device)]
        return (hidden.float() * rows.float()).sum(-1)

    def lm_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """The base model's next-token logits (full vocabulary): the AR twin is the unchanged base Gemma."""
        return head_logits(self.model.lm_head, hidden).to(torch.float32)
