"""NATS core between instances: head hints, invalidations, and requests to a connector's owner.

The owner side is a real host running the echo connector as a subprocess; the other side is a
:class:`RemoteOwner` on a second NATS connection, as another instance has it.
"""

from __future__ import annotations

import sys
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, cast

import anyio
import orjson
import pytest
from nats.aio.msg import Msg
from nats.errors import TimeoutError as NatsTimeout

from switchboard.app.board import Switchboard
from switchboard.cluster.bus import HEAD_COALESCE, ClusterBus
from switchboard.cluster.rpc import NOTICE_WAIT, OwnerService, RemoteOwner, describe
from switchboard.connections.owner import ConnectorOwner, SessionState
from switchboard.events import ChannelsRegistered
from switchboard.refusals import RefusalKind
from switchboard.refusals.outcome import PublishStatus
from switchboard.transport.errors import LinkClosedError, RequestTimeoutError
from tests.cluster.support import figure
from tests.helpers import Recorder, connector, running_board

pytestmark = pytest.mark.anyio

ECHO = str(Path(__file__).parents[1] / "integration" / "echo_connector.py")


@asynccontextmanager
async def bus(
    url: str, prefix: str, me: str, coalesce: float = HEAD_COALESCE
) -> AsyncIterator[ClusterBus]:
    b = ClusterBus(url, prefix, me, coalesce)
    async with anyio.create_task_group() as group:
        await group.start(b.run)
        with anyio.fail_after(10):
            await b.wait_connected()
        try:
            yield b
        finally:
            group.cancel_scope.cancel()


@asynccontextmanager
async def echo_owner(
    tmp_path: Path, nats_url: str, prefix: str
) -> AsyncIterator[tuple[Switchboard, OwnerService]]:
    recorder = Recorder()
    echo = connector("echo", [sys.executable, ECHO], publish_timeout=1.0)
    async with (
        running_board(tmp_path, echo, recorder=recorder) as board,
        bus(nats_url, prefix, "owner") as owner_bus,
        anyio.create_task_group() as group,
    ):
        await recorder.wait_kind(ChannelsRegistered)
        service = OwnerService(owner_bus, board.sessions.get)
        await group.start(service.run)
        await service.serve("echo")
        try:
            yield board, service
        finally:
            group.cancel_scope.cancel()


@asynccontextmanager
async def stuck_owner(url: str, prefix: str) -> AsyncIterator[tuple[ClusterBus, list[bytes]]]:
    """An owner ``stuck-owner`` of ``echo`` that takes every request and never answers: the bus
    of another instance (``agent-side``), and the requests that reached the owner."""
    arrivals: list[bytes] = []

    async def never_answers(msg: Msg) -> None:
        arrivals.append(msg.data)

    async with (
        bus(url, prefix, "stuck-owner") as owner_bus,
        bus(url, prefix, "agent-side") as agent_bus,
    ):
        await owner_bus.subscribe(owner_bus.subject("rpc", "echo", "*"), never_answers)
        if owner_bus._nc is not None:
            await owner_bus._nc.flush()
        yield agent_bus, arrivals


async def test_a_head_announced_by_one_instance_reaches_the_others_and_not_itself(
    nats_url: str, subject_prefix: str
) -> None:
    heard: dict[str, list[int]] = {"a": [], "b": []}
    arrived = anyio.Event()
    async with bus(nats_url, subject_prefix, "a") as a, bus(nats_url, subject_prefix, "b") as b:
        await a.follow_heads(heard["a"].append)

        def on_b(seq: int) -> None:
            heard["b"].append(seq)
            if seq == 7:
                arrived.set()

        await b.follow_heads(on_b)
        await a._nc.flush() if a._nc is not None else None  # subscriptions are in place
        await b._nc.flush() if b._nc is not None else None
        for seq in (3, 5, 7):
            a.announce_head(seq)
        with anyio.fail_after(5):
            await arrived.wait()
    assert heard["b"][-1] == 7
    assert heard["b"] == sorted(heard["b"])
    assert heard["a"] == []


