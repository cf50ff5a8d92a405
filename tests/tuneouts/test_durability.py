"""Tune-out decisions are durable: appended before memory changes, replayed after a restart.

Each test restarts Switchboard on the same SQLite file (store and decision log) by opening a
new board on it (issue #4 parts 1 and 6; channel-registry.md §5.3, §5.4, §5.8).
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from switchboard.agents.inbox.delivery import Reader
from switchboard.app.board import Switchboard
from switchboard.channels import ChannelRef
from switchboard.lifecycle.rules.decisions import (
    DesiredState,
    ScopeKind,
    Source,
    TuneOutScope,
    Vetoed,
    VetoReason,
)
from switchboard.refusals.refusal import Refusal
from switchboard.store import StoredMessage
from switchboard.tuneouts.rules.epochs import TuneOutTerms
from tests.fake import (
    FakeConnector,
    LifecycleScript,
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


async def inbox(board: Switchboard, agent: str = "a") -> list[StoredMessage]:
    return (await board.delivery.read(agent)).messages


async def test_an_epoch_and_its_wake_count_survive_a_restart(tmp_path: Path) -> None:
    """T30 on the host: the epoch in effect, its record and its wakes are replayed."""
    async with board_with_log(tmp_path, fake := FakeConnector()) as board:
        await register_admitted(board, fake, "room", "other")
        started = await board.tuneouts.start("a", TuneOutScope(ROOM), TuneOutTerms(max_wakes=5))
        await send_accepted(fake, addressed_message("room", "w1"))
        assert await inbox(board) == []
    epoch_id = started.held.epoch.epoch_id
    async with board_with_log(tmp_path, FakeConnector()) as again:
        held = again.tuneouts.book.active(epoch_id)
        assert held is not None
        assert held.wake_count == 1
        assert again.lifecycle.desired_state(ROOM) == "tuned-out"
        assert again.lifecycle.covered_by_tune_out(ROOM)


async def test_an_owed_backlog_survives_restarts_and_is_handed_over_once_acknowledged(
    tmp_path: Path,
) -> None:
    """A backlog handed over is owed until the read that carried it is acknowledged (with
    ``after``): one not acknowledged before a restart comes again, with the same ids (the
    redelivered flag of a backlog is known within one process only)."""
    async with board_with_log(tmp_path, fake := FakeConnector()) as board:
        await register_admitted(board, fake, "room", "other")
        started = await board.tuneouts.start("a", TuneOutScope(ROOM), TuneOutTerms())
        await send_accepted(fake, message("room", "r1"), message("other", "o1"))
        read = await board.delivery.read("a")
        assert ids(read.messages) == ["o1"]
        assert (await board.delivery.read("a", after=read.cursor)).messages == []
        await board.tuneouts.cancel(started.held.epoch.epoch_id, "a")
    async with board_with_log(tmp_path, FakeConnector()) as board:
        first = await board.delivery.read("a")
    async with board_with_log(tmp_path, FakeConnector()) as board:
        again = await board.delivery.read("a")
        flagged = await board.delivery.read("a", after=0)
        acknowledged = await board.delivery.read("a", after=again.cursor)
    async with board_with_log(tmp_path, FakeConnector()) as board:
        second = await inbox(board)
    notice = f"tuneout-ended:{started.held.epoch.epoch_id}"
    assert ids(first.messages) == [notice, "r1"]
    assert first.redelivered == (False, False)
    assert ids(again.messages) == [notice, "r1"]
    assert flagged.redelivered == (True, True)
    assert acknowledged.messages == []
    assert second == []


async def test_withheld_messages_stay_withheld_after_a_restart_before_the_owner_read_them(
    tmp_path: Path,
) -> None:
    """The ended epoch's range keeps its messages out of the inbox until the cursor passes."""
    async with board_with_log(tmp_path, fake := FakeConnector()) as board:
        await register_admitted(board, fake, "room", "other")
        started = await board.tuneouts.start("a", TuneOutScope(ROOM), TuneOutTerms())
        await send_accepted(fake, message("room", "r1"), message("other", "o1"))
        await board.tuneouts.cancel(started.held.epoch.epoch_id, "a")
    async with board_with_log(tmp_path, fake := FakeConnector()) as board:
        await register_admitted(board, fake, "room")
        await send_accepted(fake, message("room", "r2"))
        read = await inbox(board)
    assert ids(read) == [f"tuneout-ended:{started.held.epoch.epoch_id}", "r1", "o1", "r2"]


