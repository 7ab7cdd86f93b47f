"""The benchmark harness (`dg-lsp bench`): task sources, runners, metrics, reports. See README.md."""
