"""Defect (handshake): registers its channels on a timer, 2.5 s after ``initialized``, whether
or not a policy Request came.

A kit that watched for only 2 s before the policy missed it; the default window before the
policy (``SuiteOptions.policy_silence``, 6 s) sees it (S-03, S-04).
"""

from __future__ import annotations

import asyncio

from tests.conformance.defects.rawkit import RawConnector

TIMER_SECONDS = 2.5


class Timed(RawConnector):
    async def on_initialized(self) -> None:
        asyncio.get_running_loop().call_later(TIMER_SECONDS, self.on_timer)

    def on_timer(self) -> None:
        if not self.registered:
            self.registered = True
            self.register()


if __name__ == "__main__":
    Timed().main()
