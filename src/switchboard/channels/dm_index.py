"""DM channels by recipient: exact name and id buckets, and a partial-name finder.

:class:`DmIndex` keeps the two exact DM indexes (recipient name key, recipient id) and finds the
DM names that *partly* match a typed ``@name`` (channel-registry.md §4.6 step 3) without looking
at every DM: by key length and a substring probe, bounded by the names it answers with.

What it deliberately does not know: which DM channel a name should resolve to, the order of
tiers, and ambiguity.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import KeysView, Mapping
from operator import itemgetter

from switchboard.channels.buckets import Index, add, discard, find
from switchboard.channels.descriptor import dm_keys, dm_query
from switchboard.channels.records import ChannelEntry

__all__ = ["MAX_PARTIAL_LENGTH", "MIN_PARTIAL", "DmIndex"]

MIN_PARTIAL = 3
"""A DM name shorter than this never matches partially (only exactly)."""

MAX_PARTIAL_LENGTH = 64
"""A DM name longer than this matches partially only by its start, never in the middle."""

_FEW = 64  # at most this many new suffixes are inserted one by one; more are merge-sorted


class _Suffixes:
    """The sorted ``(k[o:], k)`` pairs, stored as two parallel arrays; a sequence for bisect."""

    __slots__ = ("keys", "offsets")

    def __init__(self) -> None:
        self.keys: list[str] = []
        self.offsets = array("B")

    def __len__(self) -> int:
        return len(self.keys)

    def __getitem__(self, i: int) -> tuple[str, str]:
        key = self.keys[i]
        return key[self.offsets[i] :], key

    def position(self, key: str, offset: int) -> int | None:
        """Where the pair of ``key`` at ``offset`` is, or None when it is not stored."""
        i = bisect_left(self, (key[offset:], key))
        if i < len(self.keys) and self.keys[i] == key and self.offsets[i] == offset:
            return i
        return None

    def insert(self, key: str, offset: int) -> None:
        i = bisect_left(self, (key[offset:], key))
        self.keys.insert(i, key)
        self.offsets.insert(i, offset)

    def remove(self, key: str, offset: int) -> None:
        i = self.position(key, offset)
        if i is not None:
            del self.keys[i]
            del self.offsets[i]

    def merge(self, pairs: list[tuple[str, int]]) -> None:
        pairs.extend(zip(self.keys, self.offsets, strict=True))
        pairs.sort(key=itemgetter(0))
        pairs.sort(key=lambda p: p[0][p[1] :])  # stable: equal suffixes stay ordered by key
        self.keys = [k for k, _ in pairs]
        self.offsets = array("B", [o for _, o in pairs])


def _offsets(key: str) -> range:
    """The offsets of ``key`` stored in the suffix table (none for a short or long key)."""
    if len(key) < MIN_PARTIAL:
        return range(0)
    return range(len(key)) if len(key) <= MAX_PARTIAL_LENGTH else range(1)


class DmIndex:
    """DM channels by recipient name key and by recipient id, plus partial-name lookups.

    What it knows: the two exact DM indexes (recipient name key -> channels, recipient id ->
    channels), kept as :mod:`~switchboard.channels.buckets`, and how to find the DM names that
    *partly* match a typed ``@name`` (channel-registry.md §4.6 step 3): a name key ``k`` at least
    :data:`MIN_PARTIAL` long matches ``n`` when ``n`` occurs in ``k`` (which covers ``k`` starting
    with ``n``) or ``n`` starts with ``k``.

    Theory of operation for partial names, which must not scan every DM:

    - "``n`` starts with ``k``": probe the exact index with ``n[:i]`` for each length ``i`` that
      some name key has (a count per length is kept, as the index does for server ids), so the cost
      is O(distinct name lengths), not O(DMs).
    - "``n`` occurs in ``k``": a sorted table of the pairs ``(k[o:], k)``, one per offset ``o`` of
      each key at least :data:`MIN_PARTIAL` long (a key longer than :data:`MAX_PARTIAL_LENGTH`
      contributes offset 0 only: it matches by its start). The pairs starting with ``n`` are one
      contiguous run, found by bisection; the run is read only until ``limit + 1`` distinct names
      are seen. The table stores each pair as a pointer to the key (shared with the exact index)
      plus a one-byte offset, and compares through a small view that slices on demand.

    The table costs memory (about ten bytes per suffix, a dozen suffixes per name), so it is built
    on the first partial lookup (O(S log S) once, S = suffixes of all DM names: about 70 ms for
    10,000 names, see bench/bench_names.py), not at registration. After that, every name key that
    appears or disappears is noted and the table is brought up to date at the next partial lookup: a
    few changes by bisection and insertion, many by one merge-sort.
    """

    __slots__ = ("_by_id", "_by_name", "_lengths", "_pending", "_table")

    def __init__(self) -> None:
        self._by_name: Index = {}
        self._by_id: Index = {}
        self._lengths: dict[int, int] = {}  # length of a name key -> how many keys
        self._table: _Suffixes | None = None  # built on the first partial lookup
        self._pending: dict[str, None] = {}  # name keys that appeared or disappeared since

    # -- upkeep ----------------------------------------------------------------------------

    def add(self, entry: ChannelEntry, label: str | None, metadata: Mapping[str, object]) -> None:
        """Index ``entry`` if its descriptor is a DM (label and metadata as registered)."""
        keys = dm_keys(label, metadata)
        if keys is None:
            return
        name, rid = keys
        if name is not None:
            if name not in self._by_name:
                self._key_changed(name, 1)
            add(self._by_name, name, entry)
        if rid is not None:
            add(self._by_id, rid, entry)

    def discard(
        self, entry: ChannelEntry, label: str | None, metadata: Mapping[str, object] | None
    ) -> None:
        """Unindex ``entry``; the same label and metadata as when it was added."""
        keys = dm_keys(label, metadata)
        if keys is None:
            return
        name, rid = keys
        if name is not None:
            discard(self._by_name, name, entry)
            if name not in self._by_name:
                self._key_changed(name, -1)
        if rid is not None:
            discard(self._by_id, rid, entry)

    def _key_changed(self, key: str, delta: int) -> None:
        lengths = self._lengths
        left = lengths.get(len(key), 0) + delta
        if left:
            lengths[len(key)] = left
        else:
            del lengths[len(key)]
        if self._table is not None:
            self._pending[key] = None

    # -- lookups ---------------------------------------------------------------------------

    def lookup(self, name: str) -> tuple[ChannelEntry, ...]:
        """DMs answering exactly to ``@name``/``name`` or ``<@id>``/``<@!id>``."""
        is_mention, key = dm_query(name)
        return find(self._by_id if is_mention else self._by_name, key)

    def by_name_key(self, key: str) -> tuple[ChannelEntry, ...]:
        """DMs whose recipient name key is exactly ``key`` (already normalized)."""
        return find(self._by_name, key)

    def name_keys(self) -> KeysView[str]:
        """Every distinct recipient name key."""
        return self._by_name.keys()

    def counts(self) -> tuple[int, int]:
        """(distinct name keys, distinct recipient ids)."""
        return len(self._by_name), len(self._by_id)

    def partial(self, key: str, limit: int) -> tuple[str, ...]:
        """Name keys that partly match the normalized ``key`` (see :class:`DmIndex`).

        Exact matches are not excluded. At most ``limit + 1`` keys are returned, so a caller
        can tell "exactly these" from "more than ``limit``"; prefixes of ``key`` come first.
        """
        if not key:
            return ()
        found: dict[str, None] = {}
        by_name = self._by_name
        for length in sorted(self._lengths):
            if length >= len(key):
                break
            if length >= MIN_PARTIAL and key[:length] in by_name:
                found[key[:length]] = None
        table = self._settled()
        keys, offsets = table.keys, table.offsets
        i = bisect_left(table, (key, ""))
        while i < len(keys) and len(found) <= limit:
            k = keys[i]
            if not k.startswith(key, offsets[i]):
                break
            found[k] = None
            i += 1
        return tuple(found)[: limit + 1]

    def _settled(self) -> _Suffixes:
        """The suffix table, built or brought up to date with the noted key changes."""
        table = self._table
        if table is None:
            table = self._table = _Suffixes()
            table.merge([(k, o) for k in self._by_name for o in _offsets(k)])
            return table
        if not self._pending:
            return table
        fresh: list[tuple[str, int]] = []
        for key in self._pending:
            live = key in self._by_name
            stored = bool(_offsets(key)) and table.position(key, 0) is not None
            if stored and not live:
                for offset in _offsets(key):
                    table.remove(key, offset)
            elif live and not stored:
                fresh.extend((key, offset) for offset in _offsets(key))
        self._pending.clear()
        if len(fresh) <= _FEW:
            for key, offset in fresh:
                table.insert(key, offset)
        else:
            table.merge(fresh)
        return table
