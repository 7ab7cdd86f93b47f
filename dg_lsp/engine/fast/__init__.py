"""The fixed-shape fast path of the engine: prompt KV in fixed buffers, padded canvases, compiled steps.

Nothing here needs CUDA to import or run; on a GPU the same code runs under `torch.compile`
with CUDA graphs. `StaticRunner` plugs into `DenoiseLoop` in place of `ModelRunner`.
"""

from .cache import FixedKVCache
from .runner import DEFAULT_WIDTH_BUCKETS, StaticRunner, denoise_runner

__all__ = ["FixedKVCache", "StaticRunner", "DEFAULT_WIDTH_BUCKETS", "denoise_runner"]
