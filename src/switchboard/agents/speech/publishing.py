"""An agent's explicit publish: which channel a ``channel_publish`` call means, then the send.

A named channel is resolved by the general resolver with the calling turn's own channels
first; a server id narrows it; no channel at all means the locus, else the default channel
(channel-registry.md §3.6, §8.5). Every refusal says what to call instead.

What it deliberately does not know: MCP, result shapes, the words of the next steps, and how
a publish is carried out (:mod:`.publish`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from switchboard.agents.desk.defaults import DefaultChannel
from switchboard.agents.desk.desk import AgentDesk
from switchboard.channels import (
    Caller,
    ChannelEntry,
    ChannelNameError,
    ChannelRef,
    ChannelRegistry,
    OwnChannelGone,
    UnknownName,
)
from switchboard.channels.names.wording import on_server, q
from switchboard.refusals.outcome import PublishOutcome
from switchboard.refusals.refusal import GONE, Refusal, RefusalKind, name_refusal

__all__ = [
    "POSTING",
    "TOOL",
    "AgentPublish",
    "PublishNamed",
    "PublishTo",
    "UnknownNameRefusal",
    "choose_destination",
    "publish_for_agent",
    "unknown_name_refusal",
]

TOOL = "channel_publish"
"""The tool an agent's publish is a call of (its refusals' next steps name it)."""

POSTING = Caller("nothing was posted", "channel", "server_id")
"""The wording of ``channel_publish`` refusals (its arguments are ``channel``, ``server_id``)."""


class PublishTo(Protocol):
    """The host's publish into a chosen channel (checks the server, grant and direction)."""

    async def __call__(
        self, entry: ChannelEntry, text: str, *, conversation_id: str = ""
    ) -> PublishOutcome: ...


class PublishNamed(Protocol):
    """The host's publish into the channel a name picks on one server."""

    async def __call__(
        self, target: str, text: str, *, server_id: str | None = None, conversation_id: str = ""
    ) -> PublishOutcome: ...


UnknownNameRefusal = Callable[[str], Refusal | None]
"""The host's word on a name no registered channel answers to (a channel of a server that is
not serving now: :meth:`Publisher.refusal_for_unknown_name
<switchboard.agents.speech.publish.Publisher.refusal_for_unknown_name>`), or None to refuse it
as unknown."""


def unknown_name_refusal(
    exc: ChannelNameError, name: str, unknown: UnknownNameRefusal | None
) -> Refusal | None:
    """What the host says of ``name`` when the registry found nothing that answers to it (not
    the turn's own channel, which stays bound to its id), or None."""
    if unknown is None or not isinstance(exc, UnknownName) or isinstance(exc, OwnChannelGone):
        return None
    return unknown(name)


@dataclass(frozen=True, slots=True)
class AgentPublish:
    """What became of an agent's publish.

    Attributes:
        outcome: Delivered, failed (its ``refusal`` says why nothing was sent) or unknown.
        defaulted: No channel was named: the locus or default channel was used.
    """

    outcome: PublishOutcome
    defaulted: bool


def choose_destination(
    registry: ChannelRegistry,
    desk: AgentDesk,
    default: DefaultChannel,
    channel: str | None,
    server_id: str | None = None,
    *,
    unknown: UnknownNameRefusal | None = None,
) -> ChannelEntry | Refusal:
    """The channel a publish means (see :class:`publish_for_agent`), or the refusal; sends nothing.

    With both ``channel`` and ``server_id`` this looks only on that server (the async caller
    lets the host word a gone or connecting server instead). ``unknown`` words a name
    nothing answers to, when the host knows why.
    """
    own = desk.own
    if channel is not None:
        try:
            return registry.names.resolve(channel, server_id=server_id, own=own, caller=POSTING)
        except ChannelNameError as exc:
            said = unknown_name_refusal(exc, channel, unknown) if server_id is None else None
            return said or name_refusal(exc, TOOL)
    locus = desk.locus(registry, default)
    if locus.ref is None:
        return Refusal(
            RefusalKind.NO_CHANNEL,
            f"No channel was named and there is none to default to ({locus.reason}), so "
            "nothing was posted.",
        )
    ref = locus.ref if server_id is None else ChannelRef(server_id, locus.ref.channel_id)
    entry = registry.get(ref)
    if entry is not None:
        return entry
    if server_id is not None:
        text = (
            f"Server {q(server_id)} has no channel {q(ref.channel_id)}, the id of the channel "
            "this call would default to, so nothing was posted."
        )
    else:
        shown = registry.names.quoted_shown(ref, own)
        if shown != on_server(ref):
            shown += f" on server {q(ref.server_id)}"
        text = (
            f"The channel this call would default to, {shown}, "
            "is not registered now, so nothing was posted; it is not sent to any other "
            "channel in its place."
        )
    return Refusal(
        RefusalKind.UNKNOWN_CHANNEL,
        text,
        GONE,
        server_id=ref.server_id,
        channel_id=ref.channel_id,
        gone=True,
    )


