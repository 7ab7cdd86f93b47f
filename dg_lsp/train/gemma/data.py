"""Training data for the Gemma adaptation: which source trees, with which licences, and infill holes drawn
from them exactly as the engine will see them at inference (token healing, separate tokenization of prompt,
hole and suffix).

A hole is cut in character space from a chunk of a file. Its prompt is tokenized on its own, as the engine
does; when that tokenization is a prefix of the chunk's, the hole can share the chunk's encoder pass (its
canvas sees the chunk's keys before the prompt's last token), which is what makes many holes per encoder
pass possible. Holes whose prompt does not tokenize as a prefix of the chunk are dropped.
"""

from __future__ import annotations

import hashlib
import json
import lzma
import random
import sysconfig
from dataclasses import dataclass
from pathlib import Path

from ...engine import healing
from ..corpus import read_new_source

# (import name, distribution, licence). Everything here is permissive; copyleft and MPL are left out.
TRAIN_PACKAGES = (
    ("accelerate", "accelerate", "Apache-2.0"), ("annotated_types", "annotated-types", "MIT"),
    ("anyio", "anyio", "MIT"), ("attr", "attrs", "MIT"), ("attrs", "attrs", "MIT"), ("cattrs", "cattrs", "MIT"),
    ("charset_normalizer", "charset-normalizer", "MIT"), ("contourpy", "contourpy", "BSD-3-Clause"),
    ("dateutil", "python-dateutil", "BSD-3-Clause"), ("filelock", "filelock", "MIT"),
    ("fontTools", "fonttools", "MIT"), ("fsspec", "fsspec", "BSD-3-Clause"), ("gguf", "gguf", "MIT"),
    ("h11", "h11", "MIT"), ("huggingface_hub", "huggingface_hub", "Apache-2.0"), ("idna", "idna", "BSD-3-Clause"),
    ("iniconfig", "iniconfig", "MIT"), ("lsprotocol", "lsprotocol", "MIT"), ("markdown_it", "markdown-it-py", "MIT"),
    ("matplotlib", "matplotlib", "PSF-based matplotlib licence"), ("mdurl", "mdurl", "MIT"),
    ("mpmath", "mpmath", "BSD-3-Clause"), ("networkx", "networkx", "BSD-3-Clause"), ("numpy", "numpy", "BSD-3-Clause"),
    ("peft", "peft", "Apache-2.0"), ("pip", "pip", "MIT"), ("pluggy", "pluggy", "MIT"), ("psutil", "psutil", "BSD-3-Clause"),
    ("pydantic", "pydantic", "MIT"), ("pygls", "pygls", "Apache-2.0"), ("pygments", "Pygments", "BSD-2-Clause"),
    ("pyparsing", "pyparsing", "MIT"), ("_pytest", "pytest", "MIT"), ("pytest_lsp", "pytest-lsp", "MIT"),
    ("requests", "requests", "Apache-2.0"), ("rich", "rich", "MIT"), ("setuptools", "setuptools", "MIT"),
    ("shellingham", "shellingham", "ISC"), ("sympy", "sympy", "BSD-3-Clause"), ("torch", "torch", "BSD-3-Clause"),
    ("transformers", "transformers", "Apache-2.0"), ("typer", "typer", "MIT"), ("urllib3", "urllib3", "MIT"),
    ("yaml", "PyYAML", "MIT"),
)
# Held out for evaluation, never trained on (nor used to choose the vocabulary): three third-party packages,
# and the stdlib packages the 8M model already held out (so `dg-lsp bench heldout` stays comparable).
HELD_OUT_PACKAGES = (("packaging", "packaging", "Apache-2.0 OR BSD-2-Clause"), ("click", "click", "BSD-3-Clause"),
                     ("jinja2", "Jinja2", "BSD-3-Clause"))
HELD_OUT_STDLIB = ("json", "email", "http", "xml", "logging", "urllib")
HELD_OUT_NAMES = {p[0] for p in HELD_OUT_PACKAGES} | {"markupsafe"}  # jinja2's companion, to be safe
_SKIP_DIRS = {"test", "tests", "testing", "idle_test", "site-packages", "__pycache__", "_vendor", "vendor",
              "vendored", "_vendored"}
MAX_FILE_BYTES = 300_000
EMBED_ROWS = "embed_rows.json"  # in a base directory built with part of its embedding rows (gpu.py): their ids
PACKAGE_BYTES_CAP = 3_000_000  # a huge package (sympy, transformers) gives at most this much text


