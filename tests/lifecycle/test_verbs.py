"""The lifecycle verbs through the host API: provenance, the overwrite rules as callers see
them, the explicit-open guard, tune-out refusals, declines, unrecorded decisions (issue #4
parts 1, 2 and 5; channel-registry.md §5.2, §7.3-§7.5, §7.8, §15 T26-T29, T43-T47)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest

from switchboard.app.board import Switchboard
from switchboard.channels import ChannelRef
from switchboard.lifecycle.answers import LifecycleAnswer, Origin
from switchboard.lifecycle.rules.decisions import (
    DesiredState,
    Source,
    TuneOutEpoch,
    TuneOutScope,
)
from switchboard.lifecycle.rules.events import TuneOutStarted
from switchboard.lifecycle.rules.speech import ClosedByAgent, closed_by_agent
from switchboard.refusals.refusal import Refusal
from switchboard.store import StoreError
from switchboard.store.sqlite import DecisionLog
from tests.fake import (
    FakeConnector,
    LifecycleScript,
    board_with,
    descriptor,
    message,
    register_settled,
)
from tests.helpers import Recorder

pytestmark = pytest.mark.anyio

G = ChannelRef("s1", "g")


async def _logged(log: DecisionLog, kind: str = "desired-state") -> list[dict[str, Any]]:
    return [e for e in await log.read_all() if e.get("kind") == kind and e.get("channelId") == "g"]


async def _refused(verb: Awaitable[LifecycleAnswer]) -> Refusal:
    """The refusal a verb raises."""
    with pytest.raises(Refusal) as refused:
        await verb
    return refused.value


async def _tune_out(board: Switchboard, ref: ChannelRef = G) -> None:
    epoch = TuneOutEpoch("e1", "a", TuneOutScope(ref), 1.0, 10)
    await board.lifecycle.journal.record([TuneOutStarted(epoch, Source.AGENT_TOOL)])


async def test_the_agents_open_writes_over_a_policy_open_once(tmp_path: Path) -> None:
    """T27."""
    script, rec = LifecycleScript(), Recorder()
    fake = script.install(FakeConnector())
    async with (
        await DecisionLog.open(tmp_path / "host.sqlite") as log,
        board_with(tmp_path, fake, recorder=rec, decisions=log, subscription="auto") as board,
    ):
        await register_settled(fake, rec, [descriptor("g")])
        first = await board.lifecycle.open(G)
        second = await board.lifecycle.open(G)
        logged = [(e["desired"], e["source"]) for e in await _logged(log)]
    assert first.status == second.status == "already open"
    assert logged == [("open", "subscription-policy"), ("open", "agent-tool")]
    assert script.opened == ["g"]


async def test_the_latest_deliberate_close_wins(tmp_path: Path) -> None:
    """T28, T26: a module close over the agent's, the agent's again, then a decline."""
    script, rec = LifecycleScript(), Recorder()
    fake = script.install(FakeConnector())
    async with (
        await DecisionLog.open(tmp_path / "host.sqlite") as log,
        board_with(tmp_path, fake, recorder=rec, decisions=log) as board,
    ):
        await register_settled(fake, rec, [descriptor("g")])
        answers = [
            await board.lifecycle.close(G),
            await board.lifecycle.close(G, origin=Origin.MODULE),
            await board.lifecycle.close(G),
            await board.lifecycle.close(G),
            await board.lifecycle.decline(G, message_id="m1"),
        ]
        sources = [e["source"] for e in await _logged(log)]
        audit = await _logged(log, "invitation-declined")
        entry = board.registry.get(G)
        assert entry is not None
        how = closed_by_agent(board.lifecycle.record(G), board.lifecycle.facts(entry))
    assert [a.status for a in answers] == ["already closed"] * 4 + ["remained closed"]
    assert sources == [
        "default-closed",
        "agent-tool",
        "module-tool",
        "agent-tool",
        "invitation-declined",
    ]
    assert [a["messageId"] for a in audit] == ["m1"]
    assert "acknowledgment" not in audit[0]
    assert how is ClosedByAgent.DECLINED
    assert script.closed == []  # it never was open


async def test_a_machine_close_of_an_explicit_open_is_refused_unless_leased(
    tmp_path: Path,
) -> None:
    """T43."""
    script, rec = LifecycleScript(), Recorder()
    fake = script.install(FakeConnector())
    async with board_with(tmp_path, fake, recorder=rec) as board:
        await register_settled(fake, rec, [descriptor("g")])
        await board.lifecycle.open(G)
        refused = await _refused(
            board.lifecycle.close(G, origin=Origin.MODULE, source="subscription-gc")
        )
        unchanged = board.lifecycle.record(G)
        leased = await board.lifecycle.close(
            G, origin=Origin.MODULE, source="subscription-gc", override_explicit_open=True
        )
        after = board.lifecycle.record(G)
    assert refusal_kind(refused) == ("explicit-open", False)
    assert "agent-tool" in refused.message
    assert "subscription-gc" in refused.message
    assert unchanged is not None
    assert unchanged.source is Source.AGENT_TOOL
    assert leased.status == "closed"
    assert after is not None
    assert after.source is Source.SUBSCRIPTION_GC
    assert script.closed == ["g"]


def refusal_kind(refusal: Refusal) -> tuple[str | None, bool]:
    """The kind, and whether it is an error for the caller (not one it stands down on)."""
    return refusal.kind, not refusal.stand_down


async def test_provenance_comes_from_the_origin_never_from_the_source_input(
    tmp_path: Path,
) -> None:
    """T44: an agent's close with a machine source is the agent's; a module's unknown machine
    source is refused, naming the sources it may use."""
    script, rec = LifecycleScript(), Recorder()
    fake = script.install(FakeConnector())
    async with board_with(tmp_path, fake, recorder=rec) as board:
        await register_settled(fake, rec, [descriptor("g")])
        agents = await board.lifecycle.close(G, source="housekeeping")
        record = board.lifecycle.record(G)
        janitor = await _refused(board.lifecycle.close(G, origin=Origin.MODULE, source="janitor"))
    assert agents.status == "already closed"
    assert record is not None
    assert record.source is Source.AGENT_TOOL
    assert janitor.kind == "unknown-source"
    assert not janitor.stand_down
    assert "'janitor'" in janitor.message
    assert "subscription-gc" in janitor.message
    assert "housekeeping" in janitor.message


async def test_a_close_whose_append_fails_changes_nothing_and_sends_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """T29 and issue #4 part 1: a failed append means the decision was not made."""
    script, rec = LifecycleScript(), Recorder()
    fake = script.install(FakeConnector())
    async with (
        await DecisionLog.open(tmp_path / "host.sqlite") as log,
        board_with(tmp_path, fake, recorder=rec, decisions=log) as board,
    ):
        await register_settled(fake, rec, [descriptor("g", initiallyOpen=True)])
        before = board.lifecycle.record(G)

        def refuse(events: Sequence[Mapping[str, Any]]) -> Awaitable[int]:
            failed: asyncio.Future[int] = asyncio.get_running_loop().create_future()
            failed.set_exception(StoreError("the disk is full"))
            return failed

        monkeypatch.setattr(log, "append", refuse)
        answer = await _refused(board.lifecycle.close(G))
        after = board.lifecycle.record(G)
    assert answer.kind == "not-recorded"
    assert not answer.stand_down
    assert "the disk is full" in answer.message
    assert "Nothing changed" in answer.message
    assert after is before
    assert after is not None
    assert after.state is DesiredState.OPEN
    assert script.closed == []