async def test_a_decision_the_log_refuses_changes_nothing_and_says_so(tmp_path: Path) -> None:
    """A failed append means the decision was not made (issue #4 part 1)."""
    script = LifecycleScript()
    async with board_with_log(tmp_path, fake := script.install(FakeConnector())) as board:
        await register_admitted(board, fake, "room")
        before = board.lifecycle.record(ROOM)
        assert board.decisions is not None
        await board.decisions.aclose()
        with pytest.raises(Refusal) as refused:
            await board.tuneouts.start("a", TuneOutScope(ROOM), TuneOutTerms())
        assert refused.value.kind == "not-recorded"
        assert "nothing changed" in refused.value.message
        assert len(board.tuneouts.book) == 0
        assert board.lifecycle.record(ROOM) is before
        assert script.opened == []


async def test_a_snapshot_of_the_log_keeps_epochs_and_owed_backlogs(tmp_path: Path) -> None:
    """Compaction deletes the rows a snapshot covers; the snapshot must carry tune-outs."""
    async with board_with_log(tmp_path, fake := FakeConnector()) as board:
        await register_admitted(board, fake, "room", "other")
        ended = await board.tuneouts.start("a", TuneOutScope(ROOM), TuneOutTerms())
        await send_accepted(fake, message("room", "r1"))
        await board.tuneouts.cancel(ended.held.epoch.epoch_id, "a")
        kept = await board.tuneouts.start(
            "a", TuneOutScope(ROOM, ScopeKind.CHANNEL), TuneOutTerms(reader="r")
        )
        done = board.lifecycle.journal.take_snapshot()
        assert done is not None
        await done
        assert board.decisions is not None
        assert await board.decisions.read_all() == []  # every row is compacted away
    async with board_with_log(tmp_path, FakeConnector()) as board:
        held = board.tuneouts.book.active(kept.held.epoch.epoch_id)
        read = await inbox(board)
    assert held is not None
    assert held.epoch.reader == "r"
    assert ids(read) == [f"tuneout-ended:{ended.held.epoch.epoch_id}", "r1"]


async def test_starting_again_replaces_the_epoch_and_hands_over_the_old_backlog(
    tmp_path: Path,
) -> None:
    async with board_with_log(tmp_path, fake := FakeConnector()) as board:
        await register_admitted(board, fake, "room")
        first = await board.tuneouts.start("a", TuneOutScope(ROOM), TuneOutTerms())
        await send_accepted(fake, message("room", "r1"))
        second = await board.tuneouts.start("a", TuneOutScope(ROOM), TuneOutTerms())
        await send_accepted(fake, message("room", "r2"))
        read = await inbox(board)
        assert board.lifecycle.desired_state(ROOM) == "tuned-out"
    assert second.replaced is not None
    assert second.replaced.epoch_id == first.held.epoch.epoch_id
    assert ids(read) == [f"tuneout-ended:{first.held.epoch.epoch_id}", "r1"]
    assert "new tune-out" in read[0].content[0]["text"]


async def test_one_owners_tune_outs_never_overlap_and_another_agents_holds_its_channel(
    tmp_path: Path,
) -> None:
    async with board_with_log(tmp_path, fake := FakeConnector()) as board:
        await register_admitted(board, fake, "room", "other")
        tuneouts = board.tuneouts
        await tuneouts.start("a", TuneOutScope(OTHER, ScopeKind.ALL_EXCEPT), TuneOutTerms())
        with pytest.raises(Refusal) as inside:
            await tuneouts.start("a", TuneOutScope(ROOM), TuneOutTerms())
        await tuneouts.start("b", TuneOutScope(ROOM), TuneOutTerms())
        with pytest.raises(Refusal) as around:
            await tuneouts.start("b", TuneOutScope(OTHER, ScopeKind.ALL_EXCEPT), TuneOutTerms())
        with pytest.raises(Refusal) as taken:
            await tuneouts.start("c", TuneOutScope(ROOM), TuneOutTerms())
    assert inside.value.kind == "overlapping-tune-out"
    assert around.value.kind == "overlapping-tune-out"
    assert taken.value.kind == "tuned-out-by-another-agent"
    assert "'b'" in taken.value.message
    assert len(tuneouts.book) == 2


