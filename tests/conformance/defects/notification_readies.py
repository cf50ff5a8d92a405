"""Defect (policy): treats a ``featureSets/update`` Notification like the Request."""

from __future__ import annotations

from typing import Any

from switchboard.connector.inbound import InboundHandlers
from tests.conformance.defects.sdk import patch, run


async def policy_notification(self: InboundHandlers, params: Any) -> None:
    change, _receipt = self._connector.policy.apply_request(params)
    self._on_policy(change)


if __name__ == "__main__":
    patch(InboundHandlers, "_policy_notification", policy_notification)
    run()
