"""Measurements of conversion (a) (engine/gemma3/convert_dg.py) on the real base model, a measurement script
(docs/results/gemma-conversion-a.md), not a test:

    python -m dg_lsp.bench.convert_a parity --base DIR [--mode windowed|keys-as-values|both] [--heal-minutes M]
    python -m dg_lsp.bench.convert_a humaneval --base DIR --adapter dg_lsp/model/gemma [--mode ...] [--n 40]

The parts: `commands` (the evaluation files, building the converted model, the two commands), `parity` (logits
against Gemma 3's, through the encoder and the decoder), `heal` (layer-local distillation of the keys-as-values
layers).
"""

from .commands import EVAL_FILES, FIT_FILES, LONG_FILE, build, cmd_humaneval, cmd_parity, main, sequences
from .heal import heal
from .parity import compare, decoder_parity, dg_hidden, g3_hidden

__all__ = ["EVAL_FILES", "FIT_FILES", "LONG_FILE", "build", "cmd_humaneval", "cmd_parity", "compare",
           "decoder_parity", "dg_hidden", "g3_hidden", "heal", "main", "sequences"]
