"""Defect (publish): a publish to a channel it does not know gets ``-32004``, not ``-32023``."""

from __future__ import annotations

from typing import Any

from switchboard.connector.inbound import InboundHandlers
from switchboard.protocol import McplError
from tests.conformance.defects.sdk import patch, run

_original = InboundHandlers._publish


async def publish(self: InboundHandlers, params: Any) -> dict[str, Any]:
    self._gate("channels/publish")
    channel = params.get("channelId") if isinstance(params, dict) else None
    if isinstance(channel, str) and channel not in self._connector.channels:
        raise McplError(-32004, "No such channel", {"channelId": channel})
    return await _original(self, params)


if __name__ == "__main__":
    patch(InboundHandlers, "_publish", publish)
    run()
