"""Defect: capabilities a changed manifest adds are granted automatically."""

from __future__ import annotations

from tests.conformance.hostdefects.rawhost import Defects, run

if __name__ == "__main__":
    run(Defects(manifest_additions_granted=True))
