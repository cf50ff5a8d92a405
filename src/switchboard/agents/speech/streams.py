"""Outgoing streams: speech shown live as it is written, then published for real.

Streamed chunks go to connectors granted ``channels.streaming`` as advisory notifications and
are never delivered; the stream's end publishes the whole text as ``speak`` would
(channel-registry.md §4.3, §10.2). A stream still open when the agent's next turn begins is
abandoned (completed, not sent).

What it deliberately does not know: MCP, turns, drafts and ``{{unsent}}``.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

import anyio
import structlog

from switchboard.channels import (
    NO_STICKY,
    ChannelNameError,
    ChannelRef,
    ChannelRegistry,
    Disposition,
    Piece,
    ProseMode,
    Route,
    Sticky,
    StreamingRouter,
)
from switchboard.connections.owner import ConnectorOwner, Owners, ready_for
from switchboard.transport import TransportError

__all__ = [
    "InferenceStream",
    "OutgoingStreams",
    "SpeechEnd",
    "StreamSink",
    "Streamed",
    "StreamedSpeech",
]

log = structlog.get_logger(__name__)

T = TypeVar("T")


class StreamSink(Protocol):
    """Where a :class:`StreamedSpeech` sends its decided text (an :class:`InferenceStream`)."""

    @property
    def inference_id(self) -> str: ...

    async def chunk(self, to: ChannelRef, delta: str) -> bool: ...

    async def close(self) -> tuple[ChannelRef, ...]: ...


class InferenceStream:
    """The outgoing streams of one inference: one ``index`` counter, one stream per channel."""

    __slots__ = (
        "_closed",
        "_completed",
        "_index",
        "_open",
        "_owners",
        "_registry",
        "conversation_id",
        "inference_id",
    )

    def __init__(
        self,
        registry: ChannelRegistry,
        owners: Owners,
        *,
        conversation_id: str,
        inference_id: str,
    ) -> None:
        self._registry = registry
        self._owners = owners
        self.conversation_id = conversation_id
        self.inference_id = inference_id
        self._index = 0
        self._open: dict[ChannelRef, list[str]] = {}
        self._completed: set[ChannelRef] = set()
        self._closed = False

    @property
    def open(self) -> tuple[ChannelRef, ...]:
        """The channels with a started stream not yet completed."""
        return tuple(self._open)

    async def chunk(self, to: ChannelRef, delta: str) -> bool:
        """Stream ``delta`` to ``to``; False when nothing was sent (dropped silently).

        Returns:
            Whether a chunk went out (it may still have been lost on the wire).
        """
        continuing = to in self._open
        if not delta or to in self._completed or (self._closed and not continuing):
            return False
        owner = self._owner(to, starting=not continuing)
        if owner is None:
            return False
        self._open.setdefault(to, []).append(delta)
        index = self._index
        self._index += 1
        await self._send(owner, "channels/outgoing/chunk", to, index=index, delta=delta)
        return True

    async def complete(self, to: ChannelRef, text: str | None = None) -> bool:
        """End the stream in ``to`` with its full text (default: its deltas joined).

        Does nothing for a channel whose stream never started or was completed already.

        Returns:
            Whether a ``complete`` went out.
        """
        parts = self._open.pop(to, None)
        if parts is None:
            return False
        self._completed.add(to)
        owner = self._owner(to, starting=False)
        if owner is None:
            return False
        content = [{"type": "text", "text": "".join(parts) if text is None else text}]
        await self._send(owner, "channels/outgoing/complete", to, content=content)
        return True

    async def close(self) -> tuple[ChannelRef, ...]:
        """Complete every stream still open, shielded from cancellation; start no more.

        Returns:
            The channels completed now.
        """
        self._closed = True
        done = self.open
        with anyio.CancelScope(shield=True):
            for ref in done:
                await self.complete(ref)
        return done

    def _owner(self, ref: ChannelRef, *, starting: bool) -> ConnectorOwner | None:
        entry = self._registry.get(ref)
        if entry is None or (starting and entry.descriptor.direction == "inbound"):
            return None
        owner = self._owners.get(ref.server_id)
        return owner if owner is not None and ready_for(owner, "channels.streaming") else None

    async def _send(
        self, owner: ConnectorOwner, method: str, to: ChannelRef, **params: Any
    ) -> None:
        params.update(
            inferenceId=self.inference_id,
            conversationId=self.conversation_id,
            channelId=to.channel_id,
        )
        try:
            await owner.stream(method, params)
        except TransportError as exc:
            log.info(
                "stream_message_not_sent",
                method=method,
                server_id=to.server_id,
                channel_id=to.channel_id,
                error=str(exc),
            )


@dataclass(frozen=True, slots=True)
class Streamed:
    """Text one call streamed to one channel."""

    ref: ChannelRef
    text: str


@dataclass(frozen=True, slots=True)
class SpeechEnd(Generic[T]):
    """What the end of a streamed speech did.

    Attributes:
        delivered: What the delivery of the whole text returned (None when aborted).
        completed: The channels whose stream was completed.
        aborted: Nothing was delivered (the speech was abandoned).
    """

    delivered: T | None
    completed: tuple[ChannelRef, ...]
    aborted: bool = False


class StreamedSpeech:
    """One streamed block of an agent's speech: :meth:`feed` deltas, then :meth:`finish`."""

    __slots__ = (
        "_locus",
        "_own",
        "_parts",
        "_registry",
        "_router",
        "_targets",
        "lock",
        "owner",
        "stream",
    )

    def __init__(
        self,
        stream: StreamSink,
        registry: ChannelRegistry,
        *,
        owner: str,
        mode: ProseMode,
        locus: ChannelRef | None,
        own: frozenset[ChannelRef] = frozenset(),
        sticky: Sticky = NO_STICKY,
        bound: Mapping[str, ChannelRef] | None = None,
    ) -> None:
        """Start a block.

        Args:
            stream: Where chunks and completes go.
            registry: Resolves ``>>`` targets (for speech: inbound-only is refused).
            owner: The agent speaking.
            mode: The agent's prose mode.
            locus: The turn's frozen locus (None: unprefixed prose has nowhere to go).
            own: The turn's own channels.
            sticky: The sticky target left by the turn's earlier speech.
            bound: Targets already decided this turn (token to channel), such as the
                channel the sticky target resolved to when it was set.
        """
        self.stream = stream
        self.owner = owner
        self._registry = registry
        self._locus = locus
        self._own = own
        self._targets: dict[str, ChannelRef | None] = dict(bound or {})
        self._router = StreamingRouter(mode, sticky=sticky, resolves=self._resolves)
        self._parts: list[str] = []
        #: Held by whoever feeds, finishes or aborts this speech (tool calls may overlap).
        self.lock = anyio.Lock()

    @property
    def inference_id(self) -> str:
        return self.stream.inference_id

    @property
    def text(self) -> str:
        """Everything fed so far, as written."""
        return "".join(self._parts)

    async def feed(self, delta: str) -> tuple[Streamed, ...]:
        """Take the next piece of text; stream what it decided.

        Returns:
            Per channel, the text streamed by this call (in first-chunk order).
        """
        self._parts.append(delta)
        return await self._stream(self._router.feed(delta))

    async def finish(self, deliver: Callable[[str], Awaitable[T]]) -> SpeechEnd[T]:
        """End the block: stream the rest, deliver the whole text, complete every stream.

        ``deliver`` gets the whole text as written (the authoritative publish happens there).
        The streams are completed afterwards whatever happens, including cancellation.
        """
        try:
            await self._stream(self._router.finish())
            delivered = await deliver(self.text)
        finally:
            completed = await self.stream.close()
        return SpeechEnd(delivered, completed)

    async def abort(self) -> SpeechEnd[Any]:
        """Abandon the block: complete the streams, deliver nothing."""
        completed = await self.stream.close()
        return SpeechEnd(None, completed, aborted=True)

    # -- internals -----------------------------------------------------------------------

    def _resolves(self, token: str) -> bool:
        """Whether ``token`` picks one channel speech may go to; decided once per block."""
        if token not in self._targets:
            try:
                entry = self._registry.names.resolve_prose_target(
                    token, for_speech=True, own=self._own
                )
            except ChannelNameError:
                self._targets[token] = None
            else:
                self._targets[token] = entry.ref
        return self._targets[token] is not None

    def _destination(self, route: Route) -> ChannelRef | None:
        if route.disposition is Disposition.LOCUS:
            return self._locus
        if route.disposition is Disposition.TARGET and route.target is not None:
            # A sticky target from an earlier block may not be bound yet: resolve it now.
            return self._targets[route.target] if self._resolves(route.target) else None
        return None

    async def _stream(self, pieces: list[Piece]) -> tuple[Streamed, ...]:
        sent: dict[ChannelRef, list[str]] = {}
        for piece in pieces:
            ref = self._destination(piece.route)
            if ref is not None and await self.stream.chunk(ref, piece.text):
                sent.setdefault(ref, []).append(piece.text)
        return tuple(Streamed(ref, "".join(texts)) for ref, texts in sent.items())


