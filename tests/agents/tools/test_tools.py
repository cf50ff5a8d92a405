"""The agent-facing MCP tools, driven by a real MCP client (issue #2)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from switchboard.app import build_server
from tests.agents.tools.channel_support import answer
from tests.fake import FakeConnector, board_with, descriptor, message

pytestmark = pytest.mark.anyio


async def test_the_tools_have_typed_input_schemas_and_output_schemas(tmp_path: Path) -> None:
    fake = FakeConnector()
    async with (
        board_with(tmp_path, fake) as board,
        Client(build_server(board, agent="a"), mode="legacy") as client,
    ):
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert {"channel_list", "channel_publish", "inbox", "speak", "think"} <= set(tools)
    publish = tools["channel_publish"]
    assert {"channel", "text", "server_id"} <= set(publish.input_schema["properties"])
    assert tools["speak"].input_schema["required"] == ["text"]
    assert publish.output_schema is not None
    assert tools["inbox"].input_schema["properties"]["wait_seconds"]["maximum"] == 300


async def test_channel_list_shows_each_channel_with_a_name_that_picks_it(tmp_path: Path) -> None:
    fake = FakeConnector()
    async with board_with(tmp_path, fake) as board:
        await fake.call("channels/register", {"channels": [descriptor("room"), descriptor("b:x")]})
        async with Client(build_server(board, agent="a"), mode="legacy") as client:
            result = await client.call_tool("channel_list", {})
    data = result.structured_content or {}
    assert data["servers"] == {"s1": "ready"}
    names = {c["channel_id"]: c["name"] for c in data["channels"]}
    assert set(names) == {"room", "b:x"}
    assert all(c["server_id"] == "s1" for c in data["channels"])


async def test_a_refused_publish_is_an_error_result_that_says_what_to_do_next(
    tmp_path: Path,
) -> None:
    fake = FakeConnector()
    async with (
        board_with(tmp_path, fake) as board,
        Client(build_server(board, agent="a"), mode="legacy") as client,
    ):
        result = await client.call_tool("channel_publish", {"channel": "nowhere", "text": "hi"})
    assert result.is_error
    data = answer(result)
    assert data["refusal"] == "unknown-channel"
    assert data["sent"] is False
    assert "channel_list" in data["next"]
    assert fake.got("channels/publish") == []


async def test_an_ambiguous_channel_name_is_refused_with_its_candidates(tmp_path: Path) -> None:
    fake = FakeConnector()
    async with board_with(tmp_path, fake) as board:
        await fake.call(
            "channels/register",
            {"channels": [descriptor("a", label="#lobby"), descriptor("b", label="#lobby")]},
        )
        async with Client(build_server(board, agent="a"), mode="legacy") as client:
            result = await client.call_tool("channel_publish", {"channel": "#lobby", "text": "hi"})
    assert result.is_error
    data = answer(result)
    assert data["refusal"] == "ambiguous-channel"
    assert {c["channel_id"] for c in data["candidates"]} == {"a", "b"}
    assert fake.got("channels/publish") == []


async def test_invalid_tool_arguments_are_refused_without_reaching_the_connector(
    tmp_path: Path,
) -> None:
    fake = FakeConnector()
    async with board_with(tmp_path, fake) as board:
        await fake.call("channels/register", {"channels": [descriptor("room")]})
        async with Client(build_server(board, agent="a"), mode="legacy") as client:
            result = await client.call_tool("channel_publish", {"channel": "", "text": "hi"})
            waited = await client.call_tool("inbox", {"wait_seconds": -1})
    assert result.is_error
    assert waited.is_error
    assert fake.got("channels/publish") == []


async def test_the_inbox_returns_new_messages_once_and_advances_the_cursor(tmp_path: Path) -> None:
    fake = FakeConnector()
    async with board_with(tmp_path, fake) as board:
        await fake.call("channels/register", {"channels": [descriptor("room")]})
        await fake.call("channels/incoming", {"messages": [message("room", "m1", "first")]})
        async with Client(build_server(board, agent="a"), mode="legacy") as client:
            first = (await client.call_tool("inbox", {})).structured_content or {}
            again = (await client.call_tool("inbox", {})).structured_content or {}
    assert [m["text"] for m in first["messages"]] == ["first"]
    assert again["messages"] == []
    assert again["cursor"] == first["cursor"]


async def test_the_inbox_waits_for_a_message_that_arrives_while_it_waits(tmp_path: Path) -> None:
    fake = FakeConnector()
    async with board_with(tmp_path, fake) as board:
        await fake.call("channels/register", {"channels": [descriptor("room")]})
        async with Client(build_server(board, agent="a"), mode="legacy") as client:
            got: dict[str, Any] = {}

            async def read() -> None:
                got.update(
                    (await client.call_tool("inbox", {"wait_seconds": 30})).structured_content or {}
                )

            with anyio.fail_after(20):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(read)
                    await anyio.wait_all_tasks_blocked()
                    await fake.call("channels/incoming", {"messages": [message("room", "late")]})
    assert [m["message_id"] for m in got["messages"]] == ["late"]


async def test_each_agent_has_its_own_cursor(tmp_path: Path) -> None:
    fake = FakeConnector()
    async with board_with(tmp_path, fake) as board:
        await fake.call("channels/register", {"channels": [descriptor("room")]})
        await fake.call("channels/incoming", {"messages": [message("room", "m1")]})
        async with (
            Client(build_server(board, agent="one"), mode="legacy") as one,
            Client(build_server(board, agent="two"), mode="legacy") as two,
        ):
            a = (await one.call_tool("inbox", {})).structured_content or {}
            b = (await two.call_tool("inbox", {})).structured_content or {}
    assert len(a["messages"]) == len(b["messages"]) == 1


@pytest.mark.parametrize(
    ("tool", "arguments", "said"),
    [
        ("channel_publish", {"channel": "room"}, "`text` is missing; it is required"),
        ("channel_publish", {"channel": "room", "text": 5}, "`text` must be a string, not 5"),
        ("inbox", {"limit": "many"}, '`limit` must be an integer, not "many"'),
        ("inbox", {"wait_seconds": -1}, "`wait_seconds` must be at least 0"),
        ("speak", {"text": ""}, "`text` must have at least 1 character"),
    ],
)
async def test_a_call_with_a_missing_or_mistyped_argument_is_refused_in_the_house_style(
    tmp_path: Path, tool: str, arguments: dict[str, Any], said: str
) -> None:
    """No library text (no "validation error", no errors.pydantic.dev link): what is wrong
    with which argument, a full stop, then what to do; the facts in ``_meta``."""
    fake = FakeConnector()
    async with board_with(tmp_path, fake) as board:
        await fake.call("channels/register", {"channels": [descriptor("room")]})
        async with Client(build_server(board, agent="a"), mode="legacy") as client:
            result = await client.call_tool(tool, arguments)
    assert result.is_error
    (block,) = result.content
    assert block.type == "text"
    text = block.text
    assert text.startswith(f"{tool} did not run: {said}")
    assert ". Next: call the tool again with the arguments fixed" in text
    assert "pydantic" not in text
    assert "validation error" not in text
    assert result.meta is not None
    facts = result.meta["switchboard/refusal"]
    assert facts["refusal"] == "invalid-arguments"
    assert facts["tool"] == tool


async def test_every_refusal_has_a_full_stop_before_next(tmp_path: Path) -> None:
    """A refusal whose message ends without a full stop still reads as two sentences."""
    fake = FakeConnector()
    async with (
        board_with(tmp_path, fake) as board,
        Client(build_server(board, agent="a"), mode="legacy") as client,
    ):
        result = await client.call_tool("task_finish", {"result": "done"})
    assert result.is_error
    (block,) = result.content
    assert block.type == "text"
    assert "nothing was done. Next: " in block.text
