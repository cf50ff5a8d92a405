"""Defect (lifecycle): ``channels/close`` of an unknown id answers ``closed: true``."""

from __future__ import annotations

from typing import Any

from switchboard.connector.inbound import InboundHandlers
from tests.conformance.defects.sdk import patch, run

_original = InboundHandlers._close


async def close(self: InboundHandlers, params: Any) -> dict[str, Any]:
    self._gate("channels/close")
    channel = params.get("channelId") if isinstance(params, dict) else None
    if channel not in self._connector.channels:
        return {"closed": True}
    return await _original(self, params)


if __name__ == "__main__":
    patch(InboundHandlers, "_close", close)
    run()
