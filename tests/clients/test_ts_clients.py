"""Switchboard's tool results, as the clients people run read them (issue #11, item 2).

Claude Desktop, Claude Code, Cursor and the MCP Inspector are built on the TypeScript MCP SDK,
which checks every result's ``structuredContent`` against the tool's ``outputSchema`` and throws
``MCP error -32602`` when it does not match. These tests run the real thing, pinned by
tests/clients/package-lock.json (install: ``npm ci --prefix tests/clients``): Switchboard runs as
``switchboard run`` with the bundled demo connector, over stdio (the client spawns it) and over
streamable HTTP on an ephemeral loopback port with a bearer token. The TypeScript SDK client
(tests/clients/ts_client.mjs) lists the tools and calls each one once successfully and once
refused; the Inspector CLI lists them and makes a successful and a refused call. Every refusal
must reach the client as an ``isError`` result whose text says what happened and what to do
next. (Before refusals stopped carrying structured content, every refused call here threw
``MCP error -32602: Structured content does not match the tool's output schema``.)

What it deliberately does not check: what each tool does (tests/agents/tools/ does, through the
Python SDK); only that every client can read the answers.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import anyio.streams.text
import pytest

from switchboard.agents.tools.results import REFUSAL_META
from switchboard.agents.tools.server import OWN_TOOLS

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

CLIENTS = Path(__file__).resolve().parent
TS_CLIENT = CLIENTS / "ts_client.mjs"
INSPECTOR = CLIENTS / "node_modules" / "@modelcontextprotocol" / "inspector" / "cli" / "build"
INSTALL = "npm ci --prefix tests/clients"

INVALID = "invalid-arguments"
"""Arguments the input schema rejects: Switchboard's own refusal (not the SDK's validation
text), read like every other refusal."""

SUCCESSES: list[dict[str, Any]] = [
    # The first read waits for the demo connector's first message, so its channels exist.
    {"label": "inbox", "tool": "inbox", "arguments": {"wait_seconds": 20}},
    {"label": "list", "tool": "channel_list", "arguments": {}},
    {
        "label": "publish",
        "tool": "channel_publish",
        "arguments": {"channel": "demo:#general", "text": "hello from the TypeScript SDK"},
    },
    {"label": "speak", "tool": "speak", "arguments": {"text": ">>#general\nhello, everyone"}},
    {"label": "think", "tool": "think", "arguments": {"content": "a private note"}},
    {"label": "message", "tool": "message_get", "arguments": {"seq": 1}},
    {"label": "typing", "tool": "typing", "arguments": {"channel": "demo:#general"}},
    {"label": "stream", "tool": "speak_stream", "arguments": {"text": ">>#general\nstreamed"}},
    {
        "label": "stream-end",
        "tool": "speak_stream_end",
        "arguments": {"inference_id": {"$from": "stream", "field": "inference_id"}},
    },
    {"label": "close", "tool": "channel_close", "arguments": {"channel": "demo:#random"}},
    {
        "label": "decline",
        "tool": "channel_decline",
        "arguments": {"channel": "demo:#random", "message_id": "demo-in-1"},
    },
    {"label": "open", "tool": "channel_open", "arguments": {"channel": "demo:#random"}},
    {"label": "tune-out", "tool": "tune_out", "arguments": {"channel": "demo:#random"}},
    {"label": "tune-out-status", "tool": "tune_out_status", "arguments": {}},
    {"label": "backlog", "tool": "tune_out_backlog", "arguments": {"channel": "demo:#random"}},
    {"label": "send", "tool": "agent_send", "arguments": {"to": "@agent", "text": "a note"}},
    {"label": "dir-list", "tool": "directory_list", "arguments": {}},
    {"label": "dir-search", "tool": "directory_search", "arguments": {"text": "agent"}},
    {"label": "dir-lookup", "tool": "directory_lookup", "arguments": {"address": "@agent"}},
    {"label": "busy", "tool": "set_busy", "arguments": {"busy": True}},
    {"label": "spawn", "tool": "agent_spawn", "arguments": {"handle": "@ts-task"}},
    {"label": "end", "tool": "agent_end", "arguments": {"handle": "@ts-task"}},
]
"""One successful call of every one of Switchboard's tools, in an order that makes each one
succeed (a stream before its end, a close before its decline)."""

NOWHERE = "#nowhere"
REFUSALS: list[tuple[dict[str, Any], str]] = [
    (
        {"tool": "channel_publish", "arguments": {"channel": NOWHERE, "text": "hello"}},
        "unknown-channel",
    ),
    ({"tool": "channel_open", "arguments": {"channel": NOWHERE}}, "unknown-channel"),
    ({"tool": "channel_close", "arguments": {"channel": NOWHERE}}, "unknown-channel"),
    (
        {"tool": "channel_decline", "arguments": {"channel": NOWHERE, "message_id": "m-1"}},
        "unknown-channel",
    ),
    ({"tool": "tune_out", "arguments": {"channel": NOWHERE}}, "unknown-channel"),
    ({"tool": "tune_out_backlog", "arguments": {"channel": NOWHERE}}, "unknown-channel"),
    ({"tool": "typing", "arguments": {"channel": NOWHERE}}, "unknown-channel"),
    (
        {"tool": "speak_stream", "arguments": {"text": "more", "inference_id": "no-such-stream"}},
        "no-stream",
    ),
    ({"tool": "speak_stream_end", "arguments": {"inference_id": "no-such-stream"}}, "no-stream"),
    ({"tool": "message_get", "arguments": {"seq": 999_999}}, "unknown-message"),
    ({"tool": "agent_send", "arguments": {"to": "@nobody", "text": "hi"}}, "unknown-recipient"),
    ({"tool": "directory_list", "arguments": {"limit": 0}}, "directory-refused"),
    ({"tool": "directory_search", "arguments": {"text": ""}}, "directory-refused"),
    ({"tool": "directory_lookup", "arguments": {"address": "nowhere"}}, "unknown-address"),
    ({"tool": "set_busy", "arguments": {"busy": "maybe"}}, INVALID),
    ({"tool": "agent_spawn", "arguments": {"handle": "@agent"}}, "address-taken"),
    ({"tool": "agent_end", "arguments": {"handle": "@nobody"}}, "not-your-task"),
    ({"tool": "task_finish", "arguments": {"result": "done"}}, "unknown-tool"),
    ({"tool": "no_such_tool", "arguments": {}}, "unknown-tool"),
    ({"tool": "inbox", "arguments": {"wait_seconds": -1}}, INVALID),
    ({"tool": "speak", "arguments": {"text": ""}}, INVALID),
    ({"tool": "think", "arguments": {"content": 5}}, INVALID),
]
"""One refused call of every tool that can be refused, and the refusal kind expected."""

NEVER_REFUSED = frozenset({"channel_list", "tune_out_status"})
"""Tools that take no arguments and refuse nothing: there is no refused call to make."""

TASKS_ONLY = frozenset({"task_finish"})
"""Tools offered to task agents only; the plan's one agent is configured, not a task, so its
call is refused as ``unknown-tool`` (tests/agents/tools/test_task_tools.py calls them as a task)."""

PLAN = [
    *SUCCESSES,
    *({"label": f"refused-{i}", **call} for i, (call, _) in enumerate(REFUSALS)),
]
EXPECTED_KIND = {f"refused-{i}": kind for i, (_, kind) in enumerate(REFUSALS)}


def node_or_fail() -> str:
    """The ``node`` executable, failing the test (never skipping) when the clients are missing."""
    node = shutil.which("node")
    if node is None:
        pytest.fail(f"node is not installed; install Node.js 20 or newer, then run `{INSTALL}`")
    if not (CLIENTS / "node_modules" / "@modelcontextprotocol" / "sdk").is_dir():
        pytest.fail(f"the pinned MCP clients are not installed: run `{INSTALL}`")
    return node


def write_config(tmp_path: Path, transport: str, *, token: bool = False) -> Path:
    """A config running the bundled demo connector, its agent on ``transport`` (HTTP: an
    ephemeral loopback port; with ``token``, the bearer token from the environment)."""
    connector = [sys.executable, "-m", "switchboard.connectors.demo", "--hello", "--interval", "1"]
    endpoint = f'transport = "{transport}"\n'
    if transport == "http":
        endpoint += 'host = "127.0.0.1"\nport = 0\n'
    # One [[agents]] table, so the agent is offered the mail, directory and task tools too.
    agent = 'handle = "@agent"\n'
    if token:
        agent += 'token = "${SWITCHBOARD_AGENT_TOKEN}"\n'
    path = tmp_path / f"switchboard-{transport}.toml"
    path.write_text(
        'log_level = "INFO"\n'
        f"[store]\npath = {json.dumps(str(tmp_path / f'{transport}.sqlite'))}\n"
        f"[agent]\n{endpoint}"
        f"[[agents]]\n{agent}"
        f'[[connectors]]\nid = "demo"\ncommand = {json.dumps(connector)}\n'
    )
    return path


def switchboard_run(config: Path) -> list[str]:
    return [sys.executable, "-m", "switchboard", "run", "--config", str(config)]


ENDPOINT = re.compile(r"agent_endpoint\s.*\burl=(\S+)")
"""The line ``switchboard run`` logs once its HTTP socket listens, with the URL."""


@asynccontextmanager
async def http_switchboard(
    tmp_path: Path, config: Path | None = None
) -> AsyncIterator[tuple[str, str]]:
    """``switchboard run`` serving streamable HTTP on an ephemeral loopback port, with a bearer
    token: its URL (as it logs it) and the token. ``config`` (default: the demo's) reads the
    token from ``SWITCHBOARD_AGENT_TOKEN``."""
    token = secrets.token_urlsafe(32)
    env = {**os.environ, "SWITCHBOARD_AGENT_TOKEN": token}
    config = config or write_config(tmp_path, "http", token=True)
    stderr: list[str] = []
    listening = anyio.Event()
    url = ""

    async def read_stderr(stream: anyio.abc.ByteReceiveStream) -> None:
        nonlocal url
        async for line in anyio.streams.text.TextReceiveStream(stream):
            stderr.append(line)
            found = ENDPOINT.search("".join(stderr))
            if found is not None and not listening.is_set():
                url = found.group(1)
                listening.set()
        listening.set()  # it exited: the assertion below shows why

    async with (
        await anyio.open_process(
            switchboard_run(config), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, env=env
        ) as process,
        anyio.create_task_group() as tasks,
    ):
        assert process.stderr is not None
        tasks.start_soon(read_stderr, process.stderr)
        try:
            with anyio.fail_after(30):
                await listening.wait()
            assert url, f"switchboard run never listened:\n{''.join(stderr)}"
            yield url, token
        finally:
            process.terminate()
            with anyio.move_on_after(10):
                await process.wait()
            if process.returncode is None:
                process.kill()


async def run_node(args: list[str], env: Mapping[str, str] | None = None) -> tuple[int, str, str]:
    with anyio.fail_after(120):
        done = await anyio.run_process(
            [node_or_fail(), *args], cwd=CLIENTS, check=False, env=dict(env or os.environ)
        )
    return done.returncode, done.stdout.decode(), done.stderr.decode()


async def ts_report(tmp_path: Path, target: list[str]) -> dict[str, Any]:
    """Run the plan through the TypeScript SDK client against ``target`` (its arguments)."""
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(PLAN))
    code, out, err = await run_node([str(TS_CLIENT), "--plan", str(plan), *target])
    assert code == 0, f"the TypeScript client failed:\n{err}"
    report: dict[str, Any] = json.loads(out)
    return report


def assert_every_client_reads(report: dict[str, Any]) -> None:
    assert set(OWN_TOOLS) - TASKS_ONLY <= set(report["tools"])
    succeeded = {s["tool"] for s in SUCCESSES}
    assert succeeded == set(OWN_TOOLS) - TASKS_ONLY, "a tool has no successful call"
    refused = {call["tool"] for call, _ in REFUSALS}
    assert set(OWN_TOOLS) - refused == NEVER_REFUSED, "a tool that can refuse is not refused"
    calls = report["calls"]
    assert [c["label"] for c in calls] == [s["label"] for s in PLAN]
    threw = {c["label"]: c["error"] for c in calls if c["threw"]}
    assert threw == {}, f"the TypeScript SDK threw instead of returning results: {threw}"
    for call in calls:
        label = call["label"]
        kind = EXPECTED_KIND.get(label)
        if kind is None:
            assert call["isError"] is False, f"{label} failed: {call['text']}"
            assert call["structuredContent"] is not None, label
            continue
        assert call["isError"] is True, label
        assert call["structuredContent"] is None, label
        if kind == INVALID:
            assert "pydantic" not in call["text"], label
        refusal = call["meta"][REFUSAL_META]
        assert refusal["refusal"] == kind, (label, refusal)
        assert refusal["message"] in call["text"], label
        assert f"Next: {refusal['next']}" in call["text"], label


async def test_the_typescript_sdk_reads_every_result_and_refusal_over_stdio(
    tmp_path: Path,
) -> None:
    node_or_fail()
    report = await ts_report(tmp_path, ["--", *switchboard_run(write_config(tmp_path, "stdio"))])
    assert_every_client_reads(report)


async def test_the_typescript_sdk_reads_every_result_and_refusal_over_streamable_http(
    tmp_path: Path,
) -> None:
    node_or_fail()
    async with http_switchboard(tmp_path) as (url, token):
        target = ["--url", url, "--token", token]
        assert_every_client_reads(await ts_report(tmp_path, target))


def inspector(*args: str) -> list[str]:
    """The MCP Inspector's command line (``mcp-inspector --cli``), arguments first."""
    return [str(INSPECTOR / "cli.js"), "--cli", *args]


async def inspector_calls(target: list[str], headers: list[str]) -> None:
    """List the tools, make one successful call and one refused call through the Inspector."""
    code, out, err = await run_node(inspector(*headers, "--method", "tools/list", *target))
    assert code == 0, err
    assert set(OWN_TOOLS) - TASKS_ONLY <= {t["name"] for t in json.loads(out)["tools"]}

    code, out, err = await run_node(
        inspector(*headers, "--method", "tools/call", "--tool-name", "channel_list", *target)
    )
    assert code == 0, err
    listed = json.loads(out)
    assert listed.get("isError") is not True
    assert "channels" in listed["structuredContent"]

    code, out, err = await run_node(
        inspector(
            *headers,
            "--tool-arg",
            f"channel={NOWHERE}",
            "text=hello",
            "--method",
            "tools/call",
            "--tool-name",
            "channel_publish",
            *target,
        )
    )
    assert code == 0, f"the Inspector failed on a refusal:\n{err}"
    refused = json.loads(out)
    assert refused["isError"] is True
    assert "structuredContent" not in refused
    assert refused["_meta"][REFUSAL_META]["refusal"] == "unknown-channel"
    (text,) = [block["text"] for block in refused["content"]]
    assert NOWHERE in text
    assert "Next: call channel_list" in text


async def test_the_mcp_inspector_cli_reads_a_result_and_a_refusal_over_stdio(
    tmp_path: Path,
) -> None:
    node_or_fail()
    await inspector_calls(["--", *switchboard_run(write_config(tmp_path, "stdio"))], [])


async def test_the_mcp_inspector_cli_reads_a_result_and_a_refusal_over_streamable_http(
    tmp_path: Path,
) -> None:
    node_or_fail()
    async with http_switchboard(tmp_path) as (url, token):
        headers = ["--header", f"Authorization: Bearer {token}"]
        await inspector_calls([url, "--transport", "http"], headers)
