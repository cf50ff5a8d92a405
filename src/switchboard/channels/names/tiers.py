"""What a typed name matches: the kinds of names, tried in a fixed order, first hit decides.

A name is tried as a channel id or a server-qualified name (matched against registered pairs,
never split at a colon), then a raw platform id, then a ``#label``, then an ``@person``
(channel-registry.md §3.1, §4.6); each tier is O(1) probes of the indexes.

What it deliberately does not know: the turn's own channels, server ids given beside a name,
and refusals.
"""

from __future__ import annotations

from enum import StrEnum
from typing import NamedTuple

from switchboard.channels.descriptor import dm_query
from switchboard.channels.index import ChannelIndex
from switchboard.channels.records import ChannelEntry
from switchboard.channels.ref import qualified_name

__all__ = [
    "PARTIAL_LIMIT",
    "Match",
    "Tier",
    "entries_named",
    "match_name",
    "name_alone",
]

PARTIAL_LIMIT = 6
"""At most this many DM names are listed for a partial ``@name`` that fits several."""


class Tier(StrEnum):
    """The kind of name that matched.

    What it knows (channel-registry.md §3.1 and §4.6): a name is tried as

    1. :attr:`Tier.NAME`: a channel id, or a server-qualified name ``"<server>:<id>"`` matched
       against the *registered pairs* (never split at a colon). Ids and qualified names are one tier
       on purpose: when server ``s`` registers ``room`` and ``s:room``, the name ``s:room`` is the
       id of one and the qualified name of the other, and picking either would be a guess;
    2. :attr:`Tier.RAW_ID`: the platform's own id, ``address["channelId"]``;
    3. :attr:`Tier.LABEL`: a label, case-insensitively, one leading ``#`` ignored (``#General``,
       ``general`` and ``GENERAL`` all match the label ``#general``);
    4. :attr:`Tier.BARE_LABEL`: a label without its trailing ``" (Server Name)"`` parenthetical
       (``#fable`` matches ``#fable (antra's server)``);
    5. DMs, only for a name that starts with ``@`` or is a ``<@id>``/``<@!id>`` mention:
       :attr:`Tier.DM_MENTION` by recipient id; :attr:`Tier.DM_NAME` by recipient name,
       case-insensitively; and when no DM name is exactly that, :attr:`Tier.DM_PARTIAL`: DM names
       that contain it or that it starts with (see :mod:`~switchboard.channels.dm_index`).

    The first tier with any hit decides; :func:`match_name` reports that tier and its hits, and the
    callers refuse when there are several (resolution never picks one of several candidates). Every
    tier is one or a few hash probes (plus a bisection for partial DM names), so matching a name
    costs the same at a thousand channels as at a hundred thousand.

    :func:`entries_named` (tier 1 alone) is the whole vocabulary of channel tools and publish
    destinations (§3.7, §3.8); :func:`name_alone` is its inverse, the name that picks one entry.
    """

    NAME = "name"
    RAW_ID = "raw-id"
    LABEL = "label"
    BARE_LABEL = "bare-label"
    DM_MENTION = "dm-mention"
    DM_NAME = "dm-name"
    DM_PARTIAL = "dm-partial"
    OWN = "own"
    """Not a tier of :func:`match_name`: the turn's own channels sharing an id."""


class Match(NamedTuple):
    """The deciding tier of a name and the channels it matched there (never empty).

    A named tuple rather than a dataclass: one is built per resolution, on the hot path.

    Attributes:
        tier: The first tier with a hit.
        hits: Every channel that tier matched, in lookup order.
        more: Whether a partial DM match fits even more channels than ``hits`` lists.
    """

    tier: Tier
    hits: tuple[ChannelEntry, ...]
    more: bool = False


def entries_named(index: ChannelIndex, name: str) -> tuple[ChannelEntry, ...]:
    """Tier 1: entries whose id, or whose qualified name, is exactly ``name``.

    The two sets never overlap (an entry's qualified name is longer than its id). The name is
    used as given: trimming is the caller's job.
    """
    ids = index.by_id(name)
    qualified = index.by_qualified_name(name)
    if not qualified:
        return ids
    return ids + qualified if ids else qualified


def name_alone(index: ChannelIndex, entry: ChannelEntry) -> str | None:
    """The channel id if tier 1 of it is exactly ``entry``, else the qualified name if tier 1
    of that is exactly ``entry``, else None (only the id with the server id reaches it)."""
    channel_id = entry.ref[1]
    if len(index.by_id(channel_id)) == 1 and not index.by_qualified_name(channel_id):
        return channel_id
    qualified = qualified_name(entry.ref)
    if not index.by_id(qualified) and len(index.by_qualified_name(qualified)) == 1:
        return qualified
    return None


# Enum member access is slow on Python 3.11 and a Match is built per resolution: bind the
# members once and build the named tuple without its Python-level __new__.
_NAME, _RAW_ID, _LABEL, _BARE_LABEL = Tier.NAME, Tier.RAW_ID, Tier.LABEL, Tier.BARE_LABEL
_DM_MENTION, _DM_NAME, _DM_PARTIAL = Tier.DM_MENTION, Tier.DM_NAME, Tier.DM_PARTIAL
_new = tuple.__new__


def match_name(index: ChannelIndex, name: str) -> Match | None:
    """The deciding tier of ``name`` and its hits, or None when no tier matches.

    ``name`` is used as given (an empty name matches nothing).
    """
    if not name:
        return None
    hits = entries_named(index, name)
    if hits:
        return _new(Match, (_NAME, hits, False))
    hits = index.by_raw_id(name)
    if hits:
        return _new(Match, (_RAW_ID, hits, False))
    whole, hits = index.label_hits(name)
    if hits:
        return _new(Match, (_LABEL if whole else _BARE_LABEL, hits, False))
    if name[0] == "@" or name[:2] == "<@":
        return _match_dm(index, name)
    return None


def _match_dm(index: ChannelIndex, name: str) -> Match | None:
    is_mention, key = dm_query(name)
    if is_mention:
        hits = index.dms.lookup(name)
        return _new(Match, (_DM_MENTION, hits, False)) if hits else None
    if name[0] != "@":
        return None  # "<@>" and the like: neither a mention nor an @name
    dms = index.dms
    hits = dms.by_name_key(key)
    if hits:
        return _new(Match, (_DM_NAME, hits, False))
    keys = dms.partial(key, PARTIAL_LIMIT)
    found: dict[object, ChannelEntry] = {}
    for k in keys[:PARTIAL_LIMIT]:
        for entry in dms.by_name_key(k):
            found.setdefault(entry.ref, entry)
    if not found:
        return None
    return Match(_DM_PARTIAL, tuple(found.values()), more=len(keys) > PARTIAL_LIMIT)