@dataclass
class SourceFile:
    path: str
    package: str
    text: str


def site_packages() -> Path:
    return Path(sysconfig.get_paths()["purelib"])


def _read_tree(root: Path, package: str, cap: int, seen: set[str]) -> list[SourceFile]:
    paths = sorted(root.rglob("*.py")) if root.is_dir() else ([root] if root.is_file() else [])
    # a deterministic shuffle, so a capped package gives a spread of its files, not its first folder
    paths.sort(key=lambda p: hashlib.sha1(str(p).encode()).hexdigest())
    out, total = [], 0
    for path in paths:
        rel = path.relative_to(root).parts[:-1] if root.is_dir() else ()
        if any(p in _SKIP_DIRS or p in HELD_OUT_NAMES for p in rel) or path.name.startswith("test_"):
            continue
        text = read_new_source(path, seen, MAX_FILE_BYTES, min_chars=200)
        if text is None:
            continue
        out.append(SourceFile(str(path), package, text))
        total += len(text)
        if total >= cap:
            break
    return out


def write_corpus(files: list[SourceFile], path: Path, preset: int = 6) -> Path:
    """The files as xz-compressed JSON lines (path, package, text): a machine without these packages (the lent
    GPU's) trains on exactly this machine's corpus (`collect(split, corpus=path)`)."""
    lines = "\n".join(json.dumps({"path": f.path, "package": f.package, "text": f.text}) for f in files)
    Path(path).write_bytes(lzma.compress(lines.encode("utf-8"), preset=preset))
    return Path(path)


def read_corpus(path: Path) -> list[SourceFile]:
    text = lzma.decompress(Path(path).read_bytes()).decode("utf-8")
    return [SourceFile(**json.loads(line)) for line in text.split("\n") if line]


def collect(split: str, corpus: str | Path | None = None) -> list[SourceFile]:
    """'train': the stdlib (minus its held-out packages) and TRAIN_PACKAGES; 'heldout': HELD_OUT_PACKAGES and
    the held-out stdlib packages. `corpus`: a file `write_corpus` wrote, read instead of this machine's trees."""
    if corpus:
        return read_corpus(Path(corpus))
    std = Path(sysconfig.get_paths()["stdlib"])
    sp = site_packages()
    seen: set[str] = set()
    files: list[SourceFile] = []
    if split == "train":
        for entry in sorted(std.iterdir()):
            name = entry.name.removesuffix(".py")
            if name in HELD_OUT_STDLIB or name in _SKIP_DIRS or name.startswith("test") or name == "site-packages":
                continue
            if entry.is_dir() or entry.suffix == ".py":
                files += _read_tree(entry, "stdlib", 10**9, seen)
        for name, _dist, _lic in TRAIN_PACKAGES:
            files += _read_tree(sp / name, name, PACKAGE_BYTES_CAP, seen)
    elif split == "heldout":
        for name, _dist, _lic in HELD_OUT_PACKAGES:
            files += _read_tree(sp / name, name, 10**9, seen)
        for name in HELD_OUT_STDLIB:
            files += _read_tree(std / name, "stdlib-" + name, 10**9, seen)
    else:
        raise ValueError(split)
    return files


@dataclass
class Hole:
    """One training example: what the engine would build for a cursor/selection in a file."""

    kind: str
    prompt_ids: list[int]  # [bos] + prompt tokens (the healed prefix), a prefix of the chunk's tokens
    hole_ids: list[int]  # what the pad-fill hole must hold (the healed middle)
    head_ids: list[int]  # the pinned suffix head
    middle: str  # the reference answer (what the editor would insert)


KINDS = (("single-line", 0.40), ("line-rest", 0.22), ("multi-line", 0.18), ("span", 0.15), ("empty", 0.05))


def _line_starts(text: str) -> list[int]:
    starts = [0]
    for i, ch in enumerate(text):
        if ch == "\n":
            starts.append(i + 1)
    return starts


