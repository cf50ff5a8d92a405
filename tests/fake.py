"""A scripted connector for host tests: a real transport Peer on the far end of a memory link."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from switchboard.app.board import Switchboard
from switchboard.config import AgentConfig, AgentEntry, Config, ConnectorConfig
from switchboard.connections.session import SessionState
from switchboard.events import HostEvent, LifecycleStep
from switchboard.store.sqlite import DecisionLog
from switchboard.transport import (
    METHOD_NOT_FOUND,
    Deferred,
    Peer,
    RpcError,
    memory_link_pair,
)
from tests.helpers import Recorder, open_decision_log, open_message_store, store_at

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
    tmp_path: Path,
    fake: FakeConnector,
    *,
    recorder: Recorder | None = None,
    decisions: DecisionLog | None = None,
    agent: AgentConfig | None = None,
    prepare: Callable[[Switchboard], None] | None = None,
    **config: Any,
) -> AsyncIterator[Switchboard]:
    """A Switchboard serving ``fake`` (server id ``s1``) over an in-memory link.

    ``agent`` is the ``[agent]`` config (home channel, prose mode); ``prepare`` is called with
    the board before the connector is served.

    With ``decisions`` (a log the caller opened and closes), the board records its decisions
    there and restores from it before serving.
    """
    config.setdefault("command", ["unused"])
    cc = ConnectorConfig(id="s1", **config)
    place = store_at(tmp_path / "host.sqlite")
    store = await open_message_store(place)
    board = Switchboard(
        Config(connectors=[cc], store=place, agent=agent or AgentConfig()),
        store,
        listener=recorder or Recorder(),
        decisions=decisions,
    )
    if decisions is not None:
        await board.restore()
    if prepare is not None:
        prepare(board)
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


@asynccontextmanager
async def board_of(
    tmp_path: Path,
    fakes: dict[str, FakeConnector],
    *,
    agent: AgentConfig | None = None,
    agents: list[AgentEntry] | None = None,
    recorder: Recorder | None = None,
) -> AsyncIterator[Switchboard]:
    """A Switchboard serving each fake under its server id (the dict key), all ready.

    ``agent`` is the ``[agent]`` config (home channel, prose mode), ``agents`` the
    ``[[agents]]`` tables when given. End one server's
    connection with :func:`drop_server`.
    """
    connectors = [ConnectorConfig(id=sid, command=["unused"]) for sid in fakes]
    place = store_at(tmp_path / "host.sqlite")
    store = await open_message_store(place)
    config = Config(
        connectors=connectors,
        store=place,
        agent=agent or AgentConfig(),
        agents=agents or [],
    )
    board = Switchboard(config, store, listener=recorder or Recorder())
    try:
        async with anyio.create_task_group() as tg:
            for cc in connectors:
                fake = fakes[cc.id]
                host_link, connector_link = memory_link_pair()
                fake.peer = Peer(
                    connector_link,
                    on_request=fake.on_request,
                    on_notification=fake.on_notification,
                    name=f"fake-{cc.id}",
                )
                tg.start_soon(fake.peer.run)
                tg.start_soon(board.serve_link, cc, host_link)
            with anyio.fail_after(10):
                for sid in fakes:
                    while sid not in board.sessions:
                        await anyio.lowlevel.checkpoint()
                    await board.sessions[sid].wait_ready()
            yield board
            tg.cancel_scope.cancel()
    finally:
        await store.aclose()


async def drop_server(board: Switchboard, fake: FakeConnector, server_id: str) -> None:
    """End ``server_id``'s connection and wait until the host dropped its channels."""
    assert fake.peer is not None
    await fake.peer.aclose()
    with anyio.fail_after(10):
        while server_id in board.registry.servers() or (
            board.sessions[server_id].state is not SessionState.CLOSED
        ):
            await anyio.lowlevel.checkpoint()


# -- presence (typing, streams): a stepped timer and waits on what a fake was sent ------------


class Ticker:
    """A sleep function that returns only when the test calls :meth:`tick`: time is stepped."""

    def __init__(self) -> None:
        self._tick = anyio.Event()
        self.sleeping = 0  # timers asleep on the current tick

    async def sleep(self, seconds: float) -> None:
        tick = self._tick
        self.sleeping += 1
        try:
            await tick.wait()
        finally:
            if self._tick is tick:  # cancelled before its tick came
                self.sleeping -= 1

    async def tick(self, sleepers: int = 1) -> None:
        """Wait until ``sleepers`` timers sleep on this tick, then wake each of them once."""
        with anyio.fail_after(5):
            while self.sleeping < sleepers:
                await anyio.lowlevel.checkpoint()
        tick, self._tick = self._tick, anyio.Event()
        self.sleeping = 0
        tick.set()


