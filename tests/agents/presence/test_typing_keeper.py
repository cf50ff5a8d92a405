"""Typing indicators (channel-registry.md §10.1, T51; MCPL H-45) over in-memory connectors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from switchboard.channels import ChannelRef
from switchboard.config import DEFAULT_GRANT
from switchboard.events import ConnectorExited
from switchboard.protocol import Grant
from tests.fake import (
    ALL_CHANNELS,
    FakeConnector,
    Ticker,
    barrier,
    board_of,
    descriptor,
    drop_server,
    noted,
    notes,
    typing_running,
)

pytestmark = pytest.mark.anyio

TYPING = "channels/typing"
A_GENERAL = ChannelRef("a", "general")
B_GENERAL = ChannelRef("b", "general")


async def register(fake: FakeConnector, *ids: str) -> None:
    await fake.call("channels/register", {"channels": [descriptor(i) for i in ids]})


async def opened(method: str, params: Any) -> Any:
    return {"channel": descriptor(params["channelId"])}


def without_typing() -> FakeConnector:
    channels = {k: v for k, v in ALL_CHANNELS.items() if k != "typing"}
    return FakeConnector(mcpl={"version": "0.5", "channels": channels})


async def test_typing_by_a_shared_id_starts_at_once_in_every_channel_with_that_id(
    tmp_path: Path,
) -> None:
    """T51: a string fans out to every channel entries_named returns; a start goes now."""
    fa, fb = FakeConnector(), FakeConnector()
    async with board_of(tmp_path, {"a": fa, "b": fb}) as board, typing_running(board, Ticker()):
        await register(fa, "general")
        await register(fb, "general")
        refs = await board.typing.start("general", {"replyTo": "m1"})
        assert set(refs) == {A_GENERAL, B_GENERAL}
        for fake in (fa, fb):
            [start] = await noted(fake, TYPING, 1)
            assert start == {
                "channelId": "general",
                "op": "start",
                "typing": True,
                "metadata": {"replyTo": "m1"},
            }


async def test_a_typing_ref_types_in_that_channel_only(tmp_path: Path) -> None:
    fa, fb = FakeConnector(), FakeConnector()
    async with board_of(tmp_path, {"a": fa, "b": fb}) as board, typing_running(board, Ticker()):
        await register(fa, "general")
        await register(fb, "general")
        assert await board.typing.start(B_GENERAL) == (B_GENERAL,)
        [start] = await noted(fb, TYPING, 1)
        assert start == {"channelId": "general", "op": "start", "typing": True}
        await barrier(board, fa, "a")
        assert notes(fa, TYPING) == []


async def test_each_tick_refreshes_typing_with_the_latest_metadata(tmp_path: Path) -> None:
    """§10.1: a refresh every interval; new metadata that differs refreshes at once."""
    fa = FakeConnector()
    async with board_of(tmp_path, {"a": fa}) as board, typing_running(board, Ticker()) as ticker:
        await register(fa, "room")
        await board.typing.start("room", {"v": 1})
        await noted(fa, TYPING, 1)
        await ticker.tick()
        assert (await noted(fa, TYPING, 2))[1]["metadata"] == {"v": 1}
        await board.typing.start("room", {"v": 1})  # the same metadata: no extra refresh
        await barrier(board, fa, "a")
        assert len(notes(fa, TYPING)) == 2
        await board.typing.start("room", {"v": 2})
        assert (await noted(fa, TYPING, 3))[2] == {
            "channelId": "room",
            "op": "start",
            "typing": True,
            "metadata": {"v": 2},
        }
        await ticker.tick()
        assert (await noted(fa, TYPING, 4))[3]["metadata"] == {"v": 2}


async def test_stopping_one_ref_stops_only_that_channel_and_sends_its_metadata(
    tmp_path: Path,
) -> None:
    """T51: stop(R("a","general")) stops only a's indicator, with a stop carrying metadata."""
    fa, fb = FakeConnector(), FakeConnector()
    async with (
        board_of(tmp_path, {"a": fa, "b": fb}) as board,
        typing_running(board, Ticker()) as ticker,
    ):
        await register(fa, "general")
        await register(fb, "general")
        await board.typing.start("general", {"k": "v"})
        assert await board.typing.stop(A_GENERAL) == (A_GENERAL,)
        stop = (await noted(fa, TYPING, 2))[1]
        assert stop == {
            "channelId": "general",
            "op": "stop",
            "typing": False,
            "metadata": {"k": "v"},
        }
        assert board.typing.typing_in() == {B_GENERAL}
        assert board.typing.metadata_of(A_GENERAL) is None
        await ticker.tick()
        assert [n["op"] for n in await noted(fb, TYPING, 2)] == ["start", "start"]
        await barrier(board, fa, "a")
        assert len(notes(fa, TYPING)) == 2


