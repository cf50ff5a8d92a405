"""A real child process over stdio for the transport tests: a Python script given as source.

A child's stdin is the only link that writes at once (``NdjsonStreamLink.try_write``), so
the tests of that path run against one.
"""

from __future__ import annotations

import sys
import textwrap
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio

from switchboard.transport import Peer, StdioLink, spawn_stdio

__all__ = ["python_child", "serving_peer"]


@asynccontextmanager
async def python_child(folder: Path, source: str, name: str = "child") -> AsyncIterator[StdioLink]:
    """Run ``source`` (dedented) as a Python script in a child process; yield the link to it."""
    script = folder / f"{name}.py"
    script.write_text(textwrap.dedent(source))
    async with spawn_stdio([sys.executable, str(script)], name=name) as link:
        yield link


@asynccontextmanager
async def serving_peer(link: StdioLink) -> AsyncIterator[Peer]:
    """A ``Peer`` running over ``link`` for the block; closed at its end."""
    peer = Peer(link, name="host")
    async with anyio.create_task_group() as tg:
        tg.start_soon(peer.run)
        yield peer
        await peer.aclose()
