"""The JSON-RPC protocol with two repairs to pygls 2.1.1's behaviour on bad input.

1. A request whose params do not deserialize is answered with InvalidParams (pygls logs it and
   never answers, so the client waits forever).
2. Server-side errors are logged, not pushed to the user as "Error in server" pop-ups.
"""

from __future__ import annotations

import logging

from pygls.exceptions import JsonRpcInternalError, JsonRpcInvalidParams
from pygls.protocol import LanguageServerProtocol

log = logging.getLogger(__name__)


class DgLspProtocol(LanguageServerProtocol):
    def structure_message(self, data):
        try:
            return super().structure_message(data)
        except (JsonRpcInvalidParams, JsonRpcInternalError) as exc:
            if isinstance(data, dict) and "id" in data and "method" in data:
                error = JsonRpcInvalidParams(f"invalid params for {data.get('method')!r}")
                self._send_response(data["id"], None, error.to_response_error())
            log.warning("rejected malformed message: %s", type(exc).__name__)
            raise
