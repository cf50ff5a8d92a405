"""Defect: the policy is sent as a Notification, never a Request."""

from __future__ import annotations

from tests.conformance.hostdefects.rawhost import Defects, run

if __name__ == "__main__":
    run(Defects(policy_as_notification=True))
