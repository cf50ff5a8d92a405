"""Turning a typed name into exactly one channel, and a channel into the name that picks it.

What this module knows: the order in which kinds of names are tried, and the rule that a name
answering to several channels is refused, never resolved by a guess. Without a server id the
tiers are, in order:

1. **id or qualified name**: entries whose id equals the name, together with entries whose
   ``"<server>:<id>"`` equals it (channel-registry.md §3.1). They are one tier on purpose: if
   server ``s`` registers ``room`` and ``s:room``, the name ``s:room`` is the id of one and the
   qualified name of the other, and picking either would be a guess.
2. **raw address id** (``address["channelId"]``);
3. **label**: case-insensitive, one leading ``#`` ignored; if no label matches whole, the
   label without its trailing ``" (Server Name)"`` parenthetical;
4. **DM name**: ``@name``/``name`` by recipient name, ``<@id>``/``<@!id>`` by recipient id.

The first tier with any hit decides: one hit is the answer, several raise
:class:`~switchboard.channels.errors.AmbiguousName`. No hit anywhere raises
:class:`~switchboard.channels.errors.UnknownName` with a few suggestions, found from O(1)
probes of spelling variants plus :mod:`difflib` over a bounded sample of keys, never a scan of
all channels. With a server id: that server's channel with exactly that id, else that server's
channels with that raw id.

:func:`name_alone` is the inverse: the channel id if tier 1 of the id is exactly this channel,
else the qualified name if tier 1 of that is exactly this channel, else None (only the id
together with the server id reaches it; see channel-registry.md T07).

What it deliberately does not know: the ``>>`` prose grammar, the turn's own channels, fuzzy DM
matching and label history. Those are layered on top of these tiers later.
"""

from __future__ import annotations

import difflib
from itertools import islice

from switchboard.channels.descriptor import label_key
from switchboard.channels.errors import AmbiguousName, UnknownName
from switchboard.channels.index import ChannelIndex
from switchboard.channels.records import ChannelEntry
from switchboard.channels.ref import ChannelRef, qualified_name

__all__ = ["SUGGESTION_SAMPLE", "name_alone", "named", "resolve", "suggest"]

SUGGESTION_SAMPLE = 200
"""At most this many keys of each kind are compared by difflib for one unknown name."""

_MAX_SUGGESTIONS = 5


def named(index: ChannelIndex, name: str) -> tuple[ChannelEntry, ...]:
    """Tier 1: entries whose id, or whose qualified name, is exactly ``name``.

    The two sets never overlap: an entry's qualified name is longer than its id.
    """
    ids = index.by_id(name)
    qualified = index.by_qualified_name(name)
    if not qualified:
        return ids
    return ids + qualified if ids else qualified


def name_alone(index: ChannelIndex, entry: ChannelEntry) -> str | None:
    """The shortest name whose tier 1 is exactly ``entry``, or None when there is none."""
    ref = entry.ref
    channel_id = ref[1]
    if len(index.by_id(channel_id)) == 1 and not index.by_qualified_name(channel_id):
        return channel_id
    qualified = qualified_name(ref)
    if not index.by_id(qualified) and len(index.by_qualified_name(qualified)) == 1:
        return qualified
    return None


def resolve(index: ChannelIndex, name: str, server_id: str | None = None) -> ChannelEntry:
    """Return the one channel ``name`` picks; see the module docstring for the order.

    Raises:
        AmbiguousName: The first tier with hits has several.
        UnknownName: No tier has a hit.
    """
    if server_id is not None:
        entry = index.get(ChannelRef(server_id, name))
        if entry is not None:
            return entry
        hits = tuple(e for e in index.by_raw_id(name) if e.ref[0] == server_id)
    elif not name:
        hits = ()
    else:
        hits = (
            named(index, name)
            or index.by_raw_id(name)
            or index.by_label(name)
            or index.by_dm_name(name)
        )
    if len(hits) == 1:
        return hits[0]
    if hits:
        raise AmbiguousName(
            name,
            tuple(e.ref for e in hits),
            names=[name_alone(index, e) for e in hits],
            server_id=server_id,
        )
    raise UnknownName(name, suggest(index, name, server_id), server_id=server_id)


def _variants(name: str) -> dict[str, None]:
    stripped = name.strip()
    bare = stripped.lstrip("#@")
    found = dict.fromkeys((stripped, stripped.casefold(), stripped.lower(), bare, bare.lower()))
    found.pop(name, None)
    found.pop("", None)
    return found


def suggest(index: ChannelIndex, name: str, server_id: str | None = None) -> tuple[str, ...]:
    """A few names near ``name`` that each pick one channel alone (bounded work).

    Args:
        index: Where to look.
        name: The name that matched nothing.
        server_id: When given, the same name on other servers is suggested first, and that
            server's own ids are sampled.
    """
    found: dict[ChannelRef, ChannelEntry] = {}

    def take(entries: tuple[ChannelEntry, ...]) -> None:
        for e in entries[:_MAX_SUGGESTIONS]:
            found.setdefault(e.ref, e)

    if server_id is not None and name:
        take(named(index, name))
    for variant in _variants(name):
        take(named(index, variant))
        take(index.by_raw_id(variant))
        take(index.by_label(variant))
        take(index.by_dm_name(variant))
    if len(found) < _MAX_SUGGESTIONS and name.strip():
        if server_id is not None:
            ids = list(islice(index.server_channels(server_id), SUGGESTION_SAMPLE))
        else:
            ids = list(islice(index.id_keys(), SUGGESTION_SAMPLE))
        for match in difflib.get_close_matches(name, ids, n=_MAX_SUGGESTIONS, cutoff=0.6):
            take(index.by_id(match))
        labels = list(islice(index.label_keys(), SUGGESTION_SAMPLE))
        key = label_key(name.strip())
        for match in difflib.get_close_matches(key, labels, n=_MAX_SUGGESTIONS, cutoff=0.6):
            take(index.by_label_key(match))
    names: list[str] = []
    for entry in found.values():
        alone = name_alone(index, entry)
        if alone is None or alone in names or (alone == name and server_id is None):
            continue
        names.append(alone)
        if len(names) == _MAX_SUGGESTIONS:
            break
    return tuple(names)
