"""Turning a typed name into exactly one channel, or refusing with what to do next.

:func:`resolve` is the general resolver every tool uses (an id, a qualified name, a raw id, a
``#label``, an ``@person``; the turn's own channels first; a server id narrows), built from the
tiers, the own rule and suggestions (channel-registry.md §4.5-§4.6). It never guesses between
several.

:func:`server_named` finds, for a name nothing answers to, the one known server it is a
qualified name of (so the host can say that server is gone or connecting), matched against the
server ids, never by splitting the name at a colon.

What it deliberately does not know: tool arguments and their empty-string conventions.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from switchboard.channels.descriptor import dm_query
from switchboard.channels.index import ChannelIndex
from switchboard.channels.names.errors import (
    AmbiguousName,
    InboundOnly,
    InvalidName,
    OwnChannelGone,
    UnknownName,
)
from switchboard.channels.names.picking import NO_OWN, Own, choices_for, own_choices, own_named
from switchboard.channels.names.shown import is_inbound_only, quoted_shown
from switchboard.channels.names.suggest import suggest
from switchboard.channels.names.tiers import Tier, entries_named, match_name
from switchboard.channels.names.wording import (
    LOOKUP,
    NAME_KINDS,
    SPEECH,
    Caller,
    elsewhere_text,
    inbound_only_text,
    no_dm_text,
    not_on_server_text,
    unknown_text,
)
from switchboard.channels.prose.grammar import is_prose_target_token
from switchboard.channels.records import ChannelEntry
from switchboard.channels.ref import ChannelRef

__all__ = [
    "bind_own",
    "not_on_server",
    "resolve",
    "resolve_prose_target",
    "server_named",
    "unknown_name",
]

Accept = Callable[[str], bool] | None


def bind_own(
    index: ChannelIndex, name: str, own: Own, caller: Caller = LOOKUP, accept: Accept = None
) -> ChannelEntry | None:
    """The own rule (§3.6): None when no own channel has the id ``name``, else its entry.

    Raises:
        AmbiguousName: Own channels on several servers have that id (``tier`` is OWN).
        OwnChannelGone: The one own channel with that id is no longer registered.
    """
    if not own:
        return None
    bound = own_named(own, name)
    if not bound:
        return None
    if len(bound) > 1:
        choices = own_choices(index, bound, own, accept)
        raise AmbiguousName(name, choices, tier=Tier.OWN, caller=caller)
    entry = index.get(bound[0])
    if entry is None:
        raise OwnChannelGone(name, bound[0], caller)
    return entry


def resolve(
    index: ChannelIndex,
    name: str,
    server_id: str | None = None,
    own: Own = NO_OWN,
    caller: Caller = LOOKUP,
    accept: Accept = None,
) -> ChannelEntry:
    """The one channel ``name`` picks; ``name`` is used as given.

    What it knows: how the pieces combine into the resolvers that accept every kind of name
    (channel-registry.md §4.5-§4.6):

    - :func:`resolve`, the general resolver (``ChannelRegistry.resolve``). Without a server id: the
      turn's own channels first (:mod:`~switchboard.channels.names.picking`: a name equal to the id
      of own channels is bound to them and reaches nothing else), then the tiers of
      :func:`~switchboard.channels.names.tiers.match_name` in order (id or qualified name, raw id,
      label, bare label, DM). With a server id: that server's channel with exactly that id, else
      that server's channels with that raw id; the own rule does not apply.
    - :func:`resolve_prose_target`, the resolver of a ``>>`` target: the same, on the trimmed token,
      naming candidates only by strings that are themselves valid target tokens, and, for speech,
      refusing a channel its server declared inbound-only.
    - :func:`bind_own` (the own rule alone, for tools outside the registry) and
      :func:`not_on_server` (the refusal of an id given with the wrong server, §3.5).

    Whatever the tier, one hit is the answer and several are refused with every candidate and the
    string that picks each alone (:class:`~switchboard.channels.names.errors.AmbiguousName`); no hit
    is refused with a few near names (:class:`~switchboard.channels.names.errors.UnknownName`).

    Raises:
        AmbiguousName: Several channels answer at the deciding tier (or own channels share it).
        OwnChannelGone: ``name`` is bound to an own channel that is no longer registered.
        UnknownName: Nothing answers to it.
    """
    if server_id is not None:
        return _on_server(index, name, server_id, caller)
    if own:
        entry = bind_own(index, name, own, caller, accept)
        if entry is not None:
            return entry
    match = match_name(index, name)
    if match is None:
        raise unknown_name(index, name, own, caller, accept)
    if len(match.hits) == 1 and not match.more:
        return match.hits[0]
    choices = choices_for(index, match.hits, match.tier, own, accept)
    raise AmbiguousName(name, choices, tier=match.tier, caller=caller, more=match.more)


def _on_server(index: ChannelIndex, name: str, server_id: str, caller: Caller) -> ChannelEntry:
    entry = index.get(ChannelRef(server_id, name))
    if entry is not None:
        return entry
    hits = tuple(e for e in index.by_raw_id(name) if e.ref[0] == server_id)
    if len(hits) == 1:
        return hits[0]
    if hits:
        choices = choices_for(index, hits, Tier.RAW_ID)
        raise AmbiguousName(name, choices, tier=Tier.RAW_ID, caller=caller, server_id=server_id)
    raise not_on_server(index, name, server_id, caller)


def not_on_server(
    index: ChannelIndex, name: str, server_id: str, caller: Caller = LOOKUP
) -> UnknownName:
    """The refusal of ``name`` given with ``server_id``, which has no such channel.

    It says where a channel with that id is (§3.5), and its suggestions are the strings that
    pick those channels alone.
    """
    elsewhere = [e for e in index.by_id(name) if e.ref[0] != server_id]
    choices = choices_for(index, elsewhere, Tier.NAME)
    named = entries_named(index, name)
    alone = named[0].ref if len(named) == 1 else None
    text = not_on_server_text(name, server_id, caller, elsewhere_text(name, choices, alone, caller))
    suggestions = [c.name for c in choices if c.name is not None]
    if alone is not None and not elsewhere:
        suggestions.append(name)
    return UnknownName(name, text, tuple(dict.fromkeys(suggestions)), server_id=server_id)


def unknown_name(
    index: ChannelIndex,
    name: str,
    own: Own = NO_OWN,
    caller: Caller = LOOKUP,
    accept: Accept = None,
    kinds: str = NAME_KINDS,
) -> UnknownName:
    """The refusal of ``name``, which nothing answers to as ``kinds``, with near names."""
    suggestions = suggest(index, name, own=own, accept=accept)
    is_mention, key = dm_query(name)
    after = no_dm_text(name, key if is_mention else None) if is_mention or name[:1] == "@" else ""
    return UnknownName(
        name, unknown_text(name, caller, suggestions, kinds=kinds, after=after), suggestions
    )


def resolve_prose_target(
    index: ChannelIndex,
    spec: str,
    *,
    for_speech: bool = False,
    own: Own = NO_OWN,
    caller: Caller = SPEECH,
) -> ChannelEntry:
    """The channel a ``>>`` target picks (§4.5); ``spec`` is trimmed first.

    Args:
        index: Where to look.
        spec: The target as written after ``>>``.
        for_speech: Refuse a channel declared inbound-only (words would go into it). Without
            it (reading history, say) any registered channel resolves.
        own: The turn's own channels.
        caller: Whose words these are, for the refusal texts.

    Raises:
        InvalidName: The target is empty.
        InboundOnly: ``for_speech`` and the channel takes no speech (its ``ref`` is set).
        AmbiguousName, OwnChannelGone, UnknownName: as :func:`resolve`.
    """
    target = spec.strip()
    if not target:
        raise InvalidName(spec, unknown_text("", caller))
    entry = resolve(index, target, own=own, caller=caller, accept=is_prose_target_token)
    if for_speech and is_inbound_only(entry):
        shown = quoted_shown(index, entry.ref, own)
        raise InboundOnly(spec, entry.ref, inbound_only_text(shown, entry.ref, caller))
    return entry


def server_named(name: str, server_ids: Iterable[str]) -> str | None:
    """The one server of ``server_ids`` that ``name`` is a qualified name of: its id, a colon
    and a non-empty rest, whether or not that server registered such a channel (its channels
    leave the registry when it is not connected).

    Matched against the ids, never by splitting ``name`` at a colon (ids and channel ids may
    hold colons). None when no id qualifies it, and when several do (``a`` and ``a:b`` both
    begin ``a:b:c``): which server is meant is not guessed. O(number of ids).
    """
    found: str | None = None
    for server_id in server_ids:
        cut = len(server_id)
        if len(name) > cut + 1 and name[cut] == ":" and name.startswith(server_id):
            if found is not None:
                return None
            found = server_id
    return found
