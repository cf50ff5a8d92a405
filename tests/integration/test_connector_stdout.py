"""A connector that prints a banner on stdout: logged, skipped, never answered (issue #10, 4).

The connector is a real subprocess over stdio (tests/integration/raw_connector.py, ``banner``
mode), as discord-mcpl and slack-mcpl behave at start-up (peers.md §2, §9).
"""

from __future__ import annotations

import sys
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

import anyio
import orjson
import pytest
from mcp import Client

from switchboard.app import build_server
from tests.helpers import connector, running_board

pytestmark = pytest.mark.anyio

RAW = str(Path(__file__).with_name("raw_connector.py"))
BANNER = "[raw-connector] Client initialized (MCPL mode)"


async def test_a_banner_on_a_connectors_stdout_is_logged_and_never_answered(
    tmp_path: Path, logs: list[MutableMapping[str, Any]]
) -> None:
    out = tmp_path / "banner.jsonl"
    raw = connector("raw", [sys.executable, RAW, "banner", str(out)], restart=False)
    # The report is written before m-after-banner is sent, so it exists once that arrives.
    async with (
        running_board(tmp_path, raw) as board,
        Client(build_server(board, agent="agent"), mode="legacy") as client,
    ):
        seen: list[dict[str, Any]] = []
        with anyio.fail_after(20):
            while not any(m["message_id"] == "m-after-banner" for m in seen):
                result = await client.call_tool("inbox", {"wait_seconds": 5})
                seen.extend((result.structured_content or {})["messages"])
        assert board.sessions["raw"].state.value == "ready"
    report = orjson.loads(out.read_bytes())
    assert report == {"loose": []}  # nothing answered the banner (no -32700 with id null)
    (junk,) = [e for e in logs if e["event"] == "junk_line_skipped"]
    assert junk["detail"] == BANNER
    assert junk["log_level"] == "warning"
    assert junk["peer"] == "connector:raw"
