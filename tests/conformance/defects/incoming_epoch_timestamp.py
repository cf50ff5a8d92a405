"""Defect (incoming): messages carry the platform's Unix time (a number) as ``timestamp``,
where MCPL wants an ISO 8601 string."""

from __future__ import annotations

import time
from typing import Any

from tests.conformance.defects.rawkit import RawConnector


class EpochTime(RawConnector):
    def message(self, channel: str, text: str, **extra: Any) -> dict[str, Any]:
        return {**super().message(channel, text, **extra), "timestamp": int(time.time())}


if __name__ == "__main__":
    EpochTime().main()
