"""Defect (handshake): ``featureSets`` advertised as an array (the 0.4 shape) with a bad path.

Both at ``initialize`` and from ``mcpl/manifest``; everything else is Demo Town.
"""

from __future__ import annotations

from typing import Any

from switchboard.connector import ServerManifest
from tests.conformance.defects.sdk import patch, run

_original = ServerManifest.mcpl


def mcpl(self: ServerManifest) -> dict[str, Any]:
    manifest = _original(self)
    manifest["featureSets"] = [
        {"name": "chat", "description": "Chat", "uses": ["contextHooks.beforeInference"]}
    ]
    return manifest


if __name__ == "__main__":
    patch(ServerManifest, "mcpl", mcpl)
    run()
