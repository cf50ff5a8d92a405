"""Defect (policy): a policy Request without ``effectiveCapabilities`` grants everything it
advertises (fail-open), where an absent grant means nothing at all."""

from __future__ import annotations

from typing import Any

from tests.conformance.defects.rawkit import RawConnector


class FailOpen(RawConnector):
    def accept_policy(self, params: dict[str, Any]) -> dict[str, Any]:
        if "effectiveCapabilities" not in params:
            params = {**params, "effectiveCapabilities": ["channels.*"]}
        return super().accept_policy(params)


if __name__ == "__main__":
    FailOpen().main()
