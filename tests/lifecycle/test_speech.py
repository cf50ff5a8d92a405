"""Speech into closed channels, through ``board.publish`` and the explicit-send open (issue #4
part 5; channel-registry.md §5.1, §8.3, §8.6, §15 T31-T34, T37-T39)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from switchboard.channels import ChannelRef
from switchboard.config import DEFAULT_GRANT
from switchboard.lifecycle.answers import Origin
from switchboard.lifecycle.rules.decisions import DesiredState, Source
from switchboard.refusals.outcome import PublishOutcome, PublishStatus
from switchboard.refusals.refusal import Refusal
from tests.fake import (
    FakeConnector,
    LifecycleScript,
    board_with,
    descriptor,
    lifecycle_steps,
    register_settled,
)
from tests.helpers import Recorder

pytestmark = pytest.mark.anyio

G = ChannelRef("s1", "g")


def methods(fake: FakeConnector) -> list[str]:
    return [m for m, _ in fake.requests if m.startswith("channels/") and m != "channels/register"]


async def test_speech_goes_into_a_channel_the_agent_closed_as_it_stands(tmp_path: Path) -> None:
    """T31."""
    script, rec = LifecycleScript(), Recorder()
    fake = script.install(FakeConnector())
    async with board_with(tmp_path, fake, recorder=rec) as board:
        await register_settled(fake, rec, [descriptor("g")])
        await board.lifecycle.close(G)
        outcome = await board.publisher.publish("g", "hi")
        record = board.lifecycle.record(G)
    assert outcome.delivered
    assert methods(fake) == ["channels/publish"]
    assert record is not None
    assert record.source is Source.AGENT_TOOL


async def test_speech_opens_a_default_or_machine_closed_channel_first(tmp_path: Path) -> None:
    """T32: the open is recorded opened-by-delivery and announced, then the words go in."""
    script, rec = LifecycleScript(), Recorder()
    fake = script.install(FakeConnector())
    allow = {"allow": ["m"]}
    async with board_with(tmp_path, fake, recorder=rec, subscription=allow) as board:
        await register_settled(fake, rec, [descriptor("g"), descriptor("m")])
        gc = await board.lifecycle.close(
            ChannelRef("s1", "m"), origin=Origin.MODULE, source="subscription-gc"
        )
        first = await board.publisher.publish("g", "hi")
        second = await board.publisher.publish("m", "hello")
        records = [board.lifecycle.record(G), board.lifecycle.record(ChannelRef("s1", "m"))]
    assert gc.status == "closed"
    assert first.delivered
    assert second.delivered
    assert methods(fake) == [
        "channels/open",  # m, allowed by the policy, opens at registration
        "channels/close",
        "channels/open",
        "channels/publish",
        "channels/open",
        "channels/publish",
    ]
    assert all(r is not None and r.source is Source.OPENED_BY_DELIVERY for r in records)
    opened = lifecycle_steps(rec, "opened-by-send")
    assert [(e.channel_id, e.detail["source"]) for e in opened] == [
        ("g", "opened-by-delivery"),
        ("m", "opened-by-delivery"),
    ]


async def test_a_machine_close_that_failed_is_reopened_before_speech(tmp_path: Path) -> None:
    """T33: the close stands but the transport may still be open, so speech opens it."""
    script, rec = LifecycleScript(refuse_close={"g"}), Recorder()
    fake = script.install(FakeConnector())
    async with board_with(tmp_path, fake, recorder=rec, subscription="auto") as board:
        await register_settled(fake, rec, [descriptor("g")])
        with pytest.raises(Refusal) as failed:
            await board.lifecycle.close(G, origin=Origin.MODULE, source="housekeeping")
        outcome = await board.publisher.publish("g", "hi")
    assert failed.value.kind == "close-failed"
    assert outcome.delivered
    assert methods(fake)[-2:] == ["channels/open", "channels/publish"]


async def test_speech_leaves_a_channel_alone_when_the_lifecycle_is_withheld(
    tmp_path: Path,
) -> None:
    """T34."""
    script, rec = LifecycleScript(), Recorder()
    fake = script.install(FakeConnector())
    grant = [g for g in DEFAULT_GRANT if g != "channels.lifecycle"]
    async with board_with(tmp_path, fake, recorder=rec, grant=grant) as board:
        await register_settled(fake, rec, [descriptor("g")])
        outcome = await board.publisher.publish("g", "hi")
    assert outcome.delivered
    assert methods(fake) == ["channels/publish"]


async def test_queued_lifecycle_work_settles_before_the_words_go_out(tmp_path: Path) -> None:
    release = anyio.Event()
    script, rec = LifecycleScript(hold_open={"g": release}), Recorder()
    fake = script.install(FakeConnector())
    outcome: list[PublishOutcome] = []
    async with board_with(tmp_path, fake, recorder=rec) as board:
        await fake.call("channels/register", {"channels": [descriptor("g", initiallyOpen=True)]})
        with anyio.fail_after(5):
            while not script.opened:
                await anyio.lowlevel.checkpoint()

        async def speak() -> None:
            outcome.append(await board.publisher.publish("g", "hi"))

        async with anyio.create_task_group() as tg:
            tg.start_soon(speak)
            await anyio.wait_all_tasks_blocked()
            assert fake.got("channels/publish") == []  # waiting for the open in flight
            release.set()
    assert outcome[0].delivered
    assert methods(fake) == ["channels/open", "channels/publish"]


async def test_a_close_decided_while_words_wait_lets_them_through(tmp_path: Path) -> None:
    """T37: the speech-open is overtaken by the agent's close; the words go in as it stands."""
    release = anyio.Event()
    script, rec = LifecycleScript(hold_open={"g": release}), Recorder()
    fake = script.install(FakeConnector())
    outcome: list[PublishOutcome] = []
    async with board_with(tmp_path, fake, recorder=rec) as board:
        await register_settled(fake, rec, [descriptor("g")])

        async def speak() -> None:
            outcome.append(await board.publisher.publish("g", "hi"))

        async with anyio.create_task_group() as tg:
            tg.start_soon(speak)
            with anyio.fail_after(5):
                while not script.opened:
                    await anyio.lowlevel.checkpoint()
            tg.start_soon(board.lifecycle.close, G)
            await anyio.wait_all_tasks_blocked()
            release.set()
        record = board.lifecycle.record(G)
    assert outcome[0].delivered
    assert methods(fake) == ["channels/open", "channels/close", "channels/publish"]
    assert record is not None
    assert record.source is Source.AGENT_TOOL


