"""A client that calls before a connector has registered is told the world is still coming.

``switchboard run`` runs as a real process over stdio with a connector that never finishes
its handshake (a process that reads nothing and answers nothing), as a connector that is slow
to start looks to a client that calls at once (the MCP Inspector's CLI starts a fresh
Switchboard for every call). The MCP Python SDK's client is the agent.
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import orjson
import pytest
from mcp import Client, StdioServerParameters

pytestmark = pytest.mark.anyio

SLOW = [sys.executable, "-c", "import time; time.sleep(120)"]


async def test_before_a_connector_registers_channel_list_and_a_refusal_say_it_is_still_connecting(
    tmp_path: Path,
) -> None:
    config = tmp_path / "switchboard.toml"
    config.write_text(
        f"[store]\npath = {orjson.dumps(str(tmp_path / 's.sqlite')).decode()}\n"
        f'[[connectors]]\nid = "chat"\ncommand = {orjson.dumps(SLOW).decode()}\n'
    )
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "switchboard", "run", "--config", str(config)]
    )
    with anyio.fail_after(60):
        async with Client(params, mode="legacy") as client:
            listed = await client.call_tool("channel_list", {})
            refused = await client.call_tool(
                "channel_publish", {"channel": "#general", "text": "hello"}
            )
    data = listed.structured_content
    assert data is not None
    assert data["channels"] == []
    assert data["servers"] == {"chat": "connecting"}
    assert data["note"].startswith("Still connecting to server 'chat': its channels are not")
    assert "Try again in a moment" in data["note"]

    assert refused.is_error
    (block,) = refused.content
    assert block.type == "text"
    assert "Still connecting to server 'chat', so the channel may not be registered yet." in (
        block.text
    )
    assert "Next: call channel_list in a moment" in block.text
    assert refused.meta is not None
    facts = refused.meta["switchboard/refusal"]
    assert facts["refusal"] == "unknown-channel"
    assert facts["connecting"] == ["chat"]
