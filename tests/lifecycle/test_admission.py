"""Admission and reconciliation on (re)registration: initial records, subscription policy,
the lifecycle grant, restarts (issue #4 parts 2-4; channel-registry.md §5.5, §5.6, §15)."""

from __future__ import annotations

from pathlib import Path

import pytest

from switchboard.channels import ChannelRef
from switchboard.config import DEFAULT_GRANT
from switchboard.lifecycle.answers import Origin
from switchboard.lifecycle.rules.decisions import DesiredState, Source
from switchboard.store.sqlite import DecisionLog
from tests.fake import (
    FakeConnector,
    LifecycleScript,
    board_with,
    descriptor,
    lifecycle_event,
    lifecycle_steps,
    register_settled,
)
from tests.helpers import Recorder

pytestmark = pytest.mark.anyio

S = "s1"


def ref(cid: str) -> ChannelRef:
    return ChannelRef(S, cid)


async def test_a_new_channel_is_recorded_default_closed_and_an_initially_open_one_opened(
    tmp_path: Path,
) -> None:
    script, rec = LifecycleScript(), Recorder()
    fake = script.install(FakeConnector())
    async with board_with(tmp_path, fake, recorder=rec) as board:
        await register_settled(fake, rec, [descriptor("a", initiallyOpen=True), descriptor("b")])
        a, b = board.lifecycle.record(ref("a")), board.lifecycle.record(ref("b"))
        entry = board.registry.get(ref("a"))
        assert entry is not None
        assert entry.transport_open
    assert a is not None
    assert (a.state, a.source) == (DesiredState.OPEN, Source.SERVER_BOOTSTRAP)
    assert b is not None
    assert (b.state, b.source) == (DesiredState.CLOSED, Source.DEFAULT_CLOSED)
    assert script.opened == ["a"]
    assert script.closed == []  # a fresh registration is not open: nothing to close


async def test_an_auto_policy_opens_every_channel_and_announces_it_once(tmp_path: Path) -> None:
    script, rec = LifecycleScript(), Recorder()
    fake = script.install(FakeConnector())
    async with board_with(tmp_path, fake, recorder=rec, subscription="auto") as board:
        await register_settled(fake, rec, [descriptor("a"), descriptor("b")])
        await register_settled(fake, rec, [descriptor("a")])  # a new registration of a
        states = [board.lifecycle.desired_state(ref(c)) for c in "ab"]
    announced = lifecycle_steps(rec, "auto-opened")
    assert states == ["open", "open"]
    assert len(announced) == 1
    assert [c["channel_id"] for c in announced[0].detail["channels"]] == ["a", "b"]
    assert sorted(script.opened) == ["a", "a", "b"]  # the new registration is opened again


async def test_an_allow_list_names_channels_by_id_or_by_raw_address_id(tmp_path: Path) -> None:
    script, rec = LifecycleScript(), Recorder()
    fake = script.install(FakeConnector())
    allow = {"allow": ["a", "RAW-9"]}
    async with board_with(tmp_path, fake, recorder=rec, subscription=allow) as board:
        channels = [
            descriptor("a"),
            descriptor("b"),
            descriptor("c", address={"channelId": "RAW-9"}),
        ]
        await register_settled(fake, rec, channels)
        states = {c: board.lifecycle.desired_state(ref(c)) for c in "abc"}
    assert states == {"a": "open", "b": "closed", "c": "open"}
    assert sorted(script.opened) == ["a", "c"]


async def test_policy_lifts_a_default_close_but_never_a_decision(tmp_path: Path) -> None:
    """T24, T25: a machine close of an unrecorded channel records default-closed, which the
    policy lifts; the agent's close stays, and a later machine close writes nothing."""
    script, rec = LifecycleScript(), Recorder()
    fake = script.install(FakeConnector())
    async with board_with(tmp_path, fake, recorder=rec, subscription="auto") as board:
        lifecycle = board.lifecycle
        gc = await lifecycle.decide(ref("dm1"), DesiredState.CLOSED, Source.SUBSCRIPTION_GC)
        mine = await lifecycle.decide(ref("x"), DesiredState.CLOSED, Source.AGENT_TOOL)
        later_gc = await lifecycle.decide(ref("x"), DesiredState.CLOSED, Source.SUBSCRIPTION_GC)
        assert gc.after is not None
        assert gc.after.source is Source.DEFAULT_CLOSED
        assert mine.made
        assert not later_gc.made
        await register_settled(fake, rec, [descriptor("dm1"), descriptor("x")])
        dm1, x = lifecycle.record(ref("dm1")), lifecycle.record(ref("x"))
    assert dm1 is not None
    assert (dm1.state, dm1.source) == (
        DesiredState.OPEN,
        Source.SUBSCRIPTION_POLICY,
    )
    assert x is not None
    assert (x.state, x.source) == (DesiredState.CLOSED, Source.AGENT_TOOL)
    assert script.opened == ["dm1"]
    announced = lifecycle_steps(rec, "auto-opened")
    assert [c["channel_id"] for c in announced[0].detail["channels"]] == ["dm1"]


