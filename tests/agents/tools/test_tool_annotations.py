"""Every Switchboard tool carries MCP tool annotations, so clients that gate approval on them
(``readOnlyHint``) stop prompting for reads (issue #11 item 6; MCP ``ToolAnnotations``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client
from mcp.types import Tool

from switchboard.agents.tools.server import OWN_TOOLS
from switchboard.app import build_server
from switchboard.config import AgentEntry
from tests.fake import FakeConnector, board_of

pytestmark = pytest.mark.anyio

READ_ONLY = {
    "channel_list",
    "inbox",
    "message_get",
    "think",
    "tune_out_status",
    "tune_out_backlog",
    "directory_list",
    "directory_search",
    "directory_lookup",
}
"""The tools that only read what Switchboard holds."""
REACH_OUT = {
    "channel_publish",
    "speak",
    "speak_stream",
    "speak_stream_end",
    "channel_open",
    "channel_close",
    "channel_decline",
    "typing",
    "tune_out",
}
"""The tools that may act through a connector (post, show, open, close)."""
IDEMPOTENT = {"channel_open", "channel_close", "typing", "set_busy"}
"""Writing tools that change nothing more when called again with the same arguments."""


async def _own_tools(tmp_path: Path) -> dict[str, Tool]:
    """Every one of Switchboard's tools, as a task agent among several is offered them all."""
    agents = [AgentEntry(handle="@ann", roles=["default_delivery"]), AgentEntry(handle="@bob")]
    async with board_of(tmp_path, {"s": FakeConnector()}, agents=agents) as board:
        board.agents.port("ann").spawn_task("@worker")
        async with Client(build_server(board, agent="worker"), mode="legacy") as client:
            listed = (await client.list_tools()).tools
    tools = {t.name: t for t in listed if t.name in OWN_TOOLS}
    assert set(tools) == OWN_TOOLS
    return tools


async def test_every_tool_says_whether_it_only_reads_and_whether_it_reaches_the_world(
    tmp_path: Path,
) -> None:
    tools = await _own_tools(tmp_path)
    assert set(tools) >= READ_ONLY | REACH_OUT
    for name, tool in tools.items():
        hints = tool.annotations
        assert hints is not None, name
        assert hints.read_only_hint is (name in READ_ONLY), name
        assert hints.open_world_hint is (name in REACH_OUT), name


async def test_writing_tools_say_they_destroy_nothing_and_whether_a_repeat_changes_more(
    tmp_path: Path,
) -> None:
    """Closing is undone by opening, and a post adds a message: no tool is destructive."""
    tools = await _own_tools(tmp_path)
    for name in REACH_OUT:
        hints = tools[name].annotations
        assert hints is not None
        assert hints.destructive_hint is False, name
        assert hints.idempotent_hint is (name in IDEMPOTENT), name