@asynccontextmanager
async def typing_running(board: Switchboard, ticker: Ticker) -> AsyncIterator[Ticker]:
    """Run ``board``'s typing keeper with ``ticker`` as its clock (the test steps time)."""
    board.typing.sleep = ticker.sleep
    async with anyio.create_task_group() as tg:
        tg.start_soon(board.typing.run)
        with anyio.fail_after(5):
            while not board.typing.running:
                await anyio.lowlevel.checkpoint()
        yield ticker
        tg.cancel_scope.cancel()


def notes(fake: FakeConnector, method: str) -> list[Any]:
    """The params of every ``method`` notification ``fake`` received, in order."""
    return [p for m, p in fake.notifications if m == method]


async def noted(fake: FakeConnector, method: str, count: int) -> list[Any]:
    """Wait until ``fake`` received ``count`` notifications of ``method``; return them all."""
    with anyio.fail_after(5):
        while len(got := notes(fake, method)) < count:
            await anyio.lowlevel.checkpoint()
    return got


async def barrier(board: Switchboard, fake: FakeConnector, server_id: str = "s1") -> None:
    """Return once ``fake`` received everything the host sent it before this call."""
    peer = board.sessions[server_id].peer
    assert peer is not None
    before = len(notes(fake, "test/barrier"))
    await peer.notify("test/barrier", {})
    await noted(fake, "test/barrier", before + 1)


# -- tune-outs (H2b): a board with a durable decision log, restartable on the same files ------


@asynccontextmanager
async def board_with_log(
    tmp_path: Path,
    fake: FakeConnector,
    *,
    clock: Callable[[], float] | None = None,
    recorder: Recorder | None = None,
    **config: Any,
) -> AsyncIterator[Switchboard]:
    """Like :func:`board_with`, with a decision log in the same file, restored before the
    connector is served. Calling it again on the same ``tmp_path`` (with a new fake) is a
    restart of Switchboard."""
    import time  # local imports: this region belongs to the tune-out tests

    config.setdefault("command", ["unused"])
    cc = ConnectorConfig(id="s1", **config)
    place = store_at(tmp_path / "host.sqlite")
    store = await open_message_store(place)
    decisions = await open_decision_log(place)
    board = Switchboard(
        Config(connectors=[cc], store=place),
        store,
        listener=recorder or Recorder(),
        clock=clock or time.time,
        decisions=decisions,
    )
    try:
        await board.restore()
        host_link, connector_link = memory_link_pair()
        fake.peer = Peer(
            connector_link,
            on_request=fake.on_request,
            on_notification=fake.on_notification,
            name="fake",
        )
        async with anyio.create_task_group() as tg:
            tg.start_soon(fake.peer.run)
            tg.start_soon(board.serve_link, cc, host_link)
            with anyio.fail_after(10):
                while "s1" not in board.sessions:
                    await anyio.lowlevel.checkpoint()
                await board.sessions["s1"].wait_ready()
            yield board
            tg.cancel_scope.cancel()
    finally:
        await decisions.aclose()
        await store.aclose()


class ManualClock:
    """A clock the test moves by hand (``clock.now += 60``)."""

    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def addressed_message(cid: str, mid: str) -> dict[str, Any]:
    """A message that addresses the agent (tag ``chat:mention``, which implies addressed)."""
    return {**message(cid, mid, f"@agent {mid}"), "tags": ["chat:mention"]}


async def send_accepted(fake: FakeConnector, *messages: dict[str, Any]) -> None:
    """Send ``messages`` in one ``channels/incoming`` and check every one was accepted."""
    answer = await fake.call("channels/incoming", {"messages": list(messages)})
    assert all(r["accepted"] for r in answer["results"]), answer


async def register_admitted(board: Switchboard, fake: FakeConnector, *ids: str) -> None:
    """Register channels ``ids`` and wait until the host gave each its initial record."""
    from switchboard.channels import ChannelRef  # local: this region is the tune-out tests'

    await fake.call("channels/register", {"channels": [descriptor(i) for i in ids]})
    with anyio.fail_after(5):
        while any(board.lifecycle.record(ChannelRef("s1", i)) is None for i in ids):
            await anyio.lowlevel.checkpoint()


