"""A hand-rolled MCPL connector on bare asyncio, for defects the SDK cannot express (or would
express slowly: this program imports nothing from switchboard and starts in a tenth of the
time an SDK connector needs).

Left alone, :class:`RawConnector` behaves, and the server suite finds nothing wrong with it
(``test_server_suite_defects`` runs the whole suite against it). It speaks NDJSON on
stdin/stdout, answers ``initialize`` with a 0.5 manifest advertising all seven channel
leaves, becomes ready on the host's policy Request (answering the receipt first), then
registers two channels and keeps those the host accepted, matched by id. Within its grant
it serves ``channels/publish`` (Request or Notification), ``channels/open``,
``channels/close``, ``channels/acknowledge``, ``channels/list`` and ``mcpl/manifest``, takes
``channels/typing`` and ``channels/outgoing/*`` as advisory, and when a published text asks
a question someone called Echo answers it in the room (``channels/incoming``, quoting the
published text). It refuses a policy that grants and denies one path, and answers anything
else ``-32601``.

Each step is a method a defect overrides to plant its one mistake.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

__all__ = ["CHANNELS", "RawConnector", "RpcFailure"]

CHANNELS = [
    {"id": "raw:#one", "type": "raw", "label": "#one", "direction": "bidirectional"},
    {"id": "raw:#two", "type": "raw", "label": "#two", "direction": "bidirectional"},
]

LEAVES = ("register", "lifecycle", "publish", "incoming", "streaming", "acknowledge", "typing")
ADVERTISED = [f"channels.{leaf}" for leaf in LEAVES]
"""The capability paths the manifest advertises (``"channels": true``)."""

GATES = {
    "channels/publish": "channels.publish",
    "channels/open": "channels.lifecycle",
    "channels/close": "channels.lifecycle",
    "channels/list": "channels.register",
    "channels/acknowledge": "channels.acknowledge",
    "channels/typing": "channels.typing",
    "channels/outgoing/chunk": "channels.streaming",
    "channels/outgoing/complete": "channels.streaming",
}


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


def now() -> str:
    """The current time as ISO 8601 with ``Z``."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def text_of(params: dict[str, Any]) -> str:
    """The text blocks of ``params["content"]`` joined."""
    content = params.get("content")
    blocks = content if isinstance(content, list) else []
    return "".join(b.get("text", "") for b in blocks if isinstance(b, dict))


