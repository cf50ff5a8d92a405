"""Defect (incoming): sends ``channels/incoming`` as a Notification instead of a Request."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from switchboard.connectors.demo import DemoConnector
from switchboard.protocol import IncomingItemResult, IncomingMessage, dump
from tests.conformance.defects.sdk import run, town


class Notifying(DemoConnector):
    async def send_incoming(
        self, messages: Sequence[IncomingMessage | Mapping[str, Any]]
    ) -> list[IncomingItemResult]:
        peer = self._check("channels/incoming")
        batch = [dump(IncomingMessage.model_validate(m)) for m in messages]
        await peer.notify("channels/incoming", {"messages": batch})
        return []


if __name__ == "__main__":
    run(Notifying(town()))
