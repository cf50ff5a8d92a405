"""The read loop of the benchmarks' bare JSON-RPC hosts (``bench_host.py``, ``bench_ingest.py``).

A baseline host answers every ``channels/incoming`` message and every registered channel as
accepted, without checking or storing anything, and hands responses to the futures waiting for
them. Both benchmarks drive their connector with it, so their baselines are the same loop; each
passes its own JSON parser (the stdlib's for the minimal host, orjson for the bare loop).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

__all__ = ["answer_everything"]


async def answer_everything(
    reader: asyncio.StreamReader,
    loads: Callable[[bytes], Any],
    send: Callable[[dict[str, Any]], None],
    answers: dict[Any, asyncio.Future[Any]],
    registered: asyncio.Event,
) -> None:
    """Read lines until EOF: accept what comes in, set ``registered`` on the first
    registration, and resolve the future of each response by its id."""
    while line := await reader.readline():
        msg = loads(line)
        method = msg.get("method")
        if method == "channels/incoming":
            results = [
                {"messageId": m["messageId"], "accepted": True} for m in msg["params"]["messages"]
            ]
            send({"jsonrpc": "2.0", "id": msg["id"], "result": {"results": results}})
        elif method == "channels/register":
            results = [{"id": c["id"], "accepted": True} for c in msg["params"]["channels"]]
            send({"jsonrpc": "2.0", "id": msg["id"], "result": {"results": results}})
            registered.set()
        elif method is None:
            fut = answers.pop(msg["id"], None)
            if fut is not None:
                fut.set_result(msg)
