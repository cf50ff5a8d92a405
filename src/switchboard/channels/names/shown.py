"""The names Switchboard shows an agent for a channel, each of which resolves back to it.

:func:`name_shown` is the id or qualified name that picks a registered channel alone (else a
description that names its server), and the ``>>`` target for speech is the first of the DM
name, the label, the name and the qualified name that round-trips (channel-registry.md §3.3,
§4.7).

What it deliberately does not know: which channels an agent sees or when names are shown.
"""

from __future__ import annotations

from switchboard.channels.descriptor import bare_label_key, dm_keys
from switchboard.channels.index import ChannelIndex
from switchboard.channels.names.picking import NO_OWN, Own, name_for, own_named
from switchboard.channels.names.tiers import match_name
from switchboard.channels.names.wording import on_server, q
from switchboard.channels.prose.grammar import is_prose_target_token
from switchboard.channels.records import ChannelEntry
from switchboard.channels.ref import ChannelRef, qualified_name

__all__ = ["is_inbound_only", "name_shown", "picked", "prose_target_for", "quoted_shown"]


def is_inbound_only(entry: ChannelEntry) -> bool:
    """Whether the channel's server declared it inbound-only (no speech goes there)."""
    return entry.descriptor.direction == "inbound"


def picked(index: ChannelIndex, name: str, own: Own = NO_OWN) -> ChannelEntry | None:
    """The channel :func:`resolve` (without a server id) returns for ``name``, or None where
    it would refuse; builds no refusal, so it is cheap enough to check a name before showing
    it."""
    if own:
        bound = own_named(own, name)
        if bound:
            return index.get(bound[0]) if len(bound) == 1 else None
    match = match_name(index, name)
    if match is None or match.more or len(match.hits) != 1:
        return None
    return match.hits[0]


def name_shown(index: ChannelIndex, ref: ChannelRef, own: Own = NO_OWN) -> str:
    """The name to show for ``ref``; never raises.

    What it knows (channel-registry.md §3.3, §4.7):

    - :func:`name_shown`: for a registered channel, the channel id or qualified name that picks it
      alone (respecting the turn's own channels when given), else ``"b:room" on server "a"``, a
      display form no input accepts (then only the id together with the server id reaches it). For a
      channel that is *not* registered (a remembered default, a withdrawn own channel), the id or
      qualified name only when that string reaches no registered channel at all in any tier, so
      showing a gone channel's name can never lead speech to another channel.
    - :func:`quoted_shown`: the same, quoted for a text (the display form is already quoted).
    - :func:`is_inbound_only`: whether a channel takes no speech (its server says so).
    - :func:`prose_target_for`: the ``>>`` token to show for a channel: the first of ``@name`` (a
      DM's recipient, as written), ``#label``, ``#label`` without its server suffix, the picking
      name, and the qualified name, that is a valid target token and that
      :func:`~switchboard.channels.names.resolve.resolve_prose_target` resolves, for speech and with
      the same own channels, to this very channel. None when nothing round-trips (an inbound-only
      channel, for one, takes no speech).

    The round trip is checked with the resolver's own decision (:func:`picked`: what
    :func:`~switchboard.channels.names.resolve.resolve` returns, without building a refusal), so the
    guarantee "every name shown resolves back to its channel" does not rest on reasoning about
    tiers. Each check is a few O(1) probes.
    """
    if index.get(ref) is not None:
        name = name_for(index, ref, own)
        return on_server(ref) if name is None else name
    for name in (ref.channel_id, qualified_name(ref)):
        bound = own_named(own, name) if own else ()
        if bound == (ref,) or (not bound and match_name(index, name) is None):
            return name
    return on_server(ref)


def quoted_shown(index: ChannelIndex, ref: ChannelRef, own: Own = NO_OWN) -> str:
    """:func:`name_shown`, quoted as a string unless it is the display form."""
    shown = name_shown(index, ref, own)
    return shown if shown == on_server(ref) else q(shown)


def _dm_token(entry: ChannelEntry) -> str | None:
    descriptor = entry.descriptor
    metadata = descriptor.metadata
    if not metadata or dm_keys(descriptor.label, metadata) is None:
        return None
    name = metadata.get("recipientName")
    if type(name) is not str or not name:
        label = descriptor.label
        if not label:
            return None
        name = label[4:] if label[:4].casefold() == "dm: " else label
    return "@" + name.removeprefix("@")


def _candidates(index: ChannelIndex, entry: ChannelEntry, own: Own) -> list[str | None]:
    label = entry.descriptor.label
    whole = label[1:] if label and label[0] == "#" else label
    return [
        _dm_token(entry),
        "#" + whole if whole else None,
        "#" + bare if whole and (bare := bare_label_key(whole)) else None,
        name_for(index, entry.ref, own),
        qualified_name(entry.ref),
    ]


def prose_target_for(index: ChannelIndex, ref: ChannelRef, own: Own = NO_OWN) -> str | None:
    """The ``>>`` token to show for ``ref``, or None (see :class:`name_shown`)."""
    entry = index.get(ref)
    if entry is None or is_inbound_only(entry):
        return None
    tried: set[str] = set()
    for token in _candidates(index, entry, own):
        if token is None or token in tried or token == "#" or not is_prose_target_token(token):
            continue
        tried.add(token)
        if picked(index, token, own) is entry:
            return token
    return None
