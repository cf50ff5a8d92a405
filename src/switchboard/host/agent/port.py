"""One agent's port onto the host: :class:`BoardPort`, the implementation of
:class:`~switchboard.host.port.AgentPort`.

What this module knows: how each operation the tools of one agent need is carried out on the
:class:`~switchboard.host.app.Switchboard`, for the agent whose
:class:`~switchboard.host.agent.desk.AgentDesk` the port was made with. It is the one place
outside the host's own parts that reaches into the host object (its registry, sessions,
config, default channel, lifecycle, tune-outs, typing and streams); it hands the agent's
modules (:mod:`.publishing`, :mod:`.speech`, :mod:`.views`) only the collaborators they use.

- **Names.** Every channel name an agent passes is resolved by the general resolver, the one
  ``channel_publish`` uses (an id, a qualified name, a raw id, a ``#label``, an ``@person``),
  with the turn's own channels first and an empty server id read as none, so every tool
  accepts the same names; ``typing`` without a server id first fans an id or qualified name
  out to every channel it names (typing posts nothing). A name the registry refuses
  becomes a :class:`~switchboard.host.refusal.Refusal` through
  :func:`~switchboard.host.refusal.name_refusal`, naming the tool called. A lifecycle verb's
  own refusal gains the channel as shown to the agent (``channel``, ``server_id``,
  ``channel_id``).
- **Turns.** An inbox read that returns messages begins the agent's next turn while the desk's
  reading lock is held, then asks the connectors for context (``Switchboard.before_inference``:
  streams abandoned, typing moved, ``context/beforeInference``) with the text of the messages.
  A redelivery (:mod:`.delivery`) begins a turn like any read: its locus is decided from the
  same messages by the same rule, so the locus they had is not lost.
- **Tune-outs.** A cancel or a backlog read finds the agent's tune-out (as its owner or its
  reader) by the name it was started with, even after its server stopped registering the
  channel; none found is a ``not-tuned-out`` refusal.
- **Streams.** Feeding or ending a stream that is not the agent's open one (ended, abandoned
  when a turn began, never begun) is a ``no-stream`` refusal; the end delivers the whole text
  through :meth:`BoardPort.speak`.
- **Connector tools.** The tools of each server's current session
  (:mod:`switchboard.host.connection.connector_tools`); a call is refused before anything is
  sent when the server is gone, connecting, not granted ``tools`` or no longer lists the
  tool, and the connector's error or silence becomes a refusal that says whether the tool
  may have run. Changes are followed on the host's event bus.
- **Arrivals.** :meth:`BoardPort.watch_inbox` follows ``MessagesAccepted`` and
  ``PushAccepted`` on the host's event bus and leaves out what a tune-out in effect diverts
  from the agent; :meth:`BoardPort.peek_inbox` reads what is owed above the acknowledged
  position through the same tune-out filter, with none of a read's effects.
- **Isolation** (docs/agents.md, "Routing"). The inbox read, :meth:`BoardPort.peek_inbox`,
  :meth:`BoardPort.stored_message` and :meth:`BoardPort.watch_inbox` show only what the
  board's :class:`~switchboard.host.agents.routing.Router` routes to this agent; a stored
  message routed elsewhere is answered as if it did not exist. Mail, which no host event
  carries, reaches the watch through :meth:`Router.watch
  <switchboard.host.agents.routing.Router.watch>`.
- **Leaving.** ``close`` of a channel another roster agent wants (its home) does not ask the
  connector to close it: this agent leaves it (status ``left``) and its traffic stops coming
  here; ``open`` rejoins it. With nobody else wanting it, ``close`` is the lifecycle's.
- **Mail and the directory.** :meth:`BoardPort.send_mail` deposits through ``board.mail``
  with this agent as the sender (never an argument); the directory reads and ``set_busy`` (on
  the agent's own ``@handle`` only) turn a directory error into a refusal carrying its code
  and name (:func:`~switchboard.host.agents.mail.directory_refusal`).

What it deliberately does not know: MCP, tool results, and how the parts it calls work inside.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Hashable, Mapping, Sequence
from functools import partial
from typing import Any, ClassVar, cast

import structlog

from switchboard.channels import (
    ChannelNameError,
    ChannelRef,
    TuneOutScope,
    TuneOutTerms,
    qualified_name,
)
from switchboard.channels.lifecycle.decisions import ScopeKind
from switchboard.channels.names.wording import Caller
from switchboard.channels.tuneouts.epochs import ActiveTuneOut
from switchboard.directory import DirectoryError, Kind, NotFound
from switchboard.host.agent.delivery import PageBudget, Reader
from switchboard.host.agent.desk import AgentDesk, Locus
from switchboard.host.agent.publishing import AgentPublish, publish_for_agent
from switchboard.host.agent.speech import Speech, speak
from switchboard.host.agent.streams import SpeechEnd, StreamedSpeech
from switchboard.host.agent.views import channel_rows
from switchboard.host.agents.mail import Deposit, directory_refusal
from switchboard.host.app import Switchboard
from switchboard.host.connection.connector_tools import ConnectorTool
from switchboard.host.connection.session import SessionState
from switchboard.host.events import (
    ConnectorToolsChanged,
    HostEvent,
    ManifestApplied,
    MessagesAccepted,
    PushAccepted,
)
from switchboard.host.lifecycle.answers import LifecycleAnswer
from switchboard.host.lifecycle.verbs import MAX_BACKSCROLL
from switchboard.host.port import (
    AgentPort,
    AgentRead,
    Arrival,
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
    message_text,
)
from switchboard.host.refusal import Refusal, RefusalKind, name_refusal, storage_refusal
from switchboard.host.tuneouts.host import StartedTuneOut
from switchboard.host.tuneouts.inbox import TuneOutInbox
from switchboard.host.tuneouts.records import diverts_at_all
from switchboard.store import StorageUnavailableError, StoredMessage, StoreError
from switchboard.transport import LinkClosedError, RequestTimeoutError, RpcError

__all__ = ["TUNE_OUT", "BoardPort", "agent_port"]

log = structlog.get_logger(__name__)

TUNE_OUT = Caller("nothing changed", "channel", None)
"""The wording of the tune-out tools' name refusals: one ``channel`` argument, no server id."""
RUN_TOOL = Caller("nothing ran", "channel", "server_id")
"""The wording of the lifecycle tools' name refusals (arguments ``channel``, ``server_id``)."""
TYPING = Caller("typing did not change", "channel", "server_id")
"""The wording of ``typing``'s name refusals."""


