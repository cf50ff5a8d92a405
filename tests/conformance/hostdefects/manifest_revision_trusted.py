"""Defect: a fetched manifest whose revision is unchanged is not applied."""

from __future__ import annotations

from tests.conformance.hostdefects.rawhost import Defects, run

if __name__ == "__main__":
    run(Defects(manifest_revision_trusted=True))
