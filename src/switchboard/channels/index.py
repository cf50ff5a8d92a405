"""The registry's storage: entries by server, plus one hash index per kind of name.

:class:`ChannelIndex` keeps where every registration lives and every key it answers to, in step
on every put and pop, so that each lookup costs O(1) in the number of channels (plus the size of
its answer); qualified names need no stored strings (they are probed at the name's colons).

What it deliberately does not know: registration semantics (results, authorization, serials),
the order in which kinds of names are tried, and ambiguity.
"""

from __future__ import annotations

from collections.abc import Iterator, KeysView, Mapping, Sequence
from dataclasses import dataclass
from itertools import repeat
from operator import attrgetter, eq, methodcaller

from switchboard.channels.buckets import (
    Index,
    add,
    add_many,
    discard,
    discard_many,
    drop_keys,
    find,
    grow,
)
from switchboard.channels.descriptor import (
    CheckedDescriptors,
    DescriptorLike,
    bare_label_key,
    label_key,
    raw_channel_id,
)
from switchboard.channels.dm_index import DmIndex
from switchboard.channels.records import ChannelEntry
from switchboard.channels.ref import ChannelRef

__all__ = ["ChannelIndex", "IndexStatistics"]

_EMPTY: Mapping[str, ChannelEntry] = {}
_label = attrgetter("label")
_entry_label = attrgetter("descriptor.label")
_entry_metadata = attrgetter("descriptor.metadata")
_raw_id_of = attrgetter("raw_id")
_address = attrgetter("address")
_metadata = attrgetter("metadata")


_channel_id_of = methodcaller("get", "channelId")


def _raw_ids(addresses: list[Mapping[str, object] | None]) -> list[str | None]:
    """:func:`raw_channel_id` of each address; in C when every address is a dict whose
    ``channelId`` is a non-empty string or absent."""
    if set(map(type, addresses)) == {dict}:
        raws = list(map(_channel_id_of, addresses))
        if set(map(type, raws)) <= _STR_OR_NONE and "" not in raws:
            return raws
    return [raw_channel_id(a) if a else None for a in addresses]


_STR_OR_NONE = frozenset((str, type(None)))


def _plain_label_keys(labels: list[str]) -> list[str] | None:
    """:func:`label_key` of every label, computed in C, when each gives one key and no bare
    key (no label is empty, or just ``"#"``, or ends in ``")"``); else None."""
    # One pass for the keys, which is also the check that every label is a string; an empty
    # label, like "#", gives an empty key, refused below. Passes over 100,000 labels cost
    # mostly in touching each object, so there is no pass for either check alone; and the
    # unbound method over map costs half a methodcaller.
    try:
        keys = list(map(str.removeprefix, labels, repeat("#")))
    except TypeError:  # a label that is not a string
        return None
    joined = "".join(keys)
    if joined.isascii() and joined.casefold() == joined:
        # ASCII folds character by character: no key changes, so each key is its label, or
        # its label without the "#" (never a copy of an already-normal label).
        if "" in keys or ")" in joined:
            return None
        return keys
    keys = list(map(str.casefold, keys))
    if "" in keys or any(map(str.endswith, keys, repeat(")"))):
        return None
    if any(map(eq, keys, labels)):  # keep no copy of an already-normal label
        keys = [label if key == label else key for key, label in zip(keys, labels, strict=True)]
    return keys


def _label_key_of(entry: ChannelEntry) -> str | None:
    label = entry.descriptor.label
    return label_key(label) if label else None


@dataclass(frozen=True, slots=True)
class IndexStatistics:
    """How many channels, servers and distinct keys of each kind the index holds.

    ``label_keys`` counts whole-label and bare-label keys together (they share one dict).
    """

    channels: int
    servers: int
    ids: int
    raw_ids: int
    label_keys: int
    dm_names: int
    dm_ids: int


