"""Shared fixtures: a tiny randomly initialised DiffusionGemma saved to disk once per session,
loaded through the same `--model DIR` path users take."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# a warm engine's prepacked weights (engine/gemma3/packed.py): all of them, not timed, so every run takes the same
# path, and the one that packs the most
os.environ.setdefault("DG_LSP_PACKED", "all")


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory):
    from dg_lsp.engine.modelgen import build_tiny_model

    return str(build_tiny_model(tmp_path_factory.mktemp("tiny-model")))


@pytest.fixture(scope="session")
def tiny_mask_model_dir(tmp_path_factory):
    from dg_lsp.engine.modelgen import build_tiny_model

    return str(build_tiny_model(tmp_path_factory.mktemp("tiny-mask-model"), noise_kind="mask"))


@pytest.fixture(scope="session")
def tiny_engine(tiny_model_dir):
    from dg_lsp.engine import Engine

    engine = Engine.load(tiny_model_dir, device="cpu")
    yield engine
    engine.close()
