"""Defect (policy): invents ``mode: "full"`` in a receipt where nothing degraded."""

from __future__ import annotations

from typing import Any

from switchboard.connector import PolicyState
from tests.conformance.defects.sdk import patch, run

_original = PolicyState._receipt


def receipt(self: PolicyState, active: frozenset[str]) -> dict[str, Any]:
    answer = _original(self, active)
    answer.setdefault("mode", "full")
    return answer


if __name__ == "__main__":
    patch(PolicyState, "_receipt", receipt)
    run()
