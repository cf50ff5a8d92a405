"""Defect (registration): matches the itemized ``channels/register`` results to its
descriptors by position instead of by ``id``.

A host that lists the results in another order (the kit reverses them when it refuses one)
makes it use the refused channel and drop an accepted one.
"""

from __future__ import annotations

from typing import Any

from tests.conformance.defects.rawkit import RawConnector


class ByPosition(RawConnector):
    def keep_accepted(self, results: list[Any]) -> None:
        for descriptor, result in zip(self.sent_descriptors, results, strict=False):
            if isinstance(result, dict) and result.get("accepted") is True:
                self.channels[descriptor["id"]] = descriptor


if __name__ == "__main__":
    ByPosition().main()
