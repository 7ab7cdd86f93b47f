"""The engine with the fixed-shape runner in its loop (what `denoise_runner` selects on CUDA) gives
the same completions as the eager engine, also when the prefix cache reuses a typed prompt."""

from dg_lsp.engine import DenoiseParams, Engine, InfillRequest
from dg_lsp.engine.fast import StaticRunner, denoise_runner


def test_engine_fills_match_with_the_fast_runner(tiny_model_dir):
    eager, fast = Engine.load(tiny_model_dir, device="cpu"), Engine.load(tiny_model_dir, device="cpu")
    try:
        assert fast.loop.runner is fast.runner  # CPU: the hook keeps the eager runner
        fast.loop.runner = denoise_runner(fast.runner, fast="on")
        assert isinstance(fast.loop.runner, StaticRunner)
        params = DenoiseParams(max_steps=4, temperature=0.3, seed=5)
        typed = "def add(a, b):\n    total = a + b\n    return t"
        for prefix in (typed[:-6], typed[:-3], typed):  # the later ones reuse the document's prefix cache
            for strategy in ("pad", "search"):
                req = dict(prefix=prefix, suffix="\n\nprint(add(1, 2))\n", params=params, length_strategy=strategy,
                           doc_key="doc")
                a, b = eager.infill(InfillRequest(**req)), fast.infill(InfillRequest(**req))
                assert (a.text, a.steps, a.hole_length) == (b.text, b.steps, b.hole_length), (prefix, strategy)
    finally:
        eager.close()
        fast.close()