async def test_the_commits_made_while_an_announcement_is_fresh_go_out_as_one_announcement(
    nats_url: str, subject_prefix: str
) -> None:
    heard: list[int] = []
    first, last = anyio.Event(), anyio.Event()

    def on_b(seq: int) -> None:
        heard.append(seq)
        if seq == 1:
            first.set()
        if seq == 10:
            last.set()

    async with (
        bus(nats_url, subject_prefix, "a", coalesce=1.0) as a,
        bus(nats_url, subject_prefix, "b") as b,
    ):
        await b.follow_heads(on_b)
        await b._nc.flush() if b._nc is not None else None  # the subscription is in place
        a.announce_head(1)  # a lone commit is announced at once
        with anyio.fail_after(5):
            await first.wait()
        for seq in range(2, 11):
            a.announce_head(seq)
            await anyio.lowlevel.checkpoint()  # the sender runs between commits
        with anyio.fail_after(10):
            await last.wait()
    # Before coalescing, each of the nine commits went out on its own.
    assert heard == [1, 10]
    assert a.stats.heads_sent == 2


async def test_an_invalidation_names_the_table_that_changed(
    nats_url: str, subject_prefix: str
) -> None:
    names: list[str] = []
    got = anyio.Event()
    async with bus(nats_url, subject_prefix, "a") as a, bus(nats_url, subject_prefix, "b") as b:

        def heard(name: str) -> None:
            names.append(name)
            got.set()

        await b.follow_invalidations(heard)
        if b._nc is not None:
            await b._nc.flush()
        await a.announce_invalidation("directory")
        with anyio.fail_after(5):
            await got.wait()
    assert names == ["directory"]


async def test_a_publish_to_a_connector_owned_elsewhere_is_delivered_by_its_owner(
    tmp_path: Path, nats_url: str, subject_prefix: str
) -> None:
    async with (
        echo_owner(tmp_path, nats_url, subject_prefix) as (board, _),
        bus(nats_url, subject_prefix, "agent-side") as agent_bus,
    ):
        remote = RemoteOwner(board.config.connectors[0], agent_bus)
        remote.update("owner", describe(board.sessions["echo"]))
        assert remote.state is SessionState.READY
        assert remote.grant.allows("channels.publish")
        before = board.store.latest_seq
        started = anyio.current_time()
        outcome = await remote.publish("echo:room", [{"type": "text", "text": "hi"}], "")
        took = anyio.current_time() - started
        assert outcome.status is PublishStatus.DELIVERED, outcome
        assert str(outcome.message_id).startswith("echo-out-")
        assert outcome.server_id == "echo"
        figure(f"remote publish round trip {took * 1000:.1f} ms (NATS request to the owner)")
        # The echo came back in through the owner's connector and was stored there.
        assert await board.store.wait_for_new(before, timeout=10)
        assert agent_bus.stats.requests == 1


async def test_a_publish_nobody_serves_is_server_gone_and_nothing_is_sent(
    tmp_path: Path, nats_url: str, subject_prefix: str
) -> None:
    async with (
        echo_owner(tmp_path, nats_url, subject_prefix) as (board, service),
        bus(nats_url, subject_prefix, "agent-side") as agent_bus,
    ):
        await service.stop("echo")
        remote = RemoteOwner(board.config.connectors[0], agent_bus)
        remote.update("owner", describe(board.sessions["echo"]))
        before = board.store.latest_seq
        outcome = await remote.publish("echo:room", [{"type": "text", "text": "hi"}], "")
        assert outcome.status is PublishStatus.FAILED
        assert outcome.refusal is not None
        assert outcome.refusal.kind is RefusalKind.SERVER_GONE
        assert "nothing was sent" in (outcome.reason or "")
        with pytest.raises(LinkClosedError):
            await remote.open_channel({"channelId": "echo:room"})
        assert agent_bus.stats.no_responders == 2
        assert board.store.latest_seq == before, "the connector was asked anyway"


async def test_a_publish_while_nats_is_unreachable_is_server_gone_at_once(
    tmp_path: Path, subject_prefix: str
) -> None:
    unreachable = ClusterBus("nats://127.0.0.1:1", subject_prefix, "cut-off")
    async with anyio.create_task_group() as group:
        await group.start(unreachable.run)
        config = connector("echo", [sys.executable, ECHO])
        remote = RemoteOwner(config, unreachable)
        remote.update("owner", {"state": "ready", "connected": True, "grant": ["*"]})
        assert not remote.connected
        with anyio.fail_after(1):
            outcome = await remote.publish("echo:room", [{"type": "text", "text": "hi"}], "")
        group.cancel_scope.cancel()
    assert outcome.status is PublishStatus.FAILED
    assert outcome.refusal is not None
    assert outcome.refusal.kind is RefusalKind.SERVER_GONE
    assert unreachable.stats.refused_down == 1


