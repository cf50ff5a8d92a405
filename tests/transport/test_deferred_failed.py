"""``Deferred.on_future(..., failed=)``: the future's exception is turned into the answer's.

The incoming handler answers a batch straight from the store's commit future this way, with
a storage outage turned into its own error object and no second future in between.
"""

from __future__ import annotations

import asyncio
from typing import Any

import anyio
import pytest

from switchboard.transport import Deferred, Peer, RpcError, memory_link_pair

pytestmark = pytest.mark.anyio


class _Outage(Exception):
    pass


def _translate(exc: Exception) -> Exception:
    if isinstance(exc, _Outage):
        return RpcError(-32603, "storage unavailable", {"reason": "storage-unavailable"})
    return exc


async def test_a_failed_future_is_answered_with_the_error_failed_made_of_it() -> None:
    futures: dict[str, asyncio.Future[Any]] = {}

    async def on_request(method: str, params: Any) -> Any:
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        futures[method] = fut
        return Deferred.on_future(fut, lambda v: {"value": v}, failed=_translate)

    a, b = memory_link_pair()
    server = Peer(a, on_request=on_request, name="server")
    client = Peer(b, name="client")
    answers: dict[str, Any] = {}

    async def ask(method: str) -> None:
        try:
            answers[method] = await client.request(method, {})
        except RpcError as exc:
            answers[method] = (exc.code, exc.message, exc.data)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.run)
            tg.start_soon(client.run)
            async with anyio.create_task_group() as asks:
                for method in ("ok", "outage", "other", "cancelled"):
                    asks.start_soon(ask, method)
                await anyio.wait_all_tasks_blocked()
                futures["ok"].set_result(7)
                futures["outage"].set_exception(_Outage("disk full"))
                futures["other"].set_exception(RuntimeError("bug"))
                futures["cancelled"].cancel()
            tg.cancel_scope.cancel()
    assert answers["ok"] == {"value": 7}
    assert answers["outage"] == (-32603, "storage unavailable", {"reason": "storage-unavailable"})
    assert answers["other"][0] == -32603
    assert answers["cancelled"][0] == -32603
