"""Lifecycle runs: serialized per channel, parallel across channels, bounded, honest about
what they could not confirm (issue #4 part 4; channel-registry.md §2.3, §5.6)."""

from __future__ import annotations

from collections.abc import Awaitable
from pathlib import Path

import anyio
import pytest

from switchboard.app.board import Switchboard
from switchboard.channels import ChannelRef
from switchboard.lifecycle.answers import LifecycleAnswer
from switchboard.lifecycle.rules.decisions import DesiredState, Source
from switchboard.lifecycle.rules.reconcile import MAX_CONVERGE_ATTEMPTS
from switchboard.refusals.refusal import Refusal
from tests.fake import (
    FakeConnector,
    LifecycleScript,
    board_with,
    descriptor,
    lifecycle_event,
    lifecycle_steps,
    message,
    register_settled,
)
from tests.helpers import Recorder

pytestmark = pytest.mark.anyio

A, B = ChannelRef("s1", "a"), ChannelRef("s1", "b")


async def _refused(verb: Awaitable[LifecycleAnswer]) -> Refusal:
    """The refusal a verb raises."""
    with pytest.raises(Refusal) as refused:
        await verb
    return refused.value


async def _until_sent(script: LifecycleScript, opened: int = 0, closed: int = 0) -> None:
    with anyio.fail_after(5):
        while len(script.opened) < opened or len(script.closed) < closed:
            await anyio.lowlevel.checkpoint()


async def test_a_close_decided_while_an_open_is_in_flight_is_carried_out_after_it(
    tmp_path: Path,
) -> None:
    release = anyio.Event()
    script, rec = LifecycleScript(hold_open={"a": release}), Recorder()
    fake = script.install(FakeConnector())
    answers: dict[str, LifecycleAnswer | Refusal] = {}
    async with board_with(tmp_path, fake, recorder=rec) as board:
        await register_settled(fake, rec, [descriptor("a")])

        async def call(name: str) -> None:
            verb = board.lifecycle.open if name == "open" else board.lifecycle.close
            try:
                answers[name] = await verb(A)
            except Refusal as refused:
                answers[name] = refused

        async with anyio.create_task_group() as tg:
            tg.start_soon(call, "open")
            await _until_sent(script, opened=1)
            tg.start_soon(call, "close")
            await anyio.wait_all_tasks_blocked()
            assert (
                board.lifecycle.desired_state(A) == "closed"
            )  # decided while the open is in flight
            assert script.closed == []  # but no second request overlaps the first
            release.set()
        entry = board.registry.get(A)
        assert entry is not None
        assert not entry.transport_open
    overtaken, closed = answers["open"], answers["close"]
    assert isinstance(overtaken, Refusal)
    assert overtaken.kind == "overtaken"
    assert isinstance(closed, LifecycleAnswer)
    assert closed.status == "closed"
    assert script.opened == ["a"]
    assert script.closed == ["a"]


async def test_a_run_gives_up_after_bounded_attempts_when_the_record_keeps_changing(
    tmp_path: Path,
) -> None:
    script, rec = LifecycleScript(), Recorder()
    fake = script.install(FakeConnector())
    async with board_with(tmp_path, fake, recorder=rec) as board:
        await register_settled(fake, rec, [descriptor("a")])

        async def flip(method: str, cid: str) -> None:
            # Every answer arrives after a decision that wants the opposite.
            state = DesiredState.CLOSED if method == "channels/open" else DesiredState.OPEN
            await board.lifecycle.decide(A, state, Source.AGENT_TOOL)

        script.before_answer = flip
        answer = await _refused(board.lifecycle.open(A))
    assert answer.kind == "open-failed"
    assert "kept changing" in answer.message
    assert len(script.opened) + len(script.closed) == MAX_CONVERGE_ATTEMPTS
    assert lifecycle_steps(rec, "converge-failed")


