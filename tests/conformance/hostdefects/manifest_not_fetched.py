"""Defect: on mcpl/manifestChanged the policy is re-sent without fetching the manifest."""

from __future__ import annotations

from tests.conformance.hostdefects.rawhost import Defects, run

if __name__ == "__main__":
    run(Defects(manifest_not_fetched=True))
