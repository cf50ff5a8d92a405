"""Cluster mode's start: the host as one instance of many (``[cluster]``, docs/cluster.md).

The same board as a single process, with three differences: its owner map answers for a
connector owned elsewhere through that instance (:class:`~switchboard.cluster.node.ClusterOwners`),
the connectors and the singleton jobs run only while this instance holds their lease, and
stopping hands every lease over before the links close. Imported only when ``[cluster]`` is
set, so the default install never loads the PostgreSQL or NATS clients.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from functools import partial

import anyio

from switchboard.app.board import Switchboard
from switchboard.app.stores import open_stores
from switchboard.cluster.node import ClusterNode, NodeParts
from switchboard.cluster.pg.leaves import PgChannelLeaves
from switchboard.cluster.pg.message_store import PgMessageStore
from switchboard.cluster.presence import ClusterPresence
from switchboard.cluster.replica import ChannelReplica
from switchboard.cluster.view import ClusterStatus
from switchboard.config import Config
from switchboard.events import ChannelsRemoved, HostEvent, Listener
from switchboard.store import Leave

__all__ = ["cluster_started"]


class _AnnouncedLeaves:
    """The shared leaves, telling the other instances of each change this instance makes (they
    read them again at once; a lost word costs them a second, see the node's version poll)."""

    def __init__(self, leaves: PgChannelLeaves, changed: Callable[[str], None]) -> None:
        self._leaves = leaves
        self._changed = changed

    @property
    def version(self) -> int:
        return self._leaves.version

    def __contains__(self, key: object) -> bool:
        return key in self._leaves

    def __len__(self) -> int:
        return len(self._leaves)

    def rows(self) -> frozenset[Leave]:
        return self._leaves.rows()

    def leave(self, agent: str, server_id: str, channel_id: str) -> bool:
        changed = self._leaves.leave(agent, server_id, channel_id)
        if changed:
            self._changed("leaves")
        return changed

    def rejoin(self, agent: str, server_id: str, channel_id: str) -> bool:
        changed = self._leaves.rejoin(agent, server_id, channel_id)
        if changed:
            self._changed("leaves")
        return changed

    def close(self) -> None:
        self._leaves.close()


class _GoneInstances:
    """Whether an instance is gone: missing from the live instances (no heartbeat for a
    ``lease_ttl``) and still missing ``grace`` seconds later, so that a view taken before a
    new instance's first heartbeat never ends the tasks it has just started."""

    def __init__(self, node: ClusterNode, grace: float) -> None:
        self._node = node
        self._grace = grace
        self._missing: dict[str, float] = {}

    def __call__(self, instance: str) -> bool:
        if instance in self._node.keeper.live:
            self._missing.pop(instance, None)
            return False
        now = time.monotonic()
        return now - self._missing.setdefault(instance, now) >= self._grace


@asynccontextmanager
async def cluster_started(
    config: Config, *, listener: Listener | None = None, http_url: str | None = None
) -> AsyncIterator[Switchboard]:
    """Open the shared store, join the cluster, yield the host; hand over and stop on exit."""
    cluster, url = config.cluster, config.store.url
    if cluster is None or url is None:
        raise ValueError('cluster mode needs [cluster] and [store] backend = "postgres"')
    async with open_stores(config.store, fencing=True) as stores:
        messages, leaves = stores.messages, stores.leaves
        if not isinstance(messages, PgMessageStore) or not isinstance(leaves, PgChannelLeaves):
            raise TypeError("cluster mode runs on the PostgreSQL store")
        node = ClusterNode(cluster, url, messages, config.connectors, http_url=http_url)

        def heard(event: HostEvent) -> None:
            node.observe(event)
            if listener is not None:
                listener(event)

        board = Switchboard(
            config,
            stores.messages,
            listener=heard,
            decisions=stores.decisions,
            directory=stores.directory,
            leaves=_AnnouncedLeaves(leaves, node.changed),
            lifetime_records=stores.lifetimes,
            owners_view=node.owners,
            cluster_view=ClusterStatus(node),
        )
        # The directory's online flag is the cluster's word: every instance's session counts.
        presence = ClusterPresence(url, cluster.instance_id, cluster.lease_ttl)
        board.attachments.share(presence)
        await board.restore()
        parts = NodeParts(
            supervise=board.supervisor.supervise,
            drain=board.drain,
            sessions=board.sessions,
            # Only the router hears of a replica's change (its owner runs the lifecycle).
            replica=ChannelReplica(
                board.registry, lambda sid: board.router.observe(ChannelsRemoved(sid, ()))
            ),
            reload={"leaves": leaves.refresh},
            jobs={
                # One instance ends configured agents by idle_ttl and the tasks of instances
                # that are gone; each instance ends its own tasks (its roster holds them).
                "lifetimes": partial(
                    board.lifetimes.run,
                    tasks=False,
                    gone=_GoneInstances(node, cluster.lease_ttl),
                ),
                **({} if board.retention is None else {"retention": board.retention.run}),
            },
        )

        async def hand_over_when_stopping() -> None:
            # At once, not after the listeners drained: the connectors refuse new batches
            # from now on, so the sooner their next owners start them, the shorter the gap.
            await board.stopping.wait()
            with anyio.CancelScope(shield=True):
                # Side by side: a slow database must not delay the handover.
                async with anyio.create_task_group() as both:
                    both.start_soon(presence.retire)
                    both.start_soon(node.keeper.hand_over_all)

        async with anyio.create_task_group() as tg:
            tg.start_soon(partial(board.run, connectors=False, singletons=False))
            tg.start_soon(partial(board.lifetimes.run, configured=False))
            await tg.start(node.run, parts)
            tg.start_soon(presence.run)
            tg.start_soon(hand_over_when_stopping)
            try:
                yield board
            finally:
                board.begin_stopping()
                with anyio.CancelScope(shield=True):
                    await presence.retire()
                    # Each connector drains and its lease is let go, so the next owner starts
                    # it at once instead of waiting for the lease to expire.
                    await node.keeper.hand_over_all()
                    await board._finish_connectors()
                tg.cancel_scope.cancel()
