"""One agent's port: :class:`AgentService`, the one implementation of
:class:`~switchboard.agents.port.protocol.AgentPort`.

Each operation is carried out on the agent side's shared parts (:class:`AgentSide`, built once
by the composition root) for the agent whose desk the port was made with. Each method does the
agent's part of the work (naming, the refusals addressed to the agent, its turn) and calls the
shared parts for the rest, so adding a tool is one tool module and one method here.

What it deliberately does not know: MCP, tool results, and how the shared parts work inside.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, cast

import anyio
import structlog

from switchboard.agents.desk.defaults import DefaultChannel
from switchboard.agents.desk.desk import AgentDesk, Desks, Locus
from switchboard.agents.desk.views import channel_rows
from switchboard.agents.inbox.backlogs import withheld_page
from switchboard.agents.inbox.delivery import InboxDelivery, PageBudget, Reader
from switchboard.agents.inbox.mail import Deposit, Mail
from switchboard.agents.inbox.routing import Router
from switchboard.agents.inbox.watch import Arrival, InboxWatchers, message_text
from switchboard.agents.port.protocol import (
    AgentPort,
    AgentRead,
    CancelledTuneOut,
    ChannelListing,
    DirectoryEntry,
    DirectoryPage,
    DisabledFeatureSet,
    EndedAgent,
    SpawnedTask,
    StreamFed,
    TuneOutPage,
    TypingIn,
)
from switchboard.agents.presence.context import ContextHooks
from switchboard.agents.presence.turns import Terminal, TurnSignals
from switchboard.agents.presence.typing import TypingKeeper
from switchboard.agents.roster.lifetimes import Lifetimes
from switchboard.agents.roster.roster import Roster
from switchboard.agents.roster.samplers import Sampler, Samplers
from switchboard.agents.speech.publish import Publisher
from switchboard.agents.speech.publishing import AgentPublish, publish_for_agent
from switchboard.agents.speech.speech import Speech, speak
from switchboard.agents.speech.streams import OutgoingStreams, SpeechEnd, StreamedSpeech
from switchboard.channels import ChannelNameError, ChannelRef, ChannelRegistry, qualified_name
from switchboard.channels.names.wording import Caller
from switchboard.connections.connector_tools import ConnectorTool
from switchboard.connections.owner import Owners, SessionState
from switchboard.directory import (
    DirectoryError,
    DirectoryStore,
    InvalidName,
    Kind,
    NameTaken,
    NotFound,
    validate_address,
)
from switchboard.events import ConnectorToolsChanged, EventBus, HostEvent, ManifestApplied
from switchboard.lifecycle.answers import LifecycleAnswer
from switchboard.lifecycle.host import LifecycleHost
from switchboard.lifecycle.rules.decisions import ScopeKind, TuneOutScope
from switchboard.lifecycle.verbs import MAX_BACKSCROLL
from switchboard.refusals import (
    Refusal,
    RefusalKind,
    directory_refusal,
    name_refusal,
    storage_refusal,
)
from switchboard.store import (
    MessageStoreProtocol,
    StorageUnavailableError,
    StoredMessage,
    StoreError,
)
from switchboard.transport import LinkClosedError, RequestTimeoutError, RpcError
from switchboard.tuneouts.host import StartedTuneOut, TuneOutHost
from switchboard.tuneouts.records import diverts_at_all
from switchboard.tuneouts.rules.epochs import ActiveTuneOut, TuneOutTerms

__all__ = ["TUNE_OUT", "AgentService", "AgentSide"]

log = structlog.get_logger(__name__)

TUNE_OUT = Caller("nothing changed", "channel", None)
"""The wording of the tune-out tools' name refusals: one ``channel`` argument, no server id."""
RUN_TOOL = Caller("nothing ran", "channel", "server_id")
"""The wording of the lifecycle tools' name refusals (arguments ``channel``, ``server_id``)."""
TYPING = Caller("typing did not change", "channel", "server_id")
"""The wording of ``typing``'s name refusals."""


