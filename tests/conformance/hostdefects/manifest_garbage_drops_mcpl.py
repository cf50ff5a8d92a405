"""Defect: one unparseable mcpl/manifest answer switches MCPL off."""

from __future__ import annotations

from tests.conformance.hostdefects.rawhost import Defects, run

if __name__ == "__main__":
    run(Defects(manifest_garbage_drops_mcpl=True))
