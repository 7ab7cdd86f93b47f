"""Load a DiffusionGemma checkpoint and its tokenizer from a local directory, never the network."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path

from .errors import ModelLoadError
from .spec import InfillSpec

log = logging.getLogger(__name__)

_MODELS = Path(__file__).resolve().parent.parent / "model"
# The models the package ships, by name (`--model gemma`, `--model small`): the adapted Gemma 3 270M is the
# default (no --model, an empty `dgLsp.model`); the small 8M model trained from scratch is fast and writes nothing
# worth keeping, and stays for tests and quick checks of the editor path.
EMBEDDED_MODELS = {"gemma": _MODELS / "gemma", "small": _MODELS / "small"}
DEFAULT_MODEL_NAME = "gemma"
DEFAULT_MODEL_DIR = EMBEDDED_MODELS[DEFAULT_MODEL_NAME]


@dataclass
class LoadedModel:
    model: object  # DiffusionGemmaForBlockDiffusion
    tokenizer: object
    spec: InfillSpec
    path: str
    device: str
    dtype: str
    # "diffusiongemma" (engine/runner.py) or "gemma3-lora" (engine/gemma3: `parts` holds adapter, vocab, canvas)
    kind: str = "diffusiongemma"
    parts: dict | None = None
    dtype_asked: str = ""  # "auto" on CPU: loaded in float32, settled at warm-up (engine/dtype_auto.py)


def _is_model_dir(path: Path) -> bool:
    from .gemma3.load import is_adapter_dir

    return (path / "config.json").is_file() or is_adapter_dir(path)


def resolve_model_path(model: str | None) -> Path:
    """A local model directory: `model` itself, or an embedded model by name (a directory of that name wins),
    or the default (None or empty). Raises ModelLoadError with what is missing."""
    if not model:
        if not _is_model_dir(DEFAULT_MODEL_DIR):
            raise ModelLoadError(
                f"the embedded default model is not installed at {DEFAULT_MODEL_DIR}; pass --model DIR")
        return DEFAULT_MODEL_DIR
    path = Path(model).expanduser()
    if not path.is_dir() and model in EMBEDDED_MODELS:
        path = EMBEDDED_MODELS[model]
        if not _is_model_dir(path):
            raise ModelLoadError(f"the embedded model {model!r} is not installed at {path}")
        return path
    if not path.is_dir():
        names = ", ".join(EMBEDDED_MODELS)
        raise ModelLoadError(f"model directory not found: {path} (models load from local directories only, "
                             f"or name an embedded one: {names})")
    from .gemma3.load import is_adapter_dir

    if is_adapter_dir(path):
        return path
    if not (path / "config.json").is_file():
        raise ModelLoadError(f"{path} has no config.json: not a transformers model directory")
    return path


def pick_device(device: str) -> str:
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise ModelLoadError("--device cuda was asked for but CUDA is not available")
    if device not in ("cpu", "cuda") and not device.startswith("cuda:"):
        raise ModelLoadError(f"unknown device {device!r} (auto|cpu|cuda)")
    return device


def pick_dtype(dtype: str, device: str):
    import torch

    table = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
    if dtype == "auto":
        return torch.bfloat16 if device.startswith("cuda") else torch.float32
    if dtype == "int8":  # loads in float32; the runner packs int8 weights from it (engine/gemma3/int8.py)
        if not device.startswith("cpu"):
            raise ModelLoadError(f"dtype int8 runs on the CPU only, not {device!r} (on a GPU use bfloat16)")
        from .gemma3.int8 import unavailable

        why = unavailable()
        if why:
            raise ModelLoadError(f"dtype int8 cannot run here: {why}")
        return torch.float32
    if dtype not in table:
        raise ModelLoadError(f"unknown dtype {dtype!r} (auto|float32|bfloat16|int8)")
    return table[dtype]


def load_model(model: str | None = None, device: str = "auto", dtype: str = "auto",
               trust_remote_code: bool = False, quantization: str = "none",
               allow_pickle_weights: bool = False) -> LoadedModel:
    """Load weights, tokenizer and infill spec. Raises ModelLoadError with a clear message.
    Weights load from safetensors only (a pickled `.bin` runs code) unless `allow_pickle_weights`.
    `quantization`: "none" | "nf4" (bitsandbytes 4-bit on CUDA, the `gpu` extra; see engine/fast/quant.py)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    path = resolve_model_path(model)
    dev = pick_device(device)
    torch_dtype = pick_dtype(dtype, dev)
    from .gemma3 import load as gemma3_load

    if gemma3_load.is_adapter_dir(path):  # an adapted pretrained Gemma 3 (engine/gemma3)
        net, tokenizer, parts = gemma3_load.load(path, dev, torch_dtype)
        spec = InfillSpec.load(path)
        log.info("loaded %s (adapted Gemma 3) on %s (%s)", path, dev, torch_dtype)
        return LoadedModel(net, tokenizer, spec, str(path), dev, str(torch_dtype).replace("torch.", ""),
                           gemma3_load.ARCHITECTURE, parts, dtype_asked=dtype)
    if dtype == "int8":
        raise ModelLoadError(f"dtype int8 is for the adapted Gemma models (engine/gemma3); {path} is not one")
    from .fast.quant import quantization_kwargs, quantized_fraction

    quant_kwargs = quantization_kwargs(quantization, dev, torch_dtype)
    try:
        from transformers import AutoTokenizer, DiffusionGemmaForBlockDiffusion

        tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True,
                                                  trust_remote_code=trust_remote_code)
        net = DiffusionGemmaForBlockDiffusion.from_pretrained(
            str(path), local_files_only=True, dtype=torch_dtype, trust_remote_code=trust_remote_code,
            use_safetensors=None if allow_pickle_weights else True, **quant_kwargs)
    except Exception as exc:  # noqa: BLE001 - any failure here is a load failure for the user
        raise ModelLoadError(f"failed to load model from {path}: {type(exc).__name__}: {exc}") from exc
    if not quant_kwargs:  # a quantized model is placed by its device_map and cannot be moved
        net.to(dev)
    net.eval()
    if quant_kwargs:
        log.info("%s: %.0f%% of the parameters are 4-bit (MoE experts are not nn.Linear and stay %s)",
                 quantization, 100 * quantized_fraction(net), torch_dtype)
    spec = InfillSpec.load(path)
    log.info("loaded %s on %s (%s), noise=%s pad_fill=%s", path, dev, torch_dtype, spec.noise_kind, spec.pad_fill)
    return LoadedModel(net, tokenizer, spec, str(path), dev, str(torch_dtype).replace("torch.", ""),
                       dtype_asked=dtype)
