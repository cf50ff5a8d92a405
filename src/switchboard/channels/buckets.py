"""Index buckets: one key's channels, stored as cheaply as the common case allows.

What this module knows: almost every key of a secondary index (an id, a raw id, a label)
names exactly one channel, so a bucket is that :class:`~switchboard.channels.records.ChannelEntry`
itself, with no container around it. Only when a second channel shares the key does the bucket
become a ``{ref: entry}`` dict, and it collapses back to the bare entry when it shrinks to one.
Adding and discarding are O(1), never a scan of a list; an entry is identified by its ref and
must be the very object stored (a replaced registration is not discarded by its successor).

What it deliberately does not know: what the keys mean or how they were normalized.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from operator import is_
from typing import TypeAlias

from switchboard.channels.records import ChannelEntry
from switchboard.channels.ref import ChannelRef

__all__ = ["Bucket", "Index", "add", "add_many", "discard", "find", "grow"]

Bucket: TypeAlias = ChannelEntry | dict[ChannelRef, ChannelEntry]
Index: TypeAlias = dict[str, Bucket]


def add(index: Index, key: str, entry: ChannelEntry) -> None:
    """Add ``entry`` under ``key``."""
    held = index.get(key)
    if held is None:
        index[key] = entry
    else:
        grow(index, key, held, entry)


def add_many(index: Index, keys: list[str], entries: Sequence[ChannelEntry]) -> None:
    """:func:`add` each entry under its key, in order.

    The common case of a large registration, keys new to the index and distinct, is one
    C-level ``dict.update``; anything else goes key by key.
    """
    before = len(index)
    if index.keys().isdisjoint(keys):
        index.update(zip(keys, entries, strict=True))
        if len(index) == before + len(keys):
            return
        for key in keys:  # a key twice in the batch: undo, then key by key
            index.pop(key, None)
    for key, entry in zip(keys, entries, strict=True):
        held = index.get(key)
        if held is None:
            index[key] = entry
        else:
            grow(index, key, held, entry)


def grow(index: Index, key: str, held: Bucket, entry: ChannelEntry) -> None:
    """Add ``entry`` under a key that already holds a bucket."""
    if isinstance(held, dict):
        held[entry.ref] = entry
    else:
        index[key] = {held.ref: held, entry.ref: entry}


def discard(index: Index, key: str, entry: ChannelEntry) -> None:
    """Remove ``entry`` from under ``key`` if that very entry is there; else do nothing."""
    held = index.get(key)
    if held is entry:
        del index[key]
    elif isinstance(held, dict) and held.get(entry.ref) is entry:
        del held[entry.ref]
        if len(held) == 1:
            (index[key],) = held.values()


def discard_many(index: Index, keys: Sequence[str], entries: Sequence[ChannelEntry]) -> None:
    """:func:`discard` each entry from under its key.

    The common case of a connection's channels leaving, where each key holds just its own
    entry, is C-level: one pass of lookups and one of deletions (or one ``clear`` when they
    are the whole index). Otherwise a key that holds just its entry is deleted, and any other
    (a bucket: two of these entries, or other channels, under one key) goes through
    :func:`discard`.
    """
    own = list(map(is_, map(index.get, keys), entries))
    if all(own):
        drop_keys(index, keys)
        return
    for key, entry, alone in zip(keys, entries, own, strict=True):
        if alone:
            del index[key]
        else:
            discard(index, key, entry)


def drop_keys(index: Index, keys: Sequence[str]) -> None:
    """Delete ``keys``, which the caller knows are distinct and each hold one entry only."""
    if len(keys) == len(index):
        index.clear()
    else:
        deque(map(index.__delitem__, keys), maxlen=0)  # a C-level loop of deletions


def find(index: Index, key: str) -> tuple[ChannelEntry, ...]:
    """The entries under ``key``, in the order they joined its bucket."""
    held = index.get(key)
    if held is None:
        return ()
    if isinstance(held, dict):
        return tuple(held.values())
    return (held,)
