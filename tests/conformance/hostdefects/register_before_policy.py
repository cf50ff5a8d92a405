"""Defect: channels/register is accepted before the policy receipt."""

from __future__ import annotations

from tests.conformance.hostdefects.rawhost import Defects, run

if __name__ == "__main__":
    run(Defects(register_before_policy=True))
