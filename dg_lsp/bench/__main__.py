"""`python -m dg_lsp.bench ...` = `dg-lsp bench ...`."""

import sys

from dg_lsp.bench.cli import main

sys.exit(main())
