"""Defect (grant): reads a bare ``channels`` grant entry as ``channels.*`` (every channel leaf)."""

from __future__ import annotations

from typing import Any

from switchboard.connector import PolicyChange, PolicyState
from tests.conformance.defects.sdk import patch, run

_original = PolicyState.apply_request


def apply_request(self: PolicyState, params: Any) -> tuple[PolicyChange, dict[str, Any]]:
    if isinstance(params, dict) and isinstance(params.get("effectiveCapabilities"), list):
        grant = params["effectiveCapabilities"]
        params = {
            **params,
            "effectiveCapabilities": ["channels.*" if p == "channels" else p for p in grant],
        }
    return _original(self, params)


if __name__ == "__main__":
    patch(PolicyState, "apply_request", apply_request)
    run()