def _handle(name: str) -> str:
    return name if name.startswith("@") else f"@{name}"


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentSide:
    """The agent side's shared parts, built once by the composition root; every agent's port
    works over them (:meth:`port`).

    Attributes:
        configured: The configured connectors' server ids, in config order.
        many_configured: Whether ``[[agents]]`` is configured.
        owners: The owner of each connector that has one now.
        store: The message store (``message_get`` and peeks read it).
    """

    configured: Sequence[str]
    many_configured: bool
    registry: ChannelRegistry
    owners: Owners
    store: MessageStoreProtocol
    events: EventBus
    roster: Roster
    desks: Desks
    default_channel: DefaultChannel
    router: Router
    delivery: InboxDelivery
    watchers: InboxWatchers
    publisher: Publisher
    lifecycle: LifecycleHost
    tuneouts: TuneOutHost
    typing: TypingKeeper
    streams: OutgoingStreams
    context_hooks: ContextHooks
    mail: Mail
    directory: DirectoryStore
    lifetimes: Lifetimes
    samplers: Samplers
    turns: TurnSignals

    def port(self, agent: str) -> AgentPort:
        """The port through which the tools of the agent named ``agent`` reach the host."""
        return AgentService(self, self.desks.for_agent(agent))


class AgentService:
    """:class:`~switchboard.agents.port.protocol.AgentPort` for one agent (see the module
    docstring).

    What it knows: how each operation the tools of one agent need is carried out on the agent side's
    shared parts (:class:`AgentSide`, built once by the composition root), for the agent whose
    :class:`~switchboard.agents.desk.desk.AgentDesk` the port was made with. Who calls is that
    agent, never an argument; each method does the agent's part of the work (naming, the refusals
    addressed to the agent, its turn) and the shared parts do the rest.

    - **Names.** Every channel name an agent passes is resolved by the general resolver, the one
      ``channel_publish`` uses, with the turn's own channels first and an empty server id read as
      none; ``typing`` without a server id fans an id or qualified name out to every channel it
      names. A name the registry refuses becomes a refusal naming the tool called; a lifecycle
      verb's own refusal gains the channel as shown to the agent.
    - **Turns.** An inbox read that returns messages, redelivered or not, begins the agent's next
      turn while the desk's reading lock is held: its streams are abandoned, its automatic typing
      moves to the new locus, and the connectors are asked for context (``beforeInference``).
    - **Isolation** (docs/agents.md, "Routing"). Reads, peeks, ``message_get`` and watches show only
      what the router routes to this agent; a message routed elsewhere does not exist for it.
    - **Leaving.** ``close`` of a channel another agent wants does not close it: this agent leaves
      it (``left``) until ``open`` rejoins it.
    - **Connector tools, streams, tune-outs, mail, tasks:** see each method.
    """

    __slots__ = ("_desk", "_reader", "_side")

    def __init__(self, side: AgentSide, desk: AgentDesk) -> None:
        self._side = side
        self._desk = desk
        # The reader of calls that name none: they acknowledge each other's reads.
        self._reader = Reader(f"port:{desk.name}")

    @property
    def agent(self) -> str:
        return self._desk.name

    @property
    def turn(self) -> int:
        return self._desk.turn.number

    @property
    def prose_mode(self) -> str:
        return self._desk.prose.value

    def _locus(self) -> Locus:
        return self._desk.locus(self._side.registry, self._side.default_channel)

    def locus_shown(self) -> str | None:
        ref = self._locus().ref
        return None if ref is None else self.name_shown(ref)

    def name_shown(self, ref: ChannelRef, *, in_turn: bool = True) -> str:
        names = self._side.registry.names
        return names.name_shown(ref, self._desk.own) if in_turn else names.name_shown(ref)

    def target_shown(self, ref: ChannelRef) -> str:
        names = self._side.registry.names
        own = self._desk.own
        return names.prose_target_for(ref, own) or names.name_shown(ref, own)

    # -- channels, publish, speech, inbox -------------------------------------------------

    def server_states(self) -> dict[str, str]:
        side = self._side
        servers = dict.fromkeys(side.configured, "disconnected")
        for sid, owner in side.owners.items():
            servers[sid] = owner.state.value
        return servers

    def channels(self) -> ChannelListing:
        side = self._side
        disabled: dict[str, tuple[DisabledFeatureSet, ...]] = {}
        for sid, owner in side.owners.items():
            if owner.disabled_feature_sets:
                disabled[sid] = owner.disabled_feature_sets
        rows = channel_rows(side.registry, self._desk.own, side.lifecycle.desired_shown)
        return ChannelListing(rows, self.server_states(), disabled)

    async def publish(
        self, text: str, *, channel: str | None = None, server_id: str | None = None
    ) -> AgentPublish:
        side = self._side
        return await publish_for_agent(
            side.registry,
            side.default_channel,
            self._desk,
            text,
            publish_to=side.publisher.publish_to,
            publish_named=side.publisher.publish,
            channel=channel,
            server_id=server_id,
            unknown=side.publisher.refusal_for_unknown_name,
        )

    async def speak(self, text: str) -> Speech:
        side = self._side
        return await speak(
            side.registry,
            side.publisher.publish_to,
            self._desk,
            self._locus(),
            text,
            unknown=side.publisher.refusal_for_unknown_name,
        )

    async def read_inbox(
        self,
        *,
        after: int | None = None,
        reader: object | None = None,
        wait_seconds: float = 0.0,
        limit: int = 50,
        budget: PageBudget | None = None,
        request: Hashable | None = None,
    ) -> AgentRead:
        side = self._side
        desk = self._desk
        context: list[dict[str, Any]] = []
        async with desk.reading:
            # Coming back to the inbox ends the turn the previous read began.
            await side.turns.end(desk.name, "completed")
            try:
                read = await side.delivery.read(
                    desk.name,
                    after=after,
                    reader=self._reader if reader is None else reader,
                    wait_seconds=wait_seconds,
                    limit=limit,
                    budget=budget,
                    request=request,
                )
            except StorageUnavailableError as exc:  # a cursor or delivered mark not written
                raise storage_refusal(exc.cause, "this read") from None
            if read.messages:
                turn = desk.begin_turn(read.messages, side.registry)
                log.debug("turn_began", agent=desk.name, turn=turn.number, locus=turn.locus.source)
                said: dict[str, list[str]] = {}
                for m in read.messages:
                    text = message_text(m)
                    if text:
                        said.setdefault(m.server_id, []).append(text)
                inference_id = await side.turns.start(
                    desk.name, desk.conversation_id, max(turn.number - 1, 0)
                )
                try:
                    # The turn begins: speech still streaming is abandoned, automatic typing
                    # moves to the new locus, and the connectors add their context.
                    await side.streams.abort_all(desk.name)
                    await side.typing.turn_began(
                        desk.name, desk.locus(side.registry, side.default_channel).ref
                    )
                    context = await side.context_hooks.gather(
                        desk,
                        said={sid: "\n".join(texts) for sid, texts in said.items()},
                        inference_id=inference_id,
                    )
                except BaseException as exc:
                    phase: Terminal = (
                        "aborted" if isinstance(exc, anyio.get_cancelled_exc_class()) else "failed"
                    )
                    with anyio.CancelScope(shield=True):
                        await side.turns.end(desk.name, phase)
                    raise
        return AgentRead(read.messages, read.cursor, read.more, context, read.redelivered)

    def take_back_read(self, reader: object | None, request: Hashable) -> bool:
        # A call over no connection was read by the port's own reader (as in read_inbox).
        reader = self._reader if reader is None else reader
        return self._side.delivery.take_back(self._desk.name, reader, request)

    async def stored_message(self, seq: int) -> StoredMessage | None:
        if seq < 1:
            return None
        found = await self._side.store.read(seq - 1, 1)
        if not found or found[0].seq != seq:
            return None
        # A message not routed to this agent is answered as if it did not exist.
        return found[0] if self._side.router.routes(self.agent, found[0]) else None

    async def peek_inbox(self, *, limit: int = 50) -> list[StoredMessage]:
        side = self._side
        agent = self._desk.name
        book = side.tuneouts.book
        ended = side.tuneouts.withholding(agent)
        after = await side.store.get_cursor(agent)
        owed: list[StoredMessage] = []
        while len(owed) < limit:
            batch = await side.store.read(after, limit)
            if not batch:
                break
            after = batch[-1].seq
            routed = side.router.reader(agent)
            for m in batch:
                if not routed(m):
                    continue
                if diverts_at_all(m):
                    held = book.diverts(ChannelRef(m.server_id, m.channel_id), agent)
                    if held is not None and m.seq > (held.epoch.started_at_sequence or 0):
                        continue
                    if any(s.withheld(m) for s in ended):
                        continue
                owed.append(m)
        return owed[:limit]

    def watch_inbox(
        self,
        listener: Callable[[Sequence[Arrival]], None],
        details: Callable[[], bool] | None = None,
    ) -> None:
        self._side.watchers.watch(self.agent, listener, details)

    # -- lifecycle --------------------------------------------------------------------------

    def _tool_channel(
        self, channel: str, server_id: str | None, tool: str, caller: Caller = RUN_TOOL
    ) -> ChannelRef:
        """The one channel a tool's ``channel`` (and ``server_id``) pick, by the general
        resolver that ``channel_publish`` uses: an id, a qualified name, a raw id, a label or
        an @person, the turn's own channels first; an empty ``server_id`` is none."""
        try:
            entry = self._side.registry.names.resolve(
                channel, server_id=server_id or None, own=self._desk.own, caller=caller
            )
        except ChannelNameError as exc:
            raise name_refusal(exc, tool) from None
        return entry.ref

    async def _decided(self, ref: ChannelRef, verb: Awaitable[LifecycleAnswer]) -> LifecycleAnswer:
        """The verb's answer; its refusal names the channel as shown to this agent."""
        try:
            return await verb
        except Refusal as exc:
            raise exc.adding(
                channel=self.name_shown(ref), server_id=ref.server_id, channel_id=ref.channel_id
            ) from None

    async def open(
        self,
        channel: str,
        *,
        server_id: str | None = None,
        backscroll: int = 0,
        before_message_id: str | None = None,
    ) -> LifecycleAnswer:
        ref = self._tool_channel(channel, server_id, "channel_open")
        rejoined = self._side.router.rejoin(self.agent, ref)
        answer = await self._decided(
            ref,
            self._side.lifecycle.open(
                ref,
                by_agent=self.agent,
                backscroll=max(0, min(MAX_BACKSCROLL, backscroll)),
                before_message_id=before_message_id,
            ),
        )
        if not rejoined:
            return answer
        note = (
            f"You rejoined channel {self._side.registry.names.quoted_shown(ref)}: its traffic "
            "comes to you again."
        )
        return dataclasses.replace(answer, text=f"{note} {answer.text}".strip())

    async def close(self, channel: str, *, server_id: str | None = None) -> LifecycleAnswer:
        ref = self._tool_channel(channel, server_id, "channel_close")
        others = [a for a in self._side.router.wanted_by(ref) if a != self.agent]
        if not others:  # nobody else wants it: the connector is asked to close it
            return await self._decided(ref, self._side.lifecycle.close(ref, by_agent=self.agent))
        # A channel stays open while any agent wants it: this agent leaves it instead.
        try:
            fresh = self._side.router.leave(self.agent, ref)
        except StoreError as exc:
            raise Refusal(
                RefusalKind.UNCONFIRMED,
                f"leaving the channel could not be recorded ({exc}); nothing changed.",
                "try channel_close again",
                server_id=ref.server_id,
                channel_id=ref.channel_id,
            ) from None
        shown = self._side.registry.names.quoted_shown(ref)
        wanting = ", ".join(f"@{a}" for a in others)
        text = (
            f"You {'left' if fresh else 'had already left'} channel {shown}: its traffic, "
            "messages that mention you included, no longer comes to you. The channel stays "
            f"open for {wanting}, whose home it is. Call channel_open on it to rejoin."
        )
        return LifecycleAnswer(ref, "left" if fresh else "already left", text)

    async def decline(
        self,
        channel: str,
        *,
        message_id: str,
        server_id: str | None = None,
        acknowledge: str | None = None,
    ) -> LifecycleAnswer:
        ref = self._tool_channel(channel, server_id, "channel_decline")
        return await self._decided(
            ref,
            self._side.lifecycle.decline(
                ref, message_id=message_id, acknowledge=acknowledge, by_agent=self.agent
            ),
        )

    # -- tune-outs --------------------------------------------------------------------------

    def tune_outs(self) -> list[ActiveTuneOut]:
        agent = self.agent
        return [
            h for h in self._side.tuneouts.book.epochs() if agent in (h.epoch.owner, h.epoch.reader)
        ]

    def _by_epoch_name(self, name: str, kind: ScopeKind) -> ChannelRef | None:
        """The one ref among the agent's tune-outs of ``kind`` that ``name`` spells, if any."""
        hits = {
            h.epoch.scope.ref
            for h in self.tune_outs()
            if h.epoch.scope.kind is kind
            and name in (h.epoch.scope.ref.channel_id, qualified_name(h.epoch.scope.ref))
        }
        return hits.pop() if len(hits) == 1 else None

    def _locate(self, channel: str, kind: ScopeKind, *, ours: bool = False) -> ChannelRef:
        """The channel ``channel`` names; with ``ours``, also one of the agent's tune-outs'
        channels that is no longer registered, by its id or qualified name."""
        names = self._side.registry.names
        try:
            return names.resolve(channel, own=self._desk.own, caller=TUNE_OUT).ref
        except ChannelNameError as exc:
            ref = self._by_epoch_name(channel, kind) if ours else None
            if ref is None:
                raise name_refusal(exc, "tune_out", server_arg=None) from None
            return ref

    def _mine(self, channel: str, kind: ScopeKind) -> ActiveTuneOut:
        """The agent's tune-out (as owner or reader) of ``channel`` in ``kind``, or a refusal."""
        ref = self._locate(channel, kind, ours=True)
        tuneouts = self._side.tuneouts
        held = tuneouts.find(self.agent, TuneOutScope(ref, kind))
        if held is not None:
            return held
        shown = self._side.registry.names.quoted_shown(ref, self._desk.own)
        other = tuneouts.holding(ref) if kind is ScopeKind.CHANNEL else None
        what = f"channel {shown}" if kind is ScopeKind.CHANNEL else f"every channel but {shown}"
        if other is not None:
            message = f"The tune-out of {what} belongs to @{other.epoch.owner}, not to you"
        else:
            message = f"You have no tune-out of {what} (as its owner or its reader)"
        raise Refusal(RefusalKind.NOT_TUNED_OUT, f"{message}, so nothing changed.")

    async def start_tune_out(
        self, channel: str, scope: ScopeKind, terms: TuneOutTerms
    ) -> StartedTuneOut:
        ref = self._locate(channel, scope)
        return await self._side.tuneouts.start(self.agent, TuneOutScope(ref, scope), terms)

    async def cancel_tune_out(
        self, channel: str, scope: ScopeKind, digest: str | None = None
    ) -> CancelledTuneOut:
        held = self._mine(channel, scope)
        settled = await self._side.tuneouts.cancel(held.epoch.epoch_id, self.agent, digest)
        return CancelledTuneOut(held, settled.end_seq)

    async def tune_out_backlog(
        self, channel: str, scope: ScopeKind, *, after_seq: int, limit: int
    ) -> TuneOutPage:
        held = self._mine(channel, scope)
        # The reader's view is not narrowed by routing: it is whatever the epoch withheld.
        page = await withheld_page(self._side.store, held, after_seq, limit)
        return TuneOutPage(held, page.messages, page.cursor, page.more)

    # -- presence ---------------------------------------------------------------------------

    def _typing_refs(self, channel: str, server_id: str | None) -> list[ChannelRef]:
        """An id or qualified name fans out to every channel it names; other names (a label,
        a DM name) must pick one; ``server_id`` narrows to one server."""
        if server_id:
            return [self._tool_channel(channel, server_id, "typing", TYPING)]
        fanned = self._side.registry.names.channels_named(channel)
        return list(fanned) if fanned else [self._tool_channel(channel, None, "typing", TYPING)]

    def _shows_typing(self, ref: ChannelRef) -> bool:
        owner = self._side.owners.get(ref.server_id)
        return owner is not None and owner.grant.allows("channels.typing")

    async def typing(
        self, channel: str, *, on: bool, server_id: str | None = None, refreshes: int
    ) -> list[TypingIn]:
        keeper = self._side.typing
        typing: list[ChannelRef] = []
        for ref in self._typing_refs(channel, server_id):
            if on:
                typing += await keeper.start(ref, refreshes=refreshes)
            else:
                await keeper.stop(ref)
                typing.append(ref)
        return [TypingIn(ref, self._shows_typing(ref)) for ref in typing]

    def _no_stream(self, inference_id: str) -> Refusal:
        return Refusal(
            RefusalKind.NO_STREAM,
            f"there is no open stream {inference_id!r} of yours: it ended, was abandoned when "
            "your next turn began, or never existed; nothing was published by this call.",
        )

    def _begin_stream(self) -> StreamedSpeech:
        desk = self._desk
        sticky = desk.sticky
        bound = None
        if sticky.target is not None and desk.sticky_ref is not None:
            bound = {sticky.target: desk.sticky_ref}
        return self._side.streams.begin(
            self.agent,
            conversation_id=desk.conversation_id,
            mode=desk.prose,
            locus=self._locus().ref,
            own=desk.own,
            sticky=sticky,
            bound=bound,
        )

    async def stream(self, text: str, *, inference_id: str | None = None) -> StreamFed:
        streams = self._side.streams
        if inference_id is None:
            speech = self._begin_stream()
        else:
            found = streams.get(self.agent, inference_id)
            if found is None:
                raise self._no_stream(inference_id)
            speech = found
        async with speech.lock:
            if streams.get(self.agent, speech.inference_id) is not speech:
                raise self._no_stream(speech.inference_id)
            sent = await speech.feed(text)
        return StreamFed(speech.inference_id, sent)

    async def end_stream(
        self, inference_id: str, *, text: str = "", abort: bool = False
    ) -> SpeechEnd[Speech]:
        streams = self._side.streams
        speech = streams.get(self.agent, inference_id)
        if speech is None:
            raise self._no_stream(inference_id)
        async with speech.lock:
            if streams.get(self.agent, inference_id) is not speech:
                raise self._no_stream(inference_id)
            streams.release(speech)
            if abort:
                return await speech.abort()
            if text:
                await speech.feed(text)
            return await speech.finish(self.speak)

    # -- connector tools --------------------------------------------------------------------

    def connector_tools(self) -> list[ConnectorTool]:
        owners = self._side.owners
        return [tool for sid in sorted(owners) for tool in owners[sid].tools.tools]

    async def call_connector_tool(
        self, server_id: str, tool: str, arguments: Mapping[str, Any]
    ) -> Mapping[str, Any]:
        session = self._side.owners.get(server_id)
        facts: dict[str, Any] = {"server_id": server_id, "tool": tool}
        what = f"tool {tool!r} of connector {server_id!r}"
        if session is None or session.state is SessionState.CLOSED:
            raise Refusal(
                RefusalKind.SERVER_GONE,
                f"connector {server_id!r} is not connected right now, so {what} was not called.",
                **facts,
            )
        if session.state is SessionState.CONNECTING:
            raise Refusal(
                RefusalKind.SERVER_CONNECTING,
                f"connector {server_id!r} is still connecting, so {what} was not called.",
                **facts,
            )
        if not session.tools.granted:
            raise Refusal(
                RefusalKind.NOT_GRANTED,
                f"connector {server_id!r} is not granted tools (or runs without MCPL), so "
                f"Switchboard does not pass its tools through; {what} was not called.",
                'use another tool; to allow its tools, whoever runs this host adds "tools" to '
                "its grant",
                **facts,
            )
        if session.tools.find(tool) is None:
            raise Refusal(
                RefusalKind.UNKNOWN_TOOL,
                f"connector {server_id!r} no longer lists a tool {tool!r}; nothing was called.",
                **facts,
            )
        try:
            result = await session.tools.call(tool, arguments)
        except RpcError as exc:
            raise Refusal(
                RefusalKind.CONNECTOR_FAILED,
                f"connector {server_id!r} answered the call of its tool {tool!r} with error "
                f"{exc.code}: {exc.message}",
                "check the arguments against the tool's input schema and call it again, or "
                "use another tool",
                code=exc.code,
                **facts,
            ) from None
        except (RequestTimeoutError, LinkClosedError) as exc:
            raise Refusal(
                RefusalKind.UNCONFIRMED,
                f"connector {server_id!r} did not answer the call of its tool {tool!r} ({exc}); "
                "the tool may have run.",
                "check whether it took effect before calling it again",
                **facts,
            ) from None
        if not isinstance(result, Mapping):
            raise Refusal(
                RefusalKind.CONNECTOR_FAILED,
                f"connector {server_id!r} answered the call of its tool {tool!r} with a "
                f"{type(result).__name__}, not a tool result; it may have run.",
                "check whether it took effect before calling it again",
                **facts,
            )
        return result

    def offer_sampling(self, key: Hashable, sampler: Sampler | None, client: str) -> None:
        # Offered under this port's agent: a session samples for the agent it speaks for.
        self._side.samplers.offer(self._desk.name, key, sampler, client)

    def watch_connector_tools(self, listener: Callable[[], None]) -> None:
        self._side.events.subscribe(_ToolsWatch(listener), takes=_ToolsWatch.OBSERVES)

    # -- mail and directory -----------------------------------------------------------------

    @property
    def many_agents(self) -> bool:
        side = self._side
        return side.many_configured or len(side.roster) > 1

    @property
    def is_task(self) -> bool:
        identity = self._side.roster.get(self._desk.name)
        return identity is not None and identity.kind == "task"

    async def send_mail(self, to: str, text: str) -> Deposit:
        if not text.strip():
            raise Refusal(
                RefusalKind.EMPTY_CONTENT,
                "there is nothing to send: the text is empty",
                "call agent_send with the words to send as text",
            )
        return await self._side.mail.deposit(self.agent, to, text)

    def directory_list(
        self,
        *,
        prefix: str | None = None,
        tag: str | None = None,
        kind: str | None = None,
        owner: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> DirectoryPage:
        try:
            return self._side.directory.list(
                prefix=prefix,
                tag=tag,
                kind=cast("Kind | None", kind),
                owner=owner,
                limit=limit,
                offset=offset,
            )
        except DirectoryError as exc:
            raise directory_refusal(exc) from None

    def directory_search(self, text: str, *, limit: int = 50, offset: int = 0) -> DirectoryPage:
        try:
            return self._side.directory.search(text, limit=limit, offset=offset)
        except DirectoryError as exc:
            raise directory_refusal(exc) from None

    def directory_lookup(self, address: str) -> DirectoryEntry:
        try:
            return self._side.directory.lookup(address)
        except DirectoryError as exc:
            raise directory_refusal(exc, address) from None

    def set_busy(self, busy: bool) -> DirectoryEntry:
        identity = self._side.roster.get(self.agent)
        handle = identity.handle if identity is not None else f"@{self.agent}"
        try:
            return self._side.directory.set_busy(handle, busy, force=True)
        except NotFound:
            raise Refusal(
                RefusalKind.UNKNOWN_ADDRESS,
                f"you ({handle}) have no directory entry, so there is nothing to mark busy or "
                "idle; nothing changed.",
                "carry on: without an entry nobody looks you up as busy",
                code=NotFound.code,
                name=NotFound.name,
                address=handle,
            ) from None
        except DirectoryError as exc:
            raise directory_refusal(exc, handle) from None

    # -- task agents ------------------------------------------------------------------------

    def spawn_task(
        self,
        handle: str,
        *,
        description: str = "",
        deadline_seconds: float | None = None,
        idle_timeout_seconds: float | None = None,
        turn_limit: int | None = None,
        home: str | None = None,
    ) -> SpawnedTask:
        address = _handle(handle)
        try:
            validate_address(address)
        except InvalidName as exc:
            said = f"{handle!r} is not an agent handle: {exc}; nothing was started"
            raise directory_refusal(exc, address, said=said) from None
        lifetimes = self._side.lifetimes
        if lifetimes.taken(address):
            raise Refusal(
                RefusalKind.ADDRESS_TAKEN,
                f"{address} is taken: a live agent has that name; nothing was started",
                address=address,
            )
        try:
            return lifetimes.start_task(
                self.agent,
                address,
                description=description,
                deadline_seconds=deadline_seconds,
                idle_timeout_seconds=idle_timeout_seconds,
                turn_limit=turn_limit,
                home=home,
            )
        except NameTaken as exc:
            said = f"{address} is taken: {exc}; nothing was started"
            raise directory_refusal(
                exc, address, kind=RefusalKind.ADDRESS_TAKEN, said=said
            ) from None
        except DirectoryError as exc:
            said = f"{address} could not be claimed: {exc}; nothing was started"
            raise directory_refusal(
                exc, address, kind=RefusalKind.DIRECTORY_REFUSED, said=said
            ) from None

    async def finish_task(self, result: str) -> EndedAgent:
        lifetimes = self._side.lifetimes
        if lifetimes.live_task(self.agent) is None:
            raise Refusal(
                RefusalKind.NOT_A_TASK,
                f"{_handle(self.agent)} is not a task agent, so it has nothing to finish",
            )
        ended = await lifetimes.end(self.agent, "finished", result=result)
        assert ended is not None  # it was live and not ending
        return ended

    async def end_task(self, handle: str) -> EndedAgent:
        lifetimes = self._side.lifetimes
        task = lifetimes.live_task(handle)
        if task is None or task.parent != self.agent:
            raise Refusal(
                RefusalKind.NOT_YOUR_TASK,
                f"{_handle(handle)} is not a live task you started; nothing was ended",
                handle=_handle(handle),
            )
        ended = await lifetimes.end(task.name, "ended-by-parent")
        assert ended is not None
        return ended


class _ToolsWatch:
    """A host event listener that calls ``listener`` when connector tools may have changed."""

    __slots__ = ("_listener",)

    #: The events it takes (it is subscribed to only these: never called for traffic).
    OBSERVES: ClassVar[tuple[type, ...]] = (ConnectorToolsChanged, ManifestApplied)

    def __init__(self, listener: Callable[[], None]) -> None:
        self._listener = listener

    def __call__(self, event: HostEvent) -> None:
        if isinstance(event, ConnectorToolsChanged | ManifestApplied):
            self._listener()
