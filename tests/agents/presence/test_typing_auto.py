"""Automatic typing: a turn's locus types until speech lands or the next turn begins."""

from __future__ import annotations

from pathlib import Path

import pytest

from switchboard.channels import ChannelRef
from tests.fake import (
    FakeConnector,
    Ticker,
    barrier,
    board_of,
    descriptor,
    noted,
    notes,
    typing_running,
)

pytestmark = pytest.mark.anyio

TYPING = "channels/typing"
ROOM = ChannelRef("a", "room")
HALL = ChannelRef("a", "hall")


async def setup(fake: FakeConnector) -> None:
    await fake.call(
        "channels/register",
        {"channels": [descriptor("room"), descriptor("hall"), descriptor("news", "inbound")]},
    )


def ops(fake: FakeConnector) -> list[tuple[str, str]]:
    return [(n["channelId"], n["op"]) for n in notes(fake, TYPING)]


async def test_a_turn_types_in_its_locus_and_the_next_turn_moves_it(tmp_path: Path) -> None:
    fa = FakeConnector()
    async with board_of(tmp_path, {"a": fa}) as board, typing_running(board, Ticker()):
        await setup(fa)
        assert await board.typing.turn_began("ann", ROOM)
        await noted(fa, TYPING, 1)
        assert await board.typing.turn_began("ann", HALL)
        await noted(fa, TYPING, 3)
        assert ops(fa) == [("room", "start"), ("room", "stop"), ("hall", "start")]
        assert board.typing.typing_in() == {HALL}


async def test_a_turn_in_the_same_locus_keeps_typing_without_a_stop(tmp_path: Path) -> None:
    fa = FakeConnector()
    async with board_of(tmp_path, {"a": fa}) as board, typing_running(board, Ticker()):
        await setup(fa)
        await board.typing.turn_began("ann", ROOM)
        await board.typing.turn_began("ann", ROOM)
        await barrier(board, fa, "a")
        assert ops(fa) == [("room", "start")]
        assert board.typing.typing_in() == {ROOM}


async def test_automatic_typing_stops_by_itself_after_its_refreshes(tmp_path: Path) -> None:
    fa = FakeConnector()
    async with board_of(tmp_path, {"a": fa}) as board, typing_running(board, Ticker()) as ticker:
        await setup(fa)
        await board.typing.turn_began("ann", ROOM, refreshes=1)
        await ticker.tick()
        await ticker.tick()
        await noted(fa, TYPING, 3)
        assert ops(fa) == [("room", "start"), ("room", "start"), ("room", "stop")]
        assert await board.typing.turn_began("ann", HALL)  # nothing left to stop in room
        await noted(fa, TYPING, 4)
        assert ops(fa)[3:] == [("hall", "start")]


async def test_a_turn_without_a_channel_or_in_an_inbound_only_one_does_not_type(
    tmp_path: Path,
) -> None:
    fa = FakeConnector()
    async with board_of(tmp_path, {"a": fa}) as board, typing_running(board, Ticker()):
        await setup(fa)
        await board.typing.turn_began("ann", ROOM)
        assert not await board.typing.turn_began("ann", None)
        assert not await board.typing.turn_began("ann", ChannelRef("a", "news"))
        assert not await board.typing.turn_began("ann", ChannelRef("a", "ghost"))
        await noted(fa, TYPING, 2)
        await barrier(board, fa, "a")
        assert ops(fa) == [("room", "start"), ("room", "stop")]


async def test_typing_the_agent_started_itself_is_not_ended_by_its_next_turn(
    tmp_path: Path,
) -> None:
    fa = FakeConnector()
    async with board_of(tmp_path, {"a": fa}) as board, typing_running(board, Ticker()):
        await setup(fa)
        await board.typing.turn_began("ann", ROOM)
        await board.typing.start(ROOM)  # the agent took it over
        assert not await board.typing.turn_began("ann", ROOM)
        assert await board.typing.turn_began("ann", HALL)
        await noted(fa, TYPING, 2)
        await barrier(board, fa, "a")
        assert ops(fa) == [("room", "start"), ("hall", "start")]
        assert board.typing.typing_in() == {ROOM, HALL}


async def test_two_agents_automatic_typing_is_kept_apart(tmp_path: Path) -> None:
    fa = FakeConnector()
    async with board_of(tmp_path, {"a": fa}) as board, typing_running(board, Ticker()):
        await setup(fa)
        await board.typing.turn_began("ann", ROOM)
        await board.typing.turn_began("bob", HALL)
        await board.typing.turn_began("ann", None)
        await noted(fa, TYPING, 3)
        await barrier(board, fa, "a")
        assert ops(fa) == [("room", "start"), ("hall", "start"), ("room", "stop")]
        assert board.typing.typing_in() == {HALL}
