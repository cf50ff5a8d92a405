"""channel_open, channel_close and channel_decline through a real MCP client (issue #4 part 5
of the tools; channel-registry.md §3.7, §7.3-§7.5, §15 T02, T04, T15, T16, T45)."""

from __future__ import annotations

from collections.abc import Awaitable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from switchboard.app import build_server
from switchboard.channels import ChannelRef
from switchboard.config import DEFAULT_GRANT
from switchboard.lifecycle.rules.decisions import Source, TuneOutEpoch, TuneOutScope
from switchboard.lifecycle.rules.events import TuneOutStarted
from switchboard.store import StoreError
from switchboard.store.sqlite import DecisionLog
from tests.agents.tools.channel_support import answer
from tests.fake import (
    FakeConnector,
    LifecycleScript,
    board_of,
    board_with,
    descriptor,
    message,
    register_settled,
)
from tests.helpers import Recorder

pytestmark = pytest.mark.anyio


def data(result: Any) -> dict[str, Any]:
    return answer(result)


async def test_the_lifecycle_tools_have_typed_inputs_and_outputs(tmp_path: Path) -> None:
    fake = FakeConnector()
    async with (
        board_with(tmp_path, fake) as board,
        Client(build_server(board, agent="a"), mode="legacy") as client,
    ):
        tools = {t.name: t for t in (await client.list_tools()).tools}
    opener, closer, decliner = (
        tools["channel_open"],
        tools["channel_close"],
        tools["channel_decline"],
    )
    assert opener.input_schema["required"] == ["channel"]
    assert {"server_id", "backscroll", "before_message_id"} <= set(
        opener.input_schema["properties"]
    )
    assert closer.input_schema["required"] == ["channel"]
    assert "source" not in closer.input_schema["properties"]  # module-only inputs do not exist
    assert sorted(decliner.input_schema["required"]) == ["channel", "message_id"]
    assert all(t.output_schema is not None for t in (opener, closer, decliner))


async def test_a_shared_id_is_refused_and_a_qualified_name_opens_one_channel(
    tmp_path: Path,
) -> None:
    """T02, T04: nothing is sent for an ambiguous name; a:general opens on server a only."""
    scripts = {"a": LifecycleScript(), "b": LifecycleScript()}
    fakes = {sid: s.install(FakeConnector()) for sid, s in scripts.items()}
    rec = Recorder()
    async with (
        board_of(tmp_path, fakes, recorder=rec) as board,
        Client(build_server(board, agent="agent"), mode="legacy") as client,
    ):
        for fake in fakes.values():
            await register_settled(fake, rec, [descriptor("general")])
        shared = await client.call_tool("channel_open", {"channel": "general"})
        qualified = await client.call_tool("channel_open", {"channel": "a:general"})
    assert shared.is_error
    assert data(shared)["refusal"] == "ambiguous-channel"
    assert {c["name"] for c in data(shared)["candidates"]} == {"a:general", "b:general"}
    assert not qualified.is_error
    assert {k: data(qualified)[k] for k in ("server_id", "channel_id", "status")} == {
        "server_id": "a",
        "channel_id": "general",
        "status": "opened",
    }
    assert scripts["a"].opened == ["general"]
    assert scripts["b"].opened == []


async def test_the_turns_own_channels_bind_a_bare_id_unless_a_server_is_given(
    tmp_path: Path,
) -> None:
    """T15, T16."""
    scripts = {"a": LifecycleScript(), "b": LifecycleScript()}
    fakes = {sid: s.install(FakeConnector()) for sid, s in scripts.items()}
    rec = Recorder()
    async with (
        board_of(tmp_path, fakes, recorder=rec) as board,
        Client(build_server(board, agent="agent"), mode="legacy") as client,
    ):
        for sid, fake in fakes.items():
            await register_settled(fake, rec, [descriptor("g")])
            await fake.call("channels/incoming", {"messages": [message("g", f"m-{sid}")]})
        await client.call_tool("inbox", {})  # a turn whose own channels are a:g and b:g
        both = await client.call_tool("channel_close", {"channel": "g"})
        named = await client.call_tool("channel_open", {"channel": "g", "server_id": "b"})
        states = {sid: board.lifecycle.desired_state(ChannelRef(sid, "g")) for sid in fakes}
    assert both.is_error
    assert data(both)["refusal"] == "ambiguous-channel"
    assert '"a:g"' in data(both)["message"]
    assert '"b:g"' in data(both)["message"]
    assert data(named)["status"] == "opened"
    assert states == {"a": "closed", "b": "open"}
    # b's traffic showed the connector delivers in g, not that it was opened: g was not
    # desired open, so the open is sent (§7.3 step 3).
    assert scripts["b"].opened == ["g"]
    assert scripts["a"].opened == []


