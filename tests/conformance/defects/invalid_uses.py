"""Defect (handshake): a feature set whose ``uses`` names ``channels.observe``, a stale path.

``channels.observe`` was dropped before 0.5 (``channels.incoming`` replaced it); a manifest
written for the old vocabulary still declares it, and ``uses`` must come from the 17 paths.
"""

from __future__ import annotations

from typing import Any

from tests.conformance.defects.rawkit import RawConnector


class StaleUses(RawConnector):
    def manifest(self) -> dict[str, Any]:
        manifest = super().manifest()
        manifest["featureSets"] = {
            "relay": {"description": "Relays the rooms", "uses": ["channels.observe"]}
        }
        return manifest


if __name__ == "__main__":
    StaleUses().main()