async def test_tuned_out_channels_are_refused_with_how_the_tune_out_ends(tmp_path: Path) -> None:
    """T45: open, close and decline refuse; a module's close refusal is not an error; a
    machine close of it is refused as stated intent."""
    script, rec = LifecycleScript(), Recorder()
    fake = script.install(FakeConnector())
    async with board_with(tmp_path, fake, recorder=rec) as board:
        await register_settled(fake, rec, [descriptor("g")])
        await _tune_out(board)
        opened = await _refused(board.lifecycle.open(G))
        closed = await _refused(board.lifecycle.close(G))
        by_module = await _refused(board.lifecycle.close(G, origin=Origin.MODULE))
        declined = await _refused(board.lifecycle.decline(G, message_id="m1"))
        gc = await _refused(board.lifecycle.close(G, origin=Origin.MODULE, source="housekeeping"))
        state = board.lifecycle.desired_state(G)
    assert refusal_kind(opened) == ("tuned-out", True)
    assert 'tune_out with channel "g" and mode "cancel"' in opened.message
    assert refusal_kind(closed) == ("tuned-out", True)
    assert "channel_close can close the channel after that" in closed.message
    assert refusal_kind(by_module) == ("tuned-out", False)
    assert refusal_kind(declined) == ("tuned-out", True)
    assert refusal_kind(gc) == ("explicit-open", False)
    assert state == "tuned-out"
    assert script.opened == []
    assert script.closed == []