class ChannelIndex:
    """Entries keyed by :class:`ChannelRef`, with secondary indexes kept in step.

    What it knows: where every registration lives and every key it answers to, kept in step on every
    put and pop, so that each lookup costs O(1) in the number of channels (plus the size of its
    answer).

    Theory of operation. The primary store is ``server id -> {channel id -> entry}``; a
    :class:`~switchboard.channels.ref.ChannelRef` is looked up with two dict probes and a server's
    channels are one dict. Each secondary index maps one normalized string to a *bucket* (see
    :mod:`switchboard.channels.buckets`): the entry itself, or a ``{ref: entry}`` dict once a second
    channel shares the key. Removal therefore never scans: it deletes one dict item per key. The
    keys of an entry are recomputed from its descriptor when it leaves (they are not stored, which
    keeps a channel under 1 KB); this is why descriptors must not be mutated in place.

    The indexes, and the key each entry contributes:

    ====================  ==========================================================
    ``by_id``             the channel id, as given
    ``by_raw_id``         ``address["channelId"]``
    ``by_label``          the label, case-folded, one leading ``#`` dropped; and, in the same
                          dict, that key without a trailing ``" (…)"`` parenthetical
    DMs                   a DM's recipient name (case-folded, one ``@`` dropped) and recipient
                          id, in :class:`~switchboard.channels.dm_index.DmIndex`
    ====================  ==========================================================

    Qualified names (``"<server>:<id>"``) need no stored strings, which would cost a seventh of the
    per-channel budget: a registered pair ``(s, c)`` has the qualified name ``n`` exactly when
    ``n[len(s)]`` is a colon, ``n[:len(s)] == s`` and ``n[len(s) + 1:] == c``. So
    :meth:`ChannelIndex.by_qualified_name` probes the primary store at each colon of ``n`` (only
    where some registered server id has that length) and returns every registered pair whose exact
    qualified string is ``n``. No split is ever chosen: all of them are tried, and a name that two
    pairs share returns both. When the registered server ids have fewer distinct lengths than the
    name has colons, it probes at each such length instead (where the name has a colon there). The
    cost is O(min(colons in the name, distinct server-id lengths)), independent of the number of
    channels.

    A label and its bare form share one dict: a query's bucket then holds exactly the channels whose
    whole label or whose bare label equals it, and :meth:`ChannelIndex.by_label` prefers the
    whole-label matches among them by re-deriving the key of each channel in that bucket (work
    proportional to the channels answering to the key, never to the registry). A label never shares
    a key with its own bare form, which is a strict prefix of it.

    One exception to "kept in step": the labels of a batch the caller vouched for
    (:class:`~switchboard.channels.descriptor.CheckedDescriptors`, the host's large first
    registration) are indexed when the label index is next read or changed, or when the host calls
    :meth:`ChannelIndex.index_labels` once the registration has been answered. No lookup can tell:
    each one indexes what waits first, and buckets keep registration order.
    """

    __slots__ = (
        "_by_id",
        "_by_label",
        "_by_raw",
        "_count",
        "_dms",
        "_label_backlog",
        "_server_lengths",
        "_servers",
    )

    def __init__(self) -> None:
        self._servers: dict[str, dict[str, ChannelEntry]] = {}
        self._server_lengths: dict[int, int] = {}  # length of a server id -> how many
        self._count = 0
        self._by_id: Index = {}
        self._by_raw: Index = {}
        self._by_label: Index = {}
        # Batches of entries whose labels are not in _by_label yet (see register_many and
        # _labels): every read or change of _by_label adds them first, in order.
        self._label_backlog: list[Sequence[ChannelEntry]] = []
        self._dms = DmIndex()

    # -- mutation ------------------------------------------------------------------------

    def put(self, entry: ChannelEntry) -> ChannelEntry | None:
        """Store ``entry`` under its ref, replacing (and unindexing) any entry already there.

        Returns:
            The replaced entry, or None when the ref was new.
        """
        server_id, channel_id = entry.server_id, entry.channel_id
        channels = self._servers.get(server_id)
        if channels is None:
            channels = self._open_server(server_id)
        old = channels.get(channel_id)
        channels[channel_id] = entry  # an existing key keeps its position
        if old is None:
            self._count += 1
        else:
            self._unindex(old)
        self._index(entry)
        return old

    def register_many(
        self,
        server_id: str,
        descriptors: Sequence[DescriptorLike],
        first_serial: int,
        ids: list[str] | None = None,
    ) -> None:
        """Store a new entry for each descriptor of ``server_id`` (ids already validated).

        The bulk path of a large ``channels/register``: the same effect as :meth:`put` of
        ``ChannelEntry(server_id, id, descriptor, False, first_serial + i, raw id)`` for each
        descriptor in order (no :class:`ChannelRef` is made: an entry makes its own when
        asked). When the batch's ids are distinct and new to this server (a first
        registration), every derived key is computed first and each index takes its keys in
        one C-level update (:func:`~switchboard.channels.buckets.add_many`); otherwise the
        descriptors are stored one by one.

        Args:
            server_id: The registering connection.
            descriptors: The descriptors to store, in order.
            first_serial: The registration serial of the first one.
            ids: ``[d.id for d in descriptors]``, when the caller has it already.
        """
        if ids is None:
            ids = [d.id for d in descriptors]
        if not ids:
            return
        channels = self._servers.get(server_id)
        if channels is not None and not channels.keys().isdisjoint(ids):
            self._register_each(server_id, descriptors, first_serial)
            return
        size = len(ids)
        # Everything derived first: nothing below the first update can fail half-way.
        raws: list[str | None] | None = None
        addresses = list(map(_address, descriptors))
        if addresses.count(None) != size and any(addresses):
            raws = _raw_ids(addresses)
        entries = list(
            map(
                ChannelEntry,
                repeat(server_id, size),
                ids,
                descriptors,
                repeat(False, size),
                range(first_serial, first_serial + size),
                repeat(None, size) if raws is None else raws,
            )
        )
        # Labels the caller vouched are strings give keys without fail: they are indexed
        # when first needed, or when the host asks after the answer (index_labels).
        deferred = type(descriptors) is CheckedDescriptors
        if not deferred:
            labels = list(map(_label, descriptors))
            keyed = _plain_label_keys(labels)
            if keyed is not None:
                label_keys, label_entries = keyed, entries
            else:
                label_keys, label_entries = self._label_keys(labels, entries)
        metadata = list(map(_metadata, descriptors))
        dms = (
            [e for e, m in zip(entries, metadata, strict=True) if m]
            if metadata.count(None) != size
            else []
        )
        # One update of the server's channels also tells whether the ids are distinct.
        if channels is None:
            channels = self._open_server(server_id)
        before = len(channels)
        channels.update(zip(ids, entries, strict=True))
        if len(channels) != before + size:  # an id twice in the batch: undo, one by one
            for channel_id in ids:
                channels.pop(channel_id, None)
            self._register_each(server_id, descriptors, first_serial)
            return
        self._count += size
        if before or self._by_id:
            add_many(self._by_id, ids, entries)
        else:  # the first server's ids: a copy of its channels (one C-level clone)
            self._by_id.update(channels)
        if raws is not None:
            with_raw = [(raw, e) for raw, e in zip(raws, entries, strict=True) if raw is not None]
            add_many(self._by_raw, [raw for raw, _ in with_raw], [e for _, e in with_raw])
        if deferred:
            self._label_backlog.append(entries)
        else:
            add_many(self._labels(), label_keys, label_entries)
        for entry in dms:
            descriptor = entry.descriptor
            self._dms.add(entry, descriptor.label, descriptor.metadata or {})

    def _labels(self) -> Index:
        """The label index, with the labels of every batch still waiting added first."""
        if self._label_backlog:
            self.index_labels()
        return self._by_label

    @property
    def labels_waiting(self) -> int:
        """How many entries' labels wait to be indexed (see :meth:`index_labels`)."""
        return sum(map(len, self._label_backlog))

    def index_labels(self) -> None:
        """Add the labels of the batches :meth:`register_many` left for later, in order.

        A large first registration's label keys are a fifth of its time (making 100,000 keys
        and hashing them into one dict): for a batch the caller vouched for
        (:class:`~switchboard.channels.descriptor.CheckedDescriptors`, whose labels are
        strings, so no key can fail), they are made here instead, after the registration
        has been answered. Every lookup or change that reads the label index calls this
        first, so no answer ever misses a label; a bucket's order is the registration order
        all the same.
        """
        backlog, self._label_backlog = self._label_backlog, []
        for entries in backlog:
            labels = list(map(_entry_label, entries))
            keyed = _plain_label_keys(labels)
            if keyed is not None:
                add_many(self._by_label, keyed, entries)
            else:
                add_many(self._by_label, *self._label_keys(labels, list(entries)))

    @staticmethod
    def _label_keys(
        labels: list[str], entries: list[ChannelEntry]
    ) -> tuple[list[str], list[ChannelEntry]]:
        """The by_label keys of each entry, in order: its label key, then its bare key."""
        label_keys: list[str] = []
        label_entries: list[ChannelEntry] = []
        key_of, entry_of = label_keys.append, label_entries.append
        for label, entry in zip(labels, entries, strict=True):
            if label:
                # label_key and bare_label_key, inlined
                key = (label[1:] if label[0] == "#" else label).casefold()
                if key == label:
                    key = label  # keep no copy of an already-normal label
                if key:
                    key_of(key)
                    entry_of(entry)
                    if key[-1] == ")":
                        cut = key.rfind(" (")
                        if cut > 0 and key.find(")", cut + 2, -1) < 0:
                            bare = key[:cut]
                            if bare[-1] == " ":
                                bare = bare.rstrip()
                            if bare:
                                key_of(bare)
                                entry_of(entry)
        return label_keys, label_entries

    def _register_each(
        self, server_id: str, descriptors: Sequence[DescriptorLike], first_serial: int
    ) -> None:
        """:meth:`register_many` one descriptor at a time: for a batch that re-registers
        ids of this server or repeats an id (the common case inlined, locals bound once)."""
        channels = self._servers.get(server_id)
        if channels is None:
            channels = self._open_server(server_id)
        by_id, by_raw = self._by_id, self._by_raw
        by_label = self._labels()
        new_entry = ChannelEntry
        count = self._count
        serial = first_serial
        try:
            for descriptor in descriptors:
                channel_id = descriptor.id
                address = descriptor.address
                raw = address.get("channelId") if address else None
                if raw is not None and (type(raw) is not str or not raw):
                    raw = raw_channel_id(address)
                entry = new_entry(server_id, channel_id, descriptor, False, serial, raw)
                serial += 1
                # setdefault: one probe per index in the common case of a new key
                old = channels.setdefault(channel_id, entry)
                if old is entry:
                    count += 1
                else:
                    channels[channel_id] = entry  # an existing key keeps its position
                    self._unindex(old)
                held = by_id.setdefault(channel_id, entry)
                if held is not entry:
                    grow(by_id, channel_id, held, entry)
                if raw is not None:
                    held = by_raw.setdefault(raw, entry)
                    if held is not entry:
                        grow(by_raw, raw, held, entry)
                label = descriptor.label
                if label:
                    # label_key and bare_label_key, inlined
                    key = (label[1:] if label[0] == "#" else label).casefold()
                    if key == label:
                        key = label  # keep no copy of an already-normal label
                    if key:
                        held = by_label.setdefault(key, entry)
                        if held is not entry:
                            grow(by_label, key, held, entry)
                        if key[-1] == ")":
                            cut = key.rfind(" (")
                            if cut > 0 and key.find(")", cut + 2, -1) < 0:
                                bare = key[:cut]
                                if bare[-1] == " ":
                                    bare = bare.rstrip()
                                if bare:
                                    held = by_label.setdefault(bare, entry)
                                    if held is not entry:
                                        grow(by_label, bare, held, entry)
                if descriptor.metadata:
                    self._dms.add(entry, label, descriptor.metadata)
        finally:
            self._count = count
            if not channels:
                self._close_server(server_id)

    def pop(self, ref: ChannelRef) -> ChannelEntry | None:
        """Remove and return the entry at ``ref``, or None when there is none."""
        channels = self._servers.get(ref[0])
        if channels is None:
            return None
        entry = channels.pop(ref[1], None)
        if entry is None:
            return None
        if not channels:
            self._close_server(ref[0])
        self._count -= 1
        self._unindex(entry)
        return entry

    def pop_server(self, server_id: str) -> list[str]:
        """Remove every entry of ``server_id``; return their channel ids in registration order.

        In bulk: when it was the last server, every index is emptied at once; else each index
        drops the server's keys in C when every key holds just its own entry (the common case:
        ids, raw ids and labels no other channel shares), and key by key otherwise. A connector
        of 100,000 channels that exits, or loses ``channels.register``, then holds the event
        loop for a fraction of the time its channels took one by one.
        """
        channels = self._servers.get(server_id)
        if channels is None:
            return []
        self._close_server(server_id)
        ids = list(channels)
        if not self._servers:  # the last server: every index holds its entries and no other
            self._count = 0
            self._by_id.clear()
            self._by_raw.clear()
            self._by_label.clear()
            self._label_backlog = []
            self._dms = DmIndex()
            return ids
        gone = list(channels.values())
        by_id = self._by_id
        if len(by_id) == self._count:
            # Every entry has an id key of its own (no id is shared, so there is no bucket):
            # each of these ids holds just its entry, with no lookup to tell.
            drop_keys(by_id, ids)
        else:
            discard_many(by_id, ids, gone)
        self._count -= len(gone)
        raws = list(map(_raw_id_of, gone))
        if raws.count(None) != len(raws):
            with_raw = [(raw, e) for raw, e in zip(raws, gone, strict=True) if raw is not None]
            discard_many(self._by_raw, [raw for raw, _ in with_raw], [e for _, e in with_raw])
        labels = list(map(_entry_label, gone))
        keys = _plain_label_keys(labels)
        if keys is not None:
            discard_many(self._labels(), keys, gone)
        else:  # labels with a bare key too (often shared, as "general" of many guilds' channels)
            discard_many(self._labels(), *self._label_keys(labels, gone))
        metadata = list(map(_entry_metadata, gone))
        if metadata.count(None) != len(metadata):
            for entry, meta in zip(gone, metadata, strict=True):
                if meta:
                    self._dms.discard(entry, entry.descriptor.label, meta)
        return ids

    def _open_server(self, server_id: str) -> dict[str, ChannelEntry]:
        lengths = self._server_lengths
        lengths[len(server_id)] = lengths.get(len(server_id), 0) + 1
        channels: dict[str, ChannelEntry] = {}
        self._servers[server_id] = channels
        return channels

    def _close_server(self, server_id: str) -> None:
        del self._servers[server_id]
        lengths = self._server_lengths
        left = lengths[len(server_id)] - 1
        if left:
            lengths[len(server_id)] = left
        else:
            del lengths[len(server_id)]

    def replace_descriptor(self, entry: ChannelEntry, descriptor: DescriptorLike) -> None:
        """Swap ``entry``'s descriptor in place (same object, same serial), re-keying it."""
        self._unindex(entry)
        entry.descriptor = descriptor
        entry.raw_id = raw_channel_id(descriptor.address)
        self._index(entry)

    def _index(self, entry: ChannelEntry) -> None:
        add(self._by_id, entry.channel_id, entry)
        if entry.raw_id is not None:
            add(self._by_raw, entry.raw_id, entry)
        descriptor = entry.descriptor
        label = descriptor.label
        if label:
            key = label_key(label)
            if key:
                add(self._labels(), key, entry)
                bare = bare_label_key(key)
                if bare is not None:
                    add(self._labels(), bare, entry)
        if descriptor.metadata:
            self._dms.add(entry, label, descriptor.metadata)

    def _unindex(self, entry: ChannelEntry) -> None:
        discard(self._by_id, entry.channel_id, entry)
        if entry.raw_id is not None:
            discard(self._by_raw, entry.raw_id, entry)
        descriptor = entry.descriptor
        label = descriptor.label
        if label:
            key = label_key(label)
            if key:
                discard(self._labels(), key, entry)
                bare = bare_label_key(key)
                if bare is not None:
                    discard(self._labels(), bare, entry)
        if descriptor.metadata:
            self._dms.discard(entry, label, descriptor.metadata)

    # -- lookups -------------------------------------------------------------------------

    def get(self, ref: ChannelRef) -> ChannelEntry | None:
        """The entry at ``ref``, or None."""
        channels = self._servers.get(ref[0])
        return None if channels is None else channels.get(ref[1])

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[ChannelEntry]:
        """Every entry, server by server (servers in first-registration order)."""
        for channels in self._servers.values():
            yield from channels.values()

    def server_channels(self, server_id: str) -> Mapping[str, ChannelEntry]:
        """A read-only view of one server's entries by channel id (empty if none)."""
        return self._servers.get(server_id, _EMPTY)

    def servers(self) -> KeysView[str]:
        """The ids of servers that have at least one entry."""
        return self._servers.keys()

    def by_id(self, channel_id: str) -> tuple[ChannelEntry, ...]:
        """Entries whose channel id is exactly ``channel_id``, on any server."""
        return find(self._by_id, channel_id)

    def by_qualified_name(self, name: str) -> tuple[ChannelEntry, ...]:
        """Entries whose ``"<server>:<id>"`` is exactly ``name`` (see :class:`ChannelIndex`).

        Entries with shorter server ids come first.
        """
        lengths = self._server_lengths
        colons = name.count(":")
        if not colons:
            return ()
        servers = self._servers
        found: list[ChannelEntry] = []
        if len(lengths) <= colons:  # fewer server-id lengths than colons: try each length
            size = len(name)
            for cut in lengths:
                if cut < size and name[cut] == ":":
                    channels = servers.get(name[:cut])
                    if channels is not None:
                        entry = channels.get(name[cut + 1 :])
                        if entry is not None:
                            found.append(entry)
            if len(found) > 1:
                found.sort(key=lambda e: len(e.server_id))
            return tuple(found)
        cut = name.find(":")
        while cut >= 0:
            if cut in lengths:  # only slice where some server id is that long
                channels = servers.get(name[:cut])
                if channels is not None:
                    entry = channels.get(name[cut + 1 :])
                    if entry is not None:
                        found.append(entry)
            cut = name.find(":", cut + 1)
        return tuple(found)

    def by_raw_id(self, raw: str) -> tuple[ChannelEntry, ...]:
        """Entries whose ``address["channelId"]`` is exactly ``raw``."""
        return find(self._by_raw, raw)

    def by_label(self, label: str) -> tuple[ChannelEntry, ...]:
        """Entries whose normalized label equals the normalized ``label``; if none, those
        whose normalized label without its trailing parenthetical does."""
        key = label_key(label)
        hits = find(self._labels(), key)
        if len(hits) < 2:
            return hits
        whole = tuple(e for e in hits if _label_key_of(e) == key)
        return whole or hits

    def label_hits(self, label: str) -> tuple[bool, tuple[ChannelEntry, ...]]:
        """``(whole, hits)``: :meth:`by_label`, and whether the hits matched whole labels
        (True) or labels without their trailing parenthetical (False)."""
        key = label_key(label)
        hits = find(self._labels(), key)
        if not hits:
            return True, hits
        whole = tuple(e for e in hits if _label_key_of(e) == key)
        return (True, whole) if whole else (False, hits)

    def by_dm_name(self, name: str) -> tuple[ChannelEntry, ...]:
        """DMs answering to ``@name``/``name`` (case-insensitive) or ``<@id>``/``<@!id>``."""
        return self._dms.lookup(name)

    @property
    def dms(self) -> DmIndex:
        """The DM indexes, for partial-name lookups."""
        return self._dms

    def id_keys(self) -> KeysView[str]:
        """Every distinct channel id (for bounded suggestion sampling)."""
        return self._by_id.keys()

    def label_keys(self) -> KeysView[str]:
        """Every distinct normalized label and bare label (for bounded suggestion sampling)."""
        return self._labels().keys()

    def by_label_key(self, key: str) -> tuple[ChannelEntry, ...]:
        """Entries under an already-normalized label or bare-label key."""
        return find(self._labels(), key)

    def statistics(self) -> IndexStatistics:
        """Counts of channels, servers and distinct keys per index."""
        return IndexStatistics(
            channels=self._count,
            servers=len(self._servers),
            ids=len(self._by_id),
            raw_ids=len(self._by_raw),
            label_keys=len(self._labels()),
            dm_names=self._dms.counts()[0],
            dm_ids=self._dms.counts()[1],
        )
