"""Training of the embedded default model: a small DiffusionGemma for code infill.

`python -m dg_lsp.train --out runs/NAME` trains (resumable), `--export DIR` writes a
loadable model directory with a model card (its Recipe section). The canvas: docs/ARCHITECTURE.md, section 3.
"""
