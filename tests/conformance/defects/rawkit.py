"""A hand-rolled MCPL connector on bare asyncio, for defects the SDK cannot express.

It imports nothing from switchboard. :class:`RawConnector` speaks NDJSON on stdin/stdout
and, left alone, behaves: it answers ``initialize`` with a 0.5 manifest, becomes ready on
the host's policy Request (answering the receipt first), registers two channels, serves
``channels/publish``, ``channels/open`` and ``channels/close`` (by ``channelId``),
``channels/list`` and ``mcpl/manifest`` within its grant, refuses a policy that grants and
denies one path, and answers anything else ``-32601``. Subclasses override one method to plant
their defect: :meth:`manifest`, :meth:`on_initialized`, :meth:`on_unparsable`.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import sys
from typing import Any

__all__ = ["CHANNELS", "RawConnector", "RpcFailure"]

CHANNELS = [
    {"id": "raw:#one", "type": "raw", "label": "#one", "direction": "bidirectional"},
    {"id": "raw:#two", "type": "raw", "label": "#two", "direction": "bidirectional"},
]


class RpcFailure(Exception):
    """Answer the current request with this error."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.error: dict[str, Any] = {"code": code, "message": message}
        if data is not None:
            self.error["data"] = data


def _matches(pattern: str, path: str) -> bool:
    want, have = pattern.split("."), path.split(".")
    return len(want) == len(have) and all(w in ("*", h) for w, h in zip(want, have, strict=True))


class RawConnector:
    """A small, mostly conforming MCPL server over stdio."""

    def __init__(self) -> None:
        self.grant: list[str] = []
        self.channels: dict[str, dict[str, Any]] = {}
        self.ids = itertools.count(1)
        self.published = itertools.count(1)
        self.writer: asyncio.StreamWriter | None = None

    # -- what subclasses change ------------------------------------------------------------

    def manifest(self) -> dict[str, Any]:
        """The ``experimental.mcpl`` object (``None``-free)."""
        return {
            "version": "0.5",
            "channels": {"register": True, "publish": True, "lifecycle": True},
            "featureSets": {},
        }

    def capabilities(self) -> dict[str, Any]:
        """The MCP ``capabilities`` of the ``initialize`` result."""
        return {"experimental": {"mcpl": self.manifest()}}

    async def on_initialized(self) -> None:
        """The host sent ``notifications/initialized``; a conforming server waits."""

    def on_unparsable(self, line: bytes) -> None:
        """A line that is not JSON: answer a parse error and carry on."""
        self.send({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse"}})

    # -- plumbing --------------------------------------------------------------------------

    def allows(self, path: str) -> bool:
        return any(_matches(pattern, path) for pattern in self.grant)

    def send(self, message: dict[str, Any]) -> None:
        assert self.writer is not None
        self.writer.write(json.dumps(message).encode() + b"\n")

    def register(self) -> None:
        """Send ``channels/register`` (the answer is read but not needed)."""
        self.send(
            {
                "jsonrpc": "2.0",
                "id": f"raw-{next(self.ids)}",
                "method": "channels/register",
                "params": {"channels": CHANNELS},
            }
        )

    def answer(self, method: str, params: Any) -> Any:
        params = params if isinstance(params, dict) else {}
        if method == "initialize":
            return {
                "protocolVersion": params.get("protocolVersion", "2025-06-18"),
                "capabilities": self.capabilities(),
                "serverInfo": {"name": "raw-defect", "version": "0"},
            }
        if method == "ping":
            return {}
        if method == "mcpl/manifest":
            return self.manifest()
        if method == "featureSets/update":
            grant = params.get("effectiveCapabilities")
            grant = [p for p in grant if isinstance(p, str)] if isinstance(grant, list) else []
            denied = params.get("deniedCapabilities")
            if isinstance(denied, list) and set(grant) & set(denied):
                self.grant = []  # a malformed policy: refuse it and hold nothing
                raise RpcFailure(-32602, "Malformed policy")
            self.grant = grant
            return {"accepted": True}
        gates = {
            "channels/publish": "channels.publish",
            "channels/open": "channels.lifecycle",
            "channels/close": "channels.lifecycle",
            "channels/list": "channels.register",
        }
        if method not in gates:
            raise RpcFailure(-32601, "Method not found")
        if not self.allows(gates[method]):
            raise RpcFailure(-32002, "Capability denied", {"capability": gates[method]})
        if method == "channels/list":
            return {"channels": list(self.channels.values())}
        channel = params.get("channelId")
        if channel not in self.channels:
            raise RpcFailure(-32023, "Unknown channel", {"channelId": channel})
        if method == "channels/open":
            return {"channel": self.channels[channel]}
        if method == "channels/close":
            return {"closed": True}
        return {"delivered": True, "messageId": f"raw-m-{next(self.published)}"}

    async def handle(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        if not isinstance(method, str):
            result = message.get("result")
            if isinstance(result, dict) and isinstance(result.get("results"), list):
                for item in result["results"]:
                    if isinstance(item, dict) and item.get("accepted") is True:
                        found = [c for c in CHANNELS if c["id"] == item.get("id")]
                        self.channels.update((c["id"], c) for c in found)
            return
        if "id" not in message:
            if method == "notifications/initialized":
                await self.on_initialized()
            return
        try:
            reply = {
                "jsonrpc": "2.0",
                "id": message["id"],
                "result": self.answer(method, message.get("params")),
            }
        except RpcFailure as failure:
            reply = {"jsonrpc": "2.0", "id": message["id"], "error": failure.error}
        self.send(reply)
        if method == "featureSets/update" and self.allows("channels.register"):
            self.register()

    async def serve(self) -> None:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=1 << 24)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
        transport, protocol = await loop.connect_write_pipe(
            asyncio.streams.FlowControlMixin, sys.stdout
        )
        self.writer = asyncio.StreamWriter(transport, protocol, reader, loop)
        while line := await reader.readline():
            try:
                message = json.loads(line)
            except ValueError:
                self.on_unparsable(line)
                continue
            if isinstance(message, dict):
                await self.handle(message)
            else:
                self.send(
                    {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "Invalid"}}
                )
            await self.writer.drain()

    def main(self) -> None:
        asyncio.run(self.serve())
