"""The quality suite (`dg-lsp bench repo|heldout|humaneval|tasks|compare`): task sources, runners,
scoring, reports."""
