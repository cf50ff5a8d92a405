"""Which string picks a channel alone, with and without the turn's own channels.

A call made inside a turn may pass the turn's own channels: among several channels sharing an
id, one of them is then picked by that id (channel-registry.md §3.2, §3.6, §4.6). This module
says which candidates remain and whether a string picks one channel alone.

What it deliberately does not know: refusal wording, server ids given beside a name, and the
tiers.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable

from switchboard.channels.descriptor import dm_query
from switchboard.channels.index import ChannelIndex
from switchboard.channels.names.tiers import Tier, entries_named, match_name, name_alone
from switchboard.channels.names.wording import Choice
from switchboard.channels.records import ChannelEntry
from switchboard.channels.ref import ChannelRef, qualified_name

__all__ = [
    "NO_OWN",
    "Own",
    "choices_for",
    "label_picks",
    "name_for",
    "own_choices",
    "own_named",
    "picks",
]

Own = Collection[ChannelRef]
"""The turn's own channels, as the caller passes them (a set, a tuple, …)."""

NO_OWN: Own = frozenset()
"""No own channels: a call made outside any turn."""


def own_named(own: Iterable[ChannelRef], name: str) -> tuple[ChannelRef, ...]:
    """The own channels whose channel id is exactly ``name``, each once, sorted (so a
    refusal lists them the same way whatever collection the caller passed).

    O(size of ``own``), which is a turn's handful of channels, never the registry.
    """
    return tuple(sorted({ref for ref in own if ref[1] == name}))


def picks(index: ChannelIndex, name: str, ref: ChannelRef, own: Own = NO_OWN) -> bool:
    """Whether ``name`` picks ``ref`` alone (own binding first, then tier 1)."""
    if own:
        bound = own_named(own, name)
        if bound:
            return bound == (ref,)
    hits = entries_named(index, name)
    return len(hits) == 1 and hits[0].ref == ref


def name_for(index: ChannelIndex, ref: ChannelRef, own: Own = NO_OWN) -> str | None:
    """The channel id or qualified name that picks ``ref`` alone, else None.

    For an unregistered ``ref`` this is None unless the own rule binds one of the two to it.
    """
    if not own:
        entry = index.get(ref)
        return None if entry is None else name_alone(index, entry)
    for name in (ref[1], qualified_name(ref)):
        if picks(index, name, ref, own):
            return name
    return None


def label_picks(index: ChannelIndex, entry: ChannelEntry, own: Own = NO_OWN) -> str | None:
    """The entry's label if that label, as a name, picks it alone; else None.

    A label that reads as an ``@name`` or a mention is not offered: such a label is shown by
    the name that picks the DM instead, so a shown label never reaches a different channel.
    """
    label = entry.descriptor.label
    if not label or label[0] == "@" or dm_query(label)[0]:
        return None
    if own and own_named(own, label):
        return None
    match = match_name(index, label)
    return label if match is not None and match.hits == (entry,) and not match.more else None


def choices_for(
    index: ChannelIndex,
    entries: Iterable[ChannelEntry],
    tier: Tier,
    own: Own = NO_OWN,
    accept: Callable[[str], bool] | None = None,
) -> list[Choice]:
    """Each entry of a refusal at ``tier``, with the string that picks it alone (or None).

    What it knows (channel-registry.md §3.2, §3.6, §4.6):

    - **The own rule.** A call made inside a turn may pass the turn's *own* channels (every channel
      that was that turn's trigger or locus): a set of
      :class:`~switchboard.channels.ref.ChannelRef`. When no server id is given and the name equals
      the *channel id* of own channels, the name is bound to them alone: one such own channel is the
      answer (even after its server withdrew it, in which case the call is refused rather than sent
      elsewhere), several are refused. Other servers' channels with that id are never reached
      through the name. Qualified names are not bound (an own channel's id is never its own
      qualified name).
    - :func:`name_for`: the channel id if it picks the channel alone, else the qualified name if
      that does, else None. "Picks alone" is judged by the same rule the resolvers apply: with own
      channels, their binding; otherwise tier 1
      (:func:`~switchboard.channels.names.tiers.entries_named`) is exactly this channel. Every later
      tier is only tried when tier 1 has no hit, so a name that picks a channel here picks it in
      every resolver.
    - :func:`choices_for`: each candidate of a refusal with the string that picks it, or None.

    A DM found by recipient is offered by its label when that label picks it (labels read
    better than opaque DM ids); a channel found by its label shows the label beside its name.
    ``accept`` rejects names the caller cannot use (a ``>>`` target cannot contain a space).
    """
    out: list[Choice] = []
    for entry in entries:
        ref = entry.ref
        name = None
        if tier in (Tier.DM_MENTION, Tier.DM_NAME, Tier.DM_PARTIAL):
            name = label_picks(index, entry, own)
            if name is not None and accept is not None and not accept(name):
                name = None
        if name is None:
            for candidate in (ref[1], qualified_name(ref)):
                if (accept is None or accept(candidate)) and picks(index, candidate, ref, own):
                    name = candidate
                    break
        label = None
        if tier in (Tier.LABEL, Tier.BARE_LABEL) and entry.descriptor.label:
            label = entry.descriptor.label
        out.append(Choice(ref, name, label))
    return out


def own_choices(
    index: ChannelIndex,
    refs: Iterable[ChannelRef],
    own: Own,
    accept: Callable[[str], bool] | None = None,
) -> list[Choice]:
    """The turn's own channels sharing one id: each by a name that picks it, or gone."""
    out: list[Choice] = []
    for ref in refs:
        if index.get(ref) is None:
            out.append(Choice(ref, None, gone=True))
            continue
        name = name_for(index, ref, own)
        if name is not None and accept is not None and not accept(name):
            name = None
        out.append(Choice(ref, name))
    return out
