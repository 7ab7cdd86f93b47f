"""The LSP server (pygls 2 + lsprotocol)."""

from .server import FILL_SELECTION, STATUS, DgLspServer, build_server

__all__ = ["FILL_SELECTION", "STATUS", "DgLspServer", "build_server"]