def cut_hole(text: str, rng: random.Random, kind: str, lo: int, hi: int) -> tuple[int, int] | None:
    """A (start, end) character span of the given kind with start in [lo, hi)."""
    starts = [s for s in _line_starts(text) if lo <= s < hi and s < len(text)]
    if not starts:
        return None
    s = rng.choice(starts)
    eol = text.find("\n", s)
    eol = len(text) if eol < 0 else eol
    line = text[s:eol]
    if kind == "single-line":
        if not line.strip():
            return None
        return s, min(len(text), eol + 1)
    if kind == "multi-line":
        n = rng.randint(2, 4)
        end = s
        for _ in range(n):
            nxt = text.find("\n", end)
            if nxt < 0:
                return None
            end = nxt + 1
        return (s, end) if text[s:end].strip() else None
    indent = len(line) - len(line.lstrip())
    if len(line) - indent < 4:
        return None
    a = rng.randint(s + indent + 1, eol - 1)
    if kind == "line-rest":
        return a, eol
    if kind == "span":
        b = rng.randint(a + 1, min(eol, a + 40))
        return a, b
    if kind == "empty":
        return a, a
    raise ValueError(kind)


class HoleMaker:
    """Draws chunks and holes; tokenizes them as the engine does."""

    def __init__(self, tokenizer, files: list[SourceFile], chunk_tokens: int = 448, max_hole_tokens: int = 31,
                 head_tokens: int = 16, seed: int = 0, allowed: set[int] | None = None):
        """`allowed`: the only token ids a chunk and a hole's pinned head may hold (a base model built with part of
        its embedding rows, `gpu.py`); a chunk or hole with another is skipped and counted in `dropped`."""
        self.tok = tokenizer
        self.files = files
        self.weights = [len(f.text) for f in files]
        self.chunk_tokens = chunk_tokens
        self.max_hole = max_hole_tokens
        self.head_tokens = head_tokens
        self.rng = random.Random(seed)
        self.bos = tokenizer.bos_token_id
        self.tried = 0
        self.kept = 0
        self.allowed = allowed
        self.dropped = 0

    def _lacks_rows(self, ids: list[int]) -> bool:
        """`ids` hold a token outside `allowed` (counted in `dropped`)."""
        if self.allowed is None or self.allowed.issuperset(ids):
            return False
        self.dropped += 1
        return True

    def encode(self, text: str) -> list[int]:
        return self.tok.encode(text, add_special_tokens=False) if text else []

    def chunk(self) -> tuple[SourceFile, int, str, list[int]]:
        """A file, the character offset of a chunk in it, the chunk's text and its tokens ([bos] + ...)."""
        f = self.rng.choices(self.files, weights=self.weights)[0]
        starts = _line_starts(f.text)
        start = self.rng.choice(starts[: max(1, len(starts) - 3)])
        if self.rng.random() < 0.3:
            start = 0  # the top of a file (imports) is where many completions happen
        text = f.text[start:start + self.chunk_tokens * 4]
        ids = [self.bos] + self.encode(text)
        if len(ids) > self.chunk_tokens:  # cut at the token budget, back to a line start
            cut_chars = len(self.tok.decode(ids[1:self.chunk_tokens]))
            text = text[:cut_chars]
            ids = [self.bos] + self.encode(text)
        return f, start, text, ids

    def holes(self, want: int) -> tuple[list[int], list[Hole]]:
        """One chunk's tokens and up to `want` holes in it that share its encoder pass."""
        f, start, text, ids = self.chunk()
        out: list[Hole] = []
        if self._lacks_rows(ids):
            return ids, out
        names = [k for k, _ in KINDS]
        weights = [w for _, w in KINDS]
        for _ in range(want * 3):
            if len(out) >= want:
                break
            kind = self.rng.choices(names, weights=weights)[0]
            span = cut_hole(text, self.rng, kind, lo=min(len(text), 40), hi=len(text))
            if span is None:
                continue
            self.tried += 1
            a, b = span
            prefix, middle = text[:a], text[a:b]
            suffix = f.text[start + b:start + b + 400]
            tail = healing.healing_tail(prefix)
            prompt_text = prefix[:len(prefix) - len(tail)]
            prompt = [self.bos] + self.encode(prompt_text)
            if len(prompt) < 2 or prompt != ids[:len(prompt)]:
                continue
            hole_ids = self.encode(healing.hole_text(prefix, middle, suffix))
            if len(hole_ids) > self.max_hole:
                continue
            head = self.encode(healing.split_suffix(suffix, tail)[1])[: self.head_tokens]
            if self._lacks_rows(head):
                continue
            out.append(Hole(kind, prompt, hole_ids, head, middle))
            self.kept += 1
        return ids, out
