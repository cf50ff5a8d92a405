"""The hints between instances over NATS core: heads, invalidations, and the connection.

NATS carries no data and nothing durable: a hint may be lost, so every one is backed by a
poll of PostgreSQL (:class:`HeadFollower`). After each local commit the committer announces
the new head on ``<prefix>.head``; announcements coalesce, one per :data:`HEAD_COALESCE` at
most, so what a follower pays per announcement is shared by every commit in it. Changes of
shared tables (directory, roster, leaves) announce ``<prefix>.inval.<name>``. The connection
is retried forever in the background: while it is down announcements are dropped, requests
are refused at once, and everything still works by polling. Subscriptions are kept here and
made again whenever the client connects, so a caller subscribes once whatever the state of
the server.
"""

from __future__ import annotations

import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Final, Protocol

import anyio
import nats
import structlog
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.errors import Error as NatsError
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeout

__all__ = [
    "HEAD_COALESCE",
    "BusDown",
    "ClusterBus",
    "HeadFollower",
    "NoResponders",
    "RequestTimedOut",
    "SharedHead",
    "subject_token",
]

log = structlog.get_logger(__name__)

_SAFE_TOKEN = re.compile(r"[A-Za-z0-9_-]+")


def subject_token(name: str) -> str:
    """``name`` as one NATS subject token: as is when it is plain, else ``=`` and its hex."""
    return name if _SAFE_TOKEN.fullmatch(name) else "=" + name.encode().hex()


class BusDown(Exception):
    """NATS is not connected: nothing was sent."""


class NoResponders(Exception):
    """Nobody serves the subject: nothing was handled."""


class RequestTimedOut(Exception):
    """The request went out and no answer came in time: it may have been handled."""


Handler = Callable[[Msg], Awaitable[None]]

HEAD_COALESCE: Final = 0.25
"""Seconds between two head announcements of one instance at most (a lone commit is announced
at once; those after it within this time, together when it has passed), and between two hints
a follower takes. Why a quarter of a second: what an instance pays to follow the cluster is per
announcement heard and per read (a wakeup, a query, all cold), some hundreds of µs each; at
this interval it stays under 5 µs per cluster message from about 1,000 messages a second on
(``bench/bench_cluster.py``), and sparse traffic is not delayed at all."""


@dataclass(slots=True)
class _Wanted:
    subject: str
    handler: Handler
    sub: Subscription | None = None


@dataclass(slots=True)
class BusStats:
    """Counts for operators (``/metrics``)."""

    heads_sent: int = 0
    heads_heard: int = 0
    invalidations_heard: int = 0
    requests: int = 0
    request_seconds: float = 0.0
    no_responders: int = 0
    timeouts: int = 0
    refused_down: int = 0
    reconnects: int = 0


