"""Outgoing streams on the wire (channel-registry.md §10.2, T36, T52; MCPL H-46..H-50)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from switchboard.channels import ChannelRef
from switchboard.transport import LinkClosedError
from tests.fake import (
    ALL_CHANNELS,
    FakeConnector,
    barrier,
    board_of,
    descriptor,
    noted,
    notes,
)

pytestmark = pytest.mark.anyio

CHUNK = "channels/outgoing/chunk"
COMPLETE = "channels/outgoing/complete"
ROOM = ChannelRef("a", "room")
HALL = ChannelRef("a", "hall")


def without_streaming() -> FakeConnector:
    channels = {k: v for k, v in ALL_CHANNELS.items() if k != "streaming"}
    return FakeConnector(mcpl={"version": "0.5", "channels": channels})


async def register(fake: FakeConnector, *ids: str, direction: str = "bidirectional") -> None:
    await fake.call("channels/register", {"channels": [descriptor(i, direction) for i in ids]})


def texts(got: list[Any]) -> list[str]:
    return [b["text"] for c in got for b in c["content"]]


async def test_stream_messages_go_only_to_a_server_granted_streaming(tmp_path: Path) -> None:
    """H-46: a server that did not declare channels.streaming gets no chunk or complete."""
    fa, fb = FakeConnector(), without_streaming()
    async with board_of(tmp_path, {"a": fa, "b": fb}) as board:
        await register(fa, "general")
        await register(fb, "general")
        stream = board.streams.inference("ann", "inf-1")
        assert await stream.chunk(ChannelRef("a", "general"), "hi")
        assert not await stream.chunk(ChannelRef("b", "general"), "hi")
        assert await stream.close() == (ChannelRef("a", "general"),)
        [chunk] = await noted(fa, CHUNK, 1)
        assert chunk == {
            "inferenceId": "inf-1",
            "conversationId": "ann",
            "channelId": "general",
            "index": 0,
            "delta": "hi",
        }
        await noted(fa, COMPLETE, 1)
        await barrier(board, fb, "b")
        assert notes(fb, CHUNK) == notes(fb, COMPLETE) == []


async def test_the_chunk_index_is_one_counter_per_inference_across_channels(
    tmp_path: Path,
) -> None:
    """H-47, H-48: chunks go to the channel's own server; the index rises across channels."""
    fa, fb = FakeConnector(), FakeConnector()
    async with board_of(tmp_path, {"a": fa, "b": fb}) as board:
        await register(fa, "room", "hall")
        await register(fb, "room")
        stream = board.streams.inference("ann")
        for ref, delta in [(ROOM, "a"), (HALL, "b"), (ChannelRef("b", "room"), "c"), (ROOM, "d")]:
            assert await stream.chunk(ref, delta)
        got_a = await noted(fa, CHUNK, 3)
        got_b = await noted(fb, CHUNK, 1)
        assert [(c["channelId"], c["index"], c["delta"]) for c in got_a] == [
            ("room", 0, "a"),
            ("hall", 1, "b"),
            ("room", 3, "d"),
        ]
        assert [(c["channelId"], c["index"]) for c in got_b] == [("room", 2)]
        assert {c["inferenceId"] for c in got_a + got_b} == {stream.inference_id}
        other = board.streams.inference("ann")
        assert other.inference_id != stream.inference_id
        assert await other.chunk(ROOM, "e")
        assert (await noted(fa, CHUNK, 4))[3]["index"] == 0


async def test_complete_goes_exactly_once_per_started_stream_with_its_whole_text(
    tmp_path: Path,
) -> None:
    """H-49, H-50, T52: one complete carrying the joined deltas; none for an unstarted one."""
    fa = FakeConnector()
    async with board_of(tmp_path, {"a": fa}) as board:
        await register(fa, "room", "hall")
        stream = board.streams.inference("ann")
        await stream.chunk(ROOM, "hel")
        await stream.chunk(ROOM, "lo")
        assert await stream.complete(ROOM)
        assert not await stream.complete(ROOM)
        assert not await stream.complete(HALL)
        assert not await stream.chunk(ROOM, "again")  # that stream is over for this inference
        assert await stream.close() == ()
        [complete] = await noted(fa, COMPLETE, 1)
        assert complete["channelId"] == "room"
        assert complete["inferenceId"] == stream.inference_id
        assert texts([complete]) == ["hello"]
        await barrier(board, fa, "a")
        assert len(notes(fa, COMPLETE)) == 1
        assert len(notes(fa, CHUNK)) == 2


async def test_no_stream_starts_in_an_inbound_only_channel_but_an_earlier_one_continues(
    tmp_path: Path,
) -> None:
    """T36, T52: a stream start is refused there; a stream started before the declaration
    keeps accepting chunks and is completed."""
    fa = FakeConnector()
    async with board_of(tmp_path, {"a": fa}) as board:
        await register(fa, "room")
        await register(fa, "news", direction="inbound")
        stream = board.streams.inference("ann")
        assert not await stream.chunk(ChannelRef("a", "news"), "x")
        assert await stream.chunk(ROOM, "one ")
        await fa.call("channels/changed", {"updated": [descriptor("room", "inbound")]})
        assert await stream.chunk(ROOM, "two")
        assert await stream.close() == (ROOM,)
        [complete] = await noted(fa, COMPLETE, 1)
        assert texts([complete]) == ["one two"]
        assert {c["channelId"] for c in notes(fa, CHUNK)} == {"room"}
        fresh = board.streams.inference("ann")
        assert not await fresh.chunk(ROOM, "three")


async def test_a_chunk_to_an_unregistered_channel_starts_nothing(tmp_path: Path) -> None:
    """T52: and a later complete for it is not sent."""
    fa = FakeConnector()
    async with board_of(tmp_path, {"a": fa}) as board:
        await register(fa, "room")
        stream = board.streams.inference("ann")
        ghost = ChannelRef("a", "ghost")
        assert not await stream.chunk(ghost, "x")
        assert not await stream.complete(ghost)
        assert not await stream.chunk(ROOM, "")
        assert stream.open == ()
        await barrier(board, fa, "a")
        assert notes(fa, CHUNK) == notes(fa, COMPLETE) == []


async def test_a_closed_stream_starts_no_new_channel(tmp_path: Path) -> None:
    fa = FakeConnector()
    async with board_of(tmp_path, {"a": fa}) as board:
        await register(fa, "room", "hall")
        stream = board.streams.inference("ann")
        await stream.chunk(ROOM, "x")
        await stream.close()
        assert not await stream.chunk(HALL, "late")
        await barrier(board, fa, "a")
        assert [c["channelId"] for c in notes(fa, CHUNK)] == ["room"]


async def test_errors_sending_to_the_connector_are_swallowed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fa = FakeConnector()
    async with board_of(tmp_path, {"a": fa}) as board:
        await register(fa, "room")
        peer = board.sessions["a"].peer
        assert peer is not None

        async def broken(method: str, params: Any = None) -> None:
            raise LinkClosedError("gone")

        monkeypatch.setattr(peer, "notify", broken)
        stream = board.streams.inference("ann")
        assert await stream.chunk(ROOM, "x")  # sent as far as the host can tell
        assert await stream.complete(ROOM)
        assert stream.open == ()
