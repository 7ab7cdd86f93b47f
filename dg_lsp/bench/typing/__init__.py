"""The typing suite (`dg-lsp bench typing`): latency while someone types, caches on vs off."""
