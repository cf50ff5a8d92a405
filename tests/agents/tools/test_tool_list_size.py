"""The part of ``tools/list`` a model reads stays under 3,000 tokens (issue #11 item 6).

The model-facing part is each of Switchboard's own tools' name, description and input schema,
as compact JSON (bench/bench_tool_list.py prints it and the whole answer). Tokens are
estimated as bytes / 4, the rule of thumb the bench states. This is a size bound, not a timing.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from switchboard.agents.tools.server import OWN_TOOLS
from switchboard.app import build_server
from switchboard.config import AgentConfig, AgentEntry
from tests.fake import FakeConnector, board_of

pytestmark = pytest.mark.anyio

MAX_TOKENS = 3000
MAX_SHARED_TOKENS = 3600
SHARED_ONLY = {
    "agent_send",
    "directory_list",
    "directory_search",
    "directory_lookup",
    "set_busy",
    "agent_spawn",
    "agent_end",
}


async def _model_facing(tmp_path: Path, mode: str) -> bytes:
    agent = AgentConfig.model_validate({"prose": mode})
    async with (
        board_of(tmp_path, {"s": FakeConnector()}, agent=agent) as board,
        Client(build_server(board, agent="ann"), mode="legacy") as client,
    ):
        tools = (await client.list_tools()).tools
    facing: list[dict[str, Any]] = [
        {"name": t.name, "description": t.description, "inputSchema": t.input_schema}
        for t in tools
        if t.name in OWN_TOOLS
    ]
    return json.dumps(facing, separators=(",", ":"), ensure_ascii=False).encode()


@pytest.mark.parametrize("mode", ["hybrid", "explicit", "locus", "disabled"])
async def test_the_model_facing_tool_list_stays_under_3k_tokens_in_every_prose_mode(
    tmp_path: Path, mode: str
) -> None:
    size = len(await _model_facing(tmp_path, mode))
    assert math.ceil(size / 4) < MAX_TOKENS, f"{size} bytes, ~{math.ceil(size / 4)} tokens"


def _agents() -> list[AgentEntry]:
    return [
        AgentEntry(handle="@ann", roles=["default_delivery"]),
        AgentEntry(handle="@bob"),
    ]


async def _names(board: Any, agent: str) -> set[str]:
    async with Client(build_server(board, agent=agent), mode="legacy") as client:
        return {t.name for t in (await client.list_tools()).tools}


async def test_the_one_agent_shorthand_lists_no_mail_directory_or_task_tools(
    tmp_path: Path,
) -> None:
    async with board_of(tmp_path, {"s": FakeConnector()}) as board:
        names = await _names(board, "agent")
    assert not names & (SHARED_ONLY | {"task_finish"})
    assert "inbox" in names


async def test_agents_sharing_a_board_get_the_mail_directory_and_task_tools_under_3600_tokens(
    tmp_path: Path,
) -> None:
    async with (
        board_of(tmp_path, {"s": FakeConnector()}, agents=_agents()) as board,
        Client(build_server(board, agent="ann"), mode="legacy") as client,
    ):
        tools = (await client.list_tools()).tools
    names = {t.name for t in tools}
    assert names >= SHARED_ONLY
    assert "task_finish" not in names, "a configured agent is no task"
    facing = [
        {"name": t.name, "description": t.description, "inputSchema": t.input_schema}
        for t in tools
        if t.name in OWN_TOOLS
    ]
    size = len(json.dumps(facing, separators=(",", ":"), ensure_ascii=False).encode())
    assert math.ceil(size / 4) < MAX_SHARED_TOKENS, f"{size} bytes"


async def test_task_finish_is_listed_to_a_task_agent_only(tmp_path: Path) -> None:
    async with board_of(tmp_path, {"s": FakeConnector()}, agents=_agents()) as board:
        board.agents.port("ann").spawn_task("@worker")
        assert "task_finish" in await _names(board, "worker")
        assert "task_finish" not in await _names(board, "bob")
