"""The Switchboard host: registry, store, supervised connector sessions, and what agents ask.

:class:`Switchboard` is what the tools layer talks to. It resolves the channel an agent names,
checks everything that can be checked before a publish goes out (the channel exists, is not
inbound-only, its server is connected and ready, the grant has ``channels.publish``), sends it,
and reads agents' inboxes from the durable store.

It is the host's composition root: :meth:`Switchboard.__init__` builds every part in
dependency order and hands each, by constructor argument, only what it uses; nothing is wired
onto a part after it is built. The order:

1. the registry, the session map, the host :class:`~switchboard.host.events.EventBus`
   (``board.events``) and the :class:`~switchboard.host.connection.supervisor.SessionFactory`;
2. the agent-facing presence parts (default channel, typing, streams, context hooks);
3. what the lifecycle and the tune-outs share, lowest first: the lifecycle book, the tune-out
   state (which also answers whether a tune-out covers a channel), the decision journal kept
   with both as its parts, and the decision gate;
4. the :class:`~switchboard.host.lifecycle.host.LifecycleHost` (which builds the reconciler),
   then the :class:`~switchboard.host.tuneouts.host.TuneOutHost` over the lifecycle's
   reconciler, then the tune-out inbox and the inbox delivery over it;
5. the :class:`~switchboard.host.connection.supervisor.Supervisor`.

Last it subscribes the parts that follow host events (the log, the default channel, typing,
lifecycle), then the caller's ``listener``: the bus's own registration, in the order listeners
hear each event.

Stopping (:meth:`Switchboard.begin_stopping`, then the end of :meth:`Switchboard.started`):
no connector is restarted, every inbox long poll answers at once with what it has, every
connector's new requests are refused (``shutting-down``) while the ones taken are answered
(at most :data:`CONNECTOR_GRACE` seconds), and only then are the links closed.

What it deliberately does not know: MCP and tool results (the tools reach it through
:mod:`switchboard.host.port`), and the rules each part keeps.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Hashable
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

import anyio
import structlog

from switchboard.channels import (
    ChannelEntry,
    ChannelNameError,
    ChannelRef,
    ChannelRegistry,
    LifecycleBook,
    UnknownName,
    qualified_name,
    server_named,
)
from switchboard.channels.names.wording import q
from switchboard.config import Config, ConnectorConfig
from switchboard.directory import Directory
from switchboard.host.agent.context import ContextHooks
from switchboard.host.agent.defaults import DefaultChannel
from switchboard.host.agent.delivery import DIRECT_READER, InboxDelivery, InboxRead, PageBudget
from switchboard.host.agent.desk import AgentDesk
from switchboard.host.agent.streams import OutgoingStreams
from switchboard.host.agent.typing_keeper import TypingKeeper
from switchboard.host.agents.attach import Attachments
from switchboard.host.agents.lifetimes import Lifetimes
from switchboard.host.agents.mail import Mail
from switchboard.host.agents.roster import Roster
from switchboard.host.agents.routing import Router
from switchboard.host.connection.session import ConnectorSession, SessionState, publish_over
from switchboard.host.connection.supervisor import SessionFactory, Supervisor
from switchboard.host.events import (
    OTHER_EVENTS,
    TRAFFIC_EVENTS,
    ConnectorLogs,
    EventBus,
    Listener,
    Published,
    log_event,
)
from switchboard.host.lifecycle.book_state import LifecycleBookPart
from switchboard.host.lifecycle.host import LifecycleHost
from switchboard.host.lifecycle.journal import DecisionJournal
from switchboard.host.lifecycle.queue import DecisionGate
from switchboard.host.outcome import PublishOutcome
from switchboard.host.refusal import Refusal, RefusalKind, name_refusal
from switchboard.host.retention import RetentionFloor, retention_policy
from switchboard.host.status import HostStatus
from switchboard.host.storage_watch import StorageWatch
from switchboard.host.tuneouts.host import TuneOutHost
from switchboard.host.tuneouts.inbox import TuneOutInbox
from switchboard.host.tuneouts.state import TuneOutState
from switchboard.store import DecisionLog, MessageStore
from switchboard.store.leaves import ChannelLeaves
from switchboard.store.retention import RetentionTask
from switchboard.transport import Link

log = structlog.get_logger(__name__)

CONNECTOR_GRACE = 1.0
"""Seconds a stopping host waits for the connectors' requests it took (a batch waiting for its
commit) to be answered before it closes their links."""


class Switchboard:
    """Owns the registry and the connector sessions; answers the agent-facing tools."""

    def __init__(
        self,
        config: Config,
        store: MessageStore,
        *,
        listener: Listener | None = None,
        clock: Callable[[], float] = time.time,
        decisions: DecisionLog | None = None,
        directory: Directory | None = None,
        leaves: ChannelLeaves | None = None,
    ) -> None:
        """Build the host's parts, in dependency order (see the module docstring).

        Args:
            listener: told every host event, after the host's own parts (the demo's terminal
                view, a test's recorder); see :mod:`switchboard.host.events` for the contract.
        """
        self.config = config
        self.store = store
        #: The durable decision log (lifecycle decisions, tune-outs); None runs without one.
        self.decisions = decisions
        self.registry = registry = ChannelRegistry()
        self.sessions: dict[str, ConnectorSession] = {}
        #: The host event bus: every part that reports what happened emits here.
        self.events = events = EventBus()
        #: What each connector causes the log to say, rate-limited and counted per server.
        self.connector_logs = connector_logs = ConnectorLogs()
        self._session_factory = SessionFactory(
            sessions=self.sessions,
            registry=registry,
            store=store,
            events=events,
            clock=clock,
            logs=connector_logs,
        )
        self._configured = frozenset(c.id for c in config.connectors)
        self._desks: dict[str, AgentDesk] = {}
        #: The agent identities served (docs/agents.md): ``[[agents]]`` or ``[agent]``.
        self.roster = Roster.from_entries(config.roster())
        #: Which agents each message is for (docs/agents.md, "Routing"); the channels agents
        #: left are kept in the store's file when started with :meth:`started`.
        self.router = Router(
            self.roster, registry, leaves if leaves is not None else ChannelLeaves.open()
        )
        #: The directory of agents and services (docs/directory.md): in the store's file when
        #: started with :meth:`started`, else an in-memory one.
        self.directory = directory if directory is not None else Directory.open(":memory:")
        #: Which agents have a session attached (online/offline, last-seen in the directory).
        self.attachments = Attachments(self.roster, self.directory, clock=clock)
        #: Mail between agents and services (docs/agents.md, "Mail"), kept in the store.
        self.mail = Mail(
            store,
            self.directory,
            self.roster,
            attachments=self.attachments,
            arrived=self.router.arrived,
            clock=clock,
        )
        #: When agents end: idle TTLs, task agents, the configured agents' addresses.
        self.lifetimes = Lifetimes(
            roster=self.roster,
            directory=self.directory,
            desks=self._desks,
            mail=self.mail,
            attachments=self.attachments,
            clock=clock,
        )
        #: The default publish channel (channel-registry.md §8.7), process-global.
        self.default_channel = DefaultChannel(registry)
        # -- presence: typing indicators, outgoing streams, beforeInference context
        self.typing = TypingKeeper(registry, self.sessions)
        self.streams = OutgoingStreams(registry, self.sessions)
        self.context_hooks = ContextHooks(self.registry, self.default_channel, self.sessions)
        # -- what the lifecycle and the tune-outs share, lowest first
        book = LifecycleBook()
        tuneout_state = TuneOutState()
        journal = DecisionJournal(
            decisions,
            parts={"lifecycle": LifecycleBookPart(book), "tuneouts": tuneout_state},
            snapshot_every=config.store.snapshot_every,
        )
        gate = DecisionGate()
        # -- lifecycle: desired state, decisions, reconciliation, speech into closed channels
        self.lifecycle = LifecycleHost(
            registry=registry,
            sessions=self.sessions,
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
        self._tuneout_inbox = TuneOutInbox(self.tuneouts, router=self.router)
        self._delivery = InboxDelivery(store, self._tuneout_inbox)
        #: Retention (docs/operations.md, "Retention"): old, acknowledged messages deleted in
        #: the background when ``[store] retain`` or ``max_size`` is set (``last_pass()``).
        self.retention = RetentionTask(
            store,
            retention_policy(config.store, keep_newest=store.dedupe_window),
            RetentionFloor(
                store=store, roster=self.roster, tuneouts=tuneout_state, desks=self._desks
            ),
            clock=clock,
        )
        self.supervisor = Supervisor(
            registry=registry, sessions=self._session_factory, events=events
        )
        #: What an operator sees (``/status``, ``/metrics``, the live page), kept from events.
        self.status = HostStatus(
            configs=config.connectors,
            sessions=self.sessions,
            registry=registry,
            desired=self.lifecycle.desired_state,
            roster=self.roster,
            attachments=self.attachments,
            store=store,
            store_path=str(config.store.path),
            clock=clock,
            retention=self.retention.last_pass,
            logs=connector_logs,
        )
        # -- who follows host events, in this order (see switchboard.host.events)
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
        #: Storage outages of the message store, told as StorageFailed / StorageRecovered.
        self.storage_watch = StorageWatch(events)
        store.watch_storage(self.storage_watch)

    # -- agents ------------------------------------------------------------------------------

    def desk(self, agent: str) -> AgentDesk:
        """The per-agent state (turns, own channels, locus) of ``agent``, made on first use."""
        desk = self._desks.get(agent)
        if desk is None:
            identity = self.roster.get(agent)
            settings = identity if identity is not None else self.config.agent
            desk = self._desks[agent] = AgentDesk(agent, settings)
        return desk

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
        self.supervisor.stop()
        self._tuneout_inbox.end_waits()
        for session in list(self.sessions.values()):
            session.stop_taking()

    async def _finish_connectors(self) -> None:
        """Let every connection answer the requests it took (:data:`CONNECTOR_GRACE` at most,
        all at once), refusing the rest, before their links are closed."""
        async with anyio.create_task_group() as group:
            for session in list(self.sessions.values()):
                group.start_soon(session.finish, CONNECTOR_GRACE)

    async def run(self) -> None:
        """Supervise every configured connector until cancelled."""
        async with anyio.create_task_group() as tg:
            tg.start_soon(self.typing.run)
            tg.start_soon(self.lifecycle.run)
            tg.start_soon(self.tuneouts.run_timer)
            tg.start_soon(self.lifetimes.run)
            tg.start_soon(self.retention.run)
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
        store = await MessageStore.open(config.store.path, synchronous=config.store.synchronous)
        decisions: DecisionLog | None = None
        directory: Directory | None = None
        leaves: ChannelLeaves | None = None
        try:
            decisions = await DecisionLog.open(config.store.path, synchronous="full")
            directory = Directory.open(config.store.path)
            leaves = ChannelLeaves.open(config.store.path)
            board = cls(
                config,
                store,
                listener=listener,
                decisions=decisions,
                directory=directory,
                leaves=leaves,
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
                        await board._finish_connectors()
                    tg.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                if decisions is not None:
                    await decisions.aclose()
                if directory is not None:
                    directory.close()
                if leaves is not None:
                    leaves.close()
                await store.aclose()

    async def restore(self) -> None:
        """Rebuild what the decision log holds (desired states, tune-outs) before connecting,
        then start the agents' lifetimes (new incarnations; a previous run's tasks end)."""
        restored = await self.lifecycle.restore()
        await self.tuneouts.restore_owed(restored.tail)
        await self.lifetimes.restore()

    # -- channels ----------------------------------------------------------------------------

    async def before_inference(
        self, desk: AgentDesk, user_message: str | None = None
    ) -> list[dict[str, Any]]:
        """Context the connectors add at the start of ``desk``'s turn (``context/beforeInference``).

        Called by the ``inbox`` tool when a read begins a turn, with the text of the messages
        that began it (sent only to servers granted ``observe``). The agent's streamed speech
        still open is abandoned, its automatic typing moves to the new turn's locus, and every
        server granted the hook is asked (see :mod:`switchboard.host.agent.context`).
        """
        await self.streams.abort_all(desk.name)
        await self.typing.turn_began(desk.name, desk.locus(self.registry, self.default_channel).ref)
        return await self.context_hooks.gather(desk, user_message=user_message)

    def desired_state(self, ref: ChannelRef) -> str:
        """The recorded desired lifecycle state of ``ref``, or ``"unknown"`` when none is."""
        return self.lifecycle.desired_state(ref)

    # -- publish -----------------------------------------------------------------------------

    async def publish(
        self, target: str, text: str, *, server_id: str | None = None, conversation_id: str = ""
    ) -> PublishOutcome:
        """Publish ``text`` to the channel ``target`` names, refusing early where it must."""
        if not text.strip():
            return PublishOutcome.refused(
                Refusal(RefusalKind.EMPTY_CONTENT, "there is nothing to send: the text is empty")
            )
        try:
            entry = self.registry.resolve(target, server_id=server_id)
        except ChannelNameError as exc:
            # A server that is gone or still connecting has no channels registered: say that,
            # rather than "unknown channel", when the caller named the server.
            refusal = None
            if isinstance(exc, UnknownName) and server_id is not None:
                refusal = self._server_refusal(server_id)
            return PublishOutcome.refused(refusal or name_refusal(exc, "channel_publish"))
        return await self.publish_to(entry, text, conversation_id=conversation_id)

    def _server_refusal(self, server_id: str) -> Refusal | None:
        """Why nothing can be published to ``server_id`` now, or None when it can be."""
        session = self.sessions.get(server_id)
        if session is None and server_id not in self._configured:
            return Refusal(
                RefusalKind.UNKNOWN_CHANNEL,
                f"there is no server {server_id!r}; call channel_list to see the servers",
                server_id=server_id,
            )
        down = self._server_down(server_id)
        if down is not None:
            kind, state = down
            return Refusal(kind, f"server {server_id!r} {state}", server_id=server_id)
        if session is not None and session.state is SessionState.MCP_ONLY:
            return Refusal(
                RefusalKind.NOT_GRANTED,
                f"server {server_id!r} runs without MCPL, so it has no channels to publish to",
                server_id=server_id,
            )
        return None

    def _server_down(self, server_id: str) -> tuple[RefusalKind, str] | None:
        """``server-gone`` or ``server-connecting`` and what the server is doing, when a
        configured server is not serving: not connected, restarting, or still connecting."""
        session = self.sessions.get(server_id)
        if session is None or session.state is SessionState.CLOSED:
            if self.supervisor.restarting(server_id):
                return (
                    RefusalKind.SERVER_CONNECTING,
                    "is restarting (its connection ended and it is being started again); "
                    "nothing was sent, try again in a few seconds",
                )
            return (
                RefusalKind.SERVER_GONE,
                "is not connected right now; nothing was sent, try again later",
            )
        if session.state is SessionState.CONNECTING:
            return (
                RefusalKind.SERVER_CONNECTING,
                "is still connecting; nothing was sent, try again shortly",
            )
        return None

    def refusal_for_unknown_name(self, name: str) -> Refusal | None:
        """Why no registered channel answers to ``name`` when it is a channel of a server that
        is not serving now: ``server-gone``, or ``server-connecting`` while it connects or
        restarts, naming the server (a server's channels leave the registry when its
        connection ends). None when it is no such name.

        The server is the one configured server ``name`` is a qualified name of
        (:func:`~switchboard.channels.server_named`: matched against the configured ids, never
        by splitting the name at a colon; when several could be meant, none is guessed and the
        name stays unknown). A connected server that has no such channel is no reason either:
        the name is simply unknown.
        """
        server_id = server_named(name, self._configured)
        if server_id is None:
            return None
        down = self._server_down(server_id)
        if down is None:
            return None
        kind, state = down
        return Refusal(
            kind,
            f"No registered channel answers to {q(name)}: it names a channel of server "
            f"{server_id!r}, which {state}",
            server_id=server_id,
        )

    async def publish_to(
        self, entry: ChannelEntry, text: str, *, conversation_id: str = ""
    ) -> PublishOutcome:
        ref = entry.ref
        refusal = self._server_refusal(ref.server_id)
        if refusal is not None:
            return PublishOutcome.refused(refusal)
        session = self.sessions[ref.server_id]
        if entry.descriptor.direction == "inbound":
            return PublishOutcome.refused(
                Refusal(
                    RefusalKind.INBOUND_ONLY,
                    f"{qualified_name(ref)} is inbound-only: it can be read but not written to",
                    server_id=ref.server_id,
                    channel_id=ref.channel_id,
                )
            )
        if not session.grant.allows("channels.publish"):
            return PublishOutcome.refused(
                Refusal(
                    RefusalKind.NOT_GRANTED,
                    f"server {ref.server_id!r} is not granted channels.publish; nothing was sent",
                    server_id=ref.server_id,
                    channel_id=ref.channel_id,
                )
            )
        # Lifecycle (§8.3): queued work settles, a default-closed channel opens first.
        speech = self.lifecycle.speech
        if not speech.clear_now(entry):
            cleared = await speech.clear(entry)
            if isinstance(cleared, PublishOutcome):
                return cleared
            session = self.sessions.get(ref.server_id, session)
        content = [{"type": "text", "text": text}]
        outcome = await publish_over(session, ref.channel_id, content, conversation_id)
        self.events.emit(Published(ref.server_id, ref.channel_id, text, outcome))
        return outcome

    # -- inbox -------------------------------------------------------------------------------

    async def read_inbox(
        self,
        agent: str,
        *,
        after: int | None = None,
        reader: object = DIRECT_READER,
        wait_seconds: float = 0.0,
        limit: int = 50,
        budget: PageBudget | None = None,
        request: Hashable | None = None,
    ) -> InboxRead:
        """What is owed to ``agent`` above its acknowledged position (waiting up to
        ``wait_seconds`` for the first), after acknowledging ``after`` or, without it,
        ``reader``'s previous read (see :mod:`switchboard.host.agent.delivery`); cut at a
        message boundary to ``budget`` when one is given. ``request`` names the call the read
        answers (:meth:`take_back_read`).

        Owed tune-out backlogs come first; what a tune-out withholds is skipped.

        Raises:
            Refusal: ``unknown-cursor``, ``after`` was never handed out.
        """
        return await self._delivery.read(
            agent,
            after=after,
            reader=reader,
            wait_seconds=wait_seconds,
            limit=limit,
            budget=budget,
            request=request,
        )

    def take_back_read(self, agent: str, reader: object, request: Hashable) -> bool:
        """``reader``'s call ``request`` was cancelled after its read answered: unless a later
        read acknowledged it, the read's page comes again (see
        :meth:`InboxDelivery.take_back <switchboard.host.agent.delivery.InboxDelivery.take_back>`).
        """
        return self._delivery.take_back(agent, reader, request)