class RawConnector:
    """A small, conforming MCPL server over stdio."""

    def __init__(self) -> None:
        self.grant: list[str] = []
        self.ready = False
        self.channels: dict[str, dict[str, Any]] = {}
        self.ids = itertools.count(1)
        self.counter = itertools.count(1)
        self.asked: dict[str, str] = {}  # request id -> method, for the answers we await
        self.sent_descriptors: list[dict[str, Any]] = []
        self.registered = False
        self.later: list[Callable[[], None]] = []  # run once the current answer is written
        self.writer: asyncio.StreamWriter | None = None

    # -- the handshake and the policy ------------------------------------------------------

    def manifest(self) -> dict[str, Any]:
        """The ``experimental.mcpl`` object."""
        return {"version": "0.5", "channels": True, "featureSets": {}}

    def capabilities(self) -> dict[str, Any]:
        """The MCP ``capabilities`` of the ``initialize`` result."""
        return {"experimental": {"mcpl": self.manifest()}}

    async def on_initialized(self) -> None:
        """The host sent ``notifications/initialized``; a conforming server waits."""

    def on_unparsable(self, line: bytes) -> None:
        """A line that is not JSON: answer a parse error and carry on."""
        self.send({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse"}})

    def accept_policy(self, params: dict[str, Any]) -> dict[str, Any]:
        """The policy Request: take the grant (absent means nothing) and return the receipt."""
        grant = params.get("effectiveCapabilities")
        grant = [p for p in grant if isinstance(p, str)] if isinstance(grant, list) else []
        denied = params.get("deniedCapabilities")
        if isinstance(denied, list) and set(grant) & set(denied):
            self.grant = []  # a malformed policy: refuse it and hold nothing
            raise RpcFailure(-32602, "Malformed policy")
        self.grant = grant
        return self.receipt()

    def receipt(self) -> dict[str, Any]:
        """``accepted``, plus ``mode: "degraded"`` naming each declared set the grant cuts."""
        sets = self.manifest().get("featureSets")
        if isinstance(sets, list):  # the 0.4 array of records (S-01's failure, not this one's)
            sets = {entry.get("name"): entry for entry in sets if isinstance(entry, dict)}
        unavailable = []
        for name, declared in sets.items() if isinstance(sets, dict) else ():
            uses = declared.get("uses") if isinstance(declared, dict) else None
            if not isinstance(uses, list) or not set(uses) <= set(ADVERTISED):
                continue  # an invalid declaration degrades nothing: it never counted
            missing = [path for path in uses if not self.allows(path)]
            if missing:
                entry = {"featureSet": name, "missingCapabilities": missing, "effect": "off"}
                unavailable.append(entry)
        if not unavailable:
            return {"accepted": True}
        return {"accepted": True, "mode": "degraded", "unavailableFeatures": unavailable}

    def after_receipt(self) -> None:
        """The receipt is on the wire: the connection is ready; register the channels once."""
        self.ready = True
        if self.allows("channels.register") and not self.registered:
            self.registered = True
            self.register()

    # -- channels --------------------------------------------------------------------------

    def descriptors(self) -> list[dict[str, Any]]:
        """What ``channels/register`` carries."""
        return CHANNELS

    def register(self) -> None:
        """Send ``channels/register``; the answer goes to :meth:`keep_accepted`."""
        self.sent_descriptors = self.descriptors()
        self.request("channels/register", {"channels": self.sent_descriptors})

    def keep_accepted(self, results: list[Any]) -> None:
        """Keep the descriptors the itemized answer accepted, matched by id."""
        accepted = {r.get("id") for r in results if isinstance(r, dict) and r.get("accepted")}
        self.channels.update((d["id"], d) for d in self.sent_descriptors if d["id"] in accepted)

    def known(self, params: dict[str, Any]) -> dict[str, Any]:
        """The descriptor named by ``params["channelId"]``, or ``-32023``."""
        channel = params.get("channelId")
        if channel not in self.channels:
            raise RpcFailure(-32023, "Unknown channel", {"channelId": channel})
        return self.channels[channel]

    def publish(self, params: dict[str, Any]) -> dict[str, Any]:
        self.known(params)
        message_id = f"raw-m-{next(self.counter)}"
        text = text_of(params)
        if "?" in text:
            channel = params["channelId"]
            self.later.append(lambda: self.say(channel, f"Echo heard {message_id}: {text}"))
        return {"delivered": True, "messageId": message_id}

    def open(self, params: dict[str, Any]) -> dict[str, Any]:
        return {"channel": self.known(params)}

    def close(self, params: dict[str, Any]) -> dict[str, Any]:
        self.known(params)
        return {"closed": True}

    def acknowledge(self, params: dict[str, Any]) -> dict[str, Any]:
        self.known(params)
        return {"acknowledged": True}

    def typing(self, params: dict[str, Any]) -> dict[str, Any]:
        self.known(params)
        return {}

    def chunk(self, params: dict[str, Any]) -> dict[str, Any]:
        """Streamed text is advisory: a conforming server never posts it."""
        self.known(params)
        return {}

    def complete(self, params: dict[str, Any]) -> dict[str, Any]:
        """Advisory too: only ``channels/publish`` delivers."""
        self.known(params)
        return {}

    def message(self, channel: str, text: str, **extra: Any) -> dict[str, Any]:
        """One ``channels/incoming`` message."""
        return {
            "channelId": channel,
            "messageId": f"raw-in-{next(self.counter)}",
            "author": {"id": "echo", "name": "Echo"},
            "timestamp": now(),
            "content": [{"type": "text", "text": text}],
            "tags": ["raw:echo"],
            **extra,
        }

    def say(self, channel: str, text: str, **extra: Any) -> None:
        """Report a message in ``channel`` to the host, when ready and granted."""
        if self.ready and self.allows("channels.incoming") and channel in self.channels:
            self.request("channels/incoming", {"messages": [self.message(channel, text, **extra)]})

    # -- dispatch --------------------------------------------------------------------------

    def allows(self, path: str) -> bool:
        return any(_matches(pattern, path) for pattern in self.grant)

    def gate(self, method: str) -> None:
        """``-32002`` unless the method's gate is granted."""
        if not self.allows(GATES[method]):
            raise RpcFailure(-32002, "Capability denied", {"capability": GATES[method]})

    def answer(self, method: str, params: dict[str, Any]) -> Any:
        if method == "initialize":
            return {
                "protocolVersion": params.get("protocolVersion", "2025-06-18"),
                "capabilities": self.capabilities(),
                "serverInfo": {"name": "raw-defect", "version": "0.1.0"},
            }
        if method == "ping":
            return {}
        if method == "mcpl/manifest":
            return self.manifest()
        if method == "featureSets/update":
            return self.accept_policy(params)
        if method not in GATES:
            raise RpcFailure(-32601, "Method not found")
        self.gate(method)
        if method == "channels/list":
            return {"channels": list(self.channels.values())}
        handler = getattr(self, method.rsplit("/", 1)[1])
        return handler(params)

    def notified(self, method: str, params: dict[str, Any]) -> None:
        if method == "notifications/initialized":
            return
        if method in GATES and method not in ("channels/open", "channels/close"):
            try:
                self.gate(method)
                getattr(self, method.rsplit("/", 1)[1])(params)
            except RpcFailure:
                pass  # a refused Notification cannot be answered

    def answered(self, method: str, message: dict[str, Any]) -> None:
        """The host answered one of our requests."""
        result = message.get("result")
        if method == "channels/register" and isinstance(result, dict):
            results = result.get("results")
            self.keep_accepted(results if isinstance(results, list) else [])

    def request(self, method: str, params: dict[str, Any]) -> None:
        request_id = f"raw-{next(self.ids)}"
        self.asked[request_id] = method
        self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})

    def respond(self, request_id: Any, body: dict[str, Any]) -> None:
        """Send the answer to the request ``request_id``."""
        self.send({"jsonrpc": "2.0", "id": request_id, **body})

    def send(self, message: dict[str, Any]) -> None:
        assert self.writer is not None
        self.writer.write(json.dumps(message).encode() + b"\n")

    async def handle(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        if not isinstance(method, str):
            asked = self.asked.pop(str(message.get("id")), None)
            if asked is not None:
                self.answered(asked, message)
            return
        params = message.get("params")
        params = params if isinstance(params, dict) else {}
        if "id" not in message:
            if method == "notifications/initialized":
                await self.on_initialized()
            self.notified(method, params)
            self.run_later()
            return
        try:
            body: dict[str, Any] = {"result": self.answer(method, params)}
        except RpcFailure as failure:
            body = {"error": failure.error}
        self.respond(message["id"], body)
        if method == "featureSets/update" and "result" in body:
            self.after_receipt()
        self.run_later()

    def run_later(self) -> None:
        later, self.later = self.later, []
        for step in later:
            step()

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


if __name__ == "__main__":
    RawConnector().main()
