"""End to end: a real connector subprocess in, a real MCP client out (issue #2 acceptance)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

import anyio
import orjson
import pytest
from mcp import Client, StdioServerParameters

from switchboard.app import build_server
from switchboard.config import demo_connector_command
from switchboard.events import ChannelsRegistered, ConnectorExited
from switchboard.transport import StdioLink
from tests.helpers import Recorder, connector, running_board

pytestmark = pytest.mark.anyio

RAW = str(Path(__file__).with_name("raw_connector.py"))


async def _inbox_until(
    client: Client, predicate: Any, *, within: float = 20.0
) -> list[dict[str, Any]]:
    """Read the inbox (waiting inside the tool) until ``predicate(messages)`` holds."""
    seen: list[dict[str, Any]] = []
    with anyio.fail_after(within):
        while not predicate(seen):
            result = await client.call_tool("inbox", {"wait_seconds": 5})
            assert not result.is_error, result.content
            seen.extend((result.structured_content or {})["messages"])
    return seen


async def test_a_message_the_connector_sends_comes_out_of_the_inbox_tool(tmp_path: Path) -> None:
    demo = connector("demo", demo_connector_command("--hello", "--interval", "0"))
    async with (
        running_board(tmp_path, demo) as board,
        Client(build_server(board, agent="agent"), mode="legacy") as client,
    ):
        seen = await _inbox_until(client, lambda ms: len(ms) >= 1)
    hello = seen[0]
    assert hello["server_id"] == "demo"
    assert hello["channel_id"].startswith("demo:")
    assert hello["text"]


async def test_channel_publish_reaches_the_connector_and_returns_its_message_id(
    tmp_path: Path,
) -> None:
    demo = connector("demo", demo_connector_command("--interval", "0"))
    recorder = Recorder()
    async with running_board(tmp_path, demo, recorder=recorder) as board:
        await recorder.wait_kind(ChannelsRegistered)
        async with Client(build_server(board, agent="agent"), mode="legacy") as client:
            result = await client.call_tool(
                "channel_publish", {"channel": "demo:#general", "text": "Is anyone around?"}
            )
            assert not result.is_error, result.content
            data = result.structured_content or {}
            assert data["status"] == "delivered"
            assert data["message_id"]
            # The demo community answers questions, quoting the id the connector gave us.
            answers = await _inbox_until(
                client, lambda ms: any(data["message_id"] in m["text"] for m in ms)
            )
    assert any(m["channel_id"] == "demo:#general" for m in answers)


async def test_a_killed_connector_is_restarted_and_registers_again(tmp_path: Path) -> None:
    demo = connector("demo", demo_connector_command("--interval", "0"))
    recorder = Recorder()
    async with running_board(tmp_path, demo, recorder=recorder) as board:
        await recorder.wait_kind(ChannelsRegistered)
        link = board.sessions["demo"].link
        assert isinstance(link, StdioLink)
        os.kill(link.pid, signal.SIGKILL)
        await recorder.wait_kind(ConnectorExited)
        assert board.registry.server_entries("demo") == []
        await recorder.wait_kind(ChannelsRegistered, nth=2)
        assert board.supervisor.attempts["demo"] == 2
        async with Client(build_server(board, agent="agent"), mode="legacy") as client:
            listed = await client.call_tool("channel_list", {})
    names = {c["channel_id"] for c in (listed.structured_content or {})["channels"]}
    assert "demo:#general" in names


async def test_a_connector_that_prints_junk_lines_on_stdout_still_works(tmp_path: Path) -> None:
    demo = connector("demo", demo_connector_command("--junk", "--hello", "--interval", "0"))
    async with (
        running_board(tmp_path, demo) as board,
        Client(build_server(board, agent="agent"), mode="legacy") as client,
    ):
        seen = await _inbox_until(client, lambda ms: len(ms) >= 1)
        result = await client.call_tool(
            "channel_publish", {"channel": "demo:#random", "text": "still here"}
        )
    assert seen
    assert (result.structured_content or {})["status"] == "delivered"


async def test_malformed_json_rpc_gets_error_objects_and_the_session_survives(
    tmp_path: Path,
) -> None:
    out = tmp_path / "answers.jsonl"
    raw = connector("raw", [sys.executable, RAW, "malformed", str(out)])
    async with (
        running_board(tmp_path, raw) as board,
        Client(build_server(board, agent="agent"), mode="legacy") as client,
    ):
        seen = await _inbox_until(client, lambda ms: any(m["message_id"] == "m-good" for m in ms))
        assert board.sessions["raw"].state.value == "ready"
    answers = [orjson.loads(line) for line in out.read_bytes().splitlines()]
    codes = [a.get("error", {}).get("code") if isinstance(a, dict) else None for a in answers]
    assert codes[:6] == [-32700, -32600, -32600, -32601, -32602, -32602]
    assert answers[0]["id"] is None
    assert answers[6]["result"]["results"][0]["accepted"] is False
    assert answers[7]["result"]["results"] == [{"messageId": "m-good", "accepted": True}]
    assert [m["message_id"] for m in seen] == ["m-good"]
    # No error leaks internals: messages are short and carry no tracebacks.
    for a in answers[:6]:
        assert "Traceback" not in orjson.dumps(a).decode()


def _toml(text: str) -> str:
    return orjson.dumps(text).decode()


def _write_config(path: Path, store: Path, connectors: str) -> Path:
    path.write_text(
        f"""
