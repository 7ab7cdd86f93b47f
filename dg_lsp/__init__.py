"""dg-lsp: a code-completion language server built on a block-diffusion language model."""

__version__ = "0.1.0"
