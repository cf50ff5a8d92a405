"""Defect (lifecycle): ``channels/open`` of any id succeeds, with a descriptor made up for it."""

from __future__ import annotations

from typing import Any

from tests.conformance.defects.rawkit import RawConnector


class OpensAnything(RawConnector):
    def open(self, params: dict[str, Any]) -> dict[str, Any]:
        channel = str(params.get("channelId"))
        if channel not in self.channels:
            self.channels[channel] = {
                "id": channel,
                "type": str(params.get("type", "raw")),
                "label": channel,
                "direction": "bidirectional",
            }
        return super().open(params)


if __name__ == "__main__":
    OpensAnything().main()