class OutgoingStreams:
    """The streamed speeches open now, by inference id (each belongs to one agent).

    What it knows (channel-registry.md §4.3, §10.2; mcpl-protocol.md 4.9):

    - **The wire** (:class:`InferenceStream`). ``channels/outgoing/chunk {inferenceId,
      conversationId, channelId, index, delta}`` and ``channels/outgoing/complete {inferenceId,
      conversationId, channelId, content}``, both Notifications, go only to the server that
      registered the channel and only while its *grant* holds ``channels.streaming`` (the grant is
      advertisement ∩ policy, so a server that did not declare streaming never gets one, H-46).
      ``index`` is one counter per inference across all its channels, so each server sees gaps
      (H-48). A stream starts with its first chunk; none starts in an inbound-only channel (one that
      started before the declaration continues). ``complete`` goes exactly once per started stream,
      carrying the stream's whole text, and never for a channel that got no chunk (H-49, H-50); a
      channel completed in an inference takes no further chunk in it. Connector errors are logged
      and swallowed: a stream is an observer surface and never disturbs speech.
    - **Speech** (:class:`StreamedSpeech`). The agent's text arrives in deltas and runs through the
      pure :class:`~switchboard.channels.StreamingRouter`, so only text whose destination is decided
      is streamed (fail-closed, H-51): the turn's locus, or a ``>>`` target that resolves for speech
      (each target is resolved once per block; the caller may pass targets already bound this turn).
      At the end the whole text goes to the caller's ``deliver`` (the agent's ordinary speech path,
      which parses it in batch with the same grammar and publishes each delivering segment: the
      publish is authoritative, the stream only a preview). Then every started stream is completed,
      on every exit path (``try``/``finally``, shielded from cancellation). An abort completes the
      streams and delivers nothing.
    - **The book** (:class:`OutgoingStreams`): the speech streams open now, per agent, by inference
      id.
    """

    __slots__ = ("_open", "_owners", "_registry")

    def __init__(self, registry: ChannelRegistry, owners: Owners) -> None:
        self._registry = registry
        self._owners = owners
        self._open: dict[str, StreamedSpeech] = {}

    def inference(self, conversation_id: str, inference_id: str | None = None) -> InferenceStream:
        """A fresh :class:`InferenceStream` (a new id unless one is given)."""
        return InferenceStream(
            self._registry,
            self._owners,
            conversation_id=conversation_id,
            inference_id=inference_id or uuid.uuid4().hex,
        )

    def begin(
        self,
        owner: str,
        *,
        conversation_id: str,
        mode: ProseMode,
        locus: ChannelRef | None,
        own: frozenset[ChannelRef] = frozenset(),
        sticky: Sticky = NO_STICKY,
        bound: Mapping[str, ChannelRef] | None = None,
    ) -> StreamedSpeech:
        """Open a streamed speech for ``owner`` under a new inference id."""
        speech = StreamedSpeech(
            self.inference(conversation_id),
            self._registry,
            owner=owner,
            mode=mode,
            locus=locus,
            own=own,
            sticky=sticky,
            bound=bound,
        )
        self._open[speech.inference_id] = speech
        return speech

    def get(self, owner: str, inference_id: str) -> StreamedSpeech | None:
        """The open speech ``inference_id`` of ``owner``, or None."""
        speech = self._open.get(inference_id)
        return speech if speech is not None and speech.owner == owner else None

    def release(self, speech: StreamedSpeech) -> None:
        """Forget a speech that has finished or was aborted."""
        if self._open.get(speech.inference_id) is speech:
            del self._open[speech.inference_id]

    def open_for(self, owner: str) -> tuple[StreamedSpeech, ...]:
        """The speeches ``owner`` has open."""
        return tuple(s for s in self._open.values() if s.owner == owner)

    async def abort_all(self, owner: str) -> tuple[str, ...]:
        """Abort every speech ``owner`` has open (its turn is over); return their ids."""
        aborted = self.open_for(owner)
        for speech in aborted:
            self.release(speech)
            await speech.abort()
            log.warning("stream_abandoned", agent=owner, inference_id=speech.inference_id)
        return tuple(s.inference_id for s in aborted)
