"""A tiny JSON-RPC peer for the stdio tests, run as ``python echo_peer.py [max_frame]``.

It prints a junk line on stdout before the link opens (as real connectors do), then serves
its own stdin/stdout with ``Peer`` and ``stdio_server_link`` until stdin closes.

Methods: ``echo`` (returns params), ``fail`` (an RpcError with data), ``boom`` (an
unexpected exception), ``stderr`` (writes ``params["line"]`` to stderr), ``ask_back``
(requests ``params["method"]`` from the host and returns the host's answer), ``pid``.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import anyio

from switchboard.runtime.logs import configure
from switchboard.transport import Peer, RpcError, method_not_found, stdio_server_link


async def main(max_frame: int) -> None:
    os.write(1, b"Logged in as echo-bot#0001\n")
    async with stdio_server_link(max_frame) as link:
        peer: Peer

        async def handle(method: str, params: Any) -> Any:
            if method == "echo":
                return params
            if method == "fail":
                raise RpcError(-32001, "asked to fail", {"params": params})
            if method == "boom":
                raise RuntimeError("internal path /srv/secret.db")
            if method == "stderr":
                sys.stderr.write(params["line"] + "\n")
                sys.stderr.flush()
                return True
            if method == "ask_back":
                return await peer.request(params["method"], params.get("params"))
            if method == "pid":
                return os.getpid()
            raise method_not_found(method)

        peer = Peer(link, on_request=handle, name="echo-peer")
        await peer.run()


if __name__ == "__main__":
    configure("WARNING")
    anyio.run(main, int(sys.argv[1]) if len(sys.argv) > 1 else 1 << 20)
