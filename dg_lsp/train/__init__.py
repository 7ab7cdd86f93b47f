"""Training of the embedded default model: a small DiffusionGemma for code infill.

`python -m dg_lsp.train --out runs/NAME` trains (resumable), `--export DIR` writes a
loadable model directory with a model card. See DESIGN.md sections 3 and 6.
"""
