"""Defect (grant): serves host→server methods without checking the grant (never ``-32002``)."""

from __future__ import annotations

from switchboard.connector.inbound import InboundHandlers
from tests.conformance.defects.sdk import patch, run


def gate(self: InboundHandlers, method: str) -> None:
    """The broken check: every method counts as granted."""


if __name__ == "__main__":
    patch(InboundHandlers, "_gate", gate)
    run()