def agent_port(board: Switchboard, agent: str) -> AgentPort:
    """The port through which the tools of the agent named ``agent`` reach ``board``."""
    return BoardPort(board, board.desk(agent))


class BoardPort:
    """:class:`~switchboard.host.port.AgentPort` on a :class:`Switchboard`, for one desk."""

    __slots__ = ("_backlogs", "_board", "_desk", "_reader")

    def __init__(self, board: Switchboard, desk: AgentDesk) -> None:
        self._board = board
        self._desk = desk
        self._backlogs = TuneOutInbox(board.tuneouts)
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
        return self._desk.locus(self._board.registry, self._board.default_channel)

    def locus_shown(self) -> str | None:
        ref = self._locus().ref
        return None if ref is None else self.name_shown(ref)

    def name_shown(self, ref: ChannelRef, *, in_turn: bool = True) -> str:
        names = self._board.registry.names
        return names.name_shown(ref, self._desk.own) if in_turn else names.name_shown(ref)

    def target_shown(self, ref: ChannelRef) -> str:
        names = self._board.registry.names
        own = self._desk.own
        return names.prose_target_for(ref, own) or names.name_shown(ref, own)

    # -- channels, publish, speech, inbox -------------------------------------------------

    def channels(self) -> ChannelListing:
        board = self._board
        servers = {c.id: "disconnected" for c in board.config.connectors}
        disabled: dict[str, tuple[DisabledFeatureSet, ...]] = {}
        for sid, session in board.sessions.items():
            servers[sid] = session.state.value
            if session.disabled_feature_sets:
                disabled[sid] = session.disabled_feature_sets
        rows = channel_rows(board.registry, self._desk.own, board.desired_state)
        return ChannelListing(rows, servers, disabled)

    async def publish(
        self, text: str, *, channel: str | None = None, server_id: str | None = None
    ) -> AgentPublish:
        board = self._board
        return await publish_for_agent(
            board.registry,
            board.default_channel,
            self._desk,
            text,
            publish_to=board.publish_to,
            publish_named=board.publish,
            channel=channel,
            server_id=server_id,
            unknown=board.refusal_for_unknown_name,
        )

    async def speak(self, text: str) -> Speech:
        board = self._board
        return await speak(
            board.registry,
            board.publish_to,
            self._desk,
            self._locus(),
            text,
            unknown=board.refusal_for_unknown_name,
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
        board = self._board
        desk = self._desk
        context: list[dict[str, Any]] = []
        async with desk.reading:
            try:
                read = await board.read_inbox(
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
                turn = desk.begin_turn(read.messages, board.registry)
                log.debug("turn_began", agent=desk.name, turn=turn.number, locus=turn.locus.source)
                said = "\n".join(t for t in map(message_text, read.messages) if t)
                context = await board.before_inference(desk, user_message=said or None)
        return AgentRead(read.messages, read.cursor, read.more, context, read.redelivered)

    def take_back_read(self, reader: object | None, request: Hashable) -> bool:
        return self._board.take_back_read(
            self._desk.name, self._reader if reader is None else reader, request
        )

    async def stored_message(self, seq: int) -> StoredMessage | None:
        if seq < 1:
            return None
        found = await self._board.store.read(seq - 1, 1)
        if not found or found[0].seq != seq:
            return None
        # A message not routed to this agent is answered as if it did not exist.
        return found[0] if self._board.router.routes(self.agent, found[0]) else None

    async def peek_inbox(self, *, limit: int = 50) -> list[StoredMessage]:
        board = self._board
        agent = self._desk.name
        book = board.tuneouts.book
        ended = board.tuneouts.withholding(agent)
        after = await board.store.get_cursor(agent)
        owed: list[StoredMessage] = []
        while len(owed) < limit:
            batch = await board.store.read(after, limit)
            if not batch:
                break
            after = batch[-1].seq
            routed = board.router.reader(agent)
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
        self._board.events.subscribe(
            _InboxWatch(self._board, self.agent, listener, details), takes=_InboxWatch.OBSERVES
        )
        self._board.router.watch(self.agent, _MailWatch(listener))

    # -- lifecycle --------------------------------------------------------------------------

    def _tool_channel(
        self, channel: str, server_id: str | None, tool: str, caller: Caller = RUN_TOOL
    ) -> ChannelRef:
        """The one channel a tool's ``channel`` (and ``server_id``) pick, by the general
        resolver that ``channel_publish`` uses: an id, a qualified name, a raw id, a label or
        an @person, the turn's own channels first; an empty ``server_id`` is none."""
        try:
            entry = self._board.registry.names.resolve(
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
        rejoined = self._board.router.rejoin(self.agent, ref)
        answer = await self._decided(
            ref,
            self._board.lifecycle.open(
                ref,
                by_agent=self.agent,
                backscroll=max(0, min(MAX_BACKSCROLL, backscroll)),
                before_message_id=before_message_id,
            ),
        )
        if not rejoined:
            return answer
        note = (
            f"You rejoined channel {self._board.registry.names.quoted_shown(ref)}: its traffic "
            "comes to you again."
        )
        return dataclasses.replace(answer, text=f"{note} {answer.text}".strip())

    async def close(self, channel: str, *, server_id: str | None = None) -> LifecycleAnswer:
        ref = self._tool_channel(channel, server_id, "channel_close")
        others = [a for a in self._board.router.wanted_by(ref) if a != self.agent]
        if not others:  # nobody else wants it: the connector is asked to close it
            return await self._decided(ref, self._board.lifecycle.close(ref, by_agent=self.agent))
        # A channel stays open while any agent wants it: this agent leaves it instead.
        try:
            fresh = self._board.router.leave(self.agent, ref)
        except StoreError as exc:
            raise Refusal(
                RefusalKind.UNCONFIRMED,
                f"leaving the channel could not be recorded ({exc}); nothing changed.",
                "try channel_close again",
                server_id=ref.server_id,
                channel_id=ref.channel_id,
            ) from None
        shown = self._board.registry.names.quoted_shown(ref)
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
            self._board.lifecycle.decline(
                ref, message_id=message_id, acknowledge=acknowledge, by_agent=self.agent
            ),
        )

    # -- tune-outs --------------------------------------------------------------------------

    def tune_outs(self) -> list[ActiveTuneOut]:
        return self._board.tuneouts.of_agent(self.agent)

    def _by_epoch_name(self, name: str, kind: ScopeKind) -> ChannelRef | None:
        """The one ref among the agent's tune-outs of ``kind`` that ``name`` spells, if any."""
        hits = {
            h.epoch.scope.ref
            for h in self._board.tuneouts.of_agent(self.agent)
            if h.epoch.scope.kind is kind
            and name in (h.epoch.scope.ref.channel_id, qualified_name(h.epoch.scope.ref))
        }
        return hits.pop() if len(hits) == 1 else None

    def _locate(self, channel: str, kind: ScopeKind, *, ours: bool = False) -> ChannelRef:
        """The channel ``channel`` names; with ``ours``, also one of the agent's tune-outs'
        channels that is no longer registered, by its id or qualified name."""
        names = self._board.registry.names
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
        tuneouts = self._board.tuneouts
        held = tuneouts.find(self.agent, TuneOutScope(ref, kind))
        if held is not None:
            return held
        shown = self._board.registry.names.quoted_shown(ref, self._desk.own)
        other = tuneouts.holding(ref) if kind is ScopeKind.CHANNEL else None
        what = f"channel {shown}" if kind is ScopeKind.CHANNEL else f"every channel but {shown}"
        if other is not None:
            message = f"The tune-out of {what} is agent {other.epoch.owner!r}'s, not yours"
        else:
            message = f"You have no tune-out of {what} (as its owner or its reader)"
        raise Refusal(RefusalKind.NOT_TUNED_OUT, f"{message}, so nothing changed.")

    async def start_tune_out(
        self, channel: str, scope: ScopeKind, terms: TuneOutTerms
    ) -> StartedTuneOut:
        ref = self._locate(channel, scope)
        return await self._board.tuneouts.start(self.agent, TuneOutScope(ref, scope), terms)

    async def cancel_tune_out(
        self, channel: str, scope: ScopeKind, digest: str | None = None
    ) -> CancelledTuneOut:
        held = self._mine(channel, scope)
        settled = await self._board.tuneouts.cancel(held.epoch.epoch_id, self.agent, digest)
        return CancelledTuneOut(held, settled.end_seq)

    async def tune_out_backlog(
        self, channel: str, scope: ScopeKind, *, after_seq: int, limit: int
    ) -> TuneOutPage:
        held = self._mine(channel, scope)
        page = await self._backlogs.backlog(held, after_seq, limit)
        return TuneOutPage(held, page.messages, page.cursor, page.more)

    # -- presence ---------------------------------------------------------------------------

    def _typing_refs(self, channel: str, server_id: str | None) -> list[ChannelRef]:
        """An id or qualified name fans out to every channel it names; other names (a label,
        a DM name) must pick one; ``server_id`` narrows to one server."""
        if server_id:
            return [self._tool_channel(channel, server_id, "typing", TYPING)]
        fanned = self._board.registry.names.channels_named(channel)
        return list(fanned) if fanned else [self._tool_channel(channel, None, "typing", TYPING)]

    def _shows_typing(self, ref: ChannelRef) -> bool:
        session = self._board.sessions.get(ref.server_id)
        return session is not None and session.grant.allows("channels.typing")

    async def typing(
        self, channel: str, *, on: bool, server_id: str | None = None, refreshes: int
    ) -> list[TypingIn]:
        keeper = self._board.typing
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
        return self._board.streams.begin(
            self.agent,
            conversation_id=desk.conversation_id,
            mode=desk.prose,
            locus=self._locus().ref,
            own=desk.own,
            sticky=sticky,
            bound=bound,
        )

    async def stream(self, text: str, *, inference_id: str | None = None) -> StreamFed:
        streams = self._board.streams
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
        streams = self._board.streams
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
        sessions = self._board.sessions
        return [tool for sid in sorted(sessions) for tool in sessions[sid].tools.tools]

    async def call_connector_tool(
        self, server_id: str, tool: str, arguments: Mapping[str, Any]
    ) -> Mapping[str, Any]:
        session = self._board.sessions.get(server_id)
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

    def watch_connector_tools(self, listener: Callable[[], None]) -> None:
        self._board.events.subscribe(_ToolsWatch(listener), takes=_ToolsWatch.OBSERVES)

    # -- mail and directory -----------------------------------------------------------------

    @property
    def many_agents(self) -> bool:
        board = self._board
        return bool(board.config.agents) or len(board.roster) > 1

    @property
    def is_task(self) -> bool:
        identity = self._board.roster.get(self._desk.name)
        return identity is not None and identity.kind == "task"

    async def send_mail(self, to: str, text: str) -> Deposit:
        return await self._board.mail.deposit(self.agent, to, text)

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
            return self._board.directory.list(
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
            return self._board.directory.search(text, limit=limit, offset=offset)
        except DirectoryError as exc:
            raise directory_refusal(exc) from None

    def directory_lookup(self, address: str) -> DirectoryEntry:
        try:
            return self._board.directory.lookup(address)
        except DirectoryError as exc:
            raise directory_refusal(exc, address) from None

    def set_busy(self, busy: bool) -> DirectoryEntry:
        identity = self._board.roster.get(self.agent)
        handle = identity.handle if identity is not None else f"@{self.agent}"
        try:
            return self._board.directory.set_busy(handle, busy, force=True)
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
        return self._board.lifetimes.spawn(
            self.agent,
            handle,
            description=description,
            deadline_seconds=deadline_seconds,
            idle_timeout_seconds=idle_timeout_seconds,
            turn_limit=turn_limit,
            home=home,
        )

    async def finish_task(self, result: str) -> EndedAgent:
        return await self._board.lifetimes.finish(self.agent, result)

    async def end_task(self, handle: str) -> EndedAgent:
        return await self._board.lifetimes.end_task(self.agent, handle)


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


class _InboxWatch:
    """A host event listener that tells ``listener`` of the messages committed for ``agent``
    (a tune-out in effect that diverts one leaves it out; push events are never diverted)."""

    __slots__ = ("_agent", "_board", "_details", "_listener")

    #: The events it takes (it is subscribed to only these).
    OBSERVES: ClassVar[tuple[type, ...]] = (MessagesAccepted, PushAccepted)

    def __init__(
        self,
        board: Switchboard,
        agent: str,
        listener: Callable[[Sequence[Arrival]], None],
        details: Callable[[], bool] | None = None,
    ) -> None:
        self._board = board
        self._agent = agent
        self._listener = listener
        self._details = details

    def __call__(self, event: HostEvent) -> None:
        agent = self._agent
        match event:
            case MessagesAccepted(server_id=sid, messages=messages):
                book = self._board.tuneouts.book
                router = self._board.router
                routed = (m for m in messages if router.routes_wire(agent, sid, m))
                if self._details is not None and not self._details():
                    # Only *that* something arrived is wanted: stop at the first message.
                    if router.routes_every(agent, sid):
                        # No message need be read (issue #14): one of the batch's channels
                        # that no tune-out diverts says it.
                        for cid in event.channels:
                            if not cid or book.diverts(ChannelRef(sid, cid), agent) is None:
                                self._listener(())
                                return
                        return
                    for m in routed:
                        cid = str(m.get("channelId") or "")
                        if not cid or book.diverts(ChannelRef(sid, cid), agent) is None:
                            self._listener(())
                            return
                    return
                arrivals = [
                    a
                    for a in map(partial(_arrival, sid), routed)
                    if not a.ref.channel_id or book.diverts(a.ref, agent) is None
                ]
            case PushAccepted(server_id=sid, message=message):
                if not self._board.router.routes_wire(agent, sid, message):
                    return
                arrivals = [_arrival(sid, message)]
            case _:
                return
        if arrivals:
            self._listener(arrivals)


class _MailWatch:
    """A :meth:`Router.watch <switchboard.host.agents.routing.Router.watch>` listener: tells
    ``listener`` of the messages stored without a host event (mail) that are routed to the
    agent."""

    __slots__ = ("_listener",)

    def __init__(self, listener: Callable[[Sequence[Arrival]], None]) -> None:
        self._listener = listener

    def __call__(self, messages: Sequence[StoredMessage]) -> None:
        self._listener(
            [
                Arrival(
                    ChannelRef(m.server_id, m.channel_id),
                    m.message_id,
                    m.author_name,
                    message_text(m),
                    m.timestamp,
                    m.thread_id,
                )
                for m in messages
            ]
        )


def _arrival(server_id: str, message: Mapping[str, Any]) -> Arrival:
    """The :class:`Arrival` of one accepted wire message (validated by the host before)."""
    author = message.get("author")
    name = author.get("name", "") if isinstance(author, Mapping) else ""
    content = message.get("content")
    blocks = content if isinstance(content, list) else []
    text = "\n".join(
        str(b.get("text", "")) for b in blocks if isinstance(b, Mapping) and b.get("type") == "text"
    )
    thread = message.get("threadId")
    return Arrival(
        ChannelRef(server_id, str(message.get("channelId") or "")),
        str(message.get("messageId", "")),
        str(name),
        text,
        str(message.get("timestamp", "")),
        thread if isinstance(thread, str) else None,
    )
