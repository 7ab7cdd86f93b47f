"""Compare trained runs on the held-out metrics (the noise-kind A/B): `python -m dg_lsp.train.compare RUN...`.

Prints one JSON object {run: metrics} and, with `--pick`, the best run's path on the last line
(ranked by multi-step single-line token accuracy, then one-step accuracy, then next-token loss).
"""

from __future__ import annotations

import argparse
import json
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dg_lsp.train.compare")
    parser.add_argument("runs", nargs="+")
    parser.add_argument("--batches", type=int, default=8)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--json", default="", help="also write the table here")
    parser.add_argument("--pick", action="store_true")
    args = parser.parse_args(argv)
    from .cli import TrainOptions, resolve_options
    from .trainer import Trainer

    table = {}
    for run in args.runs:
        opts = TrainOptions(out=run, resume=True, threads=args.threads, eval_batches=args.batches)
        opts = resolve_options(opts, {"resume", "out", "threads", "eval_batches"})
        trainer = Trainer(opts)
        table[run] = {"noise": opts.noise, "step": trainer.state["step"], **trainer.evaluate()}
    text = json.dumps(table, indent=2)
    print(text)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            fh.write(text + "\n")
    if args.pick:
        best = max(table, key=lambda r: (table[r]["line_acc_8steps"], table[r]["line_acc_t1"],
                                         -table[r]["heldout_ar_loss"]))
        print(best)
    return 0


if __name__ == "__main__":
    sys.exit(main())