async def publish_for_agent(
    registry: ChannelRegistry,
    default: DefaultChannel,
    desk: AgentDesk,
    text: str,
    *,
    publish_to: PublishTo,
    publish_named: PublishNamed,
    channel: str | None = None,
    server_id: str | None = None,
    unknown: UnknownNameRefusal | None = None,
) -> AgentPublish:
    """Publish ``text`` for the agent ``desk`` serves.

    What it knows (channel-registry.md §3.6, §3.8, §7.6, §8.5):

    - **Named channel, no server id.** The general resolver (an id, a qualified
      ``serverId:channelId``, a raw id, a ``#label`` or an ``@person``) with the calling turn's own
      channels (:attr:`AgentDesk.own`): a name equal to the id of an own channel is bound to it,
      even after its server withdrew it (then refused, never sent to another server's channel with
      that id). Several candidates are refused with each one and the string that picks it. A name
      nothing answers to is first offered to ``unknown`` (:data:`UnknownNameRefusal`), which says
      ``server-gone`` or ``server-connecting`` when it is a channel of a configured server that is
      not serving now.
    - **Named channel and a server id** (Switchboard's extension): the host's own publish, which
      looks only on that server and says when the server is gone or still connecting. The own rule
      does not apply when a server is named.
    - **No channel.** The locus (:meth:`AgentDesk.locus`): inside a turn its frozen locus, and a
      turn with deliberately no channel is refused (no fallback); outside any turn the home channel,
      else the default channel. With a server id, that server's channel with the default's id. A
      default whose channel is not registered now is refused naming it, shown so that the name
      cannot lead to another channel.
    - Provenance: who publishes and which channels are the turn's own come from the desk the tool
      server was built for, never from the tool's input.

    Whatever is chosen then goes through the host's publish (:class:`PublishTo`, the host's
    :meth:`Switchboard.publish_to <switchboard.app.board.Switchboard.publish_to>`), which checks the
    server, the grant and the direction and reports delivered, failed or unknown (§8.1); a named
    channel with a server id goes through :class:`PublishNamed` (``Switchboard.publish``). A refused
    choice is a :class:`~switchboard.refusals.refusal.Refusal` (a name error through
    :func:`~switchboard.refusals.refusal.name_refusal`), carried in a failed outcome.
    """
    defaulted = channel is None
    if not text.strip():
        empty = Refusal(RefusalKind.EMPTY_CONTENT, "There is nothing to send: the text is empty.")
        return AgentPublish(PublishOutcome.refused(empty), defaulted)
    if channel is not None and server_id is not None:
        outcome = await publish_named(
            channel, text, server_id=server_id, conversation_id=desk.conversation_id
        )
        return AgentPublish(outcome, defaulted)
    chosen = choose_destination(registry, desk, default, channel, server_id, unknown=unknown)
    if isinstance(chosen, Refusal):
        return AgentPublish(PublishOutcome.refused(chosen), defaulted)
    outcome = await publish_to(chosen, text, conversation_id=desk.conversation_id)
    return AgentPublish(outcome, defaulted)
