"""A Deferred backed by a future is answered from the future's callback, exactly once."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from switchboard.transport import Deferred, Peer, RpcError, memory_link_pair

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def pair(futures: dict[str, asyncio.Future[Any]]) -> AsyncIterator[Peer]:
    async def on_request(method: str, params: Any) -> Any:
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        futures[method] = fut

        def then(value: Any) -> Any:
            if value == "explode":
                raise ValueError("then failed")
            return {"value": value}

        return Deferred.on_future(fut, then)

    a, b = memory_link_pair()
    server = Peer(a, on_request=on_request, name="server")
    client = Peer(b, name="client")
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.run)
        tg.start_soon(client.run)
        yield client
        tg.cancel_scope.cancel()


async def test_the_answer_is_the_then_of_the_futures_value_once_it_is_set() -> None:
    futures: dict[str, asyncio.Future[Any]] = {}
    async with pair(futures) as client:
        got: dict[str, Any] = {}

        async def ask() -> None:
            got["ok"] = await client.request("ok", {})

        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                tg.start_soon(ask)
                await anyio.wait_all_tasks_blocked()
                assert "ok" not in got
                futures["ok"].set_result(41)
    assert got["ok"] == {"value": 41}


async def test_a_failed_future_or_a_failing_then_is_answered_with_an_error() -> None:
    futures: dict[str, asyncio.Future[Any]] = {}
    async with pair(futures) as client:
        errors: dict[str, RpcError] = {}

        async def ask(method: str) -> None:
            try:
                await client.request(method, {})
            except RpcError as exc:
                errors[method] = exc

        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                for method in ("fails", "then", "cancelled"):
                    tg.start_soon(ask, method)
                await anyio.wait_all_tasks_blocked()
                futures["fails"].set_exception(RuntimeError("store down"))
                futures["then"].set_result("explode")
                futures["cancelled"].cancel()
    assert {m: e.code for m, e in errors.items()} == {
        "fails": -32603,
        "then": -32603,
        "cancelled": -32603,
    }
    assert all("store down" not in e.message for e in errors.values())
