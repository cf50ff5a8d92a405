"""Defect (registration): ignores the itemized answer and uses every channel it registered."""

from __future__ import annotations

from switchboard.connectors.demo import DemoConnector
from switchboard.protocol import ChannelDescriptor, ItemResult
from tests.conformance.defects.sdk import run, town


class AllAccepted(DemoConnector):
    def _keep_accepted(self, sent: list[ChannelDescriptor], answers: list[ItemResult]) -> None:
        for descriptor in sent:
            self.channels.put(descriptor)


if __name__ == "__main__":
    run(AllAccepted(town()))
