"""`python -m dg_lsp.bench.gpu ...` = `dg-lsp bench gpu ...`."""

from dg_lsp.bench.gpu.suite import main

raise SystemExit(main())
