"""The channel registry: what each server registered, and what it answers to.

:class:`ChannelRegistry` gives ``channels/register`` and ``channels/changed`` their semantics
(MCPL §14.2-§14.5): every item is decided alone and gets one result, in order; a register is
always a new registration; an update replaces the descriptor in place. It answers lookups and
names through its index.

What it deliberately does not know: the wire, grants and authorization (the host passes an
authorizer), and lifecycle.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from itertools import repeat
from operator import attrgetter

from switchboard.channels.descriptor import CheckedDescriptors, DescriptorLike, Rejected
from switchboard.channels.index import ChannelIndex, IndexStatistics
from switchboard.channels.names.naming import ChannelNames
from switchboard.channels.names.picking import NO_OWN, Own
from switchboard.channels.names.resolve import resolve
from switchboard.channels.names.tiers import name_alone
from switchboard.channels.records import (
    INVALID_ID,
    NOT_REGISTERED,
    UPDATE_UNREGISTERED,
    AllAccepted,
    Authorizer,
    BatchAuthorizer,
    ChannelEntry,
    ItemResult,
    RegistryChange,
    accepted_result,
    accepted_results,
)
from switchboard.channels.ref import ChannelRef
from switchboard.runtime.gcpause import gc_paused

__all__ = [
    "INVALID_REMOVAL",
    "Authorizer",
    "ChannelEntry",
    "ChannelRegistry",
    "ItemResult",
    "RegistryChange",
]


INVALID_REMOVAL = "invalid id: a removed id is a string or an integer"
"""Reason for a ``changed.removed`` item that is neither (it names no channel)."""


def _removal_id(raw: object) -> str | None:
    """The channel id a ``changed.removed`` item names: a string as it is, an integer as its
    decimal string (§11.2), anything else (a bool, a fraction, null, an object) none."""
    if type(raw) is str:
        return raw
    if type(raw) is int:
        return str(raw)
    return None


def _id_text(value: object) -> str:
    """The id of an invalid item as reported: ``""`` when missing, else its string form."""
    return "" if value is None or value == "" else str(value)


def _distinct(ids: list[str], known_distinct: bool) -> tuple[str, ...]:
    """Each id once, in order of first appearance."""
    return tuple(ids) if known_distinct else tuple(dict.fromkeys(ids))


_id_of = attrgetter("id")

#: Batches at least this large register with the cyclic garbage collector paused.
_GC_PAUSE_MIN_ITEMS = 256


class ChannelRegistry:
    """Registered channels keyed by :class:`ChannelRef`, with O(1) lookups by every name.

    What it knows: the semantics of ``channels/register`` and ``channels/changed`` (MCPL
    §14.2-§14.5, channel-registry.md §11): every item is decided alone and gets one result, in
    order; a register (or a ``changed.added``) is always a *new* registration (transport closed, new
    serial), even for an id that is already registered; a ``changed.updated`` replaces the
    descriptor in place and may not add a channel; a change is applied removed → updated → added. It
    also answers lookups through :class:`~switchboard.channels.index.ChannelIndex` and names through
    :mod:`switchboard.channels.names.resolve`.

    Entries are mutable records owned by the registry; callers read them and change them only
    through :meth:`set_transport_open` and :meth:`transport_closed`.
    """

    __slots__ = ("_index", "_names", "_serial")

    def __init__(self) -> None:
        self._index = ChannelIndex()
        self._names = ChannelNames(self._index)
        self._serial = 0

    @property
    def serial(self) -> int:
        """Registrations made so far (every register and ``changed.added`` item accepted):
        unchanged means no channel got a new entry since it was read."""
        return self._serial

    # -- register / changed / remove -----------------------------------------------------

    def register(
        self,
        server_id: str,
        items: Sequence[DescriptorLike | Rejected],
        *,
        authorize: Authorizer | None = None,
        authorize_batch: BatchAuthorizer | None = None,
    ) -> RegistryChange:
        """Register each item as a new registration of ``server_id`` (``channels/register``).

        Args:
            server_id: The registering connection.
            items: Descriptors, or :class:`Rejected` for items the host found malformed.
            authorize: Decides each descriptor alone; None accepts every valid one.
            authorize_batch: Decides the valid descriptors at once, in place of
                ``authorize`` (the faster form for a large batch).

        Returns:
            One result per item, in order, and the newly registered refs in ``added``.
        """
        results: list[ItemResult] = []
        added: list[str] = []
        with gc_paused(len(items) >= _GC_PAUSE_MIN_ITEMS):
            distinct, every = self._add_items(
                server_id, items, authorize, results, added, authorize_batch, lazy=True
            )
        outcome = tuple(results) if every is None else AllAccepted(every)
        return RegistryChange(outcome, server_id=server_id, added_ids=_distinct(added, distinct))

    @property
    def labels_waiting(self) -> int:
        """How many registrations' labels wait to be indexed (see :meth:`index_labels`)."""
        return self._index.labels_waiting

    def index_labels(self) -> None:
        """Index the labels a large registration left for after its answer, now.

        Optional: any lookup that needs them indexes them first (see
        :meth:`ChannelIndex.index_labels`); the host calls this once the answer has left.
        """
        self._index.index_labels()

    def change(
        self,
        server_id: str,
        *,
        added: Iterable[DescriptorLike | Rejected] = (),
        removed: Iterable[object] = (),
        updated: Iterable[DescriptorLike | Rejected] = (),
        authorize: Authorizer | None = None,
        authorize_batch: BatchAuthorizer | None = None,
    ) -> RegistryChange:
        """Apply ``channels/changed`` for ``server_id``: removed, then updated, then added.

        A removed id may arrive as an integer and is compared as its decimal string; a removed
        item that is neither a string nor an integer is refused alone (``INVALID_REMOVAL``,
        reported by its string form). An update
        of an id this server has not registered is refused (MCPL §14.5); an accepted update
        keeps the entry, its transport state and its registration serial. Added items are
        handled exactly as :meth:`register` handles them (``authorize_batch``, when given,
        decides them in place of ``authorize``; updates are always decided by ``authorize``).

        Returns:
            One result list covering removed, updated and added items, in that order.
        """
        index = self._index
        results: list[ItemResult] = []
        gone: list[ChannelRef] = []
        for raw in removed:
            channel_id = _removal_id(raw)
            if channel_id is None:
                results.append(ItemResult(_id_text(raw), False, INVALID_REMOVAL))
                continue
            entry = index.pop(ChannelRef(server_id, channel_id))
            if entry is None:
                results.append(ItemResult(channel_id, False, NOT_REGISTERED))
            else:
                results.append(ItemResult(channel_id, True))
                gone.append(entry.ref)
        replaced: list[ChannelRef] = []
        for item in updated:
            if isinstance(item, Rejected):
                results.append(ItemResult(item.id or "", False, item.reason))
                continue
            channel_id = item.id
            if type(channel_id) is not str or not channel_id:
                results.append(ItemResult(_id_text(channel_id), False, INVALID_ID))
                continue
            entry = index.get(ChannelRef(server_id, channel_id))
            if entry is None:
                results.append(ItemResult(channel_id, False, UPDATE_UNREGISTERED))
                continue
            reason = authorize(item) if authorize is not None else None
            if reason is not None:
                results.append(ItemResult(channel_id, False, reason))
                continue
            index.replace_descriptor(entry, item)
            results.append(ItemResult(channel_id, True))
            replaced.append(entry.ref)
        fresh: list[str] = []
        distinct, _ = self._add_items(server_id, added, authorize, results, fresh, authorize_batch)
        return RegistryChange(
            tuple(results),
            server_id=server_id,
            added_ids=_distinct(fresh, distinct),
            updated=tuple(dict.fromkeys(replaced)),
            removed=tuple(gone),
        )

    def _add_items(
        self,
        server_id: str,
        items: Iterable[DescriptorLike | Rejected],
        authorize: Authorizer | None,
        results: list[ItemResult],
        added: list[str],
        authorize_batch: BatchAuthorizer | None = None,
        *,
        lazy: bool = False,
    ) -> tuple[bool, list[str] | None]:
        """Decide each item alone, then store the accepted ones with one bulk call.

        Returns whether the ids it added to ``added`` are known to be distinct, and, when
        ``lazy`` and every item was accepted, their ids in place of results appended to
        ``results`` (the caller answers with :class:`AllAccepted`); else None.

        The hot path of a large register: when every item is a descriptor with a valid id
        (the common case, checked with C-level passes), no per-item Python loop runs but the
        one building the results of refused items. If ``authorize`` or ``authorize_batch``
        raises, the exception propagates and none of these items is stored.
        """
        slots: list[ItemResult | None] | None
        valid: list[DescriptorLike]
        if type(items) is CheckedDescriptors:  # vouched for: no pass over each item's types
            if not items:
                return True, None
            ids: list[str] = list(map(_id_of, items))
            slots, valid = None, items
        else:
            items = list(items)
            if not items:
                return True, None
            try:
                ids = list(map(_id_of, items))
            except AttributeError:  # an object with no id at all: refused below
                ids = [getattr(item, "id", None) for item in items]  # type: ignore[misc]
            if Rejected in set(map(type, items)) or set(map(type, ids)) != {str} or "" in ids:
                slots, valid, ids = self._sort_items(items, ids)
            else:
                slots, valid = None, items  # type: ignore[assignment]
        reasons: Sequence[str | None] | None = None
        if authorize_batch is not None:
            reasons = authorize_batch(valid)
        elif authorize is not None:
            reasons = [authorize(item) for item in valid]
            if reasons.count(None) == len(reasons):
                reasons = None
        accepted: Sequence[DescriptorLike] = valid
        accepted_ids: list[str] = ids
        every: list[str] | None = None
        if reasons is None and slots is None:
            if lazy:
                every = ids
            else:
                results.extend(accepted_results(ids))
        else:
            accepted, accepted_ids = [], []
            decided = iter(zip(valid, ids, reasons or repeat(None), strict=False))
            for slot in slots or repeat(None, len(valid)):
                if slot is not None:
                    results.append(slot)
                    continue
                item, channel_id, reason = next(decided)
                if reason is None:
                    results.append(accepted_result(channel_id))
                    accepted.append(item)
                    accepted_ids.append(channel_id)
                else:
                    results.append(ItemResult(channel_id, False, reason))
        if accepted:
            first = self._serial + 1
            self._serial += len(accepted)
            size = len(self._index)
            self._index.register_many(server_id, accepted, first, accepted_ids)
            added.extend(accepted_ids)
            # each id new to the server: all distinct
            return len(self._index) - size == len(accepted_ids), every
        return True, every

    @staticmethod
    def _sort_items(
        items: list[DescriptorLike | Rejected], ids: Sequence[object]
    ) -> tuple[list[ItemResult | None], list[DescriptorLike], list[str]]:
        """Split a batch with malformed items: one slot per item (its result when it is
        refused before authorization, else None), and the valid descriptors with their ids."""
        slots: list[ItemResult | None] = []
        valid: list[DescriptorLike] = []
        valid_ids: list[str] = []
        for item, channel_id in zip(items, ids, strict=True):
            if isinstance(item, Rejected):
                slots.append(ItemResult(item.id or "", False, item.reason))
            elif type(channel_id) is not str or not channel_id:
                slots.append(ItemResult(_id_text(channel_id), False, INVALID_ID))
            else:
                slots.append(None)
                valid.append(item)
                valid_ids.append(channel_id)
        return slots, valid, valid_ids

    def remove_server(self, server_id: str) -> tuple[str, ...]:
        """Drop every entry of ``server_id`` and return their channel ids, in registration
        order (in bulk: see :meth:`ChannelIndex.pop_server`)."""
        return tuple(self._index.pop_server(server_id))

    def set_transport_open(self, ref: ChannelRef, value: bool) -> None:
        """Record whether the server holds ``ref`` open now.

        Raises:
            KeyError: ``ref`` is not registered.
        """
        entry = self._index.get(ref)
        if entry is None:
            raise KeyError(ref)
        entry.transport_open = value

    def transport_closed(self, server_id: str) -> None:
        """The link to ``server_id`` closed: none of its channels is open at the transport."""
        for entry in self._index.server_channels(server_id).values():
            entry.transport_open = False

    # -- lookups -------------------------------------------------------------------------

    def get(self, ref: ChannelRef) -> ChannelEntry | None:
        """The registration at ``ref``, or None."""
        return self._index.get(ref)

    def __contains__(self, ref: object) -> bool:
        return (
            isinstance(ref, tuple)
            and len(ref) == 2
            and isinstance(ref[0], str)
            and isinstance(ref[1], str)
            and self._index.get(ChannelRef(ref[0], ref[1])) is not None
        )

    def __len__(self) -> int:
        return len(self._index)

    def entries(self) -> Iterator[ChannelEntry]:
        """Every registration, server by server, each server's in registration order."""
        return iter(self._index)

    def server_size(self, server_id: str) -> int:
        """How many channels ``server_id`` has registered (O(1))."""
        return len(self._index.server_channels(server_id))

    def server_channels(self, server_id: str) -> Mapping[str, ChannelEntry]:
        """A read-only view of one server's entries by channel id (O(1); empty if none).

        The view follows the registry while the server has channels; once its last channel
        is gone (or before its first) it may be a detached empty mapping, so take a fresh one
        for each decision rather than keeping it.
        """
        return self._index.server_channels(server_id)

    def server_entries(self, server_id: str) -> list[ChannelEntry]:
        """The registrations of one server, in registration order (O(that server's size))."""
        return list(self._index.server_channels(server_id).values())

    def servers(self) -> frozenset[str]:
        """The servers with at least one registered channel."""
        return frozenset(self._index.servers())

    def by_id(self, channel_id: str) -> tuple[ChannelEntry, ...]:
        """Registrations whose id is exactly ``channel_id``, on every server."""
        return self._index.by_id(channel_id)

    def by_qualified_name(self, name: str) -> tuple[ChannelEntry, ...]:
        """Registrations whose ``"<server>:<id>"`` is exactly ``name`` (never split)."""
        return self._index.by_qualified_name(name)

    def by_raw_id(self, raw: str) -> tuple[ChannelEntry, ...]:
        """Registrations whose ``address["channelId"]`` is exactly ``raw``."""
        return self._index.by_raw_id(raw)

    def by_label(self, label: str) -> tuple[ChannelEntry, ...]:
        """Registrations by label: case-insensitive, one ``#`` ignored; falls back to labels
        without their trailing ``" (Server Name)"``."""
        return self._index.by_label(label)

    def by_dm_name(self, name: str) -> tuple[ChannelEntry, ...]:
        """DM registrations by ``@name``/``name`` (case-insensitive) or ``<@id>``/``<@!id>``."""
        return self._index.by_dm_name(name)

    def statistics(self) -> IndexStatistics:
        """Counts of channels, servers and distinct keys per index."""
        return self._index.statistics()

    # -- names ---------------------------------------------------------------------------

    @property
    def names(self) -> ChannelNames:
        """Every naming operation (shown names, ``>>`` targets, tool arguments, own rule)."""
        return self._names

    def resolve(
        self, name: str, *, server_id: str | None = None, own: Own = NO_OWN
    ) -> ChannelEntry:
        """The one registration ``name`` picks (see :mod:`switchboard.channels.names.resolve`).

        Args:
            name: An id, server-qualified name, raw id, label or DM name, used as given.
            server_id: Restrict the lookup to that server's ids and raw ids.
            own: The calling turn's own channels; without ``server_id``, a name equal to the
                id of own channels is bound to them alone.

        Raises:
            AmbiguousName: Several channels answer to the name at the deciding tier.
            OwnChannelGone: The name is bound to an own channel no longer registered.
            UnknownName: No channel answers to it.
        """
        return resolve(self._index, name, server_id, own)

    def name_for(self, ref: ChannelRef) -> str:
        """The shortest name that resolves to ``ref`` alone: its id, else its qualified name.

        When neither picks it alone (:meth:`needs_server_id` is True), this returns the
        channel id, which resolves to ``ref`` only together with ``server_id=ref.server_id``.

        Raises:
            KeyError: ``ref`` is not registered.
        """
        entry = self._index.get(ref)
        if entry is None:
            raise KeyError(ref)
        alone = name_alone(self._index, entry)
        return ref.channel_id if alone is None else alone

    def needs_server_id(self, ref: ChannelRef) -> bool:
        """Whether no name alone picks ``ref``, so it must be given with its server id.

        Raises:
            KeyError: ``ref`` is not registered.
        """
        entry = self._index.get(ref)
        if entry is None:
            raise KeyError(ref)
        return name_alone(self._index, entry) is None
