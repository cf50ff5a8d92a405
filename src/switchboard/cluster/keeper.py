"""Keeping leases: heartbeats, renewals every ``ttl/3``, acquisition, handoff, self-fencing.

Each tick heartbeats this instance, renews every lease it holds in one statement, and reads
the live instances and the leases: a key this instance is now the preferred owner of (or one
nobody has renewed for a whole ``ttl``) is acquired, and a held key whose preferred owner has
been live long enough is handed over (:mod:`.placement`). On acquisition the epoch is already
bumped; :meth:`Ownership.acquired` then fences the store, rebuilds the dedupe window, serves
RPC and starts the connector. The local deadline of a lease is the monotonic time its last
good renewal was *sent*, plus ``ttl``, minus a margin: past it the key is dropped at once
(connector stopped, RPC no longer served, store unfenced), whatever the database says later.
Stopping hands every key over gracefully: the instance retires first, so no one picks it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial
from typing import Protocol

import anyio
import structlog

from switchboard.cluster.leases import InstanceRow, LeaseRow, LeaseTable, LeaseTableError
from switchboard.cluster.placement import Hysteresis, preferred_owner, should_hand_over

__all__ = ["Held", "LeaseKeeper", "LeaseStats", "Ownership"]

log = structlog.get_logger(__name__)


class Ownership(Protocol):
    """What holding a key means: starting and stopping what it owns."""

    async def acquired(self, key: str, epoch: int) -> None:
        """Start serving ``key`` under ``epoch`` (raising gives the lease back)."""
        ...

    async def lost(self, key: str, *, graceful: bool) -> None:
        """Stop serving ``key``: at once, or (``graceful``) draining what was taken first."""
        ...


@dataclass(slots=True)
class Held:
    """A lease this instance holds."""

    epoch: int
    since: float
    deadline: float


@dataclass(slots=True)
class LeaseStats:
    """Counts for operators (``/metrics``)."""

    acquired: int = 0
    #: Acquisitions of a key whose previous holder was another instance and did not let go.
    failovers: int = 0
    handed_over: int = 0
    self_fenced: int = 0
    lost: int = 0
    tick_errors: int = 0


class LeaseKeeper:
    """Holds this instance's share of ``keys`` (see the module docstring)."""

    def __init__(
        self,
        table: LeaseTable,
        keys: Iterable[str],
        ownership: Ownership,
        *,
        hysteresis: Hysteresis | None = None,
        margin: float | None = None,
        http_url: str | None = None,
        info: Callable[[], dict[str, object]] | None = None,
        clock: Callable[[], float] = time.monotonic,
        on_tick: Callable[[], None] | None = None,
        on_release: Callable[[str], None] | None = None,
    ) -> None:
        self.table = table
        self.me = table.me
        self.ttl = table.ttl
        self.keys = tuple(dict.fromkeys(keys))
        self.ownership = ownership
        self.hysteresis = hysteresis if hysteresis is not None else Hysteresis()
        # At least a second short of the database's expiry, and never more than a third of it.
        self.margin = margin if margin is not None else min(1.0, self.ttl / 3)
        self.interval = self.ttl / 3
        self.http_url = http_url
        self._info = info
        self._clock = clock
        self._on_tick = on_tick
        self._on_release = on_release
        self.held: dict[str, Held] = {}
        self.stats = LeaseStats()
        #: The last view of the database: live instances (seconds since start), every known
        #: instance's row, and the leases.
        self.live: dict[str, float] = {}
        self.instances: list[InstanceRow] = []
        self.leases: list[LeaseRow] = []
        self.database_ok = False
        self._poked = anyio.Event()
        self._deadline_moved = anyio.Event()
        self._lock = anyio.Lock()
        self._renew_lock = anyio.Lock()
        self._stopping = False
        self._group: anyio.abc.TaskGroup | None = None

    def epoch(self, key: str) -> int | None:
        """The epoch this instance holds ``key`` at, or None."""
        held = self.held.get(key)
        return None if held is None else held.epoch

    def poke(self) -> None:
        """Tick now rather than at the next interval (another instance let a key go)."""
        self._poked.set()

    async def run(
        self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Register, then renew every ``ttl/3``, place every ``ttl/3`` (or when poked) and fence
        on deadlines until cancelled; on the way out hand every key over (shielded).

        Renewal runs on its own, so that starting a connector (which waits for the dedupe
        window to be rebuilt) never delays the renewal of the leases already held."""
        await self._register()
        try:
            async with anyio.create_task_group() as group:
                self._group = group
                group.start_soon(self._watch_deadlines)
                await self.tick()
                group.start_soon(self._renew_every)
                task_status.started()
                while True:
                    with anyio.move_on_after(self.interval):
                        await self._poked.wait()
                    self._poked = anyio.Event()
                    await self.place()
        finally:
            self._group = None
            with anyio.CancelScope(shield=True):
                await self.hand_over_all()

    async def _register(self) -> None:
        while True:
            try:
                await self.table.ensure(self.keys)
                await self.table.register(self.http_url, self._info() if self._info else {})
                return
            except LeaseTableError as exc:
                log.warning("cluster.register_failed", error=str(exc))
                await anyio.sleep(self.interval)

    async def _renew_every(self) -> None:
        while True:
            await anyio.sleep(self.interval)
            await self.renew()

    async def tick(self) -> None:
        """One round: heartbeat and renew, then read the cluster, acquire and hand over."""
        await self.renew()
        await self.place()

    async def renew(self) -> None:
        """Heartbeat, and renew every held lease in one statement; a lease found taken is
        dropped at once."""
        async with self._renew_lock:
            sent = self._clock()
            held_epochs = {key: h.epoch for key, h in self.held.items()}
            try:
                await self.table.heartbeat(self._info() if self._info else None)
                renewed = await self.table.renew(held_epochs)
                self.database_ok = True
            except LeaseTableError as exc:
                self.database_ok = False
                self.stats.tick_errors += 1
                log.warning("cluster.lease_renewal_failed", error=str(exc))
                return
            for key, epoch in held_epochs.items():
                held = self.held.get(key)
                if held is None or held.epoch != epoch:
                    continue  # dropped or taken again meanwhile
                if key in renewed:
                    held.deadline = sent + self.ttl - self.margin
                else:
                    # Someone bumped the epoch (or it was never ours at it): stop at once.
                    self.stats.lost += 1
                    log.warning("cluster.lease_lost", key=key, epoch=epoch)
                    self._drop_now(key)
            self._deadline_moved.set()

    async def place(self) -> None:
        """Read the live instances and the leases; acquire and hand over (module docstring)."""
        async with self._lock:
            if self._stopping:
                return
            try:
                await self._place()
            except LeaseTableError as exc:
                self.stats.tick_errors += 1
                log.warning("cluster.lease_placement_failed", error=str(exc))

    async def _place(self) -> None:
        self.instances = await self.table.instances()
        self.live = live = {i.id: i.up_for for i in self.instances if i.silent_for < self.ttl}
        self.leases = leases = await self.table.leases()
        now = self._clock()
        for row in leases:
            key = row.key
            if key not in self.keys:
                continue
            held = self.held.get(key)
            if held is not None:
                if should_hand_over(key, self.me, now - held.since, live, self.hysteresis):
                    await self._hand_over(key)
                continue
            preferred = preferred_owner(key, live)
            orphaned = row.expires_in < -self.ttl
            mine_before = row.owner == self.me
            if preferred == self.me or orphaned or (mine_before and row.expires_in > 0):
                await self._acquire(key, row)
        if self._on_tick is not None:
            self._on_tick()

    async def _acquire(self, key: str, row: LeaseRow) -> None:
        sent = self._clock()
        epoch = await self.table.acquire(key)
        if epoch is None:
            return
        self.held[key] = Held(
            epoch=epoch, since=self._clock(), deadline=sent + self.ttl - self.margin
        )
        self._deadline_moved.set()
        self.stats.acquired += 1
        if row.owner is not None and row.owner != self.me:
            # Another instance held it and did not hand it over (a release clears the owner).
            self.stats.failovers += 1
        log.info("cluster.lease_acquired", key=key, epoch=epoch, previous=row.owner)
        try:
            await self.ownership.acquired(key, epoch)
        except Exception:
            log.exception("cluster.start_failed", key=key, epoch=epoch)
            self.held.pop(key, None)
            await self.ownership.lost(key, graceful=False)
            await self.table.release(key, epoch)

    async def _hand_over(self, key: str) -> None:
        held = self.held[key]
        log.info("cluster.lease_hand_over", key=key, epoch=held.epoch)
        await self._drop(key, graceful=True)
        self.stats.handed_over += 1
        if await self.table.release(key, held.epoch):
            self._released(key)

    async def _drop(self, key: str, *, graceful: bool) -> None:
        if self.held.pop(key, None) is not None:
            await self.ownership.lost(key, graceful=graceful)

    def _drop_now(self, key: str) -> None:
        """Forget ``key`` now and stop what it runs in the background (never waited for: a
        renewal or a deadline must not wait for a connector to stop)."""
        if self.held.pop(key, None) is None:
            return
        group = self._group
        if group is not None:
            group.start_soon(partial(self.ownership.lost, key, graceful=False))

    async def _watch_deadlines(self) -> None:
        while True:
            self._deadline_moved = anyio.Event()
            if not self.held:
                await self._deadline_moved.wait()
                continue
            key, held = min(self.held.items(), key=lambda item: item[1].deadline)
            wait = held.deadline - self._clock()
            if wait > 0:
                with anyio.move_on_after(wait):
                    await self._deadline_moved.wait()
                continue
            if self.held.get(key) is held:
                self.stats.self_fenced += 1
                log.warning("cluster.self_fenced", key=key, epoch=held.epoch)
                # Under no lock: a renewal stuck on the database must not hold it up.
                self._drop_now(key)

    async def hand_over_all(self) -> None:
        """Retire this instance, then let every key go gracefully, all at once (for a clean
        stop); the leases are renewed meanwhile, so a slow drain never lets one lapse."""
        async with self._lock:
            self._stopping = True
            try:
                await self.table.retire()
            except LeaseTableError as exc:
                log.warning("cluster.retire_failed", error=str(exc))
            async with anyio.create_task_group() as group:
                for key, held in list(self.held.items()):
                    group.start_soon(self._let_go, key, held)

    async def _let_go(self, key: str, held: Held) -> None:
        await self.ownership.lost(key, graceful=True)
        if self.held.get(key) is not held:
            return  # fenced meanwhile: its lease is not this instance's to release
        del self.held[key]
        self.stats.handed_over += 1
        try:
            await self.table.release(key, held.epoch)
        except LeaseTableError as exc:
            log.warning("cluster.release_failed", key=key, error=str(exc))
            return
        self._released(key)

    def _released(self, key: str) -> None:
        if self._on_release is not None:
            self._on_release(key)
