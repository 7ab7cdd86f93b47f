"""`python -m dg_lsp.train.gemma`: adapt a built Gemma 3 base model to block-diffusion infill."""

from __future__ import annotations

import argparse
import logging
from dataclasses import fields

from .trainer import Options


def parse(argv=None) -> Options:
    p = argparse.ArgumentParser(prog="python -m dg_lsp.train.gemma", description=__doc__)
    for f in fields(Options):
        flag = "--" + f.name.replace("_", "-")
        if isinstance(f.default, bool):
            p.add_argument(flag, action="store_true", default=f.default)
        else:
            p.add_argument(flag, type=type(f.default), default=f.default)
    return Options(**vars(p.parse_args(argv)))


def main(argv=None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    opts = parse(argv)
    from . import data
    from .evaluate import evaluate
    from .trainer import Run

    run = Run(opts)
    run.heldout_files = [] if opts.no_eval else data.collect("heldout")
    logging.info("train files %d, held-out files %d, vocab %d", len(run.train_files), len(run.heldout_files),
                 len(run.vocab))
    run.train(evaluate)
    if opts.export:
        from .export import export

        export(run, opts.export)
    return 0
