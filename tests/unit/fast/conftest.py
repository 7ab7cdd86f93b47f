"""An in-memory tiny DiffusionGemma whose sliding window (8) is shorter than the prompts used here,
so the fixed cache's ring and window masks are exercised."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture(scope="module")
def small_window_model():
    from transformers import DiffusionGemmaForBlockDiffusion

    from dg_lsp.engine.loader import LoadedModel
    from dg_lsp.engine.modelgen import make_config
    from dg_lsp.engine.spec import InfillSpec

    torch.manual_seed(0)
    config = make_config(384, canvas_length=16, sliding_window=8, num_layers=3)
    model = DiffusionGemmaForBlockDiffusion(config).eval()
    return LoadedModel(model, None, InfillSpec(), "memory", "cpu", "float32")


@pytest.fixture
def prompt():
    return torch.randint(4, 380, (20,), generator=torch.Generator().manual_seed(1)).tolist()


@pytest.fixture(autouse=True)
def one_thread():
    """Tiny shapes: one intra-op thread is faster, and steadier on a shared machine."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
