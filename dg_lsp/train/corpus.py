"""The training corpus: Python files collected, deduplicated, split train/held-out, tokenized.

Default source is the standard library of the interpreter running the script (PSF licence).
A named set of stdlib packages is held out for evaluation and never trained on (nor used to
train the tokenizer).
"""

from __future__ import annotations

import hashlib
import sysconfig
from dataclasses import dataclass
from pathlib import Path

import numpy as np

HELD_OUT_PACKAGES = ("json", "email", "http", "xml", "logging", "urllib")
_SKIP_DIRS = {"test", "tests", "idle_test", "site-packages", "__pycache__"}
MAX_FILE_BYTES = 400_000  # skips generated data files such as pydoc_data/topics.py


def stdlib_dir() -> Path:
    return Path(sysconfig.get_paths()["stdlib"])


def _package_of(path: Path, root: Path) -> str:
    rel = path.relative_to(root)
    return rel.parts[0].removesuffix(".py")


@dataclass
class SourceFile:
    path: str
    text: str
    held_out: bool


def read_new_source(path: Path, seen: set[str], max_bytes: int, min_chars: int = 1) -> str | None:
    """A source file's UTF-8 text, or None when it is too big, unreadable, shorter than `min_chars` once
    stripped, or a copy of one already seen (its SHA-256 is added to `seen`)."""
    try:
        if path.stat().st_size > max_bytes:
            return None
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    if digest in seen or len(text.strip()) < min_chars:
        return None
    seen.add(digest)
    return text


def collect_files(extra_dirs: list[str], use_stdlib: bool = True,
                  held_out: tuple[str, ...] = HELD_OUT_PACKAGES) -> list[SourceFile]:
    """All .py files under the stdlib (minus tests) and `extra_dirs`, deduplicated by content hash."""
    roots: list[tuple[Path, bool]] = [(stdlib_dir(), True)] if use_stdlib else []
    roots += [(Path(d), False) for d in extra_dirs]
    seen: set[str] = set()
    files: list[SourceFile] = []
    for root, is_stdlib in roots:
        for path in sorted(root.rglob("*.py")):
            rel_parts = path.relative_to(root).parts
            if any(p in _SKIP_DIRS for p in rel_parts[:-1]) or path.name.startswith("test_"):
                continue
            text = read_new_source(path, seen, MAX_FILE_BYTES)
            if text is None:
                continue
            is_held = is_stdlib and _package_of(path, root) in held_out
            files.append(SourceFile(str(path), text, is_held))
    return files


def tokenize_files(tokenizer, texts: list[str]) -> list[np.ndarray]:
    """Token ids of each whole file (no special tokens), as int32 arrays."""
    out = []
    for i in range(0, len(texts), 64):
        enc = tokenizer(texts[i:i + 64], add_special_tokens=False)["input_ids"]
        out += [np.asarray(ids, dtype=np.int32) for ids in enc]
    return out


def newline_table(tokenizer, vocab_size: int) -> np.ndarray:
    """Per token id: does its text contain a newline (so the next token starts a line)?"""
    table = np.zeros(vocab_size, dtype=bool)
    for tid in range(vocab_size):
        table[tid] = "\n" in tokenizer.decode([tid])
    return table
