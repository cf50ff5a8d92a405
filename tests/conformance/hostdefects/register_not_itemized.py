"""Defect: channels/register is answered {} instead of one result per descriptor."""

from __future__ import annotations

from tests.conformance.hostdefects.rawhost import Defects, run

if __name__ == "__main__":
    run(Defects(register_result_empty=True))