async def test_a_channel_recorded_closed_that_may_be_open_is_closed_on_registration(
    tmp_path: Path,
) -> None:
    script, rec = LifecycleScript(), Recorder()
    fake = script.install(FakeConnector())
    async with board_with(tmp_path, fake, recorder=rec) as board:
        await board.lifecycle.decide(ref("c"), DesiredState.CLOSED, Source.AGENT_TOOL)
        await register_settled(fake, rec, [descriptor("c", initiallyOpen=True)])
        entry = board.registry.get(ref("c"))
        assert entry is not None
        assert not entry.transport_open
    assert script.closed == ["c"]
    assert script.opened == []


async def test_a_connector_without_the_lifecycle_grant_is_never_sent_opens_or_closes(
    tmp_path: Path,
) -> None:
    """H-45: no channels/open or channels/close without channels.lifecycle; the connector
    keeps its channels as it chooses, and the agent is told so."""
    script, rec = LifecycleScript(), Recorder()
    fake = script.install(FakeConnector())
    grant = [g for g in DEFAULT_GRANT if g != "channels.lifecycle"]
    async with board_with(tmp_path, fake, recorder=rec, grant=grant, subscription="auto") as board:
        await register_settled(fake, rec, [descriptor("a", initiallyOpen=True)])
        assert board.lifecycle.desired_state(ref("a")) == "unknown"  # never admitted
        opened = await board.lifecycle.open(ref("a"))
        closed = await board.lifecycle.close(ref("a"))
    assert [e.detail["reason"] for e in lifecycle_steps(rec, "reconcile-skipped")]
    assert opened.status == "not directed"
    assert "channels.lifecycle" in opened.text
    assert "as it chooses" in opened.text
    assert closed.status == "not directed"
    assert fake.got("channels/open") == []
    assert fake.got("channels/close") == []


async def test_a_new_registration_is_reconciled_and_an_update_keeps_the_transport(
    tmp_path: Path,
) -> None:
    """T54: changed.removed + added makes a new registration (reconciled to the record);
    changed.updated keeps the registration and its open transport."""
    script, rec = LifecycleScript(), Recorder()
    fake = script.install(FakeConnector())
    async with board_with(tmp_path, fake, recorder=rec) as board:
        await register_settled(fake, rec, [descriptor("g")])
        assert (await board.lifecycle.open(ref("g"))).status == "opened"
        after = len(rec.events)
        await fake.call("channels/changed", {"removed": ["g"], "added": [descriptor("g")]})
        await rec.wait_for(lifecycle_event("reconciled"), after=after)
        await fake.call("channels/changed", {"updated": [descriptor("g", label="#new")]})
        entry = board.registry.get(ref("g"))
        assert entry is not None
        assert entry.transport_open
    assert script.opened == ["g", "g"]


async def test_after_a_restart_the_record_is_back_and_the_connector_is_reconciled(
    tmp_path: Path,
) -> None:
    """Restart (§5.8): the decision log is replayed before connectors register."""
    path = tmp_path / "host.sqlite"
    first, rec = LifecycleScript(), Recorder()
    fake = first.install(FakeConnector())
    async with (
        await DecisionLog.open(path) as log,
        board_with(tmp_path, fake, recorder=rec, decisions=log) as board,
    ):
        await register_settled(fake, rec, [descriptor("a", initiallyOpen=True), descriptor("b")])
        assert (await board.lifecycle.close(ref("a"))).status == "closed"
        assert (await board.lifecycle.open(ref("b"), origin=Origin.MODULE)).status == "opened"
    assert first.opened == ["a", "b"]
    assert first.closed == ["a"]
    second, rec = LifecycleScript(), Recorder()
    fake = second.install(FakeConnector())
    async with (
        await DecisionLog.open(path) as log,
        board_with(tmp_path, fake, recorder=rec, decisions=log) as board,
    ):
        a, b = board.lifecycle.record(ref("a")), board.lifecycle.record(ref("b"))
        await register_settled(fake, rec, [descriptor("a", initiallyOpen=True), descriptor("b")])
    assert a is not None
    assert (a.state, a.source) == (DesiredState.CLOSED, Source.AGENT_TOOL)
    assert b is not None
    assert (b.state, b.source) == (DesiredState.OPEN, Source.MODULE_TOOL)
    assert second.closed == ["a"]
    assert second.opened == ["b"]
