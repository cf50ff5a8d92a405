"""The composition root: :class:`Switchboard` builds every part of the host, and runs them.

:meth:`Switchboard.__init__` builds the parts in dependency order and hands each, by
constructor argument, only what it uses; nothing is wired onto a part after it is built. Last
it subscribes the parts that follow host events, in the order they hear them, then the
caller's ``listener``. :meth:`Switchboard.started` opens the durable things (:mod:`.stores`),
restores what the decision log holds, and runs the connectors. The tools reach the host
through one agent's port (``board.agents.port(agent)``); :func:`build_server` serves it.

Stopping (:meth:`Switchboard.begin_stopping`, then the end of :meth:`Switchboard.started`): no
connector is restarted, every inbox long poll answers at once, every connector's new requests
are refused ``shutting-down`` while the ones taken are answered (at most
:data:`CONNECTOR_GRACE` seconds), and only then are the links closed.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

import anyio
import structlog
from mcp.server.mcpserver import MCPServer

from switchboard.agents.desk.defaults import DefaultChannel
from switchboard.agents.desk.desk import Desks
from switchboard.agents.inbox.delivery import InboxDelivery
from switchboard.agents.inbox.mail import Mail
from switchboard.agents.inbox.read import InboxReader
from switchboard.agents.inbox.routing import Router
from switchboard.agents.inbox.watch import InboxWatchers
from switchboard.agents.port.service import AgentSide
from switchboard.agents.presence.context import ContextHooks
from switchboard.agents.presence.turns import TurnSignals
from switchboard.agents.presence.typing import TypingKeeper
from switchboard.agents.roster.attach import Attachments
from switchboard.agents.roster.lifetimes import Lifetimes
from switchboard.agents.roster.roster import Roster
from switchboard.agents.roster.samplers import Samplers
from switchboard.agents.speech.publish import Publisher
from switchboard.agents.speech.streams import OutgoingStreams
from switchboard.agents.tools import server_for
from switchboard.app.retention import Retention, RetentionFloor, retention_task
from switchboard.app.stores import open_stores
from switchboard.channels import ChannelRegistry
from switchboard.config import Config, ConnectorConfig
from switchboard.connections.owner import Owners
from switchboard.connections.session import ConnectorSession
from switchboard.connections.supervisor import SessionFactory, Supervisor
from switchboard.directory import Directory, DirectoryStore
from switchboard.events import (
    OTHER_EVENTS,
    TRAFFIC_EVENTS,
    ConnectorLogs,
    EventBus,
    Listener,
    log_event,
)
from switchboard.events.storage import StorageWatch
from switchboard.lifecycle.book import LifecycleBookPart
from switchboard.lifecycle.host import LifecycleHost
from switchboard.lifecycle.journal import DecisionJournal
from switchboard.lifecycle.queue import DecisionGate
from switchboard.lifecycle.rules.book import LifecycleBook
from switchboard.status.model import ClusterView, HostStatus
from switchboard.store import DecisionLogProtocol, LeaveStore, LifetimeRecords, MessageStoreProtocol
from switchboard.store.sqlite.leaves import ChannelLeaves
from switchboard.store.sqlite.lifetimes import lifetime_records as sqlite_lifetime_records
from switchboard.transport import Link
from switchboard.tuneouts.host import TuneOutHost
from switchboard.tuneouts.state import TuneOutState

log = structlog.get_logger(__name__)

CONNECTOR_GRACE = 1.0
"""Seconds a stopping host waits for the connectors' requests it took (a batch waiting for its
commit) to be answered before it closes their links."""


class Switchboard:
    """The host: builds every part and runs them.

    :meth:`Switchboard.__init__` builds the parts in dependency order and hands each, by constructor
    argument, only what it uses; nothing is wired onto a part after it is built:

    1. the registry, the owners of the connectors (the session map), the host's
       :class:`~switchboard.events.EventBus`, the connectors' rate-limited logs, the roster, the
       directory, attachments and the sessions that can sample (they answer the connectors'
       inference), the session factory and the supervisor;
    2. the agent side's lower parts: routing, mail, desks,
       lifetimes, the default channel, typing, streams, context hooks and turn signals;
    3. what the lifecycle and the tune-outs share, lowest first: the lifecycle book, the tune-out
       state, the decision journal kept with both as its parts, and the decision gate;
    4. the :class:`~switchboard.lifecycle.host.LifecycleHost`, then the
       :class:`~switchboard.tuneouts.host.TuneOutHost` over the lifecycle's reconciler;
    5. the agent side's upper parts: the publisher, the inbox reader, delivery and watchers, and the
       :class:`~switchboard.agents.port.service.AgentSide` every agent's port works over; 6.
       retention and the operator's status.

    Last it subscribes the parts that follow host events (the log, the default channel, typing,
    lifecycle, routing, status), then the caller's ``listener``. The tools reach the host through
    one agent's port (``board.agents.port(agent)``); :func:`build_server` serves it over MCP.
    """

    def __init__(
        self,
        config: Config,
        store: MessageStoreProtocol,
        *,
        listener: Listener | None = None,
        clock: Callable[[], float] = time.time,
        decisions: DecisionLogProtocol | None = None,
        directory: DirectoryStore | None = None,
        leaves: LeaveStore | None = None,
        lifetime_records: LifetimeRecords | None = None,
        owners_view: Callable[[Mapping[str, ConnectorSession]], Owners] | None = None,
        cluster_view: ClusterView | None = None,
    ) -> None:
        """Build the host's parts, in dependency order (see :class:`Switchboard`).

        Args:
            listener: told every host event, after the host's own parts (the demo's terminal
                view, a test's recorder); see :mod:`switchboard.events` for the contract.
            decisions, directory, leaves, lifetime_records: the durable things
                (:mod:`.stores`); without them the board keeps them in memory.
            owners_view: in cluster mode, the owner map over the local sessions (a connector
                owned by another instance answers through it: :mod:`.cluster`).
            cluster_view: in cluster mode, what the status surface says of the cluster.
        """
        self.config = config
        self.store = store
        #: The durable decision log (lifecycle decisions, tune-outs); None runs without one.
        self.decisions = decisions
        self.registry = registry = ChannelRegistry()
        #: The owner of each connector (today: its local session), by server id.
        self.sessions: dict[str, ConnectorSession] = {}
        owners: Owners = self.sessions if owners_view is None else owners_view(self.sessions)
        self.owners = owners
        #: The host event bus: every part that reports what happened emits here.
        self.events = events = EventBus()
        #: What each connector causes the log to say, rate-limited and counted per server.
        self.connector_logs = connector_logs = ConnectorLogs()
        #: The agent identities served (docs/agents.md): ``[[agents]]`` or ``[agent]``.
        self.roster = Roster.from_entries(config.roster())
        #: The directory of agents and services (docs/directory.md): in the store's file when
        #: started with :meth:`started`, else an in-memory one.
        self.directory = directory if directory is not None else Directory.open(":memory:")
        #: Which agents have a session attached (online/offline, last-seen in the directory).
        self.attachments = Attachments(self.roster, self.directory, clock=clock)
        #: The agents' sessions that can sample: they answer the connectors' inference.
        self.samplers = Samplers(self.roster, self.attachments)
        self._session_factory = SessionFactory(
            sessions=self.sessions,
            registry=registry,
            store=store,
            events=events,
            clock=clock,
            logs=connector_logs,
            inference=self.samplers,
        )
        self.supervisor = Supervisor(
            registry=registry, sessions=self._session_factory, events=events
        )
        # -- the agent side's lower parts
        #: Each agent's desk (turns, own channels, locus), made on first use.
        self.desks = Desks(self.roster, config.agent)
        #: Which agents each message is for (docs/agents.md, "Routing"); the channels agents
        #: left are kept in the store's file when started with :meth:`started`.
        self.router = Router(
            self.roster, registry, leaves if leaves is not None else ChannelLeaves.open()
        )
        # -- what the lifecycle and the tune-outs share, lowest first
        book = LifecycleBook()
        tuneout_state = TuneOutState()
        journal = DecisionJournal(
            decisions,
            parts={"lifecycle": LifecycleBookPart(book), "tuneouts": tuneout_state},
            snapshot_every=config.store.snapshot_every,
        )
        gate = DecisionGate()
        #: The default publish channel (channel-registry.md §8.7), process-global.
        self.default_channel = DefaultChannel(registry)
        # -- presence: typing indicators, outgoing streams, beforeInference context
        self.typing = TypingKeeper(registry, owners)
        self.streams = OutgoingStreams(registry, owners)
        self.context_hooks = ContextHooks(
            self.registry, self.default_channel, owners, model_seen=self.samplers.model_seen
        )
        #: The agents' turns told as inference/lifecycle (docs/inference.md).
        self.turns = TurnSignals(owners, self.samplers.model_seen, self.attachments)
        # -- lifecycle: desired state, decisions, reconciliation, speech into closed channels
        self.lifecycle = LifecycleHost(
            registry=registry,
            owners=owners,
            configs=config.connectors,
            book=book,
            journal=journal,
            gate=gate,
            tune_outs=tuneout_state,
            on_close=self.typing.stop_soon,
            events=events,
            clock=clock,
        )
        # -- tune-outs: epochs, diversion from the owner's inbox, owed backlogs
        self.tuneouts = TuneOutHost(
            registry=registry,
            store=store,
            state=tuneout_state,
            journal=journal,
            lifecycle=book,
            gate=gate,
            reconciler=self.lifecycle.reconciler,
            clock=clock,
        )
        # -- the agent side's upper parts: inboxes, mail, lifetimes, publishing, the port
        #: The inbox watchers (pushes), woken by the store's committed head.
        self.watchers = InboxWatchers(store, self.router, self.tuneouts, events)
        #: Mail between agents and services (docs/agents.md, "Mail"), kept in the store.
        self.mail = Mail(
            store,
            self.directory,
            self.roster,
            attachments=self.attachments,
            arrived=self.watchers.arrived,
            clock=clock,
        )
        #: When agents end: idle TTLs, task agents, the configured agents' addresses.
        self.lifetimes = Lifetimes(
            roster=self.roster,
            directory=self.directory,
            desks=self.desks,
            mail=self.mail,
            # An agent attached to another instance of a cluster is not idle here.
            attachments=self.attachments.anywhere,
            instance=None if config.cluster is None else config.cluster.instance_id,
            records=(
                lifetime_records
                if lifetime_records is not None
                else sqlite_lifetime_records(self.directory.path)
            ),
            clock=clock,
        )
        #: Every agent's inbox read (routing, tune-outs) and its at-least-once delivery.
        self.inboxes = InboxReader(self.tuneouts, router=self.router)
        self.delivery = InboxDelivery(store, self.inboxes)
        #: The one path of every agent's words into a channel.
        self.publisher = Publisher(
            registry=registry,
            owners=owners,
            configured=[c.id for c in config.connectors],
            speech=self.lifecycle.speech,
            events=events,
            restarts=self.supervisor,
        )
        #: The agent side's shared parts; ``agents.port(name)`` is one agent's port.
        self.agents = AgentSide(
            configured=[c.id for c in config.connectors],
            many_configured=bool(config.agents),
            registry=registry,
            owners=owners,
            store=store,
            events=events,
            roster=self.roster,
            desks=self.desks,
            default_channel=self.default_channel,
            router=self.router,
            delivery=self.delivery,
            watchers=self.watchers,
            publisher=self.publisher,
            lifecycle=self.lifecycle,
            tuneouts=self.tuneouts,
            typing=self.typing,
            streams=self.streams,
            context_hooks=self.context_hooks,
            mail=self.mail,
            directory=self.directory,
            lifetimes=self.lifetimes,
            samplers=self.samplers,
            turns=self.turns,
        )
        #: Retention (docs/operations.md, "Retention"): old, acknowledged messages deleted in
        #: the background when ``[store] retain`` or ``max_size`` is set (``last_pass()``).
        #: None for a store without retention (a test's).
        self.retention: Retention | None = retention_task(
            store,
            config.store,
            RetentionFloor(
                store=store, roster=self.roster, tuneouts=tuneout_state, desks=self.desks
            ),
            clock=clock,
            cluster=config.cluster is not None,
        )
        #: What an operator sees (``/status``, ``/metrics``, the live page), kept from events.
        self.status = HostStatus(
            configs=config.connectors,
            sessions=self.sessions,
            registry=registry,
            desired=self.lifecycle.desired_shown,
            roster=self.roster,
            attachments=self.attachments,
            store=store,
            store_path=config.store.place,
            clock=clock,
            retention=None if self.retention is None else self.retention.last_pass,
            logs=connector_logs,
            cluster=cluster_view,
        )
        # -- who follows host events, in this order (see switchboard.events)
        # Traffic on its own (one call per batch, as before); the rest with the connectors' logs.
        self.events.subscribe(log_event, takes=TRAFFIC_EVENTS)
        self.events.subscribe(partial(log_event, logs=connector_logs), takes=OTHER_EVENTS)
        self.events.subscribe(self.default_channel.observe, takes=DefaultChannel.OBSERVES)
        self.events.subscribe(self.typing.observe, takes=TypingKeeper.OBSERVES)
        self.events.subscribe(self.lifecycle.observe, takes=LifecycleHost.OBSERVES)
        self.events.subscribe(self.router.observe, takes=Router.OBSERVES)
        self.events.subscribe(self.status.observe)
        if listener is not None:
            self.events.subscribe(listener)
        #: Set by :meth:`begin_stopping` (cluster mode hands its leases over from then on).
        self.stopping = anyio.Event()
        #: Storage outages of the message store, told as StorageFailed / StorageRecovered.
        self.storage_watch = StorageWatch(events)
        store.watch_storage(self.storage_watch)

    async def serve_link(self, config: ConnectorConfig, link: Link) -> None:
        """Serve one connector over a link the caller opened (no supervision, no restart).

        When the link ends, the connector's registrations are dropped, as the supervisor does.
        """
        session = self._session_factory.session(config)
        try:
            async with self.lifecycle.serving(config.id):
                await session.run(link)
        finally:
            self.registry.remove_server(config.id)

    def begin_stopping(self) -> None:
        """Stop taking work (idempotent): no connector is restarted, every inbox read waiting
        for messages answers now and none waits from now on, and each connector's requests are
        refused ``shutting-down`` from now on (the ones already taken are still answered)."""
        self.stopping.set()
        self.supervisor.stop()
        self.inboxes.end_waits()
        for session in list(self.sessions.values()):
            session.stop_taking()

    async def _finish_connectors(self) -> None:
        """Let every connection answer the requests it took (:data:`CONNECTOR_GRACE` at most,
        all at once), refusing the rest, before their links are closed."""
        async with anyio.create_task_group() as group:
            for session in list(self.sessions.values()):
                group.start_soon(session.finish, CONNECTOR_GRACE)

    async def drain(self, server_id: str) -> None:
        """Let ``server_id``'s connection answer what it took (:data:`CONNECTOR_GRACE` at
        most), refusing new requests, before it is stopped (a handover to another instance)."""
        session = self.sessions.get(server_id)
        if session is not None:
            session.stop_taking()
            await session.finish(CONNECTOR_GRACE)

    async def run(self, *, connectors: bool = True, singletons: bool = True) -> None:
        """Supervise every configured connector until cancelled.

        In cluster mode the connectors (``connectors=False``) and the jobs only one instance
        runs (``singletons=False``: lifetimes, retention) are started by the cluster node,
        for what this instance holds the lease of.
        """
        async with anyio.create_task_group() as tg:
            tg.start_soon(self.typing.run)
            tg.start_soon(self.turns.run)
            tg.start_soon(self.lifecycle.run)
            tg.start_soon(self.tuneouts.run_timer)
            if singletons:
                tg.start_soon(self.lifetimes.run)
                if self.retention is not None:
                    tg.start_soon(self.retention.run)
            tg.start_soon(self.watchers.run)
            if connectors:
                for connector in self.config.connectors:
                    tg.start_soon(self.supervisor.supervise, connector)

    @classmethod
    @asynccontextmanager
    async def started(
        cls, config: Config, *, listener: Listener | None = None
    ) -> AsyncIterator[Switchboard]:
        """Open the store, start the connectors, yield the host; stop everything on exit.

        ``listener`` is told every host event (see :meth:`__init__`).
        """
        async with open_stores(config.store) as stores:
            board = cls(
                config,
                stores.messages,
                listener=listener,
                decisions=stores.decisions,
                directory=stores.directory,
                leaves=stores.leaves,
                lifetime_records=stores.lifetimes,
            )
            await board.restore()
            async with anyio.create_task_group() as tg:
                tg.start_soon(board.run)
                try:
                    yield board
                finally:
                    board.begin_stopping()
                    # Shielded and bounded: also when the host is cancelled, the requests its
                    # connectors sent are answered before their links close.
                    with anyio.CancelScope(shield=True):
                        # Every turn still open is told aborted while its connectors listen.
                        await board.turns.end_all("aborted")
                        await board._finish_connectors()
                    tg.cancel_scope.cancel()

    async def restore(self) -> None:
        """Rebuild what the decision log holds (desired states, tune-outs) before connecting,
        then start the agents' lifetimes (new incarnations; a previous run's tasks end)."""
        restored = await self.lifecycle.restore()
        await self.tuneouts.restore_owed(restored.tail)
        await self.lifetimes.restore()


def build_server(board: Switchboard, *, agent: str) -> MCPServer[dict[str, Any]]:
    """The MCP server of the agent named ``agent`` on ``board``: its tools, over its port."""
    return server_for(board.agents.port(agent))