async def test_a_stop_goes_only_where_a_start_went(tmp_path: Path) -> None:
    fa = FakeConnector()
    async with board_of(tmp_path, {"a": fa}) as board, typing_running(board, Ticker()):
        await register(fa, "room", "quiet")
        await board.typing.start("room")
        assert await board.typing.stop("quiet") == ()
        assert await board.typing.stop("room") == (ChannelRef("a", "room"),)
        assert await board.typing.stop("room") == ()
        await barrier(board, fa, "a")
        assert [(n["channelId"], n["op"]) for n in notes(fa, TYPING)] == [
            ("room", "start"),
            ("room", "stop"),
        ]


async def test_without_the_typing_grant_nothing_is_sent_but_the_timer_runs(
    tmp_path: Path,
) -> None:
    """H-45 and T51: no start or refresh without channels.typing; the timer still exists.

    Switchboard's decision (docs/tools.md): a stop goes only where a start went, so no stop
    is sent either (the reference sends one without checking the grant; MCPL forbids it).
    """
    fa = without_typing()
    async with board_of(tmp_path, {"a": fa}) as board, typing_running(board, Ticker()) as ticker:
        await register(fa, "room")
        room = ChannelRef("a", "room")
        assert await board.typing.start("room") == (room,)
        await ticker.tick()
        await ticker.tick()
        assert board.typing.typing_in() == {room}
        assert await board.typing.stop(room) == (room,)
        await barrier(board, fa, "a")
        assert notes(fa, TYPING) == []


async def test_a_grant_that_arrives_later_is_used_at_the_next_tick_and_only_then_stops(
    tmp_path: Path,
) -> None:
    """A stop follows only a start that went out, even once the grant allows both."""
    fa = without_typing()
    async with board_of(tmp_path, {"a": fa}) as board, typing_running(board, Ticker()) as ticker:
        await register(fa, "room", "hall")
        await board.typing.start("room")
        await board.typing.start("hall")
        board.sessions["a"].grant = Grant([*DEFAULT_GRANT])
        await board.typing.stop("hall")  # no start ever went there
        await ticker.tick()
        await noted(fa, TYPING, 1)
        await board.typing.stop("room")
        await noted(fa, TYPING, 2)
        await barrier(board, fa, "a")
        assert [(n["channelId"], n["op"]) for n in notes(fa, TYPING)] == [
            ("room", "start"),
            ("room", "stop"),
        ]


async def test_typing_in_an_unregistered_channel_does_nothing_and_stores_no_metadata(
    tmp_path: Path,
) -> None:
    fa = FakeConnector()
    async with board_of(tmp_path, {"a": fa}) as board, typing_running(board, Ticker()):
        ghost = ChannelRef("a", "ghost")
        assert await board.typing.start(ghost, {"x": 1}) == ()
        assert await board.typing.start("ghost") == ()
        assert board.typing.metadata_of(ghost) is None
        assert board.typing.typing_in() == frozenset()
        await barrier(board, fa, "a")
        assert notes(fa, TYPING) == []


async def test_a_removed_channel_stops_typing_without_a_stop(tmp_path: Path) -> None:
    """T51: changed.removed of a typing channel ends its timer and sends no stop."""
    fa = FakeConnector()
    async with board_of(tmp_path, {"a": fa}) as board, typing_running(board, Ticker()) as ticker:
        await register(fa, "room", "other")
        await board.typing.start("room")
        await board.typing.start("other")
        await fa.call("channels/changed", {"removed": ["room"]})
        assert board.typing.typing_in() == {ChannelRef("a", "other")}
        await ticker.tick()
        await noted(fa, TYPING, 3)
        await barrier(board, fa, "a")
        assert [(n["channelId"], n["op"]) for n in notes(fa, TYPING)] == [
            ("room", "start"),
            ("other", "start"),
            ("other", "start"),
        ]


