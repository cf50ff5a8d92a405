"""Defect (manifest, S-41): loads its configuration in three steps once ready and announces
each step at once, three ``mcpl/manifestChanged`` in a burst, where one would do.

Everything else about the announcements is right: each revision is the §17.2 digest of the
manifest then in force, and the domains name what changed.
"""

from __future__ import annotations

from typing import Any

from switchboard.protocol import manifest_digest
from tests.conformance.defects.rawkit import RawConnector

ROOMS = {"description": "Relays the rooms", "uses": ["channels.publish"]}

STEPS: list[tuple[str, dict[str, Any]]] = [
    ("featureSets", {"rooms": {**ROOMS, "description": "Relays the rooms of Raw Town"}}),
    ("capabilities", {"modelInfo": False}),
    ("featureSets", {"rooms": {**ROOMS, "uses": ["channels.publish", "channels.typing"]}}),
]


class Piecemeal(RawConnector):
    def __init__(self) -> None:
        super().__init__()
        self.feature_sets: dict[str, Any] = {"rooms": ROOMS}
        self.extra: dict[str, Any] = {}
        self.loaded = False

    def manifest(self) -> dict[str, Any]:
        manifest = {**super().manifest(), **self.extra, "featureSets": dict(self.feature_sets)}
        return {**manifest, "revision": manifest_digest(manifest)}

    def after_receipt(self) -> None:
        super().after_receipt()
        if self.loaded:
            return
        self.loaded = True
        for domain, change in STEPS:
            (self.feature_sets if domain == "featureSets" else self.extra).update(change)
            params = {"revision": self.manifest()["revision"], "domains": [domain]}
            self.send({"jsonrpc": "2.0", "method": "mcpl/manifestChanged", "params": params})


if __name__ == "__main__":
    Piecemeal().main()
