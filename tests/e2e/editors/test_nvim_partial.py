"""Partial accept and the answer's other items in a real headless Neovim against the real server (tiny model, its
answer scripted), in both renderers: the next word (`keymaps.accept_word`, <M-Right> by default) and the next line
(`keymaps.accept_line`, <M-C-Right>) of the suggestion are inserted a piece at a time, and the rest of the suggestion
stays shown: at once in the plugin's own renderer, from the server's cache of the suggestion being typed through in
Neovim 0.12's. <M-]> and <M-[> (`keymaps.next`, `keymaps.prev`) show the server's other items for the place.
`:DgToggle off` pauses automatic suggestions: none comes while typing, and <M-\\> (`keymaps.suggest`) asks."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from .conftest import REPO, server_cmd

PLUGIN = Path(os.environ.get("DG_LSP_NVIM_PLUGIN") or REPO / "editors" / "nvim")
DRIVER = Path(__file__).with_name("nvim_partial.lua")
TIMEOUT_S = 150
pytestmark = pytest.mark.timeout(TIMEOUT_S + 60)

SOURCE = 'def area(r):\n    """The area."""\n    \n'
# the cursor on the blank line 3 at column 4: the model writes the line break and indentation back (token healing),
# then two lines
ANSWERS = [('"""The area."""\n    ', "\n    total = r * r\n    return total\n")]
KEYS = ["<M-Right>", "<M-Right>", "<M-C-Right>", "<M-C-Right>"]
# the same place, the answer scripted with two other lines the engine weighed
CYCLE_ANSWERS = [('"""The area."""\n    ', "\n    return r * r\n", ["return r ** 2\n", "return 3.14 * r * r\n"])]
CYCLE_KEYS = ["<M-]>", "<M-]>", "<M-]>", "<M-[>", "<Tab>"]


def _run(nvim, tmp_path_factory, renderer: str, answers: list, keys: list[str], pause: bool = False,
         name: str = "area.py", source: str = SOURCE) -> dict:
    tmp = tmp_path_factory.mktemp(f"nvim-keys-{renderer}")
    work = tmp / name
    work.write_text(source)
    config = {"cmd": server_cmd("tiny", answers), "ghost_text": renderer}
    data = nvim.run_driver(tmp, PLUGIN, DRIVER, TIMEOUT_S,
                           (f"lua vim.g.dg_lsp = vim.json.decode({json.dumps(json.dumps(config))})",),
                           DG_TEST_FILE=str(work), DG_TEST_KEYS=json.dumps(keys),
                           DG_TEST_PAUSE="1" if pause else "0")
    data["wanted_renderer"] = renderer
    return data


def _check_ran(result: dict) -> None:
    """The driver ran and the plugin attached; skip where the native renderer was asked for and this Neovim has none."""
    assert result.get("error") is None and result["attached"], json.dumps(result, indent=1)
    if result["wanted_renderer"] == "native" and result["renderer"] != "native":
        pytest.skip("this Neovim has no vim.lsp.inline_completion")


@pytest.fixture(scope="module", params=["fallback", "native"])
def result(request, nvim, tmp_path_factory) -> dict:
    return _run(nvim, tmp_path_factory, request.param, ANSWERS, KEYS)


@pytest.fixture(scope="module", params=["fallback", "native"])
def cycled(request, nvim, tmp_path_factory) -> dict:
    return _run(nvim, tmp_path_factory, request.param, CYCLE_ANSWERS, CYCLE_KEYS)


# a file of each language the server reads since session 46 (C#), 47 (PHP), 49 (Ruby), 50 (Lua) and 51 (Bash), and the
# line the scripted answer writes in its class (or function); the cursor on the blank line 3 at column 4, in its body
# file name: (source, the line the engine answers at its third line, the end of the prefix it answers after)
OTHER_LANGUAGES = {"Area.cs": ("class Area\n{\n    \n}\n", "public int Width;", "{\n    "),
                   "Area.php": ("<?php class Area\n{\n    \n}\n", "public int $width;", "{\n    "),
                   "area.rb": ("class Area\n  def width\n    \n  end\nend\n", "@width", "def width\n    "),
                   "area.lua": ("local Area = {}\nfunction Area:width()\n    \nend\n", "return self.w",
                                "width()\n    "),
                   "area.sh": ("area() {\n    local w=$1\n    \n}\n", "echo \"$w\"", "w=$1\n    ")}


@pytest.fixture(scope="module", params=sorted(OTHER_LANGUAGES))
def other_language(request, nvim, tmp_path_factory) -> dict:
    source, line, key = OTHER_LANGUAGES[request.param]
    result = _run(nvim, tmp_path_factory, "fallback", [(key, f"\n    {line}\n")], ["<Tab>"],
                  name=request.param, source=source)
    return {**result, "source": source, "line": line}


@pytest.fixture(scope="module", params=["fallback", "native"])
def paused(request, nvim, tmp_path_factory) -> dict:
    # the plugin's renderer asks with <M-\\>; Neovim's built-in one only asks while typing: resumed, entering insert
    # mode again at the same place asks
    keys = ["<M-\\>", "<Tab>"] if request.param == "fallback" else ["<Cmd>DgToggle on<CR><Esc>a", "<Tab>"]
    return _run(nvim, tmp_path_factory, request.param, ANSWERS, keys, pause=True)


def test_word_and_line_keys_insert_the_suggestion_a_piece_at_a_time(result):
    _check_ran(result)
    assert result["first_ghost"] == "total = r * r\n    return total", result
    steps = result["steps"]
    assert [s["lines"][2:] for s in steps] == [
        ["    total"],  # a word
        ["    total ="],  # blanks and a run of signs
        ["    total = r * r"],  # the rest of the line
        ["    total = r * r", "    return total"],  # the next line: all of it, nothing left
    ], json.dumps(result, indent=1)
    assert [s["cursor"] for s in steps] == [[3, 9], [3, 11], [3, 17], [4, 16]], steps
    # the rest stays shown after each piece, until nothing is left
    assert [s["ghost"] for s in steps[:3]] == [" = r * r\n    return total", " r * r\n    return total",
                                               "\n    return total"], steps


def test_next_and_previous_keys_show_the_answers_other_items_and_tab_inserts_the_one_shown(cycled):
    _check_ran(cycled)
    assert cycled["first_ghost"] == "return r * r", cycled
    steps = cycled["steps"]
    # each item with its place among them, wrapping around after the last
    assert [s["ghost"] for s in steps[:4]] == ["return r ** 2 (2/3)", "return 3.14 * r * r (3/3)",
                                               "return r * r (1/3)", "return 3.14 * r * r (3/3)"], steps
    assert all(s["lines"] == SOURCE.split("\n")[:-1] for s in steps[:4]), steps  # the buffer untouched
    assert steps[4]["lines"][2] == "    return 3.14 * r * r", steps


def test_paused_automatic_suggestions_come_only_when_asked(paused):
    _check_ran(paused)
    assert paused["automatic"] is False
    assert paused["quiet_ghost"] is None, paused  # 3 s in insert mode at the place: nothing asked, nothing shown
    steps = paused["steps"]
    assert steps[0]["ghost"] == "total = r * r\n    return total", steps  # asked (<M-\\>), or resumed and moved
    assert steps[1]["lines"][2:] == ["    total = r * r", "    return total"], steps


def test_csharp_php_ruby_lua_and_shell_files_get_suggestions(other_language):
    """Neovim's `cs`, `php`, `ruby`, `lua` and `sh` filetypes: the plugin attaches, the server reads the file as C#,
    PHP, Ruby, Lua or Bash and shows the line, Tab inserts it."""
    result = other_language
    assert result.get("error") is None and result["attached"], json.dumps(result, indent=1)
    assert result["first_ghost"] == result["line"], result
    lines = result["source"].split("\n")[:-1]
    lines[2] = "    " + result["line"]
    assert result["steps"][0]["lines"] == lines, result
