"""A scripted MCPL host for the connector tests, written on the transport's Peer.

It answers what a connector sends (register/changed itemized, incoming accepted, push
accepted), records every inbound request in a stream the test reads with a deadline, and
records every frame it receives, in order, so tests can check wire ordering (the receipt
before any privileged request). It is test code: it checks nothing itself.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Collection, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Final

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from switchboard.connector import Connector, ConnectorError
from switchboard.protocol import (
    CAPABILITY_PATHS,
    AcknowledgeParams,
    AcknowledgeResult,
    CloseParams,
    OutgoingChunkParams,
    OutgoingCompleteParams,
    PublishParams,
    TypingParams,
    host_advertisement,
    read_error,
)
from switchboard.transport import Link, Peer, memory_link_pair, method_not_found

__all__ = [
    "ALL_PATHS",
    "GENERAL",
    "WAIT",
    "HostRequest",
    "RecordingConnector",
    "RecordingLink",
    "ScriptedHost",
    "channel",
    "connected",
]

ALL_PATHS: Final = sorted(CAPABILITY_PATHS)
WAIT: Final = 5.0


def channel(channel_id: str, raw_id: str = "c-1") -> dict[str, Any]:
    """A valid bidirectional descriptor."""
    return {
        "id": channel_id,
        "type": "test",
        "label": f"{channel_id} (Test)",
        "direction": "bidirectional",
        "address": {"channelId": raw_id},
    }


GENERAL: Final = channel("test:#general", "c-100")


class RecordingConnector(Connector):
    """A connector whose hooks record what reached them; registers ``channels`` when ready."""

    def __init__(self, channels: Sequence[dict[str, Any]] = (GENERAL,), **kwargs: Any) -> None:
        super().__init__("recorder", "1.2.3", **kwargs)
        self.to_register = list(channels)
        self.calls: list[tuple[str, Any]] = []
        self.ready_error: ConnectorError | None = None
        self.hook_ran = anyio.Event()

    async def on_ready(self) -> None:
        try:
            if self.to_register:
                await self.register(self.to_register)
        except ConnectorError as exc:
            self.ready_error = exc
        finally:
            self.hook_ran.set()

    async def on_publish(self, params: PublishParams) -> str:
        self.calls.append(("publish", params))
        return f"m-{len(self.calls)}"

    async def on_close(self, params: CloseParams) -> None:
        self.calls.append(("close", params))

    async def on_typing(self, params: TypingParams) -> None:
        self.calls.append(("typing", params))

    async def on_acknowledge(self, params: AcknowledgeParams) -> AcknowledgeResult:
        self.calls.append(("acknowledge", params))
        return AcknowledgeResult(acknowledged=True, representation="reaction:eyes")

    async def on_chunk(self, params: OutgoingChunkParams) -> None:
        self.calls.append(("chunk", params))

    async def on_complete(self, params: OutgoingCompleteParams) -> None:
        self.calls.append(("complete", params))

    def names(self) -> list[str]:
        """Which hooks ran, in order."""
        return [name for name, _ in self.calls]


@dataclass(frozen=True, slots=True)
class HostRequest:
    """A request or notification the connector sent to the host."""

    method: str
    params: Any
    is_request: bool


class RecordingLink:
    """A link that keeps every received frame, parsed, in arrival order."""

    def __init__(self, link: Link) -> None:
        self._link = link
        self.received: list[Any] = []

    @property
    def description(self) -> str:
        return self._link.description

    async def send(self, frame: bytes) -> None:
        await self._link.send(frame)

    async def receive(self) -> bytes:
        frame = await self._link.receive()
        try:
            self.received.append(json.loads(frame))
        except ValueError:
            self.received.append(frame)
        return frame

    async def aclose(self) -> None:
        await self._link.aclose()

    def methods(self) -> list[str]:
        """Methods of the requests/notifications received so far, in order."""
        return [f["method"] for f in self.received if isinstance(f, dict) and "method" in f]

    def index_of_result(self, key: str) -> int:
        """Position of the first response whose result has ``key``."""
        for index, frame in enumerate(self.received):
            result = frame.get("result") if isinstance(frame, dict) else None
            if isinstance(result, dict) and key in result:
                return index
        raise AssertionError(f"no response with {key!r} received")

    def index_of_method(self, method: str) -> int:
        """Position of the first request/notification of ``method``."""
        for index, frame in enumerate(self.received):
            if isinstance(frame, dict) and frame.get("method") == method:
                return index
        raise AssertionError(f"no {method} received")


@dataclass
class ScriptedHost:
    """The host end of a connection; drive it from the test."""

    link: Link
    reject: Collection[str] = ()
    peer: Peer = field(init=False)
    recorder: RecordingLink = field(init=False)
    connector_done: anyio.Event = field(init=False)
    _tx: MemoryObjectSendStream[HostRequest] = field(init=False)
    _rx: MemoryObjectReceiveStream[HostRequest] = field(init=False)

    def __post_init__(self) -> None:
        self.recorder = RecordingLink(self.link)
        self.peer = Peer(
            self.recorder,
            on_request=self._on_request,
            on_notification=self._on_notification,
            name="test-host",
            read_error=read_error,
        )
        self._tx, self._rx = anyio.create_memory_object_stream[HostRequest](1000)
        self.connector_done = anyio.Event()

    def _itemized(self, descriptors: Sequence[Any]) -> dict[str, Any]:
        results = []
        for descriptor in descriptors:
            if descriptor["id"] in self.reject:
                results.append(
                    {"id": descriptor["id"], "accepted": False, "reason": "capability_denied"}
                )
            else:
                results.append({"id": descriptor["id"], "accepted": True})
        return {"results": results}

    async def _on_request(self, method: str, params: Any) -> Any:
        self._tx.send_nowait(HostRequest(method, params, True))
        if method == "channels/register":
            return self._itemized(params["channels"])
        if method == "channels/changed":
            return self._itemized([*params.get("added", ()), *params.get("updated", ())])
        if method == "channels/incoming":
            return {
                "results": [
                    {"messageId": m["messageId"], "accepted": True, "conversationId": "conv-1"}
                    for m in params["messages"]
                ]
            }
        if method == "push/event":
            return {"accepted": True}
        raise method_not_found(method)

    async def _on_notification(self, method: str, params: Any) -> None:
        self._tx.send_nowait(HostRequest(method, params, False))

    async def initialize(self) -> dict[str, Any]:
        """``initialize`` then ``notifications/initialized``; returns the result."""
        result = await self.peer.request(
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {"experimental": {"mcpl": host_advertisement()}},
                "clientInfo": {"name": "test-host", "version": "0"},
            },
        )
        await self.peer.notify("notifications/initialized")
        assert isinstance(result, dict)
        return result

    async def grant(self, paths: Sequence[str] | None = ALL_PATHS, **extra: Any) -> Any:
        """Send the policy Request (``paths=None`` leaves ``effectiveCapabilities`` out)."""
        params: dict[str, Any] = dict(extra)
        if paths is not None:
            params["effectiveCapabilities"] = list(paths)
        return await self.peer.request("featureSets/update", params)

    async def handshake(self, paths: Sequence[str] | None = ALL_PATHS) -> Any:
        """initialize + initialized + the policy Request; returns the receipt."""
        await self.initialize()
        return await self.grant(paths)

    async def next(self, method: str | None = None) -> HostRequest:
        """The next thing the connector sent (optionally asserting its method)."""
        with anyio.fail_after(WAIT):
            item = await self._rx.receive()
        if method is not None:
            assert item.method == method, f"expected {method}, got {item.method}: {item.params}"
        return item

    def pending(self) -> list[HostRequest]:
        """Everything received and not yet read by ``next``, without waiting."""
        items = []
        while True:
            try:
                items.append(self._rx.receive_nowait())
            except anyio.WouldBlock:
                return items

    async def barrier(self) -> None:
        """Round-trip a ping: everything the host sent before has been handled."""
        with anyio.fail_after(WAIT):
            assert await self.peer.request("ping") == {}


@asynccontextmanager
async def connected(
    connector: Connector, *, reject: Collection[str] = ()
) -> AsyncIterator[ScriptedHost]:
    """Serve ``connector`` to a scripted host over an in-memory link pair."""
    host_end, connector_end = memory_link_pair()
    host = ScriptedHost(host_end, reject=reject)

    async def serve() -> None:
        try:
            await connector.serve(connector_end)
        finally:
            host.connector_done.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(serve)
        tg.start_soon(host.peer.run)
        try:
            yield host
        finally:
            tg.cancel_scope.cancel()
