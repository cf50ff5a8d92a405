"""Near names for a name that matched nothing, found with bounded work.

A few names close to a typed one, without looking at every channel: spelling variants (each an
O(1) probe) first, then close labels among a bounded sample.

What it deliberately does not know: when suggestions are wanted and how they are worded.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable
from itertools import islice

from switchboard.channels.descriptor import label_key
from switchboard.channels.index import ChannelIndex
from switchboard.channels.names.picking import NO_OWN, Own, name_for
from switchboard.channels.names.tiers import entries_named, match_name
from switchboard.channels.records import ChannelEntry
from switchboard.channels.ref import ChannelRef

__all__ = ["MAX_SUGGESTIONS", "SUGGESTION_SAMPLE", "suggest"]

SUGGESTION_SAMPLE = 200
"""At most this many keys of each kind are compared by difflib for one unknown name."""

MAX_SUGGESTIONS = 5
"""At most this many suggestions are offered."""


def _variants(name: str) -> dict[str, None]:
    stripped = name.strip()
    bare = stripped.lstrip("#@")
    found = dict.fromkeys(
        (stripped, stripped.casefold(), bare, bare.casefold(), "@" + bare, "#" + bare)
    )
    found.pop(name, None)
    found.pop("", None)
    found.pop("@", None)
    found.pop("#", None)
    return found


def _close(word: str, keys: Iterable[str]) -> list[str]:
    sample = list(islice(keys, SUGGESTION_SAMPLE))
    return difflib.get_close_matches(word, sample, n=MAX_SUGGESTIONS, cutoff=0.6)


def suggest(
    index: ChannelIndex,
    name: str,
    server_id: str | None = None,
    own: Own = NO_OWN,
    accept: Callable[[str], bool] | None = None,
) -> tuple[str, ...]:
    """At most :data:`MAX_SUGGESTIONS` names near ``name``, each picking one channel alone.

    What it knows: how to offer a few names close to a typed one without looking at every channel.
    Two sources, in order:

    1. **Spelling variants**, each one O(1) probe of the tiers: the name trimmed, case-folded,
       without leading ``#``/``@``, with an ``@`` in front (a DM typed without it), and, when a
       server id was given, the name itself on every server.
    2. :mod:`difflib` close matches against at most :data:`SUGGESTION_SAMPLE` keys of each kind
       (ids, or the given server's ids; label keys; DM name keys). The sample is the first keys of
       each index, so for a large registry it is a bounded, arbitrary slice: suggestions there are a
       courtesy, never a search.

    Each suggestion is a string that picks one channel alone (see
    :func:`~switchboard.channels.names.picking.name_for`), so following one can never hit another
    ambiguity or reach a different channel.

    Args:
        index: Where to look.
        name: The name that matched nothing.
        server_id: When given, the same name on other servers is suggested first, and that
            server's own ids are sampled.
        own: The turn's own channels, which the suggested names must respect.
        accept: Rejects names the caller could not use (a ``>>`` target has no spaces).
    """
    found: dict[ChannelRef, ChannelEntry] = {}

    def take(entries: tuple[ChannelEntry, ...]) -> None:
        for entry in entries[:MAX_SUGGESTIONS]:
            found.setdefault(entry.ref, entry)

    if server_id is not None and name:
        take(entries_named(index, name))
    for variant in _variants(name):
        match = match_name(index, variant)
        if match is not None:
            take(match.hits)
    word = name.strip()
    if len(found) < MAX_SUGGESTIONS and word:
        ids = index.server_channels(server_id) if server_id is not None else index.id_keys()
        for key in _close(word, ids):
            take(index.by_id(key))
        for key in _close(label_key(word), index.label_keys()):
            take(index.by_label_key(key))
        dms = index.dms
        for key in _close(word.removeprefix("@").casefold(), dms.name_keys()):
            take(dms.by_name_key(key))
    names: list[str] = []
    for entry in found.values():
        alone = name_for(index, entry.ref, own)
        if alone is None or alone in names or (alone == name and server_id is None):
            continue
        if accept is not None and not accept(alone):
            continue
        names.append(alone)
        if len(names) == MAX_SUGGESTIONS:
            break
    return tuple(names)
