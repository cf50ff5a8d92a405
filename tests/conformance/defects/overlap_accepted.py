"""Defect (grant): reads only ``effectiveCapabilities``, so a policy that grants and denies
one path is accepted, and the path stays in use."""

from __future__ import annotations

from typing import Any

from tests.conformance.defects.rawkit import RawConnector


class DeniedIgnored(RawConnector):
    def accept_policy(self, params: dict[str, Any]) -> dict[str, Any]:
        params = {k: v for k, v in params.items() if k != "deniedCapabilities"}
        return super().accept_policy(params)


if __name__ == "__main__":
    DeniedIgnored().main()
