"""`python -m dg_lsp.bench.typing ...` = `dg-lsp bench typing ...`."""

from dg_lsp.bench.typing.suite import main

raise SystemExit(main())
