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

from switchboard.config import AgentConfig
from switchboard.tools import build_server
from switchboard.tools.server import OWN_TOOLS
from tests.host.fake import FakeConnector, board_of

pytestmark = pytest.mark.anyio

MAX_TOKENS = 3000


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