async def test_a_server_that_went_away_ends_its_typing_and_not_another_servers(
    tmp_path: Path,
) -> None:
    """T55: the other server's typing in its same-id channel is untouched."""
    fa, fb = FakeConnector(), FakeConnector()
    async with (
        board_of(tmp_path, {"a": fa, "b": fb}) as board,
        typing_running(board, Ticker()) as ticker,
    ):
        await register(fa, "general")
        await register(fb, "general")
        await board.typing.start("general")
        await noted(fa, TYPING, 1)
        await drop_server(board, fa, "a")
        await ticker.tick(sleepers=2)
        await noted(fb, TYPING, 2)
        assert board.typing.typing_in() == {B_GENERAL}
        assert [n["op"] for n in notes(fa, TYPING)] == ["start"]


async def test_a_connector_exit_event_forgets_that_servers_typing_at_once(
    tmp_path: Path,
) -> None:
    fa, fb = FakeConnector(), FakeConnector()
    async with board_of(tmp_path, {"a": fa, "b": fb}) as board, typing_running(board, Ticker()):
        await register(fa, "general")
        await register(fb, "general")
        await board.typing.start("general", {"m": 1})
        board.typing.observe(ConnectorExited("a", ("general",)))
        assert board.typing.typing_in() == {B_GENERAL}
        assert board.typing.metadata_of(A_GENERAL) is None


async def test_typing_with_a_budget_stops_by_itself_when_the_budget_runs_out(
    tmp_path: Path,
) -> None:
    fa = FakeConnector()
    async with board_of(tmp_path, {"a": fa}) as board, typing_running(board, Ticker()) as ticker:
        await register(fa, "room")
        await board.typing.start("room", refreshes=2)
        for _ in range(3):
            await ticker.tick()
        got = await noted(fa, TYPING, 4)
        assert [n["op"] for n in got] == ["start", "start", "start", "stop"]
        assert board.typing.typing_in() == frozenset()


async def test_speech_published_into_a_channel_ends_its_typing_with_a_stop(
    tmp_path: Path,
) -> None:
    fa = FakeConnector(extra={"channels/open": opened})
    async with board_of(tmp_path, {"a": fa}) as board, typing_running(board, Ticker()):
        await register(fa, "room")
        await board.typing.start("room")
        outcome = await board.publisher.publish("room", "hello")
        assert outcome.delivered
        assert [n["op"] for n in await noted(fa, TYPING, 2)] == ["start", "stop"]
        assert board.typing.typing_in() == frozenset()


async def test_stopping_everything_stops_each_running_indicator_and_clears_metadata(
    tmp_path: Path,
) -> None:
    fa, fb = FakeConnector(), FakeConnector()
    async with board_of(tmp_path, {"a": fa, "b": fb}) as board, typing_running(board, Ticker()):
        await register(fa, "general")
        await register(fb, "general")
        await board.typing.start("general", {"k": 1})
        assert set(await board.typing.stop()) == {A_GENERAL, B_GENERAL}
        for fake in (fa, fb):
            assert (await noted(fake, TYPING, 2))[1]["op"] == "stop"
        assert board.typing.metadata_of(A_GENERAL) is None
        assert board.typing.typing_in() == frozenset()


async def test_without_the_keeper_running_a_start_still_goes_out_once(tmp_path: Path) -> None:
    fa = FakeConnector()
    async with board_of(tmp_path, {"a": fa}) as board:
        await register(fa, "room")
        assert not board.typing.running
        await board.typing.start("room")
        await noted(fa, TYPING, 1)
        await board.typing.stop("room")
        assert [n["op"] for n in await noted(fa, TYPING, 2)] == ["start", "stop"]


async def test_the_keeper_forgets_every_indicator_when_it_stops_running(
    tmp_path: Path,
) -> None:
    fa = FakeConnector()
    async with board_of(tmp_path, {"a": fa}) as board:
        await register(fa, "room")
        async with typing_running(board, Ticker()):
            await board.typing.start("room", {"k": 1})
        with anyio.fail_after(5):
            while board.typing.running:
                await anyio.lowlevel.checkpoint()
        assert board.typing.typing_in() == frozenset()
        assert board.typing.metadata_of(ChannelRef("a", "room")) is None
