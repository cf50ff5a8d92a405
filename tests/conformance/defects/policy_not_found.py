"""Defect (grants): answers the policy Request with ``-32601`` (a 0.4 habit), so it never
sends a receipt (S-05).

Without a receipt nothing else can be tried: the checks that need a completed policy
exchange must say "not exercised" and name that cause, not fail a second time.
"""

from __future__ import annotations

from typing import Any

from tests.conformance.defects.rawkit import RawConnector, RpcFailure


class NoPolicy(RawConnector):
    def accept_policy(self, params: dict[str, Any]) -> dict[str, Any]:
        raise RpcFailure(-32601, "Method not found")


if __name__ == "__main__":
    NoPolicy().main()
