"""Defect (requests): a rollback result that is ``{"ok": true}``, with neither ``checkpoint``
nor ``success`` (S-45)."""

from __future__ import annotations

from typing import Any

from tests.conformance.defects.rollkit import RollbackConnector


class BareRollback(RollbackConnector):
    def rolled_back(self, checkpoint: str) -> dict[str, Any]:
        return {"ok": True}


if __name__ == "__main__":
    BareRollback().main()