async def test_channels_of_one_registration_are_reconciled_in_parallel(tmp_path: Path) -> None:
    release = anyio.Event()
    script, rec = LifecycleScript(hold_open={"a": release}), Recorder()
    fake = script.install(FakeConnector())
    async with board_with(tmp_path, fake, recorder=rec) as board:
        channels = [descriptor("a", initiallyOpen=True), descriptor("b", initiallyOpen=True)]
        await fake.call("channels/register", {"channels": channels})
        with anyio.fail_after(5):
            while not ((e := board.registry.get(B)) is not None and e.transport_open):
                await anyio.lowlevel.checkpoint()
        assert board.lifecycle.queue.pending(A)  # a's open is still held; b did not wait
        release.set()
        await rec.wait_for(lifecycle_event("reconciled"))
        entry = board.registry.get(A)
        assert entry is not None
        assert entry.transport_open


async def test_a_failed_close_is_tracked_and_the_next_close_is_really_sent(
    tmp_path: Path,
) -> None:
    script, rec = LifecycleScript(refuse_close={"a"}), Recorder()
    fake = script.install(FakeConnector())
    async with board_with(tmp_path, fake, recorder=rec) as board:
        await register_settled(fake, rec, [descriptor("a", initiallyOpen=True)])
        failed = await _refused(board.lifecycle.close(A))
        entry = board.registry.get(A)
        assert entry is not None
        assert board.lifecycle.marks.get(entry).failed_close  # it may still be open
        script.refuse_close.clear()
        again = await board.lifecycle.close(A)
    assert failed.kind == "close-failed"
    assert "may still be open" in failed.message
    assert board.lifecycle.desired_state(A) == "closed"  # the decision stays recorded
    assert again.status == "closed"
    assert script.closed == ["a", "a"]


async def test_an_unanswered_open_leaves_the_channel_unconfirmed_so_a_close_is_sent(
    tmp_path: Path,
) -> None:
    never = anyio.Event()
    script, rec = LifecycleScript(hold_open={"a": never}), Recorder()
    fake = script.install(FakeConnector())
    async with board_with(tmp_path, fake, recorder=rec, request_timeout=0.2) as board:
        await register_settled(fake, rec, [descriptor("a")])
        opened = await _refused(board.lifecycle.open(A))
        entry = board.registry.get(A)
        assert entry is not None
        state = board.lifecycle.marks.get(entry)
        assert state.unconfirmed
        assert not state.open
        closed = await board.lifecycle.close(A)
        never.set()
    assert opened.kind == "open-failed"
    assert "may or may not be open" in opened.message
    assert closed.status == "closed"
    assert script.closed == ["a"]


async def test_a_channel_withdrawn_while_its_open_is_in_flight_fails_as_removed(
    tmp_path: Path,
) -> None:
    release = anyio.Event()
    script, rec = LifecycleScript(hold_open={"a": release}), Recorder()
    fake = script.install(FakeConnector())
    result: list[Refusal] = []
    async with board_with(tmp_path, fake, recorder=rec) as board:
        await register_settled(fake, rec, [descriptor("a")])

        async def open_a() -> None:
            result.append(await _refused(board.lifecycle.open(A)))

        async with anyio.create_task_group() as tg:
            tg.start_soon(open_a)
            await _until_sent(script, opened=1)
            await fake.call("channels/changed", {"removed": ["a"]})
            release.set()
        state = board.lifecycle.desired_state(A)
    assert result[0].kind == "open-failed"
    assert "no longer registers" in result[0].message
    assert state == "open"  # the record survives the removal (§5.8)


async def test_an_open_answered_for_another_channel_marks_the_registration(
    tmp_path: Path,
) -> None:
    """T38 (first half): a substituted answer fails the open and marks answered-elsewhere
    until an open of the channel is answered for it."""
    script, rec = LifecycleScript(answer_as={"a": "zzz"}), Recorder()
    fake = script.install(FakeConnector())
    async with board_with(tmp_path, fake, recorder=rec) as board:
        await register_settled(fake, rec, [descriptor("a")])
        wrong = await _refused(board.lifecycle.open(A))
        entry = board.registry.get(A)
        assert entry is not None
        marked = board.lifecycle.marks.get(entry)
        del script.answer_as["a"]
        right = await board.lifecycle.open(A)
        cleared = board.lifecycle.marks.get(entry)
    assert wrong.kind == "open-failed"
    assert '"zzz"' in wrong.message
    assert marked.answered_elsewhere
    assert not marked.open
    assert right.status == "reconciled"
    assert cleared.open
    assert not cleared.answered_elsewhere
    assert [e.detail["answered"] for e in lifecycle_steps(rec, "substituted")] == ["zzz"]


