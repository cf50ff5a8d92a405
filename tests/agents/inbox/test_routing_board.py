"""Routing through a running board: three agents, one connector, one store file.

The connector is a scripted one on the far end of an in-memory link (a real transport peer),
so incoming traffic takes the host's whole path: ``channels/incoming``, the store's commit,
``MessagesAccepted``. Each agent reads its own inbox through the board, and its tools' port
answers only with what is routed to it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from switchboard.agents.port.protocol import Arrival
from switchboard.agents.port.service import AgentService
from switchboard.app.board import Switchboard
from switchboard.channels import ChannelRef
from switchboard.config import AgentEntry, Config, ConnectorConfig, StoreConfig
from switchboard.protocol.channel_messages import ChannelDescriptor
from switchboard.store import StoredMessage
from switchboard.store.mailmark import MAIL_SERVER
from switchboard.store.sqlite import MessageStore
from switchboard.store.sqlite.leaves import ChannelLeaves
from switchboard.transport import Peer, memory_link_pair
from tests.fake import (
    FakeConnector,
    LifecycleScript,
    descriptor,
    message,
    register_settled,
    send_accepted,
)
from tests.helpers import Recorder

pytestmark = pytest.mark.anyio

AGENTS = [
    AgentEntry(handle="@resident", home="lobby", roles=["default_delivery"]),
    AgentEntry(handle="@researcher", home="lab", mentions=["<@42>"]),
    AgentEntry(handle="@worker"),
]
ROOMS = ["lobby", "lab", "random"]
LOBBY = ChannelRef("s1", "lobby")


def port(board: Switchboard, name: str) -> AgentService:
    made = board.agents.port(name)
    assert isinstance(made, AgentService)
    return made


@asynccontextmanager
async def three_agents(
    tmp_path: Path, fake: FakeConnector, recorder: Recorder
) -> AsyncIterator[Switchboard]:
    """A board serving ``fake`` as ``s1`` to the three agents of :data:`AGENTS`."""
    path = tmp_path / "host.sqlite"
    cc = ConnectorConfig(id="s1", command=["unused"])
    store = await MessageStore.open(path)
    leaves = ChannelLeaves.open(path)
    config = Config(connectors=[cc], store=StoreConfig(path=str(path)), agents=AGENTS)
    board = Switchboard(config, store, listener=recorder, leaves=leaves)
    host_link, connector_link = memory_link_pair()
    fake.peer = Peer(
        connector_link, on_request=fake.on_request, on_notification=fake.on_notification
    )
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(fake.peer.run)
            tg.start_soon(board.serve_link, cc, host_link)
            with anyio.fail_after(10):
                while "s1" not in board.sessions:
                    await anyio.lowlevel.checkpoint()
                await board.sessions["s1"].wait_ready()
            await register_settled(fake, recorder, [descriptor(r) for r in ROOMS])
            yield board
            tg.cancel_scope.cancel()
    finally:
        leaves.close()
        await store.aclose()


def said(messages: Sequence[StoredMessage]) -> list[str]:
    return [m.message_id for m in messages]


TRAFFIC = [
    message("lobby", "l1", "good morning"),
    message("lab", "b1", "the results are in"),
    message("random", "r1", "anyone around?"),
    message("random", "r2", "@worker take this one"),
    message("random", "r3", "ping <@42>"),
    message("lobby", "l2", "and @worker, you too"),
]


async def test_each_agent_reads_exactly_its_share_and_its_own_cursor(tmp_path: Path) -> None:
    fake = FakeConnector()
    async with three_agents(tmp_path, fake, Recorder()) as board:
        await send_accepted(fake, *TRAFFIC)
        shares = {
            "resident": ["l1", "r1", "l2"],
            "researcher": ["b1", "r3"],
            "worker": ["r2", "l2"],
            "scripted": ["l1", "b1", "r1", "r2", "r3", "l2"],  # not in the roster: all of it
        }
        assert said((await board.delivery.read("resident")).messages) == shares.pop("resident")
        # The resident acknowledges its read (the next read does); nobody else's position moves.
        assert (await board.delivery.read("resident")).messages == []
        assert await board.store.get_cursor("resident") == board.store.latest_seq
        for name, share in shares.items():
            assert await board.store.get_cursor(name) == 0
            assert said((await board.delivery.read(name)).messages) == share, name


async def test_an_agent_can_neither_fetch_nor_peek_at_what_is_routed_elsewhere(
    tmp_path: Path,
) -> None:
    fake = FakeConnector()
    async with three_agents(tmp_path, fake, Recorder()) as board:
        await send_accepted(fake, *TRAFFIC)
        lab = next(m for m in await board.store.read(0, 10) if m.message_id == "b1")
        assert await port(board, "worker").stored_message(lab.seq) is None
        fetched = await port(board, "researcher").stored_message(lab.seq)
        assert fetched is not None
        assert fetched.message_id == "b1"
        assert said(await port(board, "worker").peek_inbox()) == ["r2", "l2"]
        assert said(await port(board, "researcher").peek_inbox()) == ["b1", "r3"]


async def test_arrivals_and_mail_are_told_only_to_the_agents_they_are_routed_to(
    tmp_path: Path,
) -> None:
    fake = FakeConnector()
    async with three_agents(tmp_path, fake, Recorder()) as board:
        told: dict[str, list[Arrival]] = {a.name: [] for a in AGENTS}
        for name, arrivals in told.items():
            port(board, name).watch_inbox(arrivals.extend)
        await send_accepted(fake, message("lab", "b1", "results"))
        await send_accepted(fake, message("random", "r1", "@worker hi"))
        with anyio.fail_after(10):
            while not (told["researcher"] and told["worker"]):
                await anyio.lowlevel.checkpoint()
        assert [a.message_id for a in told["researcher"]] == ["b1"]
        assert [a.message_id for a in told["worker"]] == ["r1"]
        assert told["resident"] == []
        # A message committed with no event in this process (as another instance would
        # commit one) is told once the store's head moves: here, mail written straight in.
        wire = {
            "channelId": "@worker",
            "messageId": "@resident#1",
            "author": {"id": "@resident", "name": "resident"},
            "timestamp": "2026-11-29T12:00:00Z",
            "content": [{"type": "text", "text": "can you look at the lab results?"}],
            "metadata": {"kind": "mail", "from": "@resident", "to": "@worker", "n": 1},
        }
        async with anyio.create_task_group() as tg:
            tg.start_soon(board.watchers.run)
            [result] = await board.store.submit_wire(MAIL_SERVER, [wire])
            with anyio.fail_after(10):
                while len(told["worker"]) < 2:
                    await anyio.lowlevel.checkpoint()
            tg.cancel_scope.cancel()
        [deposited] = await board.store.read(result.seq - 1, 1)
        assert [a.message_id for a in told["worker"]] == ["r1", "@resident#1"]
        assert [a.message_id for a in told["researcher"]] == ["b1"]
        assert await port(board, "resident").stored_message(deposited.seq) is None
        assert said((await board.delivery.read("worker")).messages) == ["r1", "@resident#1"]
        assert "@resident#1" not in said((await board.delivery.read("scripted")).messages)


async def test_one_agents_close_does_not_silence_another_agents_home(tmp_path: Path) -> None:
    script = LifecycleScript()
    fake = script.install(FakeConnector())
    async with three_agents(tmp_path, fake, Recorder()) as board:
        resident, worker = port(board, "resident"), port(board, "worker")
        assert (await resident.open("lobby")).status == "opened"
        answer = await worker.close("lobby")
        assert answer.status == "left"
        assert "@resident" in answer.text
        assert script.closed == []  # the connector was not asked to close the resident's home
        assert (await worker.close("lobby")).status == "already left"
        await send_accepted(fake, message("lobby", "l1", "@worker are you still here?"))
        assert said((await board.delivery.read("resident")).messages) == ["l1"]
        assert said((await board.delivery.read("worker")).messages) == []
        rejoined = await worker.open("lobby")
        assert rejoined.status == "already open"
        assert "rejoined" in rejoined.text
        await send_accepted(fake, message("lobby", "l2", "@worker welcome back"))
        assert said((await board.delivery.read("worker")).messages) == ["l2"]
        # Nobody else wants the lobby: its own agent's close goes to the connector as before.
        assert (await resident.close("lobby")).status == "closed"
        assert script.closed == ["lobby"]
        assert script.opened == ["lobby"]


def _entry(room: str) -> Any:
    return ChannelDescriptor.model_validate(descriptor(room))


async def test_a_channel_left_stays_left_after_a_restart(tmp_path: Path) -> None:
    config = Config(
        connectors=[], store=StoreConfig(path=str(tmp_path / "sb.sqlite")), agents=AGENTS
    )
    async with Switchboard.started(config) as board:
        board.registry.register("s1", [_entry(r) for r in ROOMS])
        assert (await port(board, "worker").close("lobby")).status == "left"
    async with Switchboard.started(config) as board:
        assert board.router.has_left("worker", LOBBY)
        board.registry.register("s1", [_entry(r) for r in ROOMS])
        assert board.router.wanted_by(LOBBY) == ("resident",)
        assert (await port(board, "worker").open("lobby")).text.startswith("You rejoined")
    async with Switchboard.started(config) as board:
        assert not board.router.has_left("worker", LOBBY)
