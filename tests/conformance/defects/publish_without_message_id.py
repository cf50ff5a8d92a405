"""Defect (publish): answers a publish Request ``{delivered: true}`` with no ``messageId``."""

from __future__ import annotations

from typing import Any

from switchboard.connector.inbound import InboundHandlers
from tests.conformance.defects.sdk import patch, run

_original = InboundHandlers._publish


async def publish(self: InboundHandlers, params: Any) -> dict[str, Any]:
    answer = await _original(self, params)
    return {"delivered": answer["delivered"]}


if __name__ == "__main__":
    patch(InboundHandlers, "_publish", publish)
    run()
