"""Defect (handshake): registers its channels as soon as the host says ``initialized``.

The policy Request has not arrived yet, so nothing privileged may be sent (S-03), and a
policy Notification or a Request without a grant must not change that (S-04, S-09).
"""

from __future__ import annotations

from tests.conformance.defects.rawkit import RawConnector


class Eager(RawConnector):
    async def on_initialized(self) -> None:
        self.register()


if __name__ == "__main__":
    Eager().main()
