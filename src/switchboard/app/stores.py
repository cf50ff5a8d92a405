"""Opening the durable things a config names: :func:`open_stores`, the one place a backend is
chosen.

``[store] backend = "sqlite"`` (the default) is the embedded SQLite file of ``[store] path``
(:mod:`switchboard.store.sqlite`): the message store (``synchronous`` as configured), the
decision log (always ``full``: a decision is durable before it is true), the directory, the
channel leaves and the agents' lifetime records, all in that file. ``backend = "postgres"`` is
the same things in the shared database of ``[store] url`` (:mod:`switchboard.cluster.pg`, the
cluster extra, imported only then). Everything else reaches them through the interfaces of
:mod:`switchboard.store.interface` and :mod:`switchboard.directory.interface`;
tests/store/contract/ runs the same suite against both.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass

import anyio

from switchboard.config import ConfigError, StoreConfig
from switchboard.directory import Directory
from switchboard.store.interface import (
    DecisionLogProtocol,
    LeaveStore,
    LifetimeRecords,
    MessageStoreProtocol,
)
from switchboard.store.sqlite import ChannelLeaves, DecisionLog, MessageStore, lifetime_records

__all__ = ["Stores", "open_stores"]


@dataclass(frozen=True, slots=True)
class Stores:
    """Every durable thing of one host, open."""

    messages: MessageStoreProtocol
    decisions: DecisionLogProtocol
    directory: Directory
    leaves: LeaveStore
    lifetimes: LifetimeRecords


@asynccontextmanager
async def open_stores(config: StoreConfig, *, fencing: bool = False) -> AsyncIterator[Stores]:
    """Open the durable things ``config`` names; close them, shielded, on the way out (the
    message store last: it commits what was submitted).

    ``fencing`` (cluster mode, PostgreSQL only): a connector's batches commit only under the
    lease epoch its owner fenced them with (see :class:`PgMessageStore`).

    Raises:
        ConfigError: ``backend = "postgres"`` without the cluster extra installed.
    """
    if config.backend == "postgres":
        async with _open_postgres(config, fencing=fencing) as stores:
            yield stores
        return
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


@asynccontextmanager
async def _open_postgres(config: StoreConfig, *, fencing: bool) -> AsyncIterator[Stores]:
    try:
        from switchboard.cluster.pg.decisions import PgDecisionLog
        from switchboard.cluster.pg.directory import PgDirectoryDb
        from switchboard.cluster.pg.leaves import PgChannelLeaves, PgLifetimeRecords
        from switchboard.cluster.pg.message_store import PgMessageStore
        from switchboard.cluster.pg.shared import SharedTables
    except ImportError as exc:
        raise ConfigError(
            'store.backend = "postgres" needs the cluster extra, which is not installed: '
            "pip install 'switchboard[cluster]'"
        ) from exc
    assert config.url is not None  # the config model insists
    url = config.url
    messages = await PgMessageStore.open(url, synchronous=config.synchronous, fencing=fencing)
    async with AsyncExitStack() as stack:
        stack.push_async_callback(_shielded, messages.aclose)
        decisions = await PgDecisionLog.open(url)
        stack.push_async_callback(_shielded, decisions.aclose)
        tables = SharedTables(url)
        stack.callback(tables.close)
        directory = Directory(PgDirectoryDb(tables, url))
        leaves = await anyio.to_thread.run_sync(PgChannelLeaves, tables)
        yield Stores(messages, decisions, directory, leaves, PgLifetimeRecords(tables))


async def _shielded(close: Callable[[], Awaitable[None]]) -> None:
    with anyio.CancelScope(shield=True):
        await close()
