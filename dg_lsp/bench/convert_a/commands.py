"""Measure conversion (a) (engine/gemma3/convert_dg.py) on the real base model: how far the converted
DiffusionGemma encoder's next-token logits are from Gemma 3's on real Python, and the HumanEval-Infilling AR pass@1
it keeps. A measurement script (docs/results/gemma-conversion-a.md), not a test.

    python -m dg_lsp.bench.convert_a parity --base DIR [--mode windowed|keys-as-values|both] [--heal-minutes M]
    python -m dg_lsp.bench.convert_a humaneval --base DIR --adapter dg_lsp/model/gemma [--mode ...] [--n 40]

`humaneval` scores the AR mode exactly as `dg-lsp bench humaneval --baseline ar` does (the harness's
AutoregressiveRunner through an Engine, the same scoring and sandboxed tests), for the unconverted model (the
AR twin of an adapted-Gemma directory, which is the base Gemma 3 exactly) and for each converted model, in one run.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import torch

from .heal import heal
from .parity import compare, decoder_parity

# Stdlib files: evaluation (never used to fit or heal) and calibration/healing (never evaluated).
EVAL_FILES = ("textwrap.py", "shlex.py", "fractions.py", "heapq.py")
LONG_FILE = "argparse.py"
FIT_FILES = ("csv.py", "calendar.py", "difflib.py", "bisect.py", "glob.py", "fnmatch.py", "tokenize.py",
             "pprint.py", "string.py", "contextlib.py", "functools.py", "dataclasses.py")


def stdlib() -> Path:
    return Path(os.__file__).parent


def heal_files(n: int) -> list[str]:
    """Top-level stdlib modules for healing, in name order: the fit files first, never an evaluation file."""
    skip = set(EVAL_FILES) | {LONG_FILE}
    rest = sorted(p.name for p in stdlib().glob("*.py") if p.name not in skip and p.name not in FIT_FILES
                  and not p.name.startswith("_") and p.stat().st_size > 8000)
    return (list(FIT_FILES) + rest)[:n]


def sequences(tok, names, n_tokens: int) -> list[list[int]]:
    out = []
    for name in names:
        text = (stdlib() / name).read_text(encoding="utf-8")
        ids = tok(text).input_ids  # bos first
        out.append(ids[:n_tokens])
    return out


def load_base(base: str):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(base, local_files_only=True)
    g3 = AutoModelForCausalLM.from_pretrained(base, local_files_only=True, dtype=torch.float32,
                                              use_safetensors=True, attn_implementation="sdpa").eval()
    return tok, g3


def build(g3, mode: str, fit_seqs):
    from dg_lsp.engine.gemma3 import convert_dg as C

    fits = None
    t0 = time.perf_counter()
    if mode == "keys-as-values":
        fits = C.fit_full_layers(g3, fit_seqs)
    t_fit = time.perf_counter() - t0
    dg, report = C.convert(g3, mode, fits)
    report["fit_s"] = round(t_fit, 1)
    report["parameters"] = sum(p.numel() for p in dg.parameters())  # shared (tied) tensors once
    report["parameters_gemma3"] = sum(p.numel() for p in g3.parameters())
    report["parameters_vision_tower"] = sum(p.numel() for p in dg.model.encoder.vision_tower.parameters())
    if fits:
        report["fits"] = {i: vars(f) for i, f in fits.items()}
    return dg, report


# -- commands ------------------------------------------------------------------------------------------------------

def cmd_parity(args) -> dict:
    tok, g3 = load_base(args.base)
    eval_seqs = sequences(tok, EVAL_FILES, args.tokens)
    long_seqs = sequences(tok, (LONG_FILE,), args.long_tokens)
    fit_seqs = sequences(tok, FIT_FILES[:args.fit_files], args.tokens)
    window = g3.config.sliding_window
    out = {"base": args.base, "eval_files": list(EVAL_FILES), "tokens_per_file": args.tokens,
           "long_file": LONG_FILE, "long_tokens": len(long_seqs[0]), "fit_files": list(FIT_FILES[:args.fit_files]),
           "modes": {}}
    if args.noise_floor:  # the same Gemma 3 with eager attention instead of sdpa: float32 noise, nothing else
        from transformers import AutoModelForCausalLM

        eager = AutoModelForCausalLM.from_pretrained(args.base, local_files_only=True, dtype=torch.float32,
                                                     use_safetensors=True, attn_implementation="eager").eval()
        out["noise_floor_eager_vs_sdpa"] = {"short": compare(g3, eager, eval_seqs)}
        print(json.dumps(out["noise_floor_eager_vs_sdpa"], indent=1), flush=True)
        del eager
    modes = ("windowed", "keys-as-values") if args.mode == "both" else tuple(filter(None, [args.mode]))
    for mode in modes:
        dg, report = build(g3, mode, fit_seqs)
        row = {"report": report}
        if not args.skip_compare:
            row.update(short=compare(g3, dg, eval_seqs), long=compare(g3, dg, long_seqs, split=window))
        if args.decoder:
            row["decoder_causal"] = decoder_parity(g3, dg, eval_seqs)
        if args.heal_minutes and mode == "keys-as-values":
            heal_seqs = sequences(tok, heal_files(args.heal_files), args.tokens)
            row["heal"] = heal(g3, dg, report, heal_seqs, args.heal_minutes, lr=args.heal_lr)
            row["short_healed"] = compare(g3, dg, eval_seqs)
            row["long_healed"] = compare(g3, dg, long_seqs, split=window)
            if args.save_healed:
                dg.save_pretrained(args.save_healed)
                tok.save_pretrained(args.save_healed)
        out["modes"][mode] = row
        print(json.dumps({mode: {k: v for k, v in row.items() if k != "report"}}, indent=1), flush=True)
        del dg
    return out


def _engine_for(dg, tok, spec_from: str | None, path: str):
    from dg_lsp.engine import Engine
    from dg_lsp.engine.loader import LoadedModel
    from dg_lsp.engine.spec import InfillSpec

    base_spec = InfillSpec.load(spec_from) if spec_from else InfillSpec()
    # the same prompt conventions as the unconverted model's directory (bos, prompt cap), uniform noise
    spec = InfillSpec(add_bos=base_spec.add_bos, max_prompt_tokens=base_spec.max_prompt_tokens)
    return Engine(LoadedModel(dg, tok, spec, path, "cpu", "float32"))


def cmd_humaneval(args) -> dict:
    from tqdm import tqdm

    from dg_lsp.bench.quality import executor, report, scoring
    from dg_lsp.bench.quality import tasks as T
    from dg_lsp.bench.quality.harness import BenchOptions, Config, generate
    from dg_lsp.bench.quality.runners import RunSettings
    from dg_lsp.engine import Engine

    tasks = T.subsample(T.load_humaneval(args.split, None), args.n, args.seed)
    settings = RunSettings(seed=args.seed, max_prompt_tokens=args.max_prompt_tokens, max_new_tokens=64)
    options = BenchOptions(baselines=("ar",), settings=settings, device="cpu", dtype="float32", progress=False)

    class Fixed:  # harness._Engines with an engine built here
        def __init__(self, engine):
            self.engine = engine

        def get(self):
            return self.engine

    configs, samples, sample_tasks = [], [], []

    def run(label, engine):
        s, described = generate(Config(label, "ar", "engine", settings, None), tasks, options, Fixed(engine))
        for x in s:
            x["label"] = label
        described["label"] = label
        configs.append(described)
        samples.extend(s)
        sample_tasks.extend(tasks)
        engine.close()
        print(f"{label}: generated in {described['wall_s']:.0f} s", file=sys.stderr, flush=True)

    modes = ("windowed", "keys-as-values") if args.mode == "both" else tuple(filter(None, [args.mode]))
    if args.adapter:
        run("ar/unconverted Gemma 3 (AR twin of " + args.adapter + ")", Engine.load(args.adapter, "cpu", "float32"))
    tok, g3 = load_base(args.base)
    fit_seqs = sequences(tok, FIT_FILES[:args.fit_files], args.tokens)
    for mode in modes:
        dg, _ = build(g3, mode, fit_seqs)
        run(f"ar/converted ({mode})", _engine_for(dg, tok, args.adapter, f"<converted {mode}>"))
        del dg
    if args.healed:
        from transformers import AutoTokenizer, DiffusionGemmaForBlockDiffusion

        dg = DiffusionGemmaForBlockDiffusion.from_pretrained(args.healed, dtype=torch.float32).eval()
        run("ar/converted (keys-as-values, healed)", _engine_for(dg, AutoTokenizer.from_pretrained(args.healed),
                                                                 args.adapter, args.healed))
    del g3
    n_tests = sum(1 for t in sample_tasks if t.test and t.entry_point)
    with tqdm(total=n_tests, desc="tests", disable=True) as bar:
        scoring.run_tests(sample_tasks, samples, executor.Limits(timeout_s=10.0), 2, bar)
    samples = scoring.strip_private(samples)
    rows = report.build_rows(configs, samples)
    print(report.markdown_table(rows), flush=True)
    return {"command": " ".join(sys.argv), "split": args.split, "n": len(tasks), "seed": args.seed,
            "configs": configs, "rows": rows, "samples": samples}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m dg_lsp.bench.convert_a", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    for name in ("parity", "humaneval"):
        s = sub.add_parser(name)
        s.add_argument("--base", required=True, help="the Gemma 3 transformers directory")
        s.add_argument("--mode", default="both", choices=("windowed", "keys-as-values", "both", ""))
        s.add_argument("--tokens", type=int, default=384, help="tokens per evaluation / calibration file")
        s.add_argument("--fit-files", type=int, default=4, help="calibration files for the keys-as-values fit")
        s.add_argument("--out", default=None, help="write the JSON here")
    pp = sub.choices["parity"]
    pp.add_argument("--long-tokens", type=int, default=1024)
    pp.add_argument("--skip-compare", action="store_true", help="no encoder comparison (with --decoder)")
    pp.add_argument("--decoder", action="store_true", help="also the decoder with a causal mask (no healing)")
    pp.add_argument("--noise-floor", action="store_true", help="also compare Gemma 3 eager vs sdpa attention")
    pp.add_argument("--heal-minutes", type=float, default=0.0)
    pp.add_argument("--heal-files", type=int, default=40, help="stdlib files for healing (the last 4 held out)")
    pp.add_argument("--heal-lr", type=float, default=1e-4)
    pp.add_argument("--save-healed", default=None, help="save the healed keys-as-values model here")
    ph = sub.choices["humaneval"]
    ph.add_argument("--adapter", default=None, help="an adapted-Gemma directory: its AR twin is the unconverted model")
    ph.add_argument("--healed", default=None, help="also score a saved (healed) converted model")
    ph.add_argument("--split", default="single-line")
    ph.add_argument("--n", type=int, default=40)
    ph.add_argument("--seed", type=int, default=0)
    ph.add_argument("--max-prompt-tokens", type=int, default=1024)
    args = p.parse_args(argv)
    torch.set_num_threads(int(os.environ.get("DG_LSP_THREADS", "1")))
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    result = cmd_parity(args) if args.command == "parity" else cmd_humaneval(args)
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1, default=str) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
