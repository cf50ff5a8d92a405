"""The tune-out tools, driven by a real MCP client (issue #4 part 6; channel-registry.md §6)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from switchboard.app import build_server
from switchboard.channels import ChannelRef
from tests.agents.tools.channel_support import call
from tests.fake import (
    FakeConnector,
    board_with_log,
    message,
    register_admitted,
    send_accepted,
)

pytestmark = pytest.mark.anyio

ROOM = ChannelRef("s1", "room")


def ids(data: dict[str, Any]) -> list[str]:
    return [m["message_id"] for m in data["messages"]]


async def test_the_tune_out_tools_have_typed_input_and_output_schemas(tmp_path: Path) -> None:
    async with (
        board_with_log(tmp_path, FakeConnector()) as board,
        Client(build_server(board, agent="a"), mode="legacy") as client,
    ):
        tools = {t.name: t for t in (await client.list_tools()).tools}
    tune_out = tools["tune_out"]
    assert tune_out.input_schema["required"] == ["channel"]
    props = tune_out.input_schema["properties"]
    assert {"mode", "scope", "duration_minutes", "wake_budget", "reader", "backlog_cap"} <= set(
        props
    )
    assert tune_out.output_schema is not None
    assert tools["tune_out_status"].output_schema is not None
    assert tools["tune_out_backlog"].input_schema["required"] == ["channel"]


async def test_an_agent_tunes_a_channel_out_and_gets_its_backlog_when_it_cancels(
    tmp_path: Path,
) -> None:
    fake = FakeConnector()
    async with board_with_log(tmp_path, fake) as board:
        await register_admitted(board, fake, "room", "other")
        async with Client(build_server(board, agent="a"), mode="legacy") as client:
            started = await call(client, "tune_out", {"channel": "room", "wake_budget": 2})
            await send_accepted(fake, message("room", "r1"), message("other", "o1"))
            during = await call(client, "inbox")
            status = await call(client, "tune_out_status")
            cancelled = await call(client, "tune_out", {"channel": "room", "mode": "cancel"})
            after = await call(client, "inbox")
            empty = await call(client, "tune_out_status")
    assert not started["is_error"]
    assert started["status"] == "started"
    assert started["tune_out"]["channel"] == "room"
    assert started["tune_out"]["wake_budget"] == 2
    assert ids(during) == ["o1"]
    assert [t["epoch_id"] for t in status["tune_outs"]] == [started["tune_out"]["epoch_id"]]
    assert cancelled["status"] == "cancelled"
    assert ids(after) == [f"tuneout-ended:{started['tune_out']['epoch_id']}", "r1"]
    assert after["messages"][0]["tags"] == ["switchboard:tuneout-ended"]
    assert "cancelled" in after["messages"][0]["text"]
    assert empty["tune_outs"] == []


async def test_a_name_that_picks_no_channel_is_refused_and_nothing_starts(
    tmp_path: Path,
) -> None:
    fake = FakeConnector()
    async with board_with_log(tmp_path, fake) as board:
        await register_admitted(board, fake, "room")
        async with Client(build_server(board, agent="a"), mode="legacy") as client:
            unknown = await call(client, "tune_out", {"channel": "nope"})
            nothing = await call(client, "tune_out", {"channel": "room", "mode": "cancel"})
        assert len(board.tuneouts.book) == 0
    assert unknown["is_error"]
    assert unknown["refusal"] == "unknown-channel"
    assert nothing["is_error"]
    assert nothing["refusal"] == "not-tuned-out"
    assert "tune_out_status" in nothing["next"]


async def test_the_reader_reads_the_backlog_and_cancels_with_a_digest_for_the_owner(
    tmp_path: Path,
) -> None:
    fake = FakeConnector()
    async with board_with_log(tmp_path, fake) as board:
        await register_admitted(board, fake, "room")
        async with (
            Client(build_server(board, agent="a"), mode="legacy") as owner,
            Client(build_server(board, agent="r"), mode="legacy") as reader,
        ):
            await call(owner, "tune_out", {"channel": "room", "reader": "r", "backlog_cap": 1})
            await send_accepted(fake, *(message("room", f"r{i}", f"hello {i}") for i in range(3)))
            page = await call(reader, "tune_out_backlog", {"channel": "room", "limit": 2})
            rest = await call(
                reader, "tune_out_backlog", {"channel": "room", "after_seq": page["cursor"]}
            )
            listed = await call(reader, "tune_out_status")
            done = await call(
                reader,
                "tune_out",
                {"channel": "room", "mode": "cancel", "digest": "three hellos from Ann"},
            )
            delivered = await call(owner, "inbox")
    assert ids(page) == ["r0", "r1"]
    assert page["more"]
    assert ids(rest) == ["r2"]
    assert listed["tune_outs"][0]["reader"] == "r"
    assert done["status"] == "cancelled"
    note = delivered["messages"][0]["text"]
    assert "three hellos from Ann" in note
    assert ids(delivered)[1:] == ["r2"]


async def test_an_agent_that_neither_owns_nor_reads_a_tune_out_cannot_cancel_it(
    tmp_path: Path,
) -> None:
    fake = FakeConnector()
    async with board_with_log(tmp_path, fake) as board:
        await register_admitted(board, fake, "room")
        async with (
            Client(build_server(board, agent="a"), mode="legacy") as owner,
            Client(build_server(board, agent="b"), mode="legacy") as other,
        ):
            await call(owner, "tune_out", {"channel": "room"})
            refused = await call(other, "tune_out", {"channel": "room", "mode": "cancel"})
            taken = await call(other, "tune_out", {"channel": "room"})
        assert len(board.tuneouts.book) == 1
    assert refused["refusal"] == "not-tuned-out"
    assert "belongs to @a, not to you" in refused["message"]
    assert taken["refusal"] == "tuned-out-by-another-agent"


async def test_a_tune_out_of_a_channel_its_server_withdrew_is_cancelled_by_its_name(
    tmp_path: Path,
) -> None:
    fake = FakeConnector()
    async with board_with_log(tmp_path, fake) as board:
        await register_admitted(board, fake, "room")
        async with Client(build_server(board, agent="a"), mode="legacy") as client:
            await call(client, "tune_out", {"channel": "room"})
            await fake.call("channels/changed", {"removed": ["room"]})
            assert ROOM not in board.registry
            cancelled = await call(client, "tune_out", {"channel": "room", "mode": "cancel"})
    assert not cancelled["is_error"]
    assert cancelled["status"] == "cancelled"


async def test_channel_open_refuses_a_tuned_out_channel_and_says_how_the_tune_out_ends(
    tmp_path: Path,
) -> None:
    """T45: the refusal names the channel and points at tune_out's cancel."""
    fake = FakeConnector()
    async with board_with_log(tmp_path, fake) as board:
        await register_admitted(board, fake, "room")
        async with Client(build_server(board, agent="a"), mode="legacy") as client:
            await call(client, "tune_out", {"channel": "room"})
            opened = await call(client, "channel_open", {"channel": "room"})
            closed = await call(client, "channel_close", {"channel": "room"})
        assert board.lifecycle.desired_state(ROOM) == "tuned-out"
    assert opened["refusal"] == "tuned-out"
    assert "tune_out" in opened["message"]
    assert '"cancel"' in opened["message"]
    assert closed["refusal"] == "tuned-out"
    assert "channel_close" in closed["message"]


async def test_an_all_except_tune_out_is_started_and_cancelled_by_the_kept_channel(
    tmp_path: Path,
) -> None:
    fake = FakeConnector()
    async with board_with_log(tmp_path, fake) as board:
        await register_admitted(board, fake, "room", "other")
        async with Client(build_server(board, agent="a"), mode="legacy") as client:
            args = {"channel": "other", "scope": "all-except", "duration_minutes": 30}
            started = await call(client, "tune_out", args)
            await send_accepted(fake, message("room", "r1"), message("other", "o1"))
            during = await call(client, "inbox")
            inside = await call(client, "tune_out", {"channel": "room"})
            cancelled = await call(client, "tune_out", {**args, "mode": "cancel"})
            after = await call(client, "inbox")
    assert started["tune_out"]["scope"] == "all-except"
    assert started["tune_out"]["expires_at"] is not None
    assert ids(during) == ["o1"]
    assert inside["refusal"] == "overlapping-tune-out"
    assert cancelled["status"] == "cancelled"
    assert ids(after)[1:] == ["r1"]
