"""Opening the durable things a config names: :func:`open_stores`, the one place a backend is
chosen.

Today there is one backend, the embedded SQLite file of ``[store] path``
(:mod:`switchboard.store.sqlite`): the message store (``synchronous`` as configured), the
decision log (always ``full``: a decision is durable before it is true), the directory, the
channel leaves and the agents' lifetime records, all in that file. Everything else reaches them
through the interfaces of :mod:`switchboard.store.interface` and
:mod:`switchboard.directory.interface`; a second backend is a second branch here, and
tests/store/contract/ runs the same suite against it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass

import anyio

from switchboard.config import StoreConfig
from switchboard.directory import Directory
from switchboard.store.interface import LifetimeRecords
from switchboard.store.sqlite import ChannelLeaves, DecisionLog, MessageStore, lifetime_records

__all__ = ["Stores", "open_stores"]


@dataclass(frozen=True, slots=True)
class Stores:
    """Every durable thing of one host, open."""

    messages: MessageStore
    decisions: DecisionLog
    directory: Directory
    leaves: ChannelLeaves
    lifetimes: LifetimeRecords


@asynccontextmanager
async def open_stores(config: StoreConfig) -> AsyncIterator[Stores]:
    """Open the durable things ``config`` names; close them, shielded, on the way out (the
    message store last: it commits what was submitted)."""
    path = config.path
    messages = await MessageStore.open(path, synchronous=config.synchronous)
    async with AsyncExitStack() as stack:
        stack.push_async_callback(_shielded, messages.aclose)
        decisions = await DecisionLog.open(path, synchronous="full")
        stack.push_async_callback(_shielded, decisions.aclose)
        directory = Directory.open(path)
        stack.callback(directory.close)
        leaves = ChannelLeaves.open(path)
        stack.callback(leaves.close)
        yield Stores(messages, decisions, directory, leaves, lifetime_records(str(path)))


async def _shielded(close: Callable[[], Awaitable[None]]) -> None:
    with anyio.CancelScope(shield=True):
        await close()