async def test_channel_open_returns_backscroll_clamped_to_500(tmp_path: Path) -> None:
    history = [{"messageId": f"m{i}"} for i in range(3)]
    script, rec = LifecycleScript(history=history), Recorder()
    fake = script.install(FakeConnector())
    async with board_with(tmp_path, fake, recorder=rec) as board:
        await register_settled(fake, rec, [descriptor("g")])
        async with Client(build_server(board, agent="a"), mode="legacy") as client:
            result = await client.call_tool(
                "channel_open", {"channel": "g", "backscroll": 9999, "before_message_id": "m9"}
            )
    assert fake.got("channels/open")[0]["history"] == {"limit": 500, "beforeMessageId": "m9"}
    assert data(result)["status"] == "opened"
    assert [m["messageId"] for m in data(result)["history"]] == ["m0", "m1", "m2"]
    assert data(result)["history_truncated"] is None


async def test_channel_close_closes_then_says_already_closed(tmp_path: Path) -> None:
    script, rec = LifecycleScript(), Recorder()
    fake = script.install(FakeConnector())
    async with board_with(tmp_path, fake, recorder=rec) as board:
        await register_settled(fake, rec, [descriptor("g", initiallyOpen=True)])
        async with Client(build_server(board, agent="a"), mode="legacy") as client:
            first = await client.call_tool("channel_close", {"channel": "g"})
            second = await client.call_tool("channel_close", {"channel": "g"})
            listed = await client.call_tool("channel_list", {})
        record = board.lifecycle.record(ChannelRef("s1", "g"))
    assert [data(first)["status"], data(second)["status"]] == ["closed", "already closed"]
    assert record is not None
    assert (record.source, record.by_agent) == (Source.AGENT_TOOL, "a")
    row = data(listed)["channels"][0]
    assert (row["open"], row["desired"]) == (False, "closed")
    assert script.closed == ["g"]


async def test_channel_decline_posts_the_acknowledgment_asked_for(tmp_path: Path) -> None:
    script, rec = LifecycleScript(), Recorder()
    fake = script.install(FakeConnector())
    async with board_with(tmp_path, fake, recorder=rec) as board:
        await register_settled(fake, rec, [descriptor("g")])
        async with Client(build_server(board, agent="a"), mode="legacy") as client:
            result = await client.call_tool(
                "channel_decline", {"channel": "g", "message_id": "m1", "acknowledge": "👀"}
            )
    assert not result.is_error
    assert {k: data(result)[k] for k in ("status", "acknowledged", "representation")} == {
        "status": "remained closed",
        "acknowledged": True,
        "representation": "reacted 👀",
    }


async def test_a_tuned_out_channel_is_refused_with_how_its_tune_out_ends(tmp_path: Path) -> None:
    """T45."""
    script, rec = LifecycleScript(), Recorder()
    fake = script.install(FakeConnector())
    async with board_with(tmp_path, fake, recorder=rec) as board:
        await register_settled(fake, rec, [descriptor("g")])
        epoch = TuneOutEpoch("e1", "a", TuneOutScope(ChannelRef("s1", "g")), 1.0, 10)
        await board.lifecycle.journal.record([TuneOutStarted(epoch, Source.AGENT_TOOL)])
        async with Client(build_server(board, agent="a"), mode="legacy") as client:
            results = [
                await client.call_tool("channel_open", {"channel": "g"}),
                await client.call_tool("channel_close", {"channel": "g"}),
                await client.call_tool("channel_decline", {"channel": "g", "message_id": "m"}),
            ]
    for result in results:
        assert result.is_error
        assert {k: data(result)[k] for k in ("refusal", "server_id", "channel_id")} == {
            "refusal": "tuned-out",
            "server_id": "s1",
            "channel_id": "g",
        }
        assert "tune_out" in data(result)["message"]
    assert script.opened == []
    assert script.closed == []


async def test_the_agent_is_told_when_a_connector_keeps_its_channels_as_it_chooses(
    tmp_path: Path,
) -> None:
    script, rec = LifecycleScript(), Recorder()
    fake = script.install(FakeConnector())
    grant = [g for g in DEFAULT_GRANT if g != "channels.lifecycle"]
    async with board_with(tmp_path, fake, recorder=rec, grant=grant) as board:
        await register_settled(fake, rec, [descriptor("g")])
        async with Client(build_server(board, agent="a"), mode="legacy") as client:
            result = await client.call_tool("channel_open", {"channel": "g"})
    assert not result.is_error
    assert data(result)["status"] == "not directed"
    assert "as it chooses" in data(result)["note"]
    assert fake.got("channels/open") == []


async def test_a_decision_that_could_not_be_recorded_is_an_error_that_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script, rec = LifecycleScript(), Recorder()
    fake = script.install(FakeConnector())
    async with (
        await DecisionLog.open(tmp_path / "host.sqlite") as log,
        board_with(tmp_path, fake, recorder=rec, decisions=log) as board,
    ):
        await register_settled(fake, rec, [descriptor("g")])

        def refuse(events: Sequence[Mapping[str, Any]]) -> Awaitable[int]:
            raise StoreError("the decision log is closed")

        monkeypatch.setattr(log, "append", refuse)
        async with Client(build_server(board, agent="a"), mode="legacy") as client:
            result = await client.call_tool("channel_open", {"channel": "g"})
        state = board.lifecycle.desired_state(ChannelRef("s1", "g"))
    assert result.is_error
    assert data(result)["refusal"] == "not-recorded"
    assert "nothing was sent" in data(result)["message"]
    assert state == "closed"
    assert script.opened == []
