"""Defect (requests): parses request ids with ``int()``; a string id is answered with id null."""

from __future__ import annotations

from typing import Any

from tests.conformance.defects.rawkit import RawConnector


class IntIds(RawConnector):
    def respond(self, request_id: Any, body: dict[str, Any]) -> None:
        try:
            number: int | None = int(request_id)
        except (TypeError, ValueError):
            number = None
        super().respond(number, body)


if __name__ == "__main__":
    IntIds().main()
