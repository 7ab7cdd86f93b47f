"""Adaptation training of a pretrained Gemma 3 into a block-diffusion infill model (`python -m dg_lsp.train.gemma`).

The encoder stays the pretrained model; only LoRA deltas of the decoder pass and a `<mask>` embedding are
trained (dg_lsp/engine/gemma3/adapter.py). Data: the standard library and permissively licensed packages
(data.py names each with its licence); three packages are held out for evaluation and never trained on.
"""
