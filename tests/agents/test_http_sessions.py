"""The agents' HTTP endpoint's sessions: one JSON body per request, and what an idle one keeps.

Real ``serve(config)`` in this process, real sockets, a real ``mcp`` SDK client; the session's
message router is looked at through the garbage collector (what it keeps is the point).
"""

from __future__ import annotations

import gc
import types
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import JSONRPCResponse
from pydantic import SecretStr

from switchboard.config import AgentConfig, Config
from tests.helpers import serving, suite_store_config

__all__: list[str] = []

pytestmark = pytest.mark.anyio

TOKEN = "tok-" + "s1e2s3s4i5o6n7s8x9y0"
INITIALIZE: dict[str, Any] = {
    "jsonrpc": "2.0",
    "id": "a-string-id",
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"},
    },
}


def _config(tmp_path: Path) -> Config:
    return Config(
        store=suite_store_config(tmp_path),
        agent=AgentConfig(transport="http", port=0, token=SecretStr(TOKEN)),
    )


def _routed_tool_lists() -> int:
    """How many of the SDK's session message routers still hold a ``tools/list`` answer."""
    gc.collect()
    held = 0
    for thing in gc.get_objects():
        if not isinstance(thing, types.CoroutineType) or thing.cr_code.co_name != "message_router":
            continue
        if thing.cr_frame is None:
            continue
        message = thing.cr_frame.f_locals.get("message")
        if isinstance(message, JSONRPCResponse) and "tools" in message.result:
            held += 1
    return held


async def test_a_request_is_answered_with_one_json_body_not_an_event_stream(
    tmp_path: Path,
) -> None:
    async with serving(_config(tmp_path)) as url, httpx2.AsyncClient(timeout=30) as http:
        with anyio.fail_after(30):
            answer = await http.post(
                url,
                json=INITIALIZE,
                headers={
                    "Accept": "application/json, text/event-stream",
                    "Authorization": f"Bearer {TOKEN}",
                },
            )
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("application/json")
    assert answer.json()["id"] == "a-string-id"
    assert answer.json()["result"]["serverInfo"]["name"]


async def test_an_idle_session_does_not_keep_the_tool_list_it_was_last_answered(
    tmp_path: Path,
) -> None:
    async with (
        serving(_config(tmp_path)) as url,
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}) as http,
        Client(streamable_http_client(url, http_client=http), mode="legacy") as client,
    ):
        with anyio.fail_after(30):
            listed = await client.list_tools()
            assert "inbox" in {tool.name for tool in listed.tools}
            # The release follows the answer: wait for it (a router that kept the answer
            # would keep it until this times out).
            while _routed_tool_lists():
                await anyio.lowlevel.checkpoint()
            # The session still works after its router was handed the release.
            again = await client.list_tools()
    assert [tool.name for tool in again.tools] == [tool.name for tool in listed.tools]
