"""Defect (registration): registers its direct messages with ``direction: "both"``, which is
not one of ``inbound``, ``outbound`` and ``bidirectional``."""

from __future__ import annotations

from typing import Any

from tests.conformance.defects.rawkit import CHANNELS, RawConnector


class BothWays(RawConnector):
    def descriptors(self) -> list[dict[str, Any]]:
        dms = {"id": "raw:@dm", "type": "raw", "label": "Direct messages", "direction": "both"}
        return [*CHANNELS, dms]


if __name__ == "__main__":
    BothWays().main()
