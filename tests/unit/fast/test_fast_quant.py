"""`quantization="nf4"` says clearly what is missing when it cannot work (no CUDA, no bitsandbytes)."""

import importlib.util

import pytest
import torch

from dg_lsp.engine.fast.quant import quantization_kwargs
from dg_lsp.engine.loader import ModelLoadError, load_model


def test_none_adds_nothing():
    assert quantization_kwargs("none", "cpu", torch.float32) == {}


def test_nf4_on_cpu_names_cuda(tiny_model_dir):
    with pytest.raises(ModelLoadError, match="needs a CUDA device"):
        load_model(tiny_model_dir, device="cpu", quantization="nf4")


def test_nf4_without_bitsandbytes_names_the_extra(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "bitsandbytes" else real(name, *a))
    with pytest.raises(ModelLoadError, match=r"bitsandbytes.*pip install 'dg-lsp\[gpu\]'"):
        quantization_kwargs("nf4", "cuda", torch.bfloat16)


def test_unknown_quantization_is_an_error(tiny_model_dir):
    with pytest.raises(ModelLoadError, match="unknown quantization 'int3'"):
        load_model(tiny_model_dir, device="cpu", quantization="int3")
