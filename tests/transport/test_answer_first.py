"""A future-backed answer leaves before the work that need not hold it up (issue #14).

``Deferred.on_future(..., after=...)``: once the future is done the peer hands the answer to
the link and only then runs ``after``. Over a child's stdio, with nothing else in flight, the
answer is written from the future's callback itself, so the child has it while ``after``
still runs. The child here is a real process: it asks once, reads the answer, and tells the
test through a Unix socket that it did.
"""

from __future__ import annotations

import asyncio
import socket
import sys
import textwrap
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

import anyio
import pytest

from switchboard.transport import Deferred, Peer, RpcError, memory_link_pair, spawn_stdio

pytestmark = pytest.mark.anyio

Logs = list[MutableMapping[str, Any]]

# Asks "work" once, reads the answer, then connects to the socket at argv[1] and sends it.
_CHILD = textwrap.dedent(
    """
    import socket, sys
    sys.stdout.write('{"jsonrpc":"2.0","id":1,"method":"work","params":{}}\\n')
    sys.stdout.flush()
    answer = sys.stdin.readline()
    with socket.socket(socket.AF_UNIX) as s:
        s.connect(sys.argv[1])
        s.sendall(answer.encode())
    sys.stdin.read()
    """
)


async def test_the_child_has_the_answer_while_the_after_work_still_runs(tmp_path: Path) -> None:
    child = tmp_path / "child.py"
    child.write_text(_CHILD)
    where = str(tmp_path / "told.sock")
    told = socket.socket(socket.AF_UNIX)
    told.bind(where)
    told.listen(1)
    told.settimeout(10)
    seen: dict[str, Any] = {}
    done = anyio.Event()

    def after(value: Any) -> None:
        # Blocks the event loop on purpose: the answer can reach the child only if it was
        # written before this ran.
        conn, _ = told.accept()
        with conn:
            conn.settimeout(10)
            seen["child read"] = conn.recv(4096)
        seen["after got"] = value
        done.set()

    async def on_request(method: str, params: Any) -> Any:
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        fut.set_result(7)
        return Deferred.on_future(fut, lambda v: {"value": v}, after=after)

    with anyio.fail_after(20):
        async with spawn_stdio([sys.executable, str(child), where], name="child") as link:
            peer = Peer(link, on_request=on_request, name="host")
            async with anyio.create_task_group() as tg:
                tg.start_soon(peer.run)
                await done.wait()
                await peer.aclose()
    told.close()
    assert seen["after got"] == 7
    assert b'"result":{"value":7}' in seen["child read"]


async def test_after_work_that_fails_is_logged_and_the_answer_stands(logs: Logs) -> None:
    def after(value: Any) -> None:
        raise RuntimeError("listener broke")

    async def on_request(method: str, params: Any) -> Any:
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        asyncio.get_running_loop().call_soon(fut.set_result, 3)
        return Deferred.on_future(fut, lambda v: {"value": v}, after=after)

    a, b = memory_link_pair()
    server = Peer(a, on_request=on_request, name="server")
    client = Peer(b, name="client")
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.run)
            tg.start_soon(client.run)
            assert await client.request("work", {}) == {"value": 3}
            # The peer goes on answering after a failed after-step.
            assert await client.request("again", {}) == {"value": 3}
            tg.cancel_scope.cancel()
    failures = [entry for entry in logs if entry["event"] == "after_answer_failed"]
    assert [entry["method"] for entry in failures] == ["work", "again"]


async def test_after_work_does_not_run_when_the_future_failed() -> None:
    ran: list[Any] = []

    async def on_request(method: str, params: Any) -> Any:
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        asyncio.get_running_loop().call_soon(fut.set_exception, OSError("disk gone"))
        return Deferred.on_future(fut, lambda v: {"value": v}, after=ran.append)

    a, b = memory_link_pair()
    server = Peer(a, on_request=on_request, name="server")
    client = Peer(b, name="client")
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.run)
            tg.start_soon(client.run)
            with pytest.raises(RpcError):
                await client.request("work", {})
            tg.cancel_scope.cancel()
    assert ran == []


async def test_a_request_whose_future_is_done_already_is_settled_before_the_next_is_handled() -> (
    None
):
    """A store commit made on the event loop's thread hands back a done future: its answer and
    after-work happen at once, not a turn of the loop later behind the requests read with it."""
    order: list[str] = []

    async def on_request(method: str, params: Any) -> Any:
        order.append(f"handle {method}")
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        fut.set_result(method)
        return Deferred.on_future(
            fut, lambda v: {"value": v}, after=lambda v: order.append(f"after {v}")
        )

    a, b = memory_link_pair()
    server = Peer(a, on_request=on_request, name="server")
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.run)
            # Two requests in one frame (a batch): the dispatcher has both before either is
            # handled.
            await b.send(
                b'[{"jsonrpc":"2.0","id":1,"method":"one","params":{}},'
                b'{"jsonrpc":"2.0","id":2,"method":"two","params":{}}]'
            )
            answer = await b.receive()
            tg.cancel_scope.cancel()
    assert order == ["handle one", "after one", "handle two", "after two"]
    assert b'"result":{"value":"one"}' in answer
    assert b'"result":{"value":"two"}' in answer
