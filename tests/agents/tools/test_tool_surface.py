"""The tool surface an agent sees (``tools/list``) is fixed, and is served from the port alone."""

from __future__ import annotations

from typing import Any, NoReturn, cast

import pytest
from mcp import Client

from switchboard.agents.port.protocol import AgentPort, ChannelListing, ChannelRow
from switchboard.agents.tools import server_for
from switchboard.channels import ChannelRef

pytestmark = pytest.mark.anyio

SURFACE: dict[str, tuple[set[str], list[str]]] = {
    "channel_list": ({"cursor"}, []),
    "channel_publish": ({"text", "channel", "server_id"}, ["text"]),
    "inbox": ({"wait_seconds", "limit", "after"}, []),
    "speak": ({"text"}, ["text"]),
    "think": ({"content"}, []),
    "message_get": ({"seq", "offset"}, ["seq"]),
    "channel_open": ({"channel", "server_id", "backscroll", "before_message_id"}, ["channel"]),
    "channel_close": ({"channel", "server_id"}, ["channel"]),
    "channel_decline": (
        {"channel", "message_id", "server_id", "acknowledge"},
        ["channel", "message_id"],
    ),
    "tune_out": (
        {
            "channel",
            "mode",
            "scope",
            "duration_minutes",
            "wake_budget",
            "reader",
            "backlog_cap",
            "digest",
        },
        ["channel"],
    ),
    "tune_out_status": (set(), []),
    "tune_out_backlog": ({"channel", "scope", "after_seq", "limit"}, ["channel"]),
    "typing": ({"channel", "on", "server_id"}, ["channel"]),
    "speak_stream": ({"text", "inference_id"}, ["text"]),
    "speak_stream_end": ({"inference_id", "text", "abort"}, ["inference_id"]),
    # -- mail and the directory (agents/tools/agent_tools.py)
    "agent_send": ({"to", "text"}, ["to", "text"]),
    "directory_list": ({"prefix", "tag", "kind", "owner", "limit", "offset"}, []),
    "directory_search": ({"text", "limit", "offset"}, ["text"]),
    "directory_lookup": ({"address"}, ["address"]),
    "set_busy": ({"busy"}, ["busy"]),
    # -- task agents (agents/tools/task_tools.py)
    "agent_spawn": (
        {
            "handle",
            "description",
            "deadline_seconds",
            "idle_timeout_seconds",
            "turn_limit",
            "home",
        },
        ["handle"],
    ),
    "task_finish": ({"result"}, []),
    "agent_end": ({"handle"}, ["handle"]),
}
"""Each tool, in ``tools/list`` order: its parameters and the required ones, in order."""


class _Untouched:
    """A port that fails the test if anything asks it anything but its connector tools (none:
    the surface is Switchboard's own tools alone; tests/agents/tools/test_connector_tools.py has the
    connectors')."""

    def __getattr__(self, name: str) -> NoReturn:
        raise AssertionError(f"the port was asked for {name!r}")

    prose_mode = "hybrid"  # speak's description follows it

    many_agents = True  # every tool is listed: agents share the board, and this one is a task
    is_task = True

    def connector_tools(self) -> list[Any]:
        return []

    def watch_connector_tools(self, listener: Any) -> None:
        return None

    def watch_inbox(self, listener: Any, details: Any = None) -> None:
        return None

    def offer_sampling(self, key: Any, sampler: Any, client: str) -> None:
        return None  # each session is offered at its initialize


async def _listed() -> list[Any]:
    async with Client(server_for(cast(AgentPort, _Untouched())), mode="legacy") as client:
        return list((await client.list_tools()).tools)


async def test_the_tools_keep_their_names_order_parameters_and_output_schemas() -> None:
    tools = await _listed()

    assert [t.name for t in tools] == list(SURFACE)
    for tool in tools:
        params, required = SURFACE[tool.name]
        assert set(tool.input_schema.get("properties", {})) == params, tool.name
        assert tool.input_schema.get("required", []) == required, tool.name
        assert tool.input_schema["type"] == "object"
        assert tool.output_schema is not None, tool.name
        assert tool.description


async def test_the_input_schemas_keep_their_titles() -> None:
    tools = {t.name: t for t in await _listed()}

    assert tools["channel_list"].input_schema["title"] == "channel_listArguments"
    assert tools["speak"].input_schema["title"] == "speak_toolArguments"
    assert tools["typing"].input_schema["title"] == "typing_toolArguments"


class _OneChannel(_Untouched):
    """A port that knows one channel and nothing else."""

    def channels(self) -> ChannelListing:
        row = ChannelRow(
            ChannelRef("s", "room"), "room", "#room", "#room", "text", "bidirectional", True, "open"
        )
        return ChannelListing([row], {"s": "ready"})


async def test_a_tool_answers_from_the_port_it_was_served_with() -> None:
    async with Client(server_for(cast(AgentPort, _OneChannel())), mode="legacy") as client:
        result = await client.call_tool("channel_list", {})

    data = result.structured_content or {}
    assert data["servers"] == {"s": "ready"}
    assert [(c["name"], c["prose_target"], c["desired"]) for c in data["channels"]] == [
        ("room", "#room", "open")
    ]