async def test_a_decline_is_refused_only_when_the_transport_is_open(tmp_path: Path) -> None:
    """T47: desired open but its open failed (transport closed): the decline is allowed."""
    script, rec = LifecycleScript(refuse_open={"g"}), Recorder()
    fake = script.install(FakeConnector())
    async with board_with(tmp_path, fake, recorder=rec) as board:
        await register_settled(fake, rec, [descriptor("g"), descriptor("h", initiallyOpen=True)])
        failed = await _refused(board.lifecycle.open(G))
        declined = await board.lifecycle.decline(G, message_id="m1")
        record = board.lifecycle.record(G)
        open_one = await _refused(board.lifecycle.decline(ChannelRef("s1", "h"), message_id="m2"))
    assert failed.kind == "open-failed"
    assert declined.status == "remained closed"
    assert record is not None
    assert record.source is Source.INVITATION_DECLINED
    assert open_one.kind == "nothing-to-decline"
    assert "is open" in open_one.message
    assert "channel_close" in open_one.next_step


async def test_a_decline_may_post_an_acknowledgment_and_audits_what_was_posted(
    tmp_path: Path,
) -> None:
    script, rec = LifecycleScript(), Recorder()
    fake = script.install(FakeConnector())
    async with (
        await DecisionLog.open(tmp_path / "host.sqlite") as log,
        board_with(tmp_path, fake, recorder=rec, decisions=log) as board,
    ):
        await register_settled(fake, rec, [descriptor("g")])
        answer = await board.lifecycle.decline(G, message_id="m7", acknowledge="👀")
        script.acknowledged = False
        refused = await board.lifecycle.decline(G, message_id="m8", acknowledge="👀")
        audit = await _logged(log, "invitation-declined")
    assert answer.acknowledged is True
    assert answer.representation == "reacted 👀"
    sent = fake.got("channels/acknowledge")[0]
    assert sent == {
        "channelId": "g",
        "messageId": "m7",
        "intent": "seen-not-opening",
        "value": "👀",
    }
    assert refused.acknowledged is False
    assert refused.acknowledgment_error == "reactions are off here"
    assert [(a["messageId"], a.get("acknowledgment")) for a in audit] == [
        ("m7", "reacted 👀"),
        ("m8", None),
    ]


async def test_no_acknowledgment_is_sent_without_its_grant(tmp_path: Path) -> None:
    """H-45: no channels/acknowledge without channels.acknowledge."""
    script, rec = LifecycleScript(), Recorder()
    fake = script.install(FakeConnector())
    grant = ["channels.register", "channels.lifecycle", "channels.publish", "channels.incoming"]
    async with board_with(tmp_path, fake, recorder=rec, grant=grant) as board:
        await register_settled(fake, rec, [descriptor("g")])
        answer = await board.lifecycle.decline(G, message_id="m7", acknowledge="👀")
    assert answer.status == "remained closed"
    assert answer.acknowledged is False
    assert answer.acknowledgment_error is not None
    assert "channels.acknowledge" in answer.acknowledgment_error
    assert fake.got("channels/acknowledge") == []


async def test_an_open_answer_declares_the_channel_anew_and_a_bad_declaration_changes_nothing(
    tmp_path: Path,
) -> None:
    """§5.6: a matching open answer's declaration updates the registration, validated and
    authorized as a channels/changed update; a malformed one is ignored."""
    script, rec = LifecycleScript(), Recorder()
    script.declare = {"g": {"label": "#renamed"}, "h": {"direction": "both", "label": "#bad"}}
    fake = script.install(FakeConnector())
    async with board_with(tmp_path, fake, recorder=rec) as board:
        await register_settled(fake, rec, [descriptor("g"), descriptor("h")])
        await board.lifecycle.open(G)
        await board.lifecycle.open(ChannelRef("s1", "h"))
        renamed = board.registry.resolve("#renamed").ref
        h_label = board.registry.resolve("h").descriptor.label
    assert renamed == G
    assert h_label == "#h"


async def test_opening_a_closed_channel_that_traffic_marked_open_still_asks_the_connector(
    tmp_path: Path,
) -> None:
    """§7.3 step 3 (issue #10, part 5): only a channel already *desired* open skips the
    request. A mention in a default-closed channel shows the connector delivers there, not that
    the host opened it, so the agent's open sends ``channels/open`` and a second one does not."""
    script, rec = LifecycleScript(), Recorder()
    fake = script.install(FakeConnector())
    async with board_with(tmp_path, fake, recorder=rec) as board:
        await register_settled(fake, rec, [descriptor("g")])
        entry = board.registry.get(G)
        assert entry is not None
        await fake.call("channels/incoming", {"messages": [message("g", "m1", "@agent hi")]})
        with anyio.fail_after(5):
            while not board.lifecycle.marks.get(entry).open:
                await anyio.lowlevel.checkpoint()
        desired_before = board.lifecycle.desired_state(G)
        first = await board.lifecycle.open(G)
        second = await board.lifecycle.open(G)
    assert desired_before == "closed"
    assert first.status == "opened"
    assert second.status == "already open"
    assert script.opened == ["g"]
