"""The registry's records: one registration, one itemized result, one change summary.

What this module knows: the shapes the registry stores and returns, and the reason texts of
the itemized results it produces itself (MCPL §14.5: one result per submitted item).

What it deliberately does not know: how entries are indexed or looked up, how names resolve,
and anything about the wire (the host turns :class:`ItemResult` into the JSON result).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from itertools import repeat
from operator import eq
from typing import NamedTuple, overload

import msgspec

from switchboard.channels.descriptor import DescriptorLike
from switchboard.channels.ref import ChannelRef

__all__ = [
    "INVALID_ID",
    "NOT_REGISTERED",
    "UPDATE_UNREGISTERED",
    "AllAccepted",
    "Authorizer",
    "BatchAuthorizer",
    "ChannelEntry",
    "ItemResult",
    "RegistryChange",
    "accepted_result",
    "accepted_results",
]

INVALID_ID = "invalid descriptor: missing id"
"""Reason for a descriptor whose id is missing, empty or not a string."""

NOT_REGISTERED = "not registered"
"""Reason for removing an id this server has not registered."""

UPDATE_UNREGISTERED = "not registered: an update cannot add a channel, register it first (§14.5)"
"""Reason for updating an id this server has not registered; a change set cannot smuggle in a
channel that registration would have had to authorize."""

_new_ref: Callable[[tuple[str, str]], ChannelRef] = partial(tuple.__new__, ChannelRef)

Authorizer = Callable[[DescriptorLike], str | None]
"""Decides one descriptor alone: None accepts it, a string (``"capability_denied"``) is the
reason it is rejected. It must not raise and must not look at the other items."""

BatchAuthorizer = Callable[[Sequence[DescriptorLike]], Sequence[str | None] | None]
"""Decides the valid descriptors of one call at once, in order: None accepts them all, else
one entry per descriptor as an :data:`Authorizer` would answer it. Its answers must be those of
deciding each descriptor in turn (a limit on new channels counts them in order); it must not
raise."""


class ChannelEntry(msgspec.Struct, eq=False, gc=False):
    """One registration of one channel.

    Equality is identity: every ``register`` (or ``changed.added``) makes a new entry, and
    anything keyed on "this registration" (marks, pending work) must not carry over to the
    next one. An in-place update (``changed.updated``) keeps the entry object.

    A ``msgspec.Struct``, so that a registration of 100,000 channels builds its entries in C;
    untracked by the cyclic collector (``gc=False``), which a registry of them would otherwise
    walk on every full collection: an entry refers to strings, its descriptor and its ref,
    none of which refers back to it, so it can never be part of a reference cycle.

    The entry keeps the two halves of its key as strings and makes its :attr:`ref` the first
    time it is asked for (then keeps it): a :class:`ChannelRef` is a tuple the collector
    tracks, and building 100,000 of them while a large ``channels/register`` is answered cost
    a tenth of its round trip, plus a young collection to walk them.

    Attributes:
        server_id: The registering connection.
        channel_id: The descriptor's id.
        descriptor: The descriptor as the server gave it (replaced in place by an update).
        transport_open: Whether the server is believed to hold the channel open now; False
            on every new registration.
        registration: A registry-wide serial, new on every (re)registration, kept by updates.
        raw_id: ``address["channelId"]`` of the current descriptor, or None.
    """

    server_id: str
    channel_id: str
    descriptor: DescriptorLike
    transport_open: bool
    registration: int
    raw_id: str | None
    made_ref: ChannelRef | None = None
    """The :attr:`ref`, once made (read :attr:`ref` instead)."""

    @property
    def ref(self) -> ChannelRef:
        """The channel's key, ``ChannelRef(server_id, channel_id)`` (made once, then kept)."""
        ref = self.made_ref
        if ref is None:
            ref = self.made_ref = _new_ref((self.server_id, self.channel_id))
        return ref


class ItemResult(NamedTuple):
    """The outcome of one submitted item, in submission order.

    A named tuple, so that the registry builds one per channel in a single C call (a
    registration of 100,000 channels builds 100,000 of them).

    Attributes:
        id: The item's id as a string (a missing id is ``""``; a numeric removal id becomes
            its decimal string).
        accepted: Whether the item took effect.
        reason: Why it did not, when it did not.
    """

    id: str
    accepted: bool
    reason: str | None = None


_new_result = partial(tuple.__new__, ItemResult)


def accepted_result(item_id: str) -> ItemResult:
    """``ItemResult(item_id, True)``, without the Python-level ``__new__`` of a named tuple."""
    result: ItemResult = _new_result((item_id, True, None))
    return result


def accepted_results(item_ids: Iterable[str]) -> list[ItemResult]:
    """``[ItemResult(i, True) for i in item_ids]``, built in C."""
    return list(map(_new_result, zip(item_ids, repeat(True), repeat(None))))


class AllAccepted(Sequence[ItemResult]):
    """The results of a batch whose every item was accepted: ``ItemResult(i, True)`` for
    each id, made only when read.

    A registration of 100,000 channels that all pass would otherwise build (and free) 100,000
    named tuples that the host reads once to write ``{id, accepted}``;
    the host reads :attr:`accepted_ids` instead. Compares equal to any sequence of the same
    results (a tuple of :class:`ItemResult` included).
    """

    __slots__ = ("accepted_ids",)

    def __init__(self, accepted_ids: Sequence[str]) -> None:
        self.accepted_ids = accepted_ids

    def __len__(self) -> int:
        return len(self.accepted_ids)

    @overload
    def __getitem__(self, index: int) -> ItemResult: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[ItemResult, ...]: ...

    def __getitem__(self, index: int | slice) -> ItemResult | tuple[ItemResult, ...]:
        if isinstance(index, slice):
            return tuple(accepted_results(self.accepted_ids[index]))
        return accepted_result(self.accepted_ids[index])

    def __iter__(self) -> Iterator[ItemResult]:
        return map(_new_result, zip(self.accepted_ids, repeat(True), repeat(None)))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, AllAccepted):
            return list(self.accepted_ids) == list(other.accepted_ids)
        if isinstance(other, Sequence) and not isinstance(other, str | bytes):
            return len(other) == len(self) and all(map(eq, self, other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable-looking, like a list

    def __repr__(self) -> str:
        return repr(tuple(self))


@dataclass(frozen=True, slots=True)
class RegistryChange:
    """What one ``register``/``change`` call did.

    Attributes:
        results: One result per submitted item, in order (for ``change``: removed, then
            updated, then added).
        server_id: The server the call was for.
        added_ids: The channel ids of every new registration, including one that replaced
            an earlier registration of the same id; each once, in order. These are the
            channels to reconcile; :attr:`added` gives them as refs.
        updated: Channels whose descriptor was replaced in place.
        removed: Channels that were registered and are gone.
    """

    results: Sequence[ItemResult]
    server_id: str = ""
    added_ids: tuple[str, ...] = ()
    updated: tuple[ChannelRef, ...] = ()
    removed: tuple[ChannelRef, ...] = ()

    @property
    def added(self) -> tuple[ChannelRef, ...]:
        """:attr:`added_ids` as refs (made when asked: a registration of 100,000 channels
        is answered from the ids alone)."""
        return tuple(map(_new_ref, zip(repeat(self.server_id), self.added_ids)))
