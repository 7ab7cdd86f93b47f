"""The DiffusionGemma engine: model loading, infill canvases, the denoising loop, one worker thread."""

from .engine import Engine
from .loader import DEFAULT_MODEL_DIR, ModelLoadError, load_model
from .spec import InfillSpec
from .types import DenoiseParams, InfillRequest, InfillResult

__all__ = ["Engine", "DEFAULT_MODEL_DIR", "ModelLoadError", "load_model", "InfillSpec", "DenoiseParams",
           "InfillRequest", "InfillResult"]
