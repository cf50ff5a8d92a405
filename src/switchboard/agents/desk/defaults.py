"""The default publish channel, and which incoming messages are markers.

A *marker* (a reaction, its removal, an edit, a deletion) tells of something that happened to
an earlier message rather than saying something new (MCPL's ``chat:`` event tags, or a known
``metadata.eventType`` of older connectors). The default channel is process-global: the channel
of the latest accepted incoming message that is not a marker (channel-registry.md §8.7). Why it
keeps a gone server's ref: a publish that defaults to it is refused naming that channel, never
sent to another server's channel with the same id.

What it deliberately does not know: turns, agents and the locus (:mod:`.desk`), and how a
publish is carried out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar

from switchboard.channels import ChannelRef, ChannelRegistry
from switchboard.events import ConnectorExited, HostEvent, MessagesAccepted
from switchboard.protocol.fastpath import CheckedMessage

__all__ = ["MARKER_EVENT_TYPES", "MARKER_TAGS", "DefaultChannel", "is_marker"]

MARKER_TAGS = frozenset({"chat:reaction", "chat:reaction-remove", "chat:edited", "chat:deleted"})
"""The ``chat:`` lifecycle tags that make a message a marker."""

MARKER_EVENT_TYPES = frozenset(
    {
        "reaction",
        "reaction-add",
        "reaction-added",
        "reaction-remove",
        "reaction-removed",
        "edit",
        "edited",
        "message-edit",
        "message-edited",
        "message-update",
        "delete",
        "deleted",
        "message-delete",
        "message-deleted",
    }
)
"""``metadata.eventType`` values (lower case, ``-`` for ``_``) that make a message a marker."""


def is_marker(tags: Iterable[object] | None, metadata: Mapping[str, Any] | None) -> bool:
    """Whether a message with these ``tags`` and ``metadata`` is a marker (see module doc)."""
    if tags and not MARKER_TAGS.isdisjoint(t for t in tags if isinstance(t, str)):
        return True
    if metadata:
        kind = metadata.get("eventType")
        if isinstance(kind, str) and kind.lower().replace("_", "-") in MARKER_EVENT_TYPES:
            return True
    return False


def _wire_is_marker(message: Mapping[str, Any]) -> bool:
    tags = message.get("tags")
    metadata = message.get("metadata")
    return is_marker(
        tags if isinstance(tags, list) else None,
        metadata if isinstance(metadata, Mapping) else None,
    )


class DefaultChannel:
    """The host's default publish channel; the board subscribes :meth:`observe` to its events.

    What it knows (channel-registry.md §8.7, §9.2 step 5, §11.3, MCPL §16 / RFC-001):

    - **Markers.** A reaction, a reaction removal, an edit or a deletion is a *marker*: it tells of
      something that happened to an earlier message rather than saying something new. The MCPL way
      to say so is an event tag of the reserved ``chat:`` lifecycle facet: ``chat:reaction``,
      ``chat:reaction-remove``, ``chat:edited``, ``chat:deleted`` (:data:`MARKER_TAGS`). Connectors
      written before tags carry the kind in ``metadata.eventType`` instead, so a small vocabulary of
      those names counts too (:data:`MARKER_EVENT_TYPES`, compared case-insensitively with ``_``
      read as ``-``). A message with neither is not a marker. Switchboard has no coalescer, so the
      reference's exception for an edit delivered as an agent's first view does not arise.
    - **The default channel** (:class:`DefaultChannel`): process-global, the channel of the latest
      accepted ``channels/incoming`` message that is not a marker. It follows the host's
      :class:`~switchboard.events.MessagesAccepted` events (already committed and accepted); push
      events, outbound publishes and tools never move it. A message whose channel is no longer
      registered when the event is seen (its server was removed meanwhile) sets nothing. When the
      server goes away (:class:`~switchboard.events.ConnectorExited`) the *ref* is kept on purpose,
      with only the message and thread ids forgotten: a publish that defaults to it is then refused
      naming the gone channel, and is never sent to another server's channel that happens to have
      the same id.

    Attributes:
        ref: The channel of the latest accepted non-marker message, or None before any. It
            survives its server's removal (see :class:`DefaultChannel`).
        message_id: That message's id; None once its server is gone.
        thread_id: That message's thread id, if it had one; None once its server is gone.
    """

    __slots__ = ("_registry", "message_id", "ref", "thread_id")

    def __init__(self, registry: ChannelRegistry) -> None:
        self._registry = registry
        self.ref: ChannelRef | None = None
        self.message_id: str | None = None
        self.thread_id: str | None = None

    #: The events :meth:`observe` takes (it subscribes to only these).
    OBSERVES: ClassVar[tuple[type, ...]] = (MessagesAccepted, ConnectorExited)

    def observe(self, event: HostEvent) -> None:
        """A host event listener: accepted messages may move the default, an exit thins it."""
        match event:
            case MessagesAccepted(server_id=server_id, checked=checked) if checked:
                self._accepted_checked(server_id, checked)
            case MessagesAccepted(server_id=server_id, messages=messages):
                self._accepted(server_id, messages)
            case ConnectorExited(server_id=server_id):
                if self.ref is not None and self.ref.server_id == server_id:
                    self.message_id = None
                    self.thread_id = None

    def _accepted_checked(self, server_id: str, checked: Sequence[CheckedMessage]) -> None:
        """:meth:`_accepted` over the messages as the transport checked them: their members
        are read there, and only a metadata object is decoded."""
        for message in reversed(checked):
            if is_marker(message.tags, message.metadata_object()):
                continue
            ref = ChannelRef(server_id, message.channelId)
            if self._registry.get(ref) is None:
                return  # admitted, but its server (or the channel) is gone by now
            self.ref = ref
            self.message_id = message.messageId
            self.thread_id = message.threadId
            return

    def _accepted(self, server_id: str, messages: Sequence[Mapping[str, Any]]) -> None:
        for message in reversed(messages):
            if _wire_is_marker(message):
                continue
            channel_id = message.get("channelId")
            if not isinstance(channel_id, str) or not channel_id:
                continue
            ref = ChannelRef(server_id, channel_id)
            if self._registry.get(ref) is None:
                return  # admitted, but its server (or the channel) is gone by now
            self.ref = ref
            mid = message.get("messageId")
            tid = message.get("threadId")
            self.message_id = mid if isinstance(mid, str) else None
            self.thread_id = tid if isinstance(tid, str) else None
            return
