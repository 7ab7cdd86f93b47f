"""A team's shared engine: `dg-lsp engine serve` (Ray Serve replicas, app.py, router.py), the HTTP/JSON API
(wire.py), the thin client the LSP server uses with `--engine URL` (client.py), `dg-lsp bench team` (bench.py).

Only app.py, router.py and cli.py's serve need Ray (`pip install 'dg-lsp[team]'`); the client needs nothing
beyond the standard library."""
