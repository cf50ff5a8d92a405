"""Defect (requests): 0.4 array-form feature sets declaring ``rollback: true``, and a
rollback to a checkpoint it never handed out "succeeds" instead of answering ``-32005`` (S-44).

The array shape itself is S-01's business (its clean control, :mod:`.array_rollkit`, fails
S-01 and nothing else); this defect is about the kit still running the state checks for such
a server: S-44 fails, and S-45 (the result for a checkpoint it did hand out) passes.
"""

from __future__ import annotations

from typing import Any

from tests.conformance.defects.array_rollkit import ArrayRollbackConnector


class ArrayRollback(ArrayRollbackConnector):
    def answer(self, method: str, params: dict[str, Any]) -> Any:
        if method == "state/rollback":
            return {"checkpoint": params.get("checkpoint"), "success": True}
        return super().answer(method, params)


if __name__ == "__main__":
    ArrayRollback().main()
