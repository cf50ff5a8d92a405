"""Tune-outs on the host: diversion from the owner's inbox, wakes, ends and owed backlogs.

Real SQLite files (store and decision log), a FakeConnector over a memory link, and the host's
own inbox read (issue #4 part 6; channel-registry.md §6).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from switchboard.agents.inbox.backlogs import NOTICE_TAG, withheld_page
from switchboard.app.board import Switchboard
from switchboard.channels import ChannelRef
from switchboard.lifecycle.rules.decisions import ScopeKind, TuneOutScope
from switchboard.store import StoredMessage
from switchboard.tuneouts.rules.epochs import TuneOutTerms
from tests.fake import (
    FakeConnector,
    ManualClock,
    addressed_message,
    board_with_log,
    message,
    register_admitted,
    send_accepted,
)

pytestmark = pytest.mark.anyio

ROOM = ChannelRef("s1", "room")
OTHER = ChannelRef("s1", "other")


def ids(read: list[StoredMessage]) -> list[str]:
    return [m.message_id for m in read]


async def inbox(board: Switchboard, agent: str = "a", **kw: Any) -> list[StoredMessage]:
    return (await board.delivery.read(agent, **kw)).messages


async def test_a_tuned_out_channel_skips_its_owners_inbox_but_not_other_agents(
    tmp_path: Path,
) -> None:
    fake = FakeConnector()
    async with board_with_log(tmp_path, fake) as board:
        await register_admitted(board, fake, "room", "other")
        await board.tuneouts.start("a", TuneOutScope(ROOM), TuneOutTerms())
        await send_accepted(fake, message("room", "r1"), message("other", "o1"))
        assert ids(await inbox(board, "a")) == ["o1"]
        assert ids(await inbox(board, "b")) == ["r1", "o1"]
        assert board.lifecycle.desired_state(ROOM) == "tuned-out"


async def test_messages_committed_before_the_tune_out_began_still_reach_the_inbox(
    tmp_path: Path,
) -> None:
    fake = FakeConnector()
    async with board_with_log(tmp_path, fake) as board:
        await register_admitted(board, fake, "room", "other")
        await send_accepted(fake, message("room", "before"))
        await board.tuneouts.start("a", TuneOutScope(ROOM), TuneOutTerms())
        await send_accepted(fake, message("room", "after"))
        assert ids(await inbox(board)) == ["before"]


async def test_a_cancel_hands_over_the_backlog_first_in_the_next_read_and_only_once(
    tmp_path: Path,
) -> None:
    fake = FakeConnector()
    async with board_with_log(tmp_path, fake) as board:
        await register_admitted(board, fake, "room", "other")
        started = await board.tuneouts.start("a", TuneOutScope(ROOM), TuneOutTerms())
        await send_accepted(fake, message("room", "r1"), message("room", "r2"))
        assert await inbox(board) == []
        await board.tuneouts.cancel(started.held.epoch.epoch_id, "a")
        await send_accepted(fake, message("other", "o1"))
        read = await inbox(board)
        again = await inbox(board)
    notice = read[0]
    assert notice.message_id == f"tuneout-ended:{started.held.epoch.epoch_id}"
    assert notice.tags == [NOTICE_TAG]
    assert notice.metadata is not None
    assert notice.metadata["reason"] == "cancelled"
    assert "cancelled" in notice.content[0]["text"]
    assert ids(read[1:]) == ["r1", "r2", "o1"]
    assert all(m.metadata and m.metadata["tuneOut"] for m in read[1:3])
    assert again == []
    assert (
        board.lifecycle.desired_state(ROOM) == "closed"
    )  # its record before the tune-out came back


async def test_past_its_cap_the_latest_are_handed_over_and_the_note_carries_the_digest(
    tmp_path: Path,
) -> None:
    fake = FakeConnector()
    async with board_with_log(tmp_path, fake) as board:
        await register_admitted(board, fake, "room", "other")
        started = await board.tuneouts.start(
            "a", TuneOutScope(ROOM), TuneOutTerms(reader="r", backlog_cap=2)
        )
        await send_accepted(fake, *(message("room", f"r{i}") for i in range(5)))
        await board.tuneouts.cancel(started.held.epoch.epoch_id, "r", "five greetings")
        read = await inbox(board)
    note = read[0].content[0]["text"]
    assert ids(read[1:]) == ["r3", "r4"]
    assert "3" in note
    assert "five greetings" in note
    assert read[0].metadata is not None
    assert read[0].metadata["heldBack"] == 3


async def test_a_read_waiting_for_messages_is_not_woken_by_diverted_traffic(
    tmp_path: Path,
) -> None:
    fake = FakeConnector()
    async with board_with_log(tmp_path, fake) as board:
        await register_admitted(board, fake, "room", "other")
        await board.tuneouts.start("a", TuneOutScope(ROOM), TuneOutTerms())
        got: list[StoredMessage] = []

        async def read() -> None:
            got.extend(await inbox(board, wait_seconds=30))

        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(read)
                await anyio.wait_all_tasks_blocked()
                await send_accepted(fake, message("room", "r1"))
                await send_accepted(fake, message("other", "o1"))
    assert ids(got) == ["o1"]


async def test_the_first_addressed_message_past_the_wake_budget_ends_it_in_that_read(
    tmp_path: Path,
) -> None:
    """A wake is a read that withheld a message addressing the owner (chat:addressed)."""
    fake = FakeConnector()
    async with board_with_log(tmp_path, fake) as board:
        await register_admitted(board, fake, "room", "other")
        started = await board.tuneouts.start("a", TuneOutScope(ROOM), TuneOutTerms(max_wakes=1))
        epoch_id = started.held.epoch.epoch_id
        await send_accepted(fake, message("room", "plain"))
        assert await inbox(board) == []
        held = board.tuneouts.book.active(epoch_id)
        assert held is not None
        assert held.wake_count == 0
        await send_accepted(fake, addressed_message("room", "w1"))
        assert await inbox(board) == []
        held = board.tuneouts.book.active(epoch_id)
        assert held is not None
        assert held.wake_count == 1
        await send_accepted(fake, addressed_message("room", "w2"))
        read = await inbox(board)
        assert board.tuneouts.book.active(epoch_id) is None
    assert read[0].metadata is not None
    assert read[0].metadata["reason"] == "wake-budget"
    assert ids(read[1:]) == ["plain", "w1", "w2"]


async def test_a_tune_out_whose_time_ran_out_ends_at_the_next_read(tmp_path: Path) -> None:
    clock = ManualClock()
    fake = FakeConnector()
    async with board_with_log(tmp_path, fake, clock=clock) as board:
        await register_admitted(board, fake, "room", "other")
        await board.tuneouts.start("a", TuneOutScope(ROOM), TuneOutTerms(duration=60))
        await send_accepted(fake, message("room", "r1"))
        assert await inbox(board) == []
        clock.now += 61
        read = await inbox(board)
    assert read[0].metadata is not None
    assert read[0].metadata["reason"] == "expired"
    assert ids(read[1:]) == ["r1"]


async def test_the_expiry_timer_ends_a_tune_out_without_any_read(tmp_path: Path) -> None:
    clock = ManualClock()
    fake = FakeConnector()
    async with board_with_log(tmp_path, fake, clock=clock) as board:
        await register_admitted(board, fake, "room", "other")
        async with anyio.create_task_group() as tg:
            tg.start_soon(board.tuneouts.run_timer)
            await board.tuneouts.start("a", TuneOutScope(ROOM), TuneOutTerms(duration=60))
            await anyio.wait_all_tasks_blocked()
            assert len(board.tuneouts.book) == 1
            clock.now += 60
            board.tuneouts.poke()
            with anyio.fail_after(5):
                while len(board.tuneouts.book):
                    await anyio.lowlevel.checkpoint()
            tg.cancel_scope.cancel()
        owed = list(board.tuneouts.owed("a"))
    assert [s.reason.value for s in owed] == ["expired"]


async def test_an_all_except_tune_out_withholds_every_channel_but_the_kept_one(
    tmp_path: Path,
) -> None:
    fake = FakeConnector()
    assert fake.mcpl is not None
    fake.mcpl["featureSets"] = {"x": {"description": "d", "uses": ["pushEvents"]}}
    async with board_with_log(tmp_path, fake) as board:
        await register_admitted(board, fake, "room", "other")
        scope = TuneOutScope(OTHER, ScopeKind.ALL_EXCEPT)
        started = await board.tuneouts.start("a", scope, TuneOutTerms())
        await send_accepted(fake, message("room", "r1"), message("other", "o1"))
        await fake.call(
            "push/event",
            {
                "featureSet": "x",
                "eventId": "e1",
                "timestamp": "2026-11-29T12:00:00Z",
                "payload": {"content": [{"type": "text", "text": "ping"}]},
            },
        )
        assert ids(await inbox(board)) == ["o1", "event:e1"]
        assert board.lifecycle.desired_state(ROOM) != "tuned-out"  # all-except records nothing
        assert board.tuneouts.covers(ROOM)
        assert not board.tuneouts.covers(OTHER)
        await board.tuneouts.cancel(started.held.epoch.epoch_id, "a")
        read = await inbox(board)
    assert read[0].channel_id == ""  # an all-except notice names no channel of its own
    assert ids(read[1:]) == ["r1"]


async def test_the_reader_pages_through_what_the_tune_out_withheld(tmp_path: Path) -> None:
    fake = FakeConnector()
    async with board_with_log(tmp_path, fake) as board:
        await register_admitted(board, fake, "room", "other")
        started = await board.tuneouts.start("a", TuneOutScope(ROOM), TuneOutTerms(reader="r"))
        await send_accepted(
            fake, *(message("room", f"r{i}") for i in range(3)), message("other", "o")
        )
        first = await withheld_page(board.store, started.held, 0, 2)
        rest = await withheld_page(board.store, started.held, first.cursor, 2)
    assert ids(first.messages) == ["r0", "r1"]
    assert first.more
    assert ids(rest.messages) == ["r2"]
    assert not rest.more
