"""Training batches: clean token windows plus many infill/continuation canvases per window.

Each row holds one window of a file, `[<bos>] + tokens`, encoded clean by the encoder, and
`n_canvases` canvases of `canvas_length` tokens each. Canvas j starts at a position `s` inside
`[j*L, (j+1)*L)`: its clean prefix is `window[:s]` (read from the encoder cache) and its
position ids are `s .. s+L-1`, exactly as the inference engine lays out
`[<bos>] + prefix` and the canvas. An infill canvas is
`[middle (m)][<pad> x (k-m)][suffix head (h)]`, `h = min(len(suffix), h_max)`, `k = L - h`;
the suffix head is clean and not supervised. A continuation canvas has `h = 0`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..engine.modelgen import BOS_ID, MASK_ID, PAD_ID

IGNORE = -100
# Kinds of hole, sampled per canvas (probabilities sum to 1).
HOLE_KINDS = ("continuation", "whole_lines", "rest_of_line", "span", "multi_line")
HOLE_PROBS = (0.2, 0.35, 0.2, 0.15, 0.1)


@dataclass
class Batch:
    enc_ids: np.ndarray      # [B, N] clean window, starting with <bos>
    ar_targets: np.ndarray   # [B, N] next token, IGNORE where none
    canvas_ids: np.ndarray   # [B, C*L] noised canvases
    canvas_targets: np.ndarray  # [B, C*L] clean token where supervised, else IGNORE
    canvas_starts: np.ndarray   # [B, C] position of each canvas's first token
    hole_kinds: np.ndarray   # [B, C] index into HOLE_KINDS
    noise_t: np.ndarray      # [B, C]


class CanvasSampler:
    """Draws deterministic batches: batch `step` depends only on (seed, step)."""

    def __init__(self, files: list[np.ndarray], newline: np.ndarray, vocab_size: int, *, canvas_length: int,
                 n_canvases: int, suffix_head: int, noise_kind: str, seed: int):
        self.files = [f for f in files if len(f) >= 8]
        lengths = np.array([len(f) for f in self.files], dtype=np.float64)
        self.weights = lengths / lengths.sum()
        self.newline = newline
        self.vocab_size = vocab_size
        self.L = canvas_length
        self.C = n_canvases
        self.N = canvas_length * n_canvases
        self.h_max = suffix_head
        self.max_middle = 2 * canvas_length
        self.lookahead = self.max_middle + suffix_head + canvas_length
        self.noise_kind = noise_kind
        self.multi_line_prob = 0.3  # share of whole-line holes spanning 2-4 lines
        self.seed = seed

    def batch(self, step: int, batch_size: int, kinds: tuple[float, ...] = HOLE_PROBS) -> Batch:
        rng = np.random.default_rng([self.seed, step])
        B, C, L, N = batch_size, self.C, self.L, self.N
        enc = np.full((B, N), PAD_ID, np.int64)
        ar = np.full((B, N), IGNORE, np.int64)
        clean = np.full((B, C * L), PAD_ID, np.int64)
        target = np.full((B, C * L), IGNORE, np.int64)
        starts = np.zeros((B, C), np.int64)
        kind_idx = np.zeros((B, C), np.int64)
        for b in range(B):
            seq, file_end, line_start = self._window(rng)
            n = min(N, len(seq))
            enc[b, :n] = seq[:n]
            ar[b, :n - 1] = seq[1:n]
            for j in range(C):
                lo, hi = max(1, j * L), min((j + 1) * L, file_end)
                if lo >= hi:  # the file ended before this canvas: nothing to supervise
                    starts[b, j] = j * L
                    continue
                kind = rng.choice(len(HOLE_KINDS), p=kinds)
                s, toks, n_sup = self._canvas(rng, seq, file_end, line_start, lo, hi, HOLE_KINDS[kind])
                starts[b, j], kind_idx[b, j] = s, kind
                clean[b, j * L:(j + 1) * L] = toks
                target[b, j * L:j * L + n_sup] = toks[:n_sup]
        t = rng.uniform(0.001, 1.0, size=(B, C))
        noised = clean.copy()
        hit = (target != IGNORE) & (rng.random(clean.shape) < np.repeat(t, L, axis=1))
        if self.noise_kind == "mask":
            noised[hit] = MASK_ID
        else:
            noised[hit] = rng.integers(0, self.vocab_size, size=int(hit.sum()))
        return Batch(enc, ar, noised, target, starts, kind_idx, t)

    def _window(self, rng):
        """`[<bos>] + file[o:o+N-1+lookahead]`; file_end = len(seq) if the file ends inside it, else a big number."""
        f = self.files[rng.choice(len(self.files), p=self.weights)]
        span = self.N - 1 + self.lookahead
        o = 0 if rng.random() < 0.1 else int(rng.integers(0, max(1, len(f) - self.N // 2)))
        body = f[o:o + span]
        seq = np.concatenate([[BOS_ID], body]).astype(np.int64)
        file_end = len(seq) if o + span >= len(f) else 1 << 30
        nl = self.newline[seq]
        line_start = np.zeros(len(seq), bool)
        line_start[1:] = nl[:-1]
        line_start[0] = False
        line_start[1] = o == 0 or bool(self.newline[f[o - 1]])
        return seq, file_end, line_start

    def _canvas(self, rng, seq, file_end, line_start, lo, hi, kind):
        """Start, the L clean canvas tokens, and how many leading positions are supervised."""
        L, end = self.L, min(file_end, len(seq))
        if kind == "whole_lines":
            cands = np.flatnonzero(line_start[lo:hi]) + lo
            if len(cands) == 0:
                kind = "span"
        s = int(cands[rng.integers(len(cands))]) if kind == "whole_lines" else int(rng.integers(lo, hi))
        if kind == "continuation":
            toks = np.full(L, PAD_ID, np.int64)
            piece = seq[s:min(s + L, end)]
            toks[:len(piece)] = piece
            return s, toks, L
        if kind == "span":
            m = int(rng.integers(1, L + 8))
        else:
            n_lines = 1
            if kind == "multi_line":
                n_lines = int(rng.integers(2, 5))
            elif kind == "whole_lines" and rng.random() < self.multi_line_prob:
                n_lines = int(rng.integers(2, 5))
            ends = np.flatnonzero(self.newline[seq[s:min(s + self.max_middle, end)]])
            if len(ends) >= n_lines:
                m = int(ends[n_lines - 1]) + 1
                if kind == "rest_of_line" and rng.random() < 0.5 and m > 1:
                    m -= 1  # stop before the newline token: the suffix starts with it
            else:
                m = min(self.max_middle, end - s)
        m = max(1, min(m, self.max_middle, end - s))
        suffix = seq[s + m:min(s + m + self.h_max, end)]
        h = len(suffix)
        k = L - h
        middle = seq[s:s + min(m, k)]
        toks = np.full(L, PAD_ID, np.int64)
        toks[:len(middle)] = middle
        toks[k:] = suffix
        return s, toks, k
