"""A clean connector with rollback state: ``python -m tests.conformance.defects.rollkit``.

It declares a feature set ``notes`` with ``rollback: true`` and a read-only tool ``peek`` whose
result carries ``state.checkpoint``; ``state/rollback`` to a checkpoint it handed out answers
``{checkpoint, success}``, and ``-32005`` with ``data.checkpoint`` for any other.

The base of the rollback defects, and their clean control: it fails no check (a whole run),
and passes S-44 and S-45.
"""

from __future__ import annotations

from typing import Any

from tests.conformance.defects.rawkit import RawConnector, RpcFailure


class RollbackConnector(RawConnector):
    def __init__(self) -> None:
        super().__init__()
        self.handed_out: set[str] = set()

    def manifest(self) -> dict[str, Any]:
        manifest = super().manifest()
        manifest["featureSets"] = {
            "notes": {
                "description": "Notes posted to channels, with checkpoints",
                "uses": ["channels.publish"],
                "rollback": True,
            }
        }
        return manifest

    def capabilities(self) -> dict[str, Any]:
        return {**super().capabilities(), "tools": {}}

    def answer(self, method: str, params: dict[str, Any]) -> Any:
        if method == "tools/list":
            peek = {
                "name": "peek",
                "description": "Read the notes",
                "inputSchema": {"type": "object", "properties": {}},
                "annotations": {"readOnlyHint": True},
            }
            return {"tools": [peek]}
        if method == "tools/call":
            handed = f"cp-{next(self.counter)}"
            self.handed_out.add(handed)
            state = {"checkpoint": handed, "parent": None}
            return {"content": [{"type": "text", "text": "no notes"}], "state": state}
        if method == "state/rollback":
            checkpoint = params.get("checkpoint")
            if not isinstance(checkpoint, str) or checkpoint not in self.handed_out:
                raise RpcFailure(-32005, "Checkpoint not found", {"checkpoint": checkpoint})
            return self.rolled_back(checkpoint)
        return super().answer(method, params)

    def rolled_back(self, checkpoint: str) -> dict[str, Any]:
        """The result of a rollback to a checkpoint this connector handed out."""
        return {"checkpoint": checkpoint, "success": True}


if __name__ == "__main__":
    RollbackConnector().main()