class ClusterBus:
    """One instance's NATS connection (see the module docstring)."""

    def __init__(
        self, url: str, prefix: str, instance_id: str, coalesce: float = HEAD_COALESCE
    ) -> None:
        self.url = url
        self.coalesce = coalesce
        self.prefix = prefix
        self.instance_id = instance_id
        self._me = instance_id.encode()
        self._nc: Client | None = None
        self._wanted: dict[int, _Wanted] = {}
        self._next_id = 0
        self._head_to_send = 0
        self._head_sent = 0
        self._head_wake = anyio.Event()
        self._head_listeners: list[Callable[[int], None]] = []
        self._inval_listeners: list[Callable[[str], None]] = []
        self.stats = BusStats()
        self.observe_latency: Callable[[float], None] | None = None
        self._up = anyio.Event()

    def subject(self, *tokens: str) -> str:
        return ".".join((self.prefix, *tokens))

    async def wait_connected(self) -> None:
        """Return once the first connection is made."""
        await self._up.wait()

    @property
    def connected(self) -> bool:
        nc = self._nc
        return nc is not None and nc.is_connected

    # -- the connection

    async def run(
        self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Connect (retrying forever), keep the subscriptions, send head announcements; close
        on cancellation. Started at once: the first connection is not awaited."""
        task_status.started()
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(self._send_heads)
                await self._connect_forever()
                await self._subscribe_all()
                await anyio.sleep_forever()
        finally:
            nc, self._nc = self._nc, None
            if nc is not None:
                with anyio.CancelScope(shield=True), anyio.move_on_after(2):
                    await nc.close()

    async def _connect_forever(self) -> None:
        delay = 0.2
        while True:
            try:
                self._nc = await nats.connect(
                    self.url,
                    name=f"switchboard {self.instance_id}",
                    allow_reconnect=True,
                    max_reconnect_attempts=-1,
                    reconnect_time_wait=1,
                    connect_timeout=2,
                    ping_interval=5,
                    max_outstanding_pings=2,
                    # While reconnecting, publishes queue in a small buffer; past it they fail
                    # and are dropped (a hint lost costs latency, never data).
                    pending_size=256 * 1024,
                    disconnected_cb=self._disconnected,
                    reconnected_cb=self._reconnected,
                    error_cb=self._error,
                )
                log.info("cluster.nats_connected", url=self.url)
                self._up.set()
                return
            except (NatsError, OSError, TimeoutError) as exc:
                log.warning("cluster.nats_connect_failed", url=self.url, error=str(exc))
                await anyio.sleep(delay)
                delay = min(2.0, delay * 2)

    async def _disconnected(self) -> None:
        log.warning("cluster.nats_disconnected", url=self.url)

    async def _reconnected(self) -> None:
        # nats-py subscribes again by itself; poll for what was missed meanwhile.
        self.stats.reconnects += 1
        log.info("cluster.nats_reconnected", url=self.url)
        for listener in list(self._head_listeners):
            listener(0)

    async def _error(self, exc: Exception) -> None:
        log.debug("cluster.nats_error", error=str(exc))

    async def _subscribe_all(self) -> None:
        for wanted in list(self._wanted.values()):
            await self._subscribe(wanted)

    async def _subscribe(self, wanted: _Wanted) -> None:
        nc = self._nc
        if nc is None or wanted.sub is not None:
            return
        wanted.sub = await nc.subscribe(wanted.subject, cb=wanted.handler)

    async def subscribe(self, subject: str, handler: Handler) -> int:
        """Serve ``subject`` with ``handler`` from now on (also across reconnections); a
        handle for :meth:`unsubscribe`."""
        self._next_id += 1
        wanted = self._wanted[self._next_id] = _Wanted(subject, handler)
        try:
            await self._subscribe(wanted)
        except NatsError as exc:
            log.warning("cluster.nats_subscribe_failed", subject=subject, error=str(exc))
        return self._next_id

    async def unsubscribe(self, handle: int) -> None:
        """Stop serving what :meth:`subscribe` returned ``handle`` for (idempotent)."""
        wanted = self._wanted.pop(handle, None)
        if wanted is None or wanted.sub is None:
            return
        sub, wanted.sub = wanted.sub, None
        try:
            await sub.unsubscribe()
            # Once this returns the server has it: no request reaches this instance any more.
            nc = self._nc
            if nc is not None and nc.is_connected:
                await nc.flush(timeout=1)
        except NatsError as exc:
            # The server forgets a closed connection's subscriptions anyway.
            log.debug("cluster.nats_unsubscribe_failed", subject=wanted.subject, error=str(exc))

    # -- requests

    async def request(self, subject: str, payload: bytes, timeout: float) -> bytes:  # noqa: ASYNC109
        """Ask whoever serves ``subject``; raises :class:`BusDown` (not sent),
        :class:`NoResponders` (nobody serves it) or :class:`RequestTimedOut` (sent, no
        answer)."""
        nc = self._nc
        if nc is None or not nc.is_connected:
            self.stats.refused_down += 1
            raise BusDown("NATS is not connected")
        started = time.perf_counter()
        try:
            msg = await nc.request(subject, payload, timeout=timeout)
        except NoRespondersError as exc:
            self.stats.no_responders += 1
            raise NoResponders(subject) from exc
        except NatsTimeout as exc:
            self.stats.timeouts += 1
            raise RequestTimedOut(subject) from exc
        except NatsError as exc:
            # Closed or reconnecting while sending: it may or may not have left.
            self.stats.timeouts += 1
            raise RequestTimedOut(f"{subject}: {exc}") from exc
        finally:
            took = time.perf_counter() - started
            self.stats.requests += 1
            self.stats.request_seconds += took
            if self.observe_latency is not None:
                self.observe_latency(took)
        return msg.data

    # -- head announcements

    def announce_head(self, seq: int) -> None:
        """Tell the other instances the head is at least ``seq`` (coalesced, never blocks)."""
        if seq > self._head_to_send:
            self._head_to_send = seq
            self._head_wake.set()

    async def _send_heads(self) -> None:
        while True:
            await self._head_wake.wait()
            self._head_wake = anyio.Event()
            seq = self._head_to_send
            if seq <= self._head_sent:
                continue
            nc = self._nc
            if nc is None or not nc.is_connected:
                continue  # dropped: the others' poll finds it
            try:
                await nc.publish(self.subject("head"), b"%d %s" % (seq, self._me))
                self._head_sent = seq
                self.stats.heads_sent += 1
            except NatsError as exc:
                log.debug("cluster.head_not_sent", seq=seq, error=str(exc))
            # The commits of the next ``coalesce`` seconds go out as one announcement: every
            # follower pays per announcement it receives (a NATS message, a wakeup), so
            # announcing per commit would make following the cluster cost per commit.
            await anyio.sleep(self.coalesce)

    async def follow_heads(self, listener: Callable[[int], None]) -> None:
        """Call ``listener`` with each head another instance announces (and with 0 after a
        reconnection: poll now, hints may have been lost)."""
        self._head_listeners.append(listener)

        async def heard(msg: Msg) -> None:
            seq_text, _, sender = msg.data.partition(b" ")
            if sender == self._me:
                return
            try:
                seq = int(seq_text)
            except ValueError:
                return
            self.stats.heads_heard += 1
            for each in self._head_listeners:
                each(seq)

        if len(self._head_listeners) == 1:
            await self.subscribe(self.subject("head"), heard)

    # -- invalidations

    async def announce_invalidation(self, name: str) -> None:
        """Tell the other instances the shared table ``name`` changed (dropped when down)."""
        nc = self._nc
        if nc is None or not nc.is_connected:
            return
        try:
            await nc.publish(self.subject("inval", subject_token(name)), self._me)
        except NatsError as exc:
            log.debug("cluster.invalidation_not_sent", name=name, error=str(exc))

    async def follow_invalidations(self, listener: Callable[[str], None]) -> None:
        """Call ``listener`` with the token of each table another instance says changed."""
        self._inval_listeners.append(listener)
        prefix_len = len(self.subject("inval")) + 1

        async def heard(msg: Msg) -> None:
            if msg.data == self._me:
                return
            self.stats.invalidations_heard += 1
            for each in self._inval_listeners:
                each(msg.subject[prefix_len:])

        if len(self._inval_listeners) == 1:
            await self.subscribe(self.subject("inval", ">"), heard)

    # -- other hints (a lease let go)

    async def publish_hint(self, kind: str, text: str) -> None:
        """Publish ``text`` on ``<prefix>.<kind>`` (dropped when down: every hint has a poll)."""
        nc = self._nc
        if nc is None or not nc.is_connected:
            return
        try:
            await nc.publish(self.subject(kind), self._me + b" " + text.encode())
        except NatsError as exc:
            log.debug("cluster.hint_not_sent", kind=kind, error=str(exc))

    async def follow_hints(self, kind: str, listener: Callable[[str], None]) -> None:
        """Call ``listener`` with the text of each ``<prefix>.<kind>`` hint another instance
        publishes."""

        async def heard(msg: Msg) -> None:
            sender, _, text = msg.data.partition(b" ")
            if sender != self._me:
                listener(text.decode(errors="replace"))

        await self.subscribe(self.subject(kind), heard)


class SharedHead(Protocol):
    """What of the shared message store the head follower moves."""

    def advance_head(self, seq: int) -> None: ...

    async def poll_head(self) -> int: ...


class HeadFollower:
    """Moves the local view of the shared head on every hint, and polls PostgreSQL every
    ``interval`` seconds whatever NATS does (a lost hint costs latency, never data).

    Hints are taken at most every ``coalesce`` seconds: the head's watchers then read once
    for several commits, not once per commit (the cost of following the cluster per message
    falls as the rate rises; a push waits at most that much longer)."""

    def __init__(
        self,
        store: SharedHead,
        bus: ClusterBus,
        interval: float = 1.0,
        coalesce: float = HEAD_COALESCE,
    ) -> None:
        self.store = store
        self.bus = bus
        self.interval = interval
        self.coalesce = coalesce
        self.polls = 0
        self.poll_errors = 0
        self._poll_now = anyio.Event()
        self._heard = 0
        self._hint = anyio.Event()

    def heard(self, seq: int) -> None:
        if seq <= 0:
            self._poll_now.set()
        elif seq > self._heard:
            self._heard = seq
            self._hint.set()

    async def run(
        self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        await self.bus.follow_heads(self.heard)
        task_status.started()
        async with anyio.create_task_group() as group:
            group.start_soon(self._take_hints)
            while True:
                with anyio.move_on_after(self.interval):
                    await self._poll_now.wait()
                self._poll_now = anyio.Event()
                try:
                    await self.store.poll_head()
                    self.polls += 1
                except Exception as exc:  # the store reports outages itself
                    self.poll_errors += 1
                    log.debug("cluster.poll_head_failed", error=str(exc))

    async def _take_hints(self) -> None:
        while True:
            await self._hint.wait()
            self._hint = anyio.Event()
            self.store.advance_head(self._heard)
            await anyio.sleep(self.coalesce)