log_level = "INFO"
[store]
path = "{store}"
[agent]
transport = "stdio"
{connectors}
"""
    )
    return path


async def test_a_restart_of_switchboard_loses_no_accepted_message(tmp_path: Path) -> None:
    store = tmp_path / "durable.sqlite"
    accepted_log = tmp_path / "accepted.txt"
    first = _write_config(
        tmp_path / "first.toml",
        store,
        f"""
[[connectors]]
id = "raw"
command = [{_toml(sys.executable)}, {_toml(RAW)}, "counting", {_toml(str(accepted_log))}]
restart = false
""",
    )
    # The first Switchboard takes a stream of messages and is killed (SIGKILL, the whole process
    # group) in the middle of it; its stdin stays open so the MCP server keeps running.
    proc = await anyio.open_process(
        [sys.executable, "-m", "switchboard", "run", "--config", str(first)],
        stdout=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        assert proc.stderr is not None
        buffer = b""
        with anyio.fail_after(30):
            while b"accepted 200" not in buffer:
                chunk = await proc.stderr.receive()
                buffer = buffer[-200:] + chunk
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        await proc.wait()
        await proc.aclose()
    accepted = accepted_log.read_text().split()
    assert len(accepted) >= 200
    second = _write_config(tmp_path / "second.toml", store, "")
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "switchboard", "run", "--config", str(second)]
    )
    stored: list[str] = []
    async with Client(params, mode="legacy") as client:
        with anyio.fail_after(30):
            while True:
                result = await client.call_tool("inbox", {"limit": 500})
                data = result.structured_content or {}
                stored.extend(m["message_id"] for m in data["messages"])
                if not data["more"]:
                    break
    assert set(accepted) <= set(stored)
    assert len(stored) == len(set(stored))


async def test_the_documented_example_connector_works_and_keeps_stdout_for_the_wire(
    tmp_path: Path, logs: list[MutableMapping[str, Any]]
) -> None:
    """docs/connectors.md's example, spawned for real: no log line may leak onto stdout, and
    the same text published twice echoes twice (each message has its own id, so the host
    deduplicates neither)."""
    echo = connector("echo", [sys.executable, str(Path(__file__).with_name("echo_connector.py"))])
    recorder = Recorder()
    async with (
        running_board(tmp_path, echo, recorder=recorder) as board,
        Client(build_server(board, agent="agent"), mode="legacy") as client,
    ):
        await recorder.wait_kind(ChannelsRegistered)
        published = [
            await client.call_tool("channel_publish", {"channel": "echo:room", "text": "hello"})
            for _ in range(2)
        ]
        seen = await _inbox_until(client, lambda ms: len(ms) >= 2)
    outcomes = [(p.structured_content or {})["status"] for p in published]
    assert outcomes == ["delivered", "delivered"]
    assert [m["text"] for m in seen] == ["you said: hello", "you said: hello"]
    assert not [e for e in logs if e["event"] == "junk_line_skipped"]


async def test_a_real_mcp_agent_can_attach_to_the_demo_over_stdio(tmp_path: Path) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "switchboard", "demo", "--agent", "stdio", "--interval", "0.2"],
    )
    async with Client(params, mode="legacy") as client:
        seen = await _inbox_until(client, lambda ms: len(ms) >= 2)
        listed = (await client.call_tool("channel_list", {})).structured_content or {}
    assert {m["server_id"] for m in seen} == {"demo"}
    assert {c["channel_id"] for c in listed["channels"]} >= {"demo:#general", "demo:#random"}
