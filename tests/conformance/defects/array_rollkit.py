"""A clean rollback connector in the 0.4 dialect: ``featureSets`` is an array of records.

The same as :mod:`.rollkit` except the array form, which is S-01's failure and nothing
else's: the control for :mod:`.array_rollback_unknown_accepted`, so the defect's one
difference is one check (S-44).
"""

from __future__ import annotations

from typing import Any

from tests.conformance.defects.rollkit import RollbackConnector


class ArrayRollbackConnector(RollbackConnector):
    def manifest(self) -> dict[str, Any]:
        manifest = super().manifest()
        manifest["featureSets"] = [
            {"name": name, **declared} for name, declared in manifest["featureSets"].items()
        ]
        return manifest


if __name__ == "__main__":
    ArrayRollbackConnector().main()
