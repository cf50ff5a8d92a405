"""An agent process for the delivery tests: it reads its inbox over streamable HTTP, then long
polls until it is killed.

Run as ``python inbox_agent.py URL``. It prints one line per step on stdout: ``read <ids>``
after its first read, ``polling`` just before the long poll (``inbox`` with
``wait_seconds=60``), and ``answered <ids>`` if that poll is ever answered.
"""

from __future__ import annotations

import sys

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client


def _ids(result: object) -> str:
    data = getattr(result, "structured_content", None) or {}
    return ",".join(m["message_id"] for m in data.get("messages", []))


def _say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


async def main(url: str) -> None:
    async with (
        httpx2.AsyncClient(timeout=120) as http,
        Client(streamable_http_client(url, http_client=http), mode="legacy") as client,
    ):
        first = await client.call_tool("inbox", {})
        _say(f"read {_ids(first)}")
        _say("polling")
        answered = await client.call_tool("inbox", {"wait_seconds": 60})
        _say(f"answered {_ids(answered)}")


if __name__ == "__main__":
    anyio.run(main, sys.argv[1])
