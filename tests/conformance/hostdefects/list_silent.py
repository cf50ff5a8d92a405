"""Defect: channels/list is never answered."""

from __future__ import annotations

from tests.conformance.hostdefects.rawhost import Defects, run

if __name__ == "__main__":
    run(Defects(list_never_answered=True))
