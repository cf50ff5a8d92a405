"""``channel_list`` shows the feature sets a server's grant left disabled (issue #10, 1)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from switchboard.app import build_server
from tests.fake import ALL_CHANNELS, FakeConnector, board_with

pytestmark = pytest.mark.anyio


async def test_channel_list_shows_each_disabled_set_with_what_it_misses_and_how_to_enable_it(
    tmp_path: Path,
) -> None:
    fake = FakeConnector(
        mcpl={
            "version": "0.5",
            "pushEvents": True,
            "channels": dict(ALL_CHANNELS),
            "contextHooks": {"beforeInference": True},
            "featureSets": {
                "chat": {"description": "d", "uses": ["channels.publish", "pushEvents"]},
                "memory": {
                    "description": "d",
                    "uses": ["pushEvents", "contextHooks.beforeInference.observe"],
                },
            },
        }
    )
    async with (
        board_with(tmp_path, fake, grant=["channels.*", "pushEvents"]) as board,
        Client(build_server(board, agent="a"), mode="legacy") as client,
    ):
        result = await client.call_tool("channel_list", {})
    data: dict[str, Any] = result.structured_content or {}
    assert data["servers"] == {"s1": "ready"}
    assert data["disabled_feature_sets"] == {
        "s1": [
            {
                "name": "memory",
                "reason": "capability_denied",
                "missing": ["contextHooks.beforeInference.observe"],
                "enable_with": 'grant = ["channels.*", "pushEvents", '
                '"contextHooks.beforeInference.observe"]',
                "why_not": None,
            }
        ]
    }


async def test_channel_list_leaves_out_servers_whose_sets_are_all_enabled(tmp_path: Path) -> None:
    fake = FakeConnector()
    async with (
        board_with(tmp_path, fake) as board,
        Client(build_server(board, agent="a"), mode="legacy") as client,
    ):
        result = await client.call_tool("channel_list", {})
    data: dict[str, Any] = result.structured_content or {}
    assert data["disabled_feature_sets"] == {}
