"""Defect (streaming): answers the ``channels/outgoing/complete`` Notification with an error,
as if it were a Request it could not serve (a Notification is never answered)."""

from __future__ import annotations

from typing import Any

from tests.conformance.defects.rawkit import RawConnector


class AnswersComplete(RawConnector):
    def notified(self, method: str, params: dict[str, Any]) -> None:
        super().notified(method, params)
        if method == "channels/outgoing/complete":
            error = {"code": -32600, "message": "complete must be sent as a request"}
            self.respond(None, {"error": error})


if __name__ == "__main__":
    AnswersComplete().main()
