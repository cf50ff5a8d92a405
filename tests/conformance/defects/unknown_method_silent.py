"""Defect (requests): never answers a method it does not know."""

from __future__ import annotations

from typing import Any

import anyio

from switchboard.connector.inbound import InboundHandlers
from switchboard.transport import Deferred
from tests.conformance.defects.sdk import patch, run

_original = InboundHandlers.on_request


async def on_request(self: InboundHandlers, method: str, params: Any) -> Any:
    if method not in self._requests:
        return Deferred(anyio.Event().wait)  # an answer that never comes
    return await _original(self, method, params)


if __name__ == "__main__":
    patch(InboundHandlers, "on_request", on_request)
    run()