async def test_words_are_refused_when_the_open_they_wait_for_fails_to_converge(
    tmp_path: Path,
) -> None:
    """T37 (converge): the address kept changing, so nothing is posted."""
    script, rec = LifecycleScript(), Recorder()
    fake = script.install(FakeConnector())
    async with board_with(tmp_path, fake, recorder=rec) as board:
        await register_settled(fake, rec, [descriptor("g")])

        async def flip(method: str, cid: str) -> None:
            state = DesiredState.CLOSED if method == "channels/open" else DesiredState.OPEN
            await board.lifecycle.decide(G, state, Source.AGENT_TOOL)

        script.before_answer = flip
        outcome = await board.publisher.publish("g", "hi")
    assert outcome.status is PublishStatus.FAILED
    assert outcome.refusal is not None
    assert outcome.refusal.data["lifecycle"] == "converge"
    assert fake.got("channels/publish") == []


async def test_a_channel_answered_elsewhere_takes_no_words_as_it_stands(tmp_path: Path) -> None:
    """T38: after a substituted open and the agent's close, speech is refused until an open
    is answered for the channel."""
    script, rec = LifecycleScript(answer_as={"g": "other"}), Recorder()
    fake = script.install(FakeConnector())
    async with board_with(tmp_path, fake, recorder=rec) as board:
        await register_settled(fake, rec, [descriptor("g")])
        failed_open = await board.publisher.publish("g", "one")
        await board.lifecycle.close(G)
        refused = await board.publisher.publish("g", "two")
        del script.answer_as["g"]
        await board.lifecycle.open(G)
        after = await board.publisher.publish("g", "three")
    assert failed_open.refusal is not None
    assert refused.refusal is not None
    assert failed_open.refusal.data["lifecycle"] == "open-failed"
    assert refused.refusal.data["lifecycle"] == "answered-elsewhere"
    assert refused.reason is not None
    assert "different channel" in refused.reason
    assert after.delivered
    assert [p["content"][0]["text"] for p in fake.got("channels/publish")] == ["three"]


async def test_an_explicit_send_opens_only_what_speech_would(tmp_path: Path) -> None:
    """T39: the agent-closed channel stays closed; a default-closed one is opened
    (opened-by-reply); a failed open puts the default back."""
    script, rec = LifecycleScript(refuse_open={"bad"}), Recorder()
    fake = script.install(FakeConnector())
    async with board_with(tmp_path, fake, recorder=rec) as board:
        channels = [descriptor("g"), descriptor("dm", address={"channelId": "D1"})]
        await register_settled(fake, rec, [*channels, descriptor("bad")])
        await board.lifecycle.close(G)
        speech = board.lifecycle.speech
        stays = await speech.open_if_closed_for_send("g")
        opened = await speech.open_if_closed_for_send("D1")  # by its raw platform id
        again = await speech.open_if_closed_for_send("dm")
        failed = await speech.open_if_closed_for_send("bad")
        unknown = await speech.open_if_closed_for_send("nowhere")
        dm, bad = (
            board.lifecycle.record(ChannelRef("s1", "dm")),
            board.lifecycle.record(ChannelRef("s1", "bad")),
        )
    assert (stays.answer, stays.ref) == ("stays-closed", G)
    assert (opened.answer, opened.opening, opened.label) == ("opened", True, "#dm")
    assert dm is not None
    assert dm.source is Source.OPENED_BY_REPLY
    assert again.answer == "already-open"
    assert (failed.answer, failed.opening) == ("open-failed", True)
    assert failed.reason is not None
    assert "refused to open" in failed.reason
    assert bad is not None
    assert bad.source is Source.DEFAULT_CLOSED
    assert unknown.answer == "unknown-channel"
    assert script.opened == ["dm", "bad"]


async def test_a_connector_that_does_not_implement_opens_takes_words_as_it_stands(
    tmp_path: Path,
) -> None:
    """It advertises channels.lifecycle but answers channels/open "method not found": the
    host stops directing its lifecycle for the connection instead of holding words back."""
    fake, rec = FakeConnector(), Recorder()
    async with board_with(tmp_path, fake, recorder=rec) as board:
        await register_settled(fake, rec, [descriptor("g")])
        first = await board.publisher.publish("g", "one")
        second = await board.publisher.publish("g", "two")
        record = board.lifecycle.record(G)
        directs = board.lifecycle.directs("s1")
    assert first.delivered
    assert second.delivered
    assert methods(fake) == ["channels/open", "channels/publish", "channels/publish"]
    assert not directs
    assert record is not None
    assert record.source is Source.DEFAULT_CLOSED
