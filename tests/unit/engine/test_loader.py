"""Which directory a `--model` value names: a local directory, an embedded model by name, or the default."""

from __future__ import annotations

import pytest

from dg_lsp.engine import loader
from dg_lsp.engine.errors import ModelLoadError


def test_no_model_is_the_adapted_gemma_and_names_pick_the_embedded_models():
    gemma, small = loader.EMBEDDED_MODELS["gemma"], loader.EMBEDDED_MODELS["small"]
    assert loader.DEFAULT_MODEL_DIR == gemma and gemma.name == "gemma"
    assert loader.resolve_model_path(None) == gemma
    assert loader.resolve_model_path("") == gemma
    assert loader.resolve_model_path("gemma") == gemma
    assert loader.resolve_model_path("small") == small
    assert (small / "config.json").is_file()  # the small model is a complete DiffusionGemma directory


def test_a_directory_of_that_name_wins_over_the_embedded_model(tmp_path, monkeypatch):
    local = tmp_path / "small"
    local.mkdir()
    (local / "config.json").write_text("{}")
    monkeypatch.chdir(tmp_path)
    assert loader.resolve_model_path("small").resolve() == local.resolve()


def test_an_unknown_name_says_which_names_exist(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ModelLoadError, match="gemma, small"):
        loader.resolve_model_path("tiny-llama")
