"""Defect: every mcpl/manifestChanged causes its own mcpl/manifest fetch."""

from __future__ import annotations

from tests.conformance.hostdefects.rawhost import Defects, run

if __name__ == "__main__":
    run(Defects(manifest_fetch_unbounded=True))
