"""Defect: channels/incoming answers a batch with fewer results than messages."""

from __future__ import annotations

from tests.conformance.hostdefects.rawhost import Defects, run

if __name__ == "__main__":
    run(Defects(incoming_first_result_only=True))
