"""Defect (requests): answers an unknown method ``-32602`` instead of ``-32601``."""

from __future__ import annotations

from typing import Any

from switchboard.connector.inbound import InboundHandlers
from switchboard.transport import INVALID_PARAMS, RpcError
from tests.conformance.defects.sdk import patch, run

_original = InboundHandlers.on_request


async def on_request(self: InboundHandlers, method: str, params: Any) -> Any:
    if method not in self._requests:
        raise RpcError(INVALID_PARAMS, "Invalid params")
    return await _original(self, method, params)


if __name__ == "__main__":
    patch(InboundHandlers, "on_request", on_request)
    run()
