"""A loaded ``switchboard run`` for the shutdown and log tests, with secrets to look for.

:func:`write_config` writes a config whose every secret is a value the tests can grep for
(:data:`SECRETS`): two agents over streamable HTTP, each proven by a bearer token (``@busy``
owns default delivery; nothing is routed to ``@idle``), an operator token for the status
surface, and the streaming connector (tests/integration/stream_connector.py) with an ``env``
secret; more ``[[connectors]]`` tables can be added. :func:`running` starts it as a real
process (the secrets reach it through its environment, as an operator passes them), reads its
stderr as it comes (:class:`Host`), and yields once the connector streams. :func:`long_poll`
is an agent: the MCP Python SDK's client over streamable HTTP, with one long poll open.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import httpx2
import orjson
from anyio.abc import Process, TaskGroup
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

HERE = Path(__file__).parent
STREAM = HERE / "stream_connector.py"

SECRETS = {
    "BUSY_TOKEN": "busy-agent-token-" + "q7w8e9r0t1y2u3i4",
    "IDLE_TOKEN": "idle-agent-token-" + "a5s6d7f8g9h0j1k2",
    "STATUS_TOKEN": "status-operator-" + "z3x4c5v6b7n8m9l0",
    "CONNECTOR_SECRET": "connector-env-secret-" + "p1o2i3u4y5t6",
}
"""Each secret by the environment variable the config takes it from."""


def connector_table(server_id: str, argv: list[str], extra: str = "") -> str:
    """A ``[[connectors]]`` table whose ``env`` holds the connector secret."""
    return (
        f'[[connectors]]\nid = "{server_id}"\ncommand = {orjson.dumps(argv).decode()}\n'
        'env = { CONNECTOR_SECRET = "${CONNECTOR_SECRET}" }\n'
        f"{extra}"
    )


def write_config(folder: Path, *, rate: float = 300.0, more: str = "", level: str = "INFO") -> Path:
    """The config (see the module docstring), logging at ``level``; the connector's report
    goes to ``folder / "connector.json"`` when its link closes."""
    stream = [sys.executable, str(STREAM), str(folder / "connector.json"), "--rate", str(rate)]
    text = (
        f'log_level = "{level}"\n'
        f"[store]\npath = {orjson.dumps(str(folder / 'store.sqlite')).decode()}\n"
        '[agent]\ntransport = "http"\nport = 0\n'
        '[[agents]]\nhandle = "@busy"\nroles = ["default_delivery"]\ntoken = "${BUSY_TOKEN}"\n'
        '[[agents]]\nhandle = "@idle"\ntoken = "${IDLE_TOKEN}"\n'
        '[status]\ntoken = "${STATUS_TOKEN}"\n'
        + connector_table("s", stream, "restart = false\n")
        + more
    )
    path = folder / "switchboard.toml"
    path.write_text(text)
    return path


@dataclass
class Host:
    """One running ``switchboard run``: its process and its stderr as read so far."""

    process: Process
    raw: bytearray = field(default_factory=bytearray)
    url: str = ""
    _grown: anyio.Event = field(default_factory=anyio.Event)
    ended: anyio.Event = field(default_factory=anyio.Event)

    @property
    def log(self) -> str:
        return self.raw.decode("utf-8", "replace")

    async def pump(self) -> None:
        assert self.process.stderr is not None
        async for chunk in self.process.stderr:
            self.raw.extend(chunk)
            self._grown.set()
            self._grown = anyio.Event()
        self.ended.set()
        self._grown.set()

    async def until(self, marker: str) -> None:
        """Wait until ``marker`` is in the log."""
        start = 0
        while True:
            found = self.raw.find(marker.encode(), max(0, start - len(marker)))
            if found >= 0:
                return
            if self.ended.is_set():
                raise AssertionError(f"the host ended before {marker!r}:\n{self.log[-3000:]}")
            start = len(self.raw)
            await self._grown.wait()

    async def stop(self) -> tuple[int, float]:
        """SIGTERM; the exit code and the seconds until the process exited."""
        signalled = time.perf_counter()
        self.process.send_signal(signal.SIGTERM)
        code = await self.process.wait()
        seconds = time.perf_counter() - signalled
        await self.ended.wait()
        return code, seconds


@asynccontextmanager
async def running(
    config: Path, *, json_log: bool = False, launcher: list[str] | None = None
) -> AsyncIterator[tuple[Host, TaskGroup]]:
    """``switchboard run --config config`` (through ``launcher``, the argv that stands for
    ``python -m switchboard``, when given), until the block ends; yields once its connector
    ``s`` streams and the agents' endpoint is known (``Host.url``)."""
    options = ["--log-json"] if json_log else []
    command = [
        *(launcher or [sys.executable, "-m", "switchboard"]),
        *options,
        "run",
        "--config",
        str(config),
    ]
    env = {**os.environ, **SECRETS}
    async with await anyio.open_process(
        command, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL
    ) as process:
        host = Host(process)
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(host.pump)
                with anyio.fail_after(60):
                    await host.until("agent_endpoint")
                    await host.until("line=streaming" if not json_log else '"line": "streaming"')
                found = re.search(r"(http://[^\s\"']+/mcp)", host.log)
                assert found is not None, host.log
                host.url = found.group(1)
                yield host, group
                group.cancel_scope.cancel()
        finally:
            if process.returncode is None:
                process.kill()


@asynccontextmanager
async def agent(url: str, token: str) -> AsyncIterator[Client]:
    """An agent: the MCP Python SDK's client over streamable HTTP, proven by ``token``."""
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(timeout=60, headers=headers) as http,
        Client(streamable_http_client(url, http_client=http), mode="legacy") as client,
    ):
        yield client


async def open_long_poll(group: TaskGroup, url: str, token: str) -> Poll:
    """Start the long poll of the agent ``token`` proves (:func:`long_poll`); return once its
    client sent it (a host at DEBUG then logs ``inbox_waiting`` when it waits on the store)."""
    poll = Poll()
    group.start_soon(long_poll, url, token, poll)
    await poll.started.wait()
    return poll


@dataclass
class Poll:
    """What an agent's one long poll came to."""

    started: anyio.Event = field(default_factory=anyio.Event)
    answer: dict[str, object] | None = None
    error: BaseException | None = None
    done: anyio.Event = field(default_factory=anyio.Event)


async def long_poll(url: str, token: str, poll: Poll, wait_seconds: float = 30) -> None:
    """Open one ``inbox`` long poll as the agent ``token`` proves; record how it ended.

    ``poll.started`` is set just before the poll is sent, after a first call has made a round
    trip (by then the client's other requests, such as its GET stream, have been made).
    """
    try:
        async with agent(url, token) as client:
            await client.call_tool("inbox", {})
            poll.started.set()
            result = await client.call_tool("inbox", {"wait_seconds": wait_seconds})
            poll.answer = {"is_error": result.is_error, **(result.structured_content or {})}
    except Exception as exc:  # how the poll ended is what the test reads
        poll.error = exc
    finally:
        poll.done.set()


async def attached(url: str, token: str, ready: anyio.Event) -> None:
    """An agent that attaches a session (its client opens its stream of server messages) and
    then does nothing; it ends when its session does, or when cancelled."""
    try:
        async with agent(url, token) as client:
            await client.list_tools()
            ready.set()
            await anyio.sleep_forever()
    except Exception:  # the host ended the session: what the test reads is the host's side
        ready.set()