# -- lifecycle (H2a): a fake that answers channels/open, channels/close, channels/acknowledge ---


@dataclass
class LifecycleScript:
    """How a fake answers lifecycle requests; install it with :meth:`install`.

    Attributes:
        answer_as: channel id -> the id an open is answered for (a substituted answer).
        refuse_open: ids whose open is refused with -32024.
        refuse_close: ids whose close is refused with -32023.
        hold_open: id -> an event the open's answer waits for (a request in flight).
        before_answer: awaited with (method, id) before an open or close is answered.
        history: the ``history`` an open answers with when the open asks for it.
        acknowledged: the ``acknowledged`` of an acknowledge answer.
        declare: id -> fields an open's answer declares over the plain descriptor.
        opened: ids of every open received, in order (``closed`` likewise).
    """

    answer_as: dict[str, Any] = field(default_factory=dict)
    refuse_open: set[str] = field(default_factory=set)
    refuse_close: set[str] = field(default_factory=set)
    hold_open: dict[str, anyio.Event] = field(default_factory=dict)
    history: list[dict[str, Any]] = field(default_factory=list)
    acknowledged: bool = True
    declare: dict[str, dict[str, Any]] = field(default_factory=dict)
    before_answer: Callable[[str, str], Awaitable[None]] | None = None
    opened: list[str] = field(default_factory=list)
    closed: list[str] = field(default_factory=list)

    def install(self, fake: FakeConnector) -> FakeConnector:
        fake.extra["channels/open"] = self._open
        fake.extra["channels/close"] = self._close
        fake.extra["channels/acknowledge"] = self._acknowledge
        return fake

    async def _open(self, method: str, params: Any) -> Any:
        cid = params["channelId"]
        self.opened.append(cid)
        held = self.hold_open.get(cid)
        if held is not None:  # answer later, without holding up the fake's other requests
            return Deferred(self._answer_open(method, params, held))
        return await self._answer_open(method, params, None)

    async def _answer_open(self, method: str, params: Any, held: anyio.Event | None) -> Any:
        cid = params["channelId"]
        if held is not None:
            await held.wait()
        if self.before_answer is not None:
            await self.before_answer(method, cid)
        if cid in self.refuse_open:
            raise RpcError(-32024, "cannot open")
        answered = self.answer_as.get(cid, cid)
        result: dict[str, Any] = {"channel": descriptor(answered, **self.declare.get(cid, {}))}
        if "history" in params:
            limit = params["history"]["limit"]
            result["history"] = self.history[-limit:]
            result["historyTruncated"] = len(self.history) > limit
        if result["channel"]["id"] is None:
            result["channel"] = {"type": "test"}
        return result

    async def _close(self, method: str, params: Any) -> Any:
        cid = params["channelId"]
        self.closed.append(cid)
        if self.before_answer is not None:
            await self.before_answer(method, cid)
        if cid in self.refuse_close:
            raise RpcError(-32023, "unknown channel")
        return {"closed": True}

    async def _acknowledge(self, method: str, params: Any) -> Any:
        if not self.acknowledged:
            return {"acknowledged": False, "reason": "reactions are off here"}
        return {"acknowledged": True, "representation": f"reacted {params.get('value')}"}


def lifecycle_event(name: str) -> Callable[[HostEvent], bool]:
    """A :meth:`Recorder.wait_for` predicate for the lifecycle step ``name``."""
    return lambda e: isinstance(e, LifecycleStep) and e.kind == name


def lifecycle_steps(recorder: Recorder, name: str) -> list[LifecycleStep]:
    """The lifecycle steps ``name`` the recorder has seen, in order."""
    return [e for e in recorder.of(LifecycleStep) if e.kind == name]


async def register_settled(
    fake: FakeConnector, recorder: Recorder, channels: list[dict[str, Any]]
) -> Any:
    """Register ``channels`` and wait until the host admitted and reconciled them."""
    after = len(recorder.events)
    answer = await fake.call("channels/register", {"channels": channels})
    await recorder.wait_for(
        lambda e: isinstance(e, LifecycleStep) and e.kind in ("reconciled", "reconcile-skipped"),
        after=after,
        within=10,
    )
    return answer
