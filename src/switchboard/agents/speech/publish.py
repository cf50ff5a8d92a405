"""Publishing words into a channel: :class:`Publisher`, the one path every agent's words take.

What this module knows: what may be refused before anything is sent, in this order: empty
text; a name that picks no channel or several (a server that is gone, restarting or still
connecting says so rather than "unknown channel", naming it); a server that is not configured,
not connected, restarting, still connecting or without MCPL; an inbound-only channel; a grant
without ``channels.publish``. Then the lifecycle's speech gate lets queued decisions on the
channel settle and opens first a channel a default or a machine closed (channel-registry.md
§8.3), and the words go to the connector's owner as ``channels/publish``. A ``Published`` event
follows every publish that was carried out.

What it deliberately does not know: agents, turns and speech (:mod:`.publishing`,
:mod:`.speech`), and how the owner carries the request.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Protocol

from switchboard.channels import (
    ChannelEntry,
    ChannelNameError,
    ChannelRegistry,
    UnknownName,
    qualified_name,
    server_named,
)
from switchboard.channels.names.wording import q
from switchboard.connections.owner import Owners, SessionState
from switchboard.events import EventBus, Published
from switchboard.refusals import PublishOutcome, Refusal, RefusalKind, name_refusal

__all__ = ["Publisher", "Restarts", "SpeechClearing"]


class SpeechClearing(Protocol):
    """The lifecycle's speech gate (:class:`~switchboard.lifecycle.speech.SpeechGate`)."""

    def clear_now(self, entry: ChannelEntry) -> bool: ...

    async def clear(self, entry: ChannelEntry) -> ChannelEntry | PublishOutcome: ...


class Restarts(Protocol):
    """Which connectors wait to be started again
    (:class:`~switchboard.connections.supervisor.Supervisor` provides it)."""

    def restarting(self, server_id: str) -> bool: ...


class Publisher:
    """Publishes words into channels (see the module docstring).

    Args:
        registry: The channel registry (names, registrations).
        owners: The owner of each connector that has one now.
        configured: The configured server ids (a server known but not connected is "gone").
        speech: The lifecycle's speech gate.
        events: Where ``Published`` is told.
        restarts: Which connectors are restarting (their channels are "connecting", not "gone").
    """

    __slots__ = ("_configured", "_events", "_owners", "_registry", "_restarts", "_speech")

    def __init__(
        self,
        *,
        registry: ChannelRegistry,
        owners: Owners,
        configured: Collection[str],
        speech: SpeechClearing,
        events: EventBus,
        restarts: Restarts | None = None,
    ) -> None:
        self._registry = registry
        self._owners = owners
        self._configured = frozenset(configured)
        self._speech = speech
        self._events = events
        self._restarts = restarts

    async def publish(
        self, target: str, text: str, *, server_id: str | None = None, conversation_id: str = ""
    ) -> PublishOutcome:
        """Publish ``text`` to the channel ``target`` names, refusing early where it must."""
        if not text.strip():
            return PublishOutcome.refused(
                Refusal(RefusalKind.EMPTY_CONTENT, "there is nothing to send: the text is empty")
            )
        try:
            entry = self._registry.resolve(target, server_id=server_id)
        except ChannelNameError as exc:
            # A server that is gone or still connecting has no channels registered: say that,
            # rather than "unknown channel", when the caller named the server.
            refusal = None
            if isinstance(exc, UnknownName) and server_id is not None:
                refusal = self.server_refusal(server_id)
            return PublishOutcome.refused(refusal or name_refusal(exc, "channel_publish"))
        return await self.publish_to(entry, text, conversation_id=conversation_id)

    def server_refusal(self, server_id: str) -> Refusal | None:
        """Why nothing can be published to ``server_id`` now, or None when it can be."""
        owner = self._owners.get(server_id)
        if owner is None and server_id not in self._configured:
            return Refusal(
                RefusalKind.UNKNOWN_CHANNEL,
                f"there is no server {server_id!r}; call channel_list to see the servers",
                server_id=server_id,
            )
        down = self._server_down(server_id)
        if down is not None:
            kind, state = down
            return Refusal(kind, f"server {server_id!r} {state}", server_id=server_id)
        if owner is not None and owner.state is SessionState.MCP_ONLY:
            return Refusal(
                RefusalKind.NOT_GRANTED,
                f"server {server_id!r} runs without MCPL, so it has no channels to publish to",
                server_id=server_id,
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

    def _server_down(self, server_id: str) -> tuple[RefusalKind, str] | None:
        """``server-gone`` or ``server-connecting`` and what the server is doing, when a
        configured server is not serving: not connected, restarting, or still connecting."""
        owner = self._owners.get(server_id)
        if owner is None or owner.state is SessionState.CLOSED:
            if self._restarts is not None and self._restarts.restarting(server_id):
                return (
                    RefusalKind.SERVER_CONNECTING,
                    "is restarting (its connection ended and it is being started again); "
                    "nothing was sent, try again in a few seconds",
                )
            return (
                RefusalKind.SERVER_GONE,
                "is not connected right now; nothing was sent, try again later",
            )
        if owner.state is SessionState.CONNECTING:
            return (
                RefusalKind.SERVER_CONNECTING,
                "is still connecting; nothing was sent, try again shortly",
            )
        return None

    async def publish_to(
        self, entry: ChannelEntry, text: str, *, conversation_id: str = ""
    ) -> PublishOutcome:
        """Publish ``text`` into the registration ``entry`` (see the module docstring)."""
        ref = entry.ref
        refusal = self.server_refusal(ref.server_id)
        if refusal is not None:
            return PublishOutcome.refused(refusal)
        owner = self._owners[ref.server_id]
        if entry.descriptor.direction == "inbound":
            return PublishOutcome.refused(
                Refusal(
                    RefusalKind.INBOUND_ONLY,
                    f"{qualified_name(ref)} is inbound-only: it can be read but not written to",
                    server_id=ref.server_id,
                    channel_id=ref.channel_id,
                )
            )
        if not owner.grant.allows("channels.publish"):
            return PublishOutcome.refused(
                Refusal(
                    RefusalKind.NOT_GRANTED,
                    f"server {ref.server_id!r} is not granted channels.publish; nothing was sent",
                    server_id=ref.server_id,
                    channel_id=ref.channel_id,
                )
            )
        # Lifecycle (§8.3): queued work settles, a default-closed channel opens first.
        speech = self._speech
        if not speech.clear_now(entry):
            cleared = await speech.clear(entry)
            if isinstance(cleared, PublishOutcome):
                return cleared
            owner = self._owners.get(ref.server_id, owner)
        content = [{"type": "text", "text": text}]
        outcome = await owner.publish(ref.channel_id, content, conversation_id)
        self._events.emit(Published(ref.server_id, ref.channel_id, text, outcome))
        return outcome