async def test_a_publish_whose_owner_does_not_answer_is_unknown_and_not_retried(
    nats_url: str, subject_prefix: str
) -> None:
    async with stuck_owner(nats_url, subject_prefix) as (agent_bus, arrivals):
        config = connector("echo", [sys.executable, ECHO], publish_timeout=0.2)
        remote = RemoteOwner(config, agent_bus)
        remote.update("stuck-owner", {"state": "ready", "connected": True, "grant": ["*"]})
        outcome = await remote.publish("echo:room", [{"type": "text", "text": "hi"}], "")
    assert outcome.status is PublishStatus.UNKNOWN
    assert "may have been posted" in (outcome.reason or "")
    assert len(arrivals) == 1, "a publish was sent again"
    request = orjson.loads(arrivals[0])
    assert request["args"]["channel_id"] == "echo:room"


async def test_a_typing_notice_whose_owner_does_not_answer_gives_up_within_a_second(
    nats_url: str, subject_prefix: str
) -> None:
    async with stuck_owner(nats_url, subject_prefix) as (agent_bus, arrivals):
        # The default request_timeout (30 s) is what a request waits; a notice does not.
        remote = RemoteOwner(connector("echo", [sys.executable, ECHO]), agent_bus)
        remote.update("stuck-owner", {"state": "ready", "connected": True, "grant": ["*"]})
        started = time.monotonic()
        with pytest.raises(RequestTimeoutError):
            await remote.typing({"channelId": "echo:room"})
        took = time.monotonic() - started
    assert len(arrivals) == 1
    assert NOTICE_WAIT <= took < NOTICE_WAIT + 1.0, took


async def test_an_owner_drops_a_request_that_arrives_after_its_deadline(
    tmp_path: Path, nats_url: str, subject_prefix: str
) -> None:
    async with (
        echo_owner(tmp_path, nats_url, subject_prefix) as (board, service),
        bus(nats_url, subject_prefix, "agent-side") as agent_bus,
    ):
        late = orjson.dumps({"args": {"channel_id": "echo:room", "content": []}, "deadline": 1.0})
        assert agent_bus._nc is not None
        with pytest.raises(NatsTimeout):
            await agent_bus._nc.request(
                agent_bus.subject("rpc", "echo", "publish"), late, timeout=0.5
            )
        assert service.dropped_late == 1
        assert board.sessions["echo"].state is SessionState.READY


class _Witness:
    """The owner's real session, with a record of the notifications that reached it."""

    def __init__(self, session: ConnectorOwner) -> None:
        self._session = session
        self.heard: list[tuple[str, dict[str, Any]]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._session, name)

    async def typing(self, params: Mapping[str, Any]) -> None:
        self.heard.append(("typing", dict(params)))
        await self._session.typing(params)

    async def inference_phase(self, params: Mapping[str, Any]) -> None:
        self.heard.append(("inference_phase", dict(params)))
        await self._session.inference_phase(params)


async def test_typing_and_an_agents_turn_reach_the_connectors_owner_on_another_instance(
    tmp_path: Path, nats_url: str, subject_prefix: str
) -> None:
    recorder = Recorder()
    echo = connector("echo", [sys.executable, ECHO], publish_timeout=1.0)
    async with (
        running_board(tmp_path, echo, recorder=recorder) as board,
        bus(nats_url, subject_prefix, "owner") as owner_bus,
        bus(nats_url, subject_prefix, "agent-side") as agent_bus,
        anyio.create_task_group() as group,
    ):
        await recorder.wait_kind(ChannelsRegistered)
        witness = _Witness(board.sessions["echo"])
        service = OwnerService(owner_bus, lambda sid: cast(ConnectorOwner, witness))
        await group.start(service.run)
        await service.serve("echo")
        remote = RemoteOwner(board.config.connectors[0], agent_bus)
        remote.update("owner", describe(board.sessions["echo"]))
        phase = {"inferenceId": "turn-1", "phase": "started", "channelId": "echo:room"}
        with anyio.fail_after(10):
            await remote.typing({"channelId": "echo:room"})
            await remote.inference_phase(phase)
        group.cancel_scope.cancel()
    assert witness.heard == [
        ("typing", {"channelId": "echo:room"}),
        ("inference_phase", phase),
    ]
