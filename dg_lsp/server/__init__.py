"""The LSP server (pygls 2 + lsprotocol)."""

from .handlers import FILL_SELECTION, STATUS, build_server
from .server import DgLspServer

__all__ = ["FILL_SELECTION", "STATUS", "DgLspServer", "build_server"]
