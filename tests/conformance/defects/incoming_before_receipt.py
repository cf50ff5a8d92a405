"""Defect (incoming): flushes a message that arrived while it was connecting as soon as the
policy Request grants ``channels.incoming``, before it has answered that Request.

The exchange completes with the receipt; until then nothing privileged may be sent. (The
message is for ``raw:#two``: the kit's S-26 check refuses ``raw:#one``, and an early
message there would count against that requirement too.)
"""

from __future__ import annotations

from typing import Any

from tests.conformance.defects.rawkit import CHANNELS, RawConnector


class Hasty(RawConnector):
    def accept_policy(self, params: dict[str, Any]) -> dict[str, Any]:
        receipt = super().accept_policy(params)
        if not self.ready and self.allows("channels.incoming"):
            backlog = self.message(CHANNELS[1]["id"], "said while the bridge was connecting")
            self.request("channels/incoming", {"messages": [backlog]})
        return receipt


if __name__ == "__main__":
    Hasty().main()
