"""Defect (policy): treats a ``featureSets/update`` Notification like the Request."""

from __future__ import annotations

from typing import Any

from switchboard.connector.inbound import InboundHandlers
from tests.conformance.defects.sdk import patch, run


async def policy_notification(self: InboundHandlers, params: Any) -> None:
    connector = self._connector
    change, _receipt = connector.policy.apply_request(params)
    connector._commit(change)


if __name__ == "__main__":
    patch(InboundHandlers, "_policy_notification", policy_notification)
    run()
