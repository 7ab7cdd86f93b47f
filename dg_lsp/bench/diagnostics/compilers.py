"""A language's own compiler on a document, for the editing diagnostic's `--check-with`: what tree-sitter's parse
does not see (a name declared twice, an undeclared name, a type error).

- `node`: `node --check` (syntax and early errors; an `.mjs` file where the text imports or exports, else `.cjs`);
- `tsc`: the TypeScript compiler's syntax diagnostics and the binder's early errors (redeclared block-scoped names,
  a `const` without a value, reserved words as names), one program over all the files, `noResolve`; the compiler is
  `editors/vscode/node_modules/typescript` (`npm ci` there) or `$DG_LSP_TYPESCRIPT`;
- `tsc-names`: the TypeScript compiler's "Cannot find name" (an undeclared name: a ReferenceError when the line
  runs), against its ES and DOM libraries and Node's types, each file a module of its own, JavaScript checked as
  JavaScript; what is new is counted by name against the document without the answer;
- `gcc`: `gcc -fsyntax-only` (`g++` for C++), with the source file's folder and its `../include` on the include
  path;
- `javac`: `javac` on the file alone, against the classes of every source under its package root (the folder its
  `package` line names), compiled once per check;
- `go`: `go build` (`go vet` for a `_test.go` file) of the file's package with the file replaced (`-overlay`), in
  its module (a `go.mod` above it) where the package builds there, else its GOPATH (a `src` folder above it,
  `GO111MODULE=off`);
- `cargo`: `cargo check --offline` (the library and binaries) in a copy of the file's crate (the folder of the
  `Cargo.toml` above it, copied once per check without its dev-dependencies, its build kept between texts) with the
  file replaced; the dependencies come from the sources cargo's own configuration names (a directory source such
  as Debian's `/usr/share/cargo/registry`). A file no target reaches (`#[cfg]`'d out, `tests/`) passes whatever it
  holds;
- `php`: `php -l` (PHP's own parser and its compile-time checks: a function or parameter declared twice, `break`
  outside a loop, `$this` reassigned, an abstract method with a body);
- `ruby`: `ruby -c` (Ruby's own parser, nothing run: an `end` that closes nothing, a block left open, an `else`
  in a `def` with no `rescue`);
- `luac`: `luac -p` (Lua's own parser, nothing run: an `end` that closes nothing, a block left open, a `...` in a
  function that takes none);
- `bash`: `bash -n` (Bash's own parser, nothing run: a `fi` or `done` that closes nothing, which tree-sitter-bash reads
  as a command, a block left open, an arm with no `;;`, a function with an empty body);
- `pyflakes` (Python): pyflakes' errors, not its warnings: a name read that nothing binds (or before it is bound), a
  duplicate argument, `return` or `yield` outside a function, a format string its arguments do not fit. Files in the
  wild often carry such messages already (a name only a star import or a `try` import binds), so what is new is
  counted by kind and name against the document without the answer, or against the source file where that document
  does not parse (a statement cut while it is typed): always judged.
- `mypy` (Python): mypy's `attr-defined` errors, an attribute read that its object's type does not have (`"Queue" has
  no attribute "_copy"`), with untyped functions checked too and imports not followed (what they bring is `Any`, so
  a class with a base from elsewhere is not judged); each text is its own module file, mypy's cache kept for the
  check. What is new is counted as for `pyflakes`.

`new_errors(triples, checker)` takes (document, document with the answer applied, the source file) triples and gives,
per triple, the errors of the applied one where the document passed, and None where it did not (not judged); for
`tsc`, `tsc-names`, `pyflakes` and `mypy` the errors it adds, always judged.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

CHECKERS = ("node", "tsc", "tsc-names", "gcc", "javac", "go", "cargo", "php", "ruby", "luac", "bash", "pyflakes",
            "mypy")

# pyflakes' messages that are errors at run time (or at compile time), not style
_PYFLAKES_ERRORS = frozenset({
    "UndefinedName", "UndefinedLocal", "UndefinedExport", "DuplicateArgument", "ReturnOutsideFunction",
    "YieldOutsideFunction", "ContinueOutsideLoop", "BreakOutsideLoop", "DefaultExceptNotLast", "TwoStarredExpressions",
    "TooManyExpressionsInStarredAssignment", "ImportStarNotPermitted", "PercentFormatInvalidFormat",
    "PercentFormatMixedPositionalAndNamed", "PercentFormatUnsupportedFormatCharacter",
    "PercentFormatPositionalCountMismatch", "PercentFormatMissingArgument", "PercentFormatExpectedMapping",
    "PercentFormatExpectedSequence", "PercentFormatStarRequiresSequence", "StringDotFormatInvalidFormat",
    "StringDotFormatMissingArgument", "StringDotFormatMixingAutomatic"})

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

# TypeScript's "cannot find name" diagnostics (2304 and its variants that suggest a name, a member, a `this.`, a
# test runner's or Node's types), with the name each reads: an undeclared name, against the ES and DOM libraries and
# Node's types (`@types/node` beside the compiler), each file a module of its own; imports bind their names whether or
# not their module resolves
_TSC_NAMES_SCRIPT = r"""
const ts = require(process.argv[1]);
const NAMES = new Set([2304, 2552, 2662, 2663, 2580, 2581, 2582, 2591, 2592, 2593, 18004]);
const files = process.argv.slice(2);
const program = ts.createProgram(files, {lib: ["lib.esnext.full.d.ts"], types: ["node"],
  typeRoots: [require("path").join(process.argv[1], "..", "@types")], target: ts.ScriptTarget.ESNext,
  allowJs: true, checkJs: true, strict: false, module: ts.ModuleKind.ESNext, skipLibCheck: true,
  moduleDetection: ts.ModuleDetectionKind.Force, jsx: ts.JsxEmit.Preserve});
