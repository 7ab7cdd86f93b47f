"""The accept-key option in a real headless Neovim with the real server (tiny model, CPU).

`keymaps.accept` picks the key (or false: none); the plugin leaves the key alone in a buffer where
another plugin already maps it, unless `keymaps.override = true`; with no suggestion shown, the
plugin's key types a plain key.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from .conftest import REPO, server_cmd

PLUGIN = Path(os.environ.get("DG_LSP_NVIM_PLUGIN") or REPO / "editors" / "nvim")
DRIVER = Path(__file__).with_name("nvim_keymaps.lua")
TIMEOUT_S = 180
OURS = "dg-lsp: accept the suggestion"
PLAIN_TAB = " " * 8  # `    ` + <Tab> with the python ftplugin's expandtab, softtabstop=4


@pytest.fixture(scope="module")
def result(nvim, tmp_path_factory) -> dict:
    tmp = tmp_path_factory.mktemp("nvim-keymaps")
    return nvim.run_driver(tmp, PLUGIN, DRIVER, TIMEOUT_S, DG_TEST_DIR=str(tmp),
                           DG_TEST_CMD=json.dumps(server_cmd("tiny")))


def case(result: dict, name: str) -> dict:
    assert result.get("error") is None, json.dumps(result, indent=1)
    r = result["buffers"][name]
    assert r["attached"], json.dumps(result, indent=1)
    assert not r.get("ghost_shown"), r
    return r


pytestmark = pytest.mark.timeout(TIMEOUT_S + 60)


def test_default_maps_tab_and_tab_without_suggestion_is_a_plain_tab(result):
    r = case(result, "default")
    assert r["maps"].get("<Tab>") == OURS, r
    assert r.get("unmapped") is None
    assert r["line"] == PLAIN_TAB, r


def test_tab_already_mapped_by_another_plugin_is_left_alone(result):
    r = case(result, "taken")
    assert r["maps"].get("<Tab>") == "other plugin", r
    assert r["unmapped"] == "<Tab>", r
    assert r["line"] == "    OTHER", r


def test_override_maps_tab_anyway(result):
    r = case(result, "forced")
    assert r["maps"].get("<Tab>") == OURS, r
    assert r["line"] == PLAIN_TAB, r


def test_another_accept_key(result):
    r = case(result, "ctrl_l")
    assert r["maps"].get("<C-L>") == OURS, r
    assert "<Tab>" not in r["maps"], r
    assert r["line"] == PLAIN_TAB, r


def test_no_mapping(result):
    r = case(result, "none")
    assert OURS not in r["maps"].values(), r
    assert r["line"] == PLAIN_TAB, r
