"""Defect (handshake): prints a banner on stdout, as a log line would, after its first message.

``[x] Client initialized`` goes to stdout when the host says ``initialized``; an MCP server
over stdio writes nothing there but JSON-RPC messages (S-46). Everything else is the clean
raw connector. It also says so on stderr, where such lines belong, so the failure shows
the stderr tail.
"""

from __future__ import annotations

import sys

from tests.conformance.defects.rawkit import RawConnector


class Banner(RawConnector):
    async def on_initialized(self) -> None:
        assert self.writer is not None
        self.writer.write(b"[x] Client initialized\n")
        sys.stderr.write("banner written to stdout\n")
        sys.stderr.flush()


if __name__ == "__main__":
    Banner().main()