for (const f of files) {
  const sf = program.getSourceFile(f);
  const found = program.getSemanticDiagnostics(sf).filter(d => NAMES.has(d.code)).map(d => {
    const m = /'([^']+)'/.exec(ts.flattenDiagnosticMessageText(d.messageText, "\n"));
    return "cannot find name " + (m ? m[1] : "?");
  });
  console.log(JSON.stringify(found));
}
"""


def typescript_module() -> Path | None:
    here = Path(os.environ.get("DG_LSP_TYPESCRIPT") or
                Path(__file__).resolve().parents[3] / "editors" / "vscode" / "node_modules" / "typescript")
    return here if (here / "package.json").exists() else None


def available(checker: str) -> str | None:
    """None where `checker` can run here, else why not."""
    if checker in ("node", "tsc", "tsc-names") and shutil.which("node") is None:
        return "node is not on PATH"
    if checker in ("tsc", "tsc-names") and typescript_module() is None:
        return "no TypeScript compiler: run `npm ci` in editors/vscode, or set DG_LSP_TYPESCRIPT"
    if checker == "gcc" and (shutil.which("gcc") is None or shutil.which("g++") is None):
        return "gcc or g++ is not on PATH"
    if checker in ("javac", "go", "cargo", "php", "ruby", "luac", "bash") and shutil.which(checker) is None:
        return f"{checker} is not on PATH"
    if checker in ("pyflakes", "mypy") and importlib.util.find_spec(checker) is None:
        return f"{checker} is not installed: pip install 'dg-lsp[bench]'"
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


def _java_root(source: str) -> Path:
    """The folder a Java source's `package` line makes its root (`org/x/A.java` in package `org.x`: the folder above
    `org`)."""
    text = Path(source).read_text(encoding="utf-8", errors="replace")
    package = re.search(r"^\s*package\s+([\w.]+)\s*;", text, re.MULTILINE)
    folder = Path(source).resolve().parent
    for _ in (package.group(1).split(".") if package else []):
        folder = folder.parent
    return folder


def _javac_errors(text: str, folder: str, source: str, classes: dict[Path, str]) -> list[str]:
    root = _java_root(source)
    if root not in classes:  # every source under the root, once per check
        classes[root] = tempfile.mkdtemp(dir=folder)
        subprocess.run(["javac", "-proc:none", "-nowarn", "-Xlint:none", "-encoding", "UTF-8", "-d", classes[root],
                        "-sourcepath", str(root)] + [str(f) for f in sorted(root.rglob("*.java"))],
                       capture_output=True, text=True, timeout=1200)
    path = _write(tempfile.mkdtemp(dir=folder), Path(source).name, text)  # the file's name is its class's
    done = subprocess.run(["javac", "-proc:none", "-nowarn", "-Xlint:none", "-encoding", "UTF-8", "-implicit:none",
                           "-d", tempfile.mkdtemp(dir=folder), "-cp", classes[root], path],
                          capture_output=True, text=True, timeout=300)
    return [] if done.returncode == 0 else [line.split(" error: ", 1)[1] for line in done.stderr.splitlines()
                                            if " error: " in line] or ["error"]


@functools.lru_cache(maxsize=None)
def _go_build(folder: Path) -> tuple[Path, str, tuple] | None:
    """(cwd, target, environment) that builds the package in `folder` as it is on disk: its module (a `go.mod`
    above it) where that builds, else its GOPATH (a `src` folder above it, `GO111MODULE=off`: Debian's gocode
    ships go.mod files whose modules' dependencies are only there); the first of them where neither builds."""
    ways = []
    module = next((d for d in [folder, *folder.parents] if (d / "go.mod").exists()), None)
    if module is not None:
        ways.append((module, "./" + str(folder.relative_to(module)), ()))
    src = next((d for d in [folder, *folder.parents] if d.name == "src"), None)
    if src is not None:
        ways.append((folder, str(folder.relative_to(src)), (("GO111MODULE", "off"), ("GOPATH", str(src.parent)))))
    for cwd, target, env in ways:
        done = subprocess.run(["go", "build", "-o", os.devnull, target], cwd=cwd, env={**os.environ, **dict(env)},
                              capture_output=True, text=True, timeout=300)
        if done.returncode == 0:
            return cwd, target, env
    return ways[0] if ways else None


def _go_errors(text: str, folder: str, source: str) -> list[str]:
    source = os.path.abspath(source)
    way = _go_build(Path(source).parent)
    if way is None:
        return ["no go.mod and no GOPATH src folder above the file"]
    cwd, target, env = way
    overlay = _write(folder, "overlay.json", json.dumps({"Replace": {source: _write(folder, "check.go", text)}}))
    command = ["go", "vet" if source.endswith("_test.go") else "build"] + \
        ([] if source.endswith("_test.go") else ["-o", os.devnull]) + ["-overlay", overlay]
    done = subprocess.run(command + [target], cwd=cwd, env={**os.environ, **dict(env)}, capture_output=True,
                          text=True, timeout=300)
    return [] if done.returncode == 0 else [re.sub(r"^.*?:\d+:\d+: ", "", line) for line in done.stderr.splitlines()
                                            if re.search(r":\d+:\d+: ", line)] or ["error"]


# a manifest's dev-dependency tables (`[dev-dependencies]`, `[dev-dependencies.x]`,
# `[target.'cfg(..)'.dev-dependencies]`) through the line before the next table
_DEV_TABLES = re.compile(r"^\[(?:target\.[^\n]*\.)?dev-dependencies(?:\.[^\n]*)?\]\n(?:(?!\[)[^\n]*\n)*",
                         re.MULTILINE)


def _cargo_errors(text: str, folder: str, source: str, crates: dict[Path, Path]) -> list[str]:
    source = Path(source).resolve()
    root = next((d for d in source.parents if (d / "Cargo.toml").exists()), None)
    if root is None:
        return ["no Cargo.toml above the file"]
    if root not in crates:  # a copy of the crate, once per check: its `target` keeps what cargo built
        crates[root] = Path(tempfile.mkdtemp(dir=folder)) / root.name
        shutil.copytree(root, crates[root], ignore=shutil.ignore_patterns("target", ".git"))
        manifest = crates[root] / "Cargo.toml"  # what checking the library does not need, which a directory source
        manifest.write_text(_DEV_TABLES.sub("", manifest.read_text(encoding="utf-8")), encoding="utf-8")  # may lack
    copy = crates[root] / source.relative_to(root)
    copy.write_text(text, encoding="utf-8")
    try:
        done = subprocess.run(["cargo", "check", "--offline", "--quiet", "--message-format", "short"],
                              cwd=crates[root], capture_output=True, text=True, timeout=600)
    finally:  # the crate's other files are judged against this one as it is on disk
        shutil.copyfile(source, copy)
    return [] if done.returncode == 0 else [re.sub(r"^.*?:\d+:\d+: error", "error", line)
                                            for line in done.stderr.splitlines()
                                            if re.search(r":\d+:\d+: error", line)] or ["error"]


def _run_tsc(script: str, paths: list[str]) -> list[list]:
    """`script` run by Node over the files `paths` with the TypeScript compiler: one JSON line a file."""
    done = subprocess.run(["node", "-e", script, str(typescript_module())] + paths, capture_output=True, text=True,
                          timeout=1200)
    return [json.loads(line) for line in done.stdout.splitlines()]


def _tsc_errors(texts: list[str], folder: str) -> list[list[int]]:
    return _run_tsc(_TSC_SCRIPT, [_write(folder, f"check{i}.ts", text) for i, text in enumerate(texts)])


def _tsc_names(texts: list[str], sources: list[str], folder: str) -> list[list[str]]:
    """Per text, its "cannot find name" names; each text in a file of its source's kind (JavaScript, TypeScript,
    with or without JSX)."""
    kinds = (".ts", ".tsx", ".mts", ".cts", ".js", ".jsx", ".mjs", ".cjs")
    suffixes = [Path(source).suffix if Path(source).suffix in kinds else ".js" for source in sources]
    return _run_tsc(_TSC_NAMES_SCRIPT, [_write(folder, f"check{i}{suffix}", text)
                                        for i, (text, suffix) in enumerate(zip(texts, suffixes))])


def _pyflakes_errors(text: str) -> list[str] | None:
    """pyflakes' errors in `text` as "Kind name" strings; None where it does not parse."""
    import ast
    import warnings

    from pyflakes.checker import Checker

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escapes in the wild
            tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    found = Checker(tree, withDoctest=False).messages
    return [" ".join([type(m).__name__] + [str(a) for a in m.message_args[:1]])
            for m in found if type(m).__name__ in _PYFLAKES_ERRORS]


def _mypy_errors(text: str, folder: str) -> list[str] | None:
    """mypy's attr-defined errors in `text`, without their positions; None where it does not parse."""
    from mypy import api

    if _pyflakes_errors(text) is None:
        return None
    # a file of its own per text: mypy's cache judges a file by its time and size, which two texts can share
    path = _write(folder, f"m{hashlib.sha1(text.encode('utf-8')).hexdigest()[:16]}.py", text)
    out, _, _ = api.run(["--check-untyped-defs", "--ignore-missing-imports", "--follow-imports=skip",
                         "--no-error-summary", "--show-error-codes", "--no-pretty", "--hide-error-context",
                         "--cache-dir", os.path.join(folder, ".mypy_cache"), path])
    # without mypy's hint, which names what else the text has (`; maybe "_items"?`): the same error either way
    return [re.sub(r"; maybe .*?(?=  \[attr-defined\]$)", "", re.sub(r"^.*?:\d+: error: ", "", line))
            for line in out.splitlines() if line.endswith("[attr-defined]") and ": error: " in line]


# the checkers that read one file alone with the language's own parser: (the file's name, the command before its
# path, the word an output line must hold to be an error; "" for any line)
_FILE_CHECKS = {"php": ("check.php", ["php", "-n", "-l"], "error"), "ruby": ("check.rb", ["ruby", "-c"], "error"),
                "luac": ("check.lua", ["luac", "-p"], ""), "bash": ("check.sh", ["bash", "-n"], "")}


def _file_check_errors(checker: str, text: str, folder: str) -> list[str]:
    """`php -l`, `ruby -c`, `luac -p` or `bash -n` on `text` alone: its error lines, [] where it passes."""
    name, command, word = _FILE_CHECKS[checker]
    done = subprocess.run(command + [_write(folder, name, text)], capture_output=True, text=True, timeout=60)
    return [] if done.returncode == 0 else [line for line in (done.stdout + done.stderr).splitlines()
                                            if line.strip() and word in line.lower()] or ["error"]


def _added(before: list, after: list) -> list[str]:
    """What `after` holds more often than `before`, once each, sorted."""
    return [str(c) for c in sorted(set(after)) if after.count(c) > before.count(c)]


def new_errors(triples: list[tuple[str, str, str]], checker: str) -> list[list[str] | None]:
    """Per (document, applied, source file): the checker's errors on the applied document where it passes the
    document, else None (not judged). For `tsc`, `tsc-names`, `pyflakes` and `mypy`, the errors the document did
    not have."""
    with tempfile.TemporaryDirectory(prefix="dg-lsp-check-") as folder:
        if checker == "tsc":
            codes = _tsc_errors([t for doc, applied, _ in triples for t in (doc, applied)], folder)
            return [_added(codes[2 * k], codes[2 * k + 1]) for k in range(len(triples))]
        if checker == "tsc-names":
            found = _tsc_names([t for doc, applied, _ in triples for t in (doc, applied)],
                               [source for _, _, source in triples for _ in (0, 1)], folder)
            return [_added(found[2 * k], found[2 * k + 1]) for k in range(len(triples))]
        if checker in ("pyflakes", "mypy"):
            def python_errors(text: str) -> list[str] | None:
                return _pyflakes_errors(text) if checker == "pyflakes" else _mypy_errors(text, folder)

            out, originals = [], {}  # a source file's errors, read once however many of its rows need them
            for doc, applied, source in triples:
                before = python_errors(doc)
                if before is None:
                    if source not in originals:
                        originals[source] = python_errors(Path(source).read_text(encoding="utf-8")) or []
                    before = originals[source]
                after = python_errors(applied)
                out.append(["SyntaxError"] if after is None else _added(before, after))
            return out
        classes: dict[Path, str] = {}
        crates: dict[Path, Path] = {}
        known: dict[tuple[str, str], list[str]] = {}  # a selection's documents are the file itself, again and again

        def errors(text: str, source: str) -> list[str]:
            if (text, source) not in known:
                if checker == "node":
                    known[text, source] = _node_errors(text, folder)
                elif checker == "javac":
                    known[text, source] = _javac_errors(text, folder, source, classes)
                elif checker == "go":
                    known[text, source] = _go_errors(text, folder, source)
                elif checker == "cargo":
                    known[text, source] = _cargo_errors(text, folder, source, crates)
                elif checker in _FILE_CHECKS:
                    known[text, source] = _file_check_errors(checker, text, folder)
                else:
                    known[text, source] = _gcc_errors(text, folder, source)
            return known[text, source]

        return [None if errors(doc, source) else errors(applied, source) for doc, applied, source in triples]
