"""Channel tool arguments: a channel id, perhaps a server id, and what they select.

The narrower vocabulary of calls that take a ``channelId``/``serverId`` pair rather than free
text: only a channel id or a server-qualified name (channel-registry.md §3.4, §3.7-§3.9).

What it deliberately does not know: the tools themselves, desired state, and whether a
selected channel may be used.
"""

from __future__ import annotations

from switchboard.channels.index import ChannelIndex
from switchboard.channels.names.errors import AmbiguousName, InvalidName
from switchboard.channels.names.picking import NO_OWN, Own, choices_for
from switchboard.channels.names.resolve import bind_own, not_on_server, unknown_name
from switchboard.channels.names.tiers import Tier, entries_named
from switchboard.channels.names.wording import POST, RUN, Caller, empty_server_text, unknown_text
from switchboard.channels.records import ChannelEntry
from switchboard.channels.ref import ChannelRef

__all__ = [
    "TOOL_KINDS",
    "resolve_destination",
    "resolve_send_target",
    "resolve_tool_channel",
    "send_targets",
    "shared_name_refusal",
]

TOOL_KINDS = "a channel id or server-qualified name"
"""What a channel tool's ``channelId`` accepts, as refusals say it."""


def _select(
    index: ChannelIndex, channel_id: str, server_id: str | None, own: Own, caller: Caller
) -> ChannelEntry:
    if server_id is not None:
        entry = index.get(ChannelRef(server_id, channel_id))
        if entry is None:
            raise not_on_server(index, channel_id, server_id, caller)
        return entry
    entry = bind_own(index, channel_id, own, caller)
    if entry is not None:
        return entry
    hits = entries_named(index, channel_id)
    if not hits:
        raise unknown_name(index, channel_id, own, caller, kinds=TOOL_KINDS)
    if len(hits) > 1:
        choices = choices_for(index, hits, Tier.NAME, own)
        raise AmbiguousName(channel_id, choices, tier=Tier.NAME, caller=caller)
    return hits[0]


def resolve_tool_channel(
    index: ChannelIndex,
    channel_id: str,
    server_id: str | None = None,
    own: Own = NO_OWN,
    caller: Caller = RUN,
) -> ChannelEntry:
    """The channel a lifecycle tool's arguments select (§3.7); ``""`` as server id is none.

    What it knows (channel-registry.md §3.4, §3.7-§3.9): the narrower vocabulary of calls that take
    a ``channelId``/``serverId`` pair rather than free text. Such a call accepts only a channel id
    or a server-qualified name (tier 1); labels, raw ids and DM names are for ``>>`` targets and the
    general resolver.

    - :func:`resolve_tool_channel` (the reference's channel_open, channel_close, channel_decline):
      without a server id (an empty one counts as none), the own rule, then tier 1; with one,
      exactly that pair, and a refusal that says where a channel with that id is. Switchboard's own
      MCP tools take every name instead, through the general resolver
      (:func:`~switchboard.channels.names.resolve.resolve`), so that every tool accepts the names
      ``channel_publish`` does; this narrower vocabulary stays for callers that follow §3.7 to the
      letter.
    - :func:`resolve_destination` (publishes): the same, except that an empty channel id or an
      *empty* server id is refused rather than read as "omitted".
    - :func:`send_targets` (explicit send tools, which pass whatever the agent typed): channels with
      exactly that id (on the given server, if a non-empty one is given), and when there are none,
      channels whose raw platform id it is. No qualified names and no own rule here.
    - :func:`shared_name_refusal`: the refusal a tool outside the registry raises for a name that
      several channels answer to, or None.

    Each refusal carries a :class:`~switchboard.channels.names.wording.Caller`, so it says what did
    not happen ("nothing ran", "nothing was posted") and which call to make next.

    The tool then works on the entry's own id: a qualified name given as input is replaced
    by the id (``entry.ref.channel_id``).

    Raises:
        AmbiguousName: Several channels (or own channels) answer to ``channel_id``.
        OwnChannelGone: ``channel_id`` is bound to an own channel that is no longer registered.
        UnknownName: Nothing answers, or ``server_id`` has no such channel.
    """
    return _select(index, channel_id, server_id or None, own, caller)


def resolve_destination(
    index: ChannelIndex,
    channel_id: str,
    server_id: str | None = None,
    own: Own = NO_OWN,
    caller: Caller = POST,
) -> ChannelEntry:
    """The channel a publish destination selects (§3.8).

    Unlike :func:`resolve_tool_channel`, an empty ``server_id`` is not read as omitted: a
    destination that names a server must name one.

    Raises:
        InvalidName: ``channel_id`` or a given ``server_id`` is empty.
        AmbiguousName, OwnChannelGone, UnknownName: as :func:`resolve_tool_channel`.
    """
    if not channel_id:
        raise InvalidName(channel_id, unknown_text("", caller, kinds=TOOL_KINDS))
    if server_id == "":
        raise InvalidName(channel_id, empty_server_text(caller))
    return _select(index, channel_id, server_id, own, caller)


def send_targets(
    index: ChannelIndex, raw: str, server_id: str | None = None
) -> tuple[ChannelEntry, ...]:
    """The channels an explicit send tool's ``raw`` names (§3.9), in lookup order.

    Channels whose id is ``raw`` (only on ``server_id`` when a non-empty one is given); when
    there are none, channels whose raw platform id is ``raw``, filtered the same way.
    """
    if server_id:
        entry = index.get(ChannelRef(server_id, raw))
        if entry is not None:
            return (entry,)
        return tuple(e for e in index.by_raw_id(raw) if e.ref[0] == server_id)
    return index.by_id(raw) or index.by_raw_id(raw)


def resolve_send_target(
    index: ChannelIndex, raw: str, server_id: str | None = None
) -> ChannelRef | None:
    """The one channel :func:`send_targets` finds, or None when it finds none or several."""
    found = send_targets(index, raw, server_id)
    return found[0].ref if len(found) == 1 else None


def shared_name_refusal(
    index: ChannelIndex, name: str, caller: Caller = RUN, own: Own = NO_OWN
) -> AmbiguousName | None:
    """The refusal for ``name`` when several channels answer to it (tier 1), else None.

    For tools outside the registry that take a channel id and no server id; the refusal's
    text therefore offers no server id (``caller.server_arg`` is ignored).
    """
    hits = entries_named(index, name)
    if len(hits) < 2:
        return None
    choices = choices_for(index, hits, Tier.NAME, own)
    no_server = Caller(caller.undone, caller.channel_arg, None)
    return AmbiguousName(name, choices, tier=Tier.NAME, caller=no_server)
