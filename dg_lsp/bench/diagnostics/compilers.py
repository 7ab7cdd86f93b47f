"""A language's own compiler on a document, for the editing diagnostic's `--check-with`: what tree-sitter's parse
does not see (a name declared twice, an undeclared name, a type error).

- `node`: `node --check` (syntax and early errors; an `.mjs` file where the text imports or exports, else `.cjs`);
- `tsc`: the TypeScript compiler's syntax diagnostics and the binder's early errors (redeclared block-scoped names,
  a `const` without a value, reserved words as names), one program over all the files, `noResolve`; the compiler is
  `editors/vscode/node_modules/typescript` (`npm ci` there) or `$DG_LSP_TYPESCRIPT`;
- `gcc`: `gcc -fsyntax-only` (`g++` for C++), with the source file's folder and its `../include` on the include
  path.

`broken(pairs, checker)` takes (document, document with the answer applied, the source file) triples and says, per
triple, whether the document passed and the applied one does not; None where the checker cannot run.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

CHECKERS = ("node", "tsc", "gcc")

# TypeScript's diagnostics that are early errors, not types: redeclared block-scoped variable, duplicate identifier,
# const without a value, reserved words in strict mode, await outside async, invalid names
_TSC_SCRIPT = r"""
const ts = require(process.argv[1]);
const EARLY = new Set([2451, 2300, 1155, 1212, 1213, 1214, 1308, 2480, 18004, 1100, 1101, 1102, 1359, 1389]);
const files = process.argv.slice(2);
const program = ts.createProgram(files, {noResolve: true, noLib: true, target: ts.ScriptTarget.ESNext,
  allowJs: true, strict: true, module: ts.ModuleKind.ESNext});
for (const f of files) {
  const sf = program.getSourceFile(f);
  const codes = program.getSyntacticDiagnostics(sf).map(d => d.code)
    .concat(program.getSemanticDiagnostics(sf).map(d => d.code).filter(c => EARLY.has(c)));
  console.log(JSON.stringify(codes));
}
"""


def typescript_module() -> Path | None:
    here = Path(os.environ.get("DG_LSP_TYPESCRIPT") or
                Path(__file__).resolve().parents[3] / "editors" / "vscode" / "node_modules" / "typescript")
    return here if (here / "package.json").exists() else None


def available(checker: str) -> str | None:
    """None where `checker` can run here, else why not."""
    if checker in ("node", "tsc") and shutil.which("node") is None:
        return "node is not on PATH"
    if checker == "tsc" and typescript_module() is None:
        return "no TypeScript compiler: run `npm ci` in editors/vscode, or set DG_LSP_TYPESCRIPT"
    if checker == "gcc" and (shutil.which("gcc") is None or shutil.which("g++") is None):
        return "gcc or g++ is not on PATH"
    return None


def _write(folder: str, name: str, text: str) -> str:
    path = os.path.join(folder, name)
    Path(path).write_text(text, encoding="utf-8")
    return path


def _node_errors(text: str, folder: str) -> list[str]:
    module = re.search(r"^\s*(import|export)\b", text, re.MULTILINE) is not None
    path = _write(folder, "check.mjs" if module else "check.cjs", text)
    done = subprocess.run(["node", "--check", path], capture_output=True, text=True, timeout=60)
    return [] if done.returncode == 0 else [line for line in done.stderr.splitlines() if "Error" in line] or ["error"]


def _gcc_errors(text: str, folder: str, source: str) -> list[str]:
    cpp = not source.endswith((".c", ".h"))
    path = _write(folder, "check.cpp" if cpp else "check.c", text)
    where = os.path.dirname(os.path.abspath(source))
    done = subprocess.run(["g++" if cpp else "gcc", "-fsyntax-only", "-w", f"-I{where}",
                           f"-I{os.path.join(where, '..', 'include')}", path], capture_output=True, text=True,
                          timeout=120)
    return [] if done.returncode == 0 else [line.split("error: ", 1)[1] for line in done.stderr.splitlines()
                                            if "error: " in line] or ["error"]


def _tsc_errors(texts: list[str], folder: str) -> list[list[int]]:
    paths = [_write(folder, f"check{i}.ts", text) for i, text in enumerate(texts)]
    done = subprocess.run(["node", "-e", _TSC_SCRIPT, str(typescript_module())] + paths, capture_output=True,
                          text=True, timeout=600)
    return [json.loads(line) for line in done.stdout.splitlines()]


def broken(triples: list[tuple[str, str, str]], checker: str) -> list[bool]:
    """Per (document, applied, source file): the checker passes the document and fails the applied one. For `tsc`,
    "fails" means an error the document did not have (by code)."""
    with tempfile.TemporaryDirectory(prefix="dg-lsp-check-") as folder:
        if checker == "tsc":
            codes = _tsc_errors([t for doc, applied, _ in triples for t in (doc, applied)], folder)
            out = []
            for k in range(len(triples)):
                before, after = codes[2 * k], codes[2 * k + 1]
                out.append(any(after.count(c) > before.count(c) for c in set(after)))
            return out
        def errors(text: str, source: str) -> list[str]:
            return _node_errors(text, folder) if checker == "node" else _gcc_errors(text, folder, source)

        return [not errors(doc, source) and bool(errors(applied, source)) for doc, applied, source in triples]
