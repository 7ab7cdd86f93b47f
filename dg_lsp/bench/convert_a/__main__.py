"""`python -m dg_lsp.bench.convert_a parity|humaneval ...`: the measurements of conversion (a)."""

from dg_lsp.bench.convert_a.commands import main

raise SystemExit(main())
