"""Defect (lifecycle, grant): serves ``channels/acknowledge`` without checking its gate."""

from __future__ import annotations

from tests.conformance.defects.rawkit import RawConnector


class AcksAnyway(RawConnector):
    def gate(self, method: str) -> None:
        if method != "channels/acknowledge":
            super().gate(method)


if __name__ == "__main__":
    AcksAnyway().main()
