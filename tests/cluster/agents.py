"""What the cluster tests' agents share: an MCP Python SDK client over streamable HTTP, an
inbox read (once, or on and on in the background), and a NATS server of a test's own (to kill
and start again)."""

from __future__ import annotations

import subprocess
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any, TypeVar

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.cluster.harness import free_port

_T = TypeVar("_T")


@asynccontextmanager
async def agent(url: str, token: str) -> AsyncIterator[Client]:
    """An agent's MCP session on the instance at ``url``."""
    async with (
        httpx2.AsyncClient(timeout=30, headers={"Authorization": f"Bearer {token}"}) as http,
        Client(streamable_http_client(url + "/mcp", http_client=http), mode="legacy") as client,
    ):
        yield client


async def read(client: Client, wait: float = 2) -> list[dict[str, Any]]:
    """One ``inbox`` read (it acknowledges what the previous read returned)."""
    result = await client.call_tool("inbox", {"wait_seconds": wait})
    assert not result.is_error, result.content
    messages: list[dict[str, Any]] = (result.structured_content or {})["messages"]
    return messages


@asynccontextmanager
async def reading(
    client: Client, keep: Callable[[dict[str, Any]], _T], wait: float
) -> AsyncIterator[list[_T]]:
    """Read ``client``'s inbox on and on (``wait`` seconds a read) while the block runs: a
    list of ``keep`` of each message, growing as they come. On leaving, the read under way
    ends before the block does."""
    got: list[_T] = []
    stop = anyio.Event()

    async def loop() -> None:
        while not stop.is_set():
            got.extend(keep(m) for m in await read(client, wait))

    async with anyio.create_task_group() as group:
        group.start_soon(loop)
        try:
            yield got
        finally:
            stop.set()


@contextmanager
def private_nats() -> Iterator[tuple[str, Callable[[], None], Callable[[], None]]]:
    """A NATS server of the test's own, with ways to kill it and to start it again."""
    port = free_port()
    argv = ["/usr/sbin/nats-server", "-a", "127.0.0.1", "-p", str(port)]
    holder: list[subprocess.Popen[bytes]] = []

    def start() -> None:
        holder.append(subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))

    def kill() -> None:
        holder[-1].kill()
        holder[-1].wait(10)

    start()
    try:
        yield f"nats://127.0.0.1:{port}", kill, start
    finally:
        for process in holder:
            if process.poll() is None:
                process.kill()
                process.wait(10)
