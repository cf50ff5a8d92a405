"""Streamed speech: only decided text is streamed, and every stream is completed (§4.3, §10.2).

Requirement ids: H-49 (complete on every exit path), H-51 (streams fail closed).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from switchboard.agents.speech.streams import StreamedSpeech
from switchboard.app.board import Switchboard
from switchboard.channels import ChannelRef, ProseMode, Sticky
from tests.fake import FakeConnector, barrier, board_of, descriptor, noted, notes

pytestmark = pytest.mark.anyio

CHUNK = "channels/outgoing/chunk"
COMPLETE = "channels/outgoing/complete"
ROOM = ChannelRef("a", "room")
HALL = ChannelRef("a", "hall")


async def setup(fake: FakeConnector) -> None:
    await fake.call(
        "channels/register",
        {"channels": [descriptor("room"), descriptor("hall"), descriptor("news", "inbound")]},
    )


def begin(
    board: Switchboard,
    mode: ProseMode = ProseMode.EXPLICIT,
    locus: ChannelRef | None = ROOM,
    **kw: Any,
) -> StreamedSpeech:
    return board.streams.begin("ann", conversation_id="ann", mode=mode, locus=locus, **kw)


def streamed(fake: FakeConnector) -> dict[str, str]:
    out: dict[str, str] = {}
    for c in notes(fake, CHUNK):
        out[c["channelId"]] = out.get(c["channelId"], "") + c["delta"]
    return out


async def test_only_text_with_a_decided_destination_is_streamed(tmp_path: Path) -> None:
    """H-51: unprefixed text in explicit mode, skip_reply and an unknown target stream nothing."""
    fa = FakeConnector()
    async with board_of(tmp_path, {"a": fa}) as board:
        await setup(fa)
        speech = begin(board)
        text = "before\n>>#room hel" + "lo there\n>>skip_reply secret\n>>#nowhere lost\n>>#hall ok"
        for i in range(0, len(text), 4):
            await speech.feed(text[i : i + 4])
        delivered: list[str] = []

        async def deliver(whole: str) -> int:
            delivered.append(whole)
            return 7

        end = await speech.finish(deliver)
        assert end.delivered == 7
        assert delivered == [text]
        assert set(end.completed) == {ROOM, HALL}
        await noted(fa, COMPLETE, 2)
        assert streamed(fa) == {"room": "hello there", "hall": "ok"}
        every = "".join(c["delta"] for c in notes(fa, CHUNK))
        for private in ("before", "secret", "lost"):
            assert private not in every


async def test_a_feed_returns_what_it_streamed_per_channel(tmp_path: Path) -> None:
    fa = FakeConnector()
    async with board_of(tmp_path, {"a": fa}) as board:
        await setup(fa)
        speech = begin(board)
        assert await speech.feed(">>#ro") == ()
        [first] = await speech.feed("om hi")
        assert (first.ref, first.text) == (ROOM, "hi")
        assert [(s.ref, s.text) for s in await speech.feed(" all")] == [(ROOM, " all")]
        await speech.abort()


async def test_plain_speech_streams_to_the_locus_as_it_arrives_in_locus_mode(
    tmp_path: Path,
) -> None:
    fa = FakeConnector()
    async with board_of(tmp_path, {"a": fa}) as board:
        await setup(fa)
        speech = begin(board, ProseMode.LOCUS, HALL)
        await speech.feed(">>#room not a prefix ")
        await speech.feed("here")
        assert (await noted(fa, CHUNK, 2))[0]["channelId"] == "hall"
        await speech.finish(lambda whole: anyio.lowlevel.checkpoint())
        assert streamed(fa) == {"hall": ">>#room not a prefix here"}


async def test_no_locus_or_an_inbound_only_locus_streams_nothing(tmp_path: Path) -> None:
    fa = FakeConnector()
    async with board_of(tmp_path, {"a": fa}) as board:
        await setup(fa)
        for locus in (None, ChannelRef("a", "news")):
            speech = begin(board, ProseMode.LOCUS, locus)
            assert await speech.feed("hello") == ()
            end = await speech.abort()
            assert end.completed == ()
        assert await begin(board).feed(">>#news hi") == ()
        await barrier(board, fa, "a")
        assert notes(fa, CHUNK) == []


async def test_the_sticky_target_bound_earlier_in_the_turn_is_streamed_to(
    tmp_path: Path,
) -> None:
    fa = FakeConnector()
    async with board_of(tmp_path, {"a": fa}) as board:
        await setup(fa)
        speech = begin(board, sticky=Sticky.on("#hall"), bound={"#hall": HALL})
        await speech.feed("more words")
        assert (await noted(fa, CHUNK, 1))[0]["channelId"] == "hall"
        await speech.abort()


async def test_streams_are_completed_when_the_delivery_raises(tmp_path: Path) -> None:
    """H-49: complete on the error path too; the error reaches the caller."""
    fa = FakeConnector()
    async with board_of(tmp_path, {"a": fa}) as board:
        await setup(fa)
        speech = begin(board)
        await speech.feed(">>#room hi")

        async def explode(whole: str) -> None:
            raise RuntimeError("publish broke")

        with pytest.raises(RuntimeError, match="publish broke"):
            await speech.finish(explode)
        [complete] = await noted(fa, COMPLETE, 1)
        assert complete["content"] == [{"type": "text", "text": "hi"}]


async def test_streams_are_completed_when_the_speech_is_cancelled(tmp_path: Path) -> None:
    """H-49: complete on cancellation (the abort path of an agent that went away)."""
    fa = FakeConnector()
    async with board_of(tmp_path, {"a": fa}) as board:
        await setup(fa)
        speech = begin(board)
        await speech.feed(">>#room hi")
        delivering = anyio.Event()

        async def forever(whole: str) -> None:
            delivering.set()
            await anyio.sleep_forever()

        async with anyio.create_task_group() as tg:
            tg.start_soon(speech.finish, forever)
            with anyio.fail_after(5):
                await delivering.wait()
            tg.cancel_scope.cancel()
        await noted(fa, COMPLETE, 1)


async def test_an_aborted_speech_completes_its_streams_and_delivers_nothing(
    tmp_path: Path,
) -> None:
    fa = FakeConnector()
    async with board_of(tmp_path, {"a": fa}) as board:
        await setup(fa)
        speech = begin(board)
        await speech.feed(">>#room draft")
        end = await speech.abort()
        assert end.aborted
        assert end.delivered is None
        assert end.completed == (ROOM,)
        await noted(fa, COMPLETE, 1)
        await barrier(board, fa, "a")
        assert fa.got("channels/publish") == []


async def test_open_speeches_belong_to_their_agent_and_end_with_its_turn(tmp_path: Path) -> None:
    fa = FakeConnector()
    async with board_of(tmp_path, {"a": fa}) as board:
        await setup(fa)
        mine = begin(board)
        theirs = board.streams.begin(
            "bob", conversation_id="bob", mode=ProseMode.EXPLICIT, locus=ROOM
        )
        assert board.streams.get("ann", mine.inference_id) is mine
        assert board.streams.get("bob", mine.inference_id) is None
        await mine.feed(">>#room a")
        await theirs.feed(">>#hall b")
        assert await board.streams.abort_all("ann") == (mine.inference_id,)
        assert board.streams.get("ann", mine.inference_id) is None
        assert board.streams.get("bob", theirs.inference_id) is theirs
        [complete] = await noted(fa, COMPLETE, 1)
        assert complete["channelId"] == "room"
        board.streams.release(theirs)
        assert board.streams.open_for("bob") == ()
