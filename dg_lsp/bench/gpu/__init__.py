"""The GPU suite (`dg-lsp bench gpu`): speed of the architecture on random weights."""
