"""The VS Code extension inside a real VS Code: code-server in headless Chromium, driven by
playwright-core (editors/vscode/e2e/codeserver.mjs).

The built .vsix is installed into code-server, a Python file is opened, the real server
(`python -m dg_lsp serve --device cpu --model small`: the embedded small model) draws ghost text after a
typed character, Tab accepts it, and the editor and the saved file hold exactly the text that was
shown. code-server, Node 24 and playwright-core come from editors/vscode/e2e/install.sh (run by
.ci/run) in a cache folder outside the checkout; Chromium is Debian's /usr/bin/chromium. Each
missing piece skips the test and says which.

`DG_LSP_UPDATE_SCREENSHOT=1` also writes the screenshot (ghost text shown, before Tab) to
docs/vscode-codeserver.png.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from .conftest import REPO, has_small_model, npm, server_cmd
from .test_vscode import VSCODE, node_modules, run  # noqa: F401  (node_modules is a fixture)

CACHE = Path(os.environ.get("DG_LSP_VSCODE_E2E", Path.home() / ".cache" / "dg-lsp" / "vscode-e2e"))
CHROMIUM = Path("/usr/bin/chromium")
DRIVER = VSCODE / "e2e" / "codeserver.mjs"
INSTALL = "bash editors/vscode/e2e/install.sh"
TIMEOUT_S = 300


def missing() -> str | None:
    """Why the test cannot run here, or None."""
    if npm() is None:
        return "node and npm are not installed: the .vsix cannot be built"
    if not CHROMIUM.is_file():
        return f"Debian's chromium is not installed ({CHROMIUM}): apt-get install -y chromium, or {INSTALL}"
    failed = CACHE / "install-failed.log"
    if failed.is_file():
        tail = failed.read_text(errors="replace").strip().splitlines()[-3:]
        return f"{INSTALL} failed (log: {failed}): " + " | ".join(tail)
    for what, path in [
        ("Node 24", CACHE / "node" / "bin" / "node"),
        ("code-server", CACHE / "node_modules" / "code-server" / "package.json"),
        ("playwright-core", CACHE / "node_modules" / "playwright-core" / "package.json"),
    ]:
        if not path.is_file():
            return f"{what} is not installed ({path} is missing): run {INSTALL}"
    if not has_small_model():
        return "the embedded small model (dg_lsp/model/small) is not in the tree"
    return None


REASON = missing()
pytestmark = pytest.mark.skipif(REASON is not None, reason=REASON or "")


def run_driver(config: dict) -> tuple[int, str, str]:
    """The node driver in its own process group, killed whole (code-server, Chromium, the
    language server) if it outlives its timeout."""
    proc = subprocess.Popen(
        [str(CACHE / "node" / "bin" / "node"), str(DRIVER), json.dumps(config)],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=TIMEOUT_S + 30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail(f"the code-server driver ran past {TIMEOUT_S + 30}s\n{out[-4000:]}\n{err[-4000:]}")
    return proc.returncode, out, err


def _ghost_text_and_tab(tmp_path: Path, notebook: bool, **extra) -> tuple[dict, Path]:
    run("run", "package")
    vsix = VSCODE / "dg-lsp.vsix"
    screenshot = tmp_path / "vscode-codeserver.png"
    work = tmp_path / "code-server"
    work.mkdir()
    config = {
        "cache": str(CACHE),
        "vsix": str(vsix),
        "chromium": str(CHROMIUM),
        "serverCommand": server_cmd("small", extra.pop("answers", None)),
        "work": str(work),
        "screenshot": str(screenshot),
        "failureScreenshot": str(tmp_path / "failure.png"),
        "timeoutS": TIMEOUT_S,
        "notebook": notebook,
        **extra,
    }
    rc, out, err = run_driver(config)
    assert rc == 0, f"driver failed ({rc}); screenshot {tmp_path / 'failure.png'}\n{out[-6000:]}\n{err[-3000:]}"
    result = json.loads(next(line for line in out.splitlines() if line.startswith("RESULT "))[len("RESULT "):])

    # The file (the notebook's last cell) opened in the editor, and typing reached it.
    assert result["before"].endswith("\n    " + ("return " if "cellLines" in extra else "# "))
    assert result["typed"] == result["before"] + "a"
    # Ghost text came from the server...
    ghost = result["ghost"]
    assert ghost.strip(), result
    # ...Tab inserted exactly that text at the cursor (the end of the file)...
    assert result["after"] == result["typed"] + ghost, result
    # ...and the saved file (the saved notebook's cell) is the editor's buffer.
    assert result["file"] == result["after"]
    # The extension's status item reports the server's latency for it (paused: its name after a pause sign).
    assert re.fullmatch(r"dg-lsp" if "pauseCommand" in extra else r"dg-lsp \d+ ms", result["statusText"]), result
    assert screenshot.is_file() and screenshot.stat().st_size > 10_000
    print(f"ghost text: {ghost!r}; timings (s): {result['timings']}")
    return result, screenshot


def test_ghost_text_from_the_real_server_and_tab_accepts(node_modules, tmp_path):  # noqa: F811
    result, screenshot = _ghost_text_and_tab(tmp_path, notebook=False)
    assert result["before"].startswith("def add(a, b):")
    if os.environ.get("DG_LSP_UPDATE_SCREENSHOT") == "1":
        shutil.copyfile(screenshot, REPO / "docs" / "vscode-codeserver.png")


def test_ghost_text_in_a_notebook_cell_reads_the_cells_above(node_modules, tmp_path):  # noqa: F811
    """A Jupyter notebook in VS Code's notebook editor: the server syncs the notebook, and the last code cell gets
    ghost text that Tab accepts and the saved .ipynb keeps. The model's text is scripted to call `add`, which only
    the cell above defines: the name check shows it only if the server read that cell with this one."""
    result, _ = _ghost_text_and_tab(
        tmp_path, notebook=True,
        cellLines=["def multiply(a, b):", '    """Return the product of a and b."""', "    return "],
        answers=[("    return a", " * add(b, 0)")])
    assert result["before"] == 'def multiply(a, b):\n    """Return the product of a and b."""\n    return '
    assert result["ghost"] == " * add(b, 0)"


def test_paused_for_the_language_asked_explicitly_and_alt_bracket_shows_the_servers_next_item(node_modules,  # noqa: F811
                                                                                           tmp_path):
    """One code-server run for two things (each run costs about 16 s):
    - The command "Pause or Resume Automatic Suggestions for This Language" from the palette: the user settings get
      `"[python]": {"dgLsp.automaticTrigger": false}`, the status item shows a pause sign, typing brings no ghost text
      for 5 s, and an explicit request (Trigger Inline Suggestion, Alt+\\'s command, run from the palette) still
      brings one.
    - More than one item: Alt+] (editor.action.inlineSuggest.showNext) then shows the server's next item (scripted
      as a line the engine weighed against its answer), and Tab inserts it."""
    result, _ = _ghost_text_and_tab(
        tmp_path, notebook=False, cycle=True,
        answers=[("    # a", "nd b multiplied", ["nd b, multiplied", "nd b times each other"])],
        pauseCommand="dg-lsp: Pause or Resume Automatic Suggestions for This Language")
    assert result["automaticGhost"] == "", result
    assert result["pausedSign"] is True
    assert json.loads(result["userSettings"])["[python]"] == {"dgLsp.automaticTrigger": False}
    assert result["cycled"] == ["nd b multiplied", "nd b, multiplied"]
    assert result["ghost"] == "nd b, multiplied"
