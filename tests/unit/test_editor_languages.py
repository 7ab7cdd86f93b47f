"""The editors ask for the languages the server reads, and only those: each language id the VS Code extension
activates on and selects (package.json, src/client.ts) and each Neovim filetype the plugin attaches to
(lua/dg_lsp/config.lua, doc/dg_lsp.txt) is one `context.languages` knows, and every language the server reads is
asked for by both editors."""

from __future__ import annotations

import json
import re
from pathlib import Path

from dg_lsp.context.languages import LANGUAGES, normalize_language

EDITORS = Path(__file__).resolve().parents[2] / "editors"


def _vscode() -> tuple[set[str], set[str]]:
    manifest = json.loads((EDITORS / "vscode" / "package.json").read_text(encoding="utf-8"))
    activation = {e.split(":", 1)[1] for e in manifest["activationEvents"] if e.startswith("onLanguage:")}
    client = (EDITORS / "vscode" / "src" / "client.ts").read_text(encoding="utf-8")
    listed = re.search(r"export const LANGUAGES = \[(.*?)\];", client, re.DOTALL).group(1)
    return activation, set(re.findall(r"'([^']+)'", listed))


def _neovim() -> tuple[set[str], set[str]]:
    config = (EDITORS / "nvim" / "lua" / "dg_lsp" / "config.lua").read_text(encoding="utf-8")
    help_text = (EDITORS / "nvim" / "doc" / "dg_lsp.txt").read_text(encoding="utf-8")
    found = []
    for text in (config, help_text):
        listed = re.search(r"filetypes = \{(.*?)\}", text, re.DOTALL).group(1)
        found.append(set(re.findall(r"'([^']+)'", listed)))
    return found[0], found[1]


def test_vscode_activates_on_and_selects_the_same_languages_the_server_reads():
    activation, selected = _vscode()
    assert activation == selected
    assert all(normalize_language(language) for language in selected), selected
    assert {normalize_language(language) for language in selected} == set(LANGUAGES)


def test_neovim_attaches_to_the_filetypes_the_server_reads_and_its_help_says_so():
    config, documented = _neovim()
    assert config == documented
    assert all(normalize_language(filetype) for filetype in config), config
    assert {normalize_language(filetype) for filetype in config} == set(LANGUAGES)