async def test_a_tuned_out_channel_is_opened_at_the_transport_and_put_back_at_its_end(
    tmp_path: Path,
) -> None:
    """§5.1: a tuned-out channel stays open (its traffic must keep arriving)."""
    script = LifecycleScript()
    async with board_with_log(tmp_path, fake := script.install(FakeConnector())) as board:
        await register_admitted(board, fake, "room")
        started = await board.tuneouts.start("a", TuneOutScope(ROOM), TuneOutTerms())
        assert script.opened == ["room"]
        await board.tuneouts.cancel(started.held.epoch.epoch_id, "a")
        assert script.closed == ["room"]
        assert board.lifecycle.desired_state(ROOM) == "closed"


async def test_a_machine_close_of_a_covered_channel_is_refused_as_stated_intent(
    tmp_path: Path,
) -> None:
    """§6, §7.8: a tune-out is stated intent; subscription-gc stands down on it."""
    async with board_with_log(tmp_path, fake := FakeConnector()) as board:
        await register_admitted(board, fake, "room", "other")
        await board.tuneouts.start("a", TuneOutScope(OTHER, ScopeKind.ALL_EXCEPT), TuneOutTerms())
        await board.lifecycle.decide(ROOM, DesiredState.OPEN, Source.AGENT_TOOL, by_agent="x")
        await board.lifecycle.decide(ROOM, DesiredState.CLOSED, Source.AGENT_TOOL, by_agent="x")
        await board.lifecycle.decide(ROOM, DesiredState.OPEN, Source.SUBSCRIPTION_POLICY)
        gc = await board.lifecycle.decide(ROOM, DesiredState.CLOSED, Source.SUBSCRIPTION_GC)
        kept = await board.lifecycle.decide(OTHER, DesiredState.CLOSED, Source.HOUSEKEEPING)
    assert isinstance(gc.answer, Vetoed)
    assert gc.answer.reason is VetoReason.EXPLICIT_OPEN
    assert not isinstance(kept.answer, Vetoed)


async def test_decisions_on_one_channel_take_turns_with_the_lifecycle(tmp_path: Path) -> None:
    """A tune-out start waits while a lifecycle decision on its channel is being recorded."""
    async with board_with_log(tmp_path, fake := FakeConnector()) as board:
        await register_admitted(board, fake, "room")
        gate = board.lifecycle.gate
        await gate.wait_free((ROOM,))  # the admission's own decision may still hold it
        gate.take((ROOM,))
        async with anyio.create_task_group() as tg:
            tg.start_soon(board.tuneouts.start, "a", TuneOutScope(ROOM), TuneOutTerms())
            await anyio.wait_all_tasks_blocked()
            assert len(board.tuneouts.book) == 0
            gate.release((ROOM,))
        assert len(board.tuneouts.book) == 1


async def test_a_backlog_whose_answer_was_lost_is_not_acknowledged_by_the_token_before_it(
    tmp_path: Path,
) -> None:
    """A read that carries only a backlog returns the token of the read before it. That token,
    from another reader (the answer was lost; the agent came back on a new connection), must
    not acknowledge the backlog: it comes again, flagged. From the reader it was handed to, the
    same token acknowledges it (so a quiet inbox does not hand it out forever)."""
    lost_reader, new_reader = Reader("lost"), Reader("new")
    async with board_with_log(tmp_path, fake := FakeConnector()) as board:
        await register_admitted(board, fake, "room", "other")
        started = await board.tuneouts.start("a", TuneOutScope(ROOM), TuneOutTerms())
        await send_accepted(fake, message("room", "r1"), message("other", "o1"))
        seen = await board.delivery.read("a", reader=lost_reader)
        assert ids(seen.messages) == ["o1"]
        await board.tuneouts.cancel(started.held.epoch.epoch_id, "a")
        lost = await board.delivery.read("a", after=seen.cursor, reader=lost_reader)
        notice = f"tuneout-ended:{started.held.epoch.epoch_id}"
        assert ids(lost.messages) == [notice, "r1"]
        assert lost.cursor == seen.cursor  # only a backlog: the same token as the read before
        again = await board.delivery.read("a", after=lost.cursor, reader=new_reader)
        done = await board.delivery.read("a", after=again.cursor, reader=new_reader)
    assert ids(again.messages) == [notice, "r1"]
    assert again.redelivered == (True, True)
    assert done.messages == []
