"""A scripted connector for host tests: a real transport Peer on the far end of a memory link."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from switchboard.config import Config, ConnectorConfig, StoreConfig
from switchboard.host import Switchboard
from switchboard.store import MessageStore
from switchboard.transport import METHOD_NOT_FOUND, Peer, RpcError, memory_link_pair
from tests.helpers import Recorder

ALL_CHANNELS = {
    "register": True,
    "publish": True,
    "incoming": True,
    "lifecycle": True,
    "streaming": True,
    "acknowledge": True,
    "typing": True,
}


def descriptor(cid: str, direction: str = "bidirectional", **extra: Any) -> dict[str, Any]:
    return {"id": cid, "type": "test", "label": f"#{cid}", "direction": direction, **extra}


def message(cid: str, mid: str, text: str = "hi") -> dict[str, Any]:
    return {
        "channelId": cid,
        "messageId": mid,
        "author": {"id": "u1", "name": "Ann"},
        "timestamp": "2026-11-29T12:00:00Z",
        "content": [{"type": "text", "text": text}],
    }


Handler = Callable[[str, Any], Awaitable[Any]]


@dataclass
class FakeConnector:
    """Answers the handshake like a 0.5 connector; records every request it gets."""

    mcpl: dict[str, Any] | None = field(
        default_factory=lambda: {
            "version": "0.5",
            "channels": dict(ALL_CHANNELS),
            "pushEvents": True,
        }
    )
    policy: str = "receipt"  # or "method-not-found" or "refuse"
    requests: list[tuple[str, Any]] = field(default_factory=list)
    notifications: list[tuple[str, Any]] = field(default_factory=list)
    extra: dict[str, Handler] = field(default_factory=dict)
    peer: Peer | None = None

    async def on_request(self, method: str, params: Any) -> Any:
        self.requests.append((method, params))
        if method in self.extra:
            return await self.extra[method](method, params)
        if method == "initialize":
            caps: dict[str, Any] = {}
            if self.mcpl is not None:
                caps["experimental"] = {"mcpl": self.mcpl}
            return {
                "protocolVersion": params["protocolVersion"],
                "serverInfo": {"name": "fake", "version": "0"},
                "capabilities": caps,
            }
        if method == "featureSets/update":
            if self.policy == "method-not-found":
                raise RpcError(METHOD_NOT_FOUND, "Method not found")
            if self.policy == "refuse":
                return {"accepted": False, "fallback": "mcp-only", "reason": "no"}
            return {"accepted": True}
        if method == "channels/publish":
            return {"delivered": True, "messageId": f"msg-{len(self.requests)}"}
        raise RpcError(METHOD_NOT_FOUND, "Method not found")

    async def on_notification(self, method: str, params: Any) -> None:
        self.notifications.append((method, params))

    def got(self, method: str) -> list[Any]:
        return [p for m, p in self.requests if m == method]

    async def call(self, method: str, params: Any) -> Any:
        assert self.peer is not None
        return await self.peer.request(method, params)


@asynccontextmanager
async def board_with(
    tmp_path: Path, fake: FakeConnector, *, recorder: Recorder | None = None, **config: Any
) -> AsyncIterator[Switchboard]:
    """A Switchboard serving ``fake`` (server id ``s1``) over an in-memory link."""
    config.setdefault("command", ["unused"])
    cc = ConnectorConfig(id="s1", **config)
    store = await MessageStore.open(tmp_path / "host.sqlite")
    board = Switchboard(
        Config(connectors=[cc], store=StoreConfig(path=str(tmp_path / "host.sqlite"))),
        store,
        observer=recorder or Recorder(),
    )
    host_link, connector_link = memory_link_pair()
    peer = Peer(
        connector_link,
        on_request=fake.on_request,
        on_notification=fake.on_notification,
        name="fake",
    )
    fake.peer = peer
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(peer.run)
            tg.start_soon(board.serve_link, cc, host_link)
            with anyio.fail_after(10):
                while "s1" not in board.sessions:
                    await anyio.lowlevel.checkpoint()
                if fake.mcpl is not None and fake.policy != "refuse":
                    await board.sessions["s1"].wait_ready()
            yield board
            tg.cancel_scope.cancel()
    finally:
        await store.aclose()
