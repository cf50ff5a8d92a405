"""Defect (handshake): an MCP-only answer to ``initialize`` — no ``experimental.mcpl`` at all.

Expected: ``server.handshake.advertisement_shape`` fails; every other check is not
applicable.
"""

from __future__ import annotations

from typing import Any

from tests.conformance.defects.rawkit import RawConnector


class NoMcpl(RawConnector):
    def capabilities(self) -> dict[str, Any]:
        return {"tools": {"listChanged": False}}


if __name__ == "__main__":
    NoMcpl().main()