async def _open_with_history(board: Switchboard, backscroll: int) -> LifecycleAnswer:
    return await board.lifecycle.open(A, backscroll=backscroll, before_message_id="m9")


async def test_an_open_asking_for_history_is_sent_even_when_the_channel_is_open(
    tmp_path: Path,
) -> None:
    history = [{"messageId": f"m{i}"} for i in range(5)]
    script, rec = LifecycleScript(history=history), Recorder()
    fake = script.install(FakeConnector())
    async with board_with(tmp_path, fake, recorder=rec) as board:
        await register_settled(fake, rec, [descriptor("a", initiallyOpen=True)])
        assert script.opened == ["a"]
        answer = await _open_with_history(board, 3)
    sent = fake.got("channels/open")[-1]
    assert sent["history"] == {"limit": 3, "beforeMessageId": "m9"}
    assert answer.history is not None
    assert [m["messageId"] for m in answer.history] == [
        "m2",
        "m3",
        "m4",
    ]
    assert answer.history_truncated is True


async def test_traffic_on_a_channel_is_evidence_that_it_is_open(tmp_path: Path) -> None:
    """Accepted incoming messages confirm the transport (they never change the record)."""
    script, rec = LifecycleScript(refuse_close={"a"}), Recorder()
    fake = script.install(FakeConnector())
    async with board_with(tmp_path, fake, recorder=rec) as board:
        await register_settled(fake, rec, [descriptor("a", initiallyOpen=True)])
        await _refused(board.lifecycle.close(A))
        entry = board.registry.get(A)
        assert entry is not None
        before = board.lifecycle.marks.get(entry)
        await fake.call("channels/incoming", {"messages": [message("a", "m1")]})
        with anyio.fail_after(5):
            while board.lifecycle.marks.get(entry).failed_close:
                await anyio.lowlevel.checkpoint()
        after = board.lifecycle.marks.get(entry)
        state = board.lifecycle.desired_state(A)
    assert before.failed_close
    assert after.open
    assert not after.unconfirmed
    assert state == "closed"


async def _until_marked(board: Switchboard, ref: ChannelRef, *, open_: bool) -> None:
    with anyio.fail_after(5):
        while True:
            entry = board.registry.get(ref)
            if entry is not None:
                state = board.lifecycle.marks.get(entry)
                if state.open == open_ and not state.failed_close:
                    return
            await anyio.lowlevel.checkpoint()


async def test_traffic_repairs_a_failed_close_again_each_time_one_is_refused(
    tmp_path: Path,
) -> None:
    """The traffic check that skips channels already learnt open forgets one whose state
    changed since (issue #14's fast path)."""
    script, rec = LifecycleScript(refuse_close={"a"}), Recorder()
    fake = script.install(FakeConnector())
    async with board_with(tmp_path, fake, recorder=rec) as board:
        await register_settled(fake, rec, [descriptor("a", initiallyOpen=True)])
        for n in range(3):
            await _refused(board.lifecycle.close(A))
            entry = board.registry.get(A)
            assert entry is not None
            assert board.lifecycle.marks.get(entry).failed_close
            await fake.call("channels/incoming", {"messages": [message("a", f"m{n}")]})
            await _until_marked(board, A, open_=True)


async def test_traffic_on_a_channel_registered_again_marks_the_new_registration_open(
    tmp_path: Path,
) -> None:
    """A new entry under an id that traffic already marked open starts closed, and the next
    traffic marks it open in turn."""
    script, rec = LifecycleScript(), Recorder()
    fake = script.install(FakeConnector())
    async with board_with(tmp_path, fake, recorder=rec) as board:
        await register_settled(fake, rec, [descriptor("a"), descriptor("b")])
        await fake.call("channels/incoming", {"messages": [message("a", "m1")]})
        await _until_marked(board, A, open_=True)
        first = board.registry.get(A)
        await fake.call("channels/changed", {"removed": ["a"], "added": [descriptor("a")]})
        second = board.registry.get(A)
        assert second is not None
        assert second is not first
        assert not board.lifecycle.marks.get(second).open
        await fake.call("channels/incoming", {"messages": [message("a", "m2")]})
        await _until_marked(board, A, open_=True)
