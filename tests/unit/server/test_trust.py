"""Trust (issue 14.13): pickled weights only with the command-line flag; remote code and that flag never from
a client's settings."""

from __future__ import annotations

import shutil

import pytest

from dg_lsp.config import Settings, merge
from dg_lsp.engine.loader import load_model
from dg_lsp.engine.errors import ModelLoadError

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def pickled_model_dir(tiny_model_dir, tmp_path_factory):
    """The tiny model with its weights as a pickled pytorch_model.bin instead of model.safetensors."""
    import torch
    from safetensors.torch import load_file

    out = tmp_path_factory.mktemp("pickled")
    shutil.copytree(tiny_model_dir, out, dirs_exist_ok=True)
    weights = load_file(str(out / "model.safetensors"))
    (out / "model.safetensors").unlink()
    torch.save(weights, out / "pytorch_model.bin")
    return str(out)


def test_pickled_weights_load_only_when_allowed(pickled_model_dir):
    with pytest.raises(ModelLoadError):
        load_model(pickled_model_dir, device="cpu")
    loaded = load_model(pickled_model_dir, device="cpu", allow_pickle_weights=True)
    assert loaded.path == pickled_model_dir


def test_a_client_cannot_set_command_line_only_settings():
    base = Settings()
    settings, errors = merge(base, {"trustRemoteCode": True, "allowPickleWeights": True, "maxSteps": 3},
                             from_client=True)
    assert settings.trust_remote_code is False and settings.allow_pickle_weights is False
    assert settings.max_steps == 3 and len(errors) == 2 and all("command line" in e for e in errors)
    cli, errors = merge(base, {"trustRemoteCode": True, "allowPickleWeights": True})  # the command line may
    assert cli.trust_remote_code and cli.allow_pickle_weights and errors == []
    kept, _ = merge(cli, {"trustRemoteCode": False}, from_client=True)  # nor switch the command line's off
    assert kept.trust_remote_code is True
