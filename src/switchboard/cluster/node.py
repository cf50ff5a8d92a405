"""One cluster instance: leases, the NATS bus, requests to owners and the shared head, wired
to what a host runs.

The details are in the docstring of :class:`ClusterNode`.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import anyio
import structlog

from switchboard.cluster.bus import ClusterBus, HeadFollower, subject_token
from switchboard.cluster.keeper import LeaseKeeper
from switchboard.cluster.leases import LeaseTable, LeaseTableError
from switchboard.cluster.pg.channels import CHANNELS, ChannelMirror, ChannelMirrorError
from switchboard.cluster.placement import Hysteresis
from switchboard.cluster.replica import ChannelReplica
from switchboard.cluster.rpc import OwnerService, RemoteOwner, describe
from switchboard.config import ClusterConfig, ConnectorConfig
from switchboard.connections.owner import ConnectorOwner
from switchboard.events import (
    ChannelsChanged,
    ChannelsRegistered,
    ChannelsRemoved,
    ConnectorExited,
)

__all__ = ["JOB_PREFIX", "ClusterNode", "ClusterOwners", "FencedStore", "NodeParts"]

log = structlog.get_logger(__name__)

JOB_PREFIX = "@job:"
#: Seconds between two tries of a mirror write the database refused to take.
MIRROR_RETRY = 1.0


class FencedStore(Protocol):
    """What of the shared message store the node drives."""

    @property
    def latest_seq(self) -> int: ...

    @property
    def stale_rejections(self) -> int: ...

    def fence(self, server_id: str, epoch: int) -> None: ...

    def unfence(self, server_id: str) -> None: ...

    async def rebuild_dedupe(self, server_id: str) -> None: ...

    def advance_head(self, seq: int) -> None: ...

    async def poll_head(self) -> int: ...

    def on_commit(self, listener: Callable[[int], None]) -> None:
        """Call ``listener`` with the head after each commit *this* instance made."""
        ...


@dataclass
class NodeParts:
    """What the host gives the node to run: each connector's supervision, a graceful drain of
    its session, and the singleton jobs."""

    supervise: Callable[[ConnectorConfig], Awaitable[None]]
    drain: Callable[[str], Awaitable[None]]
    sessions: Mapping[str, ConnectorOwner]
    #: The replica of other instances' connectors' channels in the local registry.
    replica: ChannelReplica
    jobs: Mapping[str, Callable[[], Awaitable[None]]] = field(default_factory=dict)
    #: What to read again when a shared table's version row moves (``leaves``: the channels
    #: agents left); a table every call reads afresh (the directory) needs nothing.
    reload: Mapping[str, Callable[[], object]] = field(default_factory=dict)


class ClusterOwners(Mapping[str, ConnectorOwner]):
    """The owner of each connector as seen from this instance (see the module docstring)."""

    def __init__(self, node: ClusterNode, sessions: Mapping[str, ConnectorOwner]) -> None:
        self._node = node
        self._sessions = sessions

    def __getitem__(self, server_id: str) -> ConnectorOwner:
        if self._node.keeper.epoch(server_id) is not None:
            return self._sessions[server_id]
        remote = self._node.remote.get(server_id)
        if remote is None or remote.owner_instance is None:
            raise KeyError(server_id)
        return remote

    def __iter__(self) -> Iterator[str]:
        return (sid for sid in self._node.remote if sid in self)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __contains__(self, server_id: object) -> bool:
        if not isinstance(server_id, str):
            return False
        try:
            self[server_id]
        except KeyError:
            return False
        return True


class ClusterNode:
    """One instance of the cluster.

    Every instance loads the same connectors. :class:`ClusterNode` keeps this instance's share of
    them (and of the singleton jobs, leased as ``@job:<name>``) with a
    :class:`~switchboard.cluster.keeper.LeaseKeeper`. Acquiring a connector, in this order: the
    epoch is bumped (by the acquisition itself), the store is fenced at that epoch, the dedupe
    window is rebuilt from the connector's newest batches, its requests are served over NATS,
    and only then does the connector start. Losing it: the connector stops (drained first on a
    handover), requests are no longer served, the store is unfenced. :meth:`owners` is the map
    the host's parts ask a connector's owner in: the local session where this instance holds the
    lease, else a :class:`~switchboard.cluster.rpc.RemoteOwner`. Each commit made here is
    announced; announcements from elsewhere and a 1 s poll move the local head. The owner of a
    connector writes its registrations into the channel mirror in PostgreSQL at each change (and
    once at acquisition, which replaces the former owner's rows); every other instance reads them
    from there into its replica.
    """

    def __init__(
        self,
        cluster: ClusterConfig,
        database_url: str,
        store: FencedStore,
        connectors: Sequence[ConnectorConfig],
        *,
        jobs: Sequence[str] = ("lifetimes", "retention"),
        http_url: str | None = None,
        hysteresis: Hysteresis | None = None,
        poll_interval: float = 1.0,
    ) -> None:
        self.cluster = cluster
        self.me = cluster.instance_id
        self.store = store
        self.configs = {c.id: c for c in connectors}
        self.bus = ClusterBus(
            cluster.nats_url, cluster.subject_prefix, self.me, coalesce=cluster.head_interval
        )
        self.table = LeaseTable(database_url, self.me, cluster.lease_ttl)
        self.remote = {c.id: RemoteOwner(c, self.bus) for c in connectors}
        self.service = OwnerService(self.bus, self._local_owner)
        self.mirror = ChannelMirror(database_url, self.me)
        keys = [*self.configs, *(JOB_PREFIX + j for j in jobs)]
        self.keeper = LeaseKeeper(
            self.table,
            keys,
            self,
            hysteresis=hysteresis or Hysteresis(cluster.hold, cluster.settle),
            http_url=http_url,
            info=self._info,
            on_tick=self._ticked,
            on_release=self._released,
        )
        self.head = HeadFollower(
            store, self.bus, interval=poll_interval, coalesce=cluster.head_interval
        )
        self._parts: NodeParts | None = None
        self._group: anyio.abc.TaskGroup | None = None
        self._running: dict[str, tuple[anyio.CancelScope, anyio.Event]] = {}
        #: Connectors whose replica is being read, and those to read (again) meanwhile.
        self._refreshing: set[str] = set()
        self._stale: set[str] = set()
        self._versions: dict[str, int] = dict.fromkeys(("leaves", "directory", "lifetimes"), -1)
        self._poll_versions = anyio.Event()
        #: Whose channels each connector's replica holds: the owner then, and the version of
        #: the mirror read.
        self._replicated: dict[str, tuple[str | None, int]] = {}
        #: Owned connectors whose mirror is being written, and those to write (again).
        self._writing: set[str] = set()
        self._unmirrored: set[str] = set()
        #: Mirror writes committed, and those that failed (tried again); mirror reads held
        #: as a replica, and those that failed.
        self.mirror_writes = 0
        self.mirror_failures = 0
        self.mirror_reads = 0
        self.mirror_read_failures = 0
        self._channel_tokens = {subject_token(CHANNELS + sid): sid for sid in self.configs}
        self.started_at = time.time()

    # -- what the host reads

    def owners(self, sessions: Mapping[str, ConnectorOwner]) -> ClusterOwners:
        """The owner map the host's parts use (local sessions where this instance owns)."""
        return ClusterOwners(self, sessions)

    def owns(self, key: str) -> bool:
        return self.keeper.epoch(key) is not None

    def _local_owner(self, server_id: str) -> ConnectorOwner | None:
        if self._parts is None or not self.owns(server_id):
            return None
        return self._parts.sessions.get(server_id)

    def observe(self, event: object) -> None:
        """A host event listener: a connector this instance runs changed its registrations
        (or exited, which drops them), so its mirror is written again."""
        if isinstance(
            event, ChannelsRegistered | ChannelsChanged | ChannelsRemoved | ConnectorExited
        ):
            self._mirror_soon(event.server_id)

    def _mirror_soon(self, server_id: str) -> None:
        """Write ``server_id``'s mirror from the registry as it is when the write starts: a
        burst of changes costs one or two writes, never one per change."""
        group = self._group
        if group is None or not self.owns(server_id):
            return
        self._unmirrored.add(server_id)
        if server_id not in self._writing:
            self._writing.add(server_id)
            group.start_soon(self._write_mirror, server_id)

    async def _write_mirror(self, server_id: str) -> None:
        try:
            while server_id in self._unmirrored:
                self._unmirrored.discard(server_id)
                epoch, parts = self.keeper.epoch(server_id), self._parts
                if epoch is None or parts is None:
                    return
                owner = self._local_owner(server_id)
                # How it stands now, with when that was true (newer than the last heartbeat).
                word = None if owner is None else {**describe(owner), "beat": time.time_ns()}
                try:
                    version = await self.mirror.write(
                        server_id, epoch, parts.replica.local(server_id), word
                    )
                except ChannelMirrorError as exc:
                    # Until it is written the others keep what they read; try again.
                    self.mirror_failures += 1
                    log.warning(
                        "cluster.channels_mirror_failed", server_id=server_id, error=str(exc)
                    )
                    self._unmirrored.add(server_id)
                    await anyio.sleep(MIRROR_RETRY)
                    continue
                if version is not None:
                    self.mirror_writes += 1
                    # Committed: the others read it now (or at their next version poll).
                    await self.bus.announce_invalidation(CHANNELS + server_id)
        finally:
            self._writing.discard(server_id)

    def _heard_invalidation(self, token: str) -> None:
        sid = self._channel_tokens.get(token)
        if sid is not None:
            self._refresh(sid)
        elif token in self._versions:
            self._poll_versions.set()

    def changed(self, name: str) -> None:
        """A shared table (``leaves``) changed here: the others read it again at once."""
        group = self._group
        if group is not None:
            group.start_soon(self.bus.announce_invalidation, name)

    async def _follow_versions(self) -> None:
        """Every ``poll_interval`` (or when told), read the version rows and reload what
        moved: an invalidation lost on NATS costs a second, never a stale view."""
        while True:
            with anyio.move_on_after(self.head.interval):
                await self._poll_versions.wait()
            self._poll_versions = anyio.Event()
            parts = self._parts
            if parts is None:
                continue
            try:
                versions = await self.table.versions()
            except LeaseTableError as exc:
                log.debug("cluster.versions_poll_failed", error=str(exc))
                continue
            for name, version in versions.items():
                if self._versions.get(name) != version:
                    self._versions[name] = version
                    if name.startswith(CHANNELS):
                        sid = name[len(CHANNELS) :]
                        held = self._replicated.get(sid)
                        if sid in self.configs and (held is None or held[1] != version):
                            self._refresh(sid)
                        continue
                    reload = parts.reload.get(name)
                    if reload is not None:
                        reload()

    def _refresh(self, server_id: str) -> None:
        """Read ``server_id``'s mirror into the replica (again, if a read is under way)."""
        group, parts = self._group, self._parts
        if group is None or parts is None:
            return
        self._stale.add(server_id)
        if server_id in self._refreshing:
            return
        self._refreshing.add(server_id)

        async def refresh() -> None:
            try:
                while server_id in self._stale:
                    self._stale.discard(server_id)
                    await self._read_mirror(server_id, parts)
            finally:
                self._refreshing.discard(server_id)

        group.start_soon(refresh)

    async def _read_mirror(self, server_id: str, parts: NodeParts) -> None:
        if self.owns(server_id):
            return
        if self._unowned(server_id, parts):
            return
        remote = self.remote[server_id]
        asked = remote.owner_instance
        try:
            read = await self.mirror.read(server_id, asked)
        except ChannelMirrorError as exc:
            # The replica is kept as it was; the next tick reads again.
            self.mirror_read_failures += 1
            self._replicated.pop(server_id, None)
            log.debug("cluster.channels_read_failed", server_id=server_id, error=str(exc))
            return
        # Checked again after the read: acquired meanwhile (the connector's own registrations
        # are the ones to hold), or its owner gone.
        if self.owns(server_id) or self._unowned(server_id, parts):
            return
        owner = remote.owner_instance
        if owner == asked and read.word is not None:
            # Said with these channels: at least as fresh as the owner's last heartbeat.
            remote.update(owner, read.word, int(read.word.get("beat", 0)))
        if parts.replica.hold(server_id, read.descriptors):
            self.mirror_reads += 1
            self._replicated[server_id] = (owner, read.version)
        else:
            self.mirror_read_failures += 1
            self._replicated.pop(server_id, None)

    def _unowned(self, server_id: str, parts: NodeParts) -> bool:
        """Nobody runs ``server_id`` now: none of its channels is offered here, whatever the
        mirror still holds."""
        if self.remote[server_id].owner_instance is not None:
            return False
        parts.replica.drop(server_id)
        self._replicated[server_id] = (None, -1)
        return True

    def _info(self) -> dict[str, object]:
        connectors: dict[str, Any] = {}
        if self._parts is not None:
            for sid in self.configs:
                owner = self._local_owner(sid)
                if owner is not None:
                    connectors[sid] = {**describe(owner), "epoch": self.keeper.epoch(sid)}
        return {
            "connectors": connectors,
            # When this word was true (an instance restarted under its name keeps counting up).
            "beat": time.time_ns(),
            "head": self.store.latest_seq,
            "nats": self.bus.connected,
            "stale_rejections": self.store.stale_rejections,
        }

    def _released(self, key: str) -> None:
        """Tell the others a lease is free now: they place at once, not at their next tick."""
        group = self._group
        if group is not None:
            group.start_soon(self.bus.publish_hint, "lease", key)

    def _heard_release(self, _key: str) -> None:
        self.keeper.poke()

    def _ticked(self) -> None:
        """After each lease tick: point every remote owner at its connector's owner now."""
        infos = {i.id: i.info for i in self.keeper.instances}
        for row in self.keeper.leases:
            remote = self.remote.get(row.key)
            if remote is None:
                continue
            before = remote.owner_instance
            if row.owner is None or row.owner == self.me or row.expires_in <= 0:
                remote.update(None, None)
            else:
                info = infos.get(row.owner, {})
                described = info.get("connectors", {}).get(row.key)
                # A mirror write's word carries its own time; a heartbeat's is the info's.
                beat = (described or {}).get("beat") or info.get("beat", 0)
                remote.update(row.owner, described, int(beat))
            if row.owner == self.me:
                self._replicated.pop(row.key, None)
                continue
            held = self._replicated.get(row.key)
            if remote.owner_instance != before or held is None or held[0] != remote.owner_instance:
                # A new owner (or none), or a failed read: read the mirror again (a change
                # under the same owner is the version poll's to notice).
                self._refresh(row.key)

    # -- running

    async def run(
        self,
        parts: NodeParts,
        *,
        task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """Run until cancelled; on the way out every lease is handed over (shielded)."""
        self._parts = parts
        self.store.on_commit(self.bus.announce_head)
        async with anyio.create_task_group() as group:
            self._group = group
            await group.start(self.bus.run)
            await group.start(self.service.run)
            await group.start(self.head.run)
            await self.bus.follow_invalidations(self._heard_invalidation)
            await self.bus.follow_hints("lease", self._heard_release)
            group.start_soon(self._follow_versions)
            try:
                await group.start(self.keeper.run)
                task_status.started()
                await anyio.sleep_forever()
            finally:
                self._group = None
                group.cancel_scope.cancel()
        with anyio.CancelScope(shield=True):
            await self.table.aclose()
            await self.mirror.aclose()

    async def acquired(self, key: str, epoch: int) -> None:
        parts, group = self._parts, self._group
        if parts is None or group is None:
            raise RuntimeError("the node is not running")
        if key.startswith(JOB_PREFIX):
            name = key[len(JOB_PREFIX) :]
            job = parts.jobs.get(name)
            if job is not None:
                self._start(key, job)
            return
        parts.replica.drop(key)
        # Written at the new epoch before the connector registers anything: the former
        # owner's rows go, and what this connector registers replaces them.
        self.mirror.forget(key)
        self._mirror_soon(key)
        self.store.fence(key, epoch)
        await self.store.rebuild_dedupe(key)
        await self.service.serve(key)
        config = self.configs[key]
        self._start(key, lambda: parts.supervise(config))

    def _start(self, key: str, run: Callable[[], Awaitable[None]]) -> None:
        group = self._group
        if group is None or key in self._running:
            return
        scope = anyio.CancelScope()
        done = anyio.Event()
        self._running[key] = (scope, done)

        async def runner() -> None:
            try:
                with scope:
                    await run()
            finally:
                done.set()
                if self._running.get(key, (None, None))[0] is scope:
                    del self._running[key]

        group.start_soon(runner)

    async def lost(self, key: str, *, graceful: bool) -> None:
        running = self._running.get(key)
        is_job = key.startswith(JOB_PREFIX)
        if not is_job and not graceful:
            # At once: nothing more is served or committed for it from here.
            await self.service.stop(key)
            self.store.unfence(key)
        if running is not None:
            scope, done = running
            if graceful and not is_job and self._parts is not None:
                await self._parts.drain(key)
            scope.cancel()
            with anyio.move_on_after(10):
                await done.wait()
        if not is_job and graceful:
            await self.service.stop(key)
            self.store.unfence(key)
        if not is_job:
            self.mirror.forget(key)
