"""The VS Code extension: `npm ci`, `npm run build` (type-check, esbuild bundle, .vsix via
@vscode/vsce) and `npm test` (node:test on the pure modules plus the protocol smoke test against
the real server with the tiny model). Skipped when node/npm are not installed.

The extension inside a real VS Code (code-server in headless Chromium) is test_vscode_codeserver.py.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import zipfile

import pytest

from .conftest import REPO, npm, server_cmd

VSCODE = REPO / "editors" / "vscode"
NPM = npm()

pytestmark = pytest.mark.skipif(NPM is None, reason="node and npm are not installed: the VS Code extension is not built")


def run(*args: str, env: dict | None = None, timeout: float = 180) -> str:
    proc = subprocess.run([NPM, *args], cwd=VSCODE, env=env, capture_output=True, text=True, timeout=timeout)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"npm {' '.join(args)} failed ({proc.returncode}):\n{output[-4000:]}"
    return output


@pytest.fixture(scope="module")
def node_modules():
    """`npm ci` only when package-lock.json changed since the last install (node_modules is the cache)."""
    lock_hash = hashlib.sha256((VSCODE / "package-lock.json").read_bytes()).hexdigest()
    stamp = VSCODE / "node_modules" / ".dg-lsp-lock-sha256"
    if not stamp.is_file() or stamp.read_text() != lock_hash:
        run("ci", "--no-audit", "--no-fund", "--loglevel=error")
        stamp.write_text(lock_hash)
    return VSCODE / "node_modules"


def test_build_packages_a_vsix(node_modules):
    run("run", "build")
    vsix = VSCODE / "dg-lsp.vsix"
    with zipfile.ZipFile(vsix) as z:
        names = set(z.namelist())
        manifest = json.loads(z.read("extension/package.json"))
    assert {"extension/out/extension.js", "extension/package.json", "extension/readme.md"} <= names
    assert not any("node_modules" in n or n.endswith(".ts") for n in names), sorted(names)
    assert manifest["main"] == "./out/extension.js"
    commands = {c["command"] for c in manifest["contributes"]["commands"]}
    assert {"dg-lsp.fillSelection", "dg-lsp.restart", "dg-lsp.showStatus"} <= commands
    assert "dgLsp.trace.server" in manifest["contributes"]["configuration"]["properties"]


def test_node_tests_and_protocol_smoke_test(node_modules):
    # the fill of `a + b` scripted (a selection fill is applied only where it breaks nothing: the random model's
    # text seldom is Python)
    env = dict(os.environ, DG_LSP_SERVER_CMD=json.dumps(server_cmd("tiny", [("def add(a, b):\n    return ", "b + a")])))
    output = run("test", env=env)
    assert "ℹ fail 0" in output, output[-4000:]
    assert "ℹ skipped 0" in output, "the smoke test against the real server was skipped:\n" + output[-4000:]
    assert "real server: initialize, inline completion, fill selection, status" in output
