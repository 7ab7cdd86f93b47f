"""The base build's GGUF conversion bar (drawn by transformers with tqdm directly) follows transformers'
progress-bar switch, which the CLI turns off unless stderr is a terminal or --verbose is given."""

from __future__ import annotations

import io

from transformers import modeling_gguf_pytorch_utils as gguf_utils
from transformers.utils import logging as hf_logging

from dg_lsp.engine.gemma3.build import _gguf_bar_follows_transformers


def _drawn() -> str:
    out = io.StringIO()
    for _ in gguf_utils.tqdm(range(3), desc="Converting and de-quantizing GGUF tensors...", file=out):
        pass
    return out.getvalue()


def test_the_conversion_bar_is_off_while_transformers_bars_are_off():
    original = gguf_utils.tqdm
    was_enabled = hf_logging.is_progress_bar_enabled()
    try:
        hf_logging.disable_progress_bar()
        with _gguf_bar_follows_transformers():
            assert _drawn() == ""
        assert gguf_utils.tqdm is original
        hf_logging.enable_progress_bar()
        with _gguf_bar_follows_transformers():
            assert "Converting" in _drawn()
    finally:
        (hf_logging.enable_progress_bar if was_enabled else hf_logging.disable_progress_bar)()
        gguf_utils.tqdm = original
