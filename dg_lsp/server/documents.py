"""Documents as the server keeps them: edits applied leniently, unopened files read safely.

- `apply_change`: an incremental edit whose range lies outside the document (a client bug or
  a lost notification) is clamped into it, as editors do, instead of being dropped or raising
  half-way through a batch of changes.
- `read_unopened`: a request for a file the client never opened reads it from disk, decoding
  undecodable bytes as U+FFFD (pygls' own fallback would raise UnicodeDecodeError).
- `process_usage`: CPU seconds and resident memory, for `dgLsp.status` and the benchmarks.
"""

from __future__ import annotations

import logging
import os
import resource
import threading
import time

from lsprotocol import types
from pygls.uris import to_fs_path
from dg_lsp.context import language_for_path

from .lines import LspDocument
from .positions import to_server

log = logging.getLogger(__name__)


def new_document(uri: str, text: str, version: int | None, language_id: str | None, codec) -> LspDocument:
    return LspDocument(uri, source=text, version=version, language_id=language_id, position_codec=codec)


def apply_change(doc: LspDocument, change) -> None:
    """Apply one content change to `doc`, clamping an out-of-range incremental edit. Only the lines the
    edit touches are re-split (server/lines.py)."""
    if not isinstance(change, types.TextDocumentContentChangePartial):
        doc._source = change.text  # noqa: SLF001 - pygls has no public setter
        return
    lines, codec = doc.lines, doc.position_codec
    start = to_server(lines, codec, change.range.start)  # clamped into the document
    end = to_server(lines, codec, change.range.end)
    if end < start:
        log.warning("didChange range ends before it starts in %s; applying it reversed", doc.uri)
        start, end = end, start
    doc.replace(start, end, change.text)


def read_unopened(uri: str, codec, max_chars: int) -> LspDocument | None:
    """A document for a `file:` URI the client has not opened, or None."""
    path = to_fs_path(uri) if uri.startswith("file:") else None
    try:
        if path is None or not os.path.isfile(path) or os.path.getsize(path) > 4 * max_chars:
            return None
        with open(path, "rb") as fh:
            text = fh.read().decode("utf-8", errors="replace")
    except OSError as exc:
        log.warning("cannot read %s: %s", uri, exc)
        return None
    return new_document(uri, text, None, language_for_path(path), codec)


def process_usage() -> dict:
    rss_mb = None
    try:
        with open("/proc/self/statm") as fh:
            rss_mb = int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):
        pass
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"cpuSeconds": time.process_time(), "rssMb": rss_mb, "peakRssMb": peak_mb,
            "threads": threading.active_count()}
