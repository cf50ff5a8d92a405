"""Defect: a manifest whose revision is not its digest is refused."""

from __future__ import annotations

from tests.conformance.hostdefects.rawhost import Defects, run

if __name__ == "__main__":
    run(Defects(manifest_digest_enforced=True))
